// Tests of the regression metrics of metrics/regression/errors.cc: argument
// errors, input errors naming the metric and the input, tweedie's deferred
// domain checks, and edge cases (digits far from zero, TorchMetrics' shape
// rules, batching and merging of cat states). Values over many inputs are
// the golden fixtures' job (tests/golden/gen_regression_extra.py).
#include <ATen/ATen.h>

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"

namespace tally {
namespace {

using ::testing::HasSubstr;

NamedTensors Inputs(const at::Tensor& p, const at::Tensor& t) { return {{"preds", p}, {"target", t}}; }

absl::StatusOr<at::Tensor> Eval(const std::string& spec, const at::Tensor& p, const at::Tensor& t,
                                int64_t batch_size = 0) {
  tally::EvalOptions opts;
  opts.batch_size = batch_size;
  auto r = tally::Evaluate({spec}, Inputs(p, t), opts);
  if (!r.ok()) return r.status();
  return (*r)[0].value.to(at::kDouble);
}

at::Tensor F64(std::vector<double> v) { return at::tensor(v, at::kDouble); }

double Scalar(const at::Tensor& t) { return t.item<double>(); }

// BuildError builds `spec` for the given inputs' signature and returns the error.
absl::Status BuildError(const std::string& spec, const at::Tensor& p, const at::Tensor& t) {
  auto sig = tally::SignatureOf(Inputs(p, t));
  if (!sig.ok()) return sig.status();
  auto entries = tally::BuildEntries({spec}, *sig, ir::Device{});
  return entries.status();
}

const std::vector<std::string>& AllNew() {
  static const std::vector<std::string> all = {"mean_squared_log_error",
                                               "symmetric_mean_absolute_percentage_error",
                                               "weighted_mean_absolute_percentage_error",
                                               "relative_squared_error",
                                               "minkowski_distance(p=2)",
                                               "tweedie_deviance_score",
                                               "critical_success_index(threshold=0.5)",
                                               "kl_divergence"};
  return all;
}

std::string NameOf(const std::string& spec) { return spec.substr(0, spec.find('(')); }

TEST(RegressionExtraTest, EveryMetricIsRegistered) {
  // Verifies that the eight metrics are in the registry, in the regression domain.
  for (const std::string& spec : AllNew()) {
    const metrics::MetricInfo* m = metrics::FindMetric(NameOf(spec));
    ASSERT_NE(m, nullptr) << spec;
    EXPECT_EQ(m->domain, "regression");
  }
}

TEST(RegressionExtraTest, BadArgumentsNameTheMetricAndArgument) {
  // Verifies that invalid argument values are InvalidArgument errors naming
  // the metric and the argument, before any data is seen.
  at::Tensor x = at::rand({8, 3}, at::kFloat) + 0.1;
  struct Case {
    std::string spec, want;
  };
  const std::vector<Case> cases = {
      {"minkowski_distance", "minkowski_distance: missing required argument 'p'"},
      {"minkowski_distance(p=0.5)", "minkowski_distance: p must be a float or int >= 1, got 0.5"},
      {"minkowski_distance(p=-2)", "minkowski_distance: p must be"},
      {"minkowski_distance(p=nan)", "minkowski_distance: argument 'p' must be a finite number"},
      {"minkowski_distance(p=two)", "minkowski_distance:"},
      {"tweedie_deviance_score(power=0.5)", "tweedie_deviance_score: the deviance score is not defined for power=0.5"},
      {"tweedie_deviance_score(power=x)", "tweedie_deviance_score:"},
      {"critical_success_index", "critical_success_index: missing required argument 'threshold'"},
      {"critical_success_index(threshold=0.5, keep_sequence_dim=1.0)", "critical_success_index:"},
      {"kl_divergence(reduction=max)", "kl_divergence:"},
      {"kl_divergence(log_prob=1)", "kl_divergence:"},
      {"relative_squared_error(num_outputs=0)", "relative_squared_error: num_outputs must be an integer >= 1"},
      {"relative_squared_error(squared=2)", "relative_squared_error:"},
      {"mean_squared_log_error(squared=false)", "mean_squared_log_error: unknown argument 'squared'"},
      {"weighted_mean_absolute_percentage_error(epsilon=0.1)",
       "weighted_mean_absolute_percentage_error: unknown argument"},
  };
  for (const Case& c : cases) {
    absl::Status st = BuildError(c.spec, x, x);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.spec << ": " << st;
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.want)) << c.spec;
  }
  EXPECT_THAT(std::string(BuildError("kl_divergence(reduction=max)", x, x).message()), HasSubstr("reduction"));
}

TEST(RegressionExtraTest, BadInputsNameTheMetricAndInput) {
  // Verifies that shape, rank and dtype problems are build-time errors naming
  // the metric and the input.
  auto f = [](std::vector<int64_t> shape) { return at::ones(shape, at::kFloat); };
  for (const std::string& spec : AllNew()) {
    const std::string m = NameOf(spec);
    absl::Status st = BuildError(spec, f({8, 3}), f({8, 2}));
    EXPECT_THAT(std::string(st.message()), HasSubstr(m + ": target: shape [8, 2] does not match preds shape [8, 3]"));
    st = BuildError(spec, at::ones({8, 3}, at::kBool), f({8, 3}));
    EXPECT_THAT(std::string(st.message()), HasSubstr(m + ": preds: expected a numeric tensor, got bool"));
    st = BuildError(spec, f({8, 3}), at::ones({8, 3}, at::kBool));
    EXPECT_THAT(std::string(st.message()), HasSubstr(m + ": target: expected a numeric tensor, got bool"));
  }
  struct Case {
    std::string spec;
    at::Tensor p, t;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"kl_divergence", f({8}), f({8}), "kl_divergence: preds: expected a 2-D tensor, got shape [8]"},
      {"kl_divergence", f({8, 2, 2}), f({8, 2, 2}), "kl_divergence: preds: expected a 2-D tensor"},
      {"relative_squared_error", f({8, 2, 2}), f({8, 2, 2}),
       "relative_squared_error: preds: expected shape [N] or [N, d]"},
      {"relative_squared_error(num_outputs=2)", f({8, 3}), f({8, 3}),
       "relative_squared_error: preds: num_outputs=2 expects shape [N, 2], got [8, 3]"},
      {"relative_squared_error(num_outputs=3)", f({8}), f({8}), "relative_squared_error: preds: num_outputs=3"},
      {"critical_success_index(threshold=0.5, keep_sequence_dim=2)", f({8, 3}), f({8, 3}),
       "critical_success_index: preds: keep_sequence_dim=2 is not a dim of shape [8, 3]"},
      {"critical_success_index(threshold=0.5, keep_sequence_dim=-1)", f({8, 3}), f({8, 3}),
       "critical_success_index: preds: keep_sequence_dim=-1"},
      {"mean_squared_log_error", f({}), f({}), "mean_squared_log_error: preds: expected at least one dim"},
  };
  for (const Case& c : cases) {
    absl::Status st = BuildError(c.spec, c.p, c.t);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.spec;
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.want)) << c.spec;
  }
  // The full rank range that TorchMetrics accepts builds.
  for (const char* spec : {"mean_squared_log_error", "minkowski_distance(p=3)", "tweedie_deviance_score",
                           "critical_success_index(threshold=0.5, keep_sequence_dim=2)"}) {
    EXPECT_TRUE(BuildError(spec, f({4, 2, 3}), f({4, 2, 3})).ok()) << spec;
  }
}

TEST(RegressionExtraTest, TweedieDomainChecksAreDeferredAndNameMetricAndInput) {
  // Verifies that tweedie's domain violations pass update (sync-free) and fail
  // compute with the count, naming the metric and the offending input, for
  // every power range TorchMetrics checks; valid data computes.
  at::Tensor good_p = F64({0.5, 1.0, 2.0, 3.0}), good_t = F64({0.7, 1.0, 1.5, 2.5});
  struct Case {
    std::string power;
    at::Tensor p, t;
    std::string want;  // empty: no error
  };
  const std::vector<Case> cases = {
      {"0", F64({-1, 0, 2, 3}), F64({-5, 0, 1, 2}), ""},
      {"-1.0", F64({-1, 0, 2, 3}), F64({-5, 0, 1, 2}),
       "tweedie_deviance_score: preds: 2 values <= 0, expected > 0 (power=-1)"},
      {"-1.0", F64({1, 1, 2, 3}), F64({-5, 0, 1, 2}), ""},
      {"1", F64({0.5, 0, 2, 3}), F64({0, 1, 1, 2}),
       "tweedie_deviance_score: preds: 1 values <= 0, expected > 0 (power=1)"},
      {"1", F64({0.5, 1, 2, 3}), F64({0, -1, -1, 2}),
       "tweedie_deviance_score: target: 2 values < 0, expected >= 0 (power=1)"},
      {"1.5", F64({0.5, 1, 2, 3}), F64({0, -1, 1, 2}),
       "tweedie_deviance_score: target: 1 values < 0, expected >= 0 (power=1.5)"},
      {"1.5", F64({0.5, 1, 2, 3}), F64({0, 0, 1, 2}), ""},
      {"2", F64({0.5, 1, 2, 3}), F64({0, 1, 1, 2}),
       "tweedie_deviance_score: target: 1 values <= 0, expected > 0 (power=2)"},
      {"3", F64({0.5, 1, 2, 3}), F64({0, 1, 1, 2}),
       "tweedie_deviance_score: target: 1 values <= 0, expected > 0 (power=3)"},
      {"3", F64({-0.5, 1, 2, 3}), F64({1, 1, 1, 2}), "tweedie_deviance_score: preds: 1 values <= 0"},
  };
  for (const Case& c : cases) {
    const std::string spec = absl::StrCat("tweedie_deviance_score(power=", c.power, ")");
    for (int64_t batch : {0, 1, 3}) {
      auto got = Eval(spec, c.p, c.t, batch);
      if (c.want.empty()) {
        ASSERT_TRUE(got.ok()) << spec << ": " << got.status();
        EXPECT_TRUE(std::isfinite(Scalar(*got))) << spec;
      } else {
        ASSERT_FALSE(got.ok()) << spec;
        EXPECT_THAT(std::string(got.status().message()), HasSubstr(c.want)) << spec;
      }
    }
  }
  auto ok = Eval("tweedie_deviance_score(power=2)", good_p, good_t);
  ASSERT_TRUE(ok.ok()) << ok.status();
}

TEST(RegressionExtraTest, TweedieAndLogErrorKeepTheirDigitsFarFromZero) {
  // Verifies that tweedie (power 1 and 2) and mean_squared_log_error stay
  // accurate where preds ≈ target far from zero (naive formulas cancel), in
  // one pass and in batches.
  const int n = 50;
  std::vector<double> t(n), p(n);
  for (int i = 0; i < n; ++i) {
    t[i] = 1e6 + 0.37 * i;
    p[i] = t[i] + 0.01 * ((i % 7) - 3);
  }
  long double dev1 = 0, dev2 = 0, msle = 0;
  for (int i = 0; i < n; ++i) {
    long double r = (static_cast<long double>(t[i]) - p[i]) / p[i];
    dev1 += 2 * p[i] * ((1 + r) * std::log1p(r) - r);
    dev2 += 2 * (r - std::log1p(r));
    long double l = std::log1p(static_cast<long double>(p[i])) - std::log1p(static_cast<long double>(t[i]));
    msle += l * l;
  }
  const std::vector<std::pair<std::string, long double>> want = {{"tweedie_deviance_score(power=1)", dev1 / n},
                                                                 {"tweedie_deviance_score(power=2)", dev2 / n},
                                                                 {"mean_squared_log_error", msle / n}};
  for (const auto& [spec, w] : want) {
    for (int64_t batch : {0, 7}) {
      auto got = Eval(spec, F64(p), F64(t), batch);
      ASSERT_TRUE(got.ok()) << spec << ": " << got.status();
      EXPECT_NEAR(Scalar(*got) / static_cast<double>(w), 1.0, 1e-6) << spec << " batch " << batch;
    }
  }
  // Tiny values: log1p, not log(1 + x).
  auto tiny = Eval("mean_squared_log_error", F64({1e-12, 0.0}), F64({0.0, 3e-12}));
  ASSERT_TRUE(tiny.ok());
  EXPECT_NEAR(Scalar(*tiny) / ((1e-24 + 9e-24) / 2), 1.0, 1e-9);
}

TEST(RegressionExtraTest, RelativeSquaredErrorFarFromZeroAndConstantTarget) {
  // Verifies rse's centred moments (digits at an offset of 1e6, across
  // batches) and the eps clamp of a constant target (float64 vs float32 eps).
  const int n = 30;
  std::vector<double> t(n), p(n);
  long double mean = 0;
  for (int i = 0; i < n; ++i) {
    t[i] = 1e6 + std::sin(i) * 0.5;
    p[i] = t[i] + std::cos(3 * i) * 0.1;
    mean += t[i];
  }
  mean /= n;
  long double rss = 0, tss = 0;
  for (int i = 0; i < n; ++i) {
    rss += (static_cast<long double>(t[i]) - p[i]) * (static_cast<long double>(t[i]) - p[i]);
    tss += (t[i] - mean) * (t[i] - mean);
  }
  for (int64_t batch : {0, 4, 7}) {
    auto got = Eval("relative_squared_error", F64(p), F64(t), batch);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_NEAR(Scalar(*got) / static_cast<double>(rss / tss), 1.0, 1e-9) << batch;
  }
  at::Tensor ct = F64({2.0, 2.0, 2.0}), cp = F64({1.0, 2.0, 4.0});
  auto f64 = Eval("relative_squared_error", cp, ct);
  auto f32 = Eval("relative_squared_error", cp.to(at::kFloat), ct.to(at::kFloat));
  ASSERT_TRUE(f64.ok() && f32.ok());
  EXPECT_DOUBLE_EQ(Scalar(*f64), 5.0 / std::numeric_limits<double>::epsilon());
  EXPECT_DOUBLE_EQ(Scalar(*f32), 5.0 / static_cast<double>(std::numeric_limits<float>::epsilon()));
  auto sq = Eval("relative_squared_error(squared=false)", cp, ct);
  ASSERT_TRUE(sq.ok());
  EXPECT_DOUBLE_EQ(Scalar(*sq), std::sqrt(5.0 / std::numeric_limits<double>::epsilon()));
  // 2-D: the mean over outputs, a scalar.
  auto two = Eval("relative_squared_error(num_outputs=2)", F64({1, 2, 3, 5, 2, 1}).reshape({3, 2}),
                  F64({1, 1, 3, 3, 2, 2}).reshape({3, 2}));
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->dim(), 0);
  // col 0: preds == target, rss 0 -> 0; col 1: rss 1 + 4 + 1 = 6, tss 2 -> 3.
  EXPECT_DOUBLE_EQ(Scalar(*two), (0.0 + 3.0) / 2);
}

TEST(RegressionExtraTest, CriticalSuccessIndexShapes) {
  // Verifies csi's result shapes: a scalar by default and for a 1-D input
  // with keep_sequence_dim=0 (TorchMetrics sums over dim=()), one score per
  // row (cat states, across batches) or per column otherwise; 0/0 gives 0.
  at::Tensor p = F64({0.9, 0.1, 0.6, 0.2, 0.8, 0.7}).reshape({3, 2});
  at::Tensor t = F64({0.7, 0.6, 0.1, 0.1, 0.9, 0.2}).reshape({3, 2});
  auto all = Eval("critical_success_index(threshold=0.5)", p, t);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->dim(), 0);
  // hits: (0,0), (2,0); misses: (0,1); false alarms: (1,0), (2,1).
  EXPECT_DOUBLE_EQ(Scalar(*all), 2.0 / 5.0);
  for (int64_t batch : {0, 1, 2}) {
    auto rows = Eval("critical_success_index(threshold=0.5, keep_sequence_dim=0)", p, t, batch);
    ASSERT_TRUE(rows.ok()) << rows.status();
    ASSERT_EQ(rows->sizes(), (std::vector<int64_t>{3}));
    EXPECT_DOUBLE_EQ(rows->index({0}).item<double>(), 0.5);
    EXPECT_DOUBLE_EQ(rows->index({1}).item<double>(), 0.0);
    EXPECT_DOUBLE_EQ(rows->index({2}).item<double>(), 0.5);
  }
  auto cols = Eval("critical_success_index(threshold=0.5, keep_sequence_dim=1)", p, t, 2);
  ASSERT_TRUE(cols.ok());
  ASSERT_EQ(cols->sizes(), (std::vector<int64_t>{2}));
  EXPECT_DOUBLE_EQ(cols->index({0}).item<double>(), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(cols->index({1}).item<double>(), 0.0);
  auto one_d = Eval("critical_success_index(threshold=0.5, keep_sequence_dim=0)", p.reshape({6}), t.reshape({6}));
  ASSERT_TRUE(one_d.ok());
  EXPECT_EQ(one_d->dim(), 0);
  EXPECT_DOUBLE_EQ(Scalar(*one_d), 2.0 / 5.0);
  auto none = Eval("critical_success_index(threshold=5.0)", p, t);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(Scalar(*none), 0.0);
  // float32 compares against float32(threshold): 0.3f >= 0.3f.
  auto f32 =
      Eval("critical_success_index(threshold=0.3)", at::full({2}, 0.3, at::kFloat), at::full({2}, 0.3, at::kFloat));
  ASSERT_TRUE(f32.ok());
  EXPECT_EQ(Scalar(*f32), 1.0);
}

TEST(RegressionExtraTest, KlDivergenceReductionsAndPerRowValues) {
  // Verifies kl_divergence's reductions: none keeps one value per row across
  // batches (a cat state); mean = sum / N; rows are normalised first; zeros
  // in p contribute 0 and a zero in q where p > 0 gives inf.
  at::Tensor p = F64({1, 1, 2, 2, 0, 4}).reshape({3, 2});
  at::Tensor q = F64({1, 3, 1, 1, 1, 1}).reshape({3, 2});
  std::vector<double> want = {0.5 * std::log(0.5 / 0.25) + 0.5 * std::log(0.5 / 0.75), 0.0, std::log(2.0)};
  for (int64_t batch : {0, 1, 2}) {
    auto none = Eval("kl_divergence(reduction=none)", p, q, batch);
    ASSERT_TRUE(none.ok()) << none.status();
    ASSERT_EQ(none->sizes(), (std::vector<int64_t>{3}));
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(none->index({i}).item<double>(), want[i], 1e-15);
    auto mean = Eval("kl_divergence", p, q, batch);
    auto sum = Eval("kl_divergence(reduction=sum)", p, q, batch);
    ASSERT_TRUE(mean.ok() && sum.ok());
    EXPECT_NEAR(Scalar(*sum), want[0] + want[1] + want[2], 1e-15);
    EXPECT_NEAR(Scalar(*mean), (want[0] + want[1] + want[2]) / 3, 1e-15);
  }
  auto inf = Eval("kl_divergence", F64({1, 1}).reshape({1, 2}), F64({1, 0}).reshape({1, 2}));
  ASSERT_TRUE(inf.ok());
  EXPECT_TRUE(std::isinf(Scalar(*inf)));
  // log_prob: Σ e^p (p − q).
  at::Tensor lp = at::log(F64({0.25, 0.75})).reshape({1, 2}), lq = at::log(F64({0.5, 0.5})).reshape({1, 2});
  auto lg = Eval("kl_divergence(log_prob=true)", lp, lq);
  ASSERT_TRUE(lg.ok());
  EXPECT_NEAR(Scalar(*lg), 0.25 * std::log(0.5) + 0.75 * std::log(1.5), 1e-15);
}

TEST(RegressionExtraTest, PercentageErrorsClampAndIntegerInputs) {
  // Verifies smape's and wmape's 1.17e-6 clamps, minkowski's p-th root, and
  // that integer inputs give the float64 results of the same values.
  auto smape = Eval("symmetric_mean_absolute_percentage_error", F64({0, 0, 1}), F64({0, 1e-7, -1}));
  ASSERT_TRUE(smape.ok());
  EXPECT_NEAR(Scalar(*smape), 2.0 * (0 + 1e-7 / 1.17e-6 + 2.0 / 2.0) / 3, 1e-15);
  auto wmape = Eval("weighted_mean_absolute_percentage_error", F64({0.5, -0.25}), F64({0, 0}));
  ASSERT_TRUE(wmape.ok());
  EXPECT_NEAR(Scalar(*wmape), 0.75 / 1.17e-6, 1e-6);
  at::Tensor ip = at::tensor({1, 4, 2, 7}, at::kLong), it = at::tensor({2, 3, 2, 5}, at::kLong);
  for (const std::string& spec : AllNew()) {
    if (spec == "kl_divergence") continue;
    auto a = Eval(spec, ip, it), b = Eval(spec, ip.to(at::kDouble), it.to(at::kDouble));
    ASSERT_TRUE(a.ok() && b.ok()) << spec;
    EXPECT_TRUE(at::allclose(*a, *b, 1e-12, 0)) << spec;
  }
  auto mk = Eval("minkowski_distance(p=3)", ip, it);
  ASSERT_TRUE(mk.ok());
  EXPECT_NEAR(Scalar(*mk), std::cbrt(1.0 + 1.0 + 0.0 + 8.0), 1e-12);
}

TEST(RegressionExtraTest, KendallArgumentsAndInputs) {
  // Verifies kendall_rank_corrcoef's argument errors (variant, t_test,
  // alternative under t_test only, as TorchMetrics reads it) and input errors.
  at::Tensor x = at::rand({8}, at::kDouble);
  struct Case {
    std::string spec, want;
  };
  const std::vector<Case> bad = {
      {"kendall_rank_corrcoef(variant=d)", "kendall_rank_corrcoef:"},
      {"kendall_rank_corrcoef(t_test=1)", "kendall_rank_corrcoef:"},
      {"kendall_rank_corrcoef(t_test=true, alternative=none)",
       "kendall_rank_corrcoef: alternative is required when t_test=true"},
      {"kendall_rank_corrcoef(t_test=true, alternative=both)", "kendall_rank_corrcoef: alternative must be one of"},
  };
  for (const Case& c : bad) {
    absl::Status st = BuildError(c.spec, x, x);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << c.spec;
    EXPECT_THAT(std::string(st.message()), HasSubstr(c.want)) << c.spec;
  }
  EXPECT_TRUE(BuildError("kendall_rank_corrcoef(alternative=none)", x, x).ok());
  EXPECT_TRUE(BuildError("kendall_rank_corrcoef(alternative=both)", x, x).ok());  // unread without t_test
  EXPECT_THAT(std::string(BuildError("kendall_rank_corrcoef", at::rand({4, 2, 2}), at::rand({4, 2, 2})).message()),
              HasSubstr("kendall_rank_corrcoef: preds: expected shape [N] or [N, d]"));
  EXPECT_THAT(std::string(BuildError("kendall_rank_corrcoef", at::rand({4, 2}), at::rand({4, 3})).message()),
              HasSubstr("kendall_rank_corrcoef: target: shape [4, 3] does not match preds shape [4, 2]"));
}

TEST(RegressionExtraTest, KendallCountsPairsExactlyWithoutFormingThem) {
  // Verifies the sort-based pair counts against a brute-force O(n²) count on
  // 3000 rows with many ties (12 merge levels), for the three variants, in
  // one pass and across batches; and NaN for one row or a constant input.
  const int n = 3000;
  std::vector<double> xs(n), ys(n);
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int>((state >> 33) % 50);
  };
  for (int i = 0; i < n; ++i) {
    xs[i] = next();
    ys[i] = 0.5 * xs[i] + next();
  }
  long double c = 0, d = 0, tx = 0, ty = 0;
  for (int i = 0; i < n; ++i) {
    for (int j = i + 1; j < n; ++j) {
      double s = (xs[i] - xs[j]) * (ys[i] - ys[j]);
      if (s > 0) c += 1;
      if (s < 0) d += 1;
      if (xs[i] == xs[j]) tx += 1;
      if (ys[i] == ys[j]) ty += 1;
    }
  }
  long double n0 = static_cast<long double>(n) * (n - 1) / 2;
  double tau_a = static_cast<double>((c - d) / (c + d));
  double tau_b = static_cast<double>((c - d) / std::sqrt((n0 - tx) * (n0 - ty)));
  double tau_c = static_cast<double>(2 * (c - d) / ((50.0L - 1) / 50.0L * n * n));  // 50 distinct x values
  for (int64_t batch : {0, 701}) {
    for (const auto& [spec, want] :
         std::vector<std::pair<std::string, double>>{{"kendall_rank_corrcoef(variant=a)", tau_a},
                                                     {"kendall_rank_corrcoef", tau_b},
                                                     {"kendall_rank_corrcoef(variant=c)", tau_c}}) {
      auto got = Eval(spec, F64(xs), F64(ys), batch);
      ASSERT_TRUE(got.ok()) << spec << ": " << got.status();
      EXPECT_NEAR(Scalar(*got), want, 1e-13) << spec;
    }
  }
  for (const char* spec :
       {"kendall_rank_corrcoef(variant=a)", "kendall_rank_corrcoef", "kendall_rank_corrcoef(variant=c)"}) {
    auto one = Eval(spec, F64({1.0}), F64({2.0}));
    ASSERT_TRUE(one.ok());
    EXPECT_TRUE(std::isnan(Scalar(*one))) << spec;
    auto constant = Eval(spec, F64({1, 2, 3}), F64({2, 2, 2}));
    ASSERT_TRUE(constant.ok());
    EXPECT_TRUE(std::isnan(Scalar(*constant))) << spec;
  }
}

}  // namespace
}  // namespace tally
