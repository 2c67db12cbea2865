// Helpers shared by the threshold-based curve metrics (binary_*,
// multiclass_* and multilabel_* auroc / average_precision, and the curves
// themselves): TorchMetrics' `thresholds` argument and its tensor, and the
// multiclass/multilabel input forms.
//
// thresholds=None is the exact form (cat states); an int T >= 2 is
// torch.linspace(0, 1, T) in float32; a list holds floats in [0, 1] used as
// given (as a float32 tensor, in the user's order).
#ifndef TALLY_METRICS_CURVE_COMMON_H_
#define TALLY_METRICS_CURVE_COMMON_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/dsl/builder.h"
#include "metrics/spec.h"

namespace tally::metrics {

// Thresholds is the binned form's threshold list (empty for the exact form).
struct Thresholds {
  bool binned = false;
  int64_t count = 0;           // linspace(0, 1, count) when `values` is empty
  std::vector<double> values;  // an explicit list
  int64_t size() const { return values.empty() ? count : static_cast<int64_t>(values.size()); }
};

// ReadThresholds reads `thresholds` (none, an int >= 2, or a non-empty list
// of numbers in [0, 1]); bad values are InvalidArgument naming the metric.
absl::StatusOr<Thresholds> ReadThresholds(SpecArgs& args);

// ThresholdTensor builds the f32 thresholds [T] in the graph of `like`:
// torch.linspace(0, 1, T) (the linspace op: ATen's kernel, bit for bit) or
// the list.
dsl::Expr ThresholdTensor(dsl::Expr like, const Thresholds& t);

// SortedThresholds is the ascending order of the f32 thresholds; `perm`
// maps the user's order to positions in it (identity for linspace and
// ascending lists).
struct SortedThresholds {
  Thresholds sorted;
  std::vector<int64_t> perm;
  bool identity = true;
};

// SortThresholds sorts the thresholds as float32 (stable), for counts of
// how many thresholds lie below each probability.
SortedThresholds SortThresholds(const Thresholds& th);

// IndexVector is the constant i64 vector `v` in the graph of `like`: an
// arange (O(T) work) when `v` is an arithmetic progression — the identity
// or reversed order of linspace thresholds — else one select per element
// (explicit lists, which are short).
dsl::Expr IndexVector(dsl::Expr like, const std::vector<int64_t>& v);

// BinnedHistogram is one batch's histogram [K, 2, T+1] of (class, target,
// number of sorted thresholds <= the probability): what a binned curve
// keeps instead of a [T, 2, 2] count per threshold, built in O(N log T)
// (searchsorted) rather than O(N T). `cls` broadcasts against `probs` and
// `label` (1 positive, 0 negative, -1 dropped). NaN is below every threshold
// (TorchMetrics compares preds >= threshold). An element is at or above the
// j-th sorted threshold exactly when more than j thresholds are <= it, so
// the counts at threshold j are total - cumsum(hist)[j].
dsl::Expr BinnedHistogram(dsl::Expr probs, dsl::Expr label, dsl::Expr cls, int64_t k, const SortedThresholds& st);

// BinaryInputs are the update inputs of a binary curve or calibration metric
// (TorchMetrics' _binary_*_format without conversion to labels), flattened:
// `probs` — sigmoided when any kept element lies outside [0, 1], NaN
// included (ignored elements are dropped before that look) — the i64
// `target`, and `valid` (target 0 or 1 and not ignore_index).
struct BinaryInputs {
  dsl::Expr probs, target, valid;
};

// ReadBinaryInputs validates float preds and integer/bool target of one shape
// (N, ...), counts targets outside {0, 1} other than ignore_index with a
// deferred check, and fills `in`. With `cast_f32`, preds other than f32/f64
// become f32 first. A bad signature poisons the builder (an error naming the
// metric and the input) and returns false.
bool ReadBinaryInputs(std::optional<int64_t> ignore_index, bool cast_f32, dsl::MetricBuilder& b, BinaryInputs& in);

// ClassTask is the input form of the multiclass and multilabel curves.
enum class ClassTask { kMulticlass, kMultilabel };

// ClassInputs are the validated update inputs of a multiclass or multilabel
// curve: probabilities (N, C, ...) after softmax/sigmoid, the per-element
// label (1 positive, 0 negative, -1 dropped) and the compact form an exact
// `target` state stores.
struct ClassInputs {
  dsl::Expr probs;          // float (N, C, ...)
  dsl::Expr label;          // i64 (N, C, ...)
  dsl::Expr stored_target;  // multiclass: i64 (N, ...) with -1 for dropped samples; multilabel: `label`
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
// A bad signature poisons the builder (an error naming the metric and the
// input) and returns false.
bool ReadClassInputs(ClassTask task, int64_t num, std::optional<int64_t> ignore_index, dsl::MetricBuilder& b,
                     ClassInputs& in);

// ClassIndex is arange(C) shaped [C, 1, ..., 1] so that it broadcasts along
// dim 1 of a tensor of rank `rank` (N, C, ...).
dsl::Expr ClassIndex(dsl::Expr like, int64_t c, int64_t rank);

}  // namespace tally::metrics

#endif  // TALLY_METRICS_CURVE_COMMON_H_
