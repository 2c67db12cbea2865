// Helpers shared by the threshold-based curve metrics (binary_*,
// multiclass_* and multilabel_* auroc / average_precision, and the curves
// themselves): TorchMetrics' `thresholds` argument and its tensor.
//
// thresholds=None is the exact form (cat states); an int T >= 2 is
// torch.linspace(0, 1, T) in float32; a list holds floats in [0, 1] used as
// given (as a float32 tensor, in the user's order).
#ifndef TALLY_METRICS_CURVE_COMMON_H_
#define TALLY_METRICS_CURVE_COMMON_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/dsl/builder.h"
#include "metrics/spec.h"

namespace tally::metrics {

// Thresholds is the binned form's threshold list (empty for the exact form).
struct Thresholds {
  bool binned = false;
  int64_t count = 0;           // linspace(0, 1, count) when `values` is empty
  std::vector<double> values;  // an explicit list
  int64_t size() const { return values.empty() ? count : static_cast<int64_t>(values.size()); }
};

// ReadThresholds reads `thresholds` (none, an int >= 2, or a non-empty list
// of numbers in [0, 1]); bad values are InvalidArgument naming the metric.
absl::StatusOr<Thresholds> ReadThresholds(SpecArgs& args);

// ThresholdTensor builds the f32 thresholds [T] in the graph of `like`:
// torch.linspace(0, 1, T) bit for bit (the first half forwards from 0, the
// second half backwards from 1, with a float32 step) or the list.
dsl::Expr ThresholdTensor(dsl::Expr like, const Thresholds& t);

}  // namespace tally::metrics

#endif  // TALLY_METRICS_CURVE_COMMON_H_
