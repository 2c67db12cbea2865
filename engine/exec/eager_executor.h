// The eager LibTorch executor: runs an IR graph node by node with the ATen
// kernels of ops/kernels.h.
//
// An EagerPlan resolves every node's kernel once; Run then only dispatches.
// Nodes that create tensors from attributes alone (constants) are evaluated on
// the first run and reused. In checked mode every produced tensor is compared
// with its planned dtype, rank and device.
#ifndef TALLY_ENGINE_EXEC_EAGER_EXECUTOR_H_
#define TALLY_ENGINE_EXEC_EAGER_EXECUTOR_H_

#include <ATen/core/Tensor.h>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/ir/graph.h"
#include "ops/kernels.h"

namespace tally::exec {

// EagerPlan is a graph prepared for repeated eager execution. The graph must
// outlive the plan.
class EagerPlan {
 public:
  // Create resolves kernels; fails with Unimplemented for an op without one.
  static absl::StatusOr<std::unique_ptr<EagerPlan>> Create(const ir::Graph& g);

  // Run executes with `params` in the graph's parameter order and returns the
  // graph's results in order. `checked` verifies every node's output.
  absl::StatusOr<std::vector<at::Tensor>> Run(const std::vector<at::Tensor>& params, bool checked = false) const;

  // num_kernel_calls is the number of kernels one Run dispatches.
  int num_kernel_calls() const;

 private:
  struct Step {
    const ir::Node* node;
    ops::Kernel kernel;
    std::vector<int> in;
    std::vector<int> out;
    bool hoisted;
    // The slots this step reads (or writes) for the last time: released
    // after it, so that a plan's peak memory is what is live at once, not
    // the sum of its temporaries (a bootstrap's [B, 2, 65536] finalize).
    std::vector<int> release;
  };
  explicit EagerPlan(const ir::Graph& g) : graph_(g) {}
  absl::Status RunStep(const Step& s, std::vector<at::Tensor>& env, bool checked) const;

  const ir::Graph& graph_;
  std::vector<int> param_slots_;
  std::vector<Step> steps_;
  std::vector<int> return_slots_;
  mutable std::once_flag hoist_once_;
  mutable absl::Status hoist_status_;
  mutable std::vector<at::Tensor> hoisted_;  // indexed by slot
};

}  // namespace tally::exec

#endif  // TALLY_ENGINE_EXEC_EAGER_EXECUTOR_H_
