#include "metrics/text/token_ids.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "metrics/regression/operands.h"

namespace tally::metrics {

ops::Expr TokenIds(dsl::MetricBuilder& b, const std::string& name, bool references) {
  const dsl::InputSpec* spec = b.FindInput(name);
  const int64_t width_dim = spec != nullptr ? static_cast<int64_t>(spec->shape.size()) - 1 : 0;
  // Transcripts differ in length from batch to batch: the width is a symbol
  // of its own (preds and target may differ), not fixed by the first batch.
  ops::Expr x = b.RaggedInput(name, width_dim,
                              name == "preds"    ? "Lp"
                              : name == "target" ? "Lt"
                                                 : absl::StrCat("L_", name));
  if (!b.ok()) return x;
  const std::vector<int64_t>& shape = spec->shape;
  const bool rank_ok = shape.size() == 2 || (references && shape.size() == 3);
  if (!rank_ok || !ir::IsIntegral(x.dtype()) || x.dtype() == ir::DType::kBool) {
    b.FailInput(name,
                absl::StrCat("expected integer token ids [N, L]", references ? " or [N, R, L]" : "",
                             " (negative ids pad), got ", ir::DTypeName(x.dtype()), " of shape ", ShapeText(shape)));
  }
  return x;
}

void SameRows(dsl::MetricBuilder& b, const std::string& a, const std::string& c) {
  if (!b.ok()) return;
  const int64_t a_rows = b.FindInput(a)->shape[0];
  const int64_t c_rows = b.FindInput(c)->shape[0];
  if (a_rows != c_rows) b.FailInput(a, absl::StrCat("has ", a_rows, " rows, ", c, " has ", c_rows));
}

PredsAndReferences DeclarePredsAndReferences(dsl::MetricBuilder& b) {
  PredsAndReferences ids;
  ids.preds = TokenIds(b, "preds");
  ids.target = TokenIds(b, "target", /*references=*/true);
  SameRows(b);
  if (!b.ok()) return ids;
  if (ids.target.rank() == 2) {
    ids.target = ops::Unsqueeze(ids.target, 1);
  } else {
    ids.refs = b.FindInput("target")->shape[1];
  }
  return ids;
}

ops::Expr Lengths(ops::Expr ids, bool keepdim) {
  return ops::Sum(ops::Cast(ids >= 0.0, ir::DType::kInt64), {ids.rank() - 1}, keepdim);
}

ops::Expr UsedReferences(ops::Expr present) { return present || !ops::Any(present, {1}, /*keepdim=*/true); }

}  // namespace tally::metrics
