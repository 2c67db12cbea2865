// Association between two nominal variables, from their contingency table
// (TorchMetrics 1.5.2's nominal metrics, functional names and arguments):
//   cramers_v(bias_correction=True), tschuprows_t(bias_correction=True),
//   pearsons_contingency_coefficient, theils_u,
// each with nan_strategy='replace'|'drop', nan_replace_value=0.0 and the
// required `num_classes` of TorchMetrics' modular metrics (the functional
// ones infer it with a host sync).
//
// Inputs: `preds` and `target` are [N] labels (integer, or floating with
// NaN), or [N, C] scores whose argmax over dim 1 is the label. NaN labels
// are replaced by nan_replace_value, or their rows dropped; labels are then
// truncated to int64 and must lie in [0, num_classes) (a deferred check).
// The state is the int64 [num_classes, num_classes] table, rows = target,
// cols = preds (TorchMetrics' _multiclass_confusion_matrix_update).
//
// Finalize (nominal/utils.py): empty rows and columns are left out (r and c
// count the others); chi² over the kept cells against the expected counts,
// with TorchMetrics' continuity correction when (r - 1)(c - 1) == 1 and
// bias_correction: every cell moves by exactly 0.5 toward its expected count
// (scipy moves it by min(0.5, |E - O|)). Results are float64 in [0, 1]; NaN
// where TorchMetrics gives NaN (bias correction impossible, no data).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/clustering/contingency.h"
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

enum class Measure { kCramersV, kTschuprowsT, kPearson, kTheilsU };

struct Args {
  int64_t num_classes = 0;
  bool bias_correction = true;
  bool drop_nan = false;
  double nan_replace_value = 0.0;
};

absl::StatusOr<Args> ReadArgs(Measure m, SpecArgs& args) {
  Args a;
  TALLY_ASSIGN_OR_RETURN(a.num_classes, args.GetInt("num_classes"));
  if (a.num_classes < 1) {
    return args.InvalidArgument(absl::StrCat("num_classes must be an integer >= 1, got ", a.num_classes));
  }
  if (m == Measure::kCramersV || m == Measure::kTschuprowsT) {
    TALLY_ASSIGN_OR_RETURN(a.bias_correction, args.GetBool("bias_correction", true));
  }
  TALLY_ASSIGN_OR_RETURN(std::string nan, args.GetEnum("nan_strategy", {"replace", "drop"}, "replace"));
  a.drop_nan = nan == "drop";
  TALLY_ASSIGN_OR_RETURN(a.nan_replace_value, args.GetDouble("nan_replace_value", 0.0));
  return a;
}

// Variable reads one input as [N] labels (argmax of [N, C] scores), still in
// its dtype.
Expr Variable(MetricBuilder& b, const std::string& name) {
  Expr x = b.Input(name);
  if (!b.ok()) return x;
  const std::vector<int64_t>& shape = b.FindInput(name)->shape;
  if (shape.size() == 2) return ops::Argmax(x, 1);
  if (shape.size() != 1) {
    b.FailInput(name, absl::StrCat("expected labels [N] or scores [N, C], got shape ", ShapeText(shape)));
  } else if (x.dtype() == DType::kBool) {
    b.FailInput(name, "expected integer or floating labels, got bool");
  }
  return x;
}

absl::StatusOr<dsl::Metric> Build(Measure measure, SpecArgs& args, const dsl::Signature& sig,
                                  const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(Args a, ReadArgs(measure, args));
  MetricBuilder b(args.metric_name(), sig, device);
  Expr preds = Variable(b, "preds");
  Expr target = Variable(b, "target");
  if (!b.ok()) return b.status();
  Expr keep;
  if (ir::IsFloating(preds.dtype()) || ir::IsFloating(target.dtype())) {
    Expr nan_p = ir::IsFloating(preds.dtype()) ? ops::IsNan(preds) : Expr();
    Expr nan_t = ir::IsFloating(target.dtype()) ? ops::IsNan(target) : Expr();
    if (a.drop_nan) {
      keep = !(nan_p.valid() && nan_t.valid() ? nan_p || nan_t : (nan_p.valid() ? nan_p : nan_t));
    } else {
      if (nan_p.valid()) preds = ops::Where(nan_p, a.nan_replace_value, preds);
      if (nan_t.valid()) target = ops::Where(nan_t, a.nan_replace_value, target);
    }
  }
  // Integer labels: the fused table, shared with the clustering metrics.
  const bool integer = !keep.valid() && !ir::IsFloating(preds.dtype()) && !ir::IsFloating(target.dtype());
  State table = integer ? AddSquareLabelTable(b, preds, target, a.num_classes)
                        : AddPairTable(b, preds, target, a.num_classes, a.num_classes, keep);
  if (!b.ok()) return b.status();

  Expr o = F64(b.Read(table));
  Expr rows = ops::Sum(o, {1}, /*keepdim=*/true);  // [C, 1]: target
  Expr cols = ops::Sum(o, {0}, /*keepdim=*/true);  // [1, C]: preds
  Expr n = ops::Sum(o);
  Expr kept = rows > 0.0 && cols > 0.0;  // the cells of kept rows and columns
  Expr r = ops::Sum(F64(rows > 0.0));
  Expr k = ops::Sum(F64(cols > 0.0));

  if (measure == Measure::kTheilsU) {
    // U(preds | target) = (H(preds) - H(preds | target)) / H(preds).
    Expr s_xy = ops::Sum(ops::Where(o > 0.0, o / n * (ops::Log(rows / n) - ops::Log(o / n)), 0.0));
    Expr px = cols / n;
    Expr s_x = -ops::Sum(ops::Where(cols > 0.0, px * ops::Log(px), 0.0));
    b.Output(ops::Where(s_x == 0.0, 0.0, (s_x - s_xy) / s_x));
    return b.Finish();
  }

  Expr expected = rows * cols / n;
  Expr df = r * k - r - k + 1.0;
  if (a.bias_correction && measure != Measure::kPearson) {
    Expr diff = expected - o;
    Expr step = ops::Where(diff > 0.0, 0.5, ops::Where(diff < 0.0, ops::Scalar(diff, -0.5), 0.0));
    o = ops::Where(df == 1.0, o + step, o);
  }
  Expr chi2 = ops::Sum(ops::Where(kept, (o - expected) * (o - expected) / expected, 0.0));
  chi2 = ops::Where(df == 0.0, 0.0, chi2);
  Expr phi2 = chi2 / n;
  Expr value;
  if (measure == Measure::kPearson) {
    value = ops::Sqrt(phi2 / (1.0 + phi2));
  } else if (a.bias_correction) {
    Expr phi2c = ops::Maximum(phi2 - (r - 1.0) * (k - 1.0) / (n - 1.0), ops::Scalar(phi2, 0.0));
    Expr rc = r - (r - 1.0) * (r - 1.0) / (n - 1.0);
    Expr kc = k - (k - 1.0) * (k - 1.0) / (n - 1.0);
    Expr den = measure == Measure::kCramersV ? ops::Minimum(rc - 1.0, kc - 1.0) : ops::Sqrt((rc - 1.0) * (kc - 1.0));
    value = ops::Where(ops::Minimum(rc, kc) == 1.0, NAN, ops::Sqrt(phi2c / den));
  } else {
    Expr den = measure == Measure::kCramersV ? ops::Minimum(r - 1.0, k - 1.0) : ops::Sqrt((r - 1.0) * (k - 1.0));
    value = ops::Sqrt(phi2 / den);
  }
  b.Output(ops::Clamp(value, 0.0, 1.0));
  return b.Finish();
}

}  // namespace

void RegisterNominalMetrics(std::vector<MetricInfo>& out) {
  const std::vector<std::string> inputs = {"preds", "target"};
  auto add = [&](const char* name, Measure m) { out.push_back({name, "nominal", inputs, Bound(Build, m)}); };
  add("cramers_v", Measure::kCramersV);
  add("tschuprows_t", Measure::kTschuprowsT);
  add("pearsons_contingency_coefficient", Measure::kPearson);
  add("theils_u", Measure::kTheilsU);
}

}  // namespace tally::metrics
