#include "metrics/retrieval/rows.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "metrics/weights.h"
#include "ops/attrs.h"

namespace tally::metrics {

bool ReadRetrievalRows(dsl::MetricBuilder& b, std::optional<int64_t> ignore_index, SortedRows& out, bool weighted) {
  using ir::DType;
  using ir::Reducer;
  ops::Expr indexes = b.Input("indexes");
  ops::Expr preds = b.Input("preds");
  ops::Expr target = b.Input("target");
  if (!b.ok()) return false;
  for (const auto& [name, e] :
       {std::pair<std::string, ops::Expr>{"indexes", indexes}, {"preds", preds}, {"target", target}}) {
    if (e.rank() != 1) b.FailInput(name, absl::StrCat("expected a 1-D tensor, got shape ", e.type().ShapeString()));
  }
  if (!ir::IsFloating(preds.dtype())) b.FailInput("preds", "expected a floating point tensor");
  if (indexes.dtype() != DType::kInt64 && indexes.dtype() != DType::kInt32) {
    b.FailInput("indexes", "expected an integer tensor (int64)");
  }
  if (!b.ok()) return false;

  // TorchMetrics ranks float32 preds (preds.float()) and takes bool, integer
  // or float targets. The states keep the rows as given (the target as i64,
  // or f64 when it is floating), so that every metric of a collection shares
  // them and the update is three appends and nothing else. The rows are kept
  // whole anyway, so the value check of the targets runs over the states in
  // finalize (count_invalid, then the metric's assert_zero: one host read
  // that `inspect` marks) rather than over every batch.
  const DType target_dtype = ir::IsFloating(target.dtype()) ? DType::kFloat64 : DType::kInt64;
  dsl::State idx_rows = b.AddState("indexes", DType::kInt64, {}, Reducer::kCat);
  dsl::State preds_rows = b.AddState("preds", DType::kFloat32, {}, Reducer::kCat);
  dsl::State target_rows = b.AddState("target", target_dtype, {}, Reducer::kCat);
  b.Accumulate(idx_rows, ops::Cast(indexes, DType::kInt64));
  b.Accumulate(preds_rows, ops::Cast(preds, DType::kFloat32));
  b.Accumulate(target_rows, ops::Cast(target, target_dtype));

  ops::CountInvalidAttrs check_attrs;
  if (ignore_index.has_value()) check_attrs.ignore_index = *ignore_index;
  std::vector<ops::Expr> invalid = b.OpN(ops::OpId::kCountInvalid, {b.Read(target_rows)}, ops::ToAttrMap(check_attrs));
  std::vector<ops::Expr> sorted = {b.Read(idx_rows), b.Read(preds_rows), b.Read(target_rows)};
  ops::Expr w = weighted ? ReadWeight(b, preds) : ops::Expr();
  if (w.valid()) {
    dsl::State weight_rows = b.AddState("weight", DType::kFloat64, {}, Reducer::kCat);
    b.Accumulate(weight_rows, w);
    sorted.push_back(b.Read(weight_rows));
  }
  std::vector<ops::Expr> s = b.OpN(ops::OpId::kSegmentSort, sorted, {});
  if (!b.ok()) return false;
  // A NaN score has no rank (curve_common.h, NanScores): checked over the
  // rows in finalize too, so the update stays three appends.
  ops::Expr nan = ops::Sum(ops::Cast(ops::IsNan(b.Read(preds_rows)), DType::kInt64));
  // On the sorted target, which every retrieval metric reads.
  ops::Expr sorted_target =
      b.Op(ops::OpId::kAssertZero, {nan, s[2]},
           ops::ToAttrMap(ops::AssertZeroAttrs{absl::StrCat(b.metric_name(), ": preds: {n} NaN scores")}));
  if (!b.ok()) return false;
  out = {s[0], s[1], sorted_target, invalid[0], invalid[1], w.valid() ? s[3] : ops::Expr()};
  return true;
}

}  // namespace tally::metrics
