// Curves whose result is a tuple: binary_roc, multiclass_roc, multilabel_roc,
// binary_precision_recall_curve, multiclass_precision_recall_curve and
// multilabel_precision_recall_curve (TorchMetrics 1.5 functional names and
// arguments: thresholds, num_classes / num_labels, average (multiclass only:
// none, micro, macro), ignore_index, validate_args); and the equal error
// rate of the ROC curve, binary_eer, multiclass_eer and multilabel_eer
// (TorchMetrics 1.9, the same arguments): at the first point i minimizing
// |fpr - (1 - tpr)|, (fpr[i] + 1 - tpr[i]) / 2, in float32; one per class
// where the roc is a list of curves (multiclass average=none, multilabel);
// and the log-scaled partial AUC binary_logauc, multiclass_logauc and
// multilabel_logauc (TorchMetrics 1.9: fpr_range=(0.001, 0.1); multiclass
// and multilabel score every class's own ROC and average them, macro over
// the classes whose score is not NaN, or none): TorchMetrics'
// _binary_logauc_compute in float64 from the float32 curve (its range ends
// rounded to float32, as its tensor holds them): tpr interpolated at the
// range ends (utilities/data.py interp), the fprs and tprs with them sorted,
// the trapezoids of (log10 fpr, tpr) between the last points at the range
// ends, divided by the log10 width of the range; 0 for a curve of fewer
// than 2 points.
//
// Inputs as binary_auroc (curves.cc) and multiclass_/multilabel_auroc
// (curve_common.h ReadClassInputs) take them: float probabilities or logits,
// integer targets, extra dims flattened, ignore_index dropped, targets out of
// range counted by a deferred check and dropped.
//
// Results, as TorchMetrics returns them (tally eval prints them as nested
// lists, engine/dsl/metric.h labels their parts):
//   *_roc: (fpr, tpr, thresholds), thresholds descending;
//   *_precision_recall_curve: (precision, recall, thresholds), thresholds
//     ascending, with one more precision/recall point than thresholds.
// binary, and multiclass with average=micro or macro: three 1-D tensors.
// multiclass (average=none) and multilabel: exact, three lists of one tensor
// per class (their lengths differ); binned, fpr/tpr (precision/recall)
// [C, T] ([C, T+1]) and the thresholds [T].
//
// thresholds=None (exact): `cat` states of the probabilities and targets.
// Finalize is _binary_clf_curve per class: a stable descending argsort,
// cumulative positives (tps) and negatives (fps), one point at the last row
// of each run of tied scores. Those rows are picked with masked_select: the
// number of points depends on the data, so the finalize reads the host there
// (`tally inspect` marks it); updates stay sync-free.
//   roc: the point (0, 0) with threshold 1.0 first; fpr = fps / negatives
//     and tpr = tps / positives, all zeros without negatives / positives.
//   prc: precision = tps / (tps + fps), recall = tps / positives (NaN
//     without positives), both reversed, then precision 1 and recall 0
//     appended. Without positives TorchMetrics sets recall to 1 everywhere;
//     its multiclass form tests this on the class labels, so there a class
//     without positives gets recall 1 only when every kept target is class
//     0, and NaN otherwise.
//   a class (label) without any kept element: every value of the result
//     NaN (TorchMetrics raises an IndexError for the whole call).
//   multiclass macro: all classes' thresholds sorted (roc descending, prc
//     ascending), x = the sorted concatenation of every class's fpr
//     (precision), y = the mean over the classes of TorchMetrics' `interp`
//     of each class's curve at x. micro: one binary curve over every
//     (sample, class) element with one-hot targets.
//
// thresholds=int T or a list (binned): thresholds are torch.linspace(0, 1,
// T) (made by ATen's own kernel) or the list, float32, in the user's order.
// The state is the i64 histogram [K, 2, T+1] of (class, target, how many
// thresholds are <= the probability): constant memory, sync-free in update
// and finalize. A cumulative sum turns it into TorchMetrics' counts of
// preds >= threshold; then tpr = tp / (tp + fn), fpr = fp / (fp + tn),
// precision = tp / (tp + fp) and recall = tp / (tp + fn), 0 where 0/0. roc
// flips the curve and thresholds; prc appends precision 1 and recall 0.
//
// Values are float32 like TorchMetrics'; exact thresholds keep the
// probabilities' dtype, binned ones are float32.
#include <cmath>
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
using dsl::Parts;
using dsl::State;
using ir::DType;
using ir::Reducer;
using ops::Expr;

enum class Kind { kRoc, kPrc };

// What a metric makes of its curves: the curves themselves, their equal
// error rate, or their log-scaled partial AUC.
enum class Reduce { kCurve, kEer, kLogAuc };

struct Args {
  int64_t num = 1;  // num_classes or num_labels (binary: 1)
  std::string average = "none";
  // logauc: its own average over the per-class scores, and the range.
  std::string score_average = "macro";
  double range_lo = 0.001, range_hi = 0.1;
  Thresholds thresholds;
  std::optional<int64_t> ignore_index;
};

absl::StatusOr<Args> ReadArgs(Task task, Reduce reduce, SpecArgs& args) {
  Args a;
  if (task != Task::kBinary) {
    const char* num_name = task == Task::kMulticlass ? "num_classes" : "num_labels";
    TALLY_ASSIGN_OR_RETURN(a.num, args.GetInt(num_name));
    if (a.num < 2) return args.InvalidArgument(absl::StrCat(num_name, " must be an integer >= 2, got ", a.num));
  }
  if (reduce == Reduce::kLogAuc) {
    TALLY_ASSIGN_OR_RETURN(std::vector<double> range, args.GetDoubleList("fpr_range", std::vector<double>{0.001, 0.1}));
    if (range.size() != 2 || !(range[0] >= 0 && range[0] < range[1] && range[1] <= 1)) {
      return args.InvalidArgument("fpr_range must be two floats [low, high] with 0 <= low < high <= 1");
    }
    a.range_lo = range[0];
    a.range_hi = range[1];
    if (task != Task::kBinary) {
      TALLY_ASSIGN_OR_RETURN(a.score_average, args.GetEnum("average", {"macro", "none"}, "macro"));
    }
  } else if (task == Task::kMulticlass) {
    TALLY_ASSIGN_OR_RETURN(a.average, args.GetEnum("average", {"none", "micro", "macro"}, "none"));
  }
  TALLY_ASSIGN_OR_RETURN(a.thresholds, ReadThresholds(args, /*allow_exact16=*/true));
  TALLY_ASSIGN_OR_RETURN(a.ignore_index, args.GetOptionalInt("ignore_index"));
  // Accepted for compatibility: validation is always on, deferred to Compute.
  TALLY_RETURN_IF_ERROR(args.GetBool("validate_args", true).status());
  return a;
}

Expr MaskedSelect(Expr x, Expr mask, ops::Loc loc = ops::Loc::Current()) {
  if (!x.valid()) return x;
  return x.builder()->Op(ops::OpId::kMaskedSelect, {x, mask}, {}, loc);
}

Expr F32(Expr x) { return ops::Cast(x, DType::kFloat32); }

// Flip reverses a 1-D tensor of any length.
Expr Flip(Expr x) {
  Expr rank = ops::Cumsum(ops::FullLike(x, 1.0, DType::kInt64), 0);  // i + 1
  return ops::Take(x, ops::Size(x, 0) - rank);
}

// Curve is one curve's three tensors: (fpr, tpr, thresholds) or
// (precision, recall, thresholds).
struct Curve {
  Expr x, y, thresholds;
};

Curve ExactRoc(const ClfCurve& c) {
  Expr zero = ops::Full(c.tps, {1}, 0.0, c.tps.dtype());  // i64 counts, or f64 weight sums
  Expr fps = ops::Concat({zero, c.fps});
  Expr tps = ops::Concat({zero, c.tps});
  Curve out;
  out.thresholds = ops::Concat({ops::Full(c.thresholds, {1}, 1.0, c.thresholds.dtype()), c.thresholds});
  // Without negatives (positives) every fps (tps) is 0: the zeros
  // TorchMetrics returns.
  out.x = ops::SafeDiv(F32(fps), F32(c.n_neg));
  out.y = ops::SafeDiv(F32(tps), F32(c.n_pos));
  return out;
}

// ExactPrc: `recall_one` (bool scalar) is TorchMetrics' "no positive
// samples" test, which sets recall to 1 at every threshold.
Curve ExactPrc(const ClfCurve& c, Expr recall_one) {
  Expr tp = F32(c.tps), fp = F32(c.fps);
  Expr precision = tp / (tp + fp);
  Expr recall = ops::Where(recall_one, 1.0, tp / F32(c.n_pos));
  Curve out;
  out.x = ops::Concat({Flip(precision), ops::Full(precision, {1}, 1.0, DType::kFloat32)});
  out.y = ops::Concat({Flip(recall), ops::Full(recall, {1}, 0.0, DType::kFloat32)});
  out.thresholds = Flip(c.thresholds);
  return out;
}

Curve CurveOf(Kind kind, const ClfCurve& c, Expr recall_one) {
  if (kind == Kind::kRoc) return ExactRoc(c);
  return ExactPrc(c, recall_one.valid() ? recall_one : c.n_pos == int64_t{0});
}

Curve ExactCurve(Kind kind, Expr s, Expr label, Expr w, Expr recall_one = Expr()) {
  return CurveOf(kind, BinaryClfCurve(s, label, w), recall_one);
}

// Exact16ClfCurve is BinaryClfCurve from one class's exact16 counts
// [2, 65536] (target, score code): every code present is a point, the
// codes descending, its score decoded.
ClfCurve Exact16ClfCurve(Expr counts, const std::string& format) {
  Expr neg = ops::Select(counts, 0, 0), pos = ops::Select(counts, 0, 1);
  Expr pos_d = Flip(pos), neg_d = Flip(neg);
  Expr present = pos_d + neg_d > int64_t{0};
  ClfCurve c;
  c.n_pos = ops::Sum(pos);
  c.n_neg = ops::Sum(neg);
  c.tps = MaskedSelect(ops::Cumsum(pos_d, 0), present);
  c.fps = MaskedSelect(ops::Cumsum(neg_d, 0), present);
  c.thresholds = MaskedSelect(DecodeCode16(Flip(ops::Arange(counts, kCodes16)), format), present);
  return c;
}

// Interp is TorchMetrics' interp(x, xp, fp) (utilities/compute.py) with the
// same float32 operations: slopes m = (fp[i+1] - fp[i]) / (xp[i+1] - xp[i])
// (0 where 0/0) and intercepts b = fp[i] - m * xp[i]; every x takes the
// segment i = #(xp <= x) - 1, clamped to [0, len(m) - 1], and gives
// m[i] * x + b[i]. xp need not be sorted (precision is not): the count is
// the same over sorted xp.
Expr Interp(Expr x, Expr xp, Expr fp) {
  Expr next = ops::Cumsum(ops::FullLike(xp, 1.0, DType::kInt64), 0);  // i + 1 (the last clamps to itself)
  Expr m = ops::SafeDiv(ops::Take(fp, next) - fp, ops::Take(xp, next) - xp);
  Expr b = fp - m * xp;
  Expr count = ops::SearchSorted(ops::SortValues(xp, 0), x, /*right=*/true);
  Expr i = ops::Minimum(ops::Clamp(count - int64_t{1}, 0.0, std::nullopt), ops::Size(xp, 0) - int64_t{2});
  return ops::Take(m, i) * x + ops::Take(b, i);
}

// Macro averages per-class curves as TorchMetrics' multiclass compute does.
Curve Macro(Kind kind, const std::vector<Curve>& per_class, Expr x_all, Expr thresholds_all) {
  Curve out;
  out.thresholds = ops::SortValues(thresholds_all, 0, /*descending=*/kind == Kind::kRoc);
  out.x = ops::SortValues(x_all, 0);
  Expr sum;
  for (const Curve& c : per_class) {
    Expr v = Interp(out.x, c.x, c.y);
    sum = sum.valid() ? sum + v : v;
  }
  out.y = sum / static_cast<double>(per_class.size());
  return out;
}

// Poisoned sets every value of `c` to NaN where `empty` (a bool scalar):
// TorchMetrics' _binary_clf_curve raises (IndexError) on a class without
// any kept element, for the whole call.
Curve Poisoned(const Curve& c, Expr empty) {
  return Curve{ops::Where(empty, NAN, c.x), ops::Where(empty, NAN, c.y), ops::Where(empty, NAN, c.thresholds)};
}

Parts ToParts(const Curve& c) { return Parts{c.x, c.y, c.thresholds}; }

// Eer is the equal error rate of ROC curves along `dim` (TorchMetrics'
// _binary_eer_compute): at the first minimum of |fpr - (1 - tpr)|, picked
// with a mask (no gather, so that sliced finalizes batch it). x, y: [T]
// (dim 0) or [K, T] (dim 1, one rate per row). NaN curves give NaN.
Expr Eer(const Curve& roc, int64_t dim = 0) {
  Expr miss = 1.0 - roc.y;
  Expr gap = ops::Abs(roc.x - miss);
  Expr at = gap == ops::Min(gap, {dim}, /*keepdim=*/true);
  Expr first = at && ops::Cumsum(ops::Cast(at, DType::kInt64), dim) == 1.0;
  auto pick = [&](Expr v) { return ops::Sum(ops::Where(first, v, 0.0), {dim}); };
  return ops::Where(ops::IsNan(ops::Min(gap, {dim})), NAN, (pick(roc.x) + pick(miss)) / 2.0);
}

// LogAuc is TorchMetrics' _binary_logauc_compute of one 1-D ROC curve (see
// the top of this file).
Expr LogAuc(const Curve& roc, double range_lo, double range_hi) {
  Expr fpr = F64(roc.x), tpr = F64(roc.y);
  // The ends as float32 values (rounded when the tensor is made, the same
  // in every backend), compared as tensors.
  Expr ends = F64(ops::Dense(fpr, {range_lo, range_hi}, DType::kFloat32));
  Expr a = ops::Select(ends, 0, 0), b = ops::Select(ends, 0, 1);
  auto index = [](Expr v) { return ops::Cumsum(ops::FullLike(v, 1.0, DType::kInt64), 0) - int64_t{1}; };
  // interp(ends, fpr, tpr) over the curve sorted by fpr (a stable sort).
  Expr order = ops::Argsort(fpr, 0);
  Expr xp = ops::Take(fpr, order), fp = ops::Take(tpr, order);
  Expr next = index(xp) + int64_t{1};  // the last reads itself (take clamps); no index reaches it
  Expr slope = (ops::Take(fp, next) - fp) / (ops::Take(xp, next) - xp);
  Expr i = ops::Minimum(ops::Clamp(ops::SearchSorted(xp, ends) - int64_t{1}, 0.0, std::nullopt),
                        ops::Size(xp, 0) - int64_t{2});
  Expr at_ends = ops::Take(fp, i) + ops::Take(slope, i) * (ends - ops::Take(xp, i));
  Expr t = ops::SortValues(ops::Concat({tpr, at_ends}), 0);
  Expr f = ops::SortValues(ops::Concat({fpr, ends}), 0);
  Expr pos = index(f);
  Expr first = ops::Max(ops::Where(f == a, pos, -1.0)), last = ops::Max(ops::Where(f == b, pos, -1.0));
  Expr log_f = ops::Log(f) / std::log(10.0);
  Expr after = pos + int64_t{1};
  Expr trapezoid = (ops::Take(log_f, after) - log_f) * (ops::Take(t, after) + t) / 2.0;
  Expr area = ops::Sum(ops::Where(pos >= first && pos < last, trapezoid, 0.0));
  Expr value = area / ((ops::Log(b) - ops::Log(a)) / std::log(10.0));
  return ops::Where(ops::Size(fpr, 0) < int64_t{2}, 0.0, value);
}

// Emit outputs one curve: the tuple, its equal error rate or its logauc.
void Emit(MetricBuilder& b, Reduce reduce, const Args& a, const Curve& c) {
  if (reduce == Reduce::kEer) {
    b.Output(Eer(c));
  } else if (reduce == Reduce::kLogAuc) {
    b.Output(LogAuc(c, a.range_lo, a.range_hi));
  } else {
    b.Output(ToParts(c));
  }
}

Parts ListParts(const std::vector<Curve>& cs) {
  std::vector<Expr> x, y, t;
  for (const Curve& c : cs) {
    x.push_back(c.x);
    y.push_back(c.y);
    t.push_back(c.thresholds);
  }
  return Parts{Parts(x), Parts(y), Parts(t)};
}

// BinnedCurves turns the histogram state into per-class curves, [K, T]
// (roc, flipped) or [K, T+1] (prc), and the thresholds [T].
Curve BinnedCurves(Kind kind, Expr hist, int64_t k, const Thresholds& th, const SortedThresholds& st) {
  const int64_t t = th.size();
  // ge[k, y, j]: elements of class k and target y at or above the j-th
  // sorted threshold (those with more than j thresholds below them).
  Expr total = ops::Sum(hist, {2}, /*keepdim=*/true);
  Expr ge = AtOrAbove(hist, ops::Cumsum(hist, 2));
  // Read it in the user's order (reversed for roc).
  Expr base = ops::Reshape(ops::Arange(hist, k * 2), {k, 2, 1}) * static_cast<double>(t + 1);
  Expr position = PermIndex(hist, st, /*reversed=*/kind == Kind::kRoc);
  Expr at = ops::Take(ops::Flatten(ge), base + ops::Reshape(position, {1, 1, t}));
  Expr fp = F32(ops::Select(at, 1, 0)), tp = F32(ops::Select(at, 1, 1));              // [K, T]
  Expr n_neg = F32(ops::Select(total, 1, 0)), n_pos = F32(ops::Select(total, 1, 1));  // [K, 1]
  Expr fn = n_pos - tp, tn = n_neg - fp;
  Expr thresholds = ThresholdTensor(hist, th);
  Curve out;
  if (kind == Kind::kRoc) {
    out.x = ops::SafeDiv(fp, fp + tn);
    out.y = ops::SafeDiv(tp, tp + fn);
    Expr ar = ops::Arange(hist, t);
    out.thresholds = ops::Take(thresholds, static_cast<double>(t - 1) - ar);
    return out;
  }
  // Append along the threshold dim: TorchMetrics cats [T, K] with a row of
  // ones (zeros) and transposes.
  auto close = [&](Expr v, double last) {
    Expr rows = ops::Transpose(v, 0, 1);
    return ops::Transpose(ops::Concat({rows, ops::Full(rows, {1, k}, last, DType::kFloat32)}), 0, 1);
  };
  out.x = close(ops::SafeDiv(tp, tp + fp), 1.0);
  out.y = close(ops::SafeDiv(tp, tp + fn), 0.0);
  out.thresholds = thresholds;
  return out;
}

// OutputPerClass outputs exact per-class curves: their macro average, or
// the list of them; `empty` (a class without kept elements) poisons them.
void OutputPerClass(MetricBuilder& b, Kind kind, Reduce reduce, const Args& a, std::vector<Curve> per_class,
                    Expr empty) {
  const std::string& average = a.average;
  if (reduce == Reduce::kLogAuc) {
    // Every class's own score; macro over those that are not NaN.
    std::vector<Expr> scores;
    for (const Curve& pc : per_class)
      scores.push_back(ops::Reshape(LogAuc(Poisoned(pc, empty), a.range_lo, a.range_hi), {1}));
    Expr all = ops::Concat(scores);
    if (a.score_average == "none") {
      b.Output(all);
    } else {
      Expr defined = !ops::IsNan(all);
      b.Output(ops::Sum(ops::Where(defined, all, 0.0)) / ops::Sum(F64(defined)));
    }
    return;
  }
  if (average == "macro") {
    std::vector<Expr> xs, ts;
    for (const Curve& pc : per_class) {
      xs.push_back(pc.x);
      ts.push_back(pc.thresholds);
    }
    Emit(b, reduce, a, Poisoned(Macro(kind, per_class, ops::Concat(xs), ops::Concat(ts)), empty));
    return;
  }
  for (Curve& pc : per_class) pc = Poisoned(pc, empty);
  if (reduce == Reduce::kEer) {
    std::vector<Expr> rates;
    for (const Curve& pc : per_class) rates.push_back(ops::Reshape(Eer(pc), {1}));
    b.Output(ops::Concat(rates));
    return;
  }
  b.Output(ListParts(per_class));
}

// Row returns class `c` of a binned curve (1-D).
Curve Row(const Curve& curves, int64_t c) {
  return Curve{ops::Select(curves.x, 0, c), ops::Select(curves.y, 0, c), curves.thresholds};
}

absl::StatusOr<dsl::Metric> BuildCurve(Task task, Kind kind, Reduce reduce, SpecArgs& args, const dsl::Signature& sig,
                                       const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(Args a, ReadArgs(task, reduce, args));
  if (kind == Kind::kRoc && a.average == "macro" && a.thresholds.binned && a.thresholds.size() < 2) {
    // Each class's binned ROC is one point, and TorchMetrics' interp over
    // one point indexes an empty slope vector (IndexError).
    return args.InvalidArgument("average=macro needs at least 2 thresholds");
  }
  MetricBuilder b(args.metric_name(), sig, device);
  // The update's probabilities and labels: binary [M]; else (N, C, ...).
  ClassInputs in;
  std::optional<ClassTask> ct;
  if (task != Task::kBinary) ct = task == Task::kMulticlass ? ClassTask::kMulticlass : ClassTask::kMultilabel;
  if (!ReadCurveInputs(ct, a.num, a.ignore_index, b, in)) return b.status();
  Expr probs = in.probs, label = in.label, stored_target = in.stored_target;
  std::vector<int64_t> extra = in.extra;
  const int64_t c = a.num;
  const bool one_curve = task == Task::kBinary || a.average == "micro";
  const int64_t k = one_curve ? 1 : c;

  const std::string format = Exact16Format(a.thresholds, b.FindInput("preds")->dtype);
  // Row weights: counts become f64 sums of weights (binned and exact16); the
  // exact form keeps them beside the rows.
  Expr w = CurveWeights(b, /*flat=*/task == Task::kBinary, /*refused=*/false);
  if (!b.ok()) return b.status();
  const DType count_type = w.valid() ? DType::kFloat64 : DType::kInt64;
  if (!format.empty()) {
    // exact16: counts per (class, target, score code); each class's curve
    // has a point per code present (curve_common.h).
    State counts_state = b.AddState("score_counts", count_type, {k, 2, kCodes16}, Reducer::kSum);
    b.Accumulate(counts_state, Exact16Counts(probs, label, k, format, w));
    if (!b.ok()) return b.status();
    Expr counts = b.Read(counts_state);
    Expr kept = ops::Sum(counts, {1, 2});  // [K]
    if (one_curve) {
      Curve curve = CurveOf(kind, Exact16ClfCurve(ops::Select(counts, 0, 0), format), Expr());
      Emit(b, reduce, a, Poisoned(curve, ops::Select(kept, 0, 0) == int64_t{0}));
      return b.Finish();
    }
    Expr empty = ops::Any(kept == int64_t{0});
    // Multiclass: every kept target is class 0 (TorchMetrics' "no positives" test).
    Expr all_class0;
    if (task == Task::kMulticlass) {
      Expr positives = ops::Select(ops::Sum(counts, {2}), 1, 1);  // [C]
      all_class0 = ops::Sum(positives) == ops::Select(positives, 0, 0);
    }
    std::vector<Curve> per_class;
    for (int64_t i = 0; i < c; ++i) {
      per_class.push_back(CurveOf(kind, Exact16ClfCurve(ops::Select(counts, 0, i), format), all_class0));
    }
    OutputPerClass(b, kind, reduce, a, std::move(per_class), empty);
    return b.Finish();
  }

  if (!a.thresholds.binned) {
    std::vector<int64_t> row;
    if (task != Task::kBinary) row.push_back(c);
    for (int64_t d : extra) row.push_back(d);
    const std::vector<int64_t>& target_row = task == Task::kMulticlass ? extra : row;
    ExactRows rows = AccumulateExactRows(b, probs, stored_target, task == Task::kMulticlass, row, target_row, w);
    if (!b.ok()) return b.status();
    Expr scores = rows.scores;
    Expr y = rows.y;
    if (task == Task::kBinary) {
      Emit(b, reduce, a,
           Poisoned(ExactCurve(kind, scores, y, rows.weight),
                    ops::Sum(ops::Cast(y >= int64_t{0}, DType::kInt64)) == int64_t{0}));
      return b.Finish();
    }
    Expr labels = y;  // (R, C, ...): 1, 0, -1 per element
    if (task == Task::kMulticlass) {
      Expr y1 = ops::Unsqueeze(y, 1);
      labels =
          ops::Where(y1 >= int64_t{0}, ops::Cast(y1 == ClassIndex(y, c, scores.rank()), DType::kInt64), int64_t{-1});
    }
    Expr kept = ops::Cast(labels >= int64_t{0}, DType::kInt64);
    // Each element weighs its row's weight.
    Expr weights = rows.weight.valid() ? PerElement(rows.weight, labels) : Expr();
    auto flat = [](Expr x) { return x.valid() ? ops::Flatten(x) : x; };
    if (one_curve) {
      Expr empty = ops::Sum(kept) == int64_t{0};
      Emit(b, reduce, a, Poisoned(ExactCurve(kind, ops::Flatten(scores), ops::Flatten(labels), flat(weights)), empty));
      return b.Finish();
    }
    std::vector<int64_t> other_dims = {0};
    for (int64_t d = 2; d < labels.rank(); ++d) other_dims.push_back(d);
    Expr empty = ops::Any(ops::Sum(kept, other_dims) == int64_t{0});
    // TorchMetrics' multiclass "no positives" test looks at the class
    // labels: every kept target is class 0.
    Expr all_class0;
    if (task == Task::kMulticlass) all_class0 = ops::Sum(ops::Cast(y > int64_t{0}, DType::kInt64)) == int64_t{0};
    std::vector<Curve> per_class;
    for (int64_t i = 0; i < c; ++i) {
      Expr wi = weights.valid() ? ops::Flatten(ops::Select(weights, 1, i)) : Expr();
      per_class.push_back(ExactCurve(kind, ops::Flatten(ops::Select(scores, 1, i)),
                                     ops::Flatten(ops::Select(labels, 1, i)), wi, all_class0));
    }
    OutputPerClass(b, kind, reduce, a, std::move(per_class), empty);
    return b.Finish();
  }

  SortedThresholds st = SortThresholds(a.thresholds);
  Expr cls = one_curve ? ops::FullLike(label, 0.0, DType::kInt64) : ClassIndex(label, c, probs.rank());
  State hist = b.AddState("threshold_counts", count_type, {k, 2, st.sorted.size() + 1}, Reducer::kSum);
  b.Accumulate(hist, BinnedHistogram(probs, label, cls, k, st, w));
  Expr counts = b.Read(hist);
  if (!b.ok()) return b.status();
  Curve curves = BinnedCurves(kind, counts, k, a.thresholds, st);
  if (one_curve) {
    Emit(b, reduce, a, Row(curves, 0));
  } else if (a.average == "macro") {
    // TorchMetrics repeats the thresholds once per class.
    Expr repeated =
        ops::Flatten(ops::Unsqueeze(curves.thresholds, 0) + ops::Full(counts, {c, 1}, 0.0, DType::kFloat32));
    std::vector<Curve> per_class;
    for (int64_t i = 0; i < c; ++i) per_class.push_back(Row(curves, i));
    Emit(b, reduce, a, Macro(kind, per_class, ops::Flatten(curves.x), repeated));
  } else if (reduce == Reduce::kLogAuc) {
    std::vector<Curve> per_class;
    for (int64_t i = 0; i < c; ++i) per_class.push_back(Row(curves, i));
    OutputPerClass(b, kind, reduce, a, std::move(per_class), ops::Scalar(counts, 0.0) != 0.0);
  } else if (reduce == Reduce::kEer) {
    b.Output(Eer(curves, 1));
  } else {
    b.Output(ToParts(curves));
  }
  return b.Finish();
}

}  // namespace

void RegisterRocAndPrCurveMetrics(std::vector<MetricInfo>& out) {
  const std::vector<std::string> in = {"preds", "target", kWeightInput};
  for (Task task : {Task::kBinary, Task::kMulticlass, Task::kMultilabel}) {
    const std::string prefix = task == Task::kBinary       ? "binary_"
                               : task == Task::kMulticlass ? "multiclass_"
                                                           : "multilabel_";
    out.push_back({prefix + "roc", "curves", in, Bound(BuildCurve, task, Kind::kRoc, Reduce::kCurve)});
    out.push_back(
        {prefix + "precision_recall_curve", "curves", in, Bound(BuildCurve, task, Kind::kPrc, Reduce::kCurve)});
    out.push_back({prefix + "eer", "curves", in, Bound(BuildCurve, task, Kind::kRoc, Reduce::kEer)});
    out.push_back({prefix + "logauc", "curves", in, Bound(BuildCurve, task, Kind::kRoc, Reduce::kLogAuc)});
  }
}

}  // namespace tally::metrics
