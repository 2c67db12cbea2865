// More regression metrics, after TorchMetrics 1.5.2's functional API:
// mean_squared_log_error, symmetric_mean_absolute_percentage_error,
// weighted_mean_absolute_percentage_error, relative_squared_error,
// minkowski_distance, tweedie_deviance_score, critical_success_index and
// kl_divergence; and from TorchMetrics 1.9 normalized_root_mean_squared_error,
// jensen_shannon_divergence and continuous_ranked_probability_score.
//
// Inputs are `preds` and `target` of the same shape (TorchMetrics calls the
// second `targets` in minkowski/tweedie, and `p`, `q` in kl_divergence: here
// p = preds and q = target, in the functional API's positional order).
// Integer inputs are cast to float64; everything accumulates in float64.
// tests/golden/SEMANTICS.md ("Regression: more metrics") lists the rules; deliberate
// differences from TorchMetrics:
//
// * tweedie_deviance_score's domain checks (preds > 0, target >= 0 / > 0
//   depending on `power`) are deferred counters: Compute fails naming the
//   metric, the input and the count, where TorchMetrics raises in update.
//   The offending elements add nothing to the sums.
// * mean_squared_log_error evaluates log1p(p) − log1p(t) as
//   log1p((p − t)/(1 + t)), and tweedie_deviance_score with power 1 or 2 uses
//   a series where preds ≈ target, so that data far from zero keep their
//   digits (TorchMetrics' float32 formulas cancel). The other tweedie powers
//   follow TorchMetrics' formula (in float64).
// * relative_squared_error computes the target's centred sum of squares with
//   mergeable two-pass moments (TorchMetrics: Σt² − (Σt)²/n, which cancels
//   far from zero). Its clamp epsilon is float64's eps when either input is
//   float64, else float32's (integer inputs: TorchMetrics' functional form
//   raises; its module class keeps float32 states). No rows give NaN.
// * critical_success_index compares in float64 for float64 inputs and in
//   float32 otherwise (integers promote to float32 against a float
//   threshold, as in torch); bool inputs are rejected. keep_sequence_dim=0
//   (the row dim) of an input of rank >= 2 gives one score per row, kept in
//   cat states; of a 1-D input, the scalar (TorchMetrics sums over dim=(),
//   i.e. everything).
// * kl_divergence takes reduction mean, sum or none/None; TorchMetrics'
//   fallthrough for other strings (per-sample values / N) is an argument
//   error here.
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "metrics/regression/moments.h"
#include "metrics/regression/operands.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ir::Reducer;
using ops::Expr;

// TorchMetrics' clamp epsilon in smape and wmape (reg/symmetric_mape.py,
// reg/wmape.py).
constexpr double kPercentEpsilon = 1.17e-06;
// Below this |r| = |target − preds| / preds the tweedie deviances of power 1
// and 2 use their series (truncation < 1e-13 relative).
constexpr double kTweedieSeriesBound = 0.01;

// Log1p is log(1 + x) to a few ulps for small |x| (Goldberg's
// log(u)·x/(u − 1) with u = 1 + x), +inf at +inf, NaN below −1.
Expr Log1p(Expr x) {
  Expr u = x + 1.0;
  Expr den = ops::Where(u == 1.0, 1.0, u - 1.0);
  Expr general = ops::Log(u) * (x / den);
  return ops::Where(u == 1.0, x, ops::Where(x == INFINITY, x, general));
}

// MeanOver adds a sum state of `values` (f64, every element) and a count
// state, and returns their ratio in finalize.
Expr MeanOfAll(MetricBuilder& b, const std::string& name, Expr values) {
  State sum = b.AddState(name, DType::kFloat64, {}, Reducer::kSum);
  State total = b.AddState("total", DType::kInt64, {}, Reducer::kSum);
  Expr flat = ops::Flatten(values);
  b.Accumulate(sum, ops::Sum(flat));
  b.Accumulate(total, ops::Size(flat, 0));
  return b.Read(sum) / ops::Cast(b.Read(total), DType::kFloat64);
}

// --- mean_squared_log_error --------------------------------------------------

absl::StatusOr<dsl::Metric> BuildMeanSquaredLogError(SpecArgs& args, const dsl::Signature& sig,
                                                     const ir::Device& device) {
  MetricBuilder b(args.metric_name(), sig, device);
  Operands in;
  if (!ReadOperands(b, in)) return b.status();
  Expr p = F64(in.preds), t = F64(in.target);
  // reg/log_mse.py: (log1p(p) − log1p(t))², i.e. log1p((p − t)/(1 + t))²,
  // which keeps its digits where p ≈ t far from zero. Below −1 log1p is NaN.
  Expr diff = Log1p((p - t) / (t + 1.0));
  diff = ops::Where(p < -1.0 || t < -1.0, NAN, diff);
  b.Output(MeanOfAll(b, "sum_squared_log_error", diff * diff));
  return b.Finish();
}

// --- symmetric_mean_absolute_percentage_error ----------------------------------

absl::StatusOr<dsl::Metric> BuildSymmetricMape(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  MetricBuilder b(args.metric_name(), sig, device);
  Operands in;
  if (!ReadOperands(b, in)) return b.status();
  Expr p = F64(in.preds), t = F64(in.target);
  // reg/symmetric_mape.py: 2·|p − t| / max(|t| + |p|, 1.17e-6), mean over all.
  Expr ratio = ops::Abs(p - t) / ops::Clamp(ops::Abs(t) + ops::Abs(p), kPercentEpsilon, std::nullopt);
  b.Output(2.0 * MeanOfAll(b, "sum_abs_per_error", ratio));
  return b.Finish();
}

// --- weighted_mean_absolute_percentage_error -----------------------------------

absl::StatusOr<dsl::Metric> BuildWeightedMape(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  MetricBuilder b(args.metric_name(), sig, device);
  Operands in;
  if (!ReadOperands(b, in)) return b.status();
  Expr p = ops::Flatten(F64(in.preds)), t = ops::Flatten(F64(in.target));
  State abs_error = b.AddState("sum_abs_error", DType::kFloat64, {}, Reducer::kSum);
  State scale = b.AddState("sum_scale", DType::kFloat64, {}, Reducer::kSum);
  b.Accumulate(abs_error, ops::Sum(ops::Abs(p - t)));
  b.Accumulate(scale, ops::Sum(ops::Abs(t)));
  // reg/wmape.py: Σ|p − t| / max(Σ|t|, 1.17e-6).
  b.Output(b.Read(abs_error) / ops::Clamp(b.Read(scale), kPercentEpsilon, std::nullopt));
  return b.Finish();
}

// --- relative_squared_error ----------------------------------------------------

// TargetErrors are the finalize values of the regression metrics' shared
// per-batch statistics node (reg_stats, metrics/regression/regression.cc):
// rows, the target's mean and centred M2 as mergeable moments, and
// Σ(p − t)², per output [d].
struct TargetErrors {
  Expr count, mean, m2, rss;
};

bool ReadTargetErrors(MetricBuilder& b, Expr preds, Expr target, int64_t d, TargetErrors& out) {
  auto operand = [](Expr x) { return ir::IsFloating(x.dtype()) ? x : F64(x); };
  std::vector<Expr> s = b.OpN(ops::OpId::kRegStats, {operand(preds), operand(target)}, {});
  if (!b.ok()) return false;
  if (s.size() != 15) {
    b.Fail(absl::InternalError(absl::StrCat("reg_stats gave ", s.size(), " results, expected 15")));
    return false;
  }
  MomentGroup moments(b, "moments", d, s[0]);
  int t = moments.AddVariable("target", BatchMoments{s[4], s[5], s[6]});
  moments.Finish();
  State rss = b.AddState("rss", DType::kFloat64, {d}, Reducer::kSum);
  b.Accumulate(rss, s[11]);
  out = TargetErrors{moments.Count(), moments.Mean(t), moments.M2(t), b.Read(rss)};
  return b.ok();
}

absl::StatusOr<dsl::Metric> BuildRelativeSquaredError(SpecArgs& args, const dsl::Signature& sig,
                                                      const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(bool squared, args.GetBool("squared", true));
  TALLY_ASSIGN_OR_RETURN(std::optional<int64_t> num_outputs, args.GetOptionalInt("num_outputs"));
  if (num_outputs.has_value() && *num_outputs < 1) {
    return args.InvalidArgument(absl::StrCat("num_outputs must be an integer >= 1, got ", *num_outputs));
  }
  MetricBuilder b(args.metric_name(), sig, device);
  Operands in;
  if (!ReadOperands(b, in, /*max_rank=*/2)) return b.status();
  const bool one_dim = in.rank() == 1;
  const int64_t d = one_dim ? 1 : in.shape[1];
  if (num_outputs.has_value()) {
    // The module class sizes its states by num_outputs: they must agree.
    int64_t k = *num_outputs;
    bool ok = k == 1 ? d == 1 : (!one_dim && d == k);
    if (!ok) {
      b.FailInput("preds",
                  absl::StrCat("num_outputs=", k, " expects shape ",
                               k == 1 ? "[N] or [N, 1]" : absl::StrCat("[N, ", k, "]"), ", got ", ShapeText(in.shape)));
      return b.status();
    }
  }
  TargetErrors te;
  if (!ReadTargetErrors(b, in.preds, in.target, d, te)) return b.status();

  // reg/rse.py: rss / max(tss, eps) per output, eps of the (promoted) input
  // dtype; sqrt when not squared; then the mean over outputs.
  const bool f64 = in.preds_dtype == DType::kFloat64 || in.target_dtype == DType::kFloat64;
  const double eps =
      f64 ? std::numeric_limits<double>::epsilon() : static_cast<double>(std::numeric_limits<float>::epsilon());
  Expr rse = te.rss / ops::Clamp(te.m2, eps, std::nullopt);
  if (!squared) rse = ops::Sqrt(rse);
  Expr mean = ops::Sum(rse) / static_cast<double>(d);
  b.Output(ops::Where(te.count == 0.0, NAN, mean));
  return b.Finish();
}

// --- minkowski_distance ------------------------------------------------------

absl::StatusOr<dsl::Metric> BuildMinkowskiDistance(SpecArgs& args, const dsl::Signature& sig,
                                                   const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(double p, args.GetDouble("p"));
  if (!(p >= 1.0)) {
    return args.InvalidArgument(absl::StrCat("p must be a float or int >= 1, got ", p));
  }
  MetricBuilder b(args.metric_name(), sig, device);
  Operands in;
  if (!ReadOperands(b, in)) return b.status();
  Expr diff = ops::Flatten(ops::Abs(F64(in.preds) - F64(in.target)));
  State sum = b.AddState("minkowski_dist_sum", DType::kFloat64, {}, Reducer::kSum);
  // reg/minkowski.py: (Σ|p − t|^p)^(1/p).
  b.Accumulate(sum, ops::Sum(p == 1.0 ? diff : ops::Pow(diff, ops::Scalar(diff, p))));
  Expr total = b.Read(sum);
  b.Output(p == 1.0 ? total + 0.0 : ops::Pow(total, ops::Scalar(total, 1.0 / p)));
  return b.Finish();
}

// --- tweedie_deviance_score --------------------------------------------------

// CountOf counts the true elements of a bool tensor (an i64 scalar).
Expr CountOf(Expr mask) { return ops::Sum(ops::Cast(ops::Flatten(mask), DType::kInt64)); }

absl::StatusOr<dsl::Metric> BuildTweedieDeviance(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(double power, args.GetDouble("power", 0.0));
  if (std::isnan(power) || (power > 0.0 && power < 1.0)) {
    return args.InvalidArgument(
        absl::StrCat("the deviance score is not defined for power=", power, " (0 < power < 1)"));
  }
  MetricBuilder b(args.metric_name(), sig, device);
  Operands in;
  if (!ReadOperands(b, in)) return b.status();
  Expr p = ops::Flatten(F64(in.preds)), t = ops::Flatten(F64(in.target));
  const std::string pw = absl::StrCat("power=", power);
  // reg/tweedie_deviance.py's domain checks, deferred: each offending
  // element is counted and adds nothing to the sum.
  Expr bad;
  auto require = [&](const char* input, Expr offending, const std::string& what) {
    b.Check(input, absl::StrCat("{n} values ", what, " (", pw, ")"), CountOf(offending));
    bad = bad.valid() ? (bad || offending) : offending;
  };
  if (power != 0.0) require("preds", p <= 0.0, "<= 0, expected > 0");
  if (power == 1.0 || (power > 1.0 && power < 2.0)) require("target", t < 0.0, "< 0, expected >= 0");
  if (power >= 2.0) require("target", t <= 0.0, "<= 0, expected > 0");

  Expr dev;
  if (power == 0.0) {
    Expr d = t - p;
    dev = d * d;
  } else if (power == 1.0 || power == 2.0) {
    // With r = (t − p)/p: power 1 is 2p·((1 + r)·log(1 + r) − r) (0·log 0 =
    // 0 when t = 0), power 2 is 2·(r − log(1 + r)). Near r = 0 both cancel,
    // so there the series Σ_k≥2 (−1)^k r^k/(k(k − 1)), resp. /k, replaces them.
    Expr safe_p = ops::Where(p <= 0.0, 1.0, p);
    Expr r = (t - safe_p) / safe_p;
    Expr series = ops::Scalar(r, 0.0);
    for (int k = 8; k >= 2; --k) {
      double c = (k % 2 == 0 ? 1.0 : -1.0) / (power == 1.0 ? k * (k - 1.0) : k);
      series = (series + c) * r;
    }
    series = series * r;  // the loop ends at c_2·r; one more factor r
    Expr direct;
    if (power == 1.0) {
      Expr xlogy = ops::Where(t == 0.0, 0.0, t * ops::Log(t / safe_p));
      direct = xlogy + safe_p - t;
      series = safe_p * series;
    } else {
      Expr safe_t = ops::Where(t <= 0.0, 1.0, t);
      direct = ops::Log(safe_p / safe_t) + safe_t / safe_p - 1.0;
    }
    dev = 2.0 * ops::Where(ops::Abs(r) < kTweedieSeriesBound, series, direct);
  } else {
    // reg/tweedie_deviance.py's general form.
    Expr safe_p = ops::Where(p <= 0.0, 1.0, p);
    Expr term1 =
        ops::Pow(ops::Maximum(t, ops::Scalar(t, 0.0)), ops::Scalar(t, 2.0 - power)) / ((1.0 - power) * (2.0 - power));
    Expr term2 = t * ops::Pow(safe_p, ops::Scalar(p, 1.0 - power)) / (1.0 - power);
    Expr term3 = ops::Pow(safe_p, ops::Scalar(p, 2.0 - power)) / (2.0 - power);
    dev = 2.0 * (term1 - term2 + term3);
  }
  if (bad.valid()) dev = ops::Where(bad, 0.0, dev);
  b.Output(MeanOfAll(b, "sum_deviance_score", dev));
  return b.Finish();
}

// --- critical_success_index --------------------------------------------------

// AtLeast is x >= threshold compared as torch does for a float threshold:
// float64 tensors in float64, everything else in float32.
Expr AtLeast(Expr x, DType dtype, double threshold) {
  if (dtype == DType::kFloat64) return x >= ops::ScalarOf(x, threshold, DType::kFloat64);
  Expr f = ops::Cast(x, DType::kFloat32);
  return f >= ops::ScalarOf(f, static_cast<float>(threshold), DType::kFloat32);
}

absl::StatusOr<dsl::Metric> BuildCriticalSuccessIndex(SpecArgs& args, const dsl::Signature& sig,
                                                      const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(double threshold, args.GetDouble("threshold"));
  TALLY_ASSIGN_OR_RETURN(std::optional<int64_t> keep, args.GetOptionalInt("keep_sequence_dim"));
  MetricBuilder b(args.metric_name(), sig, device);
  Operands in;
  if (!ReadOperands(b, in)) return b.status();
  if (keep.has_value() && (*keep < 0 || *keep >= in.rank())) {
    b.FailInput("preds", absl::StrCat("keep_sequence_dim=", *keep, " is not a dim of shape ", ShapeText(in.shape),
                                      " (expected 0 <= keep_sequence_dim < ", in.rank(), ")"));
    return b.status();
  }
  // reg/csi.py: binarize with >= threshold; hits, misses and false alarms
  // summed over every dim but keep_sequence_dim.
  Expr pb = AtLeast(in.preds, in.preds_dtype, threshold);
  Expr tb = AtLeast(in.target, in.target_dtype, threshold);
  auto i64 = [](Expr x) { return ops::Cast(x, DType::kInt64); };
  Expr hits = i64(pb && tb), misses = i64(!pb && tb), false_alarms = i64(pb && !tb);
  // A 1-D input leaves no dim to sum over: torch.sum(x, dim=()) then sums
  // every element, so keep_sequence_dim=0 gives the scalar there (QUIRK).
  if (keep.has_value() && in.rank() == 1) keep.reset();
  const int64_t keep_dim = keep.value_or(-1);  // -1: none
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < in.rank(); ++i) {
    if (i != keep_dim) dims.push_back(i);
  }
  auto reduce = [&](Expr x) { return ops::Sum(x, dims); };
  std::vector<int64_t> shape;
  Reducer reducer = Reducer::kSum;
  if (keep_dim == 0) {
    reducer = Reducer::kCat;  // one score per row
  } else if (keep_dim > 0) {
    shape = {in.shape[keep_dim]};
  }
  State h = b.AddState("hits", DType::kInt64, shape, reducer);
  State m = b.AddState("misses", DType::kInt64, shape, reducer);
  State f = b.AddState("false_alarms", DType::kInt64, shape, reducer);
  b.Accumulate(h, reduce(hits));
  b.Accumulate(m, reduce(misses));
  b.Accumulate(f, reduce(false_alarms));
  Expr hf = F64(b.Read(h));
  b.Output(ops::SafeDiv(hf, hf + F64(b.Read(m)) + F64(b.Read(f))));
  return b.Finish();
}

// --- kl_divergence, jensen_shannon_divergence ---------------------------------

// KlRows is each row's KL(p || q) (TorchMetrics' reg/kl_divergence.py).
Expr KlRows(Expr p, Expr q, bool log_prob) {
  // log_prob: Σ_j e^p·(p − q) per row.
  if (log_prob) return ops::Sum(ops::Exp(p) * (p - q), {1});
  // Rows normalised to sum 1, then Σ_j xlogy(p, p/q) (0 where p == 0).
  p = p / ops::Sum(p, {1}, /*keepdim=*/true);
  q = q / ops::Sum(q, {1}, /*keepdim=*/true);
  return ops::Sum(ops::Where(p == 0.0, 0.0, p * ops::Log(p / q)), {1});
}

// ReduceRows is the per-row `measures` kept (none), summed or averaged.
absl::StatusOr<dsl::Metric> ReduceRows(MetricBuilder& b, Expr measures, const std::string& reduction) {
  if (reduction == "none") {
    State rows = b.AddState("measures", DType::kFloat64, {}, Reducer::kCat);
    b.Accumulate(rows, measures);
    b.Output(b.Read(rows) + 0.0);
    return b.Finish();
  }
  State sum = b.AddState("sum_measures", DType::kFloat64, {}, Reducer::kSum);
  b.Accumulate(sum, ops::Sum(measures));
  if (reduction == "sum") {
    b.Output(b.Read(sum) + 0.0);
  } else {
    State total = b.AddState("total", DType::kInt64, {}, Reducer::kSum);
    b.Accumulate(total, ops::Size(measures, 0));
    b.Output(b.Read(sum) / ops::Cast(b.Read(total), DType::kFloat64));
  }
  return b.Finish();
}

absl::StatusOr<dsl::Metric> BuildDivergence(bool jensen_shannon, SpecArgs& args, const dsl::Signature& sig,
                                            const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(bool log_prob, args.GetBool("log_prob", false));
  TALLY_ASSIGN_OR_RETURN(std::string reduction, args.GetEnum("reduction", {"mean", "sum", "none"}, "mean"));
  MetricBuilder b(args.metric_name(), sig, device);
  Operands in;
  if (!ReadOperands(b, in, 0, /*exact_rank=*/2)) return b.status();
  Expr p = F64(in.preds), q = F64(in.target);
  if (!jensen_shannon) return ReduceRows(b, KlRows(p, q, log_prob), reduction);
  // reg/js_divergence.py: ½ KL(p || m) + ½ KL(q || m), m the mean of the
  // (row-normalised) distributions; with log_prob, log m = logsumexp(p, q) − log 2.
  Expr m;
  if (log_prob) {
    Expr top = ops::Maximum(p, q);
    Expr lse = top + ops::Log(ops::Exp(p - top) + ops::Exp(q - top));
    m = ops::Where(top == -INFINITY, -INFINITY, lse) - std::log(2.0);
  } else {
    p = p / ops::Sum(p, {1}, /*keepdim=*/true);
    q = q / ops::Sum(q, {1}, /*keepdim=*/true);
    m = (p + q) / 2.0;
  }
  return ReduceRows(b, 0.5 * KlRows(p, m, log_prob) + 0.5 * KlRows(q, m, log_prob), reduction);
}

// --- normalized_root_mean_squared_error -------------------------------------

absl::StatusOr<dsl::Metric> BuildNormalizedRmse(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(std::string normalization,
                         args.GetEnum("normalization", {"mean", "range", "std", "l2"}, "mean"));
  TALLY_ASSIGN_OR_RETURN(int64_t k, args.GetInt("num_outputs", 1));
  if (k < 1) return args.InvalidArgument(absl::StrCat("num_outputs must be an integer >= 1, got ", k));
  MetricBuilder b(args.metric_name(), sig, device);
  Operands in;
  if (!ReadOperands(b, in)) return b.status();
  // TorchMetrics' _mean_squared_error_update: num_outputs=1 flattens every
  // element; num_outputs=k reads [N, k].
  Expr preds = in.preds, target = in.target;
  if (k == 1) {
    preds = ops::Unsqueeze(ops::Flatten(preds), 1);
    target = ops::Unsqueeze(ops::Flatten(target), 1);
  } else if (in.rank() != 2 || in.shape[1] != k) {
    b.FailInput("preds", absl::StrCat("num_outputs=", k, " expects shape [N, ", k, "], got ", ShapeText(in.shape)));
    return b.status();
  }
  TargetErrors te;
  if (!ReadTargetErrors(b, preds, target, k, te)) return b.status();
  Expr t64 = F64(target);
  Expr denom;
  if (normalization == "mean") {
    denom = te.mean;
  } else if (normalization == "std") {
    denom = ops::Sqrt(te.m2 / te.count);
  } else if (normalization == "l2") {
    State sq = b.AddState("target_squared", DType::kFloat64, {k}, Reducer::kSum);
    b.Accumulate(sq, ops::Sum(t64 * t64, {0}));
    denom = ops::Sqrt(b.Read(sq));
  } else {
    State hi = b.AddState("target_max", DType::kFloat64, {k}, Reducer::kMax, -INFINITY);
    State lo = b.AddState("target_min", DType::kFloat64, {k}, Reducer::kMin, INFINITY);
    b.Accumulate(hi, ops::Max(t64, {0}));
    b.Accumulate(lo, ops::Min(t64, {0}));
    denom = b.Read(hi) - b.Read(lo);
  }
  Expr value = ops::Sqrt(te.rss / te.count) / denom;
  b.Output(k == 1 ? ops::Reshape(value, {}) : value);
  return b.Finish();
}

// --- continuous_ranked_probability_score ------------------------------------

absl::StatusOr<dsl::Metric> BuildCrps(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  MetricBuilder b(args.metric_name(), sig, device);
  Expr preds = b.Input("preds");
  Expr target = b.Input("target");
  if (!b.ok()) return b.status();
  const auto& ps = b.FindInput("preds")->shape;
  const auto& ts = b.FindInput("target")->shape;
  if (ps.size() != 2 || ps[1] < 2) {
    b.FailInput("preds", absl::StrCat("expected an ensemble [N, M] with M >= 2 members, got shape ", ShapeText(ps)));
  } else if (ts.size() != 1) {
    b.FailInput("target", absl::StrCat("expected [N] observations for preds of shape ", ShapeText(ps), ", got shape ",
                                       ShapeText(ts)));
  }
  if (!b.ok()) return b.status();
  const double m = static_cast<double>(ps[1]);
  // reg/crps.py per row: Σ_i |x_i − y| / M − Σ_ij |x_i − x_j| / (2 M²).
  Expr x = F64(preds), y = ops::Unsqueeze(F64(target), 1);
  Expr skill = ops::Sum(ops::Abs(x - y), {1}) / m;
  Expr spread = ops::Sum(ops::Abs(ops::Unsqueeze(x, 2) - ops::Unsqueeze(x, 1)), {1, 2}) / (2.0 * m * m);
  return ReduceRows(b, skill - spread, "mean");
}

}  // namespace

void RegisterRegressionErrorMetrics(std::vector<MetricInfo>& out) {
  const std::vector<std::string> inputs = {"preds", "target"};
  out.push_back({"mean_squared_log_error", "regression", inputs, BuildMeanSquaredLogError});
  out.push_back({"symmetric_mean_absolute_percentage_error", "regression", inputs, BuildSymmetricMape});
  out.push_back({"weighted_mean_absolute_percentage_error", "regression", inputs, BuildWeightedMape});
  out.push_back({"relative_squared_error", "regression", inputs, BuildRelativeSquaredError});
  out.push_back({"minkowski_distance", "regression", inputs, BuildMinkowskiDistance});
  out.push_back({"tweedie_deviance_score", "regression", inputs, BuildTweedieDeviance});
  out.push_back({"critical_success_index", "regression", inputs, BuildCriticalSuccessIndex});
  out.push_back({"kl_divergence", "regression", inputs, Bound(BuildDivergence, false)});
  out.push_back({"jensen_shannon_divergence", "regression", inputs, Bound(BuildDivergence, true)});
  out.push_back({"normalized_root_mean_squared_error", "regression", inputs, BuildNormalizedRmse});
  out.push_back({"continuous_ranked_probability_score", "regression", inputs, BuildCrps});
}

}  // namespace tally::metrics
