// Aggregation metrics: mean, sum, max, min (TorchMetrics' MeanMetric,
// SumMetric, MaxMetric, MinMetric).
//
// Input `value` (the command line's `preds` is accepted for it) and, for
// mean and sum, an optional `weight` broadcast to it (sum: Σ weight·value). nan_strategy follows
// TorchMetrics: "warn" (default) and "ignore" drop elements where value (or
// weight) is NaN, "error" makes Compute fail with the count of NaNs (a
// deferred on-device check), "disable" keeps them, and a float replaces them
// (an integer is rejected, as TorchMetrics' isinstance(float) check does).
// Sums accumulate in float64 so that large offsets keep their digits.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/registry.h"
#include "ops/op_registry.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using ir::DType;
using ir::Reducer;
using ops::Expr;

enum class Agg { kMean, kSum, kMax, kMin };

struct NanPolicy {
  std::string mode;  // warn, ignore, error, disable, replace
  double replacement = 0;
};

absl::StatusOr<NanPolicy> ReadNanStrategy(SpecArgs& args) {
  const ArgValue* v = args.Find("nan_strategy", "one of warn, ignore, error, disable, or a float", "warn");
  NanPolicy p{"warn", 0};
  if (v == nullptr) return p;
  if (auto* s = std::get_if<std::string>(v)) {
    if (*s == "warn" || *s == "ignore" || *s == "error" || *s == "disable") {
      p.mode = *s;
      return p;
    }
  } else if (auto* d = std::get_if<double>(v)) {
    return NanPolicy{"replace", *d};
  } else if (std::holds_alternative<int64_t>(*v)) {
    // TorchMetrics' isinstance(nan_strategy, float) turns an int away: 0 is
    // an error, 0.0 the replacement.
    return args.InvalidArgument(
        absl::StrCat("nan_strategy must be a float such as ", ArgValueToString(*v), ".0, not an integer"));
  }
  return args.InvalidArgument(
      absl::StrCat("nan_strategy must be one of warn, ignore, error, disable or a float, got ", ArgValueToString(*v)));
}

absl::StatusOr<dsl::Metric> BuildAggregation(Agg kind, SpecArgs& args, const dsl::Signature& sig,
                                             const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(NanPolicy nan, ReadNanStrategy(args));
  MetricBuilder b(args.metric_name(), sig, device);
  std::string value_name = b.FindInput("value") ? "value" : "preds";
  Expr value = b.Input(value_name);
  if (!b.ok()) return b.status();
  if (value.dtype() == DType::kBool) {
    b.FailInput(value_name, "expected a numeric tensor, got bool");
    return b.status();
  }
  value = ops::Cast(value, DType::kFloat64);
  Expr weight;
  // mean's weight is TorchMetrics'; sum takes the same (a weighted sum,
  // Σ weight·value), which TorchMetrics' SumMetric lacks.
  bool has_weight = (kind == Agg::kMean || kind == Agg::kSum) && b.FindInput("weight") != nullptr;
  if (has_weight) {
    weight = b.Input("weight");
    if (b.ok()) {
      auto bshape = ops::BroadcastShapes(value.type().shape, weight.type().shape);
      if (!bshape.ok() || *bshape != value.type().shape) {
        b.FailInput("weight", absl::StrCat("shape ", weight.type().ShapeString(), " does not broadcast to value's ",
                                           value.type().ShapeString()));
      }
    }
    weight = ops::Cast(weight, DType::kFloat64);
  }
  Expr nans = ops::IsNan(value);
  if (has_weight) nans = nans || ops::IsNan(weight);
  Expr keep;  // 1.0 where the element counts
  if (nan.mode == "error") {
    b.Check(value_name, "{n} NaN values (nan_strategy=error)", ops::Sum(nans));
  }
  if (nan.mode == "replace") {
    if (kind == Agg::kMean && (!has_weight || weight.rank() == 0)) {
      // TorchMetrics writes the replacement into the broadcast (expanded)
      // weight, so one NaN in a batch sets every weight of that batch to it.
      Expr w =
          has_weight ? weight + ops::FullLike(value, 0.0, DType::kFloat64) : ops::FullLike(value, 1.0, DType::kFloat64);
      weight = ops::Where(ops::Any(nans), ops::FullLike(value, nan.replacement, DType::kFloat64), w);
      has_weight = true;
    } else if (has_weight) {
      weight = ops::Where(nans, nan.replacement, weight);
    }
    value = ops::Where(nans, nan.replacement, value);
  } else if (nan.mode != "disable") {
    keep = !nans;
  }
  switch (kind) {
    case Agg::kMean: {
      Expr w = has_weight ? weight : ops::FullLike(value, 1.0, DType::kFloat64);
      if (keep.valid()) {
        w = ops::Where(keep, w, 0.0);
        value = ops::Where(keep, value, 0.0);
      }
      auto sum = b.AddState("mean_value", DType::kFloat64, {}, Reducer::kSum);
      auto wsum = b.AddState("weight", DType::kFloat64, {}, Reducer::kSum);
      b.Accumulate(sum, ops::Sum(value * w));
      b.Accumulate(wsum, ops::Sum(w));
      b.Output(b.Read(sum) / b.Read(wsum));
      break;
    }
    case Agg::kSum: {
      if (has_weight) value = value * weight;
      if (keep.valid()) value = ops::Where(keep, value, 0.0);
      auto sum = b.AddState("sum_value", DType::kFloat64, {}, Reducer::kSum);
      b.Accumulate(sum, ops::Sum(value));
      b.Output(b.Read(sum) + 0.0);
      break;
    }
    case Agg::kMax:
    case Agg::kMin: {
      bool is_max = kind == Agg::kMax;
      double identity = is_max ? -INFINITY : INFINITY;
      if (keep.valid()) value = ops::Where(keep, value, identity);
      auto st = b.AddState(is_max ? "max_value" : "min_value", DType::kFloat64, {},
                           is_max ? Reducer::kMax : Reducer::kMin, identity);
      b.Accumulate(st, is_max ? ops::Max(value) : ops::Min(value));
      b.Output(b.Read(st) + 0.0);
      break;
    }
  }
  return b.Finish();
}

absl::StatusOr<dsl::Metric> BuildMean(SpecArgs& a, const dsl::Signature& s, const ir::Device& d) {
  return BuildAggregation(Agg::kMean, a, s, d);
}
absl::StatusOr<dsl::Metric> BuildSum(SpecArgs& a, const dsl::Signature& s, const ir::Device& d) {
  return BuildAggregation(Agg::kSum, a, s, d);
}
absl::StatusOr<dsl::Metric> BuildMax(SpecArgs& a, const dsl::Signature& s, const ir::Device& d) {
  return BuildAggregation(Agg::kMax, a, s, d);
}
absl::StatusOr<dsl::Metric> BuildMin(SpecArgs& a, const dsl::Signature& s, const ir::Device& d) {
  return BuildAggregation(Agg::kMin, a, s, d);
}

}  // namespace

void RegisterAggregationMetrics(std::vector<MetricInfo>& out) {
  out.push_back({"mean", "aggregation", {"value", "weight"}, BuildMean});
  out.push_back({"sum", "aggregation", {"value", "weight"}, BuildSum});
  out.push_back({"max", "aggregation", {"value"}, BuildMax, /*weight_agnostic=*/true});
  out.push_back({"min", "aggregation", {"value"}, BuildMin, /*weight_agnostic=*/true});
}

}  // namespace tally::metrics
