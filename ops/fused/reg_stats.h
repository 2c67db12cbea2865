// Fused kernels of the regression metrics: reg_stats, one read of (preds,
// target) giving every per-batch statistic they accumulate, and
// moments_merge, the fold of two states of a group of centred moments (both
// composite ops, ops/composite_ops.cc).
//
// Inputs are f32 or f64 (each), of one shape [N] or [N, D] (a 1-D input is one
// column). Per column the kernel computes, for preds, target and the error
// target − preds, the two-double mean (hi, lo) and the centred second moment
// M2 = Σ(x − mean)², the centred co-moment of preds and target, and the
// float64 sums of squared and of absolute errors — what the decomposition
// (ops/decompositions.cc; the moments of metrics/regression/moments.h)
// computes with about fifty ATen calls and as many passes over the rows.
//
// How: rows are cut into blocks of 1024 that stay in L1. Within a block
// each variable is shifted by its first value K (exact for a constant
// column): pass 1 sums d = x − K (and the errors), the block mean is the
// two-double TwoSum(K, Σd/n), and pass 2 sums (d − Σd/n)² and the cross
// products from the values pass 1 left in cache. Blocks, then chunks of
// blocks run on different threads, are folded with the same pairwise
// Chan/TwoSum formulas as the moments' merge graph, always in row order, so
// the result does not depend on the thread count.
//
// Contract: results equal the decomposition within 1e-12 relative — the M2s
// and error sums relative to themselves, the mean hi + lo relative to the
// column's spread √(M2/n), the co-moment relative to √(M2_preds·M2_target) —
// also for data offset by 1e4 or 1e6; they are not bit-identical to it (the
// summation order differs), but they do not depend on the thread count. The
// exact-zero rules hold exactly: a column whose batch values are all equal
// gets that value as hi and exactly 0 as lo, M2 and co-moment; an empty batch
// gives zeros. A NaN makes its column's statistics NaN, as in the
// decomposition.
#ifndef TALLY_OPS_FUSED_REG_STATS_H_
#define TALLY_OPS_FUSED_REG_STATS_H_

#include <ATen/core/Tensor.h>

#include <vector>

namespace tally::ops::fused {

// kRegStatsOutputs is the number of results of reg_stats, in this order:
//   0 n i64[]; per column f64[D]: 1-3 mean, mean_lo, m2 of preds; 4-6 of
//   target; 7-9 of the error target − preds; 10 co-moment of preds and
//   target; 11 Σ(preds − target)²; 12 Σ|preds − target|; then f64[] 13 the
//   squared and 14 the absolute error summed over every element.
constexpr int kRegStatsOutputs = 15;

// RegStatsCpu returns the kRegStatsOutputs results for CPU tensors.
// With error_moments false the error's moments (results 7..9) are zeros and
// cost nothing.
std::vector<at::Tensor> RegStatsCpu(const at::Tensor& preds, const at::Tensor& target, bool error_moments);
// RegStatsMeta returns tensors of the result shapes on the inputs' device.
std::vector<at::Tensor> RegStatsMeta(const at::Tensor& preds, const at::Tensor& target, bool error_moments);

// MomentsMergeCpu folds two states of a group of centred moments
// (metrics/regression/moments.h) as its merge graph does, in one call instead
// of a few dozen: `states` holds side A then side B, each the row count
// (i64[]), then per variable its mean, mean_lo and m2, then per pair its
// co-moment (f64 [d] each); `pairs` lists each pair's two variable indices.
// Returns the merged side in the same order. It performs the decomposition's
// float64 operations in the same order, so it is bit-identical to it (on
// targets without FMA contraction of a·b + c, such as baseline x86-64).
std::vector<at::Tensor> MomentsMergeCpu(at::TensorList states, int64_t variables, at::IntArrayRef pairs);
// MomentsMergeMeta returns tensors of the result shapes on the states' device.
std::vector<at::Tensor> MomentsMergeMeta(at::TensorList states, int64_t variables, at::IntArrayRef pairs);

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_REG_STATS_H_
