// Centred, mergeable moments for the regression metrics (r2_score,
// explained_variance, pearson_corrcoef, concordance_corrcoef).
//
// A MomentGroup keeps, for a few float64 variables of shape [N, D] (D
// outputs), the row count n and, per column, the mean and the centred second
// moment M2 = Σ(x − mean)², plus the centred co-moment C = Σ(x − mean_x)(y −
// mean_y) of chosen pairs of variables. Every batch computes its own moments
// two-pass in float64 (the mean first, then sums of centred products), and
// the states of batches, thread shards or ranks are folded with the pairwise
// formulas of Chan, Golub and LeVeque (1979) in one custom-merge group:
//
//   n     = na + nb,   δ = mean_b − mean_a
//   mean  = mean_a + δ·nb/n
//   M2    = M2a + M2b + δ²·na·nb/n
//   C     = Ca + Cb + δx·δy·na·nb/n
//
// so that merging partial states equals one pass over all rows, and data far
// from zero keep their digits (TorchMetrics' float32 Σx² − n·mean² loses them
// all at an offset of 1e4).
//
// The mean is kept as an unevaluated sum of two doubles, mean = hi + lo (lo
// is the mean of the residuals x − hi within a batch, and the exact rounding
// error of hi after a merge, by Knuth's TwoSum). With a single double, δ at an
// offset of 1e6 carries an absolute error of ulp(1e6) ≈ 1e-10, which the δ²
// term turns into a first-order error of M2 (3e-11 relative for shards of
// unit-variance data); with hi + lo, δ = (hi_b − hi_a) + (lo_b − lo_a) is
// exact to rounding of δ itself and merged shards agree with one pass to
// ~1e-15.
//
// Either side may be empty (n = 0): the merge then returns the other side
// unchanged, through device-side selects, never a host branch. A column whose
// batch values are all equal gets exactly that value as its mean and exactly
// 0 as its M2, so that TorchMetrics' exact-zero tests (constant input → NaN
// Pearson, explained_variance num == 0) behave.
//
//   MomentGroup m(b, "moments", d);
//   int x = m.AddVariable("preds", preds64);    // f64 [N, d]
//   int y = m.AddVariable("target", target64);
//   int xy = m.AddCoMoment(x, y);
//   m.Finish();
//   ... m.Count(), m.Mean(x), m.M2(y), m.CoMoment(xy) in finalize
#ifndef TALLY_METRICS_REGRESSION_MOMENTS_H_
#define TALLY_METRICS_REGRESSION_MOMENTS_H_

#include <string>
#include <vector>

#include "engine/dsl/builder.h"

namespace tally::metrics {

// MomentGroup declares the states, update partials and merge graph of one
// group of centred moments on a MetricBuilder.
class MomentGroup {
 public:
  // MomentGroup declares the row count state `n` (i64) of merge group `group`
  // for variables with `d` columns.
  MomentGroup(dsl::MetricBuilder& b, std::string group, int64_t d);

  // AddVariable declares `mean_<name>`, `mean_lo_<name>` and `m2_<name>`
  // (f64 [d]) for `value`, an update-graph f64 [N, d] tensor, and returns the
  // variable's index.
  int AddVariable(const std::string& name, dsl::Expr value);
  // AddCoMoment declares `c_<a>_<b>` (f64 [d]) for two variables and returns
  // the pair's index.
  int AddCoMoment(int a, int b);
  // Finish writes the merge graph; call it once, after every Add*.
  void Finish();

  // Finalize-graph reads: the row count as an f64 scalar, and the per-column
  // mean, centred second moment and co-moment (f64 [d]). MeanDifference is
  // mean(a) − mean(b) from the two-double means, exact to its own rounding.
  dsl::Expr Count();
  dsl::Expr Mean(int v);
  dsl::Expr MeanDifference(int a, int b);
  dsl::Expr M2(int v);
  dsl::Expr CoMoment(int pair);

 private:
  struct Variable {
    std::string name;
    dsl::State mean, mean_lo, m2;
    dsl::Expr centred;  // update graph: value − batch mean
  };
  struct Pair {
    int a, b;
    dsl::State c;
  };

  dsl::MetricBuilder& b_;
  std::string group_;
  int64_t d_;
  dsl::State n_;
  bool n_accumulated_ = false;
  std::vector<Variable> vars_;
  std::vector<Pair> pairs_;
};

}  // namespace tally::metrics

#endif  // TALLY_METRICS_REGRESSION_MOMENTS_H_
