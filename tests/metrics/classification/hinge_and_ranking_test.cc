// Tests of hinge loss, the multilabel ranking metrics
// (metrics/classification/hinge_and_ranking.cc) and the curves' operating points
// (metrics/curves/operating_points.cc): TorchMetrics' documented examples, bad
// arguments and inputs (messages name the metric and the argument or input),
// deferred value checks, edge cases (no kept element, ignored labels, ties,
// no qualifying point), batching invariance and a sync-free exact finalize.
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
#include "ops/op_registry.h"

namespace tally {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

at::Tensor F32(std::vector<float> v, std::vector<int64_t> shape = {}) {
  at::Tensor t = at::tensor(v, at::kFloat);
  return shape.empty() ? t : t.reshape(shape);
}
at::Tensor I64(std::vector<int64_t> v, std::vector<int64_t> shape = {}) {
  at::Tensor t = at::tensor(v, at::kLong);
  return shape.empty() ? t : t.reshape(shape);
}

absl::StatusOr<std::vector<tally::EvalResult>> EvalSpec(const std::string& spec, const at::Tensor& p,
                                                        const at::Tensor& t, int64_t batch = 0) {
  tally::EvalOptions o;
  o.batch_size = batch;
  o.checked = true;
  return tally::Evaluate({spec}, {{"preds", p}, {"target", t}}, o);
}

// Values flattens a result (a tensor or a tuple of tensors) to doubles.
std::vector<double> Values(const absl::StatusOr<std::vector<tally::EvalResult>>& r) {
  EXPECT_TRUE(r.ok()) << r.status();
  std::vector<double> out;
  if (!r.ok()) return out;
  std::vector<at::Tensor> leaves;
  const ResultTree& tree = (*r)[0].result;
  if (tree.is_leaf()) leaves.push_back(tree.tensor);
  for (const ResultTree& p : tree.parts) leaves.push_back(p.tensor);
  for (const at::Tensor& t : leaves) {
    at::Tensor d = t.to(at::kDouble).reshape({-1}).contiguous();
    for (int64_t i = 0; i < d.numel(); ++i) out.push_back(d[i].item<double>());
  }
  return out;
}

void ExpectNear(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-4) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
    } else {
      EXPECT_NEAR(got[i], want[i], tol) << i;
    }
  }
}

// --- TorchMetrics' documented examples ------------------------------------------

TEST(ClassificationExtraDocTest, HingeLoss) {
  // Verifies the values printed in TorchMetrics 1.5's hinge docstrings.
  at::Tensor bp = F32({0.25, 0.25, 0.55, 0.75, 0.75});
  at::Tensor bt = I64({0, 0, 1, 1, 1});
  ExpectNear(Values(EvalSpec("binary_hinge_loss", bp, bt)), {0.6900});
  ExpectNear(Values(EvalSpec("binary_hinge_loss(squared=true)", bp, bt)), {0.6905});
  at::Tensor mp = F32({0.25, 0.20, 0.55, 0.55, 0.05, 0.40, 0.10, 0.30, 0.60, 0.90, 0.05, 0.05}, {4, 3});
  at::Tensor mt = I64({0, 1, 2, 0});
  ExpectNear(Values(EvalSpec("multiclass_hinge_loss(num_classes=3)", mp, mt)), {0.9125});
  ExpectNear(Values(EvalSpec("multiclass_hinge_loss(num_classes=3, squared=true)", mp, mt)), {1.1131});
  ExpectNear(Values(EvalSpec("multiclass_hinge_loss(num_classes=3, multiclass_mode=one-vs-all)", mp, mt)),
             {0.8750, 1.1250, 1.1000});
}

TEST(ClassificationExtraDocTest, Ranking) {
  // Verifies the rankings on hand-computed rows: ties take the maximal rank
  // (LRAP), coverage counts labels scored >= the lowest relevant one.
  at::Tensor p = F32({0.9, 0.5, 0.1, 0.2, 0.8, 0.4, 0.3, 0.3, 0.6}, {3, 3});
  at::Tensor t = I64({1, 0, 1, 0, 1, 0, 1, 1, 0}, {3, 3});
  // Row 0: relevant 0.9 and 0.1 -> coverage 3; row 1: 0.8 -> 1; row 2: 0.3, 0.3 -> 3.
  ExpectNear(Values(EvalSpec("multilabel_coverage_error(num_labels=3)", p, t)), {7.0 / 3});
  // LRAP: row 0 (1/1 + 2/3) / 2; row 1: 1; row 2: ranks of 0.3, 0.3 are 3, 3 among all, 2, 2 among relevant.
  ExpectNear(Values(EvalSpec("multilabel_ranking_average_precision(num_labels=3)", p, t)),
             {((1 + 2.0 / 3) / 2 + 1 + 2.0 / 3) / 3});
  // Loss: row 0: one of two pairs misordered; row 1: 0; row 2: both pairs misordered.
  ExpectNear(Values(EvalSpec("multilabel_ranking_loss(num_labels=3)", p, t)), {(0.5 + 0 + 1) / 3});
}

TEST(ClassificationExtraDocTest, OperatingPoints) {
  // Verifies TorchMetrics 1.5's docstring examples of the four binary
  // operating points (exact and binned).
  at::Tensor p = F32({0, 0.5, 0.7, 0.8});
  at::Tensor t = I64({0, 1, 1, 0});
  ExpectNear(Values(EvalSpec("binary_recall_at_fixed_precision(min_precision=0.5)", p, t)), {1.0, 0.5});
  ExpectNear(Values(EvalSpec("binary_recall_at_fixed_precision(min_precision=0.5, thresholds=5)", p, t)), {1.0, 0.5});
  ExpectNear(Values(EvalSpec("binary_precision_at_fixed_recall(min_recall=0.5)", p, t)), {0.6667, 0.5});
  ExpectNear(Values(EvalSpec("binary_precision_at_fixed_recall(min_recall=0.5, thresholds=5)", p, t)), {0.6667, 0.5});
  ExpectNear(Values(EvalSpec("binary_sensitivity_at_specificity(min_specificity=0.5)", p, t)), {1.0, 0.5});
  ExpectNear(Values(EvalSpec("binary_sensitivity_at_specificity(min_specificity=0.5, thresholds=5)", p, t)),
             {1.0, 0.5});
  ExpectNear(Values(EvalSpec("binary_specificity_at_sensitivity(min_sensitivity=0.5)", p, t)), {0.5, 0.7});
  ExpectNear(Values(EvalSpec("binary_specificity_at_sensitivity(min_sensitivity=0.5, thresholds=5)", p, t)),
             {0.5, 0.5});
  at::Tensor p2 = F32({0, 0.5, 0.4, 0.1});
  at::Tensor t2 = I64({0, 1, 1, 1});
  ExpectNear(Values(EvalSpec("binary_specificity_at_sensitivity(min_sensitivity=0.5)", p2, t2)), {1.0, 0.4});
  ExpectNear(Values(EvalSpec("binary_specificity_at_sensitivity(min_sensitivity=0.5, thresholds=5)", p2, t2)),
             {1.0, 0.25});
  at::Tensor mp = F32({0.75, 0.05, 0.05, 0.05, 0.05, 0.05, 0.75, 0.05, 0.05, 0.05,
                       0.05, 0.05, 0.75, 0.05, 0.05, 0.05, 0.05, 0.05, 0.75, 0.05},
                      {4, 5});
  at::Tensor mt = I64({0, 1, 3, 2});
  ExpectNear(Values(EvalSpec("multiclass_recall_at_fixed_precision(num_classes=5, min_precision=0.5)", mp, mt)),
             {1, 1, 0, 0, 0, 0.75, 0.75, 1e6, 1e6, 1e6});
  ExpectNear(
      Values(EvalSpec("multiclass_recall_at_fixed_precision(num_classes=5, min_precision=0.5, thresholds=5)", mp, mt)),
      {1, 1, 0, 0, 0, 0.75, 0.75, 1e6, 1e6, 1e6});
}

// --- arguments and inputs ----------------------------------------------------------

TEST(ClassificationExtraArgsTest, BadArgumentsNameTheMetricAndArgument) {
  // Verifies that bad arguments are InvalidArgument errors naming the metric
  // and the argument, found before any data is read.
  at::Tensor p = F32({0.1, 0.9}), t = I64({0, 1});
  at::Tensor mp = F32({0.1, 0.9, 0.8, 0.2}, {2, 2});
  struct Bad {
    std::string spec;
    at::Tensor p;
    std::string what;
  };
  std::vector<Bad> bad = {
      {"binary_hinge_loss(squared=1)", p, "squared"},
      {"multiclass_hinge_loss(num_classes=1)", mp, "num_classes"},
      {"multiclass_hinge_loss(num_classes=2, multiclass_mode=ovr)", mp, "multiclass_mode"},
      {"multiclass_hinge_loss", mp, "num_classes"},
      {"multilabel_ranking_loss(num_labels=1)", mp, "num_labels"},
      {"multilabel_coverage_error(num_labels=2, threshold=0.5)", mp, "threshold"},
      {"binary_recall_at_fixed_precision", p, "min_precision"},
      {"binary_recall_at_fixed_precision(min_precision=2)", p, "min_precision"},
      {"binary_precision_at_fixed_recall(min_recall=none)", p, "min_recall"},
      {"binary_sensitivity_at_specificity(min_specificity=0.5, thresholds=1)", p, "thresholds"},
      {"binary_specificity_at_sensitivity(min_sensitivity=0.5, thresholds=[1.5])", p, "thresholds"},
      {"multilabel_specificity_at_sensitivity(min_sensitivity=0.5)", mp, "num_labels"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.spec);
    auto r =
        EvalSpec(b.spec, b.p, b.p.dim() == 1 ? t : (b.spec.find("multilabel") == 0 ? I64({0, 1, 1, 0}, {2, 2}) : t));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string name = b.spec.substr(0, b.spec.find('('));
    EXPECT_THAT(r.status().message(), AllOf(HasSubstr(name), HasSubstr(b.what)));
  }
  // TorchMetrics takes a float min_* outside [0, 1] as given (an operating
  // point no curve meets); Tally checks floats and integers alike.
  for (const char* spec :
       {"binary_recall_at_fixed_precision(min_precision=1.5)", "binary_recall_at_fixed_precision(min_precision=nan)",
        "binary_precision_at_fixed_recall(min_recall=-0.1)"}) {
    auto r = EvalSpec(spec, p, t);
    ASSERT_FALSE(r.ok()) << spec;
    EXPECT_THAT(r.status().message(), HasSubstr(std::string(spec).substr(0, std::string(spec).find('(')))) << spec;
  }
}

TEST(ClassificationExtraArgsTest, BadInputsNameTheMetricAndInput) {
  // Verifies shape/dtype errors at build time name the metric and input,
  // and out-of-range targets are deferred checks reported by Compute.
  auto expect_error = [](const std::string& spec, const at::Tensor& p, const at::Tensor& t, const std::string& input,
                         const std::string& what) {
    SCOPED_TRACE(spec);
    auto r = EvalSpec(spec, p, t);
    ASSERT_FALSE(r.ok());
    std::string name = spec.substr(0, spec.find('('));
    EXPECT_THAT(r.status().message(), AllOf(HasSubstr(name), HasSubstr(input), HasSubstr(what)));
  };
  expect_error("binary_hinge_loss", I64({0, 1}), I64({0, 1}), "preds", "floating");
  expect_error("binary_hinge_loss", F32({0.1, 0.2, 0.3, 0.4}, {2, 2}), I64({0, 1, 1, 0, 1, 0}, {2, 3}), "preds",
               "shape");
  expect_error("binary_hinge_loss", F32({0.1, 0.2}), I64({0, 2}), "target", "1 values outside {0, 1}");
  expect_error("multiclass_hinge_loss(num_classes=3)", F32({0.1, 0.2, 0.7, 0.5}, {2, 2}), I64({0, 1}), "preds",
               "num_classes=3");
  expect_error("multiclass_hinge_loss(num_classes=2)", F32({0.1, 0.9, 0.7, 0.3}, {2, 2}), I64({0, 5}), "target",
               "1 values outside [0, 2)");
  expect_error("multilabel_ranking_loss(num_labels=2)", F32({0.1, 0.9, 0.7, 0.3}, {2, 2}), F32({0, 1, 1, 0}, {2, 2}),
               "target", "integer");
  expect_error("multilabel_coverage_error(num_labels=3)", F32({0.1, 0.9, 0.7, 0.3}, {2, 2}), I64({0, 1, 1, 0}, {2, 2}),
               "preds", "num_labels=3");
  expect_error("multilabel_ranking_average_precision(num_labels=2)", F32({0.1, 0.9, 0.7, 0.3}, {2, 2}),
               I64({0, 1, 3, 0}, {2, 2}), "target", "1 values outside {0, 1}");
  expect_error("binary_recall_at_fixed_precision(min_precision=0.5)", I64({0, 1}), I64({0, 1}), "preds", "floating");
  expect_error("multiclass_sensitivity_at_specificity(num_classes=2, min_specificity=0.5, thresholds=5)",
               F32({0.1, 0.9, 0.7, 0.3}, {2, 2}), I64({0, 2}), "target", "1 values outside [0, 2)");
}

// --- edge cases ----------------------------------------------------------------------

TEST(ClassificationExtraEdgeTest, HingeWithoutKeptElementsIsNan) {
  // Verifies that no kept element gives NaN (TorchMetrics' 0 / 0; its
  // multiclass form raises there) and that logits are sigmoided only when a
  // kept element lies outside [0, 1].
  ExpectNear(Values(EvalSpec("binary_hinge_loss(ignore_index=-1)", F32({5.0, 0.3}), I64({-1, -1}))), {NAN});
  // The ignored 5.0 does not make the batch logits: loss = mean(1 - 0.3, 1 + 0.4).
  ExpectNear(Values(EvalSpec("binary_hinge_loss(ignore_index=-1)", F32({5.0, 0.3, 0.4}), I64({-1, 1, 0}))), {1.05});
  ExpectNear(
      Values(EvalSpec("multiclass_hinge_loss(num_classes=2, ignore_index=0)", F32({0.2, 0.8}, {1, 2}), I64({0}))),
      {NAN});
}

TEST(ClassificationExtraEdgeTest, RankingIgnoredLabelsFollowTorchMetrics) {
  // Verifies TorchMetrics' ignore_index overwrite (score and target -4 L):
  // coverage L for a row with an ignored label, an ignored label in the
  // ranking loss's denominator, rows without relevant labels.
  at::Tensor p = F32({0.9, 0.5, 0.1, 0.2, 0.8, 0.4}, {2, 3});
  at::Tensor t = I64({1, -1, 0, 0, 1, 0}, {2, 3});
  ExpectNear(Values(EvalSpec("multilabel_coverage_error(num_labels=3, ignore_index=-1)", p, t)), {(3 + 1) / 2.0});
  ExpectNear(Values(EvalSpec("multilabel_ranking_average_precision(num_labels=3, ignore_index=-1)", p, t)), {1.0});
  // Row 0: relevant 0.9 above irrelevant 0.1 and the ignored label (-12): 0 / (1 * 2).
  at::Tensor p2 = F32({0.1, 0.5, 0.9, 0.2, 0.8, 0.4}, {2, 3});
  ExpectNear(Values(EvalSpec("multilabel_ranking_loss(num_labels=3, ignore_index=-1)", p2, t)), {(0.5 + 0) / 2});
  at::Tensor none = I64({0, 0, 0, 0, 0, 0}, {2, 3});
  ExpectNear(Values(EvalSpec("multilabel_coverage_error(num_labels=3)", p, none)), {0.0});
  ExpectNear(Values(EvalSpec("multilabel_ranking_average_precision(num_labels=3)", p, none)), {1.0});
  ExpectNear(Values(EvalSpec("multilabel_ranking_loss(num_labels=3)", p, none)), {0.0});
}

TEST(ClassificationExtraEdgeTest, RankingLossTiesFollowLabelOrder) {
  // Verifies that a tie between a relevant and an irrelevant label is a
  // misordered pair only when the irrelevant label has the larger index
  // (TorchMetrics' argsort(argsort(preds)) on CPU, stable for short rows).
  at::Tensor p = F32({0.5, 0.5, 0.5, 0.5}, {2, 2});
  ExpectNear(Values(EvalSpec("multilabel_ranking_loss(num_labels=2)", p, I64({1, 0, 0, 1}, {2, 2}))), {0.5});
}

TEST(ClassificationExtraEdgeTest, OperatingPointsWithoutQualifyingPoint) {
  // Verifies (0, 1e6) when no point qualifies or the best value is 0, NaN
  // when a class has no kept element, and float32 comparisons with min_*.
  at::Tensor p = F32({0.9, 0.8, 0.3}), t = I64({0, 0, 1});
  ExpectNear(Values(EvalSpec("binary_recall_at_fixed_precision(min_precision=0.9)", p, t)), {0.0, 1e6});
  ExpectNear(Values(EvalSpec("binary_precision_at_fixed_recall(min_recall=0.5)", p, t)), {1.0 / 3, 0.3});
  ExpectNear(Values(EvalSpec("binary_sensitivity_at_specificity(min_specificity=1.0)", p, t)), {0.0, 1.0});
  ExpectNear(
      Values(EvalSpec("binary_recall_at_fixed_precision(min_precision=0.5, ignore_index=-1)", p, I64({-1, -1, -1}))),
      {NAN, NAN});
  // Precision 7/10 is 0.7f: it qualifies for min_precision=0.7 in float32.
  std::vector<float> pv(10, 0.6f);
  std::vector<int64_t> tv = {1, 1, 1, 1, 1, 1, 1, 0, 0, 0};
  ExpectNear(Values(EvalSpec("binary_recall_at_fixed_precision(min_precision=0.7)", F32(pv), I64(tv))), {1.0, 0.6});
  // float64 preds: TorchMetrics compares in float64 there, and 0.7f < 0.7.
  ExpectNear(Values(EvalSpec("binary_recall_at_fixed_precision(min_precision=0.7)", F32(pv).to(at::kDouble), I64(tv))),
             {0.0, 1e6});
}

TEST(ClassificationExtraEdgeTest, BatchedEqualsWhole) {
  // Verifies that batches of 3 give the result of one update.
  at::Generator gen = at::detail::createCPUGenerator(7);
  at::Tensor p = at::rand({20, 4}, gen), t = at::randint(0, 2, {20, 4}, gen, at::kLong);
  at::Tensor mt = at::randint(0, 4, {20}, gen, at::kLong);
  for (const std::string spec :
       {"multilabel_coverage_error(num_labels=4)", "multilabel_ranking_average_precision(num_labels=4)",
        "multilabel_ranking_loss(num_labels=4)",
        "multilabel_recall_at_fixed_precision(num_labels=4, min_precision=0.6)",
        "multilabel_specificity_at_sensitivity(num_labels=4, min_sensitivity=0.6, thresholds=7)"}) {
    SCOPED_TRACE(spec);
    ExpectNear(Values(EvalSpec(spec, p, t, 3)), Values(EvalSpec(spec, p, t)), 1e-6);
  }
  for (const std::string spec :
       {"multiclass_hinge_loss(num_classes=4, multiclass_mode=one-vs-all)",
        "multiclass_precision_at_fixed_recall(num_classes=4, min_recall=0.5)",
        "multiclass_sensitivity_at_specificity(num_classes=4, min_specificity=0.5, thresholds=[0.9, 0.1, 0.5])"}) {
    SCOPED_TRACE(spec);
    ExpectNear(Values(EvalSpec(spec, p, mt, 3)), Values(EvalSpec(spec, p, mt)), 1e-6);
  }
}

TEST(ClassificationExtraEdgeTest, ExactOperatingPointsNeverReadTheHost) {
  // Verifies that the exact operating points compile with no host sync in
  // finalize either (masked maxima instead of masked_select), unlike the
  // exact curves.
  auto sig = tally::SignatureOf({{"preds", at::rand({4, 3})}, {"target", at::randint(0, 3, {4}, at::kLong)}});
  ASSERT_TRUE(sig.ok());
  auto entries = tally::BuildEntries({"multiclass_recall_at_fixed_precision(num_classes=3, min_precision=0.5)",
                                      "multiclass_specificity_at_sensitivity(num_classes=3, min_sensitivity=0.5)"},
                                     *sig, ir::Device{"cpu"});
  ASSERT_TRUE(entries.ok()) << entries.status();
  auto compiled = CompileModule(*entries, CompileOptions{});
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  for (const auto& n : compiled->module->finalize->nodes()) {
    EXPECT_FALSE(ops::SyncsHost(*n)) << n->op();
    EXPECT_FALSE(ops::HasDataDependentShape(*n)) << n->op();
  }
}

TEST(ClassificationExtraRegistryTest, RegistersEveryName) {
  // Verifies the registered names, their domains and inputs.
  std::vector<std::pair<std::string, std::string>> want = {{"binary_hinge_loss", "hinge"},
                                                           {"multiclass_hinge_loss", "hinge"},
                                                           {"multilabel_coverage_error", "ranking"},
                                                           {"multilabel_ranking_average_precision", "ranking"},
                                                           {"multilabel_ranking_loss", "ranking"}};
  for (const char* task : {"binary_", "multiclass_", "multilabel_"}) {
    for (const char* m : {"recall_at_fixed_precision", "precision_at_fixed_recall", "sensitivity_at_specificity",
                          "specificity_at_sensitivity"}) {
      want.emplace_back(std::string(task) + m, "curves");
    }
  }
  for (const auto& [name, domain] : want) {
    const metrics::MetricInfo* info = metrics::FindMetric(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->domain, domain) << name;
    // Hinge and the operating points take the optional row weight
    // (metrics/weights.h); the ranking metrics do not.
    std::vector<std::string> inputs = {"preds", "target"};
    if (domain != "ranking") inputs.push_back("weight");
    EXPECT_EQ(info->inputs, inputs) << name;
  }
  EXPECT_EQ(metrics::FindMetric("multilabel_hinge_loss"), nullptr);
}

}  // namespace
}  // namespace tally
