#include "ops/fused/script.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/jit.h>

#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace tally::ops::fused {
namespace {

struct Compiled {
  std::shared_ptr<torch::jit::CompilationUnit> unit;
  std::shared_ptr<torch::jit::Graph> graph;  // inlined
};

// Find compiles `source` on first use; sources are static strings, so their
// address is their identity.
const Compiled& Find(const char* source, const char* fn) {
  static absl::Mutex mu;
  static auto* cache = new absl::flat_hash_map<std::pair<const char*, std::string>, Compiled>();
  absl::MutexLock lock(&mu);
  Compiled& c = (*cache)[{source, fn}];
  if (c.unit == nullptr) {
    std::shared_ptr<torch::jit::CompilationUnit> unit = torch::jit::compile(source);
    std::shared_ptr<torch::jit::Graph> g = torch::jit::toGraphFunction(unit->get_function(fn)).graph()->copy();
    torch::jit::Inline(*g);
    c = Compiled{std::move(unit), std::move(g)};
  }
  return c;
}

}  // namespace

std::shared_ptr<torch::jit::Graph> ScriptGraph(const char* source, const char* fn) { return Find(source, fn).graph; }

c10::IValue RunScript(const char* source, const char* fn, std::vector<c10::IValue> inputs) {
  return Find(source, fn).unit->get_function(fn)(std::move(inputs));
}

}  // namespace tally::ops::fused
