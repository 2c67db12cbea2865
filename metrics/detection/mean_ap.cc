// COCO mean average precision of boxes, as TorchMetrics 1.5.2's
// MeanAveragePrecision computes it with pycocotools:
//   mean_average_precision(box_format="xyxy", iou_type="bbox",
//       iou_thresholds=None, rec_thresholds=None,
//       max_detection_thresholds=None, class_metrics=False,
//       extended_summary=False, average="macro", backend="pycocotools")
// Row n is image n (TorchMetrics numbers images in update order): boxes
// [N, D, 4], scores [N, D], labels [N, D] (-1 pads a slot), target_boxes
// [N, G, 4], target_labels [N, G] (-1 pads), optional target_iscrowd and
// target_area [N, G]. The matching happens in the update (coco_match), so
// the states are per detection slot (score, label, rank in its image and
// class, one TP and one ignored bit per area range and IoU threshold) and
// per ground-truth slot (label, one bit per area range it counts in): never
// the boxes. Finalize (coco_summary) sorts, accumulates and summarizes. The
// result is TorchMetrics' dict: twelve values, map_per_class and
// mar_<max>_per_class (-1 without class_metrics), classes.
//
// Tally's extension score_bins=K (with num_classes=C, labels in [0, C))
// makes the state fixed-size: the rows are counted in the update
// (coco_bins) into per class, area range, tightest maxDets limit,
// threshold and score bin (width 1/K over [0, 1]) true- and false-positive
// counts, int64
// [C, 4, 3, T, K, 2], plus per-class ground-truth counts; a bin's
// detections enter the precision-recall curve together (coco_bins_summary).
// Its memory never grows with the images; when no two detections of a
// class share a bin, the values are pycocotools'. score_bins=exact16
// (exact_fp16, exact_bf16) gives each 16-bit score in [0, 1] a bin of its
// own: 15,361 float16 codes or 16,257 bfloat16 ones ("exact16": bfloat16
// for bfloat16 scores, else float16; wider scores are rounded to it). The
// histogram is a scatter state: an update adds only at its rows' cells, so
// its cost follows the rows, not K.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/curves/common.h"
#include "metrics/registry.h"
#include "metrics/regression/operands.h"
#include "ops/attrs.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ir::Reducer;
using ops::Expr;

// Linspace32 is float32 torch.linspace(start, end, steps) as ATen's scalar
// CPU kernel rounds it (torch >= 2.1), widened: TorchMetrics' default
// thresholds are these float32 values, not pycocotools' float64 ones.
std::vector<double> Linspace32(float start, float end, int steps) {
  const float step = (end - start) / static_cast<float>(steps - 1);
  std::vector<double> out;
  for (int i = 0; i < steps; ++i) {
    const float v =
        i < steps / 2 ? start + step * static_cast<float>(i) : end - step * static_cast<float>(steps - i - 1);
    out.push_back(v);
  }
  return out;
}

struct MapArgs {
  std::string box_format;
  std::vector<double> iou_thresholds, rec_thresholds;
  std::vector<int64_t> max_dets;
  bool class_metrics = false;
  bool micro = false;
  int64_t score_bins = 0;  // 0: the rows are kept
  Thresholds exact16;      // score_bins=exact16: its exact16 is "auto", "fp16" or "bf16"
  int64_t num_classes = 0;
};

absl::StatusOr<MapArgs> ReadArgs(SpecArgs& args) {
  MapArgs m;
  TALLY_ASSIGN_OR_RETURN(m.box_format, args.GetString("box_format", std::string("xyxy")));
  if (m.box_format != "xyxy" && m.box_format != "xywh" && m.box_format != "cxcywh") {
    return args.InvalidArgument(
        absl::StrCat("box_format must be 'xyxy', 'xywh' or 'cxcywh', got '", m.box_format, "'"));
  }
  TALLY_ASSIGN_OR_RETURN(const std::string iou_type, args.GetString("iou_type", std::string("bbox")));
  if (iou_type != "bbox") {
    return args.InvalidArgument(absl::StrCat("iou_type='", iou_type,
                                             "' is not supported: Tally evaluates boxes (bbox); masks (segm) are not "
                                             "taken"));
  }
  // An empty list is TorchMetrics' `or` default too.
  TALLY_ASSIGN_OR_RETURN(m.iou_thresholds, args.GetDoubleList("iou_thresholds", std::vector<double>{}));
  if (m.iou_thresholds.empty()) m.iou_thresholds = Linspace32(0.5f, 0.95f, 10);
  TALLY_ASSIGN_OR_RETURN(m.rec_thresholds, args.GetDoubleList("rec_thresholds", std::vector<double>{}));
  if (m.rec_thresholds.empty()) m.rec_thresholds = Linspace32(0.0f, 1.0f, 101);
  TALLY_ASSIGN_OR_RETURN(m.max_dets, args.GetIntList("max_detection_thresholds", std::vector<int64_t>{}));
  if (m.max_dets.empty()) m.max_dets = {1, 10, 100};
  if (m.max_dets.size() != 3) {
    return args.InvalidArgument(absl::StrCat("max_detection_thresholds must hold 3 values, got ", m.max_dets.size()));
  }
  std::sort(m.max_dets.begin(), m.max_dets.end());
  if (m.max_dets[0] < 1) {
    return args.InvalidArgument(absl::StrCat("max_detection_thresholds must be positive, got ", m.max_dets[0]));
  }
  TALLY_ASSIGN_OR_RETURN(m.class_metrics, args.GetBool("class_metrics", false));
  TALLY_ASSIGN_OR_RETURN(const bool extended, args.GetBool("extended_summary", false));
  if (extended) {
    return args.InvalidArgument(
        "extended_summary=true is not supported: the states keep no IoU matrices (matching happens in the update)");
  }
  TALLY_ASSIGN_OR_RETURN(const std::string average, args.GetString("average", std::string("macro")));
  if (average != "macro" && average != "micro") {
    return args.InvalidArgument(absl::StrCat("average must be 'macro' or 'micro', got '", average, "'"));
  }
  m.micro = average == "micro";
  const ArgValue* bins_arg = args.Find("score_bins", "none, a positive int, exact16, exact_fp16 or exact_bf16", "none");
  std::optional<int64_t> bins;
  if (const auto* name = bins_arg == nullptr ? nullptr : std::get_if<std::string>(bins_arg)) {
    m.exact16.exact16 = Exact16Mode(*name);
    if (m.exact16.exact16.empty()) {
      return args.InvalidArgument(absl::StrCat(
          "score_bins must be none, a positive integer, exact16, exact_fp16 or exact_bf16, got '", *name, "'"));
    }
    bins = 1;  // the code count, once the scores' dtype is known
  } else if (const auto* n = bins_arg == nullptr ? nullptr : std::get_if<int64_t>(bins_arg)) {
    bins = *n;
  } else if (bins_arg != nullptr && !std::holds_alternative<std::monostate>(*bins_arg)) {
    return args.InvalidArgument(
        absl::StrCat("score_bins must be none, a positive integer, exact16, exact_fp16 or exact_bf16, got ",
                     ArgValueToString(*bins_arg)));
  }
  TALLY_ASSIGN_OR_RETURN(const std::optional<int64_t> classes, args.GetOptionalInt("num_classes"));
  if (bins.has_value()) {
    if (*bins < 1) return args.InvalidArgument(absl::StrCat("score_bins must be a positive integer, got ", *bins));
    if (!classes.has_value() || *classes < 1) {
      return args.InvalidArgument("score_bins needs num_classes (a positive integer: labels lie in [0, num_classes))");
    }
    if (m.micro) return args.InvalidArgument("score_bins takes average='macro' only");
    m.score_bins = *bins;
    m.num_classes = *classes;
  } else if (classes.has_value()) {
    return args.InvalidArgument("num_classes is read with score_bins only");
  }
  // TorchMetrics' COCO backend: pycocotools' rules are these; faster_coco_eval
  // departs from them (it takes map at the largest maxDets).
  TALLY_ASSIGN_OR_RETURN(const std::string backend, args.GetString("backend", std::string("pycocotools")));
  if (backend != "pycocotools") {
    return args.InvalidArgument(absl::StrCat("backend='", backend,
                                             "' is not supported: Tally computes pycocotools' values (backend="
                                             "'pycocotools')"));
  }
  return m;
}

// Boxes declares a box input [N, K, 4] and returns it as COCO's xywh in
// float64, converted in the input's dtype first as torchvision's
// box_convert does (TorchMetrics widens after converting).
Expr Boxes(MetricBuilder& b, const std::string& name, const std::string& format) {
  const dsl::InputSpec* spec = b.FindInput(name);
  Expr x = b.RaggedInput(name, 1, name == "boxes" ? "D" : "G");
  if (!b.ok()) return x;
  if (spec->shape.size() != 3 || spec->shape[2] != 4 || !ir::IsFloating(spec->dtype)) {
    b.FailInput(name, absl::StrCat("expected floating boxes [N, ", name == "boxes" ? "D" : "G", ", 4], got ",
                                   ir::DTypeName(spec->dtype), " ", ShapeText(spec->shape)));
    return x;
  }
  if (spec->dtype == DType::kFloat16 || spec->dtype == DType::kBFloat16) x = ops::Cast(x, DType::kFloat32);
  Expr c[4];
  for (int k = 0; k < 4; ++k) c[k] = ops::Select(x, 2, k);
  if (format == "cxcywh") {
    Expr cx = c[0], cy = c[1];
    Expr hw = c[2] * 0.5, hh = c[3] * 0.5;
    c[0] = cx - hw;
    c[1] = cy - hh;
    c[2] = cx + hw;
    c[3] = cy + hh;
  }
  if (format != "xywh") {
    c[2] = c[2] - c[0];
    c[3] = c[3] - c[1];
  }
  // Reassembled exactly: each column times its one-hot row, summed.
  Expr slot = ops::Arange(x, 4);
  Expr out;
  for (int k = 0; k < 4; ++k) {
    Expr part = ops::Unsqueeze(F64(c[k]), 2) * F64(slot == static_cast<double>(k));
    out = k == 0 ? part : out + part;
  }
  return out;
}

// PerSlot declares a [N, K] input of the kind `floating` says, K the
// boxes' ragged dim.
Expr PerSlot(MetricBuilder& b, const std::string& name, const std::string& symbol, bool floating) {
  const dsl::InputSpec* spec = b.FindInput(name);
  Expr x = b.RaggedInput(name, 1, symbol);
  if (!b.ok()) return x;
  const bool kind_ok = floating ? ir::IsFloating(spec->dtype) : ir::IsIntegral(spec->dtype);
  if (spec->shape.size() != 2 || !kind_ok) {
    b.FailInput(name, absl::StrCat("expected ", floating ? "floating" : "integer", " values [N, ", symbol, "], got ",
                                   ir::DTypeName(spec->dtype), " ", ShapeText(spec->shape)));
  }
  return x;
}

absl::StatusOr<dsl::Metric> Build(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(const MapArgs m, ReadArgs(args));
  MetricBuilder b(args.metric_name(), sig, device);
  Expr boxes = Boxes(b, "boxes", m.box_format);
  Expr scores = PerSlot(b, "scores", "D", true);
  Expr labels = PerSlot(b, "labels", "D", false);
  Expr tboxes = Boxes(b, "target_boxes", m.box_format);
  Expr tlabels = PerSlot(b, "target_labels", "G", false);
  Expr crowd, area;
  if (b.FindInput("target_iscrowd") != nullptr) crowd = PerSlot(b, "target_iscrowd", "G", false);
  if (b.FindInput("target_area") != nullptr) area = PerSlot(b, "target_area", "G", true);
  if (!b.ok()) return b.status();
  const std::vector<int64_t>& d_shape = b.FindInput("boxes")->shape;
  const std::vector<int64_t>& g_shape = b.FindInput("target_boxes")->shape;
  for (const char* name : {"scores", "labels"}) {
    const std::vector<int64_t>& s = b.FindInput(name)->shape;
    if (s[0] != d_shape[0] || s[1] != d_shape[1]) {
      b.FailInput(name, absl::StrCat("expected [N, D] = ", ShapeText({d_shape[0], d_shape[1]}), " as boxes, got ",
                                     ShapeText(s)));
    }
  }
  for (const char* name : {"target_labels", "target_iscrowd", "target_area"}) {
    const dsl::InputSpec* spec = b.FindInput(name);
    if (spec == nullptr) continue;
    if (spec->shape[0] != g_shape[0] || spec->shape[1] != g_shape[1]) {
      b.FailInput(name, absl::StrCat("expected [N, G] = ", ShapeText({g_shape[0], g_shape[1]}),
                                     " as target_boxes, got ", ShapeText(spec->shape)));
    }
  }
  if (g_shape[0] != d_shape[0]) {
    b.FailInput("target_boxes", absl::StrCat("has ", g_shape[0], " images, boxes ", d_shape[0]));
  }
  if (!b.ok()) return b.status();
  labels = ops::Cast(labels, DType::kInt64);
  tlabels = ops::Cast(tlabels, DType::kInt64);
  crowd = crowd.valid() ? ops::Cast(crowd, DType::kInt64) : ops::FullLike(tlabels, 0, DType::kInt64);
  // COCO ranges ground truth by its given area where that is > 0, else by
  // the box's (TorchMetrics stores zeros when no area is given).
  Expr box_area = ops::Select(tboxes, 2, 2) * ops::Select(tboxes, 2, 3);
  area = area.valid() ? ops::Where(F64(area) > 0.0, F64(area), box_area) : box_area;
  Expr score64 = F64(scores);
  // A NaN score has no place in the ranking (pycocotools' mergesort puts it
  // last, after every real score): refused, as other metrics refuse NaN.
  b.Check("scores", "{n} NaN scores of detections (slots whose label is not -1)",
          ops::Sum(ops::Where(labels >= 0.0, ops::Cast(ops::IsNan(score64), DType::kInt64), 0.0)));

  auto match = [&](bool micro) {
    ops::CocoMatchAttrs a;
    a.iou_thresholds = m.iou_thresholds;
    a.max_det = m.max_dets[2];
    a.micro = micro;
    return b.OpN(ops::OpId::kCocoMatch, {boxes, score64, labels, tboxes, tlabels, crowd, area}, ops::ToAttrMap(a));
  };
  auto keep = [&](const std::string& suffix, const std::vector<Expr>& matched) {
    const int64_t words = matched[1].type().shape[1].size;  // coco_match's bit words per row
    State rank = b.AddState("rank" + suffix, DType::kInt64, {}, Reducer::kCat);
    State tp = b.AddState("tp" + suffix, DType::kInt64, {words}, Reducer::kCat);
    State ig = b.AddState("ignored" + suffix, DType::kInt64, {words}, Reducer::kCat);
    b.Accumulate(rank, matched[0]);
    b.Accumulate(tp, matched[1]);
    b.Accumulate(ig, matched[2]);
    return std::vector<Expr>{b.Read(rank), b.Read(tp), b.Read(ig)};
  };
  std::vector<Expr> matched = match(m.micro);
  if (!b.ok()) return b.status();
  ops::CocoSummaryAttrs sa;
  sa.iou_thresholds = m.iou_thresholds;
  sa.rec_thresholds = m.rec_thresholds;
  sa.max_dets = m.max_dets;
  sa.micro = m.micro;
  sa.class_metrics = m.class_metrics;
  std::vector<Expr> summary;
  if (m.score_bins > 0) {
    for (const auto& [name, l] : {std::pair<const char*, Expr>{"labels", labels}, {"target_labels", tlabels}}) {
      b.Check(name, absl::StrCat("{n} labels outside [0, ", m.num_classes, ") (num_classes; -1 pads a slot)"),
              ops::CountOutside(l, -1, m.num_classes));
    }
    ops::CocoBinsAttrs ba;
    ba.num_classes = m.num_classes;
    ba.score_bins = m.score_bins;
    ba.max_dets = m.max_dets;
    ba.thresholds = static_cast<int64_t>(m.iou_thresholds.size());
    Expr bin_scores = ops::Flatten(score64);
    if (!m.exact16.exact16.empty()) {
      // A bin per 16-bit code in [0, 1]: a score's code past +0's (0x8000
      // in score_code16's order) is its bin, placed at the bin's middle.
      const std::string format = Exact16Format(m.exact16, b.FindInput("scores")->dtype);
      ba.score_bins = (format == "bf16" ? 0x3F80 : 0x3C00) + 1;  // the codes of [0, 1]: up to 1.0's bits
      Expr code = F64(ops::ScoreCode16(bin_scores, format)) - 32768.0;
      bin_scores =
          (ops::Clamp(code, 0.0, static_cast<double>(ba.score_bins - 1)) + 0.5) / static_cast<double>(ba.score_bins);
    }
    std::vector<Expr> counts =
        b.OpN(ops::OpId::kCocoBins,
              {bin_scores, ops::Flatten(labels), matched[0], matched[1], matched[2], ops::Flatten(tlabels), matched[3]},
              ops::ToAttrMap(ba));
    if (!b.ok()) return b.status();
    State hist =
        b.AddState("histogram", DType::kInt64, {m.num_classes, 4, 3, ba.thresholds, ba.score_bins, 2}, Reducer::kSum);
    State gt = b.AddState("ground_truth", DType::kInt64, {m.num_classes, 5}, Reducer::kSum);
    b.AccumulateAt(hist, counts[0]);
    b.Accumulate(gt, counts[1]);
    summary = b.OpN(ops::OpId::kCocoBinsSummary, {b.Read(hist), b.Read(gt)}, ops::ToAttrMap(sa));
  } else {
    State score_rows = b.AddState("scores", DType::kFloat64, {}, Reducer::kCat);
    State label_rows = b.AddState("labels", DType::kInt64, {}, Reducer::kCat);
    State gt_labels = b.AddState("target_labels", DType::kInt64, {}, Reducer::kCat);
    State counted = b.AddState("target_counted", DType::kInt64, {}, Reducer::kCat);
    b.Accumulate(score_rows, ops::Flatten(score64));
    b.Accumulate(label_rows, ops::Flatten(labels));
    b.Accumulate(gt_labels, ops::Flatten(tlabels));
    b.Accumulate(counted, matched[3]);
    std::vector<Expr> summary_in = {b.Read(score_rows), b.Read(label_rows)};
    for (const Expr& e : keep("", matched)) summary_in.push_back(e);
    summary_in.push_back(b.Read(gt_labels));
    summary_in.push_back(b.Read(counted));
    // Per-class values come from per-class matching, a second one under micro.
    if (m.micro && m.class_metrics) {
      for (const Expr& e : keep("_per_class", match(false))) summary_in.push_back(e);
    }
    summary = b.OpN(ops::OpId::kCocoSummary, summary_in, ops::ToAttrMap(sa));
  }
  if (!b.ok()) return b.status();
  std::vector<dsl::Parts> parts;
  for (int i = 0; i < 12; ++i) parts.emplace_back(ops::Select(summary[0], 0, i));
  Expr none = ops::Full(summary[0], {}, -1.0, DType::kFloat64);
  parts.emplace_back(m.class_metrics ? summary[2] : none);
  parts.emplace_back(m.class_metrics ? summary[3] : none);
  parts.emplace_back(summary[1]);
  b.Output(dsl::Parts(std::move(parts)));
  const std::vector<int64_t>& md = m.max_dets;
  b.SetResultKeys({"map", "map_50", "map_75", "map_small", "map_medium", "map_large", absl::StrCat("mar_", md[0]),
                   absl::StrCat("mar_", md[1]), absl::StrCat("mar_", md[2]), "mar_small", "mar_medium", "mar_large",
                   "map_per_class", absl::StrCat("mar_", md[2], "_per_class"), "classes"});
  return b.Finish();
}

}  // namespace

void RegisterDetectionMetrics(std::vector<MetricInfo>& out) {
  out.push_back({"mean_average_precision",
                 "detection",
                 {"boxes", "scores", "labels", "target_boxes", "target_labels", "target_iscrowd", "target_area"},
                 Build});
}

}  // namespace tally::metrics
