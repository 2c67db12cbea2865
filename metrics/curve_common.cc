#include "metrics/curve_common.h"

#include <string>
#include <variant>

#include "absl/strings/str_cat.h"

namespace tally::metrics {

using dsl::Expr;
using ir::DType;

absl::StatusOr<Thresholds> ReadThresholds(SpecArgs& args) {
  Thresholds t;
  const ArgValue* v = args.Find("thresholds");
  if (v == nullptr || std::holds_alternative<std::monostate>(*v)) return t;
  t.binned = true;
  if (auto* n = std::get_if<int64_t>(v)) {
    if (*n < 2) return args.InvalidArgument(absl::StrCat("thresholds must be an int >= 2, got ", *n));
    t.count = *n;
    return t;
  }
  if (auto* l = std::get_if<std::vector<double>>(v)) t.values = *l;
  if (auto* l = std::get_if<std::vector<int64_t>>(v)) t.values.assign(l->begin(), l->end());
  if (t.values.empty()) {
    return args.InvalidArgument(absl::StrCat("thresholds must be none, an int or a non-empty list of floats in [0, 1], got ",
                                             ArgValueToString(*v)));
  }
  for (double x : t.values) {
    if (!(x >= 0.0 && x <= 1.0)) {
      return args.InvalidArgument(absl::StrCat("thresholds must lie in [0, 1], got ", ArgValueToString(*v)));
    }
  }
  return t;
}

Expr ThresholdTensor(Expr like, const Thresholds& t) {
  const int64_t n = t.size();
  Expr ar = dsl::Arange(like, n, DType::kFloat32);
  if (t.values.empty()) {
    const float step = 1.0f / static_cast<float>(n - 1);
    Expr s = dsl::ScalarOf(ar, step, DType::kFloat32);
    Expr lo = ar * s;
    Expr hi = dsl::ScalarOf(ar, 1.0, DType::kFloat32) - s * (dsl::ScalarOf(ar, n - 1, DType::kFloat32) - ar);
    return dsl::Where(ar < static_cast<double>(n / 2), lo, hi);
  }
  Expr out = dsl::FullLike(ar, 0.0, DType::kFloat32);
  for (int64_t i = 0; i < n; ++i) {
    out = dsl::Where(ar == static_cast<double>(i),
                     dsl::ScalarOf(ar, static_cast<float>(t.values[i]), DType::kFloat32), out);
  }
  return out;
}

}  // namespace tally::metrics
