// count_outside: how many elements of a tensor fall outside [low, high)
// (NaN included), in one read and no temporaries: the range checks that
// would otherwise be ge, lt, and, not and a sum over the batch (the weight
// input's check, metrics/weights.h; the group ids' check of slices).
#ifndef TALLY_OPS_FUSED_COUNT_OUTSIDE_H_
#define TALLY_OPS_FUSED_COUNT_OUTSIDE_H_

#include <ATen/core/Tensor.h>

namespace tally::ops::fused {

// CountOutsideCpu returns i64[]: the elements of `x` (any numeric dtype, any
// shape) with !(low <= x < high), compared in float64.
at::Tensor CountOutsideCpu(const at::Tensor& x, double low, double high);
at::Tensor CountOutsideMeta(const at::Tensor& x, double low, double high);

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_COUNT_OUTSIDE_H_
