// Regression metrics, after TorchMetrics 1.5's functional API:
// mean_squared_error, mean_absolute_error, mean_absolute_percentage_error,
// r2_score, explained_variance, pearson_corrcoef, concordance_corrcoef,
// spearman_corrcoef, cosine_similarity, log_cosh_error.
//
// Inputs `preds` and `target` have the same shape, (N) or (N, d) (any rank
// for mse/mae with num_outputs=1 and for mape; (N, D) for cosine_similarity);
// integer inputs are cast to float. Everything is accumulated in float64;
// r2, explained_variance, pearson and concordance keep centred moments
// merged pairwise (metrics/regression/moments.h) so that data far from zero
// keep their digits and merged shards equal one pass. Those four and mse/mae
// (on (N) or (N, d) inputs) take their per-batch statistics from one shared
// composite op, reg_stats: a collection of them runs one fused kernel per
// update (ops/fused/reg_stats.h). tests/golden/SEMANTICS.md
// lists the TorchMetrics rules followed here; deliberate differences:
//
// * r2_score with fewer than 2 rows is NaN: TorchMetrics raises in compute,
//   and a deferred check cannot count "rows so far < 2" (it sums per-batch
//   counts), so the result says it instead.
// * A 1-D concordance_corrcoef is a scalar (TorchMetrics returns shape [1]
//   there, by a missing squeeze; pearson, from the same states, is a scalar).
// * pearson, concordance, spearman and log_cosh infer d from the shape like
//   the functional API; an explicit num_outputs (the module classes'
//   argument) must agree with it. A 1-D input with num_outputs > 1 is an
//   error here for every metric taking num_outputs (TorchMetrics' shape
//   check lets it through; its states then fail or broadcast).
// * explained_variance takes (N) or (N, d) like r2 (TorchMetrics reduces
//   dim 0 of any rank; d-dim outputs beyond 2-D are not supported here).
// * spearman accepts integer inputs (cast to float64; TorchMetrics raises).
// * cosine_similarity computes in float64 (TorchMetrics casts to float32),
//   and log_cosh_error is evaluated without overflow or cancellation (see
//   StableLogCosh; TorchMetrics' log((e^d + e^−d)/2) overflows past |d| ≈ 88
//   in float32).
#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "metrics/regression/moments.h"
#include "metrics/regression/operands.h"
#include "metrics/weights.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ir::Reducer;
using ops::Expr;

// TorchMetrics' lower bound on |target| in MAPE (reg/mape.py).
constexpr double kMapeEpsilon = 1.17e-06;
// TorchMetrics' isclose(atol=1e-4) test on rss and tss in r2 (reg/r2.py).
constexpr double kR2Atol = 1e-4;
// TorchMetrics' eps added to the denominator of spearman (reg/spearman.py).
constexpr double kSpearmanEpsilon = 1e-6;

// Columns are (N) or (N, d) operands: d columns.
struct Columns {
  Expr preds, target;  // as declared
  int64_t d = 1;
  bool one_dim = true;  // the inputs were (N)

  // F64 returns preds and target as float64 [N, d].
  std::pair<Expr, Expr> Float64() const {
    Expr p = F64(preds), t = F64(target);
    if (one_dim) return {ops::Unsqueeze(p, 1), ops::Unsqueeze(t, 1)};
    return {p, t};
  }
};

Columns AsColumns(const Operands& in) {
  Columns c;
  c.one_dim = in.rank() == 1;
  c.d = c.one_dim ? 1 : in.shape[1];
  c.preds = in.preds;
  c.target = in.target;
  return c;
}

// BatchStats are the results of reg_stats (ops/composite_ops.cc): one batch's
// statistics for (N) or (N, d) operands, per column unless noted. Every
// regression metric takes its partials from this node with the same inputs
// and no attributes, so in a collection cse merges it and the update runs one
// fused kernel (ops/fused/reg_stats.h) — or, where none exists, its
// decomposition, which is this file's former per-metric ATen code.
struct BatchStats {
  Expr n;                             // rows, i64 scalar
  BatchMoments preds, target, error;  // error = target − preds
  Expr c_preds_target;
  Expr sse, sae;          // Σ(preds − target)², Σ|preds − target|
  Expr sse_all, sae_all;  // the same over every element, f64 scalars
};

// ReadBatchStats adds the reg_stats node for declared inputs `preds` and
// `target` (f32/f64 as they are, other dtypes cast to float64).
bool ReadBatchStats(MetricBuilder& b, Expr preds, Expr target, BatchStats& out) {
  auto operand = [](Expr x) { return ir::IsFloating(x.dtype()) ? x : F64(x); };
  std::vector<Expr> r = b.OpN(ops::OpId::kRegStats, {operand(preds), operand(target)}, {});
  if (!b.ok()) return false;
  if (r.size() != 15) {
    b.Fail(absl::InternalError(absl::StrCat("reg_stats gave ", r.size(), " results, expected 15")));
    return false;
  }
  out.n = r[0];
  out.preds = {r[1], r[2], r[3]};
  out.target = {r[4], r[5], r[6]};
  out.error = {r[7], r[8], r[9]};
  out.c_preds_target = r[10];
  out.sse = r[11];
  out.sae = r[12];
  out.sse_all = r[13];
  out.sae_all = r[14];
  return true;
}

// ReadColumns reads (N) or (N, d) operands. With `num_outputs` set it must
// agree with the shape as in TorchMetrics' _check_data_shape_to_num_outputs:
// 1 needs (N) or (N, 1), d > 1 needs (N, d).
bool ReadColumns(MetricBuilder& b, std::optional<int64_t> num_outputs, Columns& out) {
  Operands in;
  if (!ReadOperands(b, in, 2)) return false;
  if (num_outputs.has_value()) {
    int64_t k = *num_outputs;
    bool ok = k == 1 ? in.rank() == 1 || in.shape[1] == 1 : in.rank() == 2 && in.shape[1] == k;
    if (!ok) {
      b.FailInput("preds",
                  absl::StrCat("num_outputs=", k, " expects shape ",
                               k == 1 ? "[N] or [N, 1]" : absl::StrCat("[N, ", k, "]"), ", got ", ShapeText(in.shape)));
      return false;
    }
  }
  out = AsColumns(in);
  return b.ok();
}

absl::StatusOr<std::optional<int64_t>> ReadNumOutputs(SpecArgs& args) {
  TALLY_ASSIGN_OR_RETURN(std::optional<int64_t> k, args.GetOptionalInt("num_outputs"));
  if (k.has_value() && *k < 1) {
    return args.InvalidArgument(absl::StrCat("num_outputs must be an integer >= 1, got ", *k));
  }
  return k;
}

// Squeezed drops the single column of a [1] result (a scalar for 1-D input).
Expr Squeezed(Expr v, bool squeeze) { return squeeze ? ops::Squeeze(v, 0) : v; }

// --- mean_squared_error, mean_absolute_error --------------------------------

enum class ErrorKind { kSquared, kAbsolute };

absl::StatusOr<dsl::Metric> BuildMeanError(ErrorKind kind, SpecArgs& args, const dsl::Signature& sig,
                                           const ir::Device& device) {
  bool squared = true;
  if (kind == ErrorKind::kSquared) {
    TALLY_ASSIGN_OR_RETURN(squared, args.GetBool("squared", true));
  }
  TALLY_ASSIGN_OR_RETURN(int64_t num_outputs, args.GetInt("num_outputs", 1));
  if (num_outputs < 1) {
    return args.InvalidArgument(absl::StrCat("num_outputs must be an integer >= 1, got ", num_outputs));
  }
  MetricBuilder b(args.metric_name(), sig, device);
  Operands in;
  if (!ReadOperands(b, in)) return b.status();
  // num_outputs=1 flattens every element into one output (reg/mse.py,
  // reg/mae.py); num_outputs=d keeps the d columns of an (N, d) input.
  std::vector<int64_t> shape;
  if (num_outputs != 1) {
    if (in.rank() != 2 || in.shape[1] != num_outputs) {
      b.FailInput("preds", absl::StrCat("num_outputs=", num_outputs, " expects shape [N, ", num_outputs, "], got ",
                                        ShapeText(in.shape)));
      return b.status();
    }
    shape = {num_outputs};
  }
  const bool squared_error = kind == ErrorKind::kSquared;
  Expr w = ReadWeight(b, in.preds);
  if (!b.ok()) return b.status();
  State sum = b.AddState(squared_error ? "sum_squared_error" : "sum_abs_error", DType::kFloat64, shape, Reducer::kSum);
  State total = b.AddState("total", w.valid() ? DType::kFloat64 : DType::kInt64, {}, Reducer::kSum);
  if (w.valid()) {
    // sklearn's sample_weight: Σ w·err / Σ w per output (every element of a
    // row weighs w; num_outputs=1 averages the elements of all outputs).
    Expr diff = F64(in.preds) - F64(in.target);
    Expr err = squared_error ? diff * diff : ops::Abs(diff);
    if (num_outputs == 1) {
      Expr we = PerElement(w, err);
      b.Accumulate(sum, ops::Sum(err * we));
      b.Accumulate(total, ops::Sum(we));
    } else {
      b.Accumulate(sum, ops::Sum(err * ops::Unsqueeze(w, 1), {0}));
      b.Accumulate(total, ops::Sum(w));
    }
  } else if (in.rank() <= 2) {
    // The shared statistics node (an (N) input is one column).
    BatchStats s;
    if (!ReadBatchStats(b, in.preds, in.target, s)) return b.status();
    if (num_outputs == 1) {
      int64_t columns = in.rank() == 2 ? in.shape[1] : 1;
      b.Accumulate(sum, squared_error ? s.sse_all : s.sae_all);
      b.Accumulate(total, columns == 1 ? s.n : s.n * static_cast<double>(columns));
    } else {
      b.Accumulate(sum, squared_error ? s.sse : s.sae);
      b.Accumulate(total, s.n);
    }
  } else {
    Expr diff = ops::Flatten(F64(in.preds) - F64(in.target));
    Expr err = squared_error ? diff * diff : ops::Abs(diff);
    b.Accumulate(sum, ops::Sum(err, {0}));
    b.Accumulate(total, ops::Size(diff, 0));
  }
  Expr mean = b.Read(sum) / ops::Cast(b.Read(total), DType::kFloat64);
  b.Output(squared ? mean : ops::Sqrt(mean));
  return b.Finish();
}

absl::StatusOr<dsl::Metric> BuildMeanSquaredError(SpecArgs& a, const dsl::Signature& s, const ir::Device& d) {
  return BuildMeanError(ErrorKind::kSquared, a, s, d);
}
absl::StatusOr<dsl::Metric> BuildMeanAbsoluteError(SpecArgs& a, const dsl::Signature& s, const ir::Device& d) {
  return BuildMeanError(ErrorKind::kAbsolute, a, s, d);
}

// --- mean_absolute_percentage_error -----------------------------------------

absl::StatusOr<dsl::Metric> BuildMeanAbsolutePercentageError(SpecArgs& args, const dsl::Signature& sig,
                                                             const ir::Device& device) {
  MetricBuilder b(args.metric_name(), sig, device);
  Operands in;
  if (!ReadOperands(b, in)) return b.status();
  Expr we = FlatWeights(b, "preds");
  if (!b.ok()) return b.status();
  Expr p = ops::Flatten(F64(in.preds)), t = ops::Flatten(F64(in.target));
  Expr ratio = ops::Abs(p - t) / ops::Clamp(ops::Abs(t), kMapeEpsilon, std::nullopt);
  State sum = b.AddState("sum_abs_per_error", DType::kFloat64, {}, Reducer::kSum);
  State total = b.AddState("total", we.valid() ? DType::kFloat64 : DType::kInt64, {}, Reducer::kSum);
  if (we.valid()) {
    b.Accumulate(sum, ops::Sum(ratio * we));
    b.Accumulate(total, ops::Sum(we));
  } else {
    b.Accumulate(sum, ops::Sum(ratio));
    b.Accumulate(total, ops::Size(p, 0));
  }
  b.Output(b.Read(sum) / ops::Cast(b.Read(total), DType::kFloat64));
  return b.Finish();
}

// --- r2_score, explained_variance -------------------------------------------

constexpr absl::string_view kMultioutput[] = {"raw_values", "uniform_average", "variance_weighted"};

// ReduceOutputs applies `multioutput` to per-column scores, with `weights`
// for variance_weighted (TorchMetrics divides without a guard: Σw = 0 → NaN).
Expr ReduceOutputs(const std::string& multioutput, Expr scores, Expr weights, const Columns& c) {
  if (multioutput == "raw_values") return Squeezed(scores, c.one_dim);
  if (multioutput == "uniform_average") return ops::Sum(scores) / static_cast<double>(c.d);
  return ops::Sum(weights / ops::Sum(weights) * scores);
}

// WeightedMoments are one batch's moments of `x` (f64 [N, d]) with row
// weights `wc` (f64 [N, 1]) summing to `total`: row i counts as w_i rows, as
// scikit-learn's sample_weight. Two-pass in float64 like reg_stats (the mean,
// then the weighted mean of the residuals as its low part, then the centred
// sum); a batch of zero total weight gives zeros, which the merge reads as
// an empty side.
BatchMoments WeightedMoments(Expr x, Expr wc, Expr total) {
  Expr hi = ops::SafeDiv(ops::Sum(wc * x, {0}), total);
  Expr residual = x - hi;
  Expr lo = ops::SafeDiv(ops::Sum(wc * residual, {0}), total);
  Expr centred = residual - lo;
  return {hi, lo, ops::Sum(wc * centred * centred, {0})};
}

absl::StatusOr<dsl::Metric> BuildR2Score(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(int64_t adjusted, args.GetInt("adjusted", 0));
  if (adjusted < 0) {
    return args.InvalidArgument(absl::StrCat("adjusted must be an integer >= 0, got ", adjusted));
  }
  TALLY_ASSIGN_OR_RETURN(std::string multioutput, args.GetEnum("multioutput", kMultioutput, "uniform_average"));
  MetricBuilder b(args.metric_name(), sig, device);
  Columns c;
  if (!ReadColumns(b, std::nullopt, c)) return b.status();
  Expr w = ReadWeight(b, c.preds);
  if (!b.ok()) return b.status();
  BatchMoments target_batch;
  Expr count, rss_batch, rows;
  if (w.valid()) {
    // sklearn's r2_score(sample_weight): rss = Σ w·(y − ŷ)², tss the
    // weighted centred Σ w·(y − ȳ_w)²; n (adjusted, and n < 2 → NaN) stays
    // the row count.
    auto [preds, target] = c.Float64();
    Expr wc = ops::Unsqueeze(w, 1), diff = preds - target;
    count = ops::Sum(w);
    target_batch = WeightedMoments(target, wc, count);
    rss_batch = ops::Sum(wc * diff * diff, {0});
    rows = ops::Size(preds, 0);
  } else {
    BatchStats s;
    if (!ReadBatchStats(b, c.preds, c.target, s)) return b.status();
    count = s.n;
    target_batch = s.target;
    rss_batch = s.sse;
  }
  // The states in the order state files hold them: moments, rss (, rows).
  MomentGroup moments(b, "moments", c.d, count);
  int t = moments.AddVariable("target", target_batch);
  moments.Finish();
  State rss_state = b.AddState("rss", DType::kFloat64, {c.d}, Reducer::kSum);
  b.Accumulate(rss_state, rss_batch);
  Expr rss = b.Read(rss_state), tss = moments.M2(t);
  Expr n;
  if (rows.valid()) {
    State rows_state = b.AddState("rows", DType::kInt64, {}, Reducer::kSum);
    b.Accumulate(rows_state, rows);
    n = ops::Cast(b.Read(rows_state), DType::kFloat64);
  } else {
    n = moments.Count();
  }
  // rss ≈ 0 (atol 1e-4) scores 1 whatever tss; else tss ≈ 0 scores 0.
  Expr raw = ops::Where(ops::Abs(rss) <= kR2Atol, 1.0, ops::Where(ops::Abs(tss) <= kR2Atol, 0.0, 1.0 - rss / tss));
  Expr r2 = ReduceOutputs(multioutput, raw, tss, c);
  if (adjusted != 0) {
    // adjusted >= n − 1 falls back to plain r2 (TorchMetrics warns).
    double k = static_cast<double>(adjusted);
    Expr adj = 1.0 - (1.0 - r2) * (n - 1.0) / (n - (k + 1.0));
    r2 = ops::Where(n - 1.0 > k, adj, r2);
  }
  b.Output(ops::Where(n < 2.0, NAN, r2));
  return b.Finish();
}

absl::StatusOr<dsl::Metric> BuildExplainedVariance(SpecArgs& args, const dsl::Signature& sig,
                                                   const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(std::string multioutput, args.GetEnum("multioutput", kMultioutput, "uniform_average"));
  MetricBuilder b(args.metric_name(), sig, device);
  Columns c;
  if (!ReadColumns(b, std::nullopt, c)) return b.status();
  Expr w = ReadWeight(b, c.preds);
  if (!b.ok()) return b.status();
  BatchMoments target_batch, error_batch;
  Expr count;
  if (w.valid()) {
    // sklearn's explained_variance_score(sample_weight): weighted means and
    // variances of the error and of the target.
    auto [preds, target] = c.Float64();
    Expr wc = ops::Unsqueeze(w, 1);
    count = ops::Sum(w);
    target_batch = WeightedMoments(target, wc, count);
    error_batch = WeightedMoments(target - preds, wc, count);
  } else {
    BatchStats s;
    if (!ReadBatchStats(b, c.preds, c.target, s)) return b.status();
    count = s.n;
    target_batch = s.target;
    error_batch = s.error;
  }
  MomentGroup moments(b, "moments", c.d, count);
  int target = moments.AddVariable("target", target_batch);
  int error = moments.AddVariable("error", error_batch);
  moments.Finish();

  Expr n = moments.Count();          // the rows, or their weight sum
  Expr num = moments.M2(error) / n;  // population variance of target − preds
  Expr den = moments.M2(target) / n;
  // Exact zero tests, as TorchMetrics: num == 0 → 1; den == 0 → 0.
  Expr scores = ops::Where(num == 0.0, 1.0, ops::Where(den == 0.0, 0.0, 1.0 - num / den));
  b.Output(ReduceOutputs(multioutput, scores, den, c));
  return b.Finish();
}

// --- pearson_corrcoef, concordance_corrcoef ---------------------------------

enum class CorrKind { kPearson, kConcordance };

absl::StatusOr<dsl::Metric> BuildCorrelation(CorrKind kind, SpecArgs& args, const dsl::Signature& sig,
                                             const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(std::optional<int64_t> num_outputs, ReadNumOutputs(args));
  MetricBuilder b(args.metric_name(), sig, device);
  Columns c;
  BatchStats s;
  if (!ReadColumns(b, num_outputs, c) || !ReadBatchStats(b, c.preds, c.target, s)) return b.status();
  MomentGroup moments(b, "moments", c.d, s.n);
  int x = moments.AddVariable("preds", s.preds);
  int y = moments.AddVariable("target", s.target);
  int xy = moments.AddCoMoment(x, y, s.c_preds_target);
  moments.Finish();

  // Sample (n − 1) statistics as reg/pearson.py; n < 2 or a constant column
  // gives 0/0 = NaN, which clamp keeps.
  Expr n1 = moments.Count() - 1.0;
  Expr var_x = moments.M2(x) / n1, var_y = moments.M2(y) / n1;
  Expr cov = moments.CoMoment(xy) / n1;
  Expr sd_x = ops::Sqrt(var_x), sd_y = ops::Sqrt(var_y);
  Expr pearson = ops::Clamp(cov / (sd_x * sd_y), -1.0, 1.0);
  if (kind == CorrKind::kPearson) {
    b.Output(Squeezed(pearson, c.d == 1));
  } else {
    // reg/concordance.py: 2·ρ·σx·σy / (σx² + σy² + (μx − μy)²), ρ clamped.
    Expr dm = moments.MeanDifference(x, y);
    Expr ccc = 2.0 * pearson * sd_x * sd_y / (var_x + var_y + dm * dm);
    b.Output(Squeezed(ccc, c.one_dim));
  }
  return b.Finish();
}

absl::StatusOr<dsl::Metric> BuildPearson(SpecArgs& a, const dsl::Signature& s, const ir::Device& d) {
  return BuildCorrelation(CorrKind::kPearson, a, s, d);
}
absl::StatusOr<dsl::Metric> BuildConcordance(SpecArgs& a, const dsl::Signature& s, const ir::Device& d) {
  return BuildCorrelation(CorrKind::kConcordance, a, s, d);
}

// --- spearman_corrcoef ------------------------------------------------------

absl::StatusOr<dsl::Metric> BuildSpearman(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(std::optional<int64_t> num_outputs, ReadNumOutputs(args));
  MetricBuilder b(args.metric_name(), sig, device);
  Columns c;
  if (!ReadColumns(b, num_outputs, c)) return b.status();
  // Ranks need every row: keep them (float32 rows stay float32; ranking
  // their float64 upcasts would give the same ranks).
  auto row_dtype = [&](const char* name) {
    return b.FindInput(name)->dtype == DType::kFloat32 ? DType::kFloat32 : DType::kFloat64;
  };
  State preds_rows = b.AddState("preds", row_dtype("preds"), {c.d}, Reducer::kCat);
  State target_rows = b.AddState("target", row_dtype("target"), {c.d}, Reducer::kCat);
  auto [preds, target] = c.Float64();
  b.Accumulate(preds_rows, preds);
  b.Accumulate(target_rows, target);

  // reg/spearman.py: average ranks for ties, population moments, +1e-6.
  // No rows give 0/0 = NaN.
  Expr rp = ops::RankAverage(b.Read(preds_rows));
  Expr rt = ops::RankAverage(b.Read(target_rows));
  Expr n = ops::Cast(ops::Size(rp, 0), DType::kFloat64);
  Expr dp = rp - ops::Sum(rp, {0}) / n;
  Expr dt = rt - ops::Sum(rt, {0}) / n;
  Expr cov = ops::Sum(dp * dt, {0}) / n;
  Expr sd_p = ops::Sqrt(ops::Sum(dp * dp, {0}) / n);
  Expr sd_t = ops::Sqrt(ops::Sum(dt * dt, {0}) / n);
  Expr corr = ops::Clamp(cov / (sd_p * sd_t + kSpearmanEpsilon), -1.0, 1.0);
  b.Output(Squeezed(corr, c.one_dim));
  return b.Finish();
}

// --- cosine_similarity ------------------------------------------------------

absl::StatusOr<dsl::Metric> BuildCosineSimilarity(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(std::string reduction, args.GetEnum("reduction", {"sum", "mean", "none"}, "sum"));
  MetricBuilder b(args.metric_name(), sig, device);
  Operands in;
  if (!ReadOperands(b, in, 2)) return b.status();
  if (in.rank() != 2) {
    b.FailInput("preds", absl::StrCat("expected a 2-D tensor of shape [N, D], got shape ", ShapeText(in.shape)));
    return b.status();
  }
  // Per row dot(p, t) / (‖p‖·‖t‖); a zero row gives 0/0 = NaN, as TorchMetrics.
  Expr p = F64(in.preds), t = F64(in.target);
  Expr dot = ops::Sum(p * t, {1});
  Expr norms = ops::Sqrt(ops::Sum(p * p, {1})) * ops::Sqrt(ops::Sum(t * t, {1}));
  Expr similarity = dot / norms;
  if (reduction == "none") {
    State rows = b.AddState("similarity", DType::kFloat64, {}, Reducer::kCat);
    b.Accumulate(rows, similarity);
    b.Output(b.Read(rows) + 0.0);
    return b.Finish();
  }
  State sum = b.AddState("sum_similarity", DType::kFloat64, {}, Reducer::kSum);
  b.Accumulate(sum, ops::Sum(similarity));
  if (reduction == "sum") {
    b.Output(b.Read(sum) + 0.0);
  } else {
    State total = b.AddState("total", DType::kInt64, {}, Reducer::kSum);
    b.Accumulate(total, ops::Size(similarity, 0));
    b.Output(b.Read(sum) / ops::Cast(b.Read(total), DType::kFloat64));
  }
  return b.Finish();
}

// --- log_cosh_error ---------------------------------------------------------

// StableLogCosh is log(cosh(x)) to ~1e-13 relative everywhere. The log_cosh
// op (|x| + log1p(e^−2|x|) − log 2) never overflows but cancels for small |x|
// (1e-4 relative error at |x| = 1e-6, i.e. for near-perfect predictions);
// below |x| = 0.04 the Taylor series x²/2 − x⁴/12 + x⁶/45 − 17x⁸/2520 is
// used instead (truncation < 3e-14 relative there).
Expr StableLogCosh(Expr x) {
  Expr x2 = x * x;
  Expr series = x2 * (0.5 + x2 * (-1.0 / 12.0 + x2 * (1.0 / 45.0 + x2 * (-17.0 / 2520.0))));
  return ops::Where(ops::Abs(x) < 0.04, series, ops::LogCosh(x));
}

absl::StatusOr<dsl::Metric> BuildLogCoshError(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(std::optional<int64_t> num_outputs, ReadNumOutputs(args));
  MetricBuilder b(args.metric_name(), sig, device);
  Columns c;
  if (!ReadColumns(b, num_outputs, c)) return b.status();
  State sum = b.AddState("sum_log_cosh_error", DType::kFloat64, {c.d}, Reducer::kSum);
  State total = b.AddState("total", DType::kInt64, {}, Reducer::kSum);
  auto [preds, target] = c.Float64();
  b.Accumulate(sum, ops::Sum(StableLogCosh(preds - target), {0}));
  b.Accumulate(total, ops::Size(preds, 0));
  Expr mean = b.Read(sum) / ops::Cast(b.Read(total), DType::kFloat64);
  b.Output(Squeezed(mean, c.d == 1));  // reg/log_cosh.py squeezes (N, 1) too
  return b.Finish();
}

}  // namespace

void RegisterRegressionMetrics(std::vector<MetricInfo>& out) {
  const std::vector<std::string> inputs = {"preds", "target"};
  const std::vector<std::string> weighted = {"preds", "target", kWeightInput};
  out.push_back({"mean_squared_error", "regression", weighted, BuildMeanSquaredError});
  out.push_back({"mean_absolute_error", "regression", weighted, BuildMeanAbsoluteError});
  out.push_back({"mean_absolute_percentage_error", "regression", weighted, BuildMeanAbsolutePercentageError});
  out.push_back({"r2_score", "regression", weighted, BuildR2Score});
  out.push_back({"explained_variance", "regression", weighted, BuildExplainedVariance});
  out.push_back({"pearson_corrcoef", "regression", inputs, BuildPearson});
  out.push_back({"concordance_corrcoef", "regression", inputs, BuildConcordance});
  out.push_back({"spearman_corrcoef", "regression", inputs, BuildSpearman});
  out.push_back({"cosine_similarity", "regression", inputs, BuildCosineSimilarity});
  out.push_back({"log_cosh_error", "regression", inputs, BuildLogCoshError});
}

}  // namespace tally::metrics
