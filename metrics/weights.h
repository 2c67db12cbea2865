// Sample weights: the optional float input `weight`, one per row (dim 0 of
// preds), scikit-learn's `sample_weight`. A metric that takes it counts row
// i as w_i rows: its counts become float64 sums of weights (a weighted
// histogram, a weighted sum) and everything else is unchanged. Without
// `weight` in the signature the metric builds exactly what it built before
// (same int64 states, same kernels, same narrowing).
//
// A weight must be finite and >= 0 (0 drops the row); a negative, NaN or
// infinite weight is a deferred error on input 'weight', and its row counts
// nowhere meanwhile.
#ifndef TALLY_METRICS_WEIGHTS_H_
#define TALLY_METRICS_WEIGHTS_H_

#include "engine/dsl/builder.h"

namespace tally::metrics {

// kWeightInput is the input's name.
inline constexpr char kWeightInput[] = "weight";

// HasWeight says whether the signature declares `weight`.
bool HasWeight(dsl::MetricBuilder& b);

// ReadWeight reads `weight` as float64 [N] for rows like `rows` ([N, ...]),
// with its deferred check, or returns an invalid Expr when the signature has
// none. A weight that is not [N] (or is bool) fails the builder naming
// 'weight'.
ops::Expr ReadWeight(dsl::MetricBuilder& b, ops::Expr rows);

// RowWeights is ReadWeight for the rows of input `like`.
ops::Expr RowWeights(dsl::MetricBuilder& b, const std::string& like);

// RawRowWeights is RowWeights for the fused ops that take raw weights
// (mc_confmat, mc_marginals: a bad weight counts 0 there): the input as
// given, with the same check, and no float64 copy of the batch.
ops::Expr RawRowWeights(dsl::MetricBuilder& b, const std::string& like);

// PerElement broadcasts row weights `w` [N] to `x`'s shape [N, ...] (every
// element of a row weighs what its row does).
ops::Expr PerElement(ops::Expr w, ops::Expr x);

// FlatWeights is the weight of every element of input `like` (N, ...),
// flattened in its order (the order of ops::Flatten(like)): for metrics
// that flatten their inputs. Invalid without `weight`.
ops::Expr FlatWeights(dsl::MetricBuilder& b, const std::string& like);

}  // namespace tally::metrics

#endif  // TALLY_METRICS_WEIGHTS_H_
