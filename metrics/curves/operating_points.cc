// Operating points of the ROC and precision-recall curves (TorchMetrics
// 1.5.2 functional names and arguments), each a tuple (value, threshold):
//
//   {binary,multiclass,multilabel}_recall_at_fixed_precision(min_precision)
//   {binary,multiclass,multilabel}_precision_at_fixed_recall(min_recall)
//   {binary,multiclass,multilabel}_sensitivity_at_specificity(min_specificity)
//   {binary,multiclass,multilabel}_specificity_at_sensitivity(min_sensitivity)
//
// with thresholds (None = exact, an int, a list), num_classes / num_labels,
// ignore_index and validate_args. Inputs as the curves read them
// (curve_common.h: sigmoid/softmax of logits, ignored elements dropped,
// out-of-range targets counted by a deferred check). binary gives two
// scalars, multiclass/multilabel two [C] tensors (one point per class,
// one-vs-rest). Values are float32; exact thresholds have the
// probabilities' dtype, binned ones are float32.
//
// The points (cls/recall_fixed_precision.py, precision_fixed_recall.py,
// sensitivity_specificity.py, specificity_sensitivity.py):
//   * recall_at_fixed_precision: over the precision-recall curve's points
//     without its closing (precision 1, recall 0) point, those with
//     precision >= min_precision; the largest recall, ties to the larger
//     precision, then the larger threshold (_lexargmax).
//   * precision_at_fixed_recall: points with recall >= min_recall; the
//     largest precision, ties to the larger recall, then the larger
//     threshold (Python's max over (p, r, t) tuples).
//     For both: no qualifying point, or a best value of 0, gives (0, 1e6).
//   * sensitivity_at_specificity / specificity_at_sensitivity: over the ROC
//     (exact: with its (0, 0) point at threshold 1 first), the points with
//     specificity = 1 - fpr >= min_specificity (sensitivity = tpr >=
//     min_sensitivity); the first maximum of tpr (specificity) in ROC order:
//     exact, the highest threshold among ties; binned, the last of the tied
//     thresholds in the user's list (TorchMetrics flips it). No qualifying
//     point gives (0, 1e6); a best value of 0 keeps its threshold.
// The comparisons with min_* are made in float32 (TorchMetrics compares
// float32 precision/recall/fpr tensors with a Python float), except
// recall_at_fixed_precision's exact form on float64 preds: TorchMetrics
// stacks precision with the float64 thresholds there and compares in
// float64. Exact precision is tps / (tps + fps), recall tps / positives (1
// everywhere without positives; in multiclass only when every kept target is
// class 0, else NaN, as in the precision-recall curve), fpr/tpr 0 without
// negatives/positives; binned values divide with _safe_divide (0 on 0/0).
//
// Differences from TorchMetrics: a class without any kept element (exact)
// gives NaN values and thresholds where TorchMetrics raises (IndexError), and
// so does a NaN recall among the qualifying points (multiclass, a class
// without positives and min_precision <= 0), where _lexargmax raises.
//
// States: exact, the curves' `cat` states of probabilities and targets;
// finalize sorts once per class (stable argsort, cumulative counts, the last
// row of each run of tied scores marks a point) and picks the point with
// masked maxima: no masked_select, so unlike the exact curves the finalize
// never reads the host. Binned, the histogram i64 [K, 2, T+1] of (class,
// target, number of thresholds <= the probability); sync-free throughout.
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/curves/common.h"
#include "metrics/registry.h"
#include "metrics/weights.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::Parts;
using dsl::State;
using ir::DType;
using ir::Reducer;
using ops::Expr;

enum class Kind { kRecallAtPrecision, kPrecisionAtRecall, kSensitivityAtSpecificity, kSpecificityAtSensitivity };

const char* MinName(Kind kind) {
  switch (kind) {
    case Kind::kRecallAtPrecision:
      return "min_precision";
    case Kind::kPrecisionAtRecall:
      return "min_recall";
    case Kind::kSensitivityAtSpecificity:
      return "min_specificity";
    case Kind::kSpecificityAtSensitivity:
      return "min_sensitivity";
  }
  return "";
}

bool IsRoc(Kind kind) { return kind == Kind::kSensitivityAtSpecificity || kind == Kind::kSpecificityAtSensitivity; }

struct Args {
  int64_t num = 1;
  double min = 0;
  Thresholds thresholds;
  std::optional<int64_t> ignore_index;
};

absl::StatusOr<Args> ReadArgs(Task task, Kind kind, SpecArgs& args) {
  Args a;
  if (task != Task::kBinary) {
    const char* num_name = task == Task::kMulticlass ? "num_classes" : "num_labels";
    TALLY_ASSIGN_OR_RETURN(a.num, args.GetInt(num_name));
    if (a.num < 2) return args.InvalidArgument(absl::StrCat(num_name, " must be an integer >= 2, got ", a.num));
  }
  const char* min_name = MinName(kind);
  TALLY_ASSIGN_OR_RETURN(a.min, args.GetDouble(min_name));
  // TorchMetrics raises only for a non-float outside [0, 1] (`not
  // isinstance(x, float) and not 0 <= x <= 1`) and takes a float such as
  // 1.5 as given, which no operating point can meet; Tally checks both the
  // same way (every numeric argument: finite, in its range).
  const ArgValue* raw = args.Find(min_name);
  if (raw != nullptr && !(a.min >= 0 && a.min <= 1)) {
    return args.InvalidArgument(absl::StrCat(min_name, " must be a float in [0, 1], got ", ArgValueToString(*raw)));
  }
  TALLY_ASSIGN_OR_RETURN(a.thresholds, ReadThresholds(args));
  TALLY_ASSIGN_OR_RETURN(a.ignore_index, args.GetOptionalInt("ignore_index"));
  // Accepted for compatibility: validation is always on, deferred to Compute.
  TALLY_RETURN_IF_ERROR(args.GetBool("validate_args", true).status());
  return a;
}

Expr F32(Expr x) { return ops::Cast(x, DType::kFloat32); }

// Candidates are one class's curve points along the last dim: the value to
// maximize, a tie-break (PR kinds), the order among remaining ties (larger
// wins), the threshold, and which points count (`cand`).
struct Candidates {
  Expr key, tie, order, thr, cand;
};

// MaskedMax is the maximum of `x` over the last dim where `mask`, -inf
// where nothing is masked in.
Expr MaskedMax(Expr x, Expr mask) { return ops::Max(ops::Where(mask, x, -INFINITY), {x.rank() - 1}); }

// Pick is the chosen (value, threshold) of each row of `c`; `order_is_index`
// means `order` holds positions and the threshold is read there.
std::pair<Expr, Expr> Pick(Kind kind, const Candidates& c) {
  const int64_t last = c.key.rank() - 1;
  Expr best = MaskedMax(c.key, c.cand);
  Expr left = c.cand && c.key == ops::Unsqueeze(best, last);
  if (c.tie.valid()) {
    Expr best_tie = MaskedMax(c.tie, left);
    left = left && c.tie == ops::Unsqueeze(best_tie, last);
  }
  Expr thr = MaskedMax(c.order, left);
  Expr any = ops::Any(c.cand, {last});
  Expr value = ops::Where(any, best, 0.0);
  Expr none = IsRoc(kind) ? !any : !any || best == 0.0;
  Expr nan = ops::IsNan(best);
  thr = ops::Where(none, 1e6, thr);
  return {ops::Where(nan, NAN, F32(value)), ops::Where(nan, NAN, thr)};
}

// ExactCandidates scores one class: `s` its probabilities, `label` 1
// positive, 0 negative, -1 dropped (both 1-D), each element weighing `w`
// (1-D f64) when valid; `recall_one` (bool scalar) is TorchMetrics' "no
// positive samples" rule of the PR curve.
Candidates ExactCandidates(Kind kind, const Args& a, Expr s, Expr label, Expr w, Expr recall_one) {
  DescendingRows r = SortDescending(s, label, w);
  Expr sorted = r.sorted, point = r.last;  // the last row of each run of tied scores is a point
  Expr n_pos = ops::Sum(r.pos), n_neg = ops::Sum(r.neg);
  Expr tps = F32(ops::Cumsum(r.pos, 0)), fps = F32(ops::Cumsum(r.neg, 0));
  const float min = static_cast<float>(a.min);
  // One leading point: ROC's (0, 0) at threshold 1; for PR a placeholder
  // that never counts (so that no maximum runs over zero rows).
  auto lead = [&](Expr x, double v) { return ops::Concat({ops::Full(x, {1}, v, x.dtype()), x}); };
  Candidates c;
  c.thr = lead(sorted, 1.0);
  c.order = c.thr;
  if (IsRoc(kind)) {
    Expr fpr = ops::Where(n_neg > int64_t{0}, fps / F32(n_neg), 0.0);
    Expr tpr = ops::Where(n_pos > int64_t{0}, tps / F32(n_pos), 0.0);
    Expr spec = lead(1.0 - fpr, 1.0);
    Expr sens = lead(tpr, 0.0);
    c.cand = ops::Concat({ops::Full(point, {1}, 1.0, DType::kBool), point});
    if (kind == Kind::kSensitivityAtSpecificity) {
      c.key = sens;
      c.cand = c.cand && spec >= min;
    } else {
      c.key = spec;
      c.cand = c.cand && sens >= min;
    }
    return c;
  }
  Expr precision = lead(tps / (tps + fps), 0.0);
  Expr recall = lead(ops::Where(recall_one, 1.0, tps / F32(n_pos)), 0.0);
  c.cand = ops::Concat({ops::Full(point, {1}, 0.0, DType::kBool), point});
  if (kind == Kind::kRecallAtPrecision) {
    c.key = recall;
    c.tie = precision;
    // TorchMetrics stacks precision with the thresholds: float64 preds
    // compare in float64.
    Expr qualifies = s.dtype() == DType::kFloat64 ? ops::Cast(precision, DType::kFloat64) >= a.min : precision >= min;
    c.cand = c.cand && qualifies;
  } else {
    c.key = precision;
    c.tie = recall;
    c.cand = c.cand && recall >= min;
  }
  return c;
}

// BinnedCandidates reads the histogram's counts at each threshold in the
// user's order ([K, T]) and makes every threshold a candidate.
Candidates BinnedCandidates(Kind kind, const Args& a, Expr hist, int64_t k, const SortedThresholds& st) {
  const int64_t t = a.thresholds.size();
  Expr total = ops::Sum(hist, {2}, /*keepdim=*/true);
  Expr ge = AtOrAbove(hist, ops::Cumsum(hist, 2));  // at or above the j-th sorted threshold
  Expr base = ops::Reshape(ops::Arange(hist, k * 2), {k, 2, 1}) * static_cast<double>(t + 1);
  Expr at = ops::Take(ops::Flatten(ge), base + ops::Reshape(PermIndex(hist, st), {1, 1, t}));
  Expr fp = F32(ops::Select(at, 1, 0)), tp = F32(ops::Select(at, 1, 1));              // [K, T]
  Expr n_neg = F32(ops::Select(total, 1, 0)), n_pos = F32(ops::Select(total, 1, 1));  // [K, 1]
  Expr thresholds =
      ops::Unsqueeze(ThresholdTensor(hist, a.thresholds), 0) + ops::Full(hist, {k, 1}, 0.0, DType::kFloat32);
  const float min = static_cast<float>(a.min);
  Candidates c;
  c.thr = thresholds;
  c.order = thresholds;
  if (IsRoc(kind)) {
    Expr tpr = ops::SafeDiv(tp, n_pos);
    Expr spec = 1.0 - ops::SafeDiv(fp, n_neg);
    // TorchMetrics flips the binned ROC: the first maximum is the last one
    // in the user's order.
    c.order = ops::Cast(ops::Unsqueeze(ops::Arange(hist, t), 0) + ops::Full(hist, {k, 1}, 0.0, DType::kInt64),
                        DType::kFloat32);
    if (kind == Kind::kSensitivityAtSpecificity) {
      c.key = tpr;
      c.cand = spec >= min;
    } else {
      c.key = spec;
      c.cand = tpr >= min;
    }
    return c;
  }
  Expr precision = ops::SafeDiv(tp, tp + fp);
  Expr recall = ops::SafeDiv(tp, n_pos);
  if (kind == Kind::kRecallAtPrecision) {
    c.key = recall;
    c.tie = precision;
    c.cand = precision >= min;
  } else {
    c.key = precision;
    c.tie = recall;
    c.cand = recall >= min;
  }
  return c;
}

absl::StatusOr<dsl::Metric> BuildFixed(Task task, Kind kind, SpecArgs& args, const dsl::Signature& sig,
                                       const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(Args a, ReadArgs(task, kind, args));
  MetricBuilder b(args.metric_name(), sig, device);
  ClassInputs in;
  std::optional<ClassTask> ct;
  if (task != Task::kBinary) ct = task == Task::kMulticlass ? ClassTask::kMulticlass : ClassTask::kMultilabel;
  if (!ReadCurveInputs(ct, a.num, a.ignore_index, b, in)) return b.status();
  Expr probs = in.probs, label = in.label, stored_target = in.stored_target;
  std::vector<int64_t> extra = in.extra;
  const int64_t c = a.num;
  const int64_t k = task == Task::kBinary ? 1 : c;
  // Row weights: the binned counts become f64 sums of weights; the exact
  // form keeps them beside the rows.
  Expr w = CurveWeights(b, /*flat=*/task == Task::kBinary, /*refused=*/false);
  if (!b.ok()) return b.status();

  if (a.thresholds.binned) {
    SortedThresholds st = SortThresholds(a.thresholds);
    Expr cls = task == Task::kBinary ? ops::FullLike(label, 0.0, DType::kInt64) : ClassIndex(label, c, probs.rank());
    State hist = b.AddState("threshold_counts", w.valid() ? DType::kFloat64 : DType::kInt64,
                            {k, 2, st.sorted.size() + 1}, Reducer::kSum);
    b.Accumulate(hist, BinnedHistogram(probs, label, cls, k, st, w));
    Expr counts = b.Read(hist);
    if (!b.ok()) return b.status();
    auto [value, thr] = Pick(kind, BinnedCandidates(kind, a, counts, k, st));
    if (IsRoc(kind)) {
      // `thr` holds the chosen position: read the threshold there.
      Expr pos = ops::Cast(thr, DType::kInt64);
      Expr list = ThresholdTensor(counts, a.thresholds);
      thr = ops::Where(thr == 1e6, 1e6, ops::Take(list, ops::Where(thr == 1e6, int64_t{0}, pos)));
    }
    if (task == Task::kBinary) {
      b.Output(Parts{ops::Select(value, 0, 0), ops::Select(thr, 0, 0)});
    } else {
      b.Output(Parts{value, thr});
    }
    return b.Finish();
  }

  std::vector<int64_t> row;
  if (task != Task::kBinary) row.push_back(c);
  for (int64_t d : extra) row.push_back(d);
  const std::vector<int64_t>& target_row = task == Task::kMulticlass ? extra : row;
  ExactRows rows = AccumulateExactRows(b, probs, stored_target, task == Task::kMulticlass, row, target_row, w);
  if (!b.ok()) return b.status();
  Expr scores = rows.scores;
  Expr y = rows.y;
  if (task == Task::kBinary) {
    Expr s = scores, l = y;
    Expr empty = ops::Sum(ops::Cast(l >= int64_t{0}, DType::kInt64)) == int64_t{0};
    Expr n_pos = ops::Sum(ops::Cast(l == int64_t{1}, DType::kInt64));
    auto [value, thr] = Pick(kind, ExactCandidates(kind, a, s, l, rows.weight, n_pos == int64_t{0}));
    b.Output(Parts{ops::Where(empty, NAN, value), ops::Where(empty, NAN, thr)});
    return b.Finish();
  }
  Expr labels = y;  // (R, C, ...): 1, 0, -1 per element
  if (task == Task::kMulticlass) {
    Expr y1 = ops::Unsqueeze(y, 1);
    labels = ops::Where(y1 >= int64_t{0}, ops::Cast(y1 == ClassIndex(y, c, scores.rank()), DType::kInt64), int64_t{-1});
  }
  Expr kept = ops::Cast(labels >= int64_t{0}, DType::kInt64);
  std::vector<int64_t> other_dims = {0};
  for (int64_t d = 2; d < labels.rank(); ++d) other_dims.push_back(d);
  // Any class without a kept element: TorchMetrics raises for the whole call.
  Expr empty = ops::Any(ops::Sum(kept, other_dims) == int64_t{0});
  // TorchMetrics' multiclass "no positives" test looks at the class labels.
  Expr all_class0;
  if (task == Task::kMulticlass) all_class0 = ops::Sum(ops::Cast(y > int64_t{0}, DType::kInt64)) == int64_t{0};
  // Each element weighs its row's weight.
  Expr weights = rows.weight.valid() ? PerElement(rows.weight, labels) : Expr();
  std::vector<Expr> values, thrs;
  for (int64_t i = 0; i < c; ++i) {
    Expr s = ops::Flatten(ops::Select(scores, 1, i));
    Expr l = ops::Flatten(ops::Select(labels, 1, i));
    Expr wi = weights.valid() ? ops::Flatten(ops::Select(weights, 1, i)) : Expr();
    Expr recall_one =
        all_class0.valid() ? all_class0 : ops::Sum(ops::Cast(l == int64_t{1}, DType::kInt64)) == int64_t{0};
    auto [value, thr] = Pick(kind, ExactCandidates(kind, a, s, l, wi, recall_one));
    values.push_back(ops::Unsqueeze(value, 0));
    thrs.push_back(ops::Unsqueeze(thr, 0));
  }
  b.Output(Parts{ops::Where(empty, NAN, ops::Concat(values)), ops::Where(empty, NAN, ops::Concat(thrs))});
  return b.Finish();
}

}  // namespace

void RegisterOperatingPointMetrics(std::vector<MetricInfo>& out) {
  const std::vector<std::string> in = {"preds", "target", kWeightInput};
  out.push_back(
      {"binary_recall_at_fixed_precision", "curves", in, Bound(BuildFixed, Task::kBinary, Kind::kRecallAtPrecision)});
  out.push_back({"multiclass_recall_at_fixed_precision", "curves", in,
                 Bound(BuildFixed, Task::kMulticlass, Kind::kRecallAtPrecision)});
  out.push_back({"multilabel_recall_at_fixed_precision", "curves", in,
                 Bound(BuildFixed, Task::kMultilabel, Kind::kRecallAtPrecision)});
  out.push_back(
      {"binary_precision_at_fixed_recall", "curves", in, Bound(BuildFixed, Task::kBinary, Kind::kPrecisionAtRecall)});
  out.push_back({"multiclass_precision_at_fixed_recall", "curves", in,
                 Bound(BuildFixed, Task::kMulticlass, Kind::kPrecisionAtRecall)});
  out.push_back({"multilabel_precision_at_fixed_recall", "curves", in,
                 Bound(BuildFixed, Task::kMultilabel, Kind::kPrecisionAtRecall)});
  out.push_back({"binary_sensitivity_at_specificity", "curves", in,
                 Bound(BuildFixed, Task::kBinary, Kind::kSensitivityAtSpecificity)});
  out.push_back({"multiclass_sensitivity_at_specificity", "curves", in,
                 Bound(BuildFixed, Task::kMulticlass, Kind::kSensitivityAtSpecificity)});
  out.push_back({"multilabel_sensitivity_at_specificity", "curves", in,
                 Bound(BuildFixed, Task::kMultilabel, Kind::kSensitivityAtSpecificity)});
  out.push_back({"binary_specificity_at_sensitivity", "curves", in,
                 Bound(BuildFixed, Task::kBinary, Kind::kSpecificityAtSensitivity)});
  out.push_back({"multiclass_specificity_at_sensitivity", "curves", in,
                 Bound(BuildFixed, Task::kMulticlass, Kind::kSpecificityAtSensitivity)});
  out.push_back({"multilabel_specificity_at_sensitivity", "curves", in,
                 Bound(BuildFixed, Task::kMultilabel, Kind::kSpecificityAtSensitivity)});
}

}  // namespace tally::metrics
