// Tests of the forms that make large problems linear, against the forms
// they replace on the same data: exact16 counts against the cat-state exact
// curves on 16-bit scores (binary, multiclass, multilabel; ties; merged
// halves), with a state that does not grow with the rows and an update that
// runs on `meta`; and the sorted multilabel ranking metrics of (N, L) inputs
// against the pairwise form that (N, L, 1) inputs take, with ties and
// ignore_index, then at L = 12,000.
#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "engine/runtime/compiler.h"
#include "gtest/gtest.h"
#include "ops/op_registry.h"

namespace tally {
namespace {

// Flatten appends every leaf of a (tuple) result, depth first; NaN as -7
// (so that vectors compare with ==).
void Flatten(const ResultTree& t, std::vector<double>& out) {
  if (!t.is_leaf()) {
    for (const ResultTree& p : t.parts) Flatten(p, out);
    return;
  }
  at::Tensor v = t.tensor.to(at::kDouble).reshape(-1);
  for (int64_t i = 0; i < v.numel(); ++i) {
    double x = v[i].item<double>();
    out.push_back(std::isnan(x) ? -7.0 : x);
  }
}

std::vector<double> Values(const std::vector<std::string>& specs, const NamedTensors& in, int64_t batch = 0) {
  tally::EvalOptions o;
  o.batch_size = batch;
  auto r = tally::Evaluate(specs, in, o);
  EXPECT_TRUE(r.ok()) << r.status();
  std::vector<double> out;
  if (!r.ok()) return out;
  for (const auto& e : *r) Flatten(e.result, out);
  return out;
}

int64_t StateBytes(const std::vector<std::string>& specs, const NamedTensors& in) {
  auto sig = tally::SignatureOf(in);
  auto entries = tally::BuildEntries(specs, *sig, ir::Device{});
  EXPECT_TRUE(entries.ok()) << entries.status();
  auto c = CompileModule(*entries, CompileOptions{});
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? c->module->FixedStateBytes() : -1;
}

TEST(Exact16, EqualsTheCatStateFormOnSixteenBitScores) {
  // Verifies that float16 preds (exact16 by default) give the values the
  // exact cat-state form gives on the same values as float32, for every task,
  // in one update and in batches of 7 (merged halves of the counts).
  at::Generator gen = at::detail::createCPUGenerator(16);
  const int64_t n = 301, c = 4;
  at::Tensor bt = (at::rand({n}, gen, at::kFloat) < 0.4).to(at::kLong);
  at::Tensor bp =
      ((at::rand({n}, gen, at::kFloat) * 20).round() / 20 + bt.to(at::kFloat) * 0.1).clamp(0, 1).to(at::kHalf);
  at::Tensor mt = at::randint(0, c, {n}, gen, at::kLong);
  at::Tensor mp = at::rand({n, c}, gen, at::kFloat).to(at::kHalf);
  at::Tensor lt = (at::rand({n, c}, gen, at::kFloat) < 0.3).to(at::kLong);
  at::Tensor lp = at::rand({n, c}, gen, at::kFloat).to(at::kHalf);
  struct Case {
    std::vector<std::string> specs;
    at::Tensor p, t;
  };
  const std::string k = absl::StrCat("num_classes=", c), l = absl::StrCat("num_labels=", c);
  std::vector<Case> cases = {{{"binary_auroc", "binary_average_precision"}, bp, bt},
                             {{absl::StrCat("multiclass_auroc(", k, ", average=none)"),
                               absl::StrCat("multiclass_average_precision(", k, ", average=weighted)")},
                              mp,
                              mt},
                             {{absl::StrCat("multilabel_auroc(", l, ", average=micro)"),
                               absl::StrCat("multilabel_average_precision(", l, ", average=none)")},
                              lp,
                              lt}};
  for (const Case& cs : cases) {
    NamedTensors half = {{"preds", cs.p}, {"target", cs.t}};
    NamedTensors widened = {{"preds", cs.p.to(at::kFloat)}, {"target", cs.t}};
    std::vector<double> cat = Values(cs.specs, widened);
    for (int64_t batch : {int64_t{0}, int64_t{7}}) {
      std::vector<double> counted = Values(cs.specs, half, batch);
      ASSERT_EQ(counted.size(), cat.size());
      for (size_t i = 0; i < cat.size(); ++i) {
        // The cat form's float32 output against exact16's float64.
        EXPECT_NEAR(counted[i], cat[i], 1e-6) << cs.specs[0] << " value " << i << " batch " << batch;
      }
    }
    // The explicit name on float32 preds holding the same values agrees too.
    std::vector<std::string> named;
    for (const std::string& s : cs.specs) {
      named.push_back(s.find('(') == std::string::npos ? s + "(thresholds=exact16)"
                                                       : s.substr(0, s.size() - 1) + ", thresholds=exact16)");
    }
    EXPECT_EQ(Values(named, widened), Values(cs.specs, half)) << cs.specs[0];
  }
}

TEST(Exact16, CurvesEqualTheCatStateCurves) {
  // Verifies that binary/multiclass/multilabel ROC and PR curves from the
  // per-code counts (a point per code present, its score decoded) are the
  // cat-state curves of the same values exactly: points, thresholds, ties.
  at::Generator gen = at::detail::createCPUGenerator(17);
  const int64_t n = 203;
  at::Tensor bt = (at::rand({n}, gen, at::kFloat) < 0.4).to(at::kLong);
  at::Tensor bp = ((at::rand({n}, gen, at::kFloat) * 30).round() / 30).to(at::kHalf);
  at::Tensor mt = at::randint(0, 3, {n}, gen, at::kLong);
  at::Tensor mp = at::rand({n, 3}, gen, at::kFloat).to(at::kBFloat16);
  at::Tensor lt = (at::rand({n, 3}, gen, at::kFloat) < 0.3).to(at::kLong);
  at::Tensor lp = at::rand({n, 3}, gen, at::kFloat).to(at::kHalf);
  struct Case {
    std::string spec;
    at::Tensor p, t;
  };
  for (const Case& cs : std::vector<Case>{{"binary_roc", bp, bt},
                                          {"binary_precision_recall_curve", bp, bt},
                                          {"multiclass_roc(num_classes=3)", mp, mt},
                                          {"multiclass_precision_recall_curve(num_classes=3, average=macro)", mp, mt},
                                          {"multilabel_roc(num_labels=3)", lp, lt},
                                          {"multilabel_precision_recall_curve(num_labels=3)", lp, lt}}) {
    std::vector<double> counted = Values({cs.spec}, {{"preds", cs.p}, {"target", cs.t}}, 7);
    std::vector<double> cat = Values({cs.spec}, {{"preds", cs.p.to(at::kFloat)}, {"target", cs.t}});
    EXPECT_EQ(counted, cat) << cs.spec;
    EXPECT_GT(counted.size(), 10u) << cs.spec;
  }
}

TEST(Exact16, StateIsConstantInTheRowsAndUpdateRunsOnMeta) {
  // Verifies 2 x 65,536 int64 counts per class whatever the rows (and the
  // two deferred-check counters: targets outside {0, 1}, NaN scores), and
  // an update plan that runs on meta tensors (no host read).
  for (int64_t n : {int64_t{10}, int64_t{100000}}) {
    NamedTensors in = {{"preds", at::rand({n}).to(at::kHalf)}, {"target", at::zeros({n}, at::kLong)}};
    EXPECT_EQ(StateBytes({"binary_auroc"}, in), 2 * 65536 * 8 + 2 * 8);
  }
  NamedTensors sig = {{"preds", at::rand({3}).to(at::kHalf)}, {"target", at::zeros({3}, at::kLong)}};
  auto s = tally::SignatureOf(sig);
  auto entries = tally::BuildEntries({"binary_auroc", "binary_average_precision"}, *s, ir::Device{"meta"});
  ASSERT_TRUE(entries.ok()) << entries.status();
  CompileOptions co;
  co.device = ir::Device{"meta"};
  auto prog = Compile(*entries, co);
  ASSERT_TRUE(prog.ok()) << prog.status();
  auto meta = at::TensorOptions().device(at::kMeta);
  NamedTensors in = {{"preds", at::empty({5}, meta.dtype(at::kHalf))},
                     {"target", at::empty({5}, meta.dtype(at::kLong))}};
  EXPECT_TRUE((*prog)->Update(in).ok());
}

TEST(Exact16, PlansForADeviceWithoutKernelsHoldNoCompositeOp) {
  // Verifies that for cuda:1 (no fused kernels) the exact16 update and
  // finalize decompose all the way to primitive ATen ops: no tally::
  // operator is left for a device that lacks it.
  NamedTensors bin = {{"preds", at::rand({4}).to(at::kHalf)}, {"target", at::zeros({4}, at::kLong)}};
  NamedTensors ml = {{"preds", at::rand({4, 3}).to(at::kBFloat16)}, {"target", at::zeros({4, 3}, at::kLong)}};
  struct Case {
    std::vector<std::string> specs;
    NamedTensors in;
  };
  for (const Case& cs :
       std::vector<Case>{{{"binary_auroc", "binary_roc", "binary_average_precision"}, bin},
                         {{"multilabel_auroc(num_labels=3)", "multilabel_precision_recall_curve(num_labels=3)"}, ml}}) {
    auto sig = tally::SignatureOf(cs.in);
    auto entries = tally::BuildEntries(cs.specs, *sig, ir::Device{"cuda:1"});
    ASSERT_TRUE(entries.ok()) << entries.status();
    CompileOptions co;
    co.device = ir::Device{"cuda:1"};
    auto c = CompileModule(*entries, co);
    ASSERT_TRUE(c.ok()) << c.status();
    for (const ir::Graph* g : {c->module->update.get(), c->module->finalize.get()}) {
      for (const auto& n : g->nodes()) EXPECT_FALSE(ops::IsComposite(*n)) << cs.specs[0] << ": " << n->op();
    }
  }
}

TEST(Exact16, NamesAndArgumentsAreChecked) {
  // Verifies that the operating points refuse exact16 with one clear error,
  // as does max_fpr with an explicit exact16.
  NamedTensors in = {{"preds", at::rand({4})}, {"target", at::zeros({4}, at::kLong)}};
  tally::EvalOptions o;
  for (const char* spec : {"binary_specificity_at_sensitivity(min_sensitivity=0.5, thresholds=exact16)",
                           "binary_auroc(thresholds=exact16, max_fpr=0.5)",
                           "binary_recall_at_fixed_precision(min_precision=0.5, thresholds=exact_bf16)"}) {
    auto r = tally::Evaluate({spec}, in, o);
    EXPECT_FALSE(r.ok()) << spec;
    EXPECT_NE(std::string(r.status().message()).find("exact"), std::string::npos) << r.status();
  }
}

TEST(SortedRanking, EqualsThePairwiseFormAndRunsAtTwelveThousandLabels) {
  // Verifies that (N, L) inputs (one sort per row) give what (N, L, 1)
  // inputs (L x L comparisons) give, with ties and ignored labels.
  at::Generator gen = at::detail::createCPUGenerator(5);
  for (int64_t l : {int64_t{2}, int64_t{5}, int64_t{40}}) {
    at::Tensor p = (at::rand({23, l}, gen, at::kFloat) * 4).round() / 4;  // ties
    at::Tensor t = (at::rand({23, l}, gen, at::kFloat) < 0.3).to(at::kLong);
    t[0].fill_(0);
    t[1].fill_(1);
    t[2][0] = -1;
    for (const std::string& extra : {std::string(""), std::string(", ignore_index=-1")}) {
      std::vector<std::string> specs;
      for (const char* m :
           {"multilabel_ranking_loss", "multilabel_ranking_average_precision", "multilabel_coverage_error"}) {
        specs.push_back(absl::StrCat(m, "(num_labels=", l, extra, ")"));
      }
      NamedTensors in = {{"preds", p}, {"target", extra.empty() ? t.clamp(0, 1) : t}};
      NamedTensors in3 = {{"preds", p.unsqueeze(2)}, {"target", in[1].second.unsqueeze(2)}};
      std::vector<double> sorted = Values(specs, in, 5), pairwise = Values(specs, in3, 5);
      ASSERT_EQ(sorted.size(), pairwise.size());
      for (size_t i = 0; i < sorted.size(); ++i) {
        EXPECT_NEAR(sorted[i], pairwise[i], 1e-6) << specs[i] << " L=" << l;
      }
    }
  }
  const int64_t big = 12000;
  NamedTensors in = {{"preds", at::rand({6, big}, gen, at::kFloat)},
                     {"target", (at::rand({6, big}, gen, at::kFloat) < 0.01).to(at::kLong)}};
  std::vector<double> v = Values({absl::StrCat("multilabel_ranking_loss(num_labels=", big, ")"),
                                  absl::StrCat("multilabel_ranking_average_precision(num_labels=", big, ")")},
                                 in);
  ASSERT_EQ(v.size(), 2u);
  EXPECT_GT(v[0], 0.3);  // random scores: about half the pairs are misordered
  EXPECT_LT(v[0], 0.7);
  EXPECT_GT(v[1], 0.0);
  EXPECT_LT(v[1], 0.1);
}

TEST(Retrieval, IndexesAnywhereInInt64EqualTheirDenseRelabeling) {
  // Verifies that query ids spread over the whole int64 range (no buffer
  // sized by the largest id) score exactly as the same queries numbered
  // 0..4, in one update and in batches of 7.
  at::Generator gen = at::detail::createCPUGenerator(9);
  const std::vector<int64_t> ids = {INT64_MIN + 1, -5, 7, int64_t{1} << 40, INT64_MAX};
  at::Tensor dense = at::randint(0, 5, {200}, gen, at::kLong);
  at::Tensor sparse = at::tensor(ids, at::kLong).index_select(0, dense);
  at::Tensor p = at::rand({200}, gen, at::kFloat);
  at::Tensor t = (at::rand({200}, gen, at::kFloat) < 0.4).to(at::kLong);
  std::vector<std::string> specs = {"retrieval_average_precision", "retrieval_recall(top_k=3)",
                                    "retrieval_normalized_dcg", "retrieval_reciprocal_rank"};
  for (int64_t batch : {int64_t{0}, int64_t{7}}) {
    EXPECT_EQ(Values(specs, {{"preds", p}, {"target", t}, {"indexes", sparse}}, batch),
              Values(specs, {{"preds", p}, {"target", t}, {"indexes", dense}}, batch));
  }
}

}  // namespace
}  // namespace tally
