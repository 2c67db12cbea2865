// Detections given ragged, one row per box with the image it belongs to
// (retrieval's `indexes` form), laid out as the detection metrics read
// them: one row per image, its boxes in slots, -1 labels padding.
//
//   boxes [D, 4], scores [D], labels [D], indexes [D]
//   target_boxes [G, 4], target_labels [G], target_indexes [G]
//   (optional target_iscrowd [G], target_area [G])
// become
//   boxes [N, D', 4], scores [N, D'], labels [N, D'],
//   target_boxes [N, G', 4], target_labels [N, G'], ...
// with the images in ascending id order (COCO's sorted imgIds; TorchMetrics
// numbers images as they come), each image's boxes in their given order.
#ifndef TALLY_API_DETECTION_ROWS_H_
#define TALLY_API_DETECTION_ROWS_H_

#include "absl/status/statusor.h"
#include "engine/runtime/program.h"

namespace tally {

// PadDetectionRows rewrites `inputs` in place when they are detections in
// the ragged form (`boxes` of rank 2 beside `indexes`) and returns whether
// it did; other inputs are left alone. Errors name the input at fault.
absl::StatusOr<bool> PadDetectionRows(NamedTensors& inputs);

}  // namespace tally

#endif  // TALLY_API_DETECTION_ROWS_H_
