// class_overlap: per mask pair and class, the pixels both masks give the
// class, the pixels preds gives it and the pixels target gives it, i64
// [N, 3, C'] (C' = num_classes, less class 0 without include_background
// when there are two classes or more: TorchMetrics' _ignore_background).
// Index masks are [N, ...] ids (an id outside [0, num_classes) is counted
// nowhere: the metric refuses such an update before it lands); one-hot
// masks are [N, num_classes, ...], a nonzero value meaning the class.
// On CPU, index masks are read once (a joint histogram of (pred, target)
// pairs per chunk of pixels, over LibTorch's threads); elsewhere, and for
// one-hot masks, ClassOverlapScript() runs (bincounts and sums).
#ifndef TALLY_OPS_FUSED_CLASS_OVERLAP_H_
#define TALLY_OPS_FUSED_CLASS_OVERLAP_H_

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace tally::ops::fused {

at::Tensor ClassOverlap(const at::Tensor& preds, const at::Tensor& target, int64_t num_classes, bool index,
                        bool include_background);

// ClassOverlapScript is the TorchScript source that defines
// class_overlap(preds, target, num_classes, index, include_background).
const char* ClassOverlapScript();

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_CLASS_OVERLAP_H_
