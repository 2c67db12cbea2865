#include "metrics/clustering/contingency.h"

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "metrics/common.h"
#include "metrics/regression/operands.h"
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

// Labels declares one 1-D integer label input and counts its values outside
// [0, size) with a deferred check.
Expr Labels(MetricBuilder& b, const std::string& name, int64_t size, const char* what) {
  Expr x = b.Input(name);
  if (!b.ok()) return x;
  const std::vector<int64_t>& shape = b.FindInput(name)->shape;
  if (shape.size() != 1) {
    b.FailInput(name, absl::StrCat("expected 1-D ", what, " ids of shape [N], got shape ", ShapeText(shape)));
  } else if (ir::IsFloating(x.dtype())) {
    b.FailInput(name, absl::StrCat("expected integer ", what, " ids, got ", ir::DTypeName(x.dtype())));
  }
  if (!b.ok()) return x;
  Expr ids = ops::Cast(x, DType::kInt64);
  b.Check(name, absl::StrCat("{n} values outside [0, ", size, ")"), ops::CountOutside(ids, 0, size));
  return ids;
}

}  // namespace

State AddContingencyTable(MetricBuilder& b, const TableSizes& sizes) {
  Expr preds = Labels(b, "preds", sizes.clusters, "cluster");
  Expr target = Labels(b, "target", sizes.classes, "class");
  if (!b.ok()) return State{};
  const auto& ps = b.FindInput("preds")->shape;
  const auto& ts = b.FindInput("target")->shape;
  if (ps != ts) {
    b.FailInput("preds", absl::StrCat("shape ", ShapeText(ps), " does not match target's shape ", ShapeText(ts)));
    return State{};
  }
  // A row with either label out of range gets cell -1, which histogram drops.
  Expr in_range = preds >= 0.0 && preds < static_cast<double>(sizes.clusters) && target >= 0.0 &&
                  target < static_cast<double>(sizes.classes);
  Expr cell = ops::Where(in_range, preds * static_cast<double>(sizes.classes) + target, int64_t{-1});
  State table = b.AddState("contingency", DType::kInt64, {sizes.clusters, sizes.classes}, ir::Reducer::kSum);
  b.Accumulate(table,
               ops::Reshape(ops::Histogram(cell, sizes.clusters * sizes.classes), {sizes.clusters, sizes.classes}));
  return table;
}

Marginals ReadMarginals(MetricBuilder& b, const State& table) {
  Marginals m;
  m.table = F64(b.Read(table));
  m.clusters = ops::Sum(m.table, {1});
  m.classes = ops::Sum(m.table, {0});
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
  Expr outer = ops::Unsqueeze(m.clusters, 1) * ops::Unsqueeze(m.classes, 0);
  Expr cell = m.table / m.n * ops::Log(m.n * m.table / outer);
  return ops::Sum(ops::Where(m.table > 0.0, cell, 0.0));
}

}  // namespace tally::metrics
