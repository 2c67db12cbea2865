// Slices (num_groups) and bootstrap replicas (num_bootstraps) over the whole
// registry, checked against the metrics themselves on other rows:
//   * each group's value is the metric on that group's rows alone (and an
//     empty group's is the metric on no rows);
//   * bootstrap replica b (raw=true) is the metric on the rows repeated by
//     their Poisson draws (ops/fused/replica_histogram.h: PoissonDraw of the
//     seed, the row's position and b);
//   * a metric whose states cannot be replicated is refused with
//     Unimplemented naming the argument, never a wrong value;
// and the bootstrap outputs are bit-identical for any batch size (where the
// metric's states are integer counts; float sums round as without replicas).
#include <ATen/ATen.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/tally.h"
#include "gtest/gtest.h"
#include "ops/fused/replica_histogram.h"
#include "tests/testlib/random_inputs.h"

namespace tally {
namespace {

using testing::Close;
using testing::Form;

constexpr int64_t kRows = 24;

// Rows `rows` (i64 [M]) of every per-row input of a batch of kRows rows.
NamedTensors Rows(const NamedTensors& batch, const at::Tensor& rows) {
  NamedTensors out;
  for (const auto& [name, t] : batch) {
    out.emplace_back(name, t.dim() > 0 && t.size(0) == kRows ? t.index_select(0, rows) : t);
  }
  return out;
}

// The metric's one tensor (or the one part of a one-part tuple: the raw
// bootstrap values).
absl::StatusOr<at::Tensor> One(const std::string& spec, const NamedTensors& inputs) {
  auto r = Evaluate({spec}, inputs, EvalOptions{});
  if (!r.ok()) return r.status();
  const ResultTree& t = (*r)[0].result;
  if (t.is_leaf()) return t.tensor;
  if (t.parts.size() == 1 && t.parts[0].is_leaf()) return t.parts[0].tensor;
  return absl::FailedPreconditionError("a tuple result");
}

bool Refused(const absl::Status& s, absl::string_view arg) {
  return absl::IsUnimplemented(s) && absl::StrContains(s.message(), absl::StrCat(arg, " is not supported here"));
}

TEST(ReplicasTest, EachGroupIsTheMetricOnItsRowsAndEachReplicaOnItsDraws) {
  at::Generator gen = at::detail::createCPUGenerator(11);
  int sliced = 0, booted = 0;
  std::set<std::string> refused_groups, refused_boot;
  for (const auto& [form_name, specs] : testing::SpecsByForm()) {
    const Form form{form_name};
    NamedTensors batch = testing::MakeBatch(form, kRows, gen);
    // Groups 0 and 1 only: group 2 has no rows.
    at::Tensor groups = at::randint(0, 2, {kRows}, gen, at::kLong);
    NamedTensors with_groups = batch;
    with_groups.emplace_back("groups", groups);
    for (const std::string& spec : specs) {
      SCOPED_TRACE(absl::StrCat(form_name, ": ", spec));
      // Slices.
      // (The fairness metrics read num_groups themselves.)
      auto got = absl::StrContains(spec, "num_groups") ? absl::StatusOr<at::Tensor>(absl::NotFoundError("own"))
                                                       : One(testing::WithArg(spec, "num_groups=3"), with_groups);
      if (!got.ok() && Refused(got.status(), "num_groups")) {
        refused_groups.insert(spec);
      } else if (!got.ok() && !absl::IsNotFound(got.status()) && !absl::IsFailedPrecondition(got.status())) {
        // Any other error (but a list of per-group results) is the metric's
        // own on this batch, never the slicing's.
        EXPECT_FALSE(One(spec, batch).ok()) << "sliced: " << got.status();
      } else if (got.ok()) {
        for (int64_t g = 0; g < 3; ++g) {
          auto want = One(spec, Rows(batch, (groups == g).nonzero().reshape({-1})));
          if (!want.ok()) continue;  // e.g. a check the whole batch passes but one group fails
          EXPECT_TRUE(Close(got->select(0, g), want->to(got->scalar_type()), 1e-5)) << "group " << g;
          ++sliced;
        }
      }
      // Bootstrap: raw replicas against the rows each replica draws.
      auto raw = One(testing::WithArg(spec, "num_bootstraps=3, seed=5, mean=false, std=false, raw=true"), batch);
      if (!raw.ok() && Refused(raw.status(), "num_bootstraps")) {
        refused_boot.insert(spec);
        continue;
      }
      if (!raw.ok()) continue;  // a tuple result, or an input check
      for (int64_t b = 0; b < 3; ++b) {
        std::vector<int64_t> rows;
        for (int64_t i = 0; i < kRows; ++i) {
          for (int64_t m = ops::fused::PoissonDraw(5, static_cast<uint64_t>(i), b); m > 0; --m) rows.push_back(i);
        }
        auto want = One(spec, Rows(batch, at::tensor(rows, at::kLong)));
        if (!want.ok()) continue;
        EXPECT_TRUE(Close(raw->select(0, b).reshape(want->sizes()), want->to(raw->scalar_type()), 1e-5))
            << "replica " << b;
        ++booted;
      }
    }
  }
  // Most of the registry slices and bootstraps; what cannot is refused.
  EXPECT_GT(sliced, 300);
  EXPECT_GT(booted, 300);
  std::cout << "slices compared: " << sliced << ", refused: " << absl::StrJoin(refused_groups, ", ") << "\n";
  std::cout << "bootstrap replicas compared: " << booted << ", refused: " << absl::StrJoin(refused_boot, ", ") << "\n";
}

// The bootstrap's outputs are bit-identical for any batch size (the draws
// depend on each row's position, not on its batch).
TEST(ReplicasTest, BootstrapIsBitIdenticalAcrossBatchSizes) {
  at::Generator gen = at::detail::createCPUGenerator(3);
  const int64_t n = 333;
  at::Tensor preds = at::rand({n}, gen);
  at::Tensor target = (at::rand({n}, gen) < preds).to(at::kLong);
  const std::vector<std::string> specs = {
      "binary_auroc(thresholds=200, num_bootstraps=50, seed=7, quantile=[0.05, 0.95], raw=true)",
      "binary_f1_score(num_bootstraps=20, seed=1)", "mean_squared_error(num_bootstraps=20)"};
  NamedTensors in = {{"preds", preds}, {"target", target.to(at::kFloat)}};
  NamedTensors cls = {{"preds", preds}, {"target", target}};
  std::vector<std::vector<EvalResult>> runs;
  for (int64_t bs : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{100}}) {
    EvalOptions o;
    o.batch_size = bs;
    auto a = Evaluate({specs[0], specs[1]}, cls, o);
    auto b = Evaluate({specs[2]}, in, o);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    a->push_back((*b)[0]);
    runs.push_back(*a);
  }
  for (size_t r = 1; r < runs.size(); ++r) {
    for (size_t m = 0; m < runs[0].size(); ++m) {
      const auto &x = runs[0][m].result.parts, &y = runs[r][m].result.parts;
      ASSERT_EQ(x.size(), y.size());
      for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_TRUE(x[i].is_leaf());
        // Integer counts (classification, binned curves) are bit-identical;
        // float sums (regression) add in another order, as without replicas.
        if (m < 2) {
          EXPECT_TRUE(at::equal(x[i].tensor, y[i].tensor)) << specs[m] << " part " << i << " run " << r;
        } else {
          EXPECT_TRUE(Close(x[i].tensor, y[i].tensor, 1e-12)) << specs[m] << " part " << i << " run " << r;
        }
      }
    }
  }
  // A given row_id keys the draws: the same rows in reverse order with
  // their ids give the same intervals.
  at::Tensor ids = at::arange(n, at::kLong);
  at::Tensor rev = at::arange(n - 1, -1, -1, at::kLong);
  auto fwd = Evaluate({specs[0]}, {{"preds", preds}, {"target", target}, {"row_id", ids}}, EvalOptions{});
  auto bwd = Evaluate({specs[0]},
                      {{"preds", preds.index_select(0, rev)}, {"target", target.index_select(0, rev)}, {"row_id", rev}},
                      EvalOptions{});
  ASSERT_TRUE(fwd.ok()) << fwd.status();
  ASSERT_TRUE(bwd.ok()) << bwd.status();
  EXPECT_TRUE(at::equal((*fwd)[0].result.parts[0].tensor, (*bwd)[0].result.parts[0].tensor));
  EXPECT_TRUE(at::equal((*fwd)[0].result.parts[0].tensor, runs[0][0].result.parts[0].tensor));
}

// Slices of bootstrap intervals (num_groups with num_bootstraps, weighted or
// not): group g's raw replicas are the bootstrap of g's rows alone keyed by
// the same row ids, so every slice gets the draws it would get by itself.
TEST(ReplicasTest, SlicedBootstrapIsEachGroupsOwnBootstrap) {
  at::Generator gen = at::detail::createCPUGenerator(5);
  const int64_t n = 300, groups_n = 3, b = 30;
  at::Tensor preds = at::rand({n}, gen);
  at::Tensor target = (at::rand({n}, gen) < preds).to(at::kLong);
  at::Tensor groups = at::randint(0, groups_n, {n}, gen, at::kLong);
  at::Tensor weight = at::rand({n}, gen) * 2;
  for (const std::string base :
       {"binary_auroc(thresholds=20, num_bootstraps=30, seed=4, raw=true, mean=false, std=false",
        "mean_absolute_error(num_bootstraps=30, seed=4, raw=true, mean=false, std=false"}) {
    // (The binary stat scores read num_groups themselves: their fairness form.)
    const at::Tensor t = absl::StartsWith(base, "mean") ? target.to(at::kFloat) : target;
    for (bool weighted : {false, true}) {
      NamedTensors all = {{"preds", preds}, {"target", t}, {"groups", groups}};
      if (weighted) all.emplace_back("weight", weight);
      auto sliced = One(base + ", num_groups=3)", all);
      ASSERT_TRUE(sliced.ok()) << base << ": " << sliced.status();
      ASSERT_EQ(sliced->sizes(), (std::vector<int64_t>{groups_n, b}));
      for (int64_t g = 0; g < groups_n; ++g) {
        at::Tensor rows = (groups == g).nonzero().reshape({-1});
        NamedTensors in = {
            {"preds", preds.index_select(0, rows)}, {"target", t.index_select(0, rows)}, {"row_id", rows}};
        if (weighted) in.emplace_back("weight", weight.index_select(0, rows));
        auto alone = One(base + ")", in);
        ASSERT_TRUE(alone.ok()) << alone.status();
        EXPECT_TRUE(Close((*sliced)[g], *alone, 1e-12)) << base << " weighted " << weighted << " group " << g << "\n"
                                                        << (*sliced)[g] << "\nvs\n"
                                                        << *alone;
      }
    }
  }
  // The summary outputs per group: mean [G] and quantiles [G, 2].
  auto r = Evaluate({"binary_auroc(thresholds=20, num_bootstraps=30, quantile=[0.05, 0.95], num_groups=3)"},
                    {{"preds", preds}, {"target", target}, {"groups", groups}}, EvalOptions{});
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& parts = (*r)[0].result.parts;
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].tensor.sizes(), (std::vector<int64_t>{groups_n}));
  EXPECT_EQ(parts[2].tensor.sizes(), (std::vector<int64_t>{groups_n, 2}));
}

// Bad arguments and inputs are clear errors naming the metric.
// Verifies that slices of the moments metrics (custom merges) are each
// group's own two-pass moments: group means 1e6 apart from each other and
// from 0 (a centring on the batch's mean would lose every digit), an empty
// group (the metric on no rows), the overall value, with and without
// weights, in one update and in batches of 7. Each group's value equals the
// metric on that group's rows to 1e-12; a bootstrap of them is refused.
TEST(ReplicasTest, SlicedMomentsAreEachGroupsOwnMoments) {
  at::Generator gen = at::detail::createCPUGenerator(17);
  const int64_t n = 3000;
  at::Tensor groups = at::randint(0, 4, {n}, gen, at::kLong);  // group 4 of 5 has no rows
  at::Tensor target = 1e6 * (groups.to(at::kDouble) + 1.0) + at::randn({n}, gen, at::kDouble);
  at::Tensor preds = target + 0.7 * at::randn({n}, gen, at::kDouble);
  at::Tensor weight = at::rand({n}, gen, at::kDouble) * 2.0;
  const std::vector<std::string> names = {"r2_score", "explained_variance", "pearson_corrcoef", "concordance_corrcoef"};
  for (bool weighted : {false, true}) {
    NamedTensors in = {{"preds", preds}, {"target", target}};
    if (weighted) in.emplace_back("weight", weight);
    NamedTensors sliced = in;
    sliced.emplace_back("groups", groups);
    for (const std::string& name : names) {
      if (weighted && (name == "pearson_corrcoef" || name == "concordance_corrcoef")) continue;  // unweighted
      SCOPED_TRACE(absl::StrCat(name, weighted ? " weighted" : ""));
      for (int64_t batch : {0, 7}) {
        EvalOptions opts;
        opts.batch_size = batch;
        auto got = Evaluate({absl::StrCat(name, "(num_groups=5, overall=true)")}, sliced, opts);
        ASSERT_TRUE(got.ok()) << got.status();
        const ResultTree& tree = (*got)[0].result;
        ASSERT_EQ(tree.parts.size(), 2u);
        at::Tensor per_group = tree.parts[0].tensor.to(at::kDouble);
        for (int64_t g = 0; g < 5; ++g) {
          at::Tensor rows = (groups == g).nonzero().reshape({-1});
          NamedTensors own;
          for (const auto& [k, t] : in) own.emplace_back(k, t.index_select(0, rows));
          auto want = One(name, own);
          ASSERT_TRUE(want.ok()) << want.status();
          EXPECT_TRUE(at::allclose(per_group.select(0, g), want->to(at::kDouble), 1e-12, 1e-12, /*equal_nan=*/true))
              << "group " << g << " batch " << batch << ": " << per_group.select(0, g) << " vs " << *want;
        }
        auto all = One(name, in);
        ASSERT_TRUE(all.ok()) << all.status();
        EXPECT_TRUE(at::allclose(tree.parts[1].tensor.to(at::kDouble), all->to(at::kDouble), 1e-12, 1e-12))
            << "overall, batch " << batch;
      }
    }
  }
}

// The moments metrics bootstrap around the batch's shared centring shift:
// each raw replica is the metric on the rows its draws repeat, to 1e-12 at
// means of 1e6 (nothing cancels), for any batch size (float64 moments merge
// to rounding, not bit for bit); weighted moments keep refusing.
TEST(ReplicasTest, BootstrappedMomentsAreEachReplicasOwnMoments) {
  at::Generator gen = at::detail::createCPUGenerator(19);
  const int64_t n = 300, boots = 4;
  at::Tensor target = 1e6 + 3.0 * at::randn({n, 2}, gen, at::kDouble);
  at::Tensor preds = target + 0.7 * at::randn({n, 2}, gen, at::kDouble);
  NamedTensors in = {{"preds", preds}, {"target", target}};
  const std::string args = absl::StrCat("num_bootstraps=", boots, ", seed=3, mean=false, std=false, raw=true");
  for (const char* name : {"r2_score(multioutput=raw_values", "explained_variance(multioutput=raw_values",
                           "pearson_corrcoef(num_outputs=2", "concordance_corrcoef(num_outputs=2",
                           "relative_squared_error(num_outputs=2"}) {
    SCOPED_TRACE(name);
    const std::string base = absl::StrCat(name, ")");
    const std::string spec = absl::StrCat(name, ", ", args, ")");
    at::Tensor first;
    for (int64_t batch : {0, 7, 64}) {
      EvalOptions opts;
      opts.batch_size = batch;
      auto got = Evaluate({spec}, in, opts);
      ASSERT_TRUE(got.ok()) << got.status();
      at::Tensor raw = (*got)[0].result.parts[0].tensor.to(at::kDouble);
      ASSERT_EQ(raw.size(0), boots);
      if (!first.defined()) first = raw;
      EXPECT_TRUE(at::allclose(raw, first, 1e-12, 1e-15)) << "batch " << batch;
    }
    for (int64_t b = 0; b < boots; ++b) {
      std::vector<int64_t> rows;
      for (int64_t i = 0; i < n; ++i) {
        for (int64_t m = ops::fused::PoissonDraw(3, static_cast<uint64_t>(i), b); m > 0; --m) rows.push_back(i);
      }
      at::Tensor idx = at::tensor(rows, at::kLong);
      auto want = One(base, {{"preds", preds.index_select(0, idx)}, {"target", target.index_select(0, idx)}});
      ASSERT_TRUE(want.ok()) << want.status();
      EXPECT_TRUE(at::allclose(first.select(0, b), want->to(at::kDouble), 1e-12, 1e-15))
          << "replica " << b << ": " << first.select(0, b) << " vs " << *want;
    }
  }
  auto weighted = Evaluate(
      {"r2_score(num_bootstraps=5)"},
      {{"preds", preds.select(1, 0)}, {"target", target.select(1, 0)}, {"weight", preds.select(1, 0)}}, EvalOptions{});
  ASSERT_FALSE(weighted.ok());
  EXPECT_TRUE(Refused(weighted.status(), "num_bootstraps")) << weighted.status();
}

TEST(ReplicasTest, Errors) {
  NamedTensors in = {{"preds", at::rand({8})}, {"target", at::randint(0, 2, {8}, at::kLong)}};
  auto no_groups = Evaluate({"binary_auroc(num_groups=2)"}, in, EvalOptions{});
  ASSERT_FALSE(no_groups.ok());
  EXPECT_TRUE(absl::StrContains(no_groups.status().message(), "binary_auroc: num_groups needs the input 'groups'"))
      << no_groups.status();
  auto exact = Evaluate({"binary_auroc(num_bootstraps=5)"}, in, EvalOptions{});
  ASSERT_FALSE(exact.ok());
  EXPECT_TRUE(absl::StrContains(exact.status().message(), "keeps every row")) << exact.status();
  for (const char* bad : {"binary_auroc(thresholds=5, num_bootstraps=0)", "binary_auroc(thresholds=5, num_groups=-1)",
                          "binary_auroc(thresholds=5, num_bootstraps=5, quantile=1.5)",
                          "binary_auroc(thresholds=5, num_bootstraps=5, mean=false, std=false)",
                          "binary_auroc(thresholds=5, num_bootstraps=5, sampling_strategy=multinomial)",
                          "binary_auroc(thresholds=5, seed=3)"}) {
    auto r = Evaluate({bad}, in, EvalOptions{});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << bad << ": " << r.status();
    EXPECT_TRUE(absl::StrContains(r.status().message(), "binary_auroc")) << r.status();
  }
  // Group ids outside [0, G) are a deferred error naming the input; the
  // rows inside count.
  NamedTensors g = in;
  g.emplace_back("groups", at::tensor({0, 1, 2, 0, 1, 0, 1, 0}, at::kLong));
  auto out = Evaluate({"binary_auroc(thresholds=5, num_groups=2)"}, g, EvalOptions{});
  ASSERT_FALSE(out.ok());
  EXPECT_TRUE(absl::StrContains(out.status().message(), "groups: 1 group ids outside [0, 2)")) << out.status();
}

}  // namespace
}  // namespace tally
