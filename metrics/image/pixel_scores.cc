// Image scores read pixel by pixel, with TorchMetrics 1.5.2's names,
// arguments and values:
//   peak_signal_noise_ratio(data_range=None, base=10.0,
//                           reduction="elementwise_mean", dim=None)
//   total_variation(reduction="sum")                       (input `img`)
//   spectral_angle_mapper(reduction="elementwise_mean")
// Images are [N, C, H, W]; everything is computed in float64.
//
// PSNR keeps the summed squared error and its count (and, without a
// data_range, the target's minimum and maximum, both starting at 0 as
// TorchMetrics' states do); with `dim` one value per remaining index, each
// update's rows appended (dim 0, the batch, is refused: its values would
// depend on how rows are split into updates). TorchMetrics 1.8 made
// data_range required; 1.5.2's optional one is what this follows.
#include <cmath>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/image/images.h"
#include "metrics/registry.h"
#include "metrics/regression/operands.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ops::Expr;

// ReadDims reads PSNR's dim: none (empty), an int or a list, normalized
// against rank 4.
absl::StatusOr<std::vector<int64_t>> ReadDims(SpecArgs& args) {
  const ArgValue* v = args.Find("dim", "an int, a list of ints or none", "none");
  std::vector<int64_t> dims;
  if (v == nullptr || std::holds_alternative<std::monostate>(*v)) return dims;
  if (const auto* i = std::get_if<int64_t>(v)) {
    dims = {*i};
  } else if (const auto* l = std::get_if<std::vector<int64_t>>(v)) {
    dims = *l;
  } else {
    return args.InvalidArgument("dim must be an int, a list of ints or none");
  }
  std::set<int64_t> seen;
  for (int64_t& d : dims) {
    if (d < -4 || d > 3) return args.InvalidArgument(absl::StrCat("dim ", d, " is out of range for [N, C, H, W]"));
    if (d < 0) d += 4;
    if (d == 0) {
      return args.InvalidArgument(
          "dim 0 is the batch: the values would depend on how rows are split into updates (reduce over 1, 2, 3)");
    }
    if (!seen.insert(d).second) return args.InvalidArgument(absl::StrCat("dim ", d, " is repeated"));
  }
  return dims;
}

absl::StatusOr<dsl::Metric> BuildPsnr(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(const DataRange range, ReadDataRange(args));
  TALLY_ASSIGN_OR_RETURN(const double base, args.GetDouble("base", 10.0));
  TALLY_ASSIGN_OR_RETURN(const std::string reduction, ReadReduction(args));
  TALLY_ASSIGN_OR_RETURN(const std::vector<int64_t> dims, ReadDims(args));
  if (!dims.empty() && !range.range) return args.InvalidArgument("data_range must be given when dim is not None");
  MetricBuilder b(args.metric_name(), sig, device);
  Images in;
  if (!ReadImages(b, /*integers=*/true, in)) return b.status();
  Expr p = Clamped(in.preds, range), t = Clamped(in.target, range);
  Expr diff = p - t;
  Expr squared = diff * diff;
  // 10 / ln(base) (2 ln(range) - ln(sse / n)), TorchMetrics' order.
  auto psnr = [base](Expr log_range, Expr sse, Expr n) {
    return (2.0 * log_range - ops::Log(sse / n)) * (10.0 / std::log(base));
  };
  if (dims.empty()) {
    State sse = b.AddState("sum_squared_error", DType::kFloat64, {}, ir::Reducer::kSum);
    State total = b.AddState("total", DType::kInt64, {}, ir::Reducer::kSum);
    b.Accumulate(sse, ops::Sum(squared));
    b.Accumulate(total, ops::Sum(ops::FullLike(squared, 1.0, DType::kInt64)));
    Expr log_range;
    if (range.range) {
      log_range = ops::Scalar(b.Read(sse), std::log(*range.range));
    } else {
      State low = b.AddState("min_target", DType::kFloat64, {}, ir::Reducer::kMin, 0.0);
      State high = b.AddState("max_target", DType::kFloat64, {}, ir::Reducer::kMax, 0.0);
      b.Accumulate(low, ops::Min(t));
      b.Accumulate(high, ops::Max(t));
      log_range = ops::Log(b.Read(high) - b.Read(low));
    }
    b.Output(psnr(log_range, b.Read(sse), F64(b.Read(total))));
    return b.Finish();
  }
  // One value per remaining index of each row, flattened in row order.
  double count = 1;
  for (int64_t d : dims) count *= static_cast<double>(in.shape[d]);
  Expr sse = ops::Flatten(ops::Sum(squared, dims));
  OutputReduced(b, reduction, psnr(ops::Scalar(sse, std::log(*range.range)), sse, ops::Scalar(sse, count)));
  return b.Finish();
}

absl::StatusOr<dsl::Metric> BuildTotalVariation(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(const std::string reduction, args.GetEnum("reduction", {"sum", "mean", "none"}, "sum"));
  MetricBuilder b(args.metric_name(), sig, device);
  const dsl::InputSpec* spec = b.FindInput("img");
  Expr img = b.Input("img");
  if (!b.ok()) return b.status();
  if (spec->shape.size() != 4 || spec->dtype == DType::kBool) {
    b.FailInput("img", absl::StrCat("expected images [N, C, H, W], got ", ShapeText(spec->shape)));
    return b.status();
  }
  Expr x = F64(img);
  // Differences of neighbours as windows [-1, 1] down and across:
  // -a + b rounds as b - a does.
  Expr per_image = ops::Sum(ops::FullLike(x, 0.0, DType::kFloat64), {1, 2, 3});
  if (spec->shape[2] > 1) {
    Expr down = ops::DepthwiseConv2d(x, ops::Reshape(ops::Dense(x, {-1.0, 1.0}, DType::kFloat64), {2, 1}));
    per_image = per_image + ops::Sum(ops::Abs(down), {1, 2, 3});
  }
  if (spec->shape[3] > 1) {
    Expr across = ops::DepthwiseConv2d(x, ops::Reshape(ops::Dense(x, {-1.0, 1.0}, DType::kFloat64), {1, 2}));
    per_image = per_image + ops::Sum(ops::Abs(across), {1, 2, 3});
  }
  OutputReduced(b, reduction == "mean" ? "elementwise_mean" : reduction, per_image);
  return b.Finish();
}

absl::StatusOr<dsl::Metric> BuildSpectralAngle(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(const std::string reduction, ReadReduction(args));
  MetricBuilder b(args.metric_name(), sig, device);
  Images in;
  if (!ReadImages(b, /*integers=*/false, in)) return b.status();
  if (in.shape[1] < 2) {
    b.FailInput("preds", absl::StrCat("expected more than one channel (band), got ", in.shape[1]));
    return b.status();
  }
  Expr dot = ops::Sum(in.preds * in.target, {1});
  Expr norms = ops::Sqrt(ops::Sum(in.preds * in.preds, {1})) * ops::Sqrt(ops::Sum(in.target * in.target, {1}));
  Expr angle = ops::Acos(ops::Clamp(dot / norms, -1.0, 1.0));  // [N, H, W]
  OutputReduced(b, reduction, angle, {in.shape[2], in.shape[3]});
  return b.Finish();
}

}  // namespace

void RegisterPixelScoreMetrics(std::vector<MetricInfo>& out) {
  out.push_back({"peak_signal_noise_ratio", "image", {"preds", "target"}, BuildPsnr});
  out.push_back({"total_variation", "image", {"img"}, BuildTotalVariation});
  out.push_back({"spectral_angle_mapper", "image", {"preds", "target"}, BuildSpectralAngle});
}

}  // namespace tally::metrics
