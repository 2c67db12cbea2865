// Centred, mergeable moments for the regression metrics (r2_score,
// explained_variance, pearson_corrcoef, concordance_corrcoef).
//
// A MomentGroup keeps, for a few float64 variables of shape [N, D] (D
// outputs), the row count n and, per column, the mean and the centred second
// moment M2 = Σ(x − mean)², plus the centred co-moment C = Σ(x − mean_x)(y −
// mean_y) of chosen pairs of variables. Every batch's own moments are
// computed two-pass in float64 (the mean first, then sums of centred
// products) by the composite op reg_stats (ops/composite_ops.cc; its
// decomposition is that computation op for op, its fused CPU kernel does it
// block by block in one read of the inputs, ops/fused/reg_stats.h), and the
// states of batches, thread shards or ranks are folded with the pairwise
// formulas of Chan, Golub and LeVeque (1979) in one custom-merge group (the
// composite op moments_merge: these formulas as its decomposition, one fused
// kernel per fold on CPU):
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
//   MomentGroup m(b, "moments", d, rows);        // rows: the batch's i64 row count
//   int x = m.AddVariable("preds", {hi_p, lo_p, m2_p});   // f64 [d] partials
//   int y = m.AddVariable("target", {hi_t, lo_t, m2_t});
//   int xy = m.AddCoMoment(x, y, c_pt);
//   m.Finish();
//   ... m.Count(), m.Mean(x), m.M2(y), m.CoMoment(xy) in finalize
#ifndef TALLY_METRICS_REGRESSION_MOMENTS_H_
#define TALLY_METRICS_REGRESSION_MOMENTS_H_

#include <string>
#include <vector>

#include "engine/dsl/builder.h"

namespace tally::metrics {

// BatchMoments are one variable's moments over one batch (update-graph f64
// [d] values): the two-double mean hi + lo and the centred second moment.
struct BatchMoments {
  ops::Expr hi, lo, m2;
};

// MomentGroup declares the states, update partials and merge graph of one
// group of centred moments on a MetricBuilder.
class MomentGroup {
 public:
  // MomentGroup declares the row count state `n` (i64) of merge group `group`
  // for variables with `d` columns; `rows` is the batch's row count (an
  // update-graph i64 scalar). Weighted moments pass the batch's weight sum
  // (f64) instead: `n` is then that sum, and every formula above reads it as
  // a count (row i counts as w_i rows).
  MomentGroup(dsl::MetricBuilder& b, std::string group, int64_t d, ops::Expr rows);

  // AddVariable declares `mean_<name>`, `mean_lo_<name>` and `m2_<name>`
  // (f64 [d]) with the batch's moments as partials and returns the
  // variable's index.
  int AddVariable(const std::string& name, const BatchMoments& batch);
  // AddCoMoment declares `c_<a>_<b>` (f64 [d]) for two variables, with the
  // batch's centred co-moment `batch` (f64 [d]) as partial, and returns the
  // pair's index.
  int AddCoMoment(int a, int b, ops::Expr batch);
  // Finish writes the merge graph; call it once, after every Add*.
  void Finish();

  // Finalize-graph reads: the row count as an f64 scalar, and the per-column
  // mean, centred second moment and co-moment (f64 [d]). MeanDifference is
  // mean(a) − mean(b) from the two-double means, exact to its own rounding.
  ops::Expr Count();
  ops::Expr Mean(int v);
  ops::Expr MeanDifference(int a, int b);
  ops::Expr M2(int v);
  ops::Expr CoMoment(int pair);

 private:
  struct Variable {
    std::string name;
    dsl::State mean, mean_lo, m2;
  };
  struct Pair {
    int a, b;
    dsl::State c;
  };

  dsl::MetricBuilder& b_;
  std::string group_;
  int64_t d_;
  dsl::State n_;
  std::vector<Variable> vars_;
  std::vector<Pair> pairs_;
};

}  // namespace tally::metrics

#endif  // TALLY_METRICS_REGRESSION_MOMENTS_H_
