// coco_match and coco_summary: COCO's bounding-box evaluation (pycocotools'
// COCOeval.evaluateImg, accumulate and summarize) split where its data
// shrinks. coco_match runs in the update, per image: it matches detections
// to ground truth greedily by score at every IoU threshold and area range
// and keeps, per detection, its rank within its image and class and one
// true-positive bit and one ignored bit per (area range, threshold); per
// ground-truth box, one bit per area range that it counts in. The boxes are
// not kept. coco_summary runs in finalize over those rows: per class it
// sorts the detections by score (stable: ties keep image order, then rank),
// builds COCO's precision envelope at the recall thresholds and returns the
// twelve summary values.
//
// Area ranges, in bit order: all [0, 1e10], small [0, 32²], medium
// [32², 96²], large [96², 1e10], inclusive at both ends as in pycocotools.
// A detection's bits for range a and threshold t sit at bit a·T + t of its
// row of W = CocoWords(T) int64 words (ops/coco_layout.h).
#ifndef TALLY_OPS_FUSED_COCO_EVAL_H_
#define TALLY_OPS_FUSED_COCO_EVAL_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "ops/coco_layout.h"

namespace tally::ops::fused {

// CocoMatch takes, per image n (rows), detections boxes [N, D, 4] (xywh,
// float64), scores [N, D] (float64) and labels [N, D] (int64, -1 pads) and
// ground truth target_boxes [N, G, 4], target_labels [N, G] (-1 pads),
// target_iscrowd [N, G] (int64 0/1) and target_area [N, G] (float64, the
// area COCO ranges them by). With `micro`, every label is one class.
// Returns one row per slot, image-major: {rank i64 [N*D] (-1 for padding),
// tp i64 [N*D, W], ignored i64 [N*D, W], counted i64 [N*G]}; a detection
// ranked at or past max_det, or padding, is ignored everywhere. On `meta`,
// meta tensors.
std::vector<at::Tensor> CocoMatch(const std::vector<at::Tensor>& in, const std::vector<double>& iou_thresholds,
                                  int64_t max_det, bool micro);

// CocoSummary takes the accumulated rows, scores [R] f64, labels [R] i64,
// rank [R] i64, tp [R, W], ignored [R, W], gt labels [Rg] i64 and counted
// [Rg] i64, and returns {stats f64 [12] in pycocotools' order (-1 where
// nothing was evaluated), classes i64 [K] (the labels seen, sorted),
// map per class f64 [K], mar per class (at max_dets[2]) f64 [K]}; the
// per-class values only with class_metrics (else empty). `max_dets` holds
// three ascending limits. Runs on the host (finalize only).
std::vector<at::Tensor> CocoSummary(const std::vector<at::Tensor>& in, const std::vector<double>& iou_thresholds,
                                    const std::vector<double>& rec_thresholds, const std::vector<int64_t>& max_dets,
                                    bool micro, bool class_metrics);

// CocoBins places coco_match's rows in a fixed-size histogram: in (scores
// [R] f64, labels, rank [R], tp, ignored [R, W], gt labels and counted
// [Rg]) -> {rows i64 [R, 4 * T, 2]: per row and slot (area range,
// threshold) the flat index of its cell in the histogram i64
// [C, 4, 3, T, K, 2] (class, area range, the tightest of max_dets' three
// limits the row's rank is under, threshold, score bin of width 1/K over
// [0, 1] with scores outside in the end bins, true or false positive) and
// 1, or (0, 0) where the row does not count (padding, an ignored
// detection, past every limit): a scatter
// state's partial (ir::StateDecl::scatter), so that an update touches only
// its rows' cells whatever K; gt i64 [C, 5]: per class the ground truth
// counted in each area range and the rows (detections and ground truth)
// of the class}. Labels outside [0, C) are skipped (the metric refuses
// them).
std::vector<at::Tensor> CocoBins(const std::vector<at::Tensor>& in, int64_t num_classes, int64_t score_bins,
                                 const std::vector<int64_t>& max_dets, int64_t thresholds);

// CocoBinsSummary is CocoSummary over CocoBins' sums: each class with rows
// is a category; a limit's counts are its own rows' and the tighter
// limits'; a bin's detections enter the curve together (a point per bin,
// highest first), so with one score per bin it is pycocotools' value.
std::vector<at::Tensor> CocoBinsSummary(const at::Tensor& hist, const at::Tensor& gt,
                                        const std::vector<double>& iou_thresholds,
                                        const std::vector<double>& rec_thresholds, const std::vector<int64_t>& max_dets,
                                        bool class_metrics);

// CocoMatchScript and CocoSummaryScript are the TorchScript sources of
// coco_match(...) and coco_summary(...), the same algorithms in tensor ops
// (the TorchScript backend and devices other than the CPU run them).
const char* CocoMatchScript();
const char* CocoSummaryScript();
// CocoBinsScript and CocoBinsSummaryScript: the same for coco_bins(...)
// and coco_bins_summary(...).
const char* CocoBinsScript();
const char* CocoBinsSummaryScript();

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_COCO_EVAL_H_
