#include "metrics/weights.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "metrics/common.h"

namespace tally::metrics {

bool HasWeight(dsl::MetricBuilder& b) { return b.FindInput(kWeightInput) != nullptr; }

namespace {

// CheckedWeight is the raw `weight` for rows like `rows`, its deferred check
// registered (one count_outside read, no float64 copy).
ops::Expr CheckedWeight(dsl::MetricBuilder& b, ops::Expr rows) {
  if (!HasWeight(b) || !b.ok()) return ops::Expr();
  ops::Expr w = b.Input(kWeightInput);
  if (!b.ok()) return ops::Expr();
  if (w.dtype() == ir::DType::kBool) {
    b.FailInput(kWeightInput, "expected float weights, got bool");
    return ops::Expr();
  }
  if (!ir::IsFloating(w.dtype())) w = F64(w);  // integer weights (counts)
  const ir::Shape& ws = w.type().shape;
  const ir::Shape& rs = rows.type().shape;
  if (ws.size() != 1 || rs.empty() || ws[0] != rs[0]) {
    b.FailInput(kWeightInput, absl::StrCat("expected one weight per row, shape [N], got ", w.type().ShapeString()));
    return ops::Expr();
  }
  b.Check(kWeightInput, "{n} negative, NaN or infinite weights", ops::CountOutside(w, 0.0, INFINITY));
  return w;
}

}  // namespace

ops::Expr ReadWeight(dsl::MetricBuilder& b, ops::Expr rows) {
  ops::Expr w = CheckedWeight(b, rows);
  if (!w.valid()) return w;
  w = F64(w);
  // NaN fails both comparisons.
  return ops::Where(w >= 0.0 && w < INFINITY, w, 0.0);
}

ops::Expr RowWeights(dsl::MetricBuilder& b, const std::string& like) {
  return HasWeight(b) ? ReadWeight(b, b.Input(like)) : ops::Expr();
}

ops::Expr RawRowWeights(dsl::MetricBuilder& b, const std::string& like) {
  return HasWeight(b) ? CheckedWeight(b, b.Input(like)) : ops::Expr();
}

ops::Expr PerElement(ops::Expr w, ops::Expr x) {
  if (x.rank() <= 1) return w;
  for (int64_t d = 1; d < x.rank(); ++d) w = ops::Unsqueeze(w, d);
  return w * ops::FullLike(x, 1.0, ir::DType::kFloat64);
}

ops::Expr FlatWeights(dsl::MetricBuilder& b, const std::string& like) {
  ops::Expr w = RowWeights(b, like);
  if (!w.valid()) return w;
  ops::Expr x = b.Input(like);
  return x.rank() <= 1 ? w : ops::Flatten(PerElement(w, x));
}

}  // namespace tally::metrics
