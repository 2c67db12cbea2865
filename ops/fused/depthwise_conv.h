// depthwise_conv2d: every channel of x [N, C, H, W], reflection-padded by
// pad_h rows and pad_w columns on each side (torch's "reflect"), correlated
// with one window w [kh, kw] at every stride-th position:
// [N, C, (H+2pad_h-kh)/stride+1, (W+2pad_w-kw)/stride+1], x's dtype. On
// CPU a direct loop over planes (LibTorch's threads) that adds the taps in
// row-major order; elsewhere F.pad and F.conv2d with groups=C. DepthwiseConv2dScript()
// is the TorchScript form (the same sums in the same order on CPU).
#ifndef TALLY_OPS_FUSED_DEPTHWISE_CONV_H_
#define TALLY_OPS_FUSED_DEPTHWISE_CONV_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace tally::ops::fused {

at::Tensor DepthwiseConv2d(const at::Tensor& x, const at::Tensor& w, int64_t stride, int64_t pad_h, int64_t pad_w);

// DepthwiseConv2dScript is the TorchScript source that defines
// depthwise_conv2d(x, w, stride, pad_h, pad_w).
const char* DepthwiseConv2dScript();

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_DEPTHWISE_CONV_H_
