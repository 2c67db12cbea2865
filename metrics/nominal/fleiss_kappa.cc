// fleiss_kappa(mode='counts'|'probs') (TorchMetrics 1.5.2): agreement of
// raters over categories. `ratings` is [N, C] integer counts (how many raters
// put sample i in category j), or with mode='probs' [N, C, R] float scores
// whose argmax over dim 1 is each rater's category.
//
// State: O(C) and exact: rows N, the per-category sums of counts [C],
// sum_ij n_ij^2, and the largest row sum (TorchMetrics' num_raters, a running
// max). Finalize (TorchMetrics' _fleiss_kappa_compute, its 1e-5 included):
//   p_j = col_j / (N r), P = (sum n^2 - N r) / (N r (r - 1)),
//   Pe = sum p_j^2, kappa = (P - Pe) / (1 - Pe + 1e-5).
// Departure: probs mode counts into C categories; TorchMetrics one-hots into
// R (its ratings.shape[1] after the argmax), which equals this whenever R ==
// C and fails when a category index reaches R.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "metrics/regression/operands.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ops::Expr;

absl::StatusOr<dsl::Metric> Build(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(std::string mode, args.GetEnum("mode", {"counts", "probs"}, "counts"));
  MetricBuilder b(args.metric_name(), sig, device);
  Expr ratings = b.Input("ratings");
  if (!b.ok()) return b.status();
  const std::vector<int64_t>& shape = b.FindInput("ratings")->shape;
  Expr counts;
  if (mode == "probs") {
    if (shape.size() != 3 || !ir::IsFloating(ratings.dtype())) {
      b.FailInput("ratings", absl::StrCat("mode='probs' expects float scores [N, C, R], got ",
                                          ir::DTypeName(ratings.dtype()), " of shape ", ShapeText(shape)));
      return b.status();
    }
    // Each rater's category, one-hot over C, summed over the raters.
    counts = ops::Sum(ops::OneHot(ops::Argmax(ratings, 1), shape[1]), {1});
  } else {
    if (shape.size() != 2 || ir::IsFloating(ratings.dtype())) {
      b.FailInput("ratings", absl::StrCat("mode='counts' expects integer counts [N, C], got ",
                                          ir::DTypeName(ratings.dtype()), " of shape ", ShapeText(shape)));
      return b.status();
    }
    counts = ops::Cast(ratings, DType::kInt64);
    b.Check("ratings", "{n} negative counts", ops::Sum(ops::Cast(counts < 0.0, DType::kInt64)));
  }
  const int64_t c = shape[1];
  State rows = b.AddState("rows", DType::kInt64, {}, ir::Reducer::kSum);
  State per_category = b.AddState("category_counts", DType::kInt64, {c}, ir::Reducer::kSum);
  State squares = b.AddState("squared_counts", DType::kInt64, {}, ir::Reducer::kSum);
  State raters = b.AddState("num_raters", DType::kInt64, {}, ir::Reducer::kMax);
  b.Accumulate(rows, ops::Size(counts, 0));
  b.Accumulate(per_category, ops::Sum(counts, {0}));
  b.Accumulate(squares, ops::Sum(counts * counts));
  b.Accumulate(raters, ops::Max(ops::Sum(counts, {1})));

  Expr n = F64(b.Read(rows));
  Expr r = F64(b.Read(raters));
  Expr p = F64(b.Read(per_category)) / (n * r);
  Expr agreement = (F64(b.Read(squares)) - n * r) / (r * (r - 1.0)) / n;
  Expr chance = ops::Sum(p * p);
  b.Output((agreement - chance) / (1.0 - chance + 1e-5));
  return b.Finish();
}

}  // namespace

void RegisterFleissKappa(std::vector<MetricInfo>& out) {
  out.push_back({"fleiss_kappa", "nominal", {"ratings"}, Build});
}

}  // namespace tally::metrics
