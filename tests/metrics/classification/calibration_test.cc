// Tests of the calibration metrics (metrics/classification/calibration.cc):
// binary_calibration_error and multiclass_calibration_error against
// TorchMetrics' documented examples and a brute-force binning loop (exact
// boundary hits, 1.0 in its own bin, NaN), batching and merging invariance,
// logits, ignore_index, bad arguments and inputs, and sync-freedom of the
// update (and of the whole program) on `meta`.
#include <ATen/ATen.h>

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

using ::testing::AllOf;
using ::testing::HasSubstr;

NamedTensors Inputs(const at::Tensor& p, const at::Tensor& t) { return {{"preds", p}, {"target", t}}; }

absl::StatusOr<at::Tensor> Eval(const std::string& spec, const at::Tensor& p, const at::Tensor& t, int64_t batch = 0) {
  tally::EvalOptions o;
  o.batch_size = batch;
  o.checked = true;
  auto r = tally::Evaluate({spec}, Inputs(p, t), o);
  if (!r.ok()) return r.status();
  return (*r)[0].value;
}

double Value(const absl::StatusOr<at::Tensor>& r) {
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->to(at::kDouble).item<double>() : NAN;
}

absl::StatusOr<std::unique_ptr<Program>> Make(const std::string& spec, const NamedTensors& like,
                                              const std::string& device = "cpu") {
  auto sig = tally::SignatureOf(like);
  if (!sig.ok()) return sig.status();
  auto entries = tally::BuildEntries({spec}, *sig, ir::Device{device});
  if (!entries.ok()) return entries.status();
  CompileOptions o;
  o.device = ir::Device{device};
  return Compile(*entries, o);
}

// BruteCalibration bins (confidence, accuracy) pairs by counting the
// torch.linspace boundaries <= each confidence, as TorchMetrics'
// bucketize(right=True) - 1 does, and applies _ce_compute.
double BruteCalibration(const at::Tensor& conf_in, const at::Tensor& acc_in, int64_t n_bins, const std::string& norm) {
  at::Tensor conf = conf_in.contiguous();
  at::Tensor b = at::linspace(0, 1, n_bins + 1, conf.options()).to(at::kDouble);
  std::vector<double> count(n_bins + 1), csum(n_bins + 1), asum(n_bins + 1);
  at::Tensor c64 = conf.to(at::kDouble), a64 = acc_in.to(at::kDouble);
  for (int64_t i = 0; i < conf.numel(); ++i) {
    double c = c64[i].item<double>();
    int64_t le = 0;
    for (int64_t k = 0; k <= n_bins; ++k) le += std::isnan(c) || b[k].item<double>() <= c;
    count[le - 1] += 1;
    csum[le - 1] += c;
    asum[le - 1] += a64[i].item<double>();
  }
  double total = 0;
  for (double n : count) total += n;
  double l1 = 0, l2 = 0, mx = 0;
  for (int64_t k = 0; k <= n_bins; ++k) {
    double acc = count[k] > 0 ? asum[k] / count[k] : 0;
    double cf = count[k] > 0 ? csum[k] / count[k] : 0;
    if (std::isnan(cf)) cf = 0;  // nan_to_num
    double gap = std::abs(acc - cf);
    l1 += gap * count[k] / total;
    l2 += gap * gap * count[k] / total;
    mx = std::max(mx, gap);
  }
  if (norm == "l1") return l1;
  if (norm == "max") return mx;
  return l2 > 0 ? std::sqrt(l2) : 0.0;
}

TEST(CalibrationTest, TorchMetricsDocumentedExamples) {
  // Verifies the examples of TorchMetrics' binary_calibration_error and
  // multiclass_calibration_error docstrings, and that the result has the
  // confidence dtype (float32 here; float64 binary preds give float64).
  at::Tensor p = at::tensor({0.25, 0.25, 0.55, 0.75, 0.75}, at::kFloat);
  at::Tensor t = at::tensor({0, 0, 1, 1, 1}, at::kLong);
  EXPECT_NEAR(Value(Eval("binary_calibration_error(n_bins=2, norm=l1)", p, t)), 0.2900, 5e-5);
  EXPECT_NEAR(Value(Eval("binary_calibration_error(n_bins=2, norm=l2)", p, t)), 0.2918, 5e-5);
  EXPECT_NEAR(Value(Eval("binary_calibration_error(n_bins=2, norm=max)", p, t)), 0.3167, 5e-5);
  EXPECT_EQ(Eval("binary_calibration_error", p, t)->scalar_type(), at::kFloat);
  EXPECT_EQ(Eval("binary_calibration_error", p.to(at::kDouble), t)->scalar_type(), at::kDouble);
  at::Tensor mp =
      at::tensor({0.25, 0.20, 0.55, 0.55, 0.05, 0.40, 0.10, 0.30, 0.60, 0.90, 0.05, 0.05}, at::kFloat).reshape({4, 3});
  at::Tensor mt = at::tensor({0, 1, 2, 0}, at::kLong);
  const std::string m = "multiclass_calibration_error(num_classes=3, n_bins=3, norm=";
  EXPECT_NEAR(Value(Eval(m + "l1)", mp, mt)), 0.2000, 5e-5);
  EXPECT_NEAR(Value(Eval(m + "l2)", mp, mt)), 0.2082, 5e-5);
  EXPECT_NEAR(Value(Eval(m + "max)", mp, mt)), 0.2333, 5e-5);
  EXPECT_EQ(Eval(m + "l1)", mp.to(at::kDouble), mt)->scalar_type(), at::kFloat);  // confidences .float()
}

TEST(CalibrationTest, BinsLikeBucketizeOverTorchLinspace) {
  // Verifies the binning against a brute-force loop over torch.linspace's
  // own points: confidences exactly on every boundary and one float32 below
  // it, 0.0 and 1.0 (which gets a bin of its own), for several n_bins and
  // every norm, in one pass and in batches of 7 and 1.
  for (int64_t n_bins : {1, 3, 10, 15}) {
    at::Tensor b = at::linspace(0, 1, n_bins + 1, at::kFloat);
    at::Tensor below = at::nextafter(b.slice(0, 1), at::zeros({}, at::kFloat));
    at::Tensor p = at::cat({b, below, at::tensor({0.31f, 0.999f, 0.5f}, at::kFloat)});
    at::Tensor t = at::arange(p.numel(), at::kLong).remainder(3).eq(0).to(at::kLong);
    for (const std::string norm : {"l1", "l2", "max"}) {
      double want = BruteCalibration(p, t, n_bins, norm);
      for (int64_t batch : {0, 7, 1}) {
        std::string spec = "binary_calibration_error(n_bins=" + std::to_string(n_bins) + ", norm=" + norm + ")";
        EXPECT_NEAR(Value(Eval(spec, p, t, batch)), want, 1e-6) << spec << " batch " << batch;
      }
    }
  }
  // A confidence of exactly 1.0 is not pooled with the last regular bin:
  // {0.95 (target 1), 1.0 (target 0)} in one bin would give |0.5 - 0.975|
  // (l1 0.475, max 0.475); apart they give 0.05 and 1 (l1 0.525, max 1).
  at::Tensor p = at::tensor({0.95, 1.0}, at::kFloat), t = at::tensor({1, 0}, at::kLong);
  EXPECT_NEAR(Value(Eval("binary_calibration_error(n_bins=10)", p, t)), 0.525, 1e-6);
  EXPECT_NEAR(Value(Eval("binary_calibration_error(n_bins=10, norm=max)", p, t)), 1.0, 1e-6);
}

TEST(CalibrationTest, MulticlassMatchesBruteForceWithLogitsAndIgnoreIndex) {
  // Verifies multiclass confidences (softmax of logits, top probability as
  // float32, argmax == target), extra dims, and ignore_index (-1 and a real
  // class), against the brute-force binning, in one pass and batches.
  at::manual_seed(9);
  at::Tensor logits = at::randn({40, 4, 2}, at::kFloat) * 2;
  at::Tensor t = at::randint(0, 4, {40, 2}, at::kLong);
  at::Tensor probs = at::softmax(logits, 1);
  at::Tensor conf = std::get<0>(probs.max(1)).reshape({-1});
  at::Tensor acc = probs.argmax(1).eq(t).reshape({-1});
  for (const std::string norm : {"l1", "l2", "max"}) {
    double want = BruteCalibration(conf, acc, 15, norm);
    for (int64_t batch : {0, 7}) {
      EXPECT_NEAR(Value(Eval("multiclass_calibration_error(num_classes=4, norm=" + norm + ")", logits, t, batch)), want,
                  1e-6)
          << norm << " batch " << batch;
    }
  }
  for (int64_t ii : {-1, 2}) {
    at::Tensor ti = t.clone();
    if (ii == -1) ti.view(-1).slice(0, 0, 80, 3).fill_(-1);
    at::Tensor keep = ti.reshape({-1}).ne(ii);
    double want = BruteCalibration(conf.index({keep}), acc.index({keep}), 15, "l1");
    std::string spec = "multiclass_calibration_error(num_classes=4, ignore_index=" + std::to_string(ii) + ")";
    EXPECT_NEAR(Value(Eval(spec, logits, ti, 7)), want, 1e-6) << spec;
  }
}

TEST(CalibrationTest, MergedHalvesEqualOnePass) {
  // Verifies that two programs fed the two halves and merged give the value
  // of one program fed everything (the states are sums), for both metrics.
  at::manual_seed(10);
  struct Case {
    std::string spec;
    at::Tensor p, t;
  };
  std::vector<Case> cases = {
      {"binary_calibration_error(n_bins=7, norm=l2)", at::rand({101}, at::kDouble),
       at::randint(0, 2, {101}, at::kLong)},
      {"multiclass_calibration_error(num_classes=5, norm=max)", at::randn({101, 5}),
       at::randint(0, 5, {101}, at::kLong)},
  };
  for (const Case& c : cases) {
    auto whole = Make(c.spec, Inputs(c.p, c.t));
    auto a = Make(c.spec, Inputs(c.p, c.t));
    auto b = Make(c.spec, Inputs(c.p, c.t));
    ASSERT_TRUE(whole.ok() && a.ok() && b.ok()) << c.spec;
    ASSERT_TRUE((*whole)->Update(Inputs(c.p, c.t)).ok());
    ASSERT_TRUE((*a)->Update(Inputs(c.p.narrow(0, 0, 40), c.t.narrow(0, 0, 40))).ok());
    ASSERT_TRUE((*b)->Update(Inputs(c.p.narrow(0, 40, 61), c.t.narrow(0, 40, 61))).ok());
    ASSERT_TRUE((*a)->Merge(**b).ok());
    auto vw = (*whole)->Compute();
    auto vm = (*a)->Compute();
    ASSERT_TRUE(vw.ok() && vm.ok());
    EXPECT_NEAR((*vm)[0].second.item<double>(), (*vw)[0].second.item<double>(), 1e-7) << c.spec;
    // Constant memory: n_bins + 1 bins per state, whatever the rows.
    for (const at::Tensor& s : (*a)->states()) {
      if (s.dim() == 1) {
        EXPECT_LE(s.size(0), 16) << c.spec;
      }
    }
  }
}

TEST(CalibrationTest, LogitsAndEmptyInput) {
  // Verifies the binary logits rule (any kept value outside [0, 1] sigmoids
  // the batch; ignored elements do not count), and TorchMetrics' answers
  // without data: l1 NaN (0/0 proportions), l2 0, max 0.
  at::Tensor logits = at::tensor({-2.0, 3.0, 0.5, 1.5}, at::kFloat);
  at::Tensor t = at::tensor({0, 1, 1, 0}, at::kLong);
  EXPECT_NEAR(Value(Eval("binary_calibration_error", logits, t)), BruteCalibration(at::sigmoid(logits), t, 15, "l1"),
              1e-6);
  at::Tensor p = at::tensor({0.2, 7.0, 0.9}, at::kFloat);
  at::Tensor ti = at::tensor({0, -1, 1}, at::kLong);
  EXPECT_NEAR(Value(Eval("binary_calibration_error(ignore_index=-1)", p, ti)),
              BruteCalibration(at::tensor({0.2f, 0.9f}), at::tensor({0, 1}), 15, "l1"), 1e-6);
  at::Tensor e = at::empty({0}, at::kFloat), et = at::empty({0}, at::kLong);
  EXPECT_TRUE(std::isnan(Value(Eval("binary_calibration_error", e, et))));
  EXPECT_EQ(Value(Eval("binary_calibration_error(norm=l2)", e, et)), 0.0);
  EXPECT_EQ(Value(Eval("binary_calibration_error(norm=max)", e, et)), 0.0);
}

TEST(CalibrationTest, BadArgumentsNameTheMetricAndArgument) {
  // Verifies InvalidArgument errors that name the metric and the argument.
  at::Tensor p = at::tensor({0.2, 0.6}, at::kFloat), t = at::tensor({0, 1}, at::kLong);
  at::Tensor mp = at::rand({2, 3}), mt = at::tensor({0, 2}, at::kLong);
  struct Bad {
    std::string spec;
    bool multiclass;
    std::string what;
  };
  for (const Bad& b : std::vector<Bad>{
           {"binary_calibration_error(n_bins=0)", false, "n_bins must be an integer >= 1, got 0"},
           {"binary_calibration_error(n_bins=2.5)", false, "n_bins"},
           {"binary_calibration_error(norm=l3)", false, "norm"},
           {"binary_calibration_error(ignore_index=0.5)", false, "ignore_index"},
           {"binary_calibration_error(num_classes=3)", false, "unknown argument 'num_classes'"},
           {"multiclass_calibration_error", true, "missing required argument 'num_classes'"},
           {"multiclass_calibration_error(num_classes=1)", true, "num_classes must be an integer >= 2, got 1"},
           {"multiclass_calibration_error(num_classes=3, n_bins=-4)", true, "n_bins must be an integer >= 1, got -4"},
           {"multiclass_calibration_error(num_classes=3, norm=L1)", true, "norm"},
       }) {
    auto r = b.multiclass ? Eval(b.spec, mp, mt) : Eval(b.spec, p, t);
    ASSERT_FALSE(r.ok()) << b.spec;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << b.spec;
    std::string metric = b.spec.substr(0, b.spec.find('('));
    EXPECT_THAT(r.status().message(), AllOf(HasSubstr(metric + ": "), HasSubstr(b.what))) << b.spec;
  }
}

TEST(CalibrationTest, BadInputsAndValues) {
  // Verifies host-side input errors naming the metric and input, and the
  // deferred target checks reported by Compute with their counts.
  at::Tensor p = at::tensor({0.2, 0.6, 0.7}, at::kFloat);
  auto r = Eval("binary_calibration_error", at::tensor({0, 1, 1}, at::kLong), at::tensor({0, 1, 1}, at::kLong));
  EXPECT_THAT(r.status().message(), HasSubstr("binary_calibration_error: preds: expected floating point"));
  r = Eval("binary_calibration_error", p, p);
  EXPECT_THAT(r.status().message(), HasSubstr("binary_calibration_error: target: expected integer or bool labels"));
  r = Eval("binary_calibration_error", p.unsqueeze(1), at::tensor({0, 1, 1}, at::kLong));
  EXPECT_THAT(r.status().message(), HasSubstr("binary_calibration_error: preds: shape"));
  r = Eval("binary_calibration_error", p, at::tensor({0, 2, 5}, at::kLong));
  EXPECT_THAT(r.status().message(), HasSubstr("binary_calibration_error: target: 2 values outside {0, 1}"));
  r = Eval("binary_calibration_error(ignore_index=5)", p, at::tensor({0, 2, 5}, at::kLong));
  EXPECT_THAT(r.status().message(), HasSubstr("target: 1 values outside {0, 1}"));
  at::Tensor mp = at::rand({3, 4});
  r = Eval("multiclass_calibration_error(num_classes=3)", mp, at::tensor({0, 1, 2}, at::kLong));
  EXPECT_THAT(r.status().message(),
              HasSubstr("multiclass_calibration_error: preds: expected scores of shape (N, 3, ...)"));
  r = Eval("multiclass_calibration_error(num_classes=4)", at::tensor({0, 1, 2}, at::kLong),
           at::tensor({0, 1, 2}, at::kLong));
  EXPECT_THAT(r.status().message(), HasSubstr("multiclass_calibration_error: preds: expected floating point"));
  r = Eval("multiclass_calibration_error(num_classes=4)", mp, at::tensor({0, 4, -1}, at::kLong));
  EXPECT_THAT(r.status().message(), HasSubstr("multiclass_calibration_error: target: 2 values outside [0, 4)"));
}

TEST(CalibrationTest, UpdateAndComputeRunOnMeta) {
  // Verifies sync-freedom: programs placed on meta update (also with an
  // empty batch) and finalize, keeping every state and the result on meta,
  // and no node of the update or finalize syncs the host.
  auto meta = at::TensorOptions().device(at::kMeta);
  struct Case {
    std::string spec;
    at::Tensor p, t;
  };
  for (const Case& c : std::vector<Case>{
           {"binary_calibration_error(n_bins=10, norm=l2)", at::empty({64, 3}, meta.dtype(at::kFloat)),
            at::empty({64, 3}, meta.dtype(at::kLong))},
           {"multiclass_calibration_error(num_classes=5, ignore_index=-1)",
            at::empty({64, 5, 2}, meta.dtype(at::kDouble)), at::empty({64, 2}, meta.dtype(at::kInt))},
       }) {
    auto prog = Make(c.spec, Inputs(c.p, c.t), "meta");
    ASSERT_TRUE(prog.ok()) << c.spec << ": " << prog.status();
    EXPECT_TRUE((*prog)->Update(Inputs(c.p, c.t)).ok()) << c.spec;
    EXPECT_TRUE((*prog)->Update(Inputs(c.p.narrow(0, 0, 0), c.t.narrow(0, 0, 0))).ok()) << c.spec;
    for (const at::Tensor& s : (*prog)->states()) EXPECT_TRUE(s.is_meta()) << c.spec;
    // Compute reads the deferred check counters on the host (its one
    // intended read); the finalize plan itself runs on the meta states.
    auto finalize = exec::EagerPlan::Create(*(*prog)->module().finalize);
    ASSERT_TRUE(finalize.ok()) << finalize.status();
    auto value = (*finalize)->Run((*prog)->states(), /*checked=*/true);
    ASSERT_TRUE(value.ok()) << c.spec << ": " << value.status();
    EXPECT_TRUE((*value)[0].is_meta()) << c.spec;
    for (const ir::Graph* g : {(*prog)->module().update.get(), (*prog)->module().finalize.get()}) {
      for (const auto& n : g->nodes()) EXPECT_FALSE(ops::SyncsHost(*n)) << c.spec << ": " << n->op();
    }
  }
}

}  // namespace
}  // namespace tally
