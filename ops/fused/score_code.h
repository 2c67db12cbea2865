// Fused kernel of score_code16: the order-preserving 16-bit code of each
// value rounded to float16 or bfloat16, from its bits (the decomposition in
// ops/decompositions.cc computes the same codes arithmetically).
#ifndef TALLY_OPS_FUSED_SCORE_CODE_H_
#define TALLY_OPS_FUSED_SCORE_CODE_H_

#include <ATen/core/Tensor.h>
#include <c10/util/string_view.h>

namespace tally::ops::fused {

// ScoreCode16Cpu returns i64 codes in [0, 65536) of `x` (any float dtype)
// rounded to `format` ("fp16" or "bf16"): -0 as +0, NaN as 65535.
at::Tensor ScoreCode16Cpu(const at::Tensor& x, c10::string_view format);
at::Tensor ScoreCode16Meta(const at::Tensor& x, c10::string_view format);

// Code16CountsCpu is code16_counts: i64[K, 2, 65536] counts of (class,
// target, code) over the elements of `probs` (float) and `label` (i64 of the
// same shape: 1, 0, or -1 for dropped); K = `classes`, with dim 1 the class
// when K > 1.
at::Tensor Code16CountsCpu(const at::Tensor& probs, const at::Tensor& label, c10::string_view format, int64_t classes);
at::Tensor Code16CountsMeta(const at::Tensor& probs, const at::Tensor& label, c10::string_view format, int64_t classes);

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_SCORE_CODE_H_
