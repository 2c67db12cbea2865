// Segmentation overlap scores of predicted against target masks, with
// TorchMetrics' names, arguments and values:
//   mean_iou(num_classes, include_background=True, per_class=False,
//            input_format="one-hot")                              (1.5.2)
//   generalized_dice_score(num_classes, include_background=True,
//            per_class=False, weight_type="square",
//            input_format="one-hot")                              (1.5.2)
//   dice_score(num_classes, include_background=True, average="macro",
//            aggregation_level="samplewise", input_format="one-hot") (1.9)
// Masks are class ids [N, ...] (input_format=index) or one 0/1 channel per
// class [N, num_classes, ...] (one-hot; dice_score also takes floating
// scores there, argmaxed over the classes). Every score starts from one
// class_overlap op: per sample and class, the int64 counts of pixels in
// both masks, in preds and in target, read in one pass (never a one-hot
// copy of index masks, never float32 counts). The states then hold what
// TorchMetrics' do, as exact sums:
//   mean_iou: the sum of each update's mean over samples and the number of
//     updates (TorchMetrics averages batch means; an empty update counts no
//     batch here, where TorchMetrics' mean of nothing would poison it);
//   generalized_dice_score: the sum of per-sample scores and the samples;
//   dice_score: per class the int64 sums (aggregation_level=global), or the
//     sum and count of the per-sample values that are not NaN (samplewise:
//     TorchMetrics' final nanmean over samples).
// A one-value result is a scalar (TorchMetrics' mean_iou and
// generalized_dice_score return shape [1]).
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "metrics/regression/operands.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ops::Expr;

// Masks are the mask arguments every score takes.
struct Masks {
  int64_t num_classes = 0;
  bool include_background = true;
  bool index = false;
};

absl::StatusOr<Masks> ReadMasks(SpecArgs& args) {
  Masks m;
  TALLY_ASSIGN_OR_RETURN(m.num_classes, args.GetInt("num_classes"));
  if (m.num_classes < 1) {
    return args.InvalidArgument(absl::StrCat("num_classes must be a positive integer, got ", m.num_classes));
  }
  TALLY_ASSIGN_OR_RETURN(m.include_background, args.GetBool("include_background", true));
  TALLY_ASSIGN_OR_RETURN(const std::string format, args.GetEnum("input_format", {"one-hot", "index"}, "one-hot"));
  m.index = format == "index";
  return m;
}

// Overlap is class_overlap's counts in float64, each [N, C'], and C'.
struct Overlap {
  Expr both, pred, target;
  int64_t classes = 0;
};

// ReadOverlap declares the masks, checks them (shapes from metadata, values
// by deferred counters) and counts them. With `scores` (dice_score) a
// one-hot side may hold floating scores, argmaxed over the classes and, when
// the other side is 0/1 channels, one-hot encoded (TorchMetrics 1.9's
// _format_logits).
bool ReadOverlap(MetricBuilder& b, const Masks& m, bool scores, Overlap& out) {
  const int64_t c = m.num_classes;
  const dsl::InputSpec* specs[2] = {b.FindInput("preds"), b.FindInput("target")};
  Expr sides[2] = {b.RawInput("preds"), b.RawInput("target")};
  if (!b.ok()) return false;
  const std::vector<int64_t>& shape = specs[0]->shape;
  if (specs[1]->shape != shape) {
    b.FailInput("target",
                absl::StrCat("expected the shape of preds ", ShapeText(shape), ", got ", ShapeText(specs[1]->shape)));
    return false;
  }
  const int64_t rank = static_cast<int64_t>(shape.size());
  if (rank < (m.index ? 2 : 3)) {
    b.FailInput("preds", absl::StrCat(m.index ? "expected index masks [N, ...], got "
                                              : "expected one-hot masks [N, num_classes, ...], got ",
                                      ShapeText(shape)));
    return false;
  }
  if (!m.index && shape[1] != c) {
    b.FailInput("preds", absl::StrCat("one-hot masks have ", shape[1], " channels but num_classes is ", c));
    return false;
  }
  // With every class of index masks counted, ids out of range are the
  // pixels the counts leave out: no second pass over the masks.
  const bool counts_check_ids = m.index && m.include_background;
  bool floating[2];
  for (int k = 0; k < 2; ++k) {
    const char* name = k == 0 ? "preds" : "target";
    floating[k] = ir::IsFloating(specs[k]->dtype);
    if (floating[k]) {
      if (!scores || m.index) {
        b.FailInput(name, absl::StrCat("expected integer or bool masks, got ", ir::DTypeName(specs[k]->dtype)));
        return false;
      }
      sides[k] = ops::Argmax(sides[k], 1);
      continue;
    }
    sides[k] = ops::Cast(sides[k], DType::kInt64);
    if (!counts_check_ids) {
      b.Check(name, m.index ? absl::StrCat("{n} values outside [0, ", c, ")") : "{n} values other than 0 and 1",
              ops::CountOutside(sides[k], 0, m.index ? c : 2));
    }
  }
  bool ids = m.index || (floating[0] && floating[1]);
  if (!ids) {
    // Argmaxed scores against 0/1 channels: the ids one-hot encoded, the
    // class dim moved to dim 1.
    for (int k = 0; k < 2; ++k) {
      if (!floating[k]) continue;
      Expr hot = ops::OneHot(sides[k], c);  // [N, ..., C]
      for (int64_t d = rank - 1; d > 1; --d) hot = ops::Transpose(hot, d, d - 1);
      sides[k] = ops::Cast(hot, DType::kInt64);
    }
  }
  Expr counts = ops::ClassOverlap(sides[0], sides[1], c, ids, m.include_background);  // [N, 3, C']
  if (counts_check_ids) {
    int64_t pixels = 1;
    for (int64_t d = 1; d < rank; ++d) pixels *= shape[d];
    for (int k = 0; k < 2; ++k) {
      Expr counted = ops::Sum(ops::Select(counts, 1, k + 1));
      Expr all = F64(ops::Size(counts, 0)) * static_cast<double>(pixels);
      b.Check(k == 0 ? "preds" : "target", absl::StrCat("{n} values outside [0, ", c, ")"),
              ops::Cast(all - F64(counted), DType::kInt64));  // exact below 2^53 pixels
    }
  }
  out.both = F64(ops::Select(counts, 1, 0));
  out.pred = F64(ops::Select(counts, 1, 1));
  out.target = F64(ops::Select(counts, 1, 2));
  out.classes = m.include_background || c == 1 ? c : c - 1;
  return b.ok();
}

// Rows is the number of samples of an update, float64.
Expr Rows(Expr per_sample) { return F64(ops::Size(per_sample, 0)); }

absl::StatusOr<dsl::Metric> BuildMeanIou(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(const Masks m, ReadMasks(args));
  TALLY_ASSIGN_OR_RETURN(const bool per_class, args.GetBool("per_class", false));
  MetricBuilder b(args.metric_name(), sig, device);
  Overlap o;
  if (!ReadOverlap(b, m, /*scores=*/false, o)) return b.status();
  // Per sample and class: intersection over union, 0 for an empty union.
  Expr iou = ops::SafeDiv(o.both, o.target + o.pred - o.both);  // [N, C']
  Expr per_sample = per_class ? iou : ops::Sum(iou, {1}) / static_cast<double>(o.classes);
  Expr n = Rows(iou);
  std::vector<int64_t> shape;
  if (per_class) shape = {o.classes};
  State score = b.AddState("score", DType::kFloat64, shape, ir::Reducer::kSum);
  State batches = b.AddState("num_batches", DType::kInt64, {}, ir::Reducer::kSum);
  b.Accumulate(score, ops::Where(n > 0.0, ops::Sum(per_sample, {0}) / n, 0.0));
  b.Accumulate(batches, ops::Cast(n > 0.0, DType::kInt64));
  b.Output(b.Read(score) / F64(b.Read(batches)));
  return b.Finish();
}

absl::StatusOr<dsl::Metric> BuildGeneralizedDice(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(const Masks m, ReadMasks(args));
  TALLY_ASSIGN_OR_RETURN(const bool per_class, args.GetBool("per_class", false));
  TALLY_ASSIGN_OR_RETURN(const std::string weight_type,
                         args.GetEnum("weight_type", {"square", "simple", "linear"}, "square"));
  MetricBuilder b(args.metric_name(), sig, device);
  Overlap o;
  if (!ReadOverlap(b, m, /*scores=*/false, o)) return b.status();
  Expr absent = o.target == 0.0;
  Expr weights = weight_type == "linear"   ? ops::FullLike(o.target, 1.0, DType::kFloat64)
                 : weight_type == "simple" ? 1.0 / o.target
                                           : 1.0 / (o.target * o.target);
  if (weight_type != "linear") {
    // TorchMetrics' replacement of the infinite weights (absent classes):
    // zeros first, then flat position i = n C' + c takes the largest weight
    // over the samples of class i // N (its index runs over a transposed
    // copy, so a class's replacement comes from another class unless N is 1).
    Expr finite = ops::Where(absent, 0.0, weights);
    Expr largest = ops::Max(finite, {0});  // [C']
    Expr ones = ops::FullLike(o.target, 1.0, DType::kInt64);
    Expr flat = (ops::Cumsum(ones, 0) - 1.0) * static_cast<double>(o.classes) + (ops::Cumsum(ones, 1) - 1.0);
    Expr source = ops::Cast(F64(flat) / Rows(o.target), DType::kInt64);  // floor: exact below 2^52
    weights = ops::Where(absent, ops::Take(largest, source), finite);
  }
  Expr numerator = 2.0 * o.both * weights;
  Expr denominator = (o.target + o.pred) * weights;
  Expr per_sample = per_class ? ops::SafeDiv(numerator, denominator)
                              : ops::SafeDiv(ops::Sum(numerator, {1}), ops::Sum(denominator, {1}));
  std::vector<int64_t> shape;
  if (per_class) shape = {o.classes};
  State score = b.AddState("score", DType::kFloat64, shape, ir::Reducer::kSum);
  State samples = b.AddState("samples", DType::kInt64, {}, ir::Reducer::kSum);
  b.Accumulate(score, ops::Sum(per_sample, {0}));
  b.Accumulate(samples, ops::Size(per_sample, 0));
  b.Output(b.Read(score) / F64(b.Read(samples)));
  return b.Finish();
}

// DiceOf is TorchMetrics 1.9's _dice_score_compute for one row of samples
// (or the global sums as one row): [N] for micro, macro and weighted, [N, C']
// for none; 0/0 is NaN.
Expr DiceOf(const std::string& average, Expr numerator, Expr denominator, Expr support) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (average == "micro") return ops::SafeDiv(ops::Sum(numerator, {1}), ops::Sum(denominator, {1}), nan);
  Expr dice = ops::SafeDiv(numerator, denominator, nan);
  if (average == "none") return dice;
  Expr valid = !ops::IsNan(dice);
  if (average == "macro") return ops::Sum(ops::Where(valid, dice, 0.0), {1}) / ops::Sum(F64(valid), {1});
  // weighted: the support's share of each class (NaN without support), the
  // NaN products left out, NaN when every class is.
  Expr share = ops::SafeDiv(support, ops::Sum(support, {1}, /*keepdim=*/true), nan);
  Expr product = dice * share;
  Expr sum = ops::Sum(ops::Where(ops::IsNan(product), 0.0, product), {1});
  return ops::Where(ops::Any(valid, {1}), sum, nan);
}

absl::StatusOr<dsl::Metric> BuildDice(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(const Masks m, ReadMasks(args));
  TALLY_ASSIGN_OR_RETURN(const std::string average,
                         args.GetEnum("average", {"micro", "macro", "weighted", "none"}, "macro"));
  TALLY_ASSIGN_OR_RETURN(const std::string level,
                         args.GetEnum("aggregation_level", {"samplewise", "global"}, "samplewise"));
  MetricBuilder b(args.metric_name(), sig, device);
  Overlap o;
  if (!ReadOverlap(b, m, /*scores=*/true, o)) return b.status();
  Expr numerator = 2.0 * o.both, denominator = o.pred + o.target;
  if (level == "global") {
    // Exact per-class sums; the score at finalize.
    State sums[3] = {b.AddState("numerator", DType::kInt64, {o.classes}, ir::Reducer::kSum),
                     b.AddState("denominator", DType::kInt64, {o.classes}, ir::Reducer::kSum),
                     b.AddState("support", DType::kInt64, {o.classes}, ir::Reducer::kSum)};
    const Expr parts[3] = {numerator, denominator, o.target};
    for (int k = 0; k < 3; ++k) b.Accumulate(sums[k], ops::Sum(parts[k], {0}));
    auto row = [&](int k) { return ops::Unsqueeze(F64(b.Read(sums[k])), 0); };
    b.Output(ops::Squeeze(DiceOf(average, row(0), row(1), row(2)), 0));
    return b.Finish();
  }
  // Samplewise: the mean over samples of the values that are not NaN.
  Expr values = DiceOf(average, numerator, denominator, o.target);
  Expr valid = !ops::IsNan(values);
  std::vector<int64_t> shape;
  if (average == "none") shape = {o.classes};
  State sum = b.AddState("score_sum", DType::kFloat64, shape, ir::Reducer::kSum);
  State count = b.AddState("scored", DType::kInt64, shape, ir::Reducer::kSum);
  b.Accumulate(sum, ops::Sum(ops::Where(valid, values, 0.0), {0}));
  b.Accumulate(count, ops::Sum(ops::Cast(valid, DType::kInt64), {0}));
  b.Output(b.Read(sum) / F64(b.Read(count)));
  return b.Finish();
}

}  // namespace

void RegisterSegmentationMetrics(std::vector<MetricInfo>& out) {
  out.push_back({"mean_iou", "segmentation", {"preds", "target"}, BuildMeanIou});
  out.push_back({"generalized_dice_score", "segmentation", {"preds", "target"}, BuildGeneralizedDice});
  out.push_back({"dice_score", "segmentation", {"preds", "target"}, BuildDice});
}

}  // namespace tally::metrics
