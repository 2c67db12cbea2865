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
//   coco_match(boxes, scores, labels, target_boxes, target_labels,
//     target_iscrowd, target_area) {iou_thresholds, max_det, micro}
//     -> rank i64 [N*D], tp i64 [N*D, W], ignored i64 [N*D, W],
//     counted i64 [N*G]: COCO's per-image matching, one row per slot
//     (ops/fused/coco_eval.h).
//   coco_summary(scores, labels, rank, tp, ignored, gt_labels, counted
//     [, rank, tp, ignored of a per-class matching]) {iou_thresholds,
//     rec_thresholds, max_dets, micro, class_metrics} -> stats f64 [12],
//     classes i64 [K], map and mar per class f64 [K'] (finalize; the host
//     reads every value).
//   coco_bins(scores, labels, rank, tp, ignored, gt_labels, counted)
//     {num_classes, score_bins, max_dets, thresholds} -> rows i64
//     [R, 4 * T, 2], gt i64 [C, 5]: coco_match's rows placed in the
//     fixed-size histogram i64 [C, 4, 3, T, K, 2] (per class, area range,
//     tightest maxDets limit, threshold and score bin the true and false
//     positives) as (flat index, count) rows, a scatter state's partial; per class the
//     ground truth that counts in each area range and the rows seen
//     (ops/fused/coco_eval.h).
//   coco_bins_summary(hist, gt) {as coco_summary} -> as coco_summary.
//   panoptic_match(preds, target) {things, stuffs} -> counts i64
//     [N, 4, C], unknown i64 [N]: per image, panoptic quality's matching
//     reduced to per-category IoU sums (units of 2^-24), TP, FP and FN
//     (ops/fused/panoptic_match.h).
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "ops/attrs.h"
#include "ops/coco_layout.h"
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

// SummaryTypes are coco_summary's and coco_bins_summary's results: the
// twelve stats, the K classes seen and, with class_metrics, map and mar per
// class.
std::vector<TensorType> SummaryTypes(const CocoSummaryAttrs& attrs, const ir::Device& device) {
  const Dim k = Dim::Symbol("K");
  const Dim per = attrs.class_metrics.get() ? k : Dim::Fixed(0);
  return {{DType::kFloat64, {Dim::Fixed(12)}, device},
          {DType::kInt64, {k}, device},
          {DType::kFloat64, {per}, device},
          {DType::kFloat64, {per}, device}};
}

// HostSummary marks a finalize host algorithm whose shape is the data's.
void HostSummary(OpDef& d) {
  d.traits.syncs_host = true;
  d.traits.data_dependent_shape = true;
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
  AddOp(t, MakeOp(OpId::kCocoMatch, 7, 7, SpecsOf<CocoMatchAttrs>(),
                  [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
                    const auto attrs = AttrsOf<CocoMatchAttrs>(a);
                    const TensorType& b = in[0];
                    const TensorType& tb = in[3];
                    const bool ok =
                        b.rank() == 3 && b.shape[2] == Dim::Fixed(4) && tb.rank() == 3 &&
                        tb.shape[2] == Dim::Fixed(4) && b.dtype == DType::kFloat64 && tb.dtype == DType::kFloat64 &&
                        in[1].dtype == DType::kFloat64 && in[6].dtype == DType::kFloat64 &&
                        in[2].dtype == DType::kInt64 && in[4].dtype == DType::kInt64 && in[5].dtype == DType::kInt64 &&
                        in[1].shape == std::vector<Dim>{b.shape[0], b.shape[1]} && in[2].shape == in[1].shape &&
                        in[4].shape == std::vector<Dim>{tb.shape[0], tb.shape[1]} && in[5].shape == in[4].shape &&
                        in[6].shape == in[4].shape && b.shape[0] == tb.shape[0];
                    if (!ok) {
                      return absl::InvalidArgumentError(
                          "expects f64 boxes [N, D, 4], scores [N, D], i64 labels [N, D], f64 target boxes [N, G, 4], "
                          "i64 target labels and iscrowd [N, G], f64 target areas [N, G]");
                    }
                    if (attrs.iou_thresholds.empty()) return absl::InvalidArgumentError("needs IoU thresholds");
                    const Dim w = Dim::Fixed(CocoWords(static_cast<int64_t>(attrs.iou_thresholds.size())));
                    const Dim dets = FlatDim({b.shape[0], b.shape[1]}), gts = FlatDim({tb.shape[0], tb.shape[1]});
                    return std::vector<TensorType>{{DType::kInt64, {dets}, b.device},
                                                   {DType::kInt64, {dets, w}, b.device},
                                                   {DType::kInt64, {dets, w}, b.device},
                                                   {DType::kInt64, {gts}, b.device}};
                  }));
  AddOp(t, MakeOp(OpId::kPanopticMatch, 2, 2, SpecsOf<PanopticMatchAttrs>(),
                  [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
                    const auto attrs = AttrsOf<PanopticMatchAttrs>(a);
                    const TensorType& p = in[0];
                    if (!(p.shape == in[1].shape) || p.dtype != in[1].dtype || !ir::IsIntegral(p.dtype) ||
                        p.rank() < 3 || !(p.shape.back() == Dim::Fixed(2))) {
                      return absl::InvalidArgumentError(
                          "expects integer preds and target of one shape [N, ..., 2] (category, instance)");
                    }
                    std::vector<int64_t> all = attrs.things;
                    all.insert(all.end(), attrs.stuffs.begin(), attrs.stuffs.end());
                    const bool sorted = std::is_sorted(attrs.things.begin(), attrs.things.end()) &&
                                        std::is_sorted(attrs.stuffs.begin(), attrs.stuffs.end());
                    std::sort(all.begin(), all.end());
                    if (all.empty() || !sorted || std::adjacent_find(all.begin(), all.end()) != all.end()) {
                      return absl::InvalidArgumentError("needs sorted, distinct things and stuffs (one at least)");
                    }
                    const Dim c = Dim::Fixed(static_cast<int64_t>(all.size()));
                    return std::vector<TensorType>{{DType::kInt64, {p.shape[0], Dim::Fixed(4), c}, p.device},
                                                   {DType::kInt64, {p.shape[0]}, p.device}};
                  }));
  OpDef summary = MakeOp(
      OpId::kCocoSummary, 7, 10, SpecsOf<CocoSummaryAttrs>(),
      [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
        const auto attrs = AttrsOf<CocoSummaryAttrs>(a);
        if (in.size() != 7 && in.size() != 10) return absl::InvalidArgumentError("takes 7 or 10 inputs");
        const Dim w = Dim::Fixed(CocoWords(static_cast<int64_t>(attrs.iou_thresholds.size())));
        for (size_t base : {size_t{2}, size_t{7}}) {
          if (base >= in.size()) continue;
          if (in[base].rank() != 1 || in[base + 1].rank() != 2 || !(in[base + 1].shape[1] == w) ||
              !(in[base + 2].shape == in[base + 1].shape)) {
            return absl::InvalidArgumentError("expects rank [R] and tp, ignored [R, W] as coco_match makes them");
          }
        }
        if (in[0].dtype != DType::kFloat64 || in[0].rank() != 1 || in[5].rank() != 1 || in[6].rank() != 1) {
          return absl::InvalidArgumentError("expects f64 scores [R] and ground truth rows [Rg]");
        }
        if (attrs.max_dets.size() != 3 || attrs.iou_thresholds.empty() || attrs.rec_thresholds.empty()) {
          return absl::InvalidArgumentError("needs three max_dets and IoU and recall thresholds");
        }
        return SummaryTypes(attrs, in[0].device);
      });
  HostSummary(summary);
  AddOp(t, std::move(summary));
  AddOp(t, MakeOp(OpId::kCocoBins, 7, 7, SpecsOf<CocoBinsAttrs>(),
                  [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
                    const auto attrs = AttrsOf<CocoBinsAttrs>(a);
                    const Dim w = Dim::Fixed(CocoWords(attrs.thresholds));
                    const bool ok = in[0].dtype == DType::kFloat64 && in[0].rank() == 1 && in[1].shape == in[0].shape &&
                                    in[2].shape == in[0].shape && in[3].rank() == 2 && in[3].shape[1] == w &&
                                    in[4].shape == in[3].shape && in[5].rank() == 1 && in[6].shape == in[5].shape;
                    if (!ok) {
                      return absl::InvalidArgumentError(
                          "expects f64 scores [R], labels and rank [R], tp and ignored [R, W] as coco_match makes "
                          "them, ground-truth labels and counted [Rg]");
                    }
                    if (attrs.num_classes < 1 || attrs.score_bins < 1 || attrs.thresholds < 1 ||
                        attrs.max_dets.size() != 3) {
                      return absl::InvalidArgumentError("needs classes, score bins, thresholds and three max_dets");
                    }
                    const Dim c = Dim::Fixed(attrs.num_classes);
                    return std::vector<TensorType>{
                        {DType::kInt64,
                         {in[0].shape[0], Dim::Fixed(kCocoAreaRanges * attrs.thresholds), Dim::Fixed(2)},
                         in[0].device},
                        {DType::kInt64, {c, Dim::Fixed(kCocoAreaRanges + 1)}, in[0].device}};
                  }));
  OpDef bins_summary = MakeOp(
      OpId::kCocoBinsSummary, 2, 2, SpecsOf<CocoSummaryAttrs>(),
      [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
        const auto attrs = AttrsOf<CocoSummaryAttrs>(a);
        const TensorType& h = in[0];
        const int64_t t = static_cast<int64_t>(attrs.iou_thresholds.size());
        if (h.dtype != DType::kInt64 || h.rank() != 6 || !(h.shape[1] == Dim::Fixed(kCocoAreaRanges)) ||
            !(h.shape[2] == Dim::Fixed(3)) || !(h.shape[3] == Dim::Fixed(t)) || !(h.shape[5] == Dim::Fixed(2)) ||
            in[1].rank() != 2 || !(in[1].shape[0] == h.shape[0])) {
          return absl::InvalidArgumentError("expects hist [C, 4, 3, T, K, 2] and gt [C, 5] as coco_bins makes them");
        }
        if (attrs.max_dets.size() != 3 || attrs.rec_thresholds.empty() || attrs.micro.get()) {
          return absl::InvalidArgumentError("needs three max_dets and recall thresholds (macro only)");
        }
        return SummaryTypes(attrs, h.device);
      });
  HostSummary(bins_summary);
  AddOp(t, std::move(bins_summary));
}

}  // namespace tally::ops
