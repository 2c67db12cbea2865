// edit_distance: per row of integer token ids preds [N, Lp] and target
// [N, Lt] (a negative id is padding, skipped wherever it is), the
// Levenshtein distance between the two sequences (an insertion or a
// deletion costs 1, a substitution `substitution_cost`), then the two
// lengths: int64 [N, 3] (distance, preds length, target length). The error
// rates of speech and text (word_error_rate and its relatives) are sums of
// these.
//
// On CPU one dynamic program per row, O(Lt) memory, rows spread over the
// threads. Elsewhere (and in TorchScript: EditDistanceScript()) the same
// distances as tensor operations over every row at once: Lp steps, each
// row of the table from the previous by a cumulative minimum,
//   D[i][j] = j + min_{k<=j} (B[k] - k),  B[0] = i,
//   B[j] = min(D[i-1][j-1] + cost(i, j), D[i-1][j] + 1),
// which folds the insertions along the row. Integers: both agree exactly.
#ifndef TALLY_OPS_FUSED_EDIT_DISTANCE_H_
#define TALLY_OPS_FUSED_EDIT_DISTANCE_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace tally::ops::fused {

// With `substitutions`, int64 [N, 6]: then also the substitutions,
// deletions and insertions of the least-cost alignment with the fewest
// substitutions (so "a b" against "b c" is one deletion and one insertion,
// not two substitutions).
at::Tensor EditDistance(const at::Tensor& preds, const at::Tensor& target, int64_t substitution_cost,
                        bool substitutions = false);

// EditDistanceScript is the TorchScript source that defines
// edit_distance(preds, target, substitution_cost, substitutions).
const char* EditDistanceScript();

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_EDIT_DISTANCE_H_
