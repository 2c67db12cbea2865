// Retrieval metrics with TorchMetrics' class semantics (RetrievalRecall,
// RetrievalPrecision, RetrievalMRR, RetrievalHitRate, RetrievalMAP,
// RetrievalRPrecision, RetrievalFallOut, RetrievalNormalizedDCG,
// RetrievalAUROC): rows of (indexes, preds, target)
// are grouped by query, each query is scored on its documents sorted by preds
// (descending, stable), and the result is the mean over queries.
//
// Update appends the rows as given to `cat` states that every retrieval
// metric of a collection shares. Finalize checks the targets
// (count_invalid + assert_zero), sorts the rows by (index, preds descending)
// with segment_sort and scores every query with retrieval_score, whose
// decomposition reads each query at its last row through segment scans (no
// host loop over queries, no data-dependent number of them) and whose CPU
// kernel is one pass (ops/fused/retrieval.h).
//
// Arguments: top_k (none = all documents), empty_target_action (neg, pos,
// skip, error; the default is neg, pos for fall_out), ignore_index,
// adaptive_k (precision), aggregation (mean, median — the lower middle, as
// torch.median —, min, max over the queries). retrieval_auroc is binary_auroc over each query's
// top_k documents (0 when they hold no positive or no negative); its
// max_fpr (partial AUC) is not supported. Targets must be 0/1 (>= 0 for normalized_dcg),
// checked when Compute runs. With empty_target_action=error, Compute fails when a query
// has no positive target (no negative one for fall_out).
//
// Weights: the optional `weight` (one per row) weighs each query by the
// mean of its rows' weights, and the value is the weighted mean of the
// queries' scores — scikit-learn's ndcg_score(sample_weight), which takes
// one weight per query; a server gives every row of a query the query's
// weight. aggregation=median/min/max refuse a weight.
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "metrics/retrieval/rows.h"
#include "metrics/weights.h"
#include "ops/attrs.h"
#include "ops/retrieval_metric.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using ir::DType;
using ir::Reducer;
using ops::Expr;

// Kind is the retrieval_score op's per-query metric: one enum with the op
// and its fused kernel (ops/retrieval_metric.h).
using Kind = ops::RetrievalMetric;

absl::StatusOr<dsl::Metric> BuildRetrieval(Kind kind, SpecArgs& args, const dsl::Signature& sig,
                                           const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(std::optional<int64_t> top_k, args.GetOptionalInt("top_k"));
  if (top_k.has_value() && *top_k <= 0) return args.InvalidArgument("top_k must be a positive integer or none");
  if (kind == Kind::kRPrecision && top_k.has_value()) return args.InvalidArgument("unknown argument 'top_k'");
  if (kind == Kind::kAuroc) {
    TALLY_ASSIGN_OR_RETURN(std::optional<double> max_fpr, args.GetOptionalDouble("max_fpr"));
    if (max_fpr.has_value()) return args.InvalidArgument("max_fpr is not supported (only none, the full AUROC)");
  }
  bool adaptive_k = false;
  if (kind == Kind::kPrecision) {
    TALLY_ASSIGN_OR_RETURN(adaptive_k, args.GetBool("adaptive_k", false));
  }
  TALLY_ASSIGN_OR_RETURN(std::string action, args.GetEnum("empty_target_action", {"neg", "pos", "skip", "error"},
                                                          kind == Kind::kFallOut ? "pos" : "neg"));
  TALLY_ASSIGN_OR_RETURN(std::optional<int64_t> ignore_index, args.GetOptionalInt("ignore_index"));
  TALLY_ASSIGN_OR_RETURN(std::string aggregation,
                         args.GetEnum("aggregation", {"mean", "median", "min", "max"}, "mean"));

  // Relevance must be 0/1 except for normalized_dcg, whose graded relevance
  // must be >= 0 (checked over the states in finalize, see retrieval_rows.h).
  ops::RetrievalScoreAttrs score_attrs{std::string(ops::RetrievalMetricName(kind)), action, adaptive_k};
  if (ignore_index.has_value()) score_attrs.ignore_index = *ignore_index;
  if (top_k.has_value()) score_attrs.top_k = *top_k;
  if (aggregation != "mean") score_attrs.aggregation = aggregation;
  MetricBuilder b(args.metric_name(), sig, device);
  if (HasWeight(b) && aggregation != "mean") {
    b.FailInput(kWeightInput, "weights need aggregation=mean (a weighted mean of the queries' scores)");
    return b.status();
  }
  SortedRows rows;
  if (!ReadRetrievalRows(b, ignore_index, rows, /*weighted=*/true)) return b.status();
  std::vector<Expr> operands = {rows.keys, rows.preds, rows.target};
  if (rows.weight.valid()) operands.push_back(rows.weight);
  std::vector<Expr> score = b.OpN(ops::OpId::kRetrievalScore, operands, ops::ToAttrMap(score_attrs));
  if (!b.ok()) return b.status();
  Expr value = b.Op(ops::OpId::kAssertZero, {kind == Kind::kNdcg ? rows.negative : rows.not_binary, score[0]},
                    ops::ToAttrMap(ops::AssertZeroAttrs{
                        absl::StrCat(args.metric_name(), ": target: {n} ",
                                     kind == Kind::kNdcg ? "negative relevance values" : "values outside {0, 1}")}));
  if (action == "error") {
    // Only the whole state tells whether a query lacks positives.
    value = b.Op(ops::OpId::kAssertZero, {score[1], value},
                 ops::ToAttrMap(ops::AssertZeroAttrs::WholeState(absl::StrCat(
                     args.metric_name(), ": {n} queries without a ", kind == Kind::kFallOut ? "negative" : "positive",
                     " target (empty_target_action=error)"))));
  }
  b.Output(value);
  return b.Finish();
}

}  // namespace

void RegisterRetrievalMetrics(std::vector<MetricInfo>& out) {
  const std::vector<std::string> in = {"preds", "target", "indexes", kWeightInput};
  out.push_back({"retrieval_recall", "retrieval", in, Bound(BuildRetrieval, Kind::kRecall)});
  out.push_back({"retrieval_precision", "retrieval", in, Bound(BuildRetrieval, Kind::kPrecision)});
  out.push_back({"retrieval_reciprocal_rank", "retrieval", in, Bound(BuildRetrieval, Kind::kReciprocalRank)});
  out.push_back({"retrieval_hit_rate", "retrieval", in, Bound(BuildRetrieval, Kind::kHitRate)});
  out.push_back({"retrieval_average_precision", "retrieval", in, Bound(BuildRetrieval, Kind::kAveragePrecision)});
  out.push_back({"retrieval_r_precision", "retrieval", in, Bound(BuildRetrieval, Kind::kRPrecision)});
  out.push_back({"retrieval_fall_out", "retrieval", in, Bound(BuildRetrieval, Kind::kFallOut)});
  out.push_back({"retrieval_normalized_dcg", "retrieval", in, Bound(BuildRetrieval, Kind::kNdcg)});
  out.push_back({"retrieval_auroc", "retrieval", in, Bound(BuildRetrieval, Kind::kAuroc)});
}

}  // namespace tally::metrics
