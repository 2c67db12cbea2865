// Tests of the tuple-output curves (metrics/curves/roc_and_pr_curves.cc): binary_,
// multiclass_ and multilabel_ roc and precision_recall_curve give
// TorchMetrics 1.5's docstring results, exact and binned; the exact finalize
// is the only place that reads the host (masked_select, marked by inspect),
// the binned one reads nothing; the TorchScript backend gives the same
// tuples; empty states, argument errors and bad targets.
#include <ATen/ATen.h>

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "engine/runtime/compiler.h"
#include "engine/runtime/results.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "nlohmann/json.hpp"
#include "ops/op_registry.h"

namespace tally {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

NamedTensors Inputs(const at::Tensor& p, const at::Tensor& t) { return {{"preds", p}, {"target", t}}; }

absl::StatusOr<ResultTree> Eval(const std::string& spec, const NamedTensors& in, int64_t batch = 0,
                                exec::Backend backend = exec::Backend::kEager) {
  tally::EvalOptions o;
  o.batch_size = batch;
  o.backend = backend;
  auto r = tally::Evaluate({spec}, in, o);
  if (!r.ok()) return r.status();
  return (*r)[0].result;
}

// Matches compares a result with a JSON value (numbers, null for NaN,
// nested lists of any lengths) within 1e-6.
::testing::AssertionResult Matches(const ResultTree& got, const json& want) {
  if (!got.is_leaf()) {
    if (!want.is_array() || want.size() != got.parts.size()) {
      return ::testing::AssertionFailure() << got.parts.size() << " parts, expected " << want.dump();
    }
    for (size_t i = 0; i < got.parts.size(); ++i) {
      auto r = Matches(got.parts[i], want[i]);
      if (!r) return ::testing::AssertionFailure() << "part " << i << ": " << r.message();
    }
    return ::testing::AssertionSuccess();
  }
  json have = json::parse(tally::ValueToJson(got.tensor));
  std::function<bool(const json&, const json&)> same = [&](const json& a, const json& b) {
    if (a.is_array() != b.is_array()) return false;
    if (a.is_array()) {
      if (a.size() != b.size()) return false;
      for (size_t i = 0; i < a.size(); ++i)
        if (!same(a[i], b[i])) return false;
      return true;
    }
    if (a.is_null() || b.is_null()) return a.is_null() && b.is_null();
    return std::abs(a.get<double>() - b.get<double>()) <= 1e-6;
  };
  if (!same(have, want)) return ::testing::AssertionFailure() << "got " << have.dump() << ", expected " << want.dump();
  return ::testing::AssertionSuccess();
}

at::Tensor BinaryPreds() { return at::tensor({0.0f, 0.5f, 0.7f, 0.8f}); }
at::Tensor BinaryTarget() { return at::tensor({0, 1, 1, 0}, at::kLong); }
at::Tensor MulticlassPreds() {
  return at::tensor({0.75f, 0.05f, 0.05f, 0.05f, 0.05f, 0.05f, 0.75f, 0.05f, 0.05f, 0.05f,
                     0.05f, 0.05f, 0.75f, 0.05f, 0.05f, 0.05f, 0.05f, 0.05f, 0.75f, 0.05f})
      .reshape({4, 5});
}
at::Tensor MulticlassTarget() { return at::tensor({0, 1, 3, 2}, at::kLong); }
at::Tensor MultilabelPreds() {
  return at::tensor({0.75f, 0.05f, 0.35f, 0.45f, 0.75f, 0.05f, 0.05f, 0.55f, 0.75f, 0.05f, 0.65f, 0.05f})
      .reshape({4, 3});
}
at::Tensor MultilabelTarget() { return at::tensor({1, 0, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1}, at::kLong).reshape({4, 3}); }

struct Example {
  std::string spec;
  NamedTensors inputs;
  const char* expected;
  // Logits are detected per update (as TorchMetrics' classes do), so an
  // example of logits holds for the whole input only.
  bool batchable = true;
};

// The examples of TorchMetrics 1.5's docstrings (roc.py,
// precision_recall_curve.py), with their printed values.
std::vector<Example> DocExamples() {
  NamedTensors bin = Inputs(BinaryPreds(), BinaryTarget());
  NamedTensors mc = Inputs(MulticlassPreds(), MulticlassTarget());
  NamedTensors ml = Inputs(MultilabelPreds(), MultilabelTarget());
  return {
      {"binary_roc", bin, "[[0, 0.5, 0.5, 0.5, 1], [0, 0, 0.5, 1, 1], [1, 0.8, 0.7, 0.5, 0]]"},
      {"binary_roc(thresholds=5)", bin, "[[0, 0.5, 0.5, 0.5, 1], [0, 0, 1, 1, 1], [1, 0.75, 0.5, 0.25, 0]]"},
      {"binary_roc", Inputs(at::tensor({0.0f, 1.0f, 2.0f, 3.0f}), at::tensor({0, 1, 1, 1}, at::kLong)),
       "[[0, 0, 0, 0, 1], [0, 0.33333334, 0.6666667, 1, 1], [1, 0.95257413, 0.8807971, 0.7310586, 0.5]]", false},
      {"binary_precision_recall_curve", bin, "[[0.5, 0.6666667, 0.5, 0, 1], [1, 1, 0.5, 0, 0], [0, 0.5, 0.7, 0.8]]"},
      {"binary_precision_recall_curve(thresholds=5)", bin,
       "[[0.5, 0.6666667, 0.6666667, 0, 0, 1], [1, 1, 1, 0, 0, 0], [0, 0.25, 0.5, 0.75, 1]]"},
      {"multiclass_roc(num_classes=5)", mc,
       "[[[0, 0, 1], [0, 0, 1], [0, 0.33333334, 1], [0, 0.33333334, 1], [0, 1]],"
       " [[0, 1, 1], [0, 1, 1], [0, 0, 1], [0, 0, 1], [0, 0]],"
       " [[1, 0.75, 0.05], [1, 0.75, 0.05], [1, 0.75, 0.05], [1, 0.75, 0.05], [1, 0.05]]]"},
      {"multiclass_roc(num_classes=5, thresholds=5)", mc,
       "[[[0, 0, 0, 0, 1], [0, 0, 0, 0, 1], [0, 0.33333334, 0.33333334, 0.33333334, 1],"
       "  [0, 0.33333334, 0.33333334, 0.33333334, 1], [0, 0, 0, 0, 1]],"
       " [[0, 1, 1, 1, 1], [0, 1, 1, 1, 1], [0, 0, 0, 0, 1], [0, 0, 0, 0, 1], [0, 0, 0, 0, 0]],"
       " [1, 0.75, 0.5, 0.25, 0]]"},
      {"multiclass_precision_recall_curve(num_classes=5)", mc,
       "[[[0.25, 1, 1], [0.25, 1, 1], [0.25, 0, 1], [0.25, 0, 1], [0, 1]],"
       " [[1, 1, 0], [1, 1, 0], [1, 0, 0], [1, 0, 0], [null, 0]],"
       " [[0.05, 0.75], [0.05, 0.75], [0.05, 0.75], [0.05, 0.75], [0.05]]]"},
      {"multiclass_precision_recall_curve(num_classes=5, thresholds=5)", mc,
       "[[[0.25, 1, 1, 1, 0, 1], [0.25, 1, 1, 1, 0, 1], [0.25, 0, 0, 0, 0, 1], [0.25, 0, 0, 0, 0, 1],"
       "  [0, 0, 0, 0, 0, 1]],"
       " [[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 0, 0], [1, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]],"
       " [0, 0.25, 0.5, 0.75, 1]]"},
      {"multilabel_roc(num_labels=3)", ml,
       "[[[0, 0, 0.5, 1], [0, 0.5, 0.5, 0.5, 1], [0, 0, 0, 1]],"
       " [[0, 0.5, 0.5, 1], [0, 0, 0.5, 1, 1], [0, 0.33333334, 0.6666667, 1]],"
       " [[1, 0.75, 0.45, 0.05], [1, 0.75, 0.65, 0.55, 0.05], [1, 0.75, 0.35, 0.05]]]"},
      {"multilabel_roc(num_labels=3, thresholds=5)", ml,
       "[[[0, 0, 0, 0.5, 1], [0, 0.5, 0.5, 0.5, 1], [0, 0, 0, 0, 1]],"
       " [[0, 0.5, 0.5, 0.5, 1], [0, 0, 1, 1, 1], [0, 0.33333334, 0.33333334, 0.6666667, 1]],"
       " [1, 0.75, 0.5, 0.25, 0]]"},
      {"multilabel_precision_recall_curve(num_labels=3)", ml,
       "[[[0.5, 0.5, 1, 1], [0.5, 0.6666667, 0.5, 0, 1], [0.75, 1, 1, 1]],"
       " [[1, 0.5, 0.5, 0], [1, 1, 0.5, 0, 0], [1, 0.6666667, 0.33333334, 0]],"
       " [[0.05, 0.45, 0.75], [0.05, 0.55, 0.65, 0.75], [0.05, 0.35, 0.75]]]"},
      {"multilabel_precision_recall_curve(num_labels=3, thresholds=5)", ml,
       "[[[0.5, 0.5, 1, 1, 0, 1], [0.5, 0.6666667, 0.6666667, 0, 0, 1], [0.75, 1, 1, 1, 0, 1]],"
       " [[1, 0.5, 0.5, 0.5, 0, 0], [1, 1, 1, 0, 0, 0], [1, 0.6666667, 0.33333334, 0.33333334, 0, 0]],"
       " [0, 0.25, 0.5, 0.75, 1]]"},
  };
}

TEST(CurveOutputs, TorchMetricsDocstringExamples) {
  // Verifies TorchMetrics' own examples, in one update and in batches of 1.
  for (const Example& e : DocExamples()) {
    for (int64_t batch : {0, 1}) {
      if (batch > 0 && !e.batchable) continue;
      auto r = Eval(e.spec, e.inputs, batch);
      ASSERT_TRUE(r.ok()) << e.spec << ": " << r.status();
      EXPECT_TRUE(Matches(*r, json::parse(e.expected))) << e.spec << " batch " << batch;
    }
  }
}

TEST(CurveOutputs, TorchScriptBackendGivesTheSameTuples) {
  // Verifies the TorchScript backend against the eager one for every form:
  // exact and binned, a thresholds list out of order, micro and macro.
  at::manual_seed(3);
  at::Tensor p = at::randn({23, 3}), t = at::randint(0, 3, {23}, at::kLong);
  at::Tensor lt = at::randint(0, 2, {23, 3}, at::kLong);
  std::vector<std::pair<std::string, NamedTensors>> cases;
  for (const char* kind : {"roc", "precision_recall_curve"}) {
    for (const char* extra : {"", ", thresholds=7", ", thresholds=[0.9, 0.1, 0.5]"}) {
      cases.push_back({absl::StrCat("binary_", kind, "(ignore_index=-1", extra, ")"),
                       Inputs(p.select(1, 0).contiguous(), lt.select(1, 0).contiguous())});
      for (const char* avg : {"none", "micro", "macro"}) {
        cases.push_back({absl::StrCat("multiclass_", kind, "(num_classes=3, average=", avg, extra, ")"), Inputs(p, t)});
      }
      cases.push_back({absl::StrCat("multilabel_", kind, "(num_labels=3", extra, ")"), Inputs(p, lt)});
    }
  }
  for (const auto& [spec, in] : cases) {
    auto eager = Eval(spec, in, 5);
    ASSERT_TRUE(eager.ok()) << spec << ": " << eager.status();
    auto ts = Eval(spec, in, 5, exec::Backend::kTorchScript);
    ASSERT_TRUE(ts.ok()) << spec << ": " << ts.status();
    EXPECT_EQ(tally::ValueToJson(*eager), tally::ValueToJson(*ts)) << spec;
  }
}

// Compiled returns the compiled module of one spec for `inputs`' signature.
absl::StatusOr<Compiled> CompiledFor(const std::string& spec, const NamedTensors& inputs) {
  auto sig = tally::SignatureOf(inputs);
  if (!sig.ok()) return sig.status();
  auto entries = tally::BuildEntries({spec}, *sig, ir::Device{});
  if (!entries.ok()) return entries.status();
  return CompileModule(*entries, CompileOptions{});
}

int FinalizeSyncs(const Compiled& c) {
  int n = 0;
  for (const auto& node : c.module->finalize->nodes()) n += ops::SyncsHost(*node) ? 1 : 0;
  return n;
}

TEST(CurveOutputs, OnlyTheExactFinalizeReadsTheHost) {
  // Verifies that the binned forms are sync-free in update and finalize
  // with a constant-size i64 state, and that the exact forms sync only in
  // finalize (masked_select per output tensor), which inspect reports.
  NamedTensors mc = Inputs(MulticlassPreds(), MulticlassTarget());
  struct Binned {
    const char* spec;
    const char* counts;  // the histogram's shape [C, 2, T+1]
  };
  for (const Binned& k : std::vector<Binned>{
           {"multiclass_roc(num_classes=5, thresholds=11)", "[5,2,12]"},
           {"multiclass_precision_recall_curve(num_classes=5, thresholds=[0.2, 0.1], average=macro)", "[5,2,3]"},
           {"multiclass_roc(num_classes=5, thresholds=4, average=micro)", "[1,2,5]"}}) {
    auto c = CompiledFor(k.spec, mc);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(FinalizeSyncs(*c), 0) << k.spec;
    int histograms = 0;
    for (const auto& st : c->module->states) {
      EXPECT_NE(st.reducer, ir::Reducer::kCat) << st.name;
      if (st.name.find("threshold_counts") == std::string::npos) continue;
      ++histograms;
      EXPECT_EQ(st.type.dtype, ir::DType::kInt64);
      EXPECT_EQ(st.type.ShapeString(), k.counts) << k.spec;
    }
    EXPECT_EQ(histograms, 1) << k.spec;
  }
  auto c = CompiledFor("multiclass_roc(num_classes=5)", mc);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(FinalizeSyncs(*c), 5 * 3);
  for (const auto& node : c->module->update->nodes()) EXPECT_FALSE(ops::SyncsHost(*node)) << node->op();
  tally::InspectOptions io;
  auto text = tally::Inspect({"binary_roc"}, {}, io);
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_THAT(*text, HasSubstr("host sync in finalize: masked_select (metrics/curves/common.cc"));
  EXPECT_THAT(*text, HasSubstr("binary_roc/2:"));
}

TEST(CurveOutputs, EmptyStatesGiveTheClosingPoints) {
  // Verifies compute before any row: the exact roc and precision-recall
  // curve keep their shapes (the point at threshold 1, the closing point)
  // with NaN values, as TorchMetrics raises there; binned curves are all
  // zeros (precision 1 at the end).
  NamedTensors none = Inputs(at::empty({0}), at::empty({0}, at::kLong));
  struct Case {
    const char* spec;
    const char* expected;
  };
  for (const Case& k : std::vector<Case>{
           {"binary_roc", "[[null], [null], [null]]"},
           {"binary_precision_recall_curve", "[[null], [null], []]"},
           {"binary_roc(thresholds=3)", "[[0, 0, 0], [0, 0, 0], [1, 0.5, 0]]"},
           {"binary_precision_recall_curve(thresholds=3)", "[[0, 0, 0, 1], [0, 0, 0, 0], [0, 0.5, 1]]"}}) {
    auto r = Eval(k.spec, none);
    ASSERT_TRUE(r.ok()) << k.spec << ": " << r.status();
    EXPECT_TRUE(Matches(*r, json::parse(k.expected))) << k.spec;
  }
}

TEST(CurveOutputs, DegenerateTargets) {
  // Verifies TorchMetrics' values without positives or negatives: roc's tpr
  // (fpr) all zeros, prc's recall 1 (binary, multilabel, and multiclass
  // when every target is class 0) or NaN (a multiclass class absent while
  // other classes are present).
  at::Tensor p = at::tensor({0.2f, 0.6f, 0.6f});
  auto r = Eval("binary_roc", Inputs(p, at::zeros({3}, at::kLong)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(Matches(*r, json::parse("[[0, 0.6666667, 1], [0, 0, 0], [1, 0.6, 0.2]]")));
  r = Eval("binary_roc", Inputs(p, at::ones({3}, at::kLong)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(Matches(*r, json::parse("[[0, 0, 0], [0, 0.6666667, 1], [1, 0.6, 0.2]]")));
  r = Eval("binary_precision_recall_curve", Inputs(p, at::zeros({3}, at::kLong)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(Matches(*r, json::parse("[[0, 0, 1], [1, 1, 0], [0.2, 0.6]]")));
  at::Tensor scores = at::tensor({0.7f, 0.2f, 0.1f, 0.6f, 0.3f, 0.1f}).reshape({2, 3});
  r = Eval("multiclass_precision_recall_curve(num_classes=3)", Inputs(scores, at::zeros({2}, at::kLong)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(Matches(*r, json::parse("[[[1, 1, 1], [0, 0, 1], [0, 1]],"
                                      " [[1, 1, 0], [1, 1, 0], [1, 0]],"
                                      " [[0.6, 0.7], [0.2, 0.3], [0.1]]]")));
  r = Eval("multiclass_precision_recall_curve(num_classes=3)", Inputs(scores, at::tensor({0, 1}, at::kLong)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(Matches(*r, json::parse("[[[0.5, 1, 1], [0.5, 1, 1], [0, 1]],"
                                      " [[1, 1, 0], [1, 1, 0], [null, 0]],"
                                      " [[0.6, 0.7], [0.2, 0.3], [0.1]]]")));
}

TEST(CurveOutputs, BadArgumentsAndTargets) {
  // Verifies argument errors name the metric, and targets out of range are
  // the deferred check's error.
  NamedTensors mc = Inputs(MulticlassPreds(), MulticlassTarget());
  EXPECT_THAT(std::string(Eval("multiclass_roc(num_classes=5, average=weighted)", mc).status().message()),
              HasSubstr("multiclass_roc"));
  EXPECT_THAT(std::string(Eval("multiclass_roc(num_classes=1)", mc).status().message()),
              HasSubstr("num_classes must be an integer >= 2"));
  EXPECT_THAT(std::string(Eval("binary_roc(thresholds=1)", Inputs(BinaryPreds(), BinaryTarget())).status().message()),
              HasSubstr("thresholds"));
  EXPECT_THAT(
      std::string(Eval("multilabel_roc(num_labels=3, average=macro)", Inputs(MultilabelPreds(), MultilabelTarget()))
                      .status()
                      .message()),
      HasSubstr("average"));
  EXPECT_THAT(
      std::string(Eval("binary_precision_recall_curve", Inputs(BinaryPreds(), at::tensor({0, 1, 2, 0}, at::kLong)))
                      .status()
                      .message()),
      HasSubstr("binary_precision_recall_curve: target: 1 values outside {0, 1}"));
  EXPECT_THAT(
      std::string(Eval("multiclass_roc(num_classes=5)", Inputs(MulticlassPreds(), at::tensor({0, 7, 1, 1}, at::kLong)))
                      .status()
                      .message()),
      HasSubstr("multiclass_roc: target: 1 values outside [0, 5)"));
}

TEST(CurveOutputs, ExactWithNoKeptElementIsNan) {
  // Verifies that exact curves are NaN throughout when a class has no kept
  // element (TorchMetrics raises an IndexError; fuzz case: binary_roc on
  // zero rows gave [[0], [0], [1]]).
  auto r = Eval("binary_roc", Inputs(at::zeros({0}, at::kFloat), at::zeros({0}, at::kLong)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(Matches(*r, json::parse("[[null], [null], [null]]")));
  r = Eval("binary_precision_recall_curve(ignore_index=1)", Inputs(at::tensor({0.2f}), at::tensor({1}, at::kLong)));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(Matches(*r, json::parse("[[null], [null], []]")));
  at::Tensor p = at::tensor({0.1f, 0.9f, 0.4f, 0.6f}).reshape({2, 2});
  at::Tensor t = at::tensor({0, -1, 1, -1}, at::kLong).reshape({2, 2});
  r = Eval("multilabel_roc(num_labels=2, ignore_index=-1)", Inputs(p, t));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(Matches(
      *r, json::parse("[[[null, null, null], [null]], [[null, null, null], [null]], [[null, null, null], [null]]]")));
}

TEST(CurveOutputs, MacroRocNeedsTwoThresholds) {
  // Verifies that multiclass_roc(average=macro) with a one-element thresholds
  // list is an argument error: TorchMetrics' interp over one point per class
  // raises an IndexError (fuzz case: thresholds=[0.363] gave a curve).
  auto r = Eval("multiclass_roc(num_classes=5, thresholds=[0.5], average=macro)",
                Inputs(MulticlassPreds(), MulticlassTarget()));
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("at least 2 thresholds"));
  EXPECT_TRUE(Eval("multiclass_precision_recall_curve(num_classes=5, thresholds=[0.5], average=macro)",
                   Inputs(MulticlassPreds(), MulticlassTarget()))
                  .ok());
  EXPECT_TRUE(Eval("multiclass_roc(num_classes=5, thresholds=[0.2, 0.5], average=macro)",
                   Inputs(MulticlassPreds(), MulticlassTarget()))
                  .ok());
}

}  // namespace
}  // namespace tally
