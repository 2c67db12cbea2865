#include "metrics/regression/operands.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tally::metrics {

std::string ShapeText(const std::vector<int64_t>& shape) { return absl::StrCat("[", absl::StrJoin(shape, ", "), "]"); }

bool ReadOperands(dsl::MetricBuilder& b, Operands& out, int64_t max_rank, int64_t exact_rank) {
  out.preds = b.Input("preds");
  out.target = b.Input("target");
  if (!b.ok()) return false;
  const dsl::InputSpec* ps = b.FindInput("preds");
  const dsl::InputSpec* ts = b.FindInput("target");
  for (const dsl::InputSpec* s : {ps, ts}) {
    if (s->dtype == ir::DType::kBool) b.FailInput(s->name, "expected a numeric tensor, got bool");
  }
  if (ps->shape != ts->shape) {
    b.FailInput("target",
                absl::StrCat("shape ", ShapeText(ts->shape), " does not match preds shape ", ShapeText(ps->shape)));
  }
  const int64_t rank = static_cast<int64_t>(ps->shape.size());
  if (exact_rank > 0 && rank != exact_rank) {
    b.FailInput("preds", absl::StrCat("expected a ", exact_rank, "-D tensor, got shape ", ShapeText(ps->shape)));
  } else if (rank < 1 || (max_rank > 0 && rank > max_rank)) {
    b.FailInput("preds", absl::StrCat("expected ", max_rank == 2 ? "shape [N] or [N, d]" : "at least one dim",
                                      ", got shape ", ShapeText(ps->shape)));
  }
  if (!b.ok()) return false;
  out.shape = ps->shape;
  out.preds_dtype = ps->dtype;
  out.target_dtype = ts->dtype;
  return true;
}

}  // namespace tally::metrics
