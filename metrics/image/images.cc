#include "metrics/image/images.h"

#include <variant>

#include "absl/strings/str_cat.h"
#include "metrics/common.h"
#include "metrics/regression/operands.h"
#include "support/status_macros.h"

namespace tally::metrics {

using ir::DType;
using ops::Expr;

namespace {

// Number is a numeric ArgValue as a double.
std::optional<double> Number(const ArgValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return std::nullopt;
}

// Numbers is a numeric list ArgValue as doubles.
std::optional<std::vector<double>> Numbers(const ArgValue& v) {
  if (const auto* i = std::get_if<std::vector<int64_t>>(&v)) return std::vector<double>(i->begin(), i->end());
  if (const auto* d = std::get_if<std::vector<double>>(&v)) return *d;
  return std::nullopt;
}

}  // namespace

absl::StatusOr<DataRange> ReadDataRange(SpecArgs& args) {
  DataRange r;
  const ArgValue* v = args.Find("data_range", "a float, [lo, hi] or none", "none");
  if (v == nullptr || std::holds_alternative<std::monostate>(*v)) return r;
  if (std::optional<double> x = Number(*v)) {
    r.range = *x;
    return r;
  }
  std::optional<std::vector<double>> pair = Numbers(*v);
  if (!pair || pair->size() != 2) return args.InvalidArgument("data_range must be a float, [lo, hi] or none");
  r.clamp = std::array<double, 2>{(*pair)[0], (*pair)[1]};
  r.range = (*pair)[1] - (*pair)[0];
  return r;
}

absl::StatusOr<std::array<double, 2>> ReadPair(SpecArgs& args, const std::string& name, double fallback) {
  const ArgValue* v = args.Find(name, "a number or a list of two", absl::StrCat(fallback));
  if (v == nullptr) return std::array<double, 2>{fallback, fallback};
  if (std::optional<double> x = Number(*v)) return std::array<double, 2>{*x, *x};
  std::optional<std::vector<double>> pair = Numbers(*v);
  if (!pair || pair->size() != 2) {
    return args.InvalidArgument(absl::StrCat(name, " must be a number or a list of two (height, width)"));
  }
  return std::array<double, 2>{(*pair)[0], (*pair)[1]};
}

bool ReadImages(dsl::MetricBuilder& b, bool integers, Images& out) {
  Operands in;
  if (!ReadOperands(b, in, 0, /*exact_rank=*/4)) return false;
  if (in.preds_dtype != in.target_dtype) {
    b.FailInput("target", absl::StrCat("expected the dtype of preds (", ir::DTypeName(in.preds_dtype), "), got ",
                                       ir::DTypeName(in.target_dtype)));
    return false;
  }
  if (!integers && !ir::IsFloating(in.preds_dtype)) {
    b.FailInput("preds", absl::StrCat("expected floating images [N, C, H, W], got ", ir::DTypeName(in.preds_dtype)));
    return false;
  }
  out.preds = F64(in.preds);
  out.target = F64(in.target);
  out.shape = in.shape;
  out.dtype = in.preds_dtype;
  return true;
}

Expr Clamped(Expr x, const DataRange& range) {
  return range.clamp ? ops::Clamp(x, (*range.clamp)[0], (*range.clamp)[1]) : x;
}

absl::StatusOr<std::string> ReadReduction(SpecArgs& args) {
  return args.GetEnum("reduction", {"elementwise_mean", "sum", "none"}, "elementwise_mean");
}

void OutputReduced(dsl::MetricBuilder& b, const std::string& reduction, Expr rows,
                   const std::vector<int64_t>& row_shape) {
  if (reduction == "none") {
    dsl::State values = b.AddState("values", DType::kFloat64, row_shape, ir::Reducer::kCat);
    b.Accumulate(values, rows);
    b.Output(b.Read(values));
    return;
  }
  dsl::State sum = b.AddState("sum", DType::kFloat64, {}, ir::Reducer::kSum);
  b.Accumulate(sum, ops::Sum(rows));
  if (reduction == "sum") {
    b.Output(b.Read(sum));
    return;
  }
  dsl::State count = b.AddState("count", DType::kInt64, {}, ir::Reducer::kSum);
  b.Accumulate(count, ops::Sum(ops::FullLike(rows, 1.0, DType::kInt64)));
  b.Output(b.Read(sum) / F64(b.Read(count)));
}

}  // namespace tally::metrics
