// Tests of the threshold-free binary metrics (metrics/curves/auroc_and_average_precision.cc):
// binary_auroc and binary_average_precision, exact and binned, against
// values computed here by brute force (pairs for AUROC, tie groups for AP),
// ties, ignore_index, logits, batching invariance, degenerate targets, bad
// values, bad arguments, and sync-freedom of the update on `meta`.
#include <ATen/ATen.h>

#include <cmath>
#include <string>
#include <vector>

#include "api/tally.h"
#include "engine/runtime/compiler.h"
#include "engine/runtime/program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"

namespace tally {
namespace {

using ::testing::HasSubstr;

NamedTensors Inputs(const at::Tensor& p, const at::Tensor& t) { return {{"preds", p}, {"target", t}}; }

absl::StatusOr<double> Eval(const std::string& spec, const at::Tensor& p, const at::Tensor& t, int64_t batch = 0) {
  tally::EvalOptions o;
  o.batch_size = batch;
  auto r = tally::Evaluate({spec}, Inputs(p, t), o);
  if (!r.ok()) return r.status();
  return (*r)[0].value.to(at::kDouble).item<double>();
}

// Pairwise AUROC: a positive above a negative counts 1, a tie 1/2.
double BruteAuroc(const at::Tensor& p, const at::Tensor& t) {
  auto pa = p.to(at::kDouble).contiguous();
  auto ta = t.to(at::kLong).contiguous();
  double num = 0, pairs = 0;
  for (int64_t i = 0; i < pa.numel(); ++i) {
    if (ta[i].item<int64_t>() != 1) continue;
    for (int64_t j = 0; j < pa.numel(); ++j) {
      if (ta[j].item<int64_t>() != 0) continue;
      double a = pa[i].item<double>(), b = pa[j].item<double>();
      num += a > b ? 1.0 : a == b ? 0.5 : 0.0;
      pairs += 1;
    }
  }
  return pairs == 0 ? 0.0 : num / pairs;
}

// AP over tie groups: each positive contributes the precision at its score.
double BruteAp(const at::Tensor& p, const at::Tensor& t) {
  auto pa = p.to(at::kDouble).contiguous();
  auto ta = t.to(at::kLong).contiguous();
  double sum = 0, npos = 0;
  for (int64_t i = 0; i < pa.numel(); ++i) {
    if (ta[i].item<int64_t>() != 1) continue;
    npos += 1;
    double ge = 0, tp = 0;
    for (int64_t j = 0; j < pa.numel(); ++j) {
      if (pa[j].item<double>() >= pa[i].item<double>()) {
        ge += 1;
        tp += ta[j].item<int64_t>() == 1;
      }
    }
    sum += tp / ge;
  }
  return sum / npos;
}

TEST(CurvesTest, ExactMatchesBruteForceWithTiesAndBatches) {
  // Verifies that the exact forms equal pairwise AUROC and tie-group AP on
  // data with many ties, in one pass and in batches of 7 and 1.
  at::manual_seed(3);
  at::Tensor t = at::randint(0, 2, {101}, at::kLong);
  at::Tensor p = (at::round(at::rand({101}) * 10) / 10).to(at::kFloat);
  for (int64_t batch : {0, 7, 1}) {
    auto a = Eval("binary_auroc", p, t, batch);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_NEAR(*a, BruteAuroc(p, t), 1e-6) << batch;
    auto ap = Eval("binary_average_precision", p, t, batch);
    ASSERT_TRUE(ap.ok()) << ap.status();
    EXPECT_NEAR(*ap, BruteAp(p, t), 1e-6) << batch;
  }
}

TEST(CurvesTest, IgnoreIndexAndLogits) {
  // Verifies that ignored targets are dropped and that logits are sigmoided
  // (which keeps the order, so the values equal those of the kept scores).
  at::Tensor p = at::tensor({-2.0, 3.0, 0.5, 1.5, -1.0, 4.0}, at::kFloat);
  at::Tensor t = at::tensor({0, 1, -1, 1, 1, 0}, at::kLong);
  at::Tensor kp = at::tensor({-2.0, 3.0, 1.5, -1.0, 4.0}, at::kFloat);
  at::Tensor kt = at::tensor({0, 1, 1, 1, 0}, at::kLong);
  auto a = Eval("binary_auroc(ignore_index=-1)", p, t);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_NEAR(*a, BruteAuroc(kp, kt), 1e-6);
  auto ap = Eval("binary_average_precision(ignore_index=-1)", p, t);
  ASSERT_TRUE(ap.ok()) << ap.status();
  EXPECT_NEAR(*ap, BruteAp(kp, kt), 1e-6);
}

TEST(CurvesTest, DegenerateTargets) {
  // Verifies TorchMetrics' answers without positives or negatives: AUROC 0,
  // AP 0 without positives (TorchMetrics 1.5.2 and sklearn) and 1 with only
  // positives.
  at::Tensor p = at::tensor({0.1, 0.4, 0.9}, at::kFloat);
  at::Tensor zeros = at::zeros({3}, at::kLong), ones = at::ones({3}, at::kLong);
  EXPECT_EQ(*Eval("binary_auroc", p, zeros), 0.0);
  EXPECT_EQ(*Eval("binary_auroc", p, ones), 0.0);
  EXPECT_EQ(*Eval("binary_average_precision", p, zeros), 0.0);
  EXPECT_NEAR(*Eval("binary_average_precision", p, ones), 1.0, 1e-7);
}

TEST(CurvesTest, BinnedHandComputed) {
  // Verifies the binned forms on a hand-computed case with thresholds
  // [0, 0.5, 1]: tpr = [1, 0.5, 0], fpr = [1, 0.5, 0] -> AUROC 0.5;
  // precision = [0.5, 0.5, 1], recall = [1, 0.5, 0] -> AP 0.5.
  at::Tensor p = at::tensor({0.2, 0.6, 0.7, 0.3}, at::kFloat);
  at::Tensor t = at::tensor({0, 0, 1, 1}, at::kLong);
  for (int64_t batch : {0, 1}) {
    EXPECT_NEAR(*Eval("binary_auroc(thresholds=3)", p, t, batch), 0.5, 1e-7);
    EXPECT_NEAR(*Eval("binary_average_precision(thresholds=3)", p, t, batch), 0.5, 1e-7);
    EXPECT_NEAR(*Eval("binary_auroc(thresholds=[0.0, 0.5, 1.0])", p, t, batch), 0.5, 1e-7);
  }
  // With fine thresholds the binned form approaches the exact one.
  at::Tensor q = at::tensor({0.15, 0.55, 0.75, 0.35}, at::kFloat);
  EXPECT_NEAR(*Eval("binary_auroc(thresholds=101)", q, t), *Eval("binary_auroc", q, t), 1e-6);
}

TEST(CurvesTest, BadValuesAndArguments) {
  // Verifies the deferred target check, metadata errors naming the input,
  // and argument errors.
  at::Tensor p = at::tensor({0.2, 0.6, 0.7}, at::kFloat);
  auto r = Eval("binary_auroc", p, at::tensor({0, 2, 1}, at::kLong));
  EXPECT_THAT(r.status().message(), HasSubstr("binary_auroc: target: 1 values outside {0, 1}"));
  r = Eval("binary_auroc(thresholds=4)", p, at::tensor({0, 2, 1}, at::kLong));
  EXPECT_THAT(r.status().message(), HasSubstr("target: 1 values outside {0, 1}"));
  r = Eval("binary_average_precision", at::tensor({0, 1, 1}, at::kLong), at::tensor({0, 1, 1}, at::kLong));
  EXPECT_THAT(r.status().message(), HasSubstr("binary_average_precision: preds: expected floating point"));
  r = Eval("binary_auroc", p.unsqueeze(1), at::tensor({0, 1, 1}, at::kLong));
  EXPECT_THAT(r.status().message(), HasSubstr("preds: shape"));
  r = Eval("binary_auroc(thresholds=1)", p, at::tensor({0, 1, 1}, at::kLong));
  EXPECT_THAT(r.status().message(), HasSubstr("thresholds must be an int >= 2"));
  r = Eval("binary_auroc(thresholds=[0.5, 1.5])", p, at::tensor({0, 1, 1}, at::kLong));
  EXPECT_THAT(r.status().message(), HasSubstr("thresholds must lie in [0, 1]"));
}

TEST(CurvesTest, UpdateRunsOnMeta) {
  // Verifies that exact and binned updates (and an empty batch) run on meta
  // tensors: no host reads; binned states keep their constant size.
  for (std::string spec : {"binary_auroc", "binary_average_precision", "binary_auroc(thresholds=50)",
                           "binary_average_precision(thresholds=[0.2, 0.4])"}) {
    auto meta = at::TensorOptions().device(at::kMeta);
    at::Tensor p = at::empty({64, 3}, meta.dtype(at::kFloat));
    at::Tensor t = at::empty({64, 3}, meta.dtype(at::kLong));
    auto sig = tally::SignatureOf(Inputs(p, t));
    ASSERT_TRUE(sig.ok());
    auto entries = tally::BuildEntries({spec}, *sig, ir::Device{"meta"});
    ASSERT_TRUE(entries.ok()) << entries.status();
    CompileOptions o;
    o.device = ir::Device{"meta"};
    auto prog = Compile(*entries, o);
    ASSERT_TRUE(prog.ok()) << spec << ": " << prog.status();
    EXPECT_TRUE((*prog)->Update(Inputs(p, t)).ok()) << spec;
    EXPECT_TRUE((*prog)->Update(Inputs(p.narrow(0, 0, 0), t.narrow(0, 0, 0))).ok()) << spec;
    for (const at::Tensor& st : (*prog)->states()) EXPECT_TRUE(st.is_meta()) << spec;
  }
}

TEST(CurvesTest, ExactWithNoKeptElementIsNan) {
  // Verifies that exact binary_auroc / binary_average_precision with no kept
  // element (no rows, or every target ignored) are NaN, as TorchMetrics
  // raises there (fuzz case: binary_auroc(ignore_index=1) on target [1]
  // gave 0). Binned forms keep their 0.
  at::Tensor p = at::tensor({0.3f, 0.8f});
  at::Tensor t = at::tensor({1, 1}, at::kLong);
  for (const char* spec : {"binary_auroc(ignore_index=1)", "binary_average_precision(ignore_index=1)",
                           "binary_auroc(ignore_index=1, max_fpr=0.5)"}) {
    for (int64_t batch : {0, 1}) {
      auto r = Eval(spec, p, t, batch);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_TRUE(std::isnan(*r)) << spec << " " << batch << ": " << *r;
    }
  }
  auto empty = Eval("binary_auroc", at::zeros({0}, at::kFloat), at::zeros({0}, at::kLong));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(std::isnan(*empty));
  auto binned = Eval("binary_auroc(thresholds=5, ignore_index=1)", p, t);
  ASSERT_TRUE(binned.ok()) << binned.status();
  EXPECT_EQ(*binned, 0.0);
}

}  // namespace
}  // namespace tally
