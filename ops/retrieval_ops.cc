// Composite ops of the retrieval metrics (metrics/retrieval/retrieval.cc). Each has a
// decomposition into segment ops (ops/decompositions.cc, the reference path)
// and a one-pass CPU kernel (ops/fused/retrieval.h).
//
//   count_invalid(target) {[ignore_index]} -> (not_binary i64[], negative i64[])
//     the number of target values that are not 0/1, and of those that are
//     not >= 0 (NaN counts in both), ignore_index values excepted: the
//     update's deferred checks of the binary and the graded metrics, both in
//     one pass over the batch.
//
//   retrieval_score(keys, preds, target[, weight]) {metric, empty_target_action,
//                   adaptive_k[, top_k, ignore_index]} -> (value f64[], empty i64[])
//     rows as segment_sort leaves them (keys ascending, preds descending,
//     stable); a row counts unless its target is ignore_index, and a query
//     exists when it has a counted row. `value` is the mean over queries of
//     TorchMetrics' per-query score, a query without positives (without
//     negatives for fall_out) scoring by empty_target_action: neg -> 0,
//     pos -> 1, skip -> left out ("error" scores like skip; `empty` counts
//     such queries so that finalize can refuse them). No query: value 0.
//     With row weights (f64 [N]) a query weighs the mean of its rows'
//     weights and `value` is the weighted mean of the scores (scikit-learn's
//     ndcg_score sample_weight, one weight per query); aggregation mean only.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ops/op_registry.h"
#include "ops/retrieval_metric.h"
#include "support/status_macros.h"

namespace tally::ops {
namespace {

using ir::DType;
using ir::TensorType;
using Types = absl::StatusOr<std::vector<TensorType>>;

}  // namespace

void RegisterRetrievalOps(OpTable& t) {
  {
    OpDef d;
    d.id = OpId::kCountInvalid;
    d.min_inputs = d.max_inputs = 1;
    d.attrs = SpecsOf<CountInvalidAttrs>();
    d.traits.composite = true;
    d.fused_devices = {"cpu", "meta"};
    d.infer = [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
      if (in[0].rank() != 1) return absl::InvalidArgumentError("target must be 1-D");
      TensorType count{DType::kInt64, {}, in[0].device};
      return std::vector<TensorType>{count, count};
    };
    AddOp(t, d);
  }
  {
    OpDef d;
    d.id = OpId::kRetrievalScore;
    d.min_inputs = 3;
    d.max_inputs = 4;
    d.attrs = SpecsOf<RetrievalScoreAttrs>();
    d.traits.composite = true;
    d.fused_devices = {"cpu", "meta"};
    d.infer = [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
      const auto attrs = AttrsOf<RetrievalScoreAttrs>(a);
      const std::string& agg = attrs.aggregation.get();
      if (agg != "mean" && agg != "median" && agg != "min" && agg != "max") {
        return absl::InvalidArgumentError(absl::StrCat("bad aggregation '", agg, "'"));
      }
      const std::string& metric = attrs.metric;
      if (!RetrievalMetricNamed(metric)) {
        return absl::InvalidArgumentError(absl::StrCat("unknown retrieval metric '", metric, "'"));
      }
      const std::string& action = attrs.empty_target_action;
      if (action != "neg" && action != "pos" && action != "skip" && action != "error") {
        return absl::InvalidArgumentError(absl::StrCat("bad empty_target_action '", action, "'"));
      }
      if (attrs.top_k.has_value() && attrs.top_k.get() <= 0) {
        return absl::InvalidArgumentError("top_k must be positive");
      }
      for (const TensorType& x : in) {
        if (x.rank() != 1 || !(x.shape[0] == in[0].shape[0])) {
          return absl::InvalidArgumentError("keys, preds and target must be 1-D with the same rows");
        }
      }
      if (in[0].dtype != DType::kInt64) return absl::InvalidArgumentError("keys must be i64");
      if (in[1].dtype != DType::kFloat32 && in[1].dtype != DType::kFloat64) {
        return absl::InvalidArgumentError("preds must be f32 or f64");
      }
      if (in[2].dtype != DType::kInt64 && in[2].dtype != DType::kFloat64) {
        return absl::InvalidArgumentError("target must be i64 or f64");
      }
      if (in.size() == 4 && in[3].dtype != DType::kFloat64) return absl::InvalidArgumentError("weight must be f64");
      if (in.size() == 4 && agg != "mean") return absl::InvalidArgumentError("weights need aggregation mean");
      return std::vector<TensorType>{{DType::kFloat64, {}, in[0].device}, {DType::kInt64, {}, in[0].device}};
    };
    AddOp(t, d);
  }
}

}  // namespace tally::ops
