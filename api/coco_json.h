// COCO's own files as detection inputs: `tally eval --input
// coco_gt=instances.json --input coco_dt=results.json`.
//
// The ground truth is a COCO dataset (instances_*.json): its `annotations`
// give each box ([x, y, width, height]), `category_id`, `image_id`, `area`
// (what COCO ranges the box by) and `iscrowd`. The detections are COCO's
// results format: a list of {image_id, category_id, bbox, score}. Both
// become the ragged detection inputs (api/detection_rows.h), boxes in xywh
// float64, in file order: evaluate them with
// mean_average_precision(box_format=xywh).
#ifndef TALLY_API_COCO_JSON_H_
#define TALLY_API_COCO_JSON_H_

#include <string>

#include "absl/status/statusor.h"
#include "engine/runtime/program.h"

namespace tally {

// kCocoGroundTruth and kCocoDetections are the --input names of the files.
inline constexpr char kCocoGroundTruth[] = "coco_gt";
inline constexpr char kCocoDetections[] = "coco_dt";

// ReadCocoDetections reads both files. A detection of an image the ground
// truth does not list is refused (as pycocotools' loadRes does), so is a
// missing or mistyped field (the error names the file, the entry and the
// field).
absl::StatusOr<NamedTensors> ReadCocoDetections(const std::string& gt_path, const std::string& dt_path);

}  // namespace tally

#endif  // TALLY_API_COCO_JSON_H_
