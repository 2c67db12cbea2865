// The IoU family of box pairs, as TorchMetrics 1.5.2's functional forms
// compute them with torchvision's box ops (xyxy boxes):
//   intersection_over_union(iou_threshold=None, replacement_val=0, aggregate=True)
//   generalized_intersection_over_union(...), distance_intersection_over_union(...),
//   complete_intersection_over_union(...)
// over preds and target [N, 4]. TorchMetrics builds the [N, N] matrix and
// returns the mean of its diagonal: row i's pair. So with aggregate=True
// the update computes each row's value (in the boxes' dtype, in
// torchvision's order of operations), replaces those below iou_threshold,
// and the states are a float64 sum and a row count (0.0 for no rows, as
// TorchMetrics); aggregate=False keeps the boxes and returns the matrix.
#include <cmath>
#include <optional>
#include <string>
#include <utility>
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
using ir::Reducer;
using ops::Expr;

enum class Kind { kIou, kGeneralized, kDistance, kComplete };

// torchvision's eps of distance_box_iou and complete_box_iou.
constexpr double kEps = 1e-7;

// PairValue is the value of box pairs p and t (xyxy, broadcast against each
// other: [N, 4] with [N, 4], or [R, 1, 4] with [1, R, 4]).
Expr PairValue(Kind kind, Expr p, Expr t) {
  const int64_t last = p.rank() - 1;
  auto col = [last](Expr x, int64_t k) { return ops::Select(x, last, k); };
  Expr p0 = col(p, 0), p1 = col(p, 1), p2 = col(p, 2), p3 = col(p, 3);
  Expr t0 = col(t, 0), t1 = col(t, 1), t2 = col(t, 2), t3 = col(t, 3);
  // box_iou / _box_inter_union
  Expr area1 = (p2 - p0) * (p3 - p1), area2 = (t2 - t0) * (t3 - t1);
  Expr w = ops::Clamp(ops::Minimum(p2, t2) - ops::Maximum(p0, t0), 0.0, std::nullopt);
  Expr h = ops::Clamp(ops::Minimum(p3, t3) - ops::Maximum(p1, t1), 0.0, std::nullopt);
  Expr inter = w * h;
  Expr uni = area1 + area2 - inter;
  Expr iou = inter / uni;
  if (kind == Kind::kIou) return iou;
  // The enclosing box.
  Expr wi = ops::Clamp(ops::Maximum(p2, t2) - ops::Minimum(p0, t0), 0.0, std::nullopt);
  Expr hi = ops::Clamp(ops::Maximum(p3, t3) - ops::Minimum(p1, t1), 0.0, std::nullopt);
  if (kind == Kind::kGeneralized) {
    Expr areai = wi * hi;
    return iou - (areai - uni) / areai;
  }
  // _box_diou_iou
  Expr diagonal = wi * wi + hi * hi + kEps;
  Expr dx = (p0 + p2) / 2.0 - (t0 + t2) / 2.0, dy = (p1 + p3) / 2.0 - (t1 + t3) / 2.0;
  Expr diou = iou - (dx * dx + dy * dy) / diagonal;
  if (kind == Kind::kDistance) return diou;
  // complete_box_iou
  Expr gap = ops::Atan((p2 - p0) / (p3 - p1)) - ops::Atan((t2 - t0) / (t3 - t1));
  Expr v = (4.0 / (M_PI * M_PI)) * (gap * gap);
  Expr alpha = v / (1.0 - iou + v + kEps);
  return diou - alpha * v;
}

// Boxes declares a box input [N, 4] (float16/bfloat16 computed in float32).
Expr Boxes(MetricBuilder& b, const std::string& name) {
  const dsl::InputSpec* spec = b.FindInput(name);
  Expr x = b.Input(name);
  if (!b.ok()) return x;
  if (spec->shape.size() != 2 || spec->shape[1] != 4 || !ir::IsFloating(spec->dtype)) {
    b.FailInput(name, absl::StrCat("expected floating xyxy boxes [N, 4], got ", ir::DTypeName(spec->dtype), " ",
                                   ShapeText(spec->shape)));
  }
  return x;
}

absl::StatusOr<dsl::Metric> Build(Kind kind, SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(const std::optional<double> threshold, args.GetOptionalDouble("iou_threshold"));
  TALLY_ASSIGN_OR_RETURN(const double replacement, args.GetDouble("replacement_val", 0.0));
  TALLY_ASSIGN_OR_RETURN(const bool aggregate, args.GetBool("aggregate", true));
  MetricBuilder b(args.metric_name(), sig, device);
  Expr preds = Boxes(b, "preds"), target = Boxes(b, "target");
  if (!b.ok()) return b.status();
  if (preds.dtype() != target.dtype()) {
    const DType common = ir::PromoteTypes(preds.dtype(), target.dtype());
    preds = ops::Cast(preds, common);
    target = ops::Cast(target, common);
  }
  // iou[iou < iou_threshold] = replacement_val, in the boxes' dtype.
  auto replace = [&](Expr v) { return threshold ? ops::Where(v < *threshold, ops::Scalar(v, replacement), v) : v; };
  if (aggregate) {
    State sum = b.AddState("sum", DType::kFloat64, {}, Reducer::kSum);
    State rows = b.AddState("rows", DType::kInt64, {}, Reducer::kSum);
    b.Accumulate(sum, ops::Sum(F64(replace(PairValue(kind, preds, target)))));
    b.Accumulate(rows, ops::Size(preds, 0));
    b.Output(ops::SafeDiv(b.Read(sum), F64(b.Read(rows))));
    return b.Finish();
  }
  State p = b.AddState("preds", preds.dtype(), {4}, Reducer::kCat);
  State t = b.AddState("target", target.dtype(), {4}, Reducer::kCat);
  b.Accumulate(p, preds);
  b.Accumulate(t, target);
  b.Output(replace(PairValue(kind, ops::Unsqueeze(b.Read(p), 1), ops::Unsqueeze(b.Read(t), 0))));
  return b.Finish();
}

}  // namespace

void RegisterBoxIouMetrics(std::vector<MetricInfo>& out) {
  for (const auto& [name, kind] : {std::pair<const char*, Kind>{"intersection_over_union", Kind::kIou},
                                   {"generalized_intersection_over_union", Kind::kGeneralized},
                                   {"distance_intersection_over_union", Kind::kDistance},
                                   {"complete_intersection_over_union", Kind::kComplete}}) {
    out.push_back({name, "detection", {"preds", "target"}, Bound(Build, kind)});
  }
}

}  // namespace tally::metrics
