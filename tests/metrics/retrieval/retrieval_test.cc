// Tests of the retrieval metrics (metrics/retrieval/retrieval.cc): hand-computed values
// with ties, a query without positives under each empty_target_action, top_k
// larger than a query, ignore_index, shuffled rows, one query split across
// many updates, recall@1 against reciprocal rank, and bad inputs.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tally {
namespace {

using ::testing::HasSubstr;

struct Rows {
  std::vector<int64_t> indexes;
  std::vector<float> preds;
  std::vector<int64_t> target;
};

NamedTensors Inputs(const Rows& r) {
  auto n = static_cast<int64_t>(r.indexes.size());
  return {{"preds", at::tensor(r.preds, at::kFloat).reshape({n})},
          {"target", at::tensor(r.target, at::kLong).reshape({n})},
          {"indexes", at::tensor(r.indexes, at::kLong).reshape({n})}};
}

absl::StatusOr<double> Eval(const std::string& spec, const Rows& r, int64_t batch_size = 0) {
  tally::EvalOptions o;
  o.batch_size = batch_size;
  auto res = tally::Evaluate({spec}, Inputs(r), o);
  if (!res.ok()) return res.status();
  return (*res)[0].value.item<double>();
}

// Four queries, interleaved: 0 has a tie (0.5, 0.5) that keeps row order,
// 2 has no positives (and three negatives), 7 has one relevant document
// only (no negatives; top_k=2 exceeds it).
Rows Sample() {
  Rows r;
  auto add = [&](int64_t q, float p, int64_t t) {
    r.indexes.push_back(q);
    r.preds.push_back(p);
    r.target.push_back(t);
  };
  add(0, 0.9f, 0);
  add(1, 0.2f, 1);
  add(0, 0.5f, 1);
  add(2, 0.3f, 0);
  add(7, 0.4f, 1);
  add(0, 0.5f, 0);
  add(2, 0.7f, 0);
  add(1, 0.8f, 0);
  add(0, 0.1f, 1);
  add(2, 0.6f, 0);
  return r;
}

struct Case {
  std::string spec;
  double expected;
};

// Verifies the hand-computed values of every metric and action, for one
// update and for batches of 1..7 rows (queries split across updates).
TEST(RetrievalTest, HandComputedValues) {
  const std::vector<Case> cases = {
      {"retrieval_recall(top_k=2)", 2.5 / 4},
      {"retrieval_recall(top_k=2, empty_target_action=pos)", 3.5 / 4},
      {"retrieval_recall(top_k=2, empty_target_action=skip)", 2.5 / 3},
      {"retrieval_recall", 1.0 * 3 / 4},
      {"retrieval_precision(top_k=2)", 1.5 / 4},
      {"retrieval_precision(top_k=2, adaptive_k=true)", 2.0 / 4},
      {"retrieval_precision", (0.5 + 0.5 + 0 + 1) / 4},
      {"retrieval_reciprocal_rank", 2.0 / 4},
      {"retrieval_reciprocal_rank(top_k=1)", 1.0 / 4},
      {"retrieval_hit_rate(top_k=1)", 1.0 / 4},
      {"retrieval_hit_rate(top_k=2, empty_target_action=skip)", 1.0},
      {"retrieval_average_precision", 2.0 / 4},
      {"retrieval_average_precision(top_k=2)", 2.0 / 4},
      {"retrieval_r_precision", 1.5 / 4},
      {"retrieval_fall_out(top_k=2)", (0.5 + 1 + 2.0 / 3 + 1) / 4},
      {"retrieval_fall_out(top_k=2, empty_target_action=skip)", (0.5 + 1 + 2.0 / 3) / 3},
      {"retrieval_fall_out(top_k=2, empty_target_action=neg)", (0.5 + 1 + 2.0 / 3) / 4},
      // Query 0 ranks 0.9 (neg), 0.5 (pos), 0.5 (neg), 0.1 (pos): the tied
      // pair scores half, so AUROC = 0.5 / (2 x 2); its top 3 give 0.5 / 2.
      // Queries 1 (neg above pos) and 7 (no negative) give 0; 2 is empty.
      {"retrieval_auroc", 0.125 / 4},
      {"retrieval_auroc(empty_target_action=pos)", 1.125 / 4},
      {"retrieval_auroc(empty_target_action=skip)", 0.125 / 3},
      {"retrieval_auroc(top_k=3)", 0.25 / 4},
      // recall@2 per query (0, 1, 2, 7): 0.5, 1, 0 (empty), 1. The median is
      // torch.median's lower middle.
      {"retrieval_recall(top_k=2, aggregation=median)", 0.5},
      {"retrieval_recall(top_k=2, aggregation=min)", 0.0},
      {"retrieval_recall(top_k=2, aggregation=max)", 1.0},
      {"retrieval_recall(top_k=2, aggregation=mean)", 2.5 / 4},
      {"retrieval_recall(top_k=2, aggregation=median, empty_target_action=skip)", 1.0},
      {"retrieval_recall(top_k=2, aggregation=min, empty_target_action=skip)", 0.5},
      {"retrieval_auroc(aggregation=max)", 0.125},
  };
  for (const Case& c : cases) {
    for (int64_t bs : {0, 1, 2, 3, 4, 5, 6, 7}) {
      SCOPED_TRACE(absl::StrCat(c.spec, " batch_size=", bs));
      auto v = Eval(c.spec, Sample(), bs);
      ASSERT_TRUE(v.ok()) << v.status();
      EXPECT_NEAR(*v, c.expected, 1e-12);
    }
  }
}

// Verifies that rows with target == ignore_index leave the query (and a
// query with only ignored rows disappears).
TEST(RetrievalTest, IgnoreIndex) {
  Rows r = Sample();
  r.target[3] = r.target[6] = r.target[9] = -100;  // all of query 2
  r.target[0] = -100;                              // query 0's top row
  auto v = Eval("retrieval_reciprocal_rank(ignore_index=-100)", r);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_NEAR(*v, (1.0 + 0.5 + 1.0) / 3, 1e-12);
}

// Verifies that the result does not depend on the order of rows (no ties).
TEST(RetrievalTest, ShuffledRows) {
  at::manual_seed(3);
  const int64_t n = 300;
  at::Tensor idx = at::randint(0, 40, {n}, at::kLong);
  at::Tensor preds = at::randperm(n, at::kFloat) / n;
  at::Tensor target = at::randint(0, 2, {n}, at::kLong);
  at::Tensor perm = at::randperm(n, at::kLong);
  for (const char* spec : {"retrieval_recall(top_k=3)", "retrieval_precision(top_k=4)", "retrieval_reciprocal_rank",
                           "retrieval_hit_rate(top_k=2)", "retrieval_average_precision", "retrieval_r_precision",
                           "retrieval_fall_out(top_k=5)", "retrieval_auroc", "retrieval_auroc(top_k=6)"}) {
    SCOPED_TRACE(spec);
    tally::EvalOptions o;
    auto a = tally::Evaluate({spec}, {{"preds", preds}, {"target", target}, {"indexes", idx}}, o);
    o.batch_size = 17;
    auto b = tally::Evaluate({spec},
                             {{"preds", preds.index_select(0, perm)},
                              {"target", target.index_select(0, perm)},
                              {"indexes", idx.index_select(0, perm)}},
                             o);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_NEAR((*a)[0].value.item<double>(), (*b)[0].value.item<double>(), 1e-12);
  }
}

// Verifies the RetrievalRecall@1 / MRR relation TorchMetrics users check:
// with one relevant document per query, recall@1 == hit_rate@1 ==
// precision@1 == the share of queries whose top document is relevant, and
// MRR >= recall@1, for any batching.
TEST(RetrievalTest, RecallAtOneAndReciprocalRank) {
  Rows r;
  for (int64_t q = 0; q < 6; ++q) {
    for (int64_t d = 0; d < 4; ++d) {
      r.indexes.push_back(q);
      r.preds.push_back(static_cast<float>(d) / 4);
      r.target.push_back(d == q % 4 ? 1 : 0);  // top document (d=3) relevant for q=3
    }
  }
  for (int64_t bs : {0, 5}) {
    auto recall = Eval("retrieval_recall(top_k=1)", r, bs);
    auto hit = Eval("retrieval_hit_rate(top_k=1)", r, bs);
    auto prec = Eval("retrieval_precision(top_k=1)", r, bs);
    auto mrr = Eval("retrieval_reciprocal_rank", r, bs);
    ASSERT_TRUE(recall.ok() && hit.ok() && prec.ok() && mrr.ok());
    EXPECT_NEAR(*recall, 1.0 / 6, 1e-12);
    EXPECT_NEAR(*hit, *recall, 1e-12);
    EXPECT_NEAR(*prec, *recall, 1e-12);
    // ranks of the relevant document: q%4 = 0,1,2,3,0,1 -> 4,3,2,1,4,3
    EXPECT_NEAR(*mrr, (0.25 + 1.0 / 3 + 0.5 + 1 + 0.25 + 1.0 / 3) / 6, 1e-12);
  }
}

// Verifies normalized_dcg against sklearn.metrics.ndcg_score (graded
// relevance; tied preds share their mean gain), per query and as the mean.
TEST(RetrievalTest, NormalizedDcgMatchesSklearn) {
  Rows doc{{0, 0, 0, 0, 0}, {0.1f, 0.2f, 0.3f, 4.0f, 70.0f}, {10, 0, 0, 1, 5}};  // TorchMetrics' example
  Rows ties{{4, 4, 4, 4}, {0.5f, 0.5f, 0.2f, 0.5f}, {3, 0, 2, 1}};
  Rows both = doc;
  for (size_t i = 0; i < ties.indexes.size(); ++i) {
    both.indexes.push_back(ties.indexes[i]);
    both.preds.push_back(ties.preds[i]);
    both.target.push_back(ties.target[i]);
  }
  auto v = Eval("retrieval_normalized_dcg", doc);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_NEAR(*v, 0.6956940443813074, 1e-6);
  v = Eval("retrieval_normalized_dcg", ties);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_NEAR(*v, 0.7775518748550664, 1e-9);
  v = Eval("retrieval_normalized_dcg(top_k=2)", ties);
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_NEAR(*v, 0.5102404246590811, 1e-9);
  for (int64_t bs : {0, 1, 3, 7}) {
    v = Eval("retrieval_normalized_dcg", both, bs);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_NEAR(*v, (0.6956940443813074 + 0.7775518748550664) / 2, 1e-6);
  }
  Rows negative = ties;
  negative.target[1] = -2;
  EXPECT_THAT(Eval("retrieval_normalized_dcg", negative).status().message(),
              HasSubstr("retrieval_normalized_dcg: target: 1 negative relevance values"));
}

// Verifies that float 0/1 targets are accepted (TorchMetrics takes them).
TEST(RetrievalTest, FloatTargets) {
  Rows r = Sample();
  tally::EvalOptions o;
  NamedTensors in = Inputs(r);
  in[1].second = in[1].second.to(at::kFloat);
  auto res = tally::Evaluate({"retrieval_recall(top_k=2)"}, in, o);
  ASSERT_TRUE(res.ok()) << res.status();
  EXPECT_NEAR((*res)[0].value.item<double>(), 2.5 / 4, 1e-12);
}

// Verifies that no rows give 0 (TorchMetrics returns 0.0 without queries).
TEST(RetrievalTest, NoRows) {
  for (const char* spec : {"retrieval_recall", "retrieval_recall(aggregation=median)",
                           "retrieval_recall(aggregation=min)", "retrieval_recall(aggregation=max)"}) {
    auto v = Eval(spec, Rows{});
    ASSERT_TRUE(v.ok()) << spec << ": " << v.status();
    EXPECT_EQ(*v, 0.0) << spec;
  }
}

// Verifies the errors: bad target values (deferred), integer preds,
// missing indexes, unsupported arguments.
TEST(RetrievalTest, BadInputs) {
  Rows r = Sample();
  r.target[1] = 2;
  EXPECT_THAT(Eval("retrieval_recall", r).status().message(),
              HasSubstr("retrieval_recall: target: 1 values outside {0, 1}"));
  tally::EvalOptions o;
  auto f = tally::Evaluate({"retrieval_recall"},
                           {{"preds", at::zeros({3}, at::kLong)},
                            {"target", at::zeros({3}, at::kLong)},
                            {"indexes", at::zeros({3}, at::kLong)}},
                           o);
  EXPECT_THAT(f.status().message(), HasSubstr("retrieval_recall: preds"));
  auto missing =
      tally::Evaluate({"retrieval_recall"}, {{"preds", at::rand({3})}, {"target", at::zeros({3}, at::kLong)}}, o);
  EXPECT_FALSE(missing.ok());
  EXPECT_FALSE(Eval("retrieval_r_precision(top_k=2)", Sample()).ok());
  EXPECT_FALSE(Eval("retrieval_recall(top_k=0)", Sample()).ok());
  EXPECT_THAT(Eval("retrieval_auroc(max_fpr=0.5)", Sample()).status().message(),
              HasSubstr("retrieval_auroc: max_fpr is not supported"));
  EXPECT_THAT(Eval("retrieval_recall(aggregation=mode)", Sample()).status().message(), HasSubstr("retrieval_recall: "));
}

// Verifies empty_target_action=error: Compute fails naming the metric and the
// number of queries without positives (without negatives for fall_out), on
// both backends, and succeeds when every query has one.
TEST(RetrievalTest, EmptyTargetActionError) {
  for (exec::Backend backend : {exec::Backend::kEager, exec::Backend::kTorchScript}) {
    tally::EvalOptions o;
    o.backend = backend;
    auto failed = tally::Evaluate({"retrieval_recall(empty_target_action=error)"}, Inputs(Sample()), o);
    ASSERT_FALSE(failed.ok());
    EXPECT_THAT(failed.status().message(),
                HasSubstr("retrieval_recall: 1 queries without a positive target (empty_target_action=error)"));
    auto fall_out = tally::Evaluate({"retrieval_fall_out(empty_target_action=error)"}, Inputs(Sample()), o);
    ASSERT_FALSE(fall_out.ok());
    EXPECT_THAT(fall_out.status().message(), HasSubstr("1 queries without a negative target"));
  }
  // Without query 2 (no positives) and 7 (no negatives), every action agrees.
  Rows r;
  Rows all = Sample();
  for (size_t i = 0; i < all.indexes.size(); ++i) {
    if (all.indexes[i] == 2 || all.indexes[i] == 7) continue;
    r.indexes.push_back(all.indexes[i]);
    r.preds.push_back(all.preds[i]);
    r.target.push_back(all.target[i]);
  }
  for (const char* m : {"retrieval_recall", "retrieval_fall_out", "retrieval_normalized_dcg"}) {
    auto error = Eval(absl::StrCat(m, "(empty_target_action=error)"), r, 3);
    auto skip = Eval(absl::StrCat(m, "(empty_target_action=skip)"), r, 3);
    ASSERT_TRUE(error.ok()) << error.status();
    ASSERT_TRUE(skip.ok()) << skip.status();
    EXPECT_DOUBLE_EQ(*error, *skip) << m;
  }
}

}  // namespace
}  // namespace tally
