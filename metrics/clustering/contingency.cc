#include "metrics/clustering/contingency.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "metrics/common.h"
#include "metrics/regression/operands.h"
#include "ops/attrs.h"
#include "support/status_macros.h"

namespace tally::metrics {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ops::Expr;

absl::StatusOr<TableSizes> ReadTableSizes(SpecArgs& args) {
  TableSizes s;
  TALLY_ASSIGN_OR_RETURN(s.classes, args.GetInt("num_classes"));
  if (s.classes < 1) return args.InvalidArgument(absl::StrCat("num_classes must be an integer >= 1, got ", s.classes));
  // none (the default) means num_classes.
  TALLY_ASSIGN_OR_RETURN(std::optional<int64_t> clusters, args.GetOptionalInt("num_clusters"));
  s.clusters = clusters.value_or(s.classes);
  if (s.clusters < 1) {
    return args.InvalidArgument(absl::StrCat("num_clusters must be an integer >= 1, got ", s.clusters));
  }
  return s;
}

namespace {

// Labels declares one 1-D integer label input, as declared.
Expr Labels(MetricBuilder& b, const std::string& name, const char* what) {
  Expr x = b.Input(name);
  if (!b.ok()) return x;
  const std::vector<int64_t>& shape = b.FindInput(name)->shape;
  if (shape.size() != 1) {
    b.FailInput(name, absl::StrCat("expected 1-D ", what, " ids of shape [N], got shape ", ShapeText(shape)));
  } else if (ir::IsFloating(x.dtype())) {
    b.FailInput(name, absl::StrCat("expected integer ", what, " ids, got ", ir::DTypeName(x.dtype())));
  }
  return x;
}

}  // namespace

State AddSquareLabelTable(MetricBuilder& b, Expr preds, Expr target, int64_t c) {
  std::vector<Expr> outs = b.OpN(ops::OpId::kMcConfmat, {preds, target}, ops::ToAttrMap(ops::McConfmatAttrs{c}));
  if (outs.size() != 3) return State{};
  const std::string range = absl::StrCat("{n} values outside [0, ", c, ")");
  b.Check("target", range, outs[1]);
  b.Check("preds", range, outs[2]);
  State table = b.AddState("confmat", DType::kInt64, {c, c}, ir::Reducer::kSum);
  b.Accumulate(table, outs[0]);
  return table;
}

State AddContingencyTable(MetricBuilder& b, const TableSizes& sizes) {
  Expr preds = Labels(b, "preds", "cluster");
  Expr target = Labels(b, "target", "class");
  if (!b.ok()) return State{};
  const auto& ps = b.FindInput("preds")->shape;
  const auto& ts = b.FindInput("target")->shape;
  if (ps != ts) {
    b.FailInput("preds", absl::StrCat("shape ", ShapeText(ps), " does not match target's shape ", ShapeText(ts)));
    return State{};
  }
  if (sizes.clusters == sizes.classes) return AddSquareLabelTable(b, preds, target, sizes.classes);
  return AddPairTable(b, preds, target, sizes.classes, sizes.clusters);
}

State AddPairTable(MetricBuilder& b, Expr preds, Expr target, int64_t rows, int64_t cols, Expr keep) {
  Expr p = ops::Cast(preds, DType::kInt64);
  Expr t = ops::Cast(target, DType::kInt64);
  if (keep.valid()) {
    // A dropped row reads id 0, in range: the checks count the kept rows only.
    p = ops::Where(keep, p, 0.0);
    t = ops::Where(keep, t, 0.0);
  }
  b.Check("preds", absl::StrCat("{n} values outside [0, ", cols, ")"), ops::CountOutside(p, 0, cols));
  b.Check("target", absl::StrCat("{n} values outside [0, ", rows, ")"), ops::CountOutside(t, 0, rows));
  // A row with either id out of range (or not kept) gets cell -1, which
  // histogram drops.
  Expr in = p >= 0.0 && p < static_cast<double>(cols) && t >= 0.0 && t < static_cast<double>(rows);
  if (keep.valid()) in = in && keep;
  Expr cell = ops::Where(in, t * static_cast<double>(cols) + p, int64_t{-1});
  State table = b.AddState("contingency", DType::kInt64, {rows, cols}, ir::Reducer::kSum);
  b.Accumulate(table, ops::Reshape(ops::Histogram(cell, rows * cols), {rows, cols}));
  return table;
}

Marginals ReadMarginals(MetricBuilder& b, const State& table) {
  Marginals m;
  m.table = F64(b.Read(table));
  m.classes = ops::Sum(m.table, {1});
  m.clusters = ops::Sum(m.table, {0});
  m.n = ops::Sum(m.table);
  return m;
}

Expr Entropy(Expr counts, Expr n) {
  Expr p = counts / n;
  return -ops::Sum(ops::Where(counts > 0.0, p * ops::Log(p), 0.0));
}

Expr MutualInfo(const Marginals& m) {
  // log(n n_ij / (a_i b_j)) as one ratio of exact integer products (below
  // 2^53), so that an independent cell contributes exactly 0.
  Expr outer = ops::Unsqueeze(m.classes, 1) * ops::Unsqueeze(m.clusters, 0);
  Expr cell = m.table / m.n * ops::Log(m.n * m.table / outer);
  return ops::Sum(ops::Where(m.table > 0.0, cell, 0.0));
}

}  // namespace tally::metrics
