// SQuAD over token ids, with TorchMetrics 1.5.2's name and values:
//   squad()
// preds [N, Lp] are the ids of each answer's normalised words; target
// [N, Lt] or [N, R, Lt] those of its ground truths (a ground truth of padding
// only is absent unless all are: then the row has one empty answer). Text
// is normalised as SQuAD's script does (api/text_inputs.h: lowercased,
// punctuation removed, articles dropped, split on whitespace). Per row, the
// best over its ground truths of
//   exact match: the two word sequences are equal (their LCS is both),
//   F1: 2 shared / (|preds| + |truth|) over the bags of words, and where
//       either is empty, whether both are;
// the states are the sums of both and the row count; the result is float64
// [2]: 100 * mean exact match, 100 * mean F1 (TorchMetrics' dict, in its
// order: exact_match, f1).
#include <vector>

#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "metrics/text/token_ids.h"
#include "ops/attrs.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ops::Expr;

absl::StatusOr<dsl::Metric> Build(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  MetricBuilder b(args.metric_name(), sig, device);
  const auto [preds, target, refs] = DeclarePredsAndReferences(b);
  if (!b.ok()) return b.status();
  ops::NgramMatchesAttrs unigrams;
  unigrams.n_gram = 1;
  Expr shared = F64(ops::Select(b.Op(ops::OpId::kNgramOverlap, {preds, target}, ops::ToAttrMap(unigrams)), 2, 0));
  Expr longest = F64(b.Op(ops::OpId::kLcsLength, {preds, target}));  // [N, R]
  Expr lp = F64(Lengths(preds, /*keepdim=*/true));                   // [N, 1]
  Expr lt = F64(Lengths(target));                                    // [N, R]
  Expr exact = F64(longest == lp && longest == lt);
  Expr f1 = ops::Where(lp == 0.0 || lt == 0.0, exact, 2.0 * shared / (lp + lt));
  Expr present = lt > 0.0;
  Expr use = UsedReferences(present);
  Expr best_exact = ops::Max(ops::Where(use, exact, -1.0), {1});
  Expr best_f1 = ops::Max(ops::Where(use, f1, -1.0), {1});
  State sums = b.AddState("score_sums", DType::kFloat64, {2}, ir::Reducer::kSum);
  State rows = b.AddState("rows", DType::kInt64, {}, ir::Reducer::kSum);
  b.Accumulate(sums, ops::Concat({ops::Unsqueeze(ops::Sum(best_exact), 0), ops::Unsqueeze(ops::Sum(best_f1), 0)}));
  b.Accumulate(rows, ops::Sum(ops::FullLike(best_f1, 1, DType::kInt64)));
  b.Output(100.0 * b.Read(sums) / F64(b.Read(rows)));
  return b.Finish();
}

}  // namespace

void RegisterSquad(std::vector<MetricInfo>& out) { out.push_back({"squad", "text", {"preds", "target"}, Build}); }

}  // namespace tally::metrics
