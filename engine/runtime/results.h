// Results: a metric's result as a tree of tensors, rebuilt from the labelled
// tensors Program::Compute returns (labels: engine/dsl/metric.h). Most metrics
// have one tensor; curve metrics return tuples such as (fpr, tpr,
// thresholds), and their exact multiclass forms tuples of per-class lists
// of tensors of different lengths.
#ifndef TALLY_ENGINE_RUNTIME_RESULTS_H_
#define TALLY_ENGINE_RUNTIME_RESULTS_H_

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/runtime/program.h"

namespace tally {

// ResultTree is one metric's result: a tensor (a leaf), or a tuple/list of
// results (`parts`, never empty).
struct ResultTree {
  at::Tensor tensor;
  std::vector<ResultTree> parts;
  // keys name the parts when the metric's result is a dict (TorchMetrics'
  // mean_average_precision; dsl::Metric::result_keys); empty otherwise.
  std::vector<std::string> keys;

  bool is_leaf() const { return parts.empty(); }
  // Leaf makes a one-tensor result.
  static ResultTree Leaf(at::Tensor t) { return ResultTree{std::move(t), {}, {}}; }
};

// CollectResult gathers the results labelled `label` (a single tensor) or
// `label/<path>` (the leaves of a tree, in depth-first order) from
// `values`. NotFound when there are none; Internal when the labels do not
// form a tree (a gap, a repeated leaf, a leaf that is also a tuple).
absl::StatusOr<ResultTree> CollectResult(const NamedTensors& values, absl::string_view label);

// CollectMetricResult is CollectResult for a metric the program computes,
// with its dict `keys` (dsl::Metric::result_keys): a missing or malformed
// result is Internal.
absl::StatusOr<ResultTree> CollectMetricResult(const NamedTensors& values, absl::string_view label,
                                               std::vector<std::string> keys);

}  // namespace tally

#endif  // TALLY_ENGINE_RUNTIME_RESULTS_H_
