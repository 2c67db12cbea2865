// Helpers shared by the threshold-based curve metrics (binary_*,
// multiclass_* and multilabel_* auroc / average_precision, and the curves
// themselves): TorchMetrics' `thresholds` argument and its tensor, and the
// multiclass/multilabel input forms.
//
// thresholds=None is the exact form (cat states); an int T >= 2 is
// torch.linspace(0, 1, T) in float32; a list holds floats in [0, 1] used as
// given (as a float32 tensor, in the user's order).
#ifndef TALLY_METRICS_CURVES_COMMON_H_
#define TALLY_METRICS_CURVES_COMMON_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/dsl/builder.h"
#include "metrics/spec.h"

namespace tally::metrics {

// Thresholds is the binned form's threshold list (empty for the exact form).
struct Thresholds {
  bool binned = false;
  // exact16: "auto" (thresholds="exact16": the 16-bit format of the preds,
  // float16 for float32/float64 preds), "fp16" or "bf16"
  // (thresholds="exact_fp16" / "exact_bf16"); empty otherwise.
  std::string exact16;
  int64_t count = 0;           // linspace(0, 1, count) when `values` is empty
  std::vector<double> values;  // an explicit list
  int64_t size() const { return values.empty() ? count : static_cast<int64_t>(values.size()); }
};

// Exact16Mode is Thresholds::exact16 for the words exact16, exact_fp16 and
// exact_bf16 ("auto", "fp16", "bf16"); "" for any other word.
std::string Exact16Mode(absl::string_view word);

// ReadThresholds reads `thresholds` (none, an int >= 2, a non-empty list
// of numbers in [0, 1], or with `allow_exact16` the names exact16,
// exact_fp16, exact_bf16); bad values are InvalidArgument naming the metric.
absl::StatusOr<Thresholds> ReadThresholds(SpecArgs& args, bool allow_exact16 = false);

// Exact16Format is the 16-bit format ("fp16" or "bf16") an exact AUROC/AP
// counts scores in, or "" for the cat-state form: what `t.exact16` asks for,
// and with thresholds=None the preds' own format when they are float16 or
// bfloat16 (so 16-bit scores get the bounded-memory form by default).
std::string Exact16Format(const Thresholds& t, ir::DType preds_dtype);

// kCodes16 is the number of 16-bit score codes (ops: score_code16).
inline constexpr int64_t kCodes16 = 65536;

// Exact16Histogram is one batch's counts [K, 2, 65536] of (class, target,
// score code) — the exact16 state: constant in the rows, merged by a sum —
// as one code16_counts node. `probs` and `label` (1, 0, -1 dropped) share a
// shape; K = 1 counts every element as class 0, else dim 1 is the class.
ops::Expr Exact16Histogram(ops::Expr probs, ops::Expr label, int64_t k, const std::string& format);

// Exact16Counts is Exact16Histogram, or with row weights `w` (valid; f64
// [N] for the rows of dim 0) the same histogram summing the weights in
// float64: score_code16 and a weighted histogram (the fused code16_counts
// counts only). With weights and K > 1, dim 1 is the class.
ops::Expr Exact16Counts(ops::Expr probs, ops::Expr label, int64_t k, const std::string& format, ops::Expr w);

// CurveWeights reads the optional `weight` input for the curves: one per
// element of the flattened binary inputs (`flat`), else one per row of
// (N, C, ...); invalid without it. `refused` (the partial AUC, which has no
// weighted form) fails a weight naming the input.
ops::Expr CurveWeights(dsl::MetricBuilder& b, bool flat, bool refused);

// DecodeCode16 is the float32 score a 16-bit code (i64, ordered as
// score_code16 orders them) stands for: the inverse of score_code16 on the
// format's values (65535 decodes to NaN).
ops::Expr DecodeCode16(ops::Expr codes, const std::string& format);

// Exact16Stats reads the exact AUROC/AP statistics per class off the
// exact16 counts [K, 2, 65536] (the codes order as the scores; a code is
// one tie group), f64 [K] each: positives, negatives, the Mann-Whitney U
// (AUROC = u / (n_pos n_neg)) and the sum over positives of the precision
// at their score (AP = precision_sum / n_pos), as binary_rank_stats gives
// them for the same scores.
struct Exact16Stats {
  ops::Expr n_pos, n_neg, u, precision_sum;
};
Exact16Stats Exact16StatsOf(ops::Expr counts);

// RequireAscending refuses an unsorted thresholds list for an area under a
// binned curve (auroc, average_precision): integrated in the list's order,
// as TorchMetrics does, it can come out negative. The curves themselves and
// their operating points take a list in any order.
absl::Status RequireAscending(SpecArgs& args, const Thresholds& t);

// ThresholdTensor builds the f32 thresholds [T] in the graph of `like`:
// torch.linspace(0, 1, T) (the linspace op: ATen's kernel, bit for bit) or
// the list.
ops::Expr ThresholdTensor(ops::Expr like, const Thresholds& t);

// SortedThresholds is the ascending order of the f32 thresholds; `perm`
// maps the user's order to positions in it (identity for linspace and
// ascending lists).
struct SortedThresholds {
  Thresholds sorted;
  std::vector<int64_t> perm;  // empty for linspace (the identity)
  bool identity = true;
};

// PermIndex is `perm` (reversed: from the last threshold down) as an i64
// vector in the graph of `like`; an arange for linspace.
ops::Expr PermIndex(ops::Expr like, const SortedThresholds& st, bool reversed = false);

// SortThresholds sorts the thresholds as float32 (stable), for counts of
// how many thresholds lie below each probability.
SortedThresholds SortThresholds(const Thresholds& th);

// LastOfTies marks, in scores sorted descending (kept rows first, `n_kept`
// of them), the last row of each run of equal scores: a point of the exact
// curves. One gather of the next row (a linear scan), no binary search; NaN
// never equals NaN, so each NaN is its own point (as TorchMetrics' diff).
ops::Expr LastOfTies(ops::Expr sorted, ops::Expr n_kept);

// IndexVector is the constant i64 vector `v` in the graph of `like`: an
// arange (O(T) work) when `v` is an arithmetic progression — the identity
// or reversed order of linspace thresholds — else one select per element
// (explicit lists, which are short).
ops::Expr IndexVector(ops::Expr like, const std::vector<int64_t>& v);

// AtOrAbove is ge = total − cum along the last dim of a binned histogram
// state [K, 2, T+1] (`cum`: its inclusive cumulative sums, in the dtype the
// caller computes in): the elements at or above each sorted threshold. For
// float64 weight sums, where no bin past j holds weight ge is exactly 0, not
// a rounding residue (a 0/0 precision must stay 0/0, not residue/residue).
ops::Expr AtOrAbove(ops::Expr hist, ops::Expr cum);

// BinnedHistogram is one batch's histogram [K, 2, T+1] of (class, target,
// number of sorted thresholds <= the probability): what a binned curve
// keeps instead of a [T, 2, 2] count per threshold, built in O(N log T)
// (searchsorted) rather than O(N T). `cls` broadcasts against `probs` and
// `label` (1 positive, 0 negative, -1 dropped). NaN is below every threshold
// (TorchMetrics compares preds >= threshold). An element is at or above the
// j-th sorted threshold exactly when more than j thresholds are <= it, so
// the counts at threshold j are total - cumsum(hist)[j].
// With row weights `w` (metrics/weights.h) the histogram sums the weights,
// float64.
ops::Expr BinnedHistogram(ops::Expr probs, ops::Expr label, ops::Expr cls, int64_t k, const SortedThresholds& st,
                          ops::Expr w = ops::Expr());

// DescendingRows are one binary problem's rows sorted by score, descending
// (dropped rows last): the scores, each row's positive and negative weight
// (i64 0/1, or the f64 row weight), and the last row of each run of tied
// kept scores (a point of the curves: the rows scored >= it end there).
struct DescendingRows {
  ops::Expr sorted, pos, neg, last;
};

// SortDescending sorts `s` against `label` (1 positive, 0 negative, -1
// dropped), both 1-D, each element weighing `w` (1-D f64) when valid.
DescendingRows SortDescending(ops::Expr s, ops::Expr label, ops::Expr w = ops::Expr());

// ClfCurve is _binary_clf_curve: per distinct score, descending, the
// cumulative false and true positives ([M]: i64 counts, or f64 sums of row
// weights) and the score, plus the totals of negatives and positives.
struct ClfCurve {
  ops::Expr fps, tps, thresholds, n_neg, n_pos;
};

// BinaryClfCurve scores `s` against `label` (1 positive, 0 negative, -1
// dropped), both 1-D, each element weighing `w` (1-D f64) when valid.
ClfCurve BinaryClfCurve(ops::Expr s, ops::Expr label, ops::Expr w = ops::Expr());

// ExactRows are the values an exact curve's finalize reads back from its
// cat states: the probabilities and the targets y (binary, multilabel: 1
// positive, 0 negative, -1 dropped per element; multiclass: the class of
// each sample (N, ...), -1 for a dropped one).
struct ExactRows {
  ops::Expr scores, y;
  ops::Expr positive;  // binary, multilabel: the bool state itself
  ops::Expr weight;    // with row weights: f64, one per row of `y` (else invalid)
};

// AccumulateExactRows declares the cat states of an exact curve, adds one
// batch (`probs` of row shape `row`, `stored_target` as y above, of row
// shape `target_row`) and returns the rows read back in finalize. Binary and
// multilabel targets are kept as one byte (bool "positive") per element and
// a dropped element as probability -1 (kept probabilities lie in [0, 1] or
// are NaN), so a float32 binary row costs 5 bytes instead of 12; a
// multiclass target as int32 (4 bytes instead of 8). Every
// exact curve of a collection calls it alike, so CSE shares the states.
// With row weights `w` (CurveWeights) each row's weight is kept beside it
// (a cat state "weight") and a zero-weight element reads back as dropped
// (y = -1): scikit-learn's _binary_clf_curve removes zero-weight samples, so
// they are no points of a curve.
ExactRows AccumulateExactRows(dsl::MetricBuilder& b, ops::Expr probs, ops::Expr stored_target, bool multiclass,
                              const std::vector<int64_t>& row, const std::vector<int64_t>& target_row,
                              ops::Expr w = ops::Expr());

// BinaryInputs are the update inputs of a binary curve or calibration metric
// (TorchMetrics' _binary_*_format without conversion to labels), flattened:
// `probs` — sigmoided when any kept element lies outside [0, 1], NaN
// included (ignored elements are dropped before that look) — the i64
// `target`, and `valid` (target 0 or 1 and not ignore_index).
struct BinaryInputs {
  ops::Expr probs, target, valid;
};

// ReadBinaryInputs validates float preds and integer/bool target of one shape
// (N, ...), counts targets outside {0, 1} other than ignore_index with a
// deferred check, and fills `in`. With `cast_f32`, preds other than f32/f64
// become f32 first. A bad signature poisons the builder (an error naming the
// metric and the input) and returns false.
//
// NaN scores: a NaN has no rank, so a curve, an area under it or a ranking
// over NaN is no number at all (TorchMetrics sorts NaN as +inf in its exact
// curves and below every threshold in its binned ones, and so disagrees with
// itself; scikit-learn refuses NaN). With NanScores::kRejected (every curve,
// ranking and calibration metric) kept rows with a NaN score are counted by a
// deferred check, "preds: <n> NaN scores", so Compute fails naming the input
// and a server rejects the batch before it reaches the states; kPropagated
// (the hinge losses, whose NaN result is honest) lets them through.
enum class NanScores { kRejected, kPropagated };
// CountNanScores adds that check over `nan_kept` (bool: a kept NaN score).
void CountNanScores(dsl::MetricBuilder& b, ops::Expr nan_kept);
bool ReadBinaryInputs(std::optional<int64_t> ignore_index, bool cast_f32, dsl::MetricBuilder& b, BinaryInputs& in,
                      NanScores nan_scores = NanScores::kRejected);

// ClassTask is the input form of the multiclass and multilabel curves.
enum class ClassTask { kMulticlass, kMultilabel };

// ClassInputs are the validated update inputs of a multiclass or multilabel
// curve: probabilities (N, C, ...) after softmax/sigmoid, the per-element
// label (1 positive, 0 negative, -1 dropped) and the compact form an exact
// `target` state stores.
struct ClassInputs {
  ops::Expr probs;             // float (N, C, ...)
  ops::Expr label;             // i64 (N, C, ...)
  ops::Expr stored_target;     // multiclass: i64 (N, ...) with -1 for dropped samples; multilabel: `label`
  std::vector<int64_t> extra;  // the trailing dims (...)
};

// ReadClassInputs reads `preds` and `target` as TorchMetrics does:
//   * multiclass: float preds (N, C, ...) and integer target (N, ...); a
//     sample whose target is ignore_index is dropped, one outside [0, C) is
//     counted by a deferred check and dropped. When any kept score lies
//     outside [0, 1] (NaN included) the batch is softmaxed over dim 1.
//   * multilabel: float preds and integer/bool target, both (N, L, ...); an
//     element whose target is ignore_index is dropped, one outside {0, 1} is
//     counted and dropped. When any element lies outside [0, 1] (ignored ones
//     included) the batch is sigmoided.
// NaN scores of kept samples are counted as ReadBinaryInputs says. A bad
// signature poisons the builder (an error naming the metric and the input)
// and returns false.
bool ReadClassInputs(ClassTask task, int64_t num, std::optional<int64_t> ignore_index, dsl::MetricBuilder& b,
                     ClassInputs& in, NanScores nan_scores = NanScores::kRejected);

// ReadCurveInputs reads any task's inputs into one form: `task` nullopt is
// binary (ReadBinaryInputs with f32 scores; `label` 1, 0 or -1 for a dropped
// element, which is also what `stored_target` stores; no `extra`), else
// ReadClassInputs. False (the builder poisoned) on a bad signature.
bool ReadCurveInputs(std::optional<ClassTask> task, int64_t num, std::optional<int64_t> ignore_index,
                     dsl::MetricBuilder& b, ClassInputs& in);

// ClassIndex is arange(C) shaped [C, 1, ..., 1] so that it broadcasts along
// dim 1 of a tensor of rank `rank` (N, C, ...).
ops::Expr ClassIndex(ops::Expr like, int64_t c, int64_t rank);

}  // namespace tally::metrics

#endif  // TALLY_METRICS_CURVES_COMMON_H_
