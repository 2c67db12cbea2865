// signal_ratio: per signal of preds and target (the trailing
// `signal_dims` dims of one shape), the ratio in dB that TorchMetrics 1.5.2
// computes for SNR and SI-SDR (functional/audio/snr.py, sdr.py), in
// float64 from the signals as they are:
//   zero_mean:        p -= mean(p), t -= mean(t)
//   scale_invariant:  alpha = (p.t + eps) / (t.t + eps), s = alpha t,
//                     10 log10((|s|^2 + eps) / (|s - p|^2 + eps))
//   otherwise:        10 log10((|t|^2 + eps) / (|t - p|^2 + eps)).
// On CPU one read of the signals from memory (each signal's later passes
// find it in the cache), none of them copied; elsewhere, and in the
// TorchScript form SignalRatioScript(), the same in ATen.
#ifndef TALLY_OPS_FUSED_SIGNAL_RATIO_H_
#define TALLY_OPS_FUSED_SIGNAL_RATIO_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace tally::ops::fused {

at::Tensor SignalRatio(const at::Tensor& preds, const at::Tensor& target, int64_t signal_dims, bool scale_invariant,
                       bool zero_mean, double eps);

// SignalRatioScript is the TorchScript source that defines
// signal_ratio(preds, target, signal_dims, scale_invariant, zero_mean, eps).
extern const char kSignalRatioScript[];

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_SIGNAL_RATIO_H_
