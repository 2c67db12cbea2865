// Clustering scores of data points and their cluster ids, with TorchMetrics
// 1.5.2's names and inputs (`data` [N, D] floating, `labels` [N] integer) and
// the cluster count declared (`num_clusters`, required: TorchMetrics infers
// it with torch.unique, a host sync): calinski_harabasz_score,
// davies_bouldin_score and dunn_index(p=2.0).
//
// Davies-Bouldin and Dunn read distances to the final centroids, so the
// points are kept (cat states under the memory budget) and every score is
// computed at finalize in float64, two-pass (centroids, then deviations from
// them), exact far from zero. Calinski-Harabasz keeps them too, for now: its
// O(K·D) form (per-cluster moments merged pairwise) gathers each row's batch
// centroid, which a bootstrap cannot yet replicate.
// A cluster id without rows is absent, as with torch.unique. Where
// TorchMetrics raises (unless 1 < clusters with rows < N for
// Calinski-Harabasz and Davies-Bouldin, fewer than 2 such clusters for Dunn)
// the value is NaN, so that one slice without enough clusters does not fail
// the others.
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
// `x` (f64 [N, D]), each mean as hi + lo: hi the rounded mean, lo the mean of
// the residuals x - hi, so that centroids far from zero keep their digits.
struct Centroids {
  Expr count, hi, lo;
};

// PerRow is each row's row of the per-cluster table `t` [K, D] (rows without
// a cluster read cluster 0's; callers drop them), [N, D].
Expr PerRow(Expr t, Expr labels, int64_t d) {
  return ops::Take(ops::Flatten(t), ops::Maximum(Cells(labels, d), ops::Scalar(labels, 0.0)));
}

Centroids CentroidsOf(Expr x, Expr labels, int64_t k, int64_t d) {
  Centroids c;
  c.count = F64(ops::Histogram(labels, k));
  Expr cells = ops::Flatten(Cells(labels, d));
  Expr n = ops::Maximum(ops::Unsqueeze(c.count, 1), ops::Scalar(c.count, 1.0));
  c.hi = ops::Reshape(ops::Histogram(cells, ops::Flatten(x), k * d), {k, d}) / n;
  Expr residual = x - PerRow(c.hi, labels, d);
  c.lo = ops::Reshape(ops::Histogram(cells, ops::Flatten(residual), k * d), {k, d}) / n;
  return c;
}

// FromCentroid is each row's difference to its cluster's mean, [N, D].
Expr FromCentroid(Expr x, Expr labels, const Centroids& c, int64_t d) {
  return (x - PerRow(c.hi, labels, d)) - PerRow(c.lo, labels, d);
}

// Between is c_i - c_j of every pair of centroids, [K, K, D].
Expr Between(const Centroids& c) {
  return (ops::Unsqueeze(c.hi, 1) - ops::Unsqueeze(c.hi, 0)) + (ops::Unsqueeze(c.lo, 1) - ops::Unsqueeze(c.lo, 0));
}

// Norm is the p-norm along dim `dim`.
Expr Norm(Expr diff, int64_t dim, double p) {
  if (p == 2.0) return ops::Sqrt(ops::Sum(diff * diff, {dim}));
  return ops::Pow(ops::Sum(ops::Pow(ops::Abs(diff), ops::Scalar(diff, p)), {dim}), ops::Scalar(diff, 1.0 / p));
}

// Undefined is NaN where TorchMetrics raises (too few clusters with rows),
// else `value`: a slice without enough clusters must not fail the others.
Expr Undefined(Expr undefined, Expr value) { return ops::Where(undefined, NAN, value); }

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

  // The points are kept: each score reads distances to the final centroids.
  State points = b.AddState("data", in.data.dtype(), {d}, ir::Reducer::kCat);
  State ids = b.AddState("labels", DType::kInt64, {}, ir::Reducer::kCat);
  b.Accumulate(points, in.data);
  b.Accumulate(ids, in.labels);
  Expr x = F64(b.Read(points));
  Expr labels = b.Read(ids);
  Centroids c = CentroidsOf(x, labels, k, d);
  Expr diff = FromCentroid(x, labels, c, d);  // [R, D]
  Expr has_cluster = labels >= 0.0;
  Expr present = c.count > 0.0;
  Expr clusters = ops::Sum(F64(present));
  Expr rows = F64(ops::Size(labels, 0));
  if (score == Score::kCalinskiHarabasz) {
    // Between- and within-cluster dispersion, two-pass from the kept points;
    // the centres relative to a shift s near them (the mean of the clusters'
    // hi), (hi - s) + lo, then to their overall mean.
    Expr has = ops::Unsqueeze(present, 1);
    Expr shift = ops::Sum(ops::Where(has, c.hi, 0.0), {0}, /*keepdim=*/true) / clusters;
    Expr centre = ops::Where(has, (c.hi - shift) + c.lo, 0.0);
    Expr overall = ops::Sum(centre * ops::Unsqueeze(c.count, 1), {0}) / rows;
    Expr off = centre - ops::Unsqueeze(overall, 0);
    Expr dispersion_between = ops::Sum(c.count * ops::Sum(off * off, {1}));
    Expr dispersion_within = ops::Sum(ops::Where(has_cluster, ops::Sum(diff * diff, {1}), 0.0));
    Expr value = ops::Where(dispersion_within == 0.0, 1.0,
                            dispersion_between * (rows - clusters) / (dispersion_within * (clusters - 1.0)));
    b.Output(Undefined(!(clusters > 1.0 && clusters < rows), value));
    return b.Finish();
  }
  Expr dist = Norm(diff, 1, p);  // [R]
  Expr pair = ops::Unsqueeze(present, 1) && ops::Unsqueeze(present, 0);
  Expr between = Norm(Between(c), 2, p);  // [K, K]
  if (score == Score::kDunn) {
    Expr distinct = pair && !ops::Cast(ops::OneHot(ops::Arange(labels, k), k), DType::kBool);
    Expr nearest = ops::Min(ops::Where(distinct, between, INFINITY));
    Expr widest = ops::Max(ops::Where(has_cluster, dist, 0.0));
    b.Output(Undefined(clusters < 2.0, nearest / widest));
    return b.Finish();
  }
  Expr intra = ops::SafeDiv(ops::Histogram(labels, dist, k), c.count);  // mean distance to the centroid
  // TorchMetrics' torch.allclose(·, 0): every value within 1e-8.
  Expr flat = ops::All(ops::Abs(intra) <= 1e-8) || ops::All(ops::Where(pair, ops::Abs(between), 0.0) <= 1e-8);
  Expr sep = ops::Where(pair && between != 0.0, between, INFINITY);
  Expr worst = ops::Max((ops::Unsqueeze(intra, 0) + ops::Unsqueeze(intra, 1)) / sep, {1});
  Expr value = ops::Where(flat, 0.0, ops::Sum(ops::Where(present, worst, 0.0)) / clusters);
  b.Output(Undefined(!(clusters > 1.0 && clusters < rows), value));
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
