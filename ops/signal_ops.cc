// Ops over waveforms:
//   sdr(preds, target) {filter_length, zero_mean, load_diag} -> f64 [...]:
//     per signal of preds and target [..., time], the signal-to-distortion
//     ratio in dB of preds against the filter_length delayed copies of
//     target (ops/fused/sdr.h).
//   signal_ratio(preds, target) {signal_dims, scale_invariant, zero_mean, eps}
//     -> f64 [...]: per signal (the trailing signal_dims dims), SI-SDR or
//     SNR in dB (ops/fused/signal_ratio.h).
#include "ops/attrs.h"
#include "ops/op_registry.h"

namespace tally::ops {

void RegisterSignalOps(OpTable& t) {
  AddOp(t, MakeOp(OpId::kSdr, 2, 2, SpecsOf<SdrAttrs>(),
                  [](const std::vector<ir::TensorType>& in, const ir::AttrMap& a,
                     const ir::Device&) -> absl::StatusOr<std::vector<ir::TensorType>> {
                    const ir::TensorType& preds = in[0];
                    if (!ir::IsFloating(preds.dtype) || preds.rank() < 1 || in[1].dtype != preds.dtype ||
                        !(in[1].shape == preds.shape)) {
                      return absl::InvalidArgumentError("expects floating preds and target of one shape [..., time]");
                    }
                    if (AttrsOf<SdrAttrs>(a).filter_length < 1) {
                      return absl::InvalidArgumentError("filter_length must be >= 1");
                    }
                    ir::Shape signals(preds.shape.begin(), preds.shape.end() - 1);
                    return std::vector<ir::TensorType>{{ir::DType::kFloat64, signals, preds.device}};
                  }));
  AddOp(t, MakeOp(OpId::kSignalRatio, 2, 2, SpecsOf<SignalRatioAttrs>(),
                  [](const std::vector<ir::TensorType>& in, const ir::AttrMap& a,
                     const ir::Device&) -> absl::StatusOr<std::vector<ir::TensorType>> {
                    const ir::TensorType& preds = in[0];
                    const int64_t dims = AttrsOf<SignalRatioAttrs>(a).signal_dims.get();
                    if (dims < 1 || preds.rank() < dims) {
                      return absl::InvalidArgumentError("signal_dims must be >= 1 and at most the rank");
                    }
                    if (!ir::IsFloating(preds.dtype) || in[1].dtype != preds.dtype || !(in[1].shape == preds.shape)) {
                      return absl::InvalidArgumentError("expects floating preds and target of one shape and dtype");
                    }
                    ir::Shape signals(preds.shape.begin(), preds.shape.end() - dims);
                    return std::vector<ir::TensorType>{{ir::DType::kFloat64, signals, preds.device}};
                  }));
}

}  // namespace tally::ops
