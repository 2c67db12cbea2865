// Clustering scores of data points and their cluster ids, with TorchMetrics
// 1.5.2's names and inputs (`data` [N, D] floating, `labels` [N] integer) and
// the cluster count declared (`num_clusters`, required: TorchMetrics infers
// it with torch.unique, a host sync):
//   calinski_harabasz_score: per-cluster moments, O(K·D) and mergeable:
//     counts, means [K, D] and M2 = Σ ||x - mean_k||² per cluster, each
//     batch's computed two-pass and folded with Chan et al.'s pairwise
//     formulas (a custom merge), so points far from zero keep their digits;
//   davies_bouldin_score and dunn_index(p=2.0): distances to the final
//     centroids, so the points are kept (cat states under the memory
//     budget) and everything is computed at finalize in float64.
// A cluster id without rows is absent, as with torch.unique. TorchMetrics
// raises unless 1 < clusters with rows < N (Calinski-Harabasz,
// Davies-Bouldin) or when fewer than 2 clusters have rows (Dunn); Compute
// fails alike, naming `labels`.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "metrics/regression/operands.h"
#include "ops/attrs.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ops::Expr;

enum class Score { kCalinskiHarabasz, kDaviesBouldin, kDunn };

struct Points {
  Expr data;    // [N, D] as declared (float16/bfloat16 widened)
  Expr labels;  // i64 [N]; ids outside [0, K) become -1
  int64_t d = 0;
};

bool ReadPoints(MetricBuilder& b, int64_t k, Points& out) {
  Expr data = b.Input("data");
  Expr labels = b.Input("labels");
  if (!b.ok()) return false;
  const std::vector<int64_t>& ds = b.FindInput("data")->shape;
  const std::vector<int64_t>& ls = b.FindInput("labels")->shape;
  if (ds.size() != 2 || !ir::IsFloating(data.dtype())) {
    b.FailInput("data", absl::StrCat("expected floating points of shape [N, D], got ", ir::DTypeName(data.dtype()),
                                     " of shape ", ShapeText(ds)));
  } else if (ls.size() != 1 || ir::IsFloating(labels.dtype())) {
    b.FailInput("labels", absl::StrCat("expected integer cluster ids of shape [N], got ", ir::DTypeName(labels.dtype()),
                                       " of shape ", ShapeText(ls)));
  }
  if (!b.ok()) return false;
  Expr ids = ops::Cast(labels, DType::kInt64);
  b.Check("labels", absl::StrCat("{n} values outside [0, ", k, ")"), ops::CountOutside(ids, 0, k));
  out.data = data;
  out.labels = ops::Where(ids >= 0.0 && ids < static_cast<double>(k), ids, int64_t{-1});
  out.d = ds[1];
  return true;
}

// Cell is the flat index label * D + j of every coordinate (-1 for a row
// without a cluster), [N, D].
Expr Cells(Expr labels, int64_t d) {
  Expr cell = ops::Unsqueeze(labels, 1) * static_cast<double>(d) + ops::Unsqueeze(ops::Arange(labels, d), 0);
  return ops::Where(ops::Unsqueeze(labels, 1) >= 0.0, cell, int64_t{-1});
}

// Centroids are the per-cluster counts (f64 [K]) and means (f64 [K, D]) of
// `x` (f64 [N, D]).
struct Centroids {
  Expr count, mean;
};
Centroids CentroidsOf(Expr x, Expr labels, int64_t k, int64_t d) {
  Centroids c;
  c.count = F64(ops::Histogram(labels, k));
  Expr sums = ops::Reshape(ops::Histogram(ops::Flatten(Cells(labels, d)), ops::Flatten(x), k * d), {k, d});
  c.mean = sums / ops::Maximum(ops::Unsqueeze(c.count, 1), ops::Scalar(c.count, 1.0));
  return c;
}

// PerRow is each row's row of the per-cluster table `t` [K, D] (rows without
// a cluster read cluster 0's; callers drop them), [N, D].
Expr PerRow(Expr t, Expr labels, int64_t d) {
  return ops::Take(ops::Flatten(t), ops::Maximum(Cells(labels, d), ops::Scalar(labels, 0.0)));
}

// FromCentroid is each row's difference to its cluster's mean, [N, D].
Expr FromCentroid(Expr x, Expr labels, const Centroids& c, int64_t d) { return x - PerRow(c.mean, labels, d); }

// Norm is the p-norm along dim `dim`.
Expr Norm(Expr diff, int64_t dim, double p) {
  if (p == 2.0) return ops::Sqrt(ops::Sum(diff * diff, {dim}));
  return ops::Pow(ops::Sum(ops::Pow(ops::Abs(diff), ops::Scalar(diff, p)), {dim}), ops::Scalar(diff, 1.0 / p));
}

// Refuse is `value`, or Compute's error naming `labels` when `bad` holds.
Expr Refuse(MetricBuilder& b, Expr bad, Expr value, const std::string& why) {
  return b.Op(ops::OpId::kAssertZero, {ops::Cast(bad, DType::kInt64), value},
              ops::ToAttrMap(ops::AssertZeroAttrs::WholeState(absl::StrCat(b.metric_name(), ": labels: ", why))));
}

absl::StatusOr<dsl::Metric> Build(Score score, SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(int64_t k, args.GetInt("num_clusters"));
  if (k < 1) return args.InvalidArgument(absl::StrCat("num_clusters must be an integer >= 1, got ", k));
  double p = 2.0;
  if (score == Score::kDunn) {
    TALLY_ASSIGN_OR_RETURN(p, args.GetDouble("p", 2.0));
    if (!(p > 0.0) || std::isinf(p)) return args.InvalidArgument(absl::StrCat("p must be a finite float > 0, got ", p));
  }
  MetricBuilder b(args.metric_name(), sig, device);
  Points in;
  if (!ReadPoints(b, k, in)) return b.status();
  const int64_t d = in.d;
  const std::string too_few = "needs more than one cluster with rows, and fewer clusters than rows";

  if (score == Score::kCalinskiHarabasz) {
    // The batch's own moments, two-pass, with each mean kept as hi + lo (lo
    // the mean of the residuals x - hi), as in metrics/regression/moments.h.
    Expr x = F64(in.data);
    Centroids batch = CentroidsOf(x, in.labels, k, d);
    Expr residual = FromCentroid(x, in.labels, batch, d);
    Expr cells = ops::Flatten(Cells(in.labels, d));
    Expr lo = ops::Reshape(ops::Histogram(cells, ops::Flatten(residual), k * d), {k, d}) /
              ops::Maximum(ops::Unsqueeze(batch.count, 1), ops::Scalar(batch.count, 1.0));
    Expr centred = residual - PerRow(lo, in.labels, d);
    Expr m2 = ops::Histogram(in.labels, ops::Sum(centred * centred, {1}), k);
    const std::string group = "cluster_moments";
    State n = b.AddState("count", DType::kFloat64, {k}, ir::Reducer::kCustom, 0, group);
    State hi_s = b.AddState("mean", DType::kFloat64, {k, d}, ir::Reducer::kCustom, 0, group);
    State lo_s = b.AddState("mean_lo", DType::kFloat64, {k, d}, ir::Reducer::kCustom, 0, group);
    State m2_s = b.AddState("m2", DType::kFloat64, {k}, ir::Reducer::kCustom, 0, group);
    b.Accumulate(n, batch.count);
    b.Accumulate(hi_s, batch.mean);
    b.Accumulate(lo_s, lo);
    b.Accumulate(m2_s, m2);
    // Chan, Golub and LeVeque per cluster (ops/decompositions.cc's
    // moments_merge): n = na + nb, δ = mean_b - mean_a, mean = mean_a + δ nb/n
    // as two doubles (TwoSum), M2 = M2a + M2b + |δ|² na nb / n.
    Expr na = b.MergeA(n), nb = b.MergeB(n);
    Expr ha = b.MergeA(hi_s), hb = b.MergeB(hi_s), la = b.MergeA(lo_s), lb = b.MergeB(lo_s);
    Expr total = na + nb;
    Expr a_empty = ops::Unsqueeze(na == 0.0, 1), b_empty = ops::Unsqueeze(nb == 0.0, 1);
    Expr delta = (hb - ha) + (lb - la);
    Expr t = la + delta * ops::Unsqueeze(ops::SafeDiv(nb, total), 1);
    Expr sum = ha + t;
    Expr t_part = sum - ha;
    Expr err = (ha - (sum - t_part)) + (t - t_part);
    b.SetMerged(n, total);
    b.SetMerged(hi_s, ops::Where(b_empty, ha, ops::Where(a_empty, hb, sum)));
    b.SetMerged(lo_s, ops::Where(b_empty, la, ops::Where(a_empty, lb, err)));
    Expr extra = ops::Sum(ops::Where(a_empty || b_empty, 0.0, delta * delta), {1}) * ops::SafeDiv(na * nb, total);
    b.SetMerged(m2_s, b.MergeA(m2_s) + b.MergeB(m2_s) + extra);

    // The centres relative to a shift s (any point near them: the mean of
    // the clusters' hi), (hi - s) + lo, so that centres far from zero keep
    // their digits.
    Expr count = b.Read(n);
    Expr hi = b.Read(hi_s);
    Expr rows = ops::Sum(count);
    Expr present = ops::Sum(F64(count > 0.0));
    Expr has = ops::Unsqueeze(count > 0.0, 1);
    Expr shift = ops::Sum(ops::Where(has, hi, 0.0), {0}, /*keepdim=*/true) / present;
    Expr centre = ops::Where(has, (hi - shift) + b.Read(lo_s), 0.0);
    Expr overall = ops::Sum(centre * ops::Unsqueeze(count, 1), {0}) / rows;
    Expr off = centre - ops::Unsqueeze(overall, 0);
    Expr between = ops::Sum(count * ops::Sum(off * off, {1}));
    Expr within = ops::Sum(b.Read(m2_s));
    Expr value = ops::Where(within == 0.0, 1.0, between * (rows - present) / (within * (present - 1.0)));
    b.Output(Refuse(b, !(present > 1.0 && present < rows), value, too_few));
    return b.Finish();
  }

  // Davies-Bouldin and Dunn keep the points.
  State points = b.AddState("data", in.data.dtype(), {d}, ir::Reducer::kCat);
  State ids = b.AddState("labels", DType::kInt64, {}, ir::Reducer::kCat);
  b.Accumulate(points, in.data);
  b.Accumulate(ids, in.labels);
  Expr x = F64(b.Read(points));
  Expr labels = b.Read(ids);
  Centroids c = CentroidsOf(x, labels, k, d);
  Expr has_cluster = labels >= 0.0;
  Expr dist = Norm(FromCentroid(x, labels, c, d), 1, p);  // [R]
  Expr present = c.count > 0.0;
  Expr clusters = ops::Sum(F64(present));
  Expr pair = ops::Unsqueeze(present, 1) && ops::Unsqueeze(present, 0);
  Expr between = Norm(ops::Unsqueeze(c.mean, 1) - ops::Unsqueeze(c.mean, 0), 2, p);  // [K, K]
  if (score == Score::kDunn) {
    Expr distinct = pair && !ops::Cast(ops::OneHot(ops::Arange(labels, k), k), DType::kBool);
    Expr nearest = ops::Min(ops::Where(distinct, between, INFINITY));
    Expr widest = ops::Max(ops::Where(has_cluster, dist, 0.0));
    b.Output(Refuse(b, clusters < 2.0, nearest / widest, "needs at least two clusters with rows"));
    return b.Finish();
  }
  Expr intra = ops::SafeDiv(ops::Histogram(labels, dist, k), c.count);  // mean distance to the centroid
  // TorchMetrics' torch.allclose(·, 0): every value within 1e-8.
  Expr flat = ops::All(ops::Abs(intra) <= 1e-8) || ops::All(ops::Where(pair, ops::Abs(between), 0.0) <= 1e-8);
  Expr sep = ops::Where(pair && between != 0.0, between, INFINITY);
  Expr worst = ops::Max((ops::Unsqueeze(intra, 0) + ops::Unsqueeze(intra, 1)) / sep, {1});
  Expr value = ops::Where(flat, 0.0, ops::Sum(ops::Where(present, worst, 0.0)) / clusters);
  Expr rows = F64(ops::Size(labels, 0));
  b.Output(Refuse(b, !(clusters > 1.0 && clusters < rows), value, too_few));
  return b.Finish();
}

}  // namespace

void RegisterClusteringPointMetrics(std::vector<MetricInfo>& out) {
  const std::vector<std::string> inputs = {"data", "labels"};
  auto add = [&](const char* name, Score s) { out.push_back({name, "clustering", inputs, Bound(Build, s)}); };
  add("calinski_harabasz_score", Score::kCalinskiHarabasz);
  add("davies_bouldin_score", Score::kDaviesBouldin);
  add("dunn_index", Score::kDunn);
}

}  // namespace tally::metrics
