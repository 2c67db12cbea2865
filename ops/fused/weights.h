// bad_weights: the one check of the optional `weight` input
// (metrics/weights.h), in one read of the batch's weights: how many are
// negative, NaN or infinite. No float64 copy of the weights is made; the
// fused kernels that take weights treat those rows as weight 0 themselves.
#ifndef TALLY_OPS_FUSED_WEIGHTS_H_
#define TALLY_OPS_FUSED_WEIGHTS_H_

#include <ATen/core/Tensor.h>

namespace tally::ops::fused {

// BadWeightsCpu returns i64[]: the elements of `weight` (any float dtype,
// any shape) that are negative, NaN or infinite.
at::Tensor BadWeightsCpu(const at::Tensor& weight);
at::Tensor BadWeightsMeta(const at::Tensor& weight);

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_WEIGHTS_H_
