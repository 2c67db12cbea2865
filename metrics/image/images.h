// What the image quality metrics share: their image inputs, TorchMetrics'
// data_range argument, arguments that are a number or a pair, and
// reductions over images.
#ifndef TALLY_METRICS_IMAGE_IMAGES_H_
#define TALLY_METRICS_IMAGE_IMAGES_H_

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/dsl/builder.h"
#include "metrics/spec.h"

namespace tally::metrics {

// DataRange is TorchMetrics' data_range: none (measured from the data), a
// range, or [lo, hi] (the images clamped into it; the range hi - lo).
struct DataRange {
  std::optional<double> range;
  std::optional<std::array<double, 2>> clamp;
};
absl::StatusOr<DataRange> ReadDataRange(SpecArgs& args);

// ReadPair reads an argument that is a number or a list of two (H, W).
absl::StatusOr<std::array<double, 2>> ReadPair(SpecArgs& args, const std::string& name, double fallback);

// Images are preds and target [N, C, H, W] of one shape and dtype, in
// float64, after the metadata checks; false (the builder poisoned) when
// they fail. Integer images are refused unless `integers` (PSNR casts
// them, as TorchMetrics does).
struct Images {
  ops::Expr preds, target;
  std::vector<int64_t> shape;
  ir::DType dtype = ir::DType::kFloat32;
};
bool ReadImages(dsl::MetricBuilder& b, bool integers, Images& out);

// Clamped is `x` clamped into the data range's [lo, hi] (itself without one).
ops::Expr Clamped(ops::Expr x, const DataRange& range);

// Reduced is TorchMetrics' reduce() over per-image (per-row) values:
// elementwise_mean and sum keep a sum (and a count); none keeps every row's
// values in a cat state (`row_shape`: a row's trailing dims).
absl::StatusOr<std::string> ReadReduction(SpecArgs& args);
void OutputReduced(dsl::MetricBuilder& b, const std::string& reduction, ops::Expr rows,
                   const std::vector<int64_t>& row_shape = {});

}  // namespace tally::metrics

#endif  // TALLY_METRICS_IMAGE_IMAGES_H_
