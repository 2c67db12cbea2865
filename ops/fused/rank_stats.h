// Fused kernel of the exact binary AUROC and average precision: one radix
// sort of the accumulated rows and one scan of their tie groups, instead of
// three sorts and three binary searches over every row.
//
// Semantics are exactly those of binary_rank_stats' decomposition
// (ops/decompositions.cc): a row whose score is < 0 is dropped (the exact
// curves store a dropped row as -1; kept probabilities lie in [0, 1]);
// NaN counts as +inf (above every probability; NaNs tie); -0 and +0 tie.
#ifndef TALLY_OPS_FUSED_RANK_STATS_H_
#define TALLY_OPS_FUSED_RANK_STATS_H_

#include <ATen/core/Tensor.h>

#include <tuple>

namespace tally::ops::fused {

// BinaryRankStatsCpu returns, over the kept rows of scores f32/f64 [R] and
// positive bool [R]:
//   n_pos, n_neg    i64[]: positive and negative rows
//   u               f64[]: the (positive, negative) pairs ordered right, a
//                   tied pair counting one half (Mann-Whitney U; AUROC is
//                   u / (n_pos n_neg))
//   precision_sum   f64[]: over the positives, the precision at their score
//                   (positives among the rows scored >= it, over those rows;
//                   AP is precision_sum / n_pos, as scikit-learn's)
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> BinaryRankStatsCpu(const at::Tensor& scores,
                                                                              const at::Tensor& positive);
std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> BinaryRankStatsMeta(const at::Tensor& scores,
                                                                               const at::Tensor& positive);

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_RANK_STATS_H_
