// ter_edits: per row of integer token ids preds [N, Lp] (the hypothesis)
// and each of its references target [N, R, Lt] (a negative id is padding,
// skipped wherever it is), the edits of the translation edit rate as
// TorchMetrics 1.5.2 counts them (functional/text/ter.py, after sacreBLEU's
// Tercom port): int64 [N, R].
//
// TorchMetrics calls the search with its arguments swapped, so it shifts
// the reference's words toward the hypothesis; an empty hypothesis has 0
// edits and an empty reference the hypothesis' length. The search: while a
// block shift lowers the edit distance, apply the best one (the largest
// gain, then the longest block, the earliest start, the earliest place),
// blocks of at most 9 words moved at most 50 places, at most 1000
// candidates over the sentence; the edits are the shifts plus the final
// distance. The distance is TorchMetrics' beam-limited Levenshtein (width
// 25 around the diagonal of the length ratio; the last row in full): the
// beam can make it exceed the true distance, and that is kept.
//
// On CPU the rows spread over the threads; a candidate's distance reuses
// the table rows of the prefix it shares with the words it shifts. The
// TorchScript form (TerEditsScript()) runs the same search over lists.
#ifndef TALLY_OPS_FUSED_TER_EDITS_H_
#define TALLY_OPS_FUSED_TER_EDITS_H_

#include <ATen/core/Tensor.h>

namespace tally::ops::fused {

at::Tensor TerEdits(const at::Tensor& preds, const at::Tensor& target);

// TerEditsScript is the TorchScript source that defines ter_edits(preds, target).
const char* TerEditsScript();

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_TER_EDITS_H_
