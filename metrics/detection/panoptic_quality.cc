// panoptic_quality(things, stuffs, allow_unknown_preds_category=False,
// return_sq_and_rq=False, return_per_class=False), TorchMetrics 1.5.2's
// PanopticQuality: preds and target [N, ..., 2] hold (category_id,
// instance_id) per point. The matching happens in the update
// (panoptic_match, ops/fused/panoptic_match.h) and the state is, per
// category (things sorted, then stuffs sorted), the exact sum of matched
// IoUs (units of 2^-24) and the TP, FP and FN counts: int64 [4, C], fixed
// size, merged by addition. The finalize follows TorchMetrics' dtypes:
// SQ in float64, RQ in float32 (its TP + FP/2 + FN/2 denominator is
// float32), PQ = SQ * RQ in float64, each averaged over the categories
// with a nonzero denominator (NaN when there is none).
#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "metrics/regression/operands.h"
#include "ops/attrs.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ops::Expr;

// Categories reads a category list as TorchMetrics' _parse_categories
// does: duplicates dropped, sorted.
absl::StatusOr<std::vector<int64_t>> Categories(SpecArgs& args, const char* name) {
  TALLY_ASSIGN_OR_RETURN(std::vector<int64_t> ids, args.GetIntList(name));
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// Stack puts same-shaped values side by side along a new dim 0.
Expr Stack(const std::vector<Expr>& xs) {
  std::vector<Expr> rows;
  for (const Expr& x : xs) rows.push_back(ops::Unsqueeze(x, 0));
  return ops::Concat(rows);
}

absl::StatusOr<dsl::Metric> Build(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(const std::vector<int64_t> things, Categories(args, "things"));
  TALLY_ASSIGN_OR_RETURN(const std::vector<int64_t> stuffs, Categories(args, "stuffs"));
  TALLY_ASSIGN_OR_RETURN(const bool allow_unknown, args.GetBool("allow_unknown_preds_category", false));
  TALLY_ASSIGN_OR_RETURN(const bool sq_and_rq, args.GetBool("return_sq_and_rq", false));
  TALLY_ASSIGN_OR_RETURN(const bool per_class, args.GetBool("return_per_class", false));
  std::vector<int64_t> common;
  std::set_intersection(things.begin(), things.end(), stuffs.begin(), stuffs.end(), std::back_inserter(common));
  if (!common.empty()) {
    return args.InvalidArgument(
        absl::StrCat("things and stuffs must be distinct, both hold ", absl::StrJoin(common, ", ")));
  }
  if (things.empty() && stuffs.empty()) return args.InvalidArgument("at least one of things and stuffs must be given");
  const int64_t c = static_cast<int64_t>(things.size() + stuffs.size());

  MetricBuilder b(args.metric_name(), sig, device);
  const dsl::InputSpec* specs[2] = {b.FindInput("preds"), b.FindInput("target")};
  Expr preds = b.RawInput("preds"), target = b.RawInput("target");
  if (!b.ok()) return b.status();
  const std::vector<int64_t>& shape = specs[0]->shape;
  if (specs[1]->shape != shape) {
    b.FailInput("target",
                absl::StrCat("expected the shape of preds ", ShapeText(shape), ", got ", ShapeText(specs[1]->shape)));
    return b.status();
  }
  if (shape.size() < 3 || shape.back() != 2) {
    b.FailInput("preds", absl::StrCat("expected (category_id, instance_id) pairs [N, ..., 2] with one spatial dim "
                                      "at least, got ",
                                      ShapeText(shape)));
    return b.status();
  }
  for (int k = 0; k < 2; ++k) {
    if (!ir::IsIntegral(specs[k]->dtype)) {
      b.FailInput(k == 0 ? "preds" : "target",
                  absl::StrCat("expected integer ids, got ", ir::DTypeName(specs[k]->dtype)));
      return b.status();
    }
  }
  if (specs[0]->dtype != specs[1]->dtype) {
    const DType common_type = ir::PromoteTypes(specs[0]->dtype, specs[1]->dtype);
    preds = ops::Cast(preds, common_type);
    target = ops::Cast(target, common_type);
  }
  ops::PanopticMatchAttrs a;
  a.things = things;
  a.stuffs = stuffs;
  std::vector<Expr> matched = b.OpN(ops::OpId::kPanopticMatch, {preds, target}, ops::ToAttrMap(a));
  if (!b.ok()) return b.status();
  if (!allow_unknown) {
    b.Check("preds",
            "{n} points of categories in neither things nor stuffs (allow_unknown_preds_category=True makes them void)",
            ops::Sum(matched[1]));
  }
  State counts = b.AddState("counts", DType::kInt64, {4, c}, ir::Reducer::kSum);
  b.Accumulate(counts, ops::Sum(matched[0], {0}));

  Expr s = b.Read(counts);
  Expr iou_sum = F64(ops::Select(s, 0, 0)) * ops::kPanopticIouUnit;  // exact
  Expr tp = F64(ops::Select(s, 0, 1));
  Expr fp = F64(ops::Select(s, 0, 2));
  Expr fn = F64(ops::Select(s, 0, 3));
  Expr sq = ops::SafeDiv(iou_sum, tp);
  // TorchMetrics' RQ: TP / (TP + FP/2 + FN/2) in float32 (one rounding of
  // the exact quotient, as its float32 division of exact operands gives).
  Expr denominator = tp + 0.5 * fp + 0.5 * fn;
  Expr rq = F64(ops::Cast(ops::SafeDiv(tp, denominator), DType::kFloat32));
  Expr pq = sq * rq;
  Expr seen = denominator > 0.0;
  Expr categories = ops::Sum(F64(seen));
  auto mean = [&](Expr v) { return ops::Sum(ops::Where(seen, v, 0.0)) / categories; };
  if (per_class) {
    b.Output(sq_and_rq ? ops::Transpose(Stack({pq, sq, rq}), 0, 1) : ops::Unsqueeze(pq, 0));
  } else if (sq_and_rq) {
    Expr rq_mean = F64(ops::Cast(mean(rq), DType::kFloat32));  // TorchMetrics' float32 mean
    b.Output(Stack({mean(pq), mean(sq), rq_mean}));
  } else {
    b.Output(mean(pq));
  }
  return b.Finish();
}

}  // namespace

void RegisterPanopticMetrics(std::vector<MetricInfo>& out) {
  out.push_back({"panoptic_quality", "detection", {"preds", "target"}, Build});
}

}  // namespace tally::metrics
