// Tests of the clustering and nominal metrics (metrics/clustering,
// metrics/nominal) beyond the golden fixtures: one contingency table for a
// collection, the memory budget at num_classes = 20,000, permutation and
// declared-size invariance, bad inputs, and fleiss_kappa's streaming states.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "api/tally.h"
#include "engine/runtime/compiler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tally {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

NamedTensors Labels(const at::Tensor& p, const at::Tensor& t) { return {{"preds", p}, {"target", t}}; }

absl::StatusOr<std::vector<double>> Eval(const std::vector<std::string>& specs, const NamedTensors& in,
                                         int64_t batch = 0, int64_t budget = 0) {
  EvalOptions o;
  o.batch_size = batch;
  o.checked = true;
  o.max_state_bytes = budget;
  auto r = Evaluate(specs, in, o);
  if (!r.ok()) return r.status();
  std::vector<double> out;
  for (const auto& e : *r) out.push_back(e.value.to(at::kDouble).item<double>());
  return out;
}

const std::vector<std::string> kCollection = {
    "adjusted_rand_score(num_classes=1000)", "normalized_mutual_info_score(num_classes=1000)",
    "v_measure_score(num_classes=1000)", "fowlkes_mallows_index(num_classes=1000)"};

TEST(ClusteringTest, ACollectionKeepsOneContingencyTable) {
  // Verifies that ARI, NMI, V-measure and Fowlkes-Mallows share one int64
  // [num_clusters, num_classes] state after compilation.
  NamedTensors like = Labels(at::zeros({8}, at::kLong), at::zeros({8}, at::kLong));
  auto sig = SignatureOf(like);
  ASSERT_TRUE(sig.ok()) << sig.status();
  auto entries = BuildEntries(kCollection, *sig, ir::Device{"cpu"});
  ASSERT_TRUE(entries.ok()) << entries.status();
  auto c = CompileModule(*entries, CompileOptions{});
  ASSERT_TRUE(c.ok()) << c.status();
  // Besides the table, only the deferred range checks of preds and target.
  std::vector<const ir::StateDecl*> tables;
  for (const ir::StateDecl& s : c->module->states) {
    if (s.check.empty()) tables.push_back(&s);
  }
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0]->type.dtype, ir::DType::kInt64);
  EXPECT_EQ(tables[0]->type.shape.size(), 2u);
  EXPECT_EQ(c->module->states.size(), 3u);
}

TEST(ClusteringTest, ScoresIgnorePermutationsAndUnusedIds) {
  // Verifies label-permutation invariance (relabelled clusters give the same
  // scores; a relabelled identical clustering gives ARI = rand = FM = V = 1)
  // and that declaring larger sizes than the ids in use changes nothing.
  at::manual_seed(3);
  at::Tensor t = at::randint(0, 5, {400}, at::kLong);
  at::Tensor p = at::where(at::rand({400}) < 0.6, t, at::randint(0, 4, {400}, at::kLong));
  at::Tensor perm = at::tensor({3, 0, 4, 1, 2}, at::kLong);
  const std::vector<std::string> names = {"mutual_info_score",   "normalized_mutual_info_score",
                                          "homogeneity_score",   "completeness_score",
                                          "v_measure_score",     "rand_score",
                                          "adjusted_rand_score", "fowlkes_mallows_index"};
  std::vector<std::string> small, large;
  for (const auto& n : names) {
    small.push_back(n + "(num_classes=5)");
    large.push_back(n + "(num_classes=40, num_clusters=9)");
  }
  auto a = Eval(small, Labels(p, t));
  auto b = Eval(small, Labels(perm.index_select(0, p), t), 13);
  auto c = Eval(large, Labels(p, t), 50);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << a.status() << b.status() << c.status();
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_NEAR((*a)[i], (*b)[i], 1e-12) << names[i];
    EXPECT_NEAR((*a)[i], (*c)[i], 1e-12) << names[i];
  }
  auto same = Eval({"adjusted_rand_score(num_classes=5)", "rand_score(num_classes=5)",
                    "fowlkes_mallows_index(num_classes=5)", "v_measure_score(num_classes=5)"},
                   Labels(perm.index_select(0, t), t));
  ASSERT_TRUE(same.ok()) << same.status();
  for (double v : *same) EXPECT_NEAR(v, 1.0, 1e-12);
}

TEST(ClusteringTest, TwentyThousandClassesAreRefusedByTheBudgetBeforeAllocating) {
  // Verifies that a 20,000 x 20,000 table (3.2 GB) over a 1 GiB budget is a
  // one-line ResourceExhausted error naming the metric and num_classes, and
  // that 20,000 classes with 50 clusters (8 MB) run.
  at::Tensor t = at::tensor({0, 19999, 7, 7}, at::kLong);
  auto r = Eval({"adjusted_rand_score(num_classes=20000)"}, Labels(t, t), 0, int64_t{1} << 30);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(r.status().message(), AllOf(HasSubstr("adjusted_rand_score"), HasSubstr("num_classes=20000")));
  EXPECT_EQ(std::string(r.status().message()).find('\n'), std::string::npos);
  at::Tensor p = at::tensor({0, 49, 3, 3}, at::kLong);
  auto ok = Eval({"adjusted_rand_score(num_classes=20000, num_clusters=50)"}, Labels(p, t), 0, int64_t{1} << 30);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_NEAR((*ok)[0], 1.0, 1e-12);
}

TEST(ClusteringTest, BadInputsNameTheMetricAndInput) {
  // Verifies the metadata errors and the deferred range checks.
  at::Tensor l = at::tensor({0, 1, 2}, at::kLong);
  struct Case {
    std::string spec;
    NamedTensors in;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{
           {"mutual_info_score(num_classes=3)", Labels(l.to(at::kFloat), l),
            "mutual_info_score: preds: expected integer cluster ids"},
           {"rand_score(num_classes=3)", Labels(l, l.unsqueeze(1)), "rand_score: target: expected 1-D class ids"},
           {"rand_score(num_classes=3)", Labels(l, at::tensor({0, 1}, at::kLong)), "input 'target' has 2 rows"},
           {"adjusted_rand_score(num_classes=3, num_clusters=2)", Labels(l, l), "preds: 1 values outside [0, 2)"},
           {"completeness_score(num_classes=2)", Labels(at::zeros({3}, at::kLong), l),
            "target: 1 values outside [0, 2)"},
           {"cramers_v(num_classes=2)", Labels(l, at::zeros({3}, at::kLong)),
            "cramers_v: preds: 1 values outside [0, 2)"},
           {"theils_u(num_classes=3)", Labels(l, l.to(at::kBool)), "theils_u: target: expected integer or floating"},
           {"fleiss_kappa",
            {{"ratings", at::tensor({-1, 3}, at::kLong).view({1, 2})}},
            "fleiss_kappa: ratings: 1 negative counts"},
           {"fleiss_kappa(mode=probs)",
            {{"ratings", at::rand({2, 3})}},
            "fleiss_kappa: ratings: mode='probs' expects float scores [N, C, R]"},
       }) {
    auto r = Eval({c.spec}, c.in);
    ASSERT_FALSE(r.ok()) << c.spec;
    EXPECT_THAT(r.status().message(), HasSubstr(c.want)) << c.spec;
  }
  auto arg = Eval({"normalized_mutual_info_score(num_classes=3, average_method=median)"}, Labels(l, l));
  EXPECT_THAT(arg.status().message(), AllOf(HasSubstr("normalized_mutual_info_score"), HasSubstr("average_method")));
  arg = Eval({"rand_score(num_classes=0)"}, Labels(l, l));
  EXPECT_THAT(arg.status().message(), AllOf(HasSubstr("rand_score"), HasSubstr("num_classes must be an integer >= 1")));
}

TEST(ClusteringTest, EmptyAndOneRow) {
  // Verifies TorchMetrics' values without data and for one row: MI 0, the
  // entropy-normalized scores 0 without data, rand and ARI 1 (no pairs
  // disagree), Fowlkes-Mallows 0 (no pair shares a cluster).
  at::Tensor e = at::zeros({0}, at::kLong);
  at::Tensor one = at::tensor({1}, at::kLong);
  const std::vector<std::string> specs = {"mutual_info_score(num_classes=3)",   "homogeneity_score(num_classes=3)",
                                          "v_measure_score(num_classes=3)",     "rand_score(num_classes=3)",
                                          "adjusted_rand_score(num_classes=3)", "fowlkes_mallows_index(num_classes=3)"};
  auto r = Eval(specs, Labels(e, e));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, (std::vector<double>{0, 0, 0, 1, 1, 0}));
  r = Eval(specs, Labels(one, one));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, (std::vector<double>{0, 1, 1, 1, 1, 0}));
}

TEST(ClusteringTest, FleissKappaStreamsItsSums) {
  // Verifies fleiss_kappa against Fleiss' formula (with TorchMetrics' 1e-5)
  // in one update and in batches, with probs equal to the counts they give.
  at::manual_seed(5);
  const int64_t n = 50, c = 4, raters = 6;
  at::Tensor scores = at::rand({n, c, raters}, at::kDouble);
  at::Tensor counts = at::one_hot(scores.argmax(1), c).sum(1);
  at::Tensor cd = counts.to(at::kDouble);
  at::Tensor p = cd.sum(0) / (n * raters);
  double pbar = ((cd * cd).sum(1) - raters).div(raters * (raters - 1)).mean().item<double>();
  double pe = (p * p).sum().item<double>();
  double want = (pbar - pe) / (1 - pe + 1e-5);
  auto a = Eval({"fleiss_kappa"}, {{"ratings", counts}});
  auto b = Eval({"fleiss_kappa"}, {{"ratings", counts}}, 7);
  auto d = Eval({"fleiss_kappa(mode=probs)"}, {{"ratings", scores}}, 9);
  ASSERT_TRUE(a.ok() && b.ok() && d.ok()) << a.status() << b.status() << d.status();
  EXPECT_NEAR((*a)[0], want, 1e-12);
  EXPECT_NEAR((*b)[0], want, 1e-12);
  EXPECT_NEAR((*d)[0], want, 1e-12);
}

}  // namespace
}  // namespace tally
