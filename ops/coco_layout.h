// The row layout coco_match writes and coco_summary reads (op table and
// kernels both need it): per detection, one true-positive bit and one
// ignored bit per (area range, IoU threshold), bit a·T + t of a row of
// int64 words.
#ifndef TALLY_OPS_COCO_LAYOUT_H_
#define TALLY_OPS_COCO_LAYOUT_H_

#include <cstdint>

namespace tally::ops {

// pycocotools' area ranges: all, small, medium, large.
inline constexpr int64_t kCocoAreaRanges = 4;

// CocoWords is W, the int64 words that hold kCocoAreaRanges · T bits.
inline int64_t CocoWords(int64_t thresholds) { return (kCocoAreaRanges * thresholds + 63) / 64; }

}  // namespace tally::ops

#endif  // TALLY_OPS_COCO_LAYOUT_H_
