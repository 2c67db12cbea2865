// token_nll: per position of integer target [...] (a token id) with its
// logits [..., V] (float16, bfloat16, float32 or float64), the negative
// log-likelihood -log softmax(logits)[target] = logsumexp(logits) -
// logits[target], in float64; 0 where the target is outside [0, V) (the
// caller masks or refuses those). What perplexity sums.
//
// It never makes a copy of the logits: on CPU each row of V is read in its
// own dtype, rows spread over the threads: a 16-bit row once with AVX2
// (its maximum and the sum of exp(x), each term from a table of all 2^16
// values, in one pass), other rows twice (the maximum, then the sum of
// exp(x - max) in float64). Elsewhere (and in TorchScript:
// kTokenNllScript) rows go through logsumexp in float64 in chunks of at
// most 2^25 logits (256 MB), so memory stays the logits plus one chunk.
#ifndef TALLY_OPS_FUSED_TOKEN_NLL_H_
#define TALLY_OPS_FUSED_TOKEN_NLL_H_

#include <ATen/core/Tensor.h>

namespace tally::ops::fused {

at::Tensor TokenNll(const at::Tensor& logits, const at::Tensor& target);

// kTokenNllScript defines token_nll(logits, target).
extern const char kTokenNllScript[];

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_TOKEN_NLL_H_
