// Ops over images and masks:
//   depthwise_conv2d(x, weight) {stride, pad_h, pad_w} -> x's dtype
//     [N, C, H', W']: every channel of x [N, C, H, W], reflection-padded,
//     correlated with the one window weight [kh, kw] at every stride-th
//     position (H' = (H + 2 pad_h - kh) / stride + 1): SSIM's windowed
//     moments, average pooling, crops and finite differences are all this
//     op.
//   class_overlap(preds, target) {num_classes, index, include_background}
//     -> i64 [N, 3, C']: per mask pair and class, the pixels of the class
//     in both, in preds and in target (ops/fused/class_overlap.h).
#include "absl/strings/str_cat.h"
#include "ops/attrs.h"
#include "ops/op_registry.h"
#include "support/status_macros.h"

namespace tally::ops {
namespace {

using ir::Dim;
using ir::DType;
using ir::TensorType;
using Types = absl::StatusOr<std::vector<TensorType>>;

// Windows is how many windows of `k` fit in `d` padded by `pad` on each
// side, every `stride` elements; a symbolic size names its window count by
// a symbol of its own.
absl::StatusOr<Dim> Windows(const Dim& d, int64_t k, int64_t stride, int64_t pad) {
  if (pad < 0) return absl::InvalidArgumentError("padding must be >= 0");
  if (d.is_symbolic()) return Dim::Symbol(absl::StrCat(d.symbol, "_w", k, "s", stride, "p", pad));
  if (pad > 0 && pad >= d.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("reflection padding of ", pad, " needs a size above it, got ", d.size));
  }
  if (d.size + 2 * pad < k) {
    return absl::InvalidArgumentError(
        absl::StrCat("a window of ", k, " does not fit in a size of ", d.size, " padded by ", pad));
  }
  return Dim::Fixed((d.size + 2 * pad - k) / stride + 1);
}

}  // namespace

void RegisterImageOps(OpTable& t) {
  AddOp(t, MakeOp(OpId::kDepthwiseConv2d, 2, 2, SpecsOf<Conv2dAttrs>(),
                  [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
                    const TensorType& x = in[0];
                    const TensorType& w = in[1];
                    if (!ir::IsFloating(x.dtype) || x.rank() != 4) {
                      return absl::InvalidArgumentError("expects floating x [N, C, H, W]");
                    }
                    if (w.dtype != x.dtype || w.rank() != 2 || w.shape[0].is_symbolic() || w.shape[1].is_symbolic()) {
                      return absl::InvalidArgumentError("expects a window [kh, kw] of fixed size in x's dtype");
                    }
                    const auto attrs = AttrsOf<Conv2dAttrs>(a);
                    const int64_t stride = attrs.stride.get();
                    if (stride < 1) return absl::InvalidArgumentError("stride must be >= 1");
                    TALLY_ASSIGN_OR_RETURN(Dim h, Windows(x.shape[2], w.shape[0].size, stride, attrs.pad_h.get()));
                    TALLY_ASSIGN_OR_RETURN(Dim wd, Windows(x.shape[3], w.shape[1].size, stride, attrs.pad_w.get()));
                    return std::vector<TensorType>{{x.dtype, {x.shape[0], x.shape[1], h, wd}, x.device}};
                  }));
  AddOp(
      t,
      MakeOp(OpId::kClassOverlap, 2, 2, SpecsOf<ClassOverlapAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
               const auto attrs = AttrsOf<ClassOverlapAttrs>(a);
               const TensorType& p = in[0];
               if (!(p.shape == in[1].shape) || p.dtype != in[1].dtype ||
                   !(ir::IsIntegral(p.dtype) || p.dtype == DType::kBool)) {
                 return absl::InvalidArgumentError("expects integer or bool preds and target of one shape");
               }
               if (attrs.num_classes < 1) return absl::InvalidArgumentError("num_classes must be >= 1");
               const bool index = attrs.index.get();
               if (p.rank() < (index ? 2 : 3)) {
                 return absl::InvalidArgumentError(index ? "expects index masks [N, ...]"
                                                         : "expects one-hot masks [N, C, ...]");
               }
               if (!index && !(p.shape[1] == Dim::Fixed(attrs.num_classes))) {
                 return absl::InvalidArgumentError("one-hot masks need num_classes channels");
               }
               // TorchMetrics keeps a lone class when dropping the background.
               const int64_t kept =
                   attrs.include_background.get() || attrs.num_classes == 1 ? attrs.num_classes : attrs.num_classes - 1;
               return std::vector<TensorType>{{DType::kInt64, {p.shape[0], Dim::Fixed(3), Dim::Fixed(kept)}, p.device}};
             }));
}

}  // namespace tally::ops
