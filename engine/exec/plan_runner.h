// PlanRunner: what a Program needs from an executor — run one compiled plan
// (update, finalize or a merge graph) on tensors — and the choice of backend.
//
// The eager interpreter (eager_executor.h) and the TorchScript backend
// (torchscript/plan.h) both implement it, so a Program keeps its state
// folding, boundary checks, deferred checks and all-or-nothing updates
// whatever runs the plans.
#ifndef TALLY_ENGINE_EXEC_PLAN_RUNNER_H_
#define TALLY_ENGINE_EXEC_PLAN_RUNNER_H_

#include <ATen/core/Tensor.h>

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tally::exec {

// Backend selects what runs a program's plans.
enum class Backend {
  kEager,        // Tally's node-by-node ATen interpreter
  kTorchScript,  // plans lowered to torch::jit::Graphs, run by a GraphExecutor
};

// BackendName is the command-line spelling: "eager" or "torchscript".
absl::string_view BackendName(Backend b);
// ParseBackend parses BackendName's spelling.
absl::StatusOr<Backend> ParseBackend(absl::string_view s);

// PlanRunner runs one graph of a compiled module.
class PlanRunner {
 public:
  virtual ~PlanRunner() = default;
  // Run executes with `params` in the graph's parameter order and returns the
  // graph's results in order. `checked` verifies produced tensors against
  // their planned types and device.
  virtual absl::StatusOr<std::vector<at::Tensor>> Run(const std::vector<at::Tensor>& params, bool checked) const = 0;
  // num_kernel_calls is the number of kernels one Run dispatches.
  virtual int num_kernel_calls() const = 0;
};

}  // namespace tally::exec

#endif  // TALLY_ENGINE_EXEC_PLAN_RUNNER_H_
