#include "ops/fused/script.h"

#include <torch/csrc/jit/api/function_impl.h>
#include <torch/csrc/jit/passes/dead_code_elimination.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/jit.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace tally::ops::fused {
namespace {

// Find compiles `source` on first use; sources are static strings, so their
// address is their identity.
std::shared_ptr<torch::jit::Graph> Find(const char* source, const char* fn) {
  static absl::Mutex mu;
  static auto* cache =
      new absl::flat_hash_map<std::pair<const char*, std::string>, std::shared_ptr<torch::jit::Graph>>();
  absl::MutexLock lock(&mu);
  std::shared_ptr<torch::jit::Graph>& g = (*cache)[{source, fn}];
  if (g == nullptr) {
    // The unit stays alive: a copied graph may still name its functions.
    static auto* units = new std::vector<std::shared_ptr<torch::jit::CompilationUnit>>();
    units->push_back(torch::jit::compile(source));
    g = torch::jit::toGraphFunction(units->back()->get_function(fn)).graph()->copy();
    torch::jit::Inline(*g);
    torch::jit::EliminateDeadCode(g);
  }
  return g;
}

}  // namespace

std::shared_ptr<torch::jit::Graph> ScriptGraph(const char* source, const char* fn) { return Find(source, fn); }

c10::IValue RunScript(const char* source, const char* fn, std::vector<c10::IValue> inputs) {
  // The simple executor, as the TorchScript backend runs its plans: the
  // profiling one hands the loops to the TensorExpr fuser, which compiles
  // each profiled shape with LLVM (a minute for edit_distance on LibTorch
  // 2.6).
  torch::jit::GraphExecutor executor(ScriptGraph(source, fn)->copy(), fn, torch::jit::ExecutorExecutionMode::SIMPLE);
  torch::jit::Stack stack = std::move(inputs);
  executor.run(stack);
  return stack.front();
}

}  // namespace tally::ops::fused
