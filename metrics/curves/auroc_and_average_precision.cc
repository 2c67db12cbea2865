// Threshold-free binary classification metrics: binary_auroc and
// binary_average_precision (TorchMetrics 1.5 functional names and arguments:
// thresholds, ignore_index, validate_args; binary_auroc also max_fpr).
//
// Input: float `preds` (probabilities, or logits: any kept element outside
// [0, 1] sigmoids the batch) and integer/bool `target` in {0, 1}, same shape
// (N, ...), flattened. Elements whose target is `ignore_index` are dropped;
// target values outside {0, 1} are counted by a deferred check and dropped.
//
// thresholds=None (exact): `cat` states of the (sigmoided) preds and of
// whether each element is positive (one byte; a dropped element is stored
// as preds -1: curve_common.h). Finalize is binary_rank_stats: one radix
// sort of the rows and one scan of their tie groups, so ties behave exactly
// as in TorchMetrics/sklearn (a tied positive/negative pair counts one half
// in AUROC; a tie group enters the precision-recall curve as one point). A
// NaN score counts as +inf (above every probability, NaNs tied), so the
// value stays in [0, 1]. No positives or no negatives give
// AUROC 0; no positives give AP 0 (TorchMetrics sets recall to 1 there). No
// kept element at all gives NaN (TorchMetrics raises an IndexError).
//
// thresholds=int T or a list (binned): thresholds are torch.linspace(0, 1, T)
// in float32 (or the list, as float32) and an element is predicted positive
// at threshold t when preds >= t; the state is the i64[1, 2, T+1] histogram
// of (target, thresholds below the probability) of curve_common.h, O(T) in
// memory and finalize, sync-free in update and finalize. AUROC is the trapezoidal area under the binned ROC, AP is
// sum_t (recall[t] - recall[t+1]) * precision[t] with recall[T] = 0 and
// precision = 1 where nothing is predicted positive.
//
// thresholds=exact16 (or float16/bfloat16 preds with thresholds=None): the
// state is the i64[1, 2, 65536] count of rows per (target, 16-bit score
// code) — exact for scores of 16 significant bits, constant in the rows,
// one sum to merge or sync (curve_common.h). exact_fp16 / exact_bf16 name
// the format; exact16 takes the preds' own (float16 for float32 preds,
// which are rounded to it).
//
// max_fpr in (0, 1) (binary_auroc): the standardized partial AUC of
// TorchMetrics' _binary_auroc_compute (= sklearn's roc_auc_score(max_fpr)):
// the area under the ROC for fpr <= max_fpr, the curve cut at max_fpr by
// linear interpolation, McClish-corrected to 0.5 * (1 + (A - m^2/2) /
// (m - m^2/2)). No positives or no negatives give the plain AUROC (0).
// Exact form: the ROC is linear within each tie group, so finalize
// integrates it negative by negative: the i-th negative in score order (a
// cumsum numbers the sorted negatives) covers fpr in [k/n_neg, (k+1)/n_neg],
// where its tie group's segment is linear, and contributes the part of that
// trapezoid left of max_fpr. Sorts, searchsorted and cumsum only: no host
// sync, no data-dependent shape. Binned form: the binned ROC's segments
// wholly left of max_fpr plus the one max_fpr cuts, from the fixed [T]
// vectors (sync-free). TorchMetrics' bucketize quirks carry over: when every
// binned fpr exceeds max_fpr its partial area is 0; when none does it
// raises an IndexError, and Tally gives NaN. A thresholds list must then be
// ascending (the binned ROC is monotone only for sorted thresholds).
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
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

enum class Curve { kAuroc, kAveragePrecision };

// Adjacent pairs of a fixed [T] vector, x[:-1] and x[1:], as two gathers
// (O(T); the IR has no slicing).
void Pairs(Expr x, int64_t n, Expr* head, Expr* tail) {
  Expr i = ops::Arange(x, n - 1);
  *head = ops::Take(x, i);
  *tail = ops::Take(x, i + int64_t{1});
}

// McClish is the standardized partial AUC of area `pauc` under fpr <= m.
Expr McClish(Expr pauc, double m) {
  const double min_area = 0.5 * m * m;
  return ((pauc - min_area) / (m - min_area) + 1.0) * 0.5;
}

// ExactPartialAuc is the McClish-corrected area under the exact ROC left of
// fpr = m (see the top of the file); `neg_sorted` and `pos_sorted` are the
// ascending negative and positive scores, padded at the end with 2.0.
Expr ExactPartialAuc(Expr neg_sorted, Expr pos_sorted, Expr n_pos, Expr n_neg, double m) {
  auto f64 = [](Expr x) { return ops::Cast(x, DType::kFloat64); };
  Expr i = f64(ops::Cumsum(ops::FullLike(neg_sorted, 1.0, DType::kInt64), 0)) - 1.0;
  Expr first = f64(ops::SearchSorted(neg_sorted, neg_sorted));
  Expr past = f64(ops::SearchSorted(neg_sorted, neg_sorted, /*right=*/true));
  Expr pos_le = f64(ops::SearchSorted(pos_sorted, neg_sorted, /*right=*/true));
  Expr pos_tied = pos_le - f64(ops::SearchSorted(pos_sorted, neg_sorted));
  // The i-th negative is the j-th of its tie group's a negatives; the group's
  // segment rises by pos_tied positives over a negatives.
  Expr a = past - first;
  Expr j = past - 1.0 - i;
  Expr above = n_pos - pos_le;  // positives scored above the group
  Expr tpr0 = (above + ops::SafeDiv(pos_tied * j, a)) / n_pos;
  Expr tpr1 = (above + ops::SafeDiv(pos_tied * (j + 1.0), a)) / n_pos;
  // Its fpr interval starts at k / n_neg (k negatives score higher).
  Expr k = n_neg - 1.0 - i;
  Expr width = ops::Minimum(ops::Clamp(m - k / n_neg, 0.0, std::nullopt), 1.0 / n_neg);
  Expr area = width * (tpr0 + (tpr1 - tpr0) * (width * n_neg) * 0.5);
  Expr pauc = ops::Sum(ops::Where(i < n_neg, area, 0.0));
  return ops::Where(n_pos * n_neg == 0.0, 0.0, McClish(pauc, m));
}

// BinnedPartialAuc is the McClish-corrected area under the binned ROC left
// of fpr = m; fpr and tpr are [T] over ascending thresholds (so descending
// along the curve), `auc` the whole area.
Expr BinnedPartialAuc(Expr fpr, Expr tpr, int64_t n, Expr auc, double m) {
  Expr f0, f1, t0, t1;  // a segment from (f1, t1) up to (f0, t0)
  Pairs(fpr, n, &f0, &f1);
  Pairs(tpr, n, &t0, &t1);
  Expr whole = f0 <= m;
  Expr cut = f1 <= m && f0 > m;
  Expr at_m = t1 + ops::SafeDiv(m - f1, f0 - f1) * (t0 - t1);
  Expr pauc = ops::Sum(ops::Where(whole, (f0 - f1) * (t0 + t1) * 0.5, 0.0) +
                       ops::Where(cut, (m - f1) * (t1 + at_m) * 0.5, 0.0));
  // Every fpr <= m: TorchMetrics indexes past the curve's end.
  Expr corrected = ops::Where(ops::Max(fpr) <= m, NAN, McClish(pauc, m));
  return ops::Where(ops::Sum(fpr) == 0.0 || ops::Sum(tpr) == 0.0, auc, corrected);
}

// WeightedExactValue is scikit-learn's roc_auc_score / average_precision_score
// with sample_weight over the kept rows of `s` (labels `y`: 1, 0, -1
// dropped) weighted by `w`: over the weighted curve's points (one per
// distinct score), the ROC's trapezoids or AP's steps (recall gained times
// precision there).
Expr WeightedExactValue(Curve kind, Expr s, Expr y, Expr w) {
  ClfCurve c = BinaryClfCurve(s, y, w);
  Expr tp = c.tps, fp = c.fps;
  // Each point's predecessor, (0, 0) before the first.
  Expr i = ops::Cumsum(ops::FullLike(tp, 1.0, DType::kInt64), 0) - int64_t{1};
  Expr zero = ops::Full(tp, {1}, 0.0, DType::kFloat64);
  Expr tp_prev = ops::Take(ops::Concat({zero, tp}), i), fp_prev = ops::Take(ops::Concat({zero, fp}), i);
  if (kind == Curve::kAuroc) {
    return ops::SafeDiv(ops::Sum((fp - fp_prev) * (tp + tp_prev)) * 0.5, c.n_pos * c.n_neg);
  }
  return ops::SafeDiv(ops::Sum((tp - tp_prev) * ops::SafeDiv(tp, tp + fp)), c.n_pos);
}

absl::StatusOr<dsl::Metric> BuildBinaryCurveMetric(Curve kind, SpecArgs& args, const dsl::Signature& sig,
                                                   const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(Thresholds th, ReadThresholds(args, /*allow_exact16=*/true));
  TALLY_ASSIGN_OR_RETURN(std::optional<int64_t> ignore_index, args.GetOptionalInt("ignore_index"));
  // The partial-AUC bound; 0 is the whole curve (a plain double: GCC 12 sees
  // an optional's payload as maybe-uninitialized here).
  double max_fpr = 0;
  if (kind == Curve::kAuroc) {
    TALLY_ASSIGN_OR_RETURN(std::optional<double> bound, args.GetOptionalDouble("max_fpr"));
    if (bound && !(*bound > 0 && *bound <= 1)) {
      return args.InvalidArgument(absl::StrCat("max_fpr must be a float in (0, 1], got ", *bound));
    }
    if (bound && *bound < 1.0) max_fpr = *bound;  // 1.0 is the whole curve
  }
  TALLY_RETURN_IF_ERROR(RequireAscending(args, th));
  // Accepted for compatibility: validation is always on, deferred to Compute.
  TALLY_RETURN_IF_ERROR(args.GetBool("validate_args", true).status());
  MetricBuilder b(args.metric_name(), sig, device);
  BinaryInputs in;
  if (!ReadBinaryInputs(ignore_index, /*cast_f32=*/true, b, in)) return b.status();
  Expr probs = in.probs, t = in.target, valid = in.valid;

  // exact16: counts per 16-bit score code (curve_common.h), exact for 16-bit
  // scores in constant memory; chosen by thresholds=exact16 or by float16 /
  // bfloat16 preds (the partial AUC keeps the cat form).
  const std::string format = Exact16Format(th, b.FindInput("preds")->dtype);
  if (!format.empty() && max_fpr > 0 && !th.exact16.empty()) {
    return args.InvalidArgument("max_fpr is not implemented for thresholds=exact16; use thresholds=None");
  }
  // Row weights (metrics/weights.h): summed in the binned and exact16
  // histograms, kept beside the rows in the exact form; the exact partial
  // AUC refuses them.
  Expr w = CurveWeights(b, /*flat=*/true, /*refused=*/!th.binned && max_fpr > 0);
  if (!b.ok()) return b.status();
  if (!format.empty() && max_fpr == 0) {
    Expr label = ops::Where(valid, t, int64_t{-1});
    State counts =
        b.AddState("score_counts", w.valid() ? DType::kFloat64 : DType::kInt64, {1, 2, kCodes16}, Reducer::kSum);
    b.Accumulate(counts, Exact16Counts(probs, label, 1, format, w));
    if (!b.ok()) return b.status();
    Exact16Stats st = Exact16StatsOf(b.Read(counts));
    Expr n_pos = ops::Select(st.n_pos, 0, 0), n_neg = ops::Select(st.n_neg, 0, 0);
    Expr value = kind == Curve::kAuroc ? ops::SafeDiv(ops::Select(st.u, 0, 0), n_pos * n_neg)
                                       : ops::SafeDiv(ops::Select(st.precision_sum, 0, 0), n_pos);
    // From exact integer counts: the value stays float64.
    b.Output(ops::Where(n_pos + n_neg == 0.0, NAN, value));
    return b.Finish();
  }

  if (!th.binned) {
    ExactRows rows = AccumulateExactRows(b, probs, ops::Where(valid, t, int64_t{-1}), /*multiclass=*/false, {}, {}, w);
    if (!b.ok()) return b.status();
    Expr s = rows.scores;
    Expr y = rows.y;
    if (w.valid()) {
      Expr value = WeightedExactValue(kind, s, y, rows.weight);
      if (!b.ok()) return b.status();
      // No kept element: NaN, as unweighted (TorchMetrics raises).
      Expr any = ops::Sum(ops::Cast(y >= int64_t{0}, DType::kInt64)) > int64_t{0};
      b.Output(ops::Cast(ops::Where(any, value, NAN), DType::kFloat32));
      return b.Finish();
    }
    // One radix sort and one scan of the tie groups (binary_rank_stats; a
    // collection of both metrics runs it once).
    std::vector<Expr> st = b.OpN(ops::OpId::kBinaryRankStats, {s, rows.positive}, {});
    if (st.size() != 4) return b.status();
    Expr n_pos = ops::Cast(st[0], DType::kFloat64);
    Expr n_neg = ops::Cast(st[1], DType::kFloat64);
    if (kind == Curve::kAuroc) {
      Expr auc;
      if (max_fpr > 0) {
        // Dropped rows sort above every probability (2 > 1) and are never counted.
        Expr pos_sorted = ops::SortValues(ops::Where(y == int64_t{1}, s, 2.0), 0);
        Expr neg_sorted = ops::SortValues(ops::Where(y == int64_t{0}, s, 2.0), 0);
        auc = ExactPartialAuc(neg_sorted, pos_sorted, n_pos, n_neg, max_fpr);
      } else {
        auc = ops::SafeDiv(st[2], n_pos * n_neg);
      }
      // No kept element: TorchMetrics' _binary_clf_curve raises (IndexError).
      b.Output(ops::Cast(ops::Where(n_pos + n_neg == 0.0, NAN, auc), DType::kFloat32));
    } else {
      // No positives: 0, as TorchMetrics (recall 1 everywhere) and sklearn.
      // No kept element: TorchMetrics' _binary_clf_curve raises (IndexError).
      Expr ap = ops::Where(n_pos + n_neg == 0.0, NAN, ops::SafeDiv(st[3], n_pos));
      b.Output(ops::Cast(ap, DType::kFloat32));
    }
    return b.Finish();
  }

  // Binned: the histogram of how many (sorted) thresholds lie below each
  // probability, per target (curve_common.h): O(N log T) per update and
  // O(T) memory, the same state as the binned operating points (so a
  // collection of both keeps one). Finalize reads the counts at every
  // threshold in the user's order.
  const int64_t n = th.size();
  SortedThresholds st = SortThresholds(th);
  Expr label = ops::Where(valid, t, int64_t{-1});
  State hist =
      b.AddState("threshold_counts", w.valid() ? DType::kFloat64 : DType::kInt64, {1, 2, n + 1}, Reducer::kSum);
  b.Accumulate(hist, BinnedHistogram(probs, label, ops::FullLike(label, 0.0, DType::kInt64), 1, st, w));
  Expr h = b.Read(hist);
  Expr total = ops::Sum(h, {2}, /*keepdim=*/true);
  Expr ge = ops::Flatten(AtOrAbove(h, ops::Cumsum(h, 2)));  // [2 (T+1)]: at or above sorted threshold j
  Expr at = PermIndex(h, st);
  Expr fp = ops::Cast(ops::Take(ge, at), DType::kFloat64);
  Expr tp = ops::Cast(ops::Take(ge, at + static_cast<double>(n + 1)), DType::kFloat64);
  Expr n_neg = ops::Cast(ops::Select(ops::Flatten(total), 0, 0), DType::kFloat64);
  Expr n_pos = ops::Cast(ops::Select(ops::Flatten(total), 0, 1), DType::kFloat64);
  Expr tn = n_neg - fp;
  Expr fn = n_pos - tp;
  Expr tpr = ops::SafeDiv(tp, tp + fn);
  Expr head, tail;
  if (kind == Curve::kAuroc) {
    Expr fpr = ops::SafeDiv(fp, fp + tn);
    Expr f0, f1, t0, t1;
    Pairs(fpr, n, &f0, &f1);
    Pairs(tpr, n, &t0, &t1);
    Expr auc = ops::Sum((f0 - f1) * (t0 + t1)) * 0.5;
    if (max_fpr > 0) auc = BinnedPartialAuc(fpr, tpr, n, auc, max_fpr);
    b.Output(ops::Cast(auc, DType::kFloat32));
  } else {
    Expr precision = ops::SafeDiv(tp, tp + fp, 1.0);
    // recall[T] = 0 closes the curve: the last threshold's term is recall * precision.
    Expr r0, r1;
    Pairs(tpr, n, &r0, &r1);
    Expr p_last = ops::Select(precision, 0, n - 1);
    Expr r_last = ops::Select(tpr, 0, n - 1);
    Expr p0, p1;
    Pairs(precision, n, &p0, &p1);
    b.Output(ops::Cast(ops::Sum((r0 - r1) * p0) + r_last * p_last, DType::kFloat32));
  }
  return b.Finish();
}

absl::StatusOr<dsl::Metric> BuildBinaryAuroc(SpecArgs& a, const dsl::Signature& s, const ir::Device& d) {
  return BuildBinaryCurveMetric(Curve::kAuroc, a, s, d);
}
absl::StatusOr<dsl::Metric> BuildBinaryAveragePrecision(SpecArgs& a, const dsl::Signature& s, const ir::Device& d) {
  return BuildBinaryCurveMetric(Curve::kAveragePrecision, a, s, d);
}

}  // namespace

void RegisterCurveMetrics(std::vector<MetricInfo>& out) {
  out.push_back({"binary_auroc", "curves", {"preds", "target", kWeightInput}, BuildBinaryAuroc});
  out.push_back({"binary_average_precision", "curves", {"preds", "target", kWeightInput}, BuildBinaryAveragePrecision});
}

}  // namespace tally::metrics
