// Tests that binned curves cost O(T) in the number of thresholds: every
// value of the compiled update and finalize graphs of every binned curve
// metric holds O(K T) elements (no [T, T] selection matrix, no [N, T]
// comparison), T = 100,000 thresholds evaluate, a binned AUROC converges to
// the exact one as T grows, and a binned curve and a binned operating point
// of the same thresholds share one state.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "engine/ir/module.h"
#include "engine/runtime/compiler.h"
#include "gtest/gtest.h"

namespace tally {
namespace {

NamedTensors BinaryInputs(int64_t n, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  at::Tensor t = at::randint(0, 2, {n}, gen, at::kLong);
  at::Tensor p = (at::rand({n}, gen, at::kFloat) * 0.6 + t.to(at::kFloat) * 0.3).clamp(0, 1);
  return {{"preds", p}, {"target", t}};
}

NamedTensors ClassInputs(int64_t n, int64_t c, bool multilabel, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  at::Tensor p = at::rand({n, c}, gen, at::kFloat);
  at::Tensor t = multilabel ? at::randint(0, 2, {n, c}, gen, at::kLong) : at::randint(0, c, {n}, gen, at::kLong);
  return {{"preds", p}, {"target", t}};
}

// LargestValue is the most elements any value of the compiled graphs holds
// (symbolic dims, the rows, count 1).
int64_t LargestValue(const ir::Module& m) {
  int64_t most = 0;
  for (const ir::Graph* g : {m.update.get(), m.finalize.get()}) {
    for (const auto& n : g->nodes()) {
      for (const ir::Value* v : n->outputs()) {
        int64_t e = 1;
        for (const ir::Dim& d : v->type().shape) e *= d.is_symbolic() ? 1 : d.size;
        most = std::max(most, e);
      }
    }
  }
  return most;
}

std::unique_ptr<ir::Module> Compiled(const std::vector<std::string>& specs, const NamedTensors& in) {
  auto sig = tally::SignatureOf(in);
  auto entries = tally::BuildEntries(specs, *sig, ir::Device{});
  EXPECT_TRUE(entries.ok()) << entries.status();
  if (!entries.ok()) return nullptr;
  auto c = CompileModule(*entries, CompileOptions{});
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::move(c->module) : nullptr;
}

TEST(CurveScale, EveryBinnedCurveIsLinearInTheThresholds) {
  // Verifies that no value of a binned curve's program grows with T^2 or
  // N T: at T = 100,000 every value holds at most a few K (T + 1) elements.
  const int64_t t = 100000;
  const std::string th = absl::StrCat("thresholds=", t);
  std::vector<std::string> binary;
  for (const char* m : {"binary_auroc", "binary_average_precision", "binary_roc", "binary_precision_recall_curve"}) {
    binary.push_back(absl::StrCat(m, "(", th, ")"));
  }
  binary.push_back(absl::StrCat("binary_auroc(", th, ", max_fpr=0.5)"));
  binary.push_back(absl::StrCat("binary_recall_at_fixed_precision(min_precision=0.5, ", th, ")"));
  binary.push_back(absl::StrCat("binary_sensitivity_at_specificity(min_specificity=0.5, ", th, ")"));
  NamedTensors bin = BinaryInputs(1000, 1);
  for (const std::string& spec : binary) {
    auto m = Compiled({spec}, bin);
    ASSERT_NE(m, nullptr) << spec;
    EXPECT_LE(LargestValue(*m), 4 * (t + 1)) << spec;
    EXPECT_LE(m->FixedStateBytes(), 8 * (2 * (t + 1) + 4)) << spec;
  }
  const int64_t tc = 10000, c = 3;
  for (bool multilabel : {false, true}) {
    std::string task = multilabel ? "multilabel" : "multiclass";
    std::string num = multilabel ? "num_labels=3" : "num_classes=3";
    NamedTensors in = ClassInputs(200, c, multilabel, 2);
    for (const char* m : {"auroc", "average_precision", "roc", "precision_recall_curve"}) {
      std::string spec = absl::StrCat(task, "_", m, "(", num, ", thresholds=", tc, ")");
      auto mod = Compiled({spec}, in);
      ASSERT_NE(mod, nullptr) << spec;
      EXPECT_LE(LargestValue(*mod), 4 * c * (tc + 1)) << spec;
    }
  }
}

TEST(CurveScale, ManyThresholdsEvaluateAndConvergeToTheExactValue) {
  // Verifies that T = 100,000 thresholds run (the [T, T] form needed 75 GB)
  // and that the binned AUROC and AP approach the exact ones as T grows.
  NamedTensors in = BinaryInputs(1000, 3);
  tally::EvalOptions o;
  auto exact = tally::Evaluate({"binary_auroc", "binary_average_precision"}, in, o);
  ASSERT_TRUE(exact.ok()) << exact.status();
  double prev_err = 1;
  for (int64_t t : {11, 1001, 100000}) {
    auto r = tally::Evaluate({absl::StrCat("binary_auroc(thresholds=", t, ")"),
                              absl::StrCat("binary_average_precision(thresholds=", t, ")")},
                             in, o);
    ASSERT_TRUE(r.ok()) << r.status();
    double err = std::abs((*r)[0].value.item<double>() - (*exact)[0].value.item<double>());
    EXPECT_LE(err, prev_err + 1e-7) << "T=" << t;
    prev_err = err;
    if (t == 100000) {
      EXPECT_LT(err, 1e-4);
      EXPECT_NEAR((*r)[1].value.item<double>(), (*exact)[1].value.item<double>(), 1e-3);
    }
  }
}

TEST(CurveScale, ABinnedCurveAndOperatingPointShareOneState) {
  // Verifies that binary_auroc and an operating point over the same
  // thresholds keep one histogram (the same update subgraph: CSE merges it).
  NamedTensors in = BinaryInputs(10, 4);
  auto alone = Compiled({"binary_auroc(thresholds=50)"}, in);
  auto both = Compiled(
      {"binary_auroc(thresholds=50)", "binary_specificity_at_sensitivity(min_sensitivity=0.5, thresholds=50)"}, in);
  ASSERT_NE(alone, nullptr);
  ASSERT_NE(both, nullptr);
  EXPECT_EQ(alone->FixedStateBytes(), both->FixedStateBytes());
}

}  // namespace
}  // namespace tally
