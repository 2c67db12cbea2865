#include "ops/decompositions.h"

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"

namespace tally::ops {
namespace {

using dsl::Expr;
using ir::DType;

// McConfmat: argmax (or integer labels), range checks, and a histogram of
// target * C + pred over the kept rows.
absl::Status DecomposeMcConfmat(ir::Graph& g, ir::Node& n, dsl::GraphBuilder& b) {
  int64_t c = n.GetInt("num_classes");
  Expr preds = b.Wrap(&g, n.input(0));
  Expr target = dsl::Cast(b.Wrap(&g, n.input(1)), DType::kInt64);
  Expr ignored;
  if (n.HasAttr("ignore_index")) ignored = target == static_cast<double>(n.GetInt("ignore_index"));
  Expr bad_t = target < 0.0 || target >= static_cast<double>(c);
  if (ignored.valid()) bad_t = bad_t && !ignored;
  Expr bad = bad_t;
  Expr label, bad_p;
  if (ir::IsFloating(preds.dtype())) {
    label = dsl::Argmax(preds, 1);
    bad_p = dsl::FullLike(target, 0, DType::kBool);
  } else {
    label = dsl::Cast(preds, DType::kInt64);
    bad_p = label < 0.0 || label >= static_cast<double>(c);
    if (ignored.valid()) bad_p = bad_p && !ignored;
    bad = bad || bad_p;
  }
  Expr keep = !bad;
  if (ignored.valid()) keep = keep && !ignored;
  Expr idx = dsl::Where(keep, target * static_cast<double>(c) + label, -1.0);
  Expr cm = dsl::Reshape(dsl::Histogram(idx, c * c), {c, c});
  Expr nt = dsl::Sum(bad_t), np = dsl::Sum(bad_p);
  if (!b.ok()) return b.status();
  g.ReplaceAllUsesWith(n.output(0), cm.value());
  g.ReplaceAllUsesWith(n.output(1), nt.value());
  g.ReplaceAllUsesWith(n.output(2), np.value());
  return absl::OkStatus();
}

}  // namespace

absl::Status Decompose(ir::Graph& g, ir::Node& n) {
  ir::Device device = n.output(0)->type().device;
  dsl::GraphBuilder b(n.op(), device);
  if (n.op() == "mc_confmat") return DecomposeMcConfmat(g, n, b);
  return absl::UnimplementedError(absl::StrCat("no decomposition for op '", n.op(), "'"));
}

}  // namespace tally::ops
