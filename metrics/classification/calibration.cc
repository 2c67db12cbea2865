// Calibration metrics: binary_calibration_error and
// multiclass_calibration_error (TorchMetrics 1.5 functional names and
// arguments: n_bins=15, norm="l1"|"l2"|"max", ignore_index=None,
// validate_args; multiclass also num_classes).
//
// Input: binary float `preds` (N, ...) (probabilities, or logits: any kept
// element outside [0, 1] sigmoids the batch) and integer/bool `target` in
// {0, 1} of the same shape; multiclass float `preds` (N, C, ...) (softmax
// over dim 1 when any kept element is outside [0, 1], TorchMetrics 1.5.2's
// rule) and integer `target` (N, ...) in [0, C). Elements whose target is
// `ignore_index` are dropped; other targets out of range are counted by a
// deferred check and dropped.
//
// Binning (TorchMetrics' _binning_bucketize): the confidence of an element
// is its probability (binary) or its top probability as float32
// (multiclass); its accuracy is the target (binary) or argmax == target
// (multiclass). With boundaries b = torch.linspace(0, 1, n_bins + 1) in the
// confidence dtype, an element goes to bin bucketize(conf, b, right=True) - 1:
// bin i holds b[i] <= conf < b[i+1], and a confidence of exactly 1.0 has a
// bin n_bins of its own. The state is n_bins + 1 counts, confidence sums
// (f64) and accuracy sums (i64), all summed: constant memory, sync-free
// update and finalize.
//
// Finalize, per bin: acc = acc_sum / count and conf = conf_sum / count (0 in
// an empty bin, TorchMetrics' nan_to_num), prop = count / total; l1 =
// sum |acc - conf| * prop, max = max |acc - conf|, l2 = sqrt(sum (acc -
// conf)^2 * prop) (0 unless that sum is > 0). No data gives l1 NaN, l2 0 and
// max 0, as in TorchMetrics. The result has the confidence dtype.
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/curves/common.h"
#include "metrics/registry.h"
#include "metrics/weights.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ir::Reducer;
using ops::Expr;

struct Args {
  int64_t num_classes = 0;
  int64_t n_bins = 15;
  std::string norm = "l1";
  std::optional<int64_t> ignore_index;
};

absl::StatusOr<Args> ReadArgs(Task task, SpecArgs& args) {
  Args a;
  if (task == Task::kMulticlass) {
    TALLY_ASSIGN_OR_RETURN(a.num_classes, args.GetInt("num_classes"));
    if (a.num_classes < 2) {
      return args.InvalidArgument(absl::StrCat("num_classes must be an integer >= 2, got ", a.num_classes));
    }
  }
  TALLY_ASSIGN_OR_RETURN(a.n_bins, args.GetInt("n_bins", 15));
  if (a.n_bins < 1) return args.InvalidArgument(absl::StrCat("n_bins must be an integer >= 1, got ", a.n_bins));
  TALLY_ASSIGN_OR_RETURN(a.norm, args.GetEnum("norm", {"l1", "l2", "max"}, "l1"));
  TALLY_ASSIGN_OR_RETURN(a.ignore_index, args.GetOptionalInt("ignore_index"));
  // Accepted for compatibility: validation is always on, deferred to Compute.
  TALLY_RETURN_IF_ERROR(args.GetBool("validate_args", true).status());
  return a;
}

std::string ShapeString(const std::vector<int64_t>& s) { return absl::StrCat("[", absl::StrJoin(s, ", "), "]"); }

// Binned is one batch's confidences, accuracies (i64 0/1) and whether each
// element counts, all 1-D.
struct Binned {
  Expr conf, acc, keep;
};

// BinaryBins reads binary preds/target (TorchMetrics'
// _binary_confusion_matrix_format with convert_to_labels=False).
bool BinaryBins(MetricBuilder& b, const Args& a, Binned& out) {
  BinaryInputs in;
  if (!ReadBinaryInputs(a.ignore_index, /*cast_f32=*/false, b, in)) return false;
  out.conf = in.probs;
  out.acc = ops::Where(in.valid, in.target, int64_t{0});
  out.keep = in.valid;
  return b.ok();
}

// MulticlassInputs reads (N, C, ...) scores and (N, ...) labels
// (_multiclass_confusion_matrix_format with convert_to_labels=False, then
// _multiclass_calibration_error_update).
bool MulticlassInputs(MetricBuilder& b, const Args& a, Binned& out) {
  Expr preds = b.Input("preds");
  Expr target = b.Input("target");
  if (!b.ok()) return false;
  const auto& ps = b.FindInput("preds")->shape;
  const auto& ts = b.FindInput("target")->shape;
  const int64_t c = a.num_classes;
  if (ts.empty()) {
    b.FailInput("target", "expected a tensor of shape (N, ...), got a scalar");
  } else if (ir::IsFloating(target.dtype())) {
    b.FailInput("target", absl::StrCat("expected integer or bool labels, got ", ir::DTypeName(target.dtype())));
  } else if (!ir::IsFloating(preds.dtype())) {
    b.FailInput("preds", absl::StrCat("expected floating point probabilities or logits of shape (N, ", c,
                                      ", ...), got ", ir::DTypeName(preds.dtype())));
  } else if (ps.size() != ts.size() + 1 || ps[1] != c || !std::equal(ps.begin() + 2, ps.end(), ts.begin() + 1) ||
             ps[0] != ts[0]) {
    b.FailInput("preds", absl::StrCat("expected scores of shape (N, ", c, ", ...) for num_classes=", c,
                                      " and target's shape ", ShapeString(ts), ", got ", ShapeString(ps)));
  }
  if (!b.ok()) return false;
  Expr t = ops::Cast(target, DType::kInt64);
  Expr valid = t >= int64_t{0} && t < static_cast<double>(c);
  Expr bad = !valid;
  if (a.ignore_index) {
    Expr ignored = t == static_cast<double>(*a.ignore_index);
    bad = bad && !ignored;
    valid = valid && !ignored;
  }
  b.Check("target", absl::StrCat("{n} values outside [0, ", c, ")"), ops::Sum(ops::Cast(bad, DType::kInt64)));
  CountNanScores(b, ops::IsNan(preds) && ops::Unsqueeze(valid, 1));
  // TorchMetrics 1.5.2: softmax over the classes unless every kept score is
  // in [0, 1].
  Expr outside = !(preds >= 0.0 && preds <= 1.0) && ops::Unsqueeze(valid, 1);
  Expr probs = ops::Where(ops::Any(outside), ops::Softmax(preds, 1), preds);
  // preds.max(dim=1): the first maximum wins ties; confidences are float32.
  Expr conf = ops::Cast(ops::Max(probs, {1}), DType::kFloat32);
  Expr acc = ops::Cast(ops::Argmax(probs, 1) == t, DType::kInt64);
  if (conf.rank() > 1) {
    conf = ops::Flatten(conf);
    acc = ops::Flatten(acc);
    valid = ops::Flatten(valid);
  }
  out.conf = conf;
  out.acc = ops::Where(valid, acc, int64_t{0});
  out.keep = valid;
  return b.ok();
}

absl::StatusOr<dsl::Metric> Build(Task task, SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(Args a, ReadArgs(task, args));
  MetricBuilder b(args.metric_name(), sig, device);
  Binned in;
  if (!(task == Task::kBinary ? BinaryBins(b, a, in) : MulticlassInputs(b, a, in))) return b.status();
  const int64_t bins = a.n_bins + 1;  // the last holds confidences of exactly 1.0
  const DType cdt = in.conf.dtype();
  Expr boundaries = ops::Linspace(in.conf, 0.0, 1.0, a.n_bins + 1, cdt);
  Expr bin = ops::Bucketize(in.conf, boundaries, /*right=*/true) - int64_t{1};
  // Dropped elements get bin -1, which histogram leaves out.
  bin = ops::Where(in.keep, bin, int64_t{-1});
  // Row weights: every count and sum of a bin weighs its rows.
  Expr w = FlatWeights(b, "target");
  if (!b.ok()) return b.status();
  const DType counts = w.valid() ? DType::kFloat64 : DType::kInt64;
  State count = b.AddState("bin_count", counts, {bins}, Reducer::kSum);
  State conf_sum = b.AddState("bin_confidence", DType::kFloat64, {bins}, Reducer::kSum);
  State acc_sum = b.AddState("bin_accuracy", counts, {bins}, Reducer::kSum);
  Expr conf64 = ops::Cast(in.conf, DType::kFloat64);
  if (w.valid()) {
    b.Accumulate(count, ops::Histogram(bin, w, bins));
    b.Accumulate(conf_sum, ops::Histogram(bin, conf64 * w, bins));
    b.Accumulate(acc_sum, ops::Histogram(bin, F64(in.acc) * w, bins));
  } else {
    b.Accumulate(count, ops::Histogram(bin, bins));
    b.Accumulate(conf_sum, ops::Histogram(bin, conf64, bins));
    b.Accumulate(acc_sum, ops::Histogram(bin, in.acc, bins));
  }

  Expr n = ops::Cast(b.Read(count), DType::kFloat64);
  Expr acc = ops::SafeDiv(ops::Cast(b.Read(acc_sum), DType::kFloat64), n);
  Expr conf = ops::SafeDiv(b.Read(conf_sum), n);
  conf = ops::Where(ops::IsNan(conf), 0.0, conf);  // nan_to_num: a NaN confidence leaves its bin at 0
  Expr gap = ops::Abs(acc - conf);
  Expr prop = n / ops::Sum(n);  // 0/0 = NaN without data, as in TorchMetrics
  Expr ce;
  if (a.norm == "l1") {
    ce = ops::Sum(gap * prop);
  } else if (a.norm == "max") {
    ce = ops::Max(gap);
  } else {
    Expr sq = ops::Sum(gap * gap * prop);
    ce = ops::Where(sq > 0.0, ops::Sqrt(sq), 0.0);
  }
  b.Output(ops::Cast(ce, cdt));
  return b.Finish();
}

}  // namespace

void RegisterCalibrationMetrics(std::vector<MetricInfo>& out) {
  out.push_back(
      {"binary_calibration_error", "calibration", {"preds", "target", kWeightInput}, Bound(Build, Task::kBinary)});
  out.push_back({"multiclass_calibration_error",
                 "calibration",
                 {"preds", "target", kWeightInput},
                 Bound(Build, Task::kMulticlass)});
}

}  // namespace tally::metrics
