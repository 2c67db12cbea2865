// trace_sqrt: the real part of the sum of the square roots of the
// eigenvalues of a square matrix, in float64: tr(sqrtm(S1 S2)) for two
// covariance matrices, as TorchMetrics' Fréchet distance computes it
// (torch.linalg.eigvals(m).sqrt().real.sum()). A scalar on m's device;
// NaN when m has a non-finite entry (LAPACK refuses those); empty on `meta`
// (eigvals has no meta kernel). TraceSqrtScript() is the TorchScript form.
#ifndef TALLY_OPS_FUSED_TRACE_SQRT_H_
#define TALLY_OPS_FUSED_TRACE_SQRT_H_

#include <ATen/core/Tensor.h>

namespace tally::ops::fused {

at::Tensor TraceSqrt(const at::Tensor& m);

// TraceSqrtScript is the TorchScript source that defines trace_sqrt(m).
const char* TraceSqrtScript();

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_TRACE_SQRT_H_
