// expected_mutual_info: the mutual information two random labelings with the
// given cluster sizes share on average (the hypergeometric model of Vinh,
// Epps and Bailey, 2010): the term adjusted_mutual_info_score subtracts.
//
//   EMI = sum_i sum_j sum_k k/n log(n k / (a_i b_j)) P(k; a_i, b_j, n)
//
// over the non-zero row sums a_i, column sums b_j (n = sum a) and
// k in [max(1, a_i + b_j - n), min(a_i, b_j)], with P the hypergeometric
// probability, summed in scikit-learn's order (i, j, then ascending k). 0
// when either labeling has one cluster.
//
// P is walked out from the mode of each (i, j) by the ratio of neighbouring
// probabilities until a term underflows to exactly 0 (P is log-concave),
// then normalised to sum to 1: a few multiplications a term and O(sqrt(n))
// terms per pair, where scikit-learn calls lgamma four times a term over
// all O(n) of them. Its log-gamma differences of numbers near n log n lose
// ~n eps of every term (1e-10 relative at n = 1e5); the ratios lose a few
// eps per step from the mode.
//
// The host computes it (finalize only). kExpectedMutualInfoScript is the same
// computation, operation for operation, in TorchScript, which the
// TorchScript backend inlines so that both backends agree to the bit.
#ifndef TALLY_OPS_FUSED_EXPECTED_MUTUAL_INFO_H_
#define TALLY_OPS_FUSED_EXPECTED_MUTUAL_INFO_H_

#include <ATen/core/Tensor.h>

namespace tally::ops::fused {

// ExpectedMutualInfo takes the row and column sums (rank 1, any real dtype,
// exact integers) and returns a float64 [] on their device; on `meta`, an
// empty meta scalar.
at::Tensor ExpectedMutualInfo(const at::Tensor& rows, const at::Tensor& cols);

// kExpectedMutualInfoScript defines expected_mutual_info(rows, cols).
extern const char kExpectedMutualInfoScript[];

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_EXPECTED_MUTUAL_INFO_H_
