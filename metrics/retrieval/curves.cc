// TorchMetrics 1.5.2's RetrievalPrecisionRecallCurve and
// RetrievalRecallAtFixedPrecision, registered as
//   retrieval_precision_recall_curve(max_k, adaptive_k, empty_target_action,
//                                    ignore_index, aggregation)
//     -> (precision f32[K], recall f32[K], top_k i64[K])
//   retrieval_recall_at_fixed_precision(min_precision, max_k, adaptive_k,
//                                       empty_target_action, ignore_index,
//                                       aggregation)
//     -> (recall f32[], best_k i64[])
// with the class semantics: rows grouped by indexes (ignore_index rows
// dropped), each query's curve for k = 1..K (K = max_k, or the largest
// query's number of documents when max_k is none), then aggregated over the
// queries per position (mean, median — the lower middle, as torch.median —,
// min, max). A query without positives is the curve of zeros (neg), of ones
// (pos), left out (skip), or fails Compute (error); no query gives zeros.
// Per query: hits(k) = relevant documents among the k first by preds
// (stable descending order: where TorchMetrics' preds.topk breaks ties in
// another order, a tie across position k may count another document),
// recall = hits(k) / positives, precision = hits(k) / k, or with adaptive_k
// hits(k) / min(k, documents). top_k is 1..K whatever adaptive_k says (the
// class returns arange(1, K + 1)).
//
// The rows are the retrieval metrics' shared `cat` states
// (metrics/retrieval/retrieval.cc). Finalize sorts them with segment_sort, builds the
// [N, K] matrix of relevant rows ranked within the first k of their query
// and sums it per query with one segment_scan (rows along dim 0): every
// query's curve sits at its last row, so there is no host loop over queries.
// With max_k given, finalize has no data-dependent shape; with max_k=None,
// K is read from the data (masked_select, marked by `tally inspect`).
// Finalize holds a few [N, K] float64 matrices (N rows, not queries: the
// price of keeping the query count out of the shapes), so a large K over
// many rows costs memory: about 100 bytes per row and position.
//
// Values are float32 like TorchMetrics': each query's curve is rounded to
// float32 (exactly TorchMetrics' float32 divisions), the mean is summed in
// float64 and rounded once. recall_at_fixed_precision compares precision
// with min_precision in float32, as TorchMetrics compares a float32 tensor
// with a Python float, and picks the largest recall among the positions
// whose precision qualifies, ties to the larger k; when none qualifies or
// the largest recall is 0, recall 0 and best_k = K.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "metrics/retrieval/rows.h"
#include "ops/attrs.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using ir::DType;
using ir::Reducer;
using ops::Expr;

enum class Kind { kCurve, kRecallAtFixedPrecision };

struct Args {
  std::optional<int64_t> max_k;
  bool adaptive_k = false;
  std::string action;
  std::optional<int64_t> ignore_index;
  std::string aggregation = "mean";
  double min_precision = 0.0;
};

absl::StatusOr<Args> ReadArgs(Kind kind, SpecArgs& args) {
  Args a;
  if (kind == Kind::kRecallAtFixedPrecision) {
    TALLY_ASSIGN_OR_RETURN(a.min_precision, args.GetDouble("min_precision", 0.0));
    // TorchMetrics requires a float in [0, 1] (`isinstance(min_precision, float)`).
    const ArgValue* raw = args.Find("min_precision");
    if ((raw != nullptr && !std::holds_alternative<double>(*raw)) ||
        !(a.min_precision >= 0.0 && a.min_precision <= 1.0)) {
      return args.InvalidArgument(absl::StrCat("min_precision must be a float in [0, 1], got ",
                                               raw != nullptr ? ArgValueToString(*raw) : "0.0"));
    }
  }
  TALLY_ASSIGN_OR_RETURN(a.max_k, args.GetOptionalInt("max_k"));
  if (a.max_k.has_value() && *a.max_k <= 0) {
    return args.InvalidArgument(absl::StrCat("max_k must be a positive integer or none, got ", *a.max_k));
  }
  TALLY_ASSIGN_OR_RETURN(a.adaptive_k, args.GetBool("adaptive_k", false));
  TALLY_ASSIGN_OR_RETURN(a.action, args.GetEnum("empty_target_action", {"neg", "pos", "skip", "error"}, "neg"));
  TALLY_ASSIGN_OR_RETURN(a.ignore_index, args.GetOptionalInt("ignore_index"));
  // RetrievalRecallAtFixedPrecision passes its **kwargs on to
  // RetrievalPrecisionRecallCurve.__init__, so it takes `aggregation` too.
  TALLY_ASSIGN_OR_RETURN(a.aggregation, args.GetEnum("aggregation", {"mean", "median", "min", "max"}, "mean"));
  return a;
}

absl::StatusOr<dsl::Metric> BuildCurve(Kind kind, SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(Args a, ReadArgs(kind, args));

  MetricBuilder b(args.metric_name(), sig, device);
  // The same states as the other retrieval metrics (shared in a collection).
  SortedRows sorted;
  if (!ReadRetrievalRows(b, a.ignore_index, sorted)) return b.status();
  Expr keys = sorted.keys;
  Expr t = ops::Cast(sorted.target, DType::kFloat64);
  auto scan = [&](Expr x) {
    std::vector<Expr> r = b.OpN(ops::OpId::kSegmentScan, {x, keys}, {});
    return r.size() == 2 ? std::make_pair(r[0], r[1]) : std::make_pair(Expr(), Expr());
  };
  // v: 1 for a row that counts (its target is not ignore_index); rel: its relevance.
  Expr v = a.ignore_index.has_value() ? ops::Cast(!(t == static_cast<double>(*a.ignore_index)), DType::kFloat64)
                                      : ops::FullLike(t, 1.0, DType::kFloat64);
  Expr rel = v * t;
  auto [row_no, rows] = scan(ops::FullLike(v, 1.0, DType::kFloat64));
  auto [pos, count] = scan(v);  // pos: 1-based rank among the query's counted rows
  Expr npos = scan(rel).second;
  if (!b.ok()) return b.status();
  Expr exists = (row_no == rows) && (count > 0.0);  // a query, at its last row
  Expr empty = npos == 0.0;
  Expr include = a.action == "skip" || a.action == "error" ? exists && !empty : exists;

  // ks: the positions 1..K (f64). max_k=None: K = the largest query's count,
  // known only from the data.
  Expr ks;
  if (a.max_k.has_value()) {
    ks = ops::Cast(ops::Arange(keys, *a.max_k, DType::kInt64), DType::kFloat64) + 1.0;
  } else {
    Expr largest = ops::Max(ops::Concat({count, ops::Full(count, {1}, 0.0, DType::kFloat64)}));
    Expr seq = ops::Cumsum(ops::FullLike(count, 1.0, DType::kFloat64), 0);
    ks = b.Op(ops::OpId::kMaskedSelect, {seq, seq <= largest}, {});
  }
  if (!b.ok()) return b.status();
  Expr k_row = ops::Unsqueeze(ks, 0);  // [1, K]
  // hits[i, k]: relevant rows of row i's query among its first k (per query,
  // broadcast to each of its rows).
  Expr in_first_k = ops::Cast(ops::Unsqueeze(pos, 1) <= k_row, DType::kFloat64);
  Expr hits = scan(ops::Unsqueeze(rel, 1) * in_first_k).second;  // [N, K]
  if (!b.ok()) return b.status();
  Expr denom = a.adaptive_k ? ops::Minimum(k_row, ops::Unsqueeze(count, 1)) : k_row;
  Expr empty_col = ops::Unsqueeze(empty, 1);
  const double fill = a.action == "pos" ? 1.0 : 0.0;
  // Each query's curve in float32, as TorchMetrics computes it.
  auto per_query = [&](Expr value) { return ops::Cast(ops::Where(empty_col, fill, value), DType::kFloat32); };
  Expr precision_q = per_query(ops::SafeDiv(hits, denom));
  Expr recall_q = per_query(ops::SafeDiv(hits, ops::Unsqueeze(npos, 1)));

  Expr queries = ops::Sum(ops::Cast(include, DType::kFloat64));
  Expr inc_col = ops::Unsqueeze(include, 1);
  auto aggregate = [&, &count = count](Expr q32) -> Expr {  // clang 14 cannot capture a binding
    Expr q64 = ops::Cast(q32, DType::kFloat64);
    if (a.aggregation == "mean") {
      Expr sum = ops::Sum(ops::Where(inc_col, q64, 0.0), {0});
      return ops::Cast(ops::SafeDiv(sum, queries), DType::kFloat32);
    }
    // A sentinel row keeps the reductions over dim 0 defined without rows.
    const double extreme = a.aggregation == "max" ? -INFINITY : INFINITY;
    Expr sentinel = k_row * 0.0 + extreme;  // [1, K]
    Expr vals = ops::Concat({ops::Where(inc_col, q64, extreme), sentinel});
    Expr picked;
    if (a.aggregation == "min") {
      picked = ops::Min(vals, {0});
    } else if (a.aggregation == "max") {
      picked = ops::Max(vals, {0});
    } else {  // the lower of the two middle values of each column
      Expr sorted = ops::SortValues(vals, 0);
      Expr row =
          ops::Cumsum(
              ops::Concat({ops::FullLike(count, 1.0, DType::kFloat64), ops::Full(count, {1}, 1.0, DType::kFloat64)}),
              0) -
          1.0;
      Expr middle = ops::Cast(ops::Cast((queries - 1.0) / 2.0, DType::kInt64), DType::kFloat64);
      picked = ops::Sum(ops::Where(ops::Unsqueeze(row == middle, 1), sorted, 0.0), {0});
    }
    return ops::Cast(ops::Where(queries == 0.0, 0.0, picked), DType::kFloat32);
  };
  Expr precision = aggregate(precision_q);
  Expr recall = aggregate(recall_q);
  Expr top_k = ops::Cast(ks, DType::kInt64);
  if (!b.ok()) return b.status();

  // The value checks, then (error) the queries without positives, gate the
  // result: the first part carries them.
  auto checked = [&](Expr value) {
    Expr out = b.Op(
        ops::OpId::kAssertZero, {sorted.not_binary, value},
        ops::ToAttrMap(ops::AssertZeroAttrs{absl::StrCat(args.metric_name(), ": target: {n} values outside {0, 1}")}));
    if (a.action == "error") {
      out = b.Op(ops::OpId::kAssertZero, {ops::Sum(ops::Cast(exists && empty, DType::kInt64)), out},
                 ops::ToAttrMap(ops::AssertZeroAttrs::WholeState(absl::StrCat(
                     args.metric_name(), ": {n} queries without a positive target (empty_target_action=error)"))));
    }
    return out;
  };

  if (kind == Kind::kCurve) {
    Expr p = checked(precision);
    if (!b.ok()) return b.status();
    b.Output(dsl::Parts{p, recall, top_k});
    return b.Finish();
  }
  // _retrieval_recall_at_fixed_precision: the largest recall whose precision
  // >= min_precision (in float32), ties to the larger k.
  const double threshold = static_cast<double>(static_cast<float>(a.min_precision));
  Expr p64 = ops::Cast(precision, DType::kFloat64);
  Expr r64 = ops::Cast(recall, DType::kFloat64);
  Expr k64 = ops::Cast(top_k, DType::kFloat64);
  Expr qualifies = p64 >= threshold;
  Expr none = ops::Full(p64, {1}, -1.0, DType::kFloat64);
  Expr best_recall = ops::Max(ops::Concat({ops::Where(qualifies, r64, -1.0), none}));
  Expr best_k = ops::Max(ops::Concat({ops::Where(qualifies && (r64 == best_recall), k64, -1.0), none}));
  Expr found = best_recall > 0.0;
  Expr length = ops::Cast(ops::Size(top_k, 0), DType::kFloat64);
  Expr recall_out = checked(ops::Cast(ops::Where(found, best_recall, 0.0), DType::kFloat32));
  Expr k_out = ops::Cast(ops::Where(found, best_k, length), DType::kInt64);
  if (!b.ok()) return b.status();
  b.Output(dsl::Parts{recall_out, k_out});
  return b.Finish();
}

}  // namespace

void RegisterRetrievalCurveMetrics(std::vector<MetricInfo>& out) {
  const std::vector<std::string> in = {"preds", "target", "indexes"};
  out.push_back({"retrieval_precision_recall_curve", "retrieval", in, Bound(BuildCurve, Kind::kCurve)});
  out.push_back(
      {"retrieval_recall_at_fixed_precision", "retrieval", in, Bound(BuildCurve, Kind::kRecallAtFixedPrecision)});
}

}  // namespace tally::metrics
