// panoptic_match: panoptic quality's per-image matching (TorchMetrics'
// _panoptic_quality_update_sample, panopticapi's pq_compute) reduced to
// exact per-category counts. Points are (category_id, instance_id) pairs,
// preds and target [N, ..., 2]; a stuff's instance is 0 and a category in
// neither list is void. Per image, a predicted and a target segment of one
// category match when their IoU, with void pixels taken out of the union,
// is above 0.5 (computed in float32, as TorchMetrics divides its int64
// counts); an unmatched segment that is at most half void is a false
// positive (pred) or a false negative (target).
//
// Returns {counts i64 [N, 4, C], unknown i64 [N]}: per image and category
// (things sorted, then stuffs sorted) the sum of the matched IoUs in units
// of 2^-24 (a float32 above 0.5 is a whole number of them, so the sum is
// exact and independent of order), TP, FP and FN; and per image the pred
// points whose category is in neither list (the metric refuses them unless
// allow_unknown_preds_category). On the CPU a hash of the segments per
// image; elsewhere PanopticMatchScript() (sorts and index_adds of fixed
// size: no host read). On `meta`, meta tensors.
#ifndef TALLY_OPS_FUSED_PANOPTIC_MATCH_H_
#define TALLY_OPS_FUSED_PANOPTIC_MATCH_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "ops/attrs.h"  // kPanopticIouUnit

namespace tally::ops::fused {

std::vector<at::Tensor> PanopticMatch(const at::Tensor& preds, const at::Tensor& target,
                                      const std::vector<int64_t>& things, const std::vector<int64_t>& stuffs);

// PanopticMatchScript is the TorchScript source that defines
// panoptic_match(preds, target, things, stuffs) -> (counts, unknown).
const char* PanopticMatchScript();

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_PANOPTIC_MATCH_H_
