#include "ops/fused/script.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/jit.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace tally::ops::fused {
namespace {

// A compiled function: its inlined graph, and an executor over a copy of
// it (run is re-entrant: each call gets its own interpreter state).
struct Compiled {
  std::shared_ptr<torch::jit::Graph> graph;
  std::unique_ptr<torch::jit::GraphExecutor> executor;
};

// Find compiles `source` on first use; sources are static strings, so their
// address is their identity. Entries live for the process.
const Compiled& Find(const char* source, const char* fn) {
  static absl::Mutex mu;
  static auto* cache = new absl::flat_hash_map<std::pair<const char*, std::string>, std::unique_ptr<Compiled>>();
  absl::MutexLock lock(&mu);
  std::unique_ptr<Compiled>& c = (*cache)[{source, fn}];
  if (c == nullptr) {
    // The unit stays alive: a copied graph may still name its functions.
    static auto* units = new std::vector<std::shared_ptr<torch::jit::CompilationUnit>>();
    units->push_back(torch::jit::compile(source));
    auto compiled = std::make_unique<Compiled>();
    compiled->graph = torch::jit::toGraphFunction(units->back()->get_function(fn)).graph()->copy();
    torch::jit::Inline(*compiled->graph);
    torch::jit::EliminateDeadCode(compiled->graph);
    // The simple executor, as the TorchScript backend runs its plans: the
    // profiling one hands the loops to the TensorExpr fuser, which compiles
    // each profiled shape with LLVM (a minute for edit_distance on LibTorch
    // 2.6).
    compiled->executor = std::make_unique<torch::jit::GraphExecutor>(compiled->graph->copy(), fn,
                                                                     torch::jit::ExecutorExecutionMode::SIMPLE);
    c = std::move(compiled);
  }
  return *c;
}

}  // namespace

std::shared_ptr<torch::jit::Graph> ScriptGraph(const char* source, const char* fn) { return Find(source, fn).graph; }

c10::IValue RunScript(const char* source, const char* fn, std::vector<c10::IValue> inputs) {
  torch::jit::Stack stack = std::move(inputs);
  Find(source, fn).executor->run(stack);
  return stack.front();
}

}  // namespace tally::ops::fused
