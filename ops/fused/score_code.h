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

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_SCORE_CODE_H_
