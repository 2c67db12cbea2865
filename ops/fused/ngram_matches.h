// ngram_matches: per row of integer token ids preds [N, Lp] and its
// references target [N, R, Lt] (a negative id is padding, skipped wherever
// it is), BLEU's counts as int64 [N, 2 n_gram + 2]:
//   [k - 1]            clipped matches of order k: over preds' distinct
//                      k-grams, min(count in preds, max count in one reference)
//   [n_gram + k - 1]   preds' k-gram count, max(len - k + 1, 0)
//   [2 n_gram]         preds' length
//   [2 n_gram + 1]     the length of the reference closest to it, the first
//                      such (TorchMetrics' list.index of the minimum); a
//                      reference of padding only is absent unless all are.
// ngram_overlap: per row and reference, int64 [N, R, n_gram]: the k-grams of
// each order k the two share, the sum over k-grams of the smaller count
// (chrF's and ROUGE-N's matches; a reference of padding only shares none).
//
// On CPU one row at a time over the threads: the k-grams of a row and its
// references sorted together, then counted run by run. Elsewhere (and in
// TorchScript: NgramMatchesScript()) the same counts from [N, Lp, Lp] and
// [N, Lp, R, Lt] equality tables. Integers: both agree exactly.
#ifndef TALLY_OPS_FUSED_NGRAM_MATCHES_H_
#define TALLY_OPS_FUSED_NGRAM_MATCHES_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace tally::ops::fused {

at::Tensor NgramMatches(const at::Tensor& preds, const at::Tensor& target, int64_t n_gram);

at::Tensor NgramOverlap(const at::Tensor& preds, const at::Tensor& target, int64_t n_gram);

// NgramMatchesScript is the TorchScript source that defines
// ngram_matches(preds, target, n_gram) and ngram_overlap(preds, target, n_gram).
const char* NgramMatchesScript();

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_NGRAM_MATCHES_H_
