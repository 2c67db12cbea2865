// Error rates of speech and text transcripts against references, from one
// edit_distance kernel (ops/fused/edit_distance.h), with TorchMetrics
// 1.5.2's functional names and values:
//   word_error_rate, char_error_rate       errors / target tokens
//   match_error_rate                       errors / sum max(target, preds tokens)
//   word_information_preserved             (H / target tokens) (H / preds tokens),
//   word_information_lost                  1 - that, with H = sum max(...) - errors
//   edit_distance(substitution_cost=1, reduction=mean|sum|none)
//   error_counts                           (Tally's) int64 [hits, substitutions,
//                                          deletions, insertions] summed over
//                                          rows: of each row's least-cost
//                                          alignment with the fewest
//                                          substitutions
// `preds` and `target` are integer token ids [N, L] (the two widths may
// differ), a negative id padding: a word, a character or a subword per id,
// as tokenized. The states are int64 sums (edit_distance with
// reduction='none' keeps each row's distance), exact at any size; results
// are float64 (0 / 0 is NaN, as in TorchMetrics).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "metrics/regression/operands.h"
#include "metrics/text/token_ids.h"
#include "ops/attrs.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ops::Expr;

enum class Rate { kError, kMatchError, kInformationPreserved, kInformationLost, kEditDistance, kCounts };

absl::StatusOr<dsl::Metric> Build(Rate rate, SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  int64_t substitution_cost = 1;
  std::string reduction = "mean";
  if (rate == Rate::kEditDistance) {
    TALLY_ASSIGN_OR_RETURN(substitution_cost, args.GetInt("substitution_cost", 1));
    if (substitution_cost < 0) {
      return args.InvalidArgument(absl::StrCat("substitution_cost must be >= 0, got ", substitution_cost));
    }
    TALLY_ASSIGN_OR_RETURN(reduction, args.GetEnum("reduction", {"mean", "sum", "none"}, "mean"));
  }
  MetricBuilder b(args.metric_name(), sig, device);
  Expr preds = TokenIds(b, "preds");
  Expr target = TokenIds(b, "target");
  SameRows(b);
  if (!b.ok()) return b.status();
  ops::EditDistanceAttrs attrs;
  attrs.substitution_cost = substitution_cost;
  if (rate == Rate::kCounts) attrs.substitutions = true;
  Expr counts = b.Op(ops::OpId::kEditDistance, {preds, target}, ops::ToAttrMap(attrs));
  Expr distance = ops::Select(counts, 1, 0);
  Expr preds_len = ops::Select(counts, 1, 1);
  Expr target_len = ops::Select(counts, 1, 2);

  if (rate == Rate::kCounts) {
    // Columns 3..5 of [N, 6]: substitutions, deletions, insertions; the
    // hits are the target's length less substitutions and deletions.
    Expr subs = ops::Sum(ops::Select(counts, 1, 3));
    Expr dels = ops::Sum(ops::Select(counts, 1, 4));
    Expr hits = ops::Sum(target_len) - subs - dels;
    std::vector<Expr> totals;
    for (Expr x : {hits, subs, dels, ops::Sum(ops::Select(counts, 1, 5))}) totals.push_back(ops::Unsqueeze(x, 0));
    State total = b.AddState("counts", DType::kInt64, {4}, ir::Reducer::kSum);
    b.Accumulate(total, ops::Concat(totals));
    b.Output(b.Read(total));
    return b.Finish();
  }
  if (rate == Rate::kEditDistance) {
    if (reduction == "none") {
      State rows = b.AddState("distances", DType::kInt64, {}, ir::Reducer::kCat);
      b.Accumulate(rows, distance);
      b.Output(b.Read(rows));
      return b.Finish();
    }
    State total = b.AddState("distance", DType::kInt64, {}, ir::Reducer::kSum);
    State rows = b.AddState("rows", DType::kInt64, {}, ir::Reducer::kSum);
    b.Accumulate(total, ops::Sum(distance));
    b.Accumulate(rows, ops::Size(distance, 0));
    Expr sum = b.Read(total);
    // TorchMetrics: 0 when no row came.
    b.Output(reduction == "sum" ? sum : ops::Where(b.Read(rows) == 0.0, 0.0, F64(sum) / F64(b.Read(rows))));
    return b.Finish();
  }
  State errors = b.AddState("errors", DType::kInt64, {}, ir::Reducer::kSum);
  b.Accumulate(errors, ops::Sum(distance));
  State target_total = b.AddState("target_total", DType::kInt64, {}, ir::Reducer::kSum);
  b.Accumulate(target_total, ops::Sum(target_len));
  if (rate == Rate::kError) {
    b.Output(F64(b.Read(errors)) / F64(b.Read(target_total)));
    return b.Finish();
  }
  State longer_total = b.AddState("longer_total", DType::kInt64, {}, ir::Reducer::kSum);
  b.Accumulate(longer_total, ops::Sum(ops::Maximum(preds_len, target_len)));
  if (rate == Rate::kMatchError) {
    b.Output(F64(b.Read(errors)) / F64(b.Read(longer_total)));
    return b.Finish();
  }
  State preds_total = b.AddState("preds_total", DType::kInt64, {}, ir::Reducer::kSum);
  b.Accumulate(preds_total, ops::Sum(preds_len));
  // TorchMetrics' hits H: the longer lengths less the errors.
  Expr hits = F64(b.Read(longer_total) - b.Read(errors));
  Expr preserved = (hits / F64(b.Read(target_total))) * (hits / F64(b.Read(preds_total)));
  b.Output(rate == Rate::kInformationPreserved ? preserved : 1.0 - preserved);
  return b.Finish();
}

}  // namespace

void RegisterTextErrorRateMetrics(std::vector<MetricInfo>& out) {
  const std::vector<std::string> inputs = {"preds", "target"};
  auto add = [&](const char* name, Rate r) { out.push_back({name, "text", inputs, Bound(Build, r)}); };
  add("word_error_rate", Rate::kError);
  add("char_error_rate", Rate::kError);
  add("match_error_rate", Rate::kMatchError);
  add("word_information_preserved", Rate::kInformationPreserved);
  add("word_information_lost", Rate::kInformationLost);
  add("edit_distance", Rate::kEditDistance);
  add("error_counts", Rate::kCounts);
}

}  // namespace tally::metrics
