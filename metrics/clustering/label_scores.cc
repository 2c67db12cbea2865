// Clustering scores of predicted cluster ids against class ids, from the
// contingency table (metrics/clustering/contingency.h), with TorchMetrics
// 1.5.2's functional names, arguments and special cases:
//   mutual_info_score, normalized_mutual_info_score(average_method),
//   adjusted_mutual_info_score(average_method),
//   homogeneity_score, completeness_score, v_measure_score(beta),
//   rand_score, adjusted_rand_score, fowlkes_mallows_index;
// each also takes `num_classes` (required) and `num_clusters` (defaulting to
// num_classes), the declared label ranges. Empty rows and columns of the
// table change no result. Results are float64. And TorchMetrics 1.9.0's
// cluster_accuracy(num_classes): the share of rows a best one-to-one match
// of clusters to classes gets right.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/clustering/contingency.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ops::Expr;

// kFloat32Eps is torch.finfo(torch.float32).eps: TorchMetrics compares the
// mutual information with it (in the default dtype) before normalizing.
constexpr double kFloat32Eps = 1.1920928955078125e-07;

enum class Score {
  kMutualInfo,
  kNormalizedMutualInfo,
  kAdjustedMutualInfo,
  kHomogeneity,
  kCompleteness,
  kVMeasure,
  kRand,
  kAdjustedRand,
  kFowlkesMallows,
};

// GeneralizedMean is TorchMetrics' calculate_generalized_mean of the two
// entropies.
Expr GeneralizedMean(Expr u, Expr v, const std::string& method) {
  if (method == "min") return ops::Minimum(u, v);
  if (method == "max") return ops::Maximum(u, v);
  if (method == "geometric") return ops::Sqrt(u * v);
  return (u + v) * 0.5;
}

// PairCounts is the pair confusion matrix (sklearn's pair_confusion_matrix):
// pairs of rows together in both labelings (tp), in the prediction only
// (fp), in the classes only (fn), in neither (tn), from integer sums.
struct PairCounts {
  Expr tn, fp, fn, tp;  // f64 []
};
PairCounts Pairs(MetricBuilder& b, const State& table) {
  Expr t = b.Read(table);  // i64: the squares and their sums stay exact
  Expr n = ops::Sum(t);
  Expr sq = ops::Sum(t * t);
  Expr classes = ops::Sum(t, {1});
  Expr clusters = ops::Sum(t, {0});
  PairCounts p;
  p.tp = F64(sq - n);
  p.fp = F64(ops::Sum(clusters * clusters) - sq);
  p.fn = F64(ops::Sum(classes * classes) - sq);
  p.tn = F64(n * n - sq) - p.fp - p.fn;
  return p;
}

absl::StatusOr<dsl::Metric> Build(Score score, SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(TableSizes sizes, ReadTableSizes(args));
  std::string average = "arithmetic";
  if (score == Score::kNormalizedMutualInfo || score == Score::kAdjustedMutualInfo) {
    TALLY_ASSIGN_OR_RETURN(average,
                           args.GetEnum("average_method", {"min", "geometric", "arithmetic", "max"}, "arithmetic"));
  }
  double beta = 1.0;
  if (score == Score::kVMeasure) {
    TALLY_ASSIGN_OR_RETURN(beta, args.GetDouble("beta", 1.0));
    if (!(beta >= 0.0)) return args.InvalidArgument(absl::StrCat("beta must be >= 0, got ", beta));
  }
  MetricBuilder b(args.metric_name(), sig, device);
  State table = AddContingencyTable(b, sizes);
  if (!b.ok()) return b.status();

  if (score == Score::kRand || score == Score::kAdjustedRand || score == Score::kFowlkesMallows) {
    PairCounts p = Pairs(b, table);
    Expr value;
    if (score == Score::kRand) {
      Expr agree = p.tn + p.tp;
      Expr all = agree + p.fp + p.fn;
      value = ops::Where(agree == all || all == 0.0, 1.0, agree / all);
    } else if (score == Score::kAdjustedRand) {
      Expr num = 2.0 * (p.tp * p.tn - p.fn * p.fp);
      Expr den = (p.tp + p.fn) * (p.fn + p.tn) + (p.tp + p.fp) * (p.fp + p.tn);
      value = ops::Where(p.fn == 0.0 && p.fp == 0.0, 1.0, num / den);
    } else {
      // tk / pk and tk / qk: same-cluster pairs over each labeling's pairs.
      Expr value_nz = ops::Sqrt(p.tp / (p.tp + p.fn)) * ops::Sqrt(p.tp / (p.tp + p.fp));
      value = ops::Where(ops::Abs(p.tp) <= 1e-8, 0.0, value_nz);  // torch.allclose(tk, 0)
    }
    b.Output(value);
    return b.Finish();
  }

  Marginals m = ReadMarginals(b, table);
  Expr mi = MutualInfo(m);
  Expr h_preds = Entropy(m.clusters, m.n);
  Expr h_target = Entropy(m.classes, m.n);
  Expr value;
  switch (score) {
    case Score::kMutualInfo:
      value = mi;
      break;
    case Score::kNormalizedMutualInfo:
      // TorchMetrics returns the mutual information itself when it is within
      // float32 eps of 0 (sklearn returns 1.0 for two one-cluster labelings).
      value = ops::Where(ops::Abs(mi) <= kFloat32Eps, mi, mi / GeneralizedMean(h_preds, h_target, average));
      break;
    case Score::kAdjustedMutualInfo: {
      // TorchMetrics keeps the denominator's sign and at least float32 eps
      // of magnitude (two one-cluster labelings give 0 / eps = 0).
      Expr emi = b.Op(ops::OpId::kExpectedMutualInfo, {m.classes, m.clusters});
      Expr d = GeneralizedMean(h_preds, h_target, average) - emi;
      Expr den = ops::Where(d < 0.0, ops::Where(d > -kFloat32Eps, -kFloat32Eps, d),
                            ops::Where(d < kFloat32Eps, kFloat32Eps, d));
      value = (mi - emi) / den;
      break;
    }
    default: {
      // TorchMetrics: 1 where the entropy divided by is 0; every score is 0
      // without data.
      Expr homogeneity = ops::Where(h_target == 0.0, 1.0, mi / h_target);
      Expr completeness = ops::Where(h_preds == 0.0, 1.0, mi / h_preds);
      if (score == Score::kHomogeneity) {
        value = homogeneity;
      } else if (score == Score::kCompleteness) {
        value = completeness;
      } else {
        Expr hc = homogeneity + completeness;
        value =
            ops::Where(hc == 0.0, 1.0, (1.0 + beta) * homogeneity * completeness / (beta * homogeneity + completeness));
      }
      value = ops::Where(m.n == 0.0, 0.0, value);
      break;
    }
  }
  b.Output(value);
  return b.Finish();
}

// BuildClusterAccuracy is TorchMetrics 1.9.0's cluster_accuracy: the
// [num_classes, num_classes] confusion matrix (rows target), its best
// one-to-one matching of clusters to classes, and the rows it matches over
// all rows (NaN without data).
absl::StatusOr<dsl::Metric> BuildClusterAccuracy(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(int64_t c, args.GetInt("num_classes"));
  if (c < 1) return args.InvalidArgument(absl::StrCat("num_classes must be an integer >= 1, got ", c));
  MetricBuilder b(args.metric_name(), sig, device);
  State table = AddContingencyTable(b, TableSizes{c, c});
  if (!b.ok()) return b.status();
  Expr t = b.Read(table);
  b.Output(F64(b.Op(ops::OpId::kMaxAssignment, {t})) / F64(ops::Sum(t)));
  return b.Finish();
}

}  // namespace

void RegisterClusteringLabelMetrics(std::vector<MetricInfo>& out) {
  const std::vector<std::string> inputs = {"preds", "target"};
  auto add = [&](const char* name, Score s) { out.push_back({name, "clustering", inputs, Bound(Build, s)}); };
  add("mutual_info_score", Score::kMutualInfo);
  add("normalized_mutual_info_score", Score::kNormalizedMutualInfo);
  add("adjusted_mutual_info_score", Score::kAdjustedMutualInfo);
  add("homogeneity_score", Score::kHomogeneity);
  add("completeness_score", Score::kCompleteness);
  add("v_measure_score", Score::kVMeasure);
  add("rand_score", Score::kRand);
  add("adjusted_rand_score", Score::kAdjustedRand);
  add("fowlkes_mallows_index", Score::kFowlkesMallows);
  out.push_back({"cluster_accuracy", "clustering", inputs, BuildClusterAccuracy});
}

}  // namespace tally::metrics
