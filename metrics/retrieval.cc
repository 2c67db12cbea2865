// Retrieval metrics with TorchMetrics' class semantics (RetrievalRecall,
// RetrievalPrecision, RetrievalMRR, RetrievalHitRate, RetrievalMAP,
// RetrievalRPrecision, RetrievalFallOut, RetrievalNormalizedDCG): rows of (indexes, preds, target)
// are grouped by query, each query is scored on its documents sorted by preds
// (descending, stable), and the result is the mean over queries.
//
// Update only appends rows to `cat` states (ignored and invalid rows are kept
// with target -1 so that no shape depends on values). Finalize sorts the rows
// by (index, preds descending) with segment_sort and computes every per-query
// quantity with segment_scan (within-query cumulative sums and totals); each
// query is read at its last row, so there is neither a host loop over queries
// nor a data-dependent number of them.
//
// Arguments: top_k (none = all documents), empty_target_action (neg, pos,
// skip; the default is neg, pos for fall_out), ignore_index, adaptive_k
// (precision). Targets must be 0/1 (a deferred check).
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "engine/status_macros.h"
#include "metrics/registry.h"

namespace tally::metrics {
namespace {

using dsl::Expr;
using dsl::MetricBuilder;
using ir::DType;
using ir::Reducer;

enum class Kind { kRecall, kPrecision, kReciprocalRank, kHitRate, kAveragePrecision, kRPrecision, kFallOut, kNdcg };

absl::StatusOr<Metric> BuildRetrieval(Kind kind, SpecArgs& args, const dsl::Signature& sig,
                                      const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(std::optional<int64_t> top_k, args.GetOptionalInt("top_k"));
  if (top_k.has_value() && *top_k <= 0) return args.InvalidArgument("top_k must be a positive integer or none");
  if (kind == Kind::kRPrecision && top_k.has_value()) return args.InvalidArgument("unknown argument 'top_k'");
  bool adaptive_k = false;
  if (kind == Kind::kPrecision) {
    TALLY_ASSIGN_OR_RETURN(adaptive_k, args.GetBool("adaptive_k", false));
  }
  TALLY_ASSIGN_OR_RETURN(std::string action,
                         args.GetEnum("empty_target_action", {"neg", "pos", "skip", "error"},
                                      kind == Kind::kFallOut ? "pos" : "neg"));
  if (action == "error") {
    return args.InvalidArgument("empty_target_action=error is not supported yet (use neg, pos or skip)");
  }
  TALLY_ASSIGN_OR_RETURN(std::optional<int64_t> ignore_index, args.GetOptionalInt("ignore_index"));

  MetricBuilder b(args.metric_name(), sig, device);
  Expr indexes = b.Input("indexes");
  Expr preds = b.Input("preds");
  Expr target = b.Input("target");
  if (!b.ok()) return b.status();
  for (const auto& [name, e] : {std::pair<std::string, Expr>{"indexes", indexes}, {"preds", preds}, {"target", target}}) {
    if (e.rank() != 1) b.FailInput(name, absl::StrCat("expected a 1-D tensor, got shape ", e.type().ShapeString()));
  }
  if (!ir::IsFloating(preds.dtype())) b.FailInput("preds", "expected a floating point tensor");
  if (indexes.dtype() != DType::kInt64 && indexes.dtype() != DType::kInt32) {
    b.FailInput("indexes", "expected an integer tensor (int64)");
  }
  if (!b.ok()) return b.status();

  // TorchMetrics ranks float32 preds (preds.float()) and takes bool, integer
  // or float targets; relevance must be 0/1 except for normalized_dcg, whose
  // graded relevance must be >= 0 here (-1 marks a row left out).
  Expr t = dsl::Cast(target, DType::kFloat64);
  Expr ignored = ignore_index.has_value() ? t == static_cast<double>(*ignore_index) : dsl::FullLike(t, 0, DType::kBool);
  Expr good = kind == Kind::kNdcg ? t >= 0.0 : (t == 0.0) || (t == 1.0);
  b.Check("target", kind == Kind::kNdcg ? "negative relevance values" : "values outside {0, 1}",
          dsl::Sum(dsl::Cast(!good && !ignored, DType::kInt64)));
  auto idx_rows = b.AddState("indexes", DType::kInt64, {}, Reducer::kCat);
  auto preds_rows = b.AddState("preds", DType::kFloat32, {}, Reducer::kCat);
  auto target_rows = b.AddState("target", DType::kFloat64, {}, Reducer::kCat);  // -1: row left out
  b.Accumulate(idx_rows, dsl::Cast(indexes, DType::kInt64));
  b.Accumulate(preds_rows, dsl::Cast(preds, DType::kFloat32));
  b.Accumulate(target_rows, dsl::Where(good && !ignored, t, -1.0));

  std::vector<Expr> s = b.OpN("segment_sort", {b.Read(idx_rows), b.Read(preds_rows), b.Read(target_rows)}, {});
  if (!b.ok()) return b.status();
  Expr v = dsl::Cast(s[2] >= 0.0, DType::kFloat64);   // 1 for a row that counts
  Expr rel = v * s[2];  // relevance (0/1 except for normalized_dcg)
  auto scan = [&](Expr x) {
    std::vector<Expr> r = b.OpN("segment_scan", {x, s[0]}, {});
    return std::make_pair(r[0], r[1]);
  };
  auto total = [&](Expr x) { return scan(x).second; };
  auto [row_no, rows] = scan(dsl::FullLike(v, 1.0, DType::kFloat64));
  auto [pos, n] = scan(v);  // pos: 1-based rank among the query's counted rows
  auto [seen_rel, npos] = scan(rel);
  Expr in_k = top_k.has_value() ? v * dsl::Cast(pos <= static_cast<double>(*top_k), DType::kFloat64) : v;
  Expr hits = total(rel * in_k);
  Expr empty = npos == 0.0;
  Expr value;
  switch (kind) {
    case Kind::kRecall: value = dsl::SafeDiv(hits, npos); break;
    case Kind::kPrecision: {
      Expr denom = n;
      if (top_k.has_value()) {
        Expr k = dsl::FullLike(n, static_cast<double>(*top_k), DType::kFloat64);
        denom = adaptive_k ? dsl::Minimum(n, k) : k;
      }
      value = dsl::SafeDiv(hits, denom);
      break;
    }
    case Kind::kHitRate: value = dsl::Cast(hits > 0.0, DType::kFloat64); break;
    case Kind::kReciprocalRank: {
      Expr first = rel * in_k * dsl::Cast(seen_rel == 1.0, DType::kFloat64);
      value = total(dsl::SafeDiv(first, pos));
      break;
    }
    case Kind::kAveragePrecision:
      value = dsl::SafeDiv(total(rel * in_k * dsl::SafeDiv(seen_rel, pos)), hits);
      break;
    case Kind::kRPrecision: {
      Expr in_r = v * dsl::Cast(pos <= npos, DType::kFloat64);
      value = dsl::SafeDiv(total(rel * in_r), npos);
      break;
    }
    case Kind::kNdcg: {
      // sklearn's _tie_average_dcg: a run of tied preds shares its mean
      // relevance over the discounts of its positions; the ideal DCG ranks by
      // relevance. Both orders list the same query at every row.
      auto discount = [&](Expr rank, Expr counted) {
        Expr d = dsl::SafeDiv(counted, dsl::Log(rank + 1.0) / std::log(2.0));
        return top_k.has_value() ? d * dsl::Cast(rank <= static_cast<double>(*top_k), DType::kFloat64) : d;
      };
      auto tie = [&](Expr x) { return b.OpN("segment_scan", {x, s[0], s[1]}, {})[1]; };
      Expr gain = total(discount(pos, v) * dsl::SafeDiv(tie(rel), tie(v)));
      std::vector<Expr> ideal = b.OpN("segment_sort", {s[0], s[2]}, {});
      Expr v2 = dsl::Cast(ideal[1] >= 0.0, DType::kFloat64);
      std::vector<Expr> pos2 = b.OpN("segment_scan", {v2, ideal[0]}, {});
      std::vector<Expr> best = b.OpN("segment_scan", {discount(pos2[0], v2) * v2 * ideal[1], ideal[0]}, {});
      value = dsl::SafeDiv(gain, best[1]);
      break;
    }
    case Kind::kFallOut: {
      Expr neg = v - rel;
      Expr negs = total(neg);
      value = dsl::SafeDiv(total(neg * in_k), negs);
      empty = negs == 0.0;
      break;
    }
  }
  Expr exists = (row_no == rows) && (n > 0.0);
  Expr scored = dsl::Where(empty, action == "pos" ? 1.0 : 0.0, value);
  Expr include = action == "skip" ? exists && !empty : exists;
  Expr count = dsl::Sum(dsl::Cast(include, DType::kFloat64));
  b.Output(dsl::SafeDiv(dsl::Sum(dsl::Where(include, scored, 0.0)), count));
  return b.Finish();
}

template <Kind kKind>
absl::StatusOr<Metric> Build(SpecArgs& a, const dsl::Signature& s, const ir::Device& d) {
  return BuildRetrieval(kKind, a, s, d);
}

}  // namespace

void RegisterRetrievalMetrics(std::vector<MetricInfo>& out) {
  const std::vector<std::string> in = {"preds", "target", "indexes"};
  out.push_back({"retrieval_recall", "retrieval", in, Build<Kind::kRecall>});
  out.push_back({"retrieval_precision", "retrieval", in, Build<Kind::kPrecision>});
  out.push_back({"retrieval_reciprocal_rank", "retrieval", in, Build<Kind::kReciprocalRank>});
  out.push_back({"retrieval_hit_rate", "retrieval", in, Build<Kind::kHitRate>});
  out.push_back({"retrieval_average_precision", "retrieval", in, Build<Kind::kAveragePrecision>});
  out.push_back({"retrieval_r_precision", "retrieval", in, Build<Kind::kRPrecision>});
  out.push_back({"retrieval_fall_out", "retrieval", in, Build<Kind::kFallOut>});
  out.push_back({"retrieval_normalized_dcg", "retrieval", in, Build<Kind::kNdcg>});
}

}  // namespace tally::metrics
