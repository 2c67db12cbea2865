// The update side of the classification metrics: TorchMetrics' input forms
// and the sufficient statistics every classification metric is computed from.
//
// Each function here reads `preds` and `target` from the builder, checks their
// metadata on the host (a bad shape or dtype fails the builder with an error
// naming the metric and the input), turns the values into labels on the
// device exactly as TorchMetrics 1.5 does, declares deferred checks for values
// out of range (offending rows are masked out of the states), and accumulates
// one set of integer states.
//
// Metrics that need the same statistics call the same function with the same
// arguments, so their update subgraphs are identical node for node and the
// compiler's CSE merges their states: in a collection, multiclass accuracy,
// precision, recall, f1, specificity, jaccard, MCC, kappa and the confusion
// matrix with the same num_classes/ignore_index all read one confusion matrix.
//
//   binary      confmat i64[2, 2]     rows = target, cols = prediction
//   multiclass  confmat i64[C, C]     (top_k == 1)
//               tp/fp/tn/fn i64[C]    (top_k > 1: the top-k predictions are multi-hot)
//   multilabel  confmat i64[L, 2, 2]
//   exact match correct, total i64[]
//
// With multidim_average="samplewise" every sample (row of dim 0) keeps its
// own counts, so the states are cat states, one row per sample:
//
//   binary      i64[M, 4]             tp, fp, tn, fn over the sample's elements
//   multiclass  i64[M, 4, C]          per class, over the sample's positions
//   multilabel  i64[M, 4, L]          per label, over the sample's positions
//   exact match i64[M]                matching positions (multilabel) or 0/1
#ifndef TALLY_METRICS_CLASSIFICATION_STATS_H_
#define TALLY_METRICS_CLASSIFICATION_STATS_H_

#include <cstdint>
#include <optional>

#include "engine/dsl/builder.h"
#include "metrics/inputs.h"

namespace tally::metrics {

// LogitCheck says which elements decide whether float binary preds are
// logits (any value outside [0, 1] => sigmoid). TorchMetrics' stat-score
// family looks at every element; its binary confusion-matrix family drops
// ignored elements first.
enum class LogitCheck { kAllElements, kKeptElements };

// BinaryConfmat accumulates the binary confusion matrix [[tn, fp], [fn, tp]]
// of `preds` (float probabilities or logits, or int/bool labels) against
// `target` (int/bool in {0, 1}), both (N, ...) and flattened.
dsl::State BinaryConfmat(dsl::MetricBuilder& b, double threshold, std::optional<int64_t> ignore_index,
                         LogitCheck logit_check);

// BinaryGroupCounts accumulates, per group, the binary counts of `preds`
// against `target` (or, without `with_target`, against a target of zeros, as
// TorchMetrics' demographic parity does), i64[G, 5]: tp, fp, tn, fn over the
// kept elements and, last, the elements whose target is `ignore_index` (so a
// group's row sum says whether it had any rows at all). `groups` is one int id
// per row in [0, num_groups); a row with another id counts nowhere (and a
// deferred check fails Compute with their number). With row weights, f64
// sums of weights.
dsl::State BinaryGroupCounts(dsl::MetricBuilder& b, int64_t num_groups, double threshold,
                             std::optional<int64_t> ignore_index, bool with_target);

// MulticlassConfmat accumulates the C x C confusion matrix cm[target][pred]
// of `preds` (float (N, C, ...) scores -> argmax, or int (N, ...) labels)
// against int `target` (N, ...). Positions whose target is `ignore_index` are
// dropped.
dsl::State MulticlassConfmat(dsl::MetricBuilder& b, int64_t num_classes, std::optional<int64_t> ignore_index);

// MulticlassTopkCounts are per-class tp, fp, tn, fn states.
struct MulticlassTopkCounts {
  dsl::State tp, fp, tn, fn;
};

// MulticlassTopk accumulates per-class counts where each sample predicts its
// `top_k` highest scores (float (N, C, ...) preds only).
MulticlassTopkCounts MulticlassTopk(dsl::MetricBuilder& b, int64_t num_classes, int64_t top_k,
                                    std::optional<int64_t> ignore_index);

// MultilabelConfmat accumulates one 2 x 2 matrix per label, i64[L, 2, 2], of
// `preds` (float or int/bool (N, L, ...)) against `target` (N, L, ...).
// Elements whose target is `ignore_index` are dropped.
dsl::State MultilabelConfmat(dsl::MetricBuilder& b, int64_t num_labels, double threshold,
                             std::optional<int64_t> ignore_index);

// ExactMatchCounts are the number of matching samples and of samples.
struct ExactMatchCounts {
  dsl::State correct, total;
};

// MulticlassExactMatch counts samples whose every position matches; positions
// whose target is `ignore_index` count as matching (TorchMetrics overwrites
// the prediction there).
ExactMatchCounts MulticlassExactMatch(dsl::MetricBuilder& b, int64_t num_classes, std::optional<int64_t> ignore_index);

// MultilabelExactMatch counts samples (and extra positions) whose L labels
// all match; an ignored element makes its sample a non-match (TorchMetrics
// sets the target to -1 there).
ExactMatchCounts MultilabelExactMatch(dsl::MetricBuilder& b, int64_t num_labels, double threshold,
                                      std::optional<int64_t> ignore_index);

// SamplewiseCounts accumulates per-sample tp, fp, tn, fn as one cat state
// with rows [4] (binary) or [4, K] (multiclass, multilabel), for TorchMetrics'
// multidim_average="samplewise". The inputs must have dims beyond the sample
// and class dims (binary (N, ...), multiclass labels (N, ...) or scores
// (N, C, ...), multilabel (N, L, ...)), as TorchMetrics requires. Ignored
// elements count nowhere; a sample with an invalid value gets zero counts
// (and the deferred check fails Compute).
dsl::State BinarySamplewise(dsl::MetricBuilder& b, double threshold, std::optional<int64_t> ignore_index);
dsl::State MulticlassSamplewise(dsl::MetricBuilder& b, int64_t num_classes, int64_t top_k,
                                std::optional<int64_t> ignore_index);
dsl::State MultilabelSamplewise(dsl::MetricBuilder& b, int64_t num_labels, double threshold,
                                std::optional<int64_t> ignore_index);

// SamplewiseExactMatch accumulates, per sample, the number of positions
// whose prediction matches (multilabel: all L labels of the position match;
// ignored elements never match) or, for multiclass, 1 when every position
// matches (ignored positions match). `positions` receives the number of
// positions per sample, the denominator of the multilabel score.
dsl::State MulticlassSamplewiseExactMatch(dsl::MetricBuilder& b, int64_t num_classes,
                                          std::optional<int64_t> ignore_index);
dsl::State MultilabelSamplewiseExactMatch(dsl::MetricBuilder& b, int64_t num_labels, double threshold,
                                          std::optional<int64_t> ignore_index, int64_t* positions);

}  // namespace tally::metrics

#endif  // TALLY_METRICS_CLASSIFICATION_STATS_H_
