// lcs_length: per row of integer token ids preds [N, Lp] and each of its
// references target [N, R, Lt] (a negative id is padding, skipped wherever
// it is), the length of the longest common subsequence, int64 [N, R]:
// ROUGE-L's numerator.
//
// On CPU one dynamic program per pair, O(Lt) memory, rows spread over the
// threads. Elsewhere (and in TorchScript: LcsLengthScript()) every pair at
// once in Lp steps, each row of the table from the previous by a
// cumulative maximum,
//   C[i][j] = max_{k<=j} max(C[i-1][k], C[i-1][k-1] + [p_i == t_k]),
// which folds the C[i][j-1] term along the row. Integers: both agree
// exactly.
#ifndef TALLY_OPS_FUSED_LCS_LENGTH_H_
#define TALLY_OPS_FUSED_LCS_LENGTH_H_

#include <ATen/core/Tensor.h>

namespace tally::ops::fused {

at::Tensor LcsLength(const at::Tensor& preds, const at::Tensor& target);

// LcsLengthScript is the TorchScript source that defines lcs_length(preds, target).
const char* LcsLengthScript();

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_LCS_LENGTH_H_
