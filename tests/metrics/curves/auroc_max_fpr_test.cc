// Tests of binary_auroc's max_fpr (metrics/curves/auroc_and_average_precision.cc): the exact form
// against the standardized partial AUC computed here the way sklearn does
// (ROC over distinct thresholds, interpolation at max_fpr, McClish), the
// binned form against TorchMetrics' _binary_auroc_compute step by step
// (with its bucketize quirks), batching and merging invariance, argument
// errors, and a finalize free of host syncs that runs on `meta`.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "api/tally.h"
#include "engine/exec/eager_executor.h"
#include "engine/runtime/compiler.h"
#include "engine/runtime/program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "ops/op_registry.h"

namespace tally {
namespace {

using ::testing::HasSubstr;

NamedTensors Inputs(const at::Tensor& p, const at::Tensor& t) { return {{"preds", p}, {"target", t}}; }

absl::StatusOr<double> Eval(const std::string& spec, const at::Tensor& p, const at::Tensor& t, int64_t batch = 0) {
  tally::EvalOptions o;
  o.batch_size = batch;
  o.checked = true;
  auto r = tally::Evaluate({spec}, Inputs(p, t), o);
  if (!r.ok()) return r.status();
  return (*r)[0].value.to(at::kDouble).item<double>();
}

// Near is |a - b| <= 1e-6, or both NaN.
::testing::AssertionResult Near(double a, double b) {
  if ((std::isnan(a) && std::isnan(b)) || std::abs(a - b) <= 1e-6) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << a << " vs " << b;
}

double McClish(double pauc, double m) { return 0.5 * (1 + (pauc - m * m / 2) / (m - m * m / 2)); }

// Trapezoids of (x, y) up to x = m, the last segment cut at m by linear
// interpolation (sklearn's roc_auc_score(max_fpr) construction).
double AreaUpTo(const std::vector<double>& x, const std::vector<double>& y, double m) {
  double area = 0;
  for (size_t i = 0; i + 1 < x.size(); ++i) {
    if (x[i + 1] <= m) {
      area += (x[i + 1] - x[i]) * (y[i] + y[i + 1]) / 2;
    } else if (x[i] <= m) {
      double at_m = y[i] + (m - x[i]) / (x[i + 1] - x[i]) * (y[i + 1] - y[i]);
      area += (m - x[i]) * (y[i] + at_m) / 2;
    }
  }
  return area;
}

// ExactPartialAuroc: the ROC through the distinct scores (descending),
// starting at (0, 0).
double ExactPartialAuroc(const at::Tensor& p, const at::Tensor& t, double m) {
  std::vector<std::pair<double, int64_t>> rows;
  at::Tensor pd = p.to(at::kDouble).reshape(-1), tl = t.to(at::kLong).reshape(-1);
  for (int64_t i = 0; i < pd.numel(); ++i) rows.push_back({pd[i].item<double>(), tl[i].item<int64_t>()});
  std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.first > b.first; });
  double n_pos = 0, n_neg = 0;
  for (auto& r : rows) (r.second == 1 ? n_pos : n_neg) += 1;
  std::vector<double> fpr{0}, tpr{0};
  double tp = 0, fp = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    (rows[i].second == 1 ? tp : fp) += 1;
    if (i + 1 == rows.size() || rows[i + 1].first != rows[i].first) {
      fpr.push_back(fp / n_neg);
      tpr.push_back(tp / n_pos);
    }
  }
  return McClish(AreaUpTo(fpr, tpr, m), m);
}

// BinnedPartialAuroc follows TorchMetrics: counts at preds >= threshold,
// the curve flipped to ascending fpr, stop = bucketize(m, fpr, right=True).
double BinnedPartialAuroc(const at::Tensor& p, const at::Tensor& t, const std::vector<float>& thr, double m) {
  const size_t n = thr.size();
  std::vector<double> fpr(n), tpr(n);
  at::Tensor pf = p.to(at::kFloat).reshape(-1), tl = t.to(at::kLong).reshape(-1);
  for (size_t k = 0; k < n; ++k) {
    double tp = 0, fp = 0, fn = 0, tn = 0;
    for (int64_t i = 0; i < pf.numel(); ++i) {
      bool ge = pf[i].item<float>() >= thr[k];
      bool pos = tl[i].item<int64_t>() == 1;
      (pos ? (ge ? tp : fn) : (ge ? fp : tn)) += 1;
    }
    fpr[n - 1 - k] = fp + tn > 0 ? fp / (fp + tn) : 0;
    tpr[n - 1 - k] = tp + fn > 0 ? tp / (tp + fn) : 0;
  }
  double fsum = 0, tsum = 0;
  for (size_t i = 0; i < n; ++i) fsum += fpr[i], tsum += tpr[i];
  if (fsum == 0 || tsum == 0) return AreaUpTo(fpr, tpr, 2.0);
  size_t stop = 0;
  while (stop < n && fpr[stop] <= m) ++stop;
  if (stop == n) return NAN;            // TorchMetrics: IndexError
  if (stop == 0) return McClish(0, m);  // fpr[-1] wraps; one point, no area
  return McClish(AreaUpTo(fpr, tpr, m), m);
}

TEST(AurocMaxFprTest, ExactMatchesThePartialRocWithTiesAndBatches) {
  // Verifies the exact form against the interpolated partial ROC on data
  // with many ties (within and across classes), for max_fpr on and between
  // fpr breakpoints, in one pass and in batches of 7 and 1.
  at::manual_seed(21);
  at::Tensor t = at::randint(0, 2, {83}, at::kLong);
  at::Tensor p = (at::round(at::rand({83}) * 10 + t * 2) / 12).to(at::kFloat);
  const double n_neg = t.eq(0).sum().item<double>();
  for (double m : {0.05, 0.1, 0.3, 0.5, 0.9, 4 / n_neg}) {
    const std::string ms = std::to_string(m);  // the spec's value, as the metric reads it
    const double want = ExactPartialAuroc(p, t, std::stod(ms));
    for (int64_t batch : {0, 7, 1}) {
      auto got = Eval("binary_auroc(max_fpr=" + ms + ")", p, t, batch);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_NEAR(*got, want, 1e-6) << ms << " batch " << batch;
    }
  }
  // max_fpr = 1 is the whole AUROC.
  EXPECT_NEAR(*Eval("binary_auroc(max_fpr=1.0)", p, t), *Eval("binary_auroc", p, t), 1e-7);
  // Logits: sigmoid keeps the order.
  at::Tensor logits = (p - 0.5) * 8;
  EXPECT_NEAR(*Eval("binary_auroc(max_fpr=0.25)", logits, t), ExactPartialAuroc(logits, t, 0.25), 1e-6);
}

TEST(AurocMaxFprTest, ExactDegenerateTargetsGiveZero) {
  // Verifies TorchMetrics' answer without positives or negatives: the plain
  // AUROC, 0 (sklearn raises there).
  at::Tensor p = at::tensor({0.1, 0.4, 0.9}, at::kFloat);
  EXPECT_EQ(*Eval("binary_auroc(max_fpr=0.3)", p, at::zeros({3}, at::kLong)), 0.0);
  EXPECT_EQ(*Eval("binary_auroc(max_fpr=0.3)", p, at::ones({3}, at::kLong)), 0.0);
}

TEST(AurocMaxFprTest, BinnedFollowsTorchMetricsIncludingQuirks) {
  // Verifies the binned form against TorchMetrics' algorithm for linspace
  // and list thresholds, the wrap-around quirk (every fpr above max_fpr:
  // area 0) and NaN where TorchMetrics indexes past the curve.
  at::manual_seed(22);
  at::Tensor t = at::randint(0, 2, {64}, at::kLong);
  at::Tensor p = (at::round(at::rand({64}) * 20 + t * 4) / 24).to(at::kFloat);
  std::vector<float> five = {0.0f, 0.25f, 0.5f, 0.75f, 1.0f};
  for (double m : {0.1, 0.3, 0.5, 0.8}) {
    std::string ms = std::to_string(m);
    for (int64_t batch : {0, 7}) {
      EXPECT_TRUE(
          Near(*Eval("binary_auroc(thresholds=5, max_fpr=" + ms + ")", p, t, batch), BinnedPartialAuroc(p, t, five, m)))
          << m;
      EXPECT_TRUE(Near(*Eval("binary_auroc(thresholds=[0.1, 0.3, 0.5, 0.7], max_fpr=" + ms + ")", p, t, batch),
                       BinnedPartialAuroc(p, t, {0.1f, 0.3f, 0.5f, 0.7f}, m)))
          << m;
    }
  }
  double quirk = BinnedPartialAuroc(p, t, {0.01f, 0.02f}, 0.2);
  EXPECT_NEAR(quirk, McClish(0, 0.2), 1e-12);
  EXPECT_NEAR(*Eval("binary_auroc(thresholds=[0.01, 0.02], max_fpr=0.2)", p, t), quirk, 1e-6);
  EXPECT_TRUE(std::isnan(BinnedPartialAuroc(p, t, {0.8f, 0.95f}, 0.6)));
  EXPECT_TRUE(std::isnan(*Eval("binary_auroc(thresholds=[0.8, 0.95], max_fpr=0.6)", p, t)));
}

TEST(AurocMaxFprTest, MergedHalvesEqualOnePass) {
  // Verifies that merging two half programs gives the one-pass value, for
  // the exact (cat states) and the binned (sum states) form.
  at::manual_seed(23);
  at::Tensor t = at::randint(0, 2, {90}, at::kLong);
  at::Tensor p = at::rand({90}, at::kDouble);
  for (std::string spec : {"binary_auroc(max_fpr=0.2)", "binary_auroc(max_fpr=0.4, thresholds=20)"}) {
    auto sig = tally::SignatureOf(Inputs(p, t));
    ASSERT_TRUE(sig.ok());
    std::unique_ptr<Program> progs[3];
    for (auto& prog : progs) {
      auto entries = tally::BuildEntries({spec}, *sig, ir::Device{"cpu"});
      ASSERT_TRUE(entries.ok()) << entries.status();
      auto c = Compile(*entries, CompileOptions{});
      ASSERT_TRUE(c.ok()) << c.status();
      prog = std::move(*c);
    }
    ASSERT_TRUE(progs[0]->Update(Inputs(p, t)).ok());
    ASSERT_TRUE(progs[1]->Update(Inputs(p.narrow(0, 0, 33), t.narrow(0, 0, 33))).ok());
    ASSERT_TRUE(progs[2]->Update(Inputs(p.narrow(0, 33, 57), t.narrow(0, 33, 57))).ok());
    ASSERT_TRUE(progs[1]->Merge(*progs[2]).ok());
    auto whole = progs[0]->Compute(), merged = progs[1]->Compute();
    ASSERT_TRUE(whole.ok() && merged.ok());
    EXPECT_NEAR((*merged)[0].second.item<double>(), (*whole)[0].second.item<double>(), 1e-7) << spec;
  }
}

TEST(AurocMaxFprTest, BadArguments) {
  // Verifies InvalidArgument errors naming the metric and max_fpr.
  at::Tensor p = at::tensor({0.2, 0.6, 0.7}, at::kFloat), t = at::tensor({0, 1, 1}, at::kLong);
  for (std::string bad : {"0", "0.0", "1.5", "-0.2"}) {
    auto r = Eval("binary_auroc(max_fpr=" + bad + ")", p, t);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("binary_auroc: max_fpr must be a float in (0, 1]")) << bad;
  }
  auto r = Eval("binary_auroc(max_fpr=0.3, thresholds=[0.5, 0.1])", p, t);
  EXPECT_THAT(r.status().message(),
              HasSubstr("binary_auroc: thresholds must be sorted in increasing order for an area under the curve"));
  r = Eval("binary_auroc(max_fpr=none)", p, t);
  EXPECT_TRUE(r.ok()) << r.status();
  r = Eval("binary_auroc(max_fpr=fast)", p, t);
  EXPECT_THAT(r.status().message(), HasSubstr("max_fpr"));
  r = Eval("binary_average_precision(max_fpr=0.3)", p, t);
  EXPECT_THAT(r.status().message(), HasSubstr("binary_average_precision: unknown argument 'max_fpr'"));
}

TEST(AurocMaxFprTest, FinalizeIsSyncFreeAndRunsOnMeta) {
  // Verifies that neither form needs a host sync: no update or finalize node
  // syncs, updates run on meta, and the finalize plan (sorts, searchsorted
  // and cumsum for the exact form) runs on the meta states.
  auto meta = at::TensorOptions().device(at::kMeta);
  at::Tensor p = at::empty({40, 2}, meta.dtype(at::kFloat)), t = at::empty({40, 2}, meta.dtype(at::kLong));
  for (std::string spec : {"binary_auroc(max_fpr=0.3)", "binary_auroc(max_fpr=0.3, thresholds=16)"}) {
    auto sig = tally::SignatureOf(Inputs(p, t));
    ASSERT_TRUE(sig.ok());
    auto entries = tally::BuildEntries({spec}, *sig, ir::Device{"meta"});
    ASSERT_TRUE(entries.ok()) << entries.status();
    CompileOptions o;
    o.device = ir::Device{"meta"};
    auto prog = Compile(*entries, o);
    ASSERT_TRUE(prog.ok()) << prog.status();
    for (const ir::Graph* g : {(*prog)->module().update.get(), (*prog)->module().finalize.get()}) {
      for (const auto& n : g->nodes()) {
        EXPECT_FALSE(ops::SyncsHost(*n) || ops::HasDataDependentShape(*n)) << spec << ": " << n->op();
      }
    }
    ASSERT_TRUE((*prog)->Update(Inputs(p, t)).ok()) << spec;
    ASSERT_TRUE((*prog)->Update(Inputs(p.narrow(0, 0, 0), t.narrow(0, 0, 0))).ok()) << spec;
    auto finalize = exec::EagerPlan::Create(*(*prog)->module().finalize);
    ASSERT_TRUE(finalize.ok()) << finalize.status();
    auto value = (*finalize)->Run((*prog)->states(), /*checked=*/true);
    ASSERT_TRUE(value.ok()) << spec << ": " << value.status();
    EXPECT_TRUE((*value)[0].is_meta()) << spec;
  }
}

}  // namespace
}  // namespace tally
