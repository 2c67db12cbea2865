// Threshold-free multiclass and multilabel metrics: multiclass_auroc,
// multiclass_average_precision, multilabel_auroc and
// multilabel_average_precision (TorchMetrics 1.5 functional names and
// arguments: num_classes / num_labels, average, thresholds, ignore_index,
// validate_args).
//
// Input, as in TorchMetrics:
//   * multiclass: float preds (N, C, ...) and integer target (N, ...); a
//     sample whose target is ignore_index is dropped, one outside [0, C) is
//     counted by a deferred check and dropped. When any kept score lies
//     outside [0, 1] (NaN included) the batch is softmaxed over dim 1.
//   * multilabel: float preds and integer/bool target, both (N, L, ...); an
//     element whose target is ignore_index is dropped, one outside {0, 1} is
//     counted and dropped. When any element lies outside [0, 1] (ignored ones
//     included) the batch is sigmoided.
// Each class (label) is scored one-vs-rest as the binary metrics score it.
//
// thresholds=None (exact): `cat` states of the probabilities and targets.
// Finalize flattens the (row, class) elements, sorts them by (class, score
// descending) with one segment_sort, and reads per element, with segment
// scans, the positives and negatives scored >= it (its whole tie group
// included) and those tied with it; per-class sums are one weighted
// histogram. So ties count as in sklearn/TorchMetrics (a tied
// positive/negative pair counts one half in AUROC; a tie group is one point
// of the precision-recall curve) with no loop over classes.
//
// thresholds=int T or a list (binned): every element is reduced to how many
// thresholds (sorted, float32 as torch.linspace or the list) are <= its
// probability (searchsorted), and the state is the i64 histogram
// [C, 2, T+1] of (class, target, that count): constant memory, O(N C log T)
// per update, sync-free in update and finalize. Finalize turns it into
// TorchMetrics' per-threshold counts (preds >= threshold) with one segment
// scan, then into the binned ROC area (trapezoids) and AP
// (sum_t (recall[t] - recall[t+1]) * precision[t], recall[T] = 0).
//
// Per-class values and averaging follow TorchMetrics 1.5 (auroc.py,
// average_precision.py, roc.py, precision_recall_curve.py):
//   * AUROC of a class without positives or without negatives is 0.
//   * Exact multiclass AP of a class without positives is NaN, except when
//     every kept target is 0 (TorchMetrics then sets recall to 1): 0.
//     Exact multilabel AP of a label without positives is 0; binned AP of a
//     class without positives is 0.
//   * macro is the mean over the classes whose value is not NaN; weighted
//     weighs those by their support (positives); none returns [C].
//   * multilabel micro scores all kept elements as one binary problem.
//   * exact form, a class (label) without any kept element: NaN, all of
//     the result (TorchMetrics raises an IndexError).
// Values are computed in float64 and returned as float32.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/curves/common.h"
#include "metrics/registry.h"
#include "metrics/weights.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ir::Reducer;
using ops::Expr;

using Task = ClassTask;
enum class Curve { kAuroc, kAveragePrecision };

struct Args {
  int64_t num = 0;  // num_classes or num_labels
  std::string average = "macro";
  Thresholds thresholds;
  std::optional<int64_t> ignore_index;
};

absl::StatusOr<Args> ReadArgs(Task task, SpecArgs& args) {
  Args a;
  const char* num_name = task == Task::kMulticlass ? "num_classes" : "num_labels";
  TALLY_ASSIGN_OR_RETURN(a.num, args.GetInt(num_name));
  if (a.num < 2) return args.InvalidArgument(absl::StrCat(num_name, " must be an integer >= 2, got ", a.num));
  if (task == Task::kMulticlass) {
    TALLY_ASSIGN_OR_RETURN(a.average, args.GetEnum("average", {"macro", "weighted", "none"}, "macro"));
  } else {
    TALLY_ASSIGN_OR_RETURN(a.average, args.GetEnum("average", {"micro", "macro", "weighted", "none"}, "macro"));
  }
  TALLY_ASSIGN_OR_RETURN(a.thresholds, ReadThresholds(args, /*allow_exact16=*/true));
  TALLY_RETURN_IF_ERROR(RequireAscending(args, a.thresholds));
  TALLY_ASSIGN_OR_RETURN(a.ignore_index, args.GetOptionalInt("ignore_index"));
  // Accepted for compatibility: validation is always on, deferred to Compute.
  TALLY_RETURN_IF_ERROR(args.GetBool("validate_args", true).status());
  return a;
}

bool ReadInputs(Task task, const Args& a, MetricBuilder& b, ClassInputs& in) {
  return ReadClassInputs(task, a.num, a.ignore_index, b, in);
}

// PerClass is what both forms produce before averaging: the per-class value
// and support (positives), f64 [K] (K = C, or 1 for micro).
struct PerClass {
  Expr value;
  Expr support;
  Expr rows;  // exact form: kept elements per class
};

// Scan is segment_scan's pair: the inclusive cumulative sum within a segment
// and the segment's total, both per element.
struct Scan {
  Expr cum, total;
};

Scan SegmentScan(MetricBuilder& b, std::vector<Expr> operands) {
  std::vector<Expr> r = b.OpN(ops::OpId::kSegmentScan, std::move(operands), {});
  if (r.size() != 2) return {};
  return {r[0], r[1]};
}

// FinishAp is the per-class AP from the sum over positives of the precision
// at their score, with TorchMetrics' rules for a class without positives.
Expr FinishAp(Task task, int64_t k, Expr sum_prec, Expr support, Expr rows) {
  Expr ap = sum_prec / support;  // NaN without positives
  if (task == Task::kMulticlass && k > 1) {
    // TorchMetrics sets recall to 1 when every kept target is class 0; a
    // class without positives then scores its top precision, 0.
    Expr all_zero = ops::Sum(support) == ops::Select(support, 0, 0);
    return ops::Where(support == 0.0 && all_zero && rows > 0.0, 0.0, ap);
  }
  // Binary rule (multilabel, micro): no positives -> recall 1 -> AP 0.
  return ops::Where(support == 0.0 && rows > 0.0, 0.0, ap);
}

// ExactPerClass scores the elements of the exact form one-vs-rest per class.
// `cls` (i64) broadcasts against `scores` and `label` (1 positive, 0
// negative, -1 dropped); k is the number of classes. With element weights
// `w` (f64, label's shape) each element counts its weight: the sums below
// become scikit-learn's sample_weight sums.
PerClass ExactPerClass(Curve kind, Task task, MetricBuilder& b, Expr scores, Expr label, Expr cls, int64_t k, Expr w) {
  const double kk = static_cast<double>(k);
  Expr valid = label >= int64_t{0};
  // Dropped elements go to segment k, which the histograms below leave out.
  Expr key = ops::Flatten(ops::Where(valid, cls, kk));
  Expr pos = ops::Flatten(ops::Cast(label == int64_t{1}, DType::kFloat64));
  Expr s = ops::Flatten(scores);
  std::vector<Expr> operands = {key, s, pos};
  if (w.valid()) operands = {key, s, pos * ops::Flatten(w), ops::Flatten(ops::Where(label == int64_t{0}, w, 0.0))};
  std::vector<Expr> sorted = b.OpN(ops::OpId::kSegmentSort, operands, {});
  if (sorted.size() != operands.size()) return {};
  Expr ks = sorted[0], ss = sorted[1], ps = sorted[2];
  Expr ns = w.valid() ? sorted[3] : ops::Cast(ks < kk, DType::kFloat64) - ps;
  // Per element, within its class: the count up to the end of its tie group
  // (everything scored >= it), the tie group's own count, the class total.
  auto count = [&](Expr x, Expr* tied, Expr* total) {
    Scan in_class = SegmentScan(b, {x, ks});
    Scan in_group = SegmentScan(b, {x, ks, ss});
    if (tied != nullptr) *tied = in_group.total;
    if (total != nullptr) *total = in_class.total;
    return in_class.cum - in_group.cum + in_group.total;
  };
  PerClass out;
  out.support = ops::Histogram(ks, ps, k);
  out.rows = ops::Histogram(ks, ops::Cast(ks < kk, DType::kFloat64), k);
  if (kind == Curve::kAuroc) {
    Expr neg_tied, neg_total;
    Expr neg_ge = count(ns, &neg_tied, &neg_total);
    // A negative scored below a positive counts 1, a tied one 1/2 (the
    // Mann-Whitney U, which is the trapezoidal area of the ROC curve).
    Expr u = ops::Histogram(ks, ps * (neg_total - neg_ge + neg_tied * 0.5), k);
    Expr n_neg = ops::Histogram(ks, ns, k);
    // No positives or no negatives: TorchMetrics' zero tpr / fpr give 0.
    out.value = ops::SafeDiv(u, out.support * n_neg);
    return out;
  }
  Expr tp_ge = count(ps, nullptr, nullptr);
  Expr fp_ge = count(ns, nullptr, nullptr);
  // Each positive adds the precision at the end of its tie group.
  Expr sum_prec = ops::Histogram(ks, ps * ops::SafeDiv(tp_ge, tp_ge + fp_ge), k);
  out.value = FinishAp(task, k, sum_prec, out.support, out.rows);
  return out;
}

// Exact16PerClass scores each class from the exact16 counts [K, 2, 65536].
PerClass Exact16PerClass(Curve kind, Task task, Expr counts, int64_t k) {
  Exact16Stats st = Exact16StatsOf(counts);
  PerClass out;
  out.support = st.n_pos;
  out.rows = st.n_pos + st.n_neg;
  out.value = kind == Curve::kAuroc ? ops::SafeDiv(st.u, st.n_pos * st.n_neg)
                                    : FinishAp(task, k, st.precision_sum, st.n_pos, out.rows);
  return out;
}

// BinnedCounts are TorchMetrics' per-threshold counts in pairs along the
// last dim: `head` holds the counts (preds >= threshold) at threshold j,
// `tail` those at threshold j + 1 (0 past the last one), f64 [K, 2, X]
// ([class][target][pair]); `pair` marks the pairs of two real thresholds
// and `last` the pairs that close the curve (threshold T-1, T).
struct BinnedCounts {
  Expr head, tail, pair, last;
};

// Binned per-class counts from the histogram state [K, 2, T+1] (class,
// target, number of sorted thresholds <= the probability).
BinnedCounts CountsFromHistogram(MetricBuilder& b, Expr hist, int64_t k, const SortedThresholds& st) {
  const int64_t t = st.sorted.size();
  // Inclusive cumulative sums along the last dim: one segment scan keyed by
  // the (class, target) row.
  Expr row = ops::Reshape(ops::Arange(hist, k * 2), {k, 2, 1});
  Expr keys = ops::Flatten(row + ops::FullLike(hist, 0.0, DType::kInt64));
  Scan scan = SegmentScan(b, {ops::Flatten(hist), keys});
  Expr cum = ops::Cast(ops::Reshape(scan.cum, {k, 2, t + 1}), DType::kFloat64);
  Expr h = ops::Cast(hist, DType::kFloat64);
  // An element is >= sorted threshold j exactly when more than j thresholds
  // are <= it: ge[j] = sum_{m > j} hist[m] = total - cum[j] (ge[T] = 0).
  Expr ge = AtOrAbove(hist, cum);
  BinnedCounts c;
  if (st.identity) {
    // Position m in [1, T] pairs ge[m - 1] = ge[m] + hist[m] with ge[m].
    Expr m = ops::Arange(hist, t + 1);
    c.head = ge + h;
    c.tail = ge;
    c.pair = m >= int64_t{1} && m <= static_cast<double>(t - 1);
    c.last = m == static_cast<double>(t);
    return c;
  }
  // Unsorted list: gather ge at each threshold's sorted position, in the
  // user's order, with constant selection matrices (lists are short).
  Expr rows = ops::Unsqueeze(ops::Arange(hist, t), 1);  // [T, 1]
  Expr perm = ops::FullLike(ops::Arange(hist, t), 0.0, DType::kInt64);
  for (int64_t i = 0; i < t; ++i) {
    perm = ops::Where(ops::Arange(hist, t) == static_cast<double>(i), ops::FullLike(perm, st.perm[i], DType::kInt64),
                      perm);
  }
  Expr sel = ops::Unsqueeze(ops::Arange(hist, t + 1), 0) == ops::Unsqueeze(perm, 1);  // [T, T+1]
  Expr ge_user = ops::Sum(ops::Where(sel, ops::Unsqueeze(ge, 2), 0.0), {3});          // [K, 2, T]
  Expr shift = ops::Unsqueeze(ops::Arange(hist, t), 0) == rows + int64_t{1};          // [T, T]
  c.head = ge_user;
  c.tail = ops::Sum(ops::Where(shift, ops::Unsqueeze(ge_user, 2), 0.0), {3});
  Expr j = ops::Arange(hist, t);
  c.pair = j <= static_cast<double>(t - 2);
  c.last = j == static_cast<double>(t - 1);
  return c;
}

PerClass BinnedPerClass(Curve kind, const BinnedCounts& c, Expr hist) {
  Expr h = ops::Cast(hist, DType::kFloat64);
  Expr total = ops::Sum(h, {2});  // [K, 2]
  Expr n_neg = ops::Unsqueeze(ops::Select(total, 1, 0), 1);
  Expr n_pos = ops::Unsqueeze(ops::Select(total, 1, 1), 1);
  Expr fp0 = ops::Select(c.head, 1, 0), tp0 = ops::Select(c.head, 1, 1);
  Expr fp1 = ops::Select(c.tail, 1, 0), tp1 = ops::Select(c.tail, 1, 1);
  Expr tpr0 = ops::SafeDiv(tp0, n_pos), tpr1 = ops::SafeDiv(tp1, n_pos);
  PerClass out;
  out.support = ops::Select(total, 1, 1);
  if (kind == Curve::kAuroc) {
    Expr fpr0 = ops::SafeDiv(fp0, n_neg), fpr1 = ops::SafeDiv(fp1, n_neg);
    out.value = ops::Sum(ops::Where(c.pair, (fpr0 - fpr1) * (tpr0 + tpr1), 0.0), {1}) * 0.5;
  } else {
    // precision = tp / (tp + fp), 0 where nothing is predicted positive
    // (TorchMetrics 1.5's _safe_divide); recall[T] = 0 closes the curve.
    Expr precision = ops::SafeDiv(tp0, tp0 + fp0);
    out.value = ops::Sum(ops::Where(c.pair || c.last, (tpr0 - tpr1) * precision, 0.0), {1});
  }
  return out;
}

// Reduce is TorchMetrics' _reduce_auroc / _reduce_average_precision: NaN
// classes are left out of macro and weighted.
Expr Reduce(const PerClass& pc, const std::string& average) {
  if (average == "none" || average == "micro") return pc.value;
  Expr ok = !ops::IsNan(pc.value);
  Expr v = ops::Where(ok, pc.value, 0.0);
  if (average == "macro") return ops::Sum(v) / ops::Sum(ops::Cast(ok, DType::kFloat64));
  Expr w = ops::Where(ok, pc.support, 0.0);
  return ops::Sum(v * ops::SafeDiv(w, ops::Sum(w)));
}

absl::StatusOr<dsl::Metric> BuildCurveMetric(Task task, Curve kind, SpecArgs& args, const dsl::Signature& sig,
                                             const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(Args a, ReadArgs(task, args));
  MetricBuilder b(args.metric_name(), sig, device);
  ClassInputs in;
  if (!ReadInputs(task, a, b, in)) return b.status();
  const int64_t c = a.num;
  const bool micro = a.average == "micro";
  const int64_t k = micro ? 1 : c;
  std::vector<int64_t> row_shape = {c};
  row_shape.insert(row_shape.end(), in.extra.begin(), in.extra.end());
  PerClass pc;
  const std::string format = Exact16Format(a.thresholds, b.FindInput("preds")->dtype);
  // Row weights: counts become f64 sums of weights (binned and exact16); the
  // exact form keeps them beside the rows.
  Expr w = CurveWeights(b, /*flat=*/false, /*refused=*/false);
  if (!b.ok()) return b.status();
  const DType count_type = w.valid() ? DType::kFloat64 : DType::kInt64;
  if (!format.empty()) {
    // exact16: counts per (class, target, 16-bit score code).
    State counts = b.AddState("score_counts", count_type, {k, 2, kCodes16}, Reducer::kSum);
    b.Accumulate(counts, Exact16Counts(in.probs, in.label, k, format, w));
    if (!b.ok()) return b.status();
    pc = Exact16PerClass(kind, task, b.Read(counts), k);
  } else if (!a.thresholds.binned) {
    const std::vector<int64_t>& target_row = task == Task::kMulticlass ? in.extra : row_shape;
    ExactRows rows =
        AccumulateExactRows(b, in.probs, in.stored_target, task == Task::kMulticlass, row_shape, target_row, w);
    if (!b.ok()) return b.status();
    Expr scores = rows.scores;
    Expr y = rows.y;
    const int64_t rank = scores.rank();
    Expr label = y;
    if (task == Task::kMulticlass) {
      Expr y1 = ops::Unsqueeze(y, 1);
      label = ops::Where(y1 >= int64_t{0}, ops::Cast(y1 == ClassIndex(y, c, rank), DType::kInt64), int64_t{-1});
    }
    Expr cls = micro ? ops::FullLike(label, 0.0, DType::kInt64) : ClassIndex(y, c, rank);
    Expr weights = rows.weight.valid() ? PerElement(rows.weight, label) : Expr();
    pc = ExactPerClass(kind, task, b, scores, label, cls, k, weights);
  } else {
    SortedThresholds st = SortThresholds(a.thresholds);
    const int64_t t = st.sorted.size();
    Expr cls = ClassIndex(in.label, c, in.probs.rank());
    State hist = b.AddState("threshold_counts", count_type, {c, 2, t + 1}, Reducer::kSum);
    b.Accumulate(hist, BinnedHistogram(in.probs, in.label, cls, c, st, w));
    Expr hs = b.Read(hist);
    if (!b.ok()) return b.status();
    if (micro) hs = ops::Sum(hs, {0}, /*keepdim=*/true);
    pc = BinnedPerClass(kind, CountsFromHistogram(b, hs, k, st), hs);
  }
  if (!b.ok()) return b.status();
  Expr out = Reduce(pc, a.average);
  if (micro) out = ops::Select(out, 0, 0);
  // Exact form, a class (label) without any kept element: TorchMetrics'
  // _binary_clf_curve raises (IndexError) for the whole call; NaN here.
  if (pc.rows.valid()) out = ops::Where(ops::Any(pc.rows == 0.0), NAN, out);
  // exact16 counts are exact: its value stays float64.
  b.Output(format.empty() ? ops::Cast(out, DType::kFloat32) : out);
  return b.Finish();
}

}  // namespace

void RegisterPerClassCurveAreaMetrics(std::vector<MetricInfo>& out) {
  const std::vector<std::string> in = {"preds", "target", kWeightInput};
  out.push_back({"multiclass_auroc", "curves", in, Bound(BuildCurveMetric, ClassTask::kMulticlass, Curve::kAuroc)});
  out.push_back({"multiclass_average_precision", "curves", in,
                 Bound(BuildCurveMetric, ClassTask::kMulticlass, Curve::kAveragePrecision)});
  out.push_back({"multilabel_auroc", "curves", in, Bound(BuildCurveMetric, ClassTask::kMultilabel, Curve::kAuroc)});
  out.push_back({"multilabel_average_precision", "curves", in,
                 Bound(BuildCurveMetric, ClassTask::kMultilabel, Curve::kAveragePrecision)});
}

}  // namespace tally::metrics
