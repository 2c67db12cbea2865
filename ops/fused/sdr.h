// sdr: per signal of preds and target [..., time], the signal-to-distortion
// ratio in dB as TorchMetrics 1.5.2 computes it (functional/audio/sdr.py;
// mir_eval's bss_eval SDR of one source): both signals in float64 (without
// their means when zero_mean) scaled to unit norm (at least 1e-6), then
// the projection of preds on the filter_length delayed copies of target,
// from the Toeplitz system of target's autocorrelation (load_diag added to
// its diagonal) against the cross-correlation, both by FFT:
//   coh = b . R^-1 b,   sdr = 10 log10(coh / (1 - coh)):  float64 [...],
// NaN where R is singular (TorchMetrics raises; telling would read the
// solver's status on the host).
// On CPU Levinson's recursion solves each system in O(L^2); elsewhere, and
// in the TorchScript form SdrScript(), a batched solve.
#ifndef TALLY_OPS_FUSED_SDR_H_
#define TALLY_OPS_FUSED_SDR_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace tally::ops::fused {

at::Tensor Sdr(const at::Tensor& preds, const at::Tensor& target, int64_t filter_length, bool zero_mean,
               double load_diag);

// SdrScript is the TorchScript source that defines
// sdr(preds, target, filter_length, zero_mean, load_diag).
const char* SdrScript();

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_SDR_H_
