// Multi-part (tuple) metric results end to end: a DSL metric whose result is
// a tree of tensors — a tuple holding a pair of scalars and a list of two
// vectors whose lengths depend on the data — linked beside a one-tensor
// metric: the finalize labels, Program::Compute and CollectResult, batches
// and Merge, the TorchScript backend, the exported module's compute(), and
// the JSON `tally eval` prints; a malformed tree is a builder error.
#include <ATen/ATen.h>
#include <torch/script.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "engine/dsl/builder.h"
#include "engine/dsl/metric.h"
#include "engine/exec/torchscript/module_builder.h"
#include "engine/exec/torchscript/module_export.h"
#include "engine/runtime/compiler.h"
#include "engine/runtime/results.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tally {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using json = nlohmann::json;

const dsl::Signature kSig = {{"value", ir::DType::kFloat32, {4}}};

// Stats returns ((sum, max), [sorted values, positive values in arrival order]).
absl::StatusOr<dsl::Metric> Stats(const dsl::Signature& sig = kSig) {
  dsl::MetricBuilder b("stats", sig);
  ops::Expr x = b.Input("value");
  dsl::State sum = b.AddState("sum", ir::DType::kFloat64, {}, ir::Reducer::kSum);
  dsl::State max = b.AddState("max", ir::DType::kFloat32, {}, ir::Reducer::kMax, -INFINITY);
  dsl::State rows = b.AddState("rows", ir::DType::kFloat32, {}, ir::Reducer::kCat);
  b.Accumulate(sum, ops::Sum(ops::Cast(x, ir::DType::kFloat64)));
  b.Accumulate(max, ops::Max(x));
  b.Accumulate(rows, x);
  ops::Expr all = b.Read(rows);
  ops::Expr positives = b.Op(ops::OpId::kMaskedSelect, {all, all > 0.0});
  b.Output(dsl::Parts{dsl::Parts{b.Read(sum), b.Read(max)},
                      dsl::Parts(std::vector<ops::Expr>{ops::SortValues(all, 0), positives})});
  return b.Finish();
}

absl::StatusOr<dsl::Metric> Mean() {
  dsl::MetricBuilder b("mean", kSig);
  ops::Expr x = b.Input("value");
  dsl::State sum = b.AddState("sum", ir::DType::kFloat64, {}, ir::Reducer::kSum);
  dsl::State n = b.AddState("n", ir::DType::kInt64, {}, ir::Reducer::kSum);
  b.Accumulate(sum, ops::Sum(ops::Cast(x, ir::DType::kFloat64)));
  b.Accumulate(n, ops::Size(x, 0));
  b.Output(b.Read(sum) / b.Read(n));
  return b.Finish();
}

absl::StatusOr<std::vector<dsl::CollectionEntry>> Entries() {
  std::vector<dsl::CollectionEntry> entries;
  auto mean = Mean();
  if (!mean.ok()) return mean.status();
  entries.push_back({"mean", std::move(*mean)});
  auto stats = Stats();
  if (!stats.ok()) return stats.status();
  entries.push_back({"stats", std::move(*stats)});
  return entries;
}

absl::StatusOr<std::unique_ptr<Program>> Make(exec::Backend backend = exec::Backend::kEager) {
  auto entries = Entries();
  if (!entries.ok()) return entries.status();
  CompileOptions co;
  co.backend = backend;
  co.fuse_policy = passes::FusePolicy::kReference;
  return Compile(*entries, co);
}

NamedTensors Batch(std::vector<float> v) { return {{"value", at::tensor(v, at::kFloat)}}; }

std::vector<double> Values(const at::Tensor& t) {
  at::Tensor d = t.to(at::kDouble).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

std::vector<std::string> Labels(const NamedTensors& r) {
  std::vector<std::string> out;
  for (const auto& [label, t] : r) out.push_back(label);
  return out;
}

// ExpectStats checks the tree of `stats` after the rows {1, -2, 3, 0.5}.
void ExpectStats(const ResultTree& t) {
  ASSERT_EQ(t.parts.size(), 2u);
  ASSERT_EQ(t.parts[0].parts.size(), 2u);
  ASSERT_EQ(t.parts[1].parts.size(), 2u);
  EXPECT_THAT(Values(t.parts[0].parts[0].tensor), ElementsAre(2.5));
  EXPECT_THAT(Values(t.parts[0].parts[1].tensor), ElementsAre(3.0));
  EXPECT_THAT(Values(t.parts[1].parts[0].tensor), ElementsAre(-2.0, 0.5, 1.0, 3.0));
  EXPECT_THAT(Values(t.parts[1].parts[1].tensor), ElementsAre(1.0, 3.0, 0.5));
}

TEST(TupleOutputs, FinalizeReturnsOneLabelPerLeaf) {
  // Verifies that a tree result is returned leaf by leaf, labelled by path,
  // and that linking puts the entry's label in place of "value".
  auto m = Stats();
  ASSERT_TRUE(m.ok()) << m.status();
  std::vector<std::string> labels;
  for (const auto& [label, v] : m->module->finalize->returns()) labels.push_back(label);
  EXPECT_THAT(labels, ElementsAre("value/0/0", "value/0/1", "value/1/0", "value/1/1"));
  auto entries = Entries();
  ASSERT_TRUE(entries.ok()) << entries.status();
  auto linked = dsl::LinkCollection(*entries);
  ASSERT_TRUE(linked.ok()) << linked.status();
  labels.clear();
  for (const auto& [label, v] : (*linked)->finalize->returns()) labels.push_back(label);
  EXPECT_THAT(labels, ElementsAre("mean", "stats/0/0", "stats/0/1", "stats/1/0", "stats/1/1"));
}

TEST(TupleOutputs, PartLabelsRoundTrip) {
  // Verifies the label helpers.
  EXPECT_EQ(dsl::PartLabel("roc", {}), "roc");
  EXPECT_EQ(dsl::PartLabel("roc", {1, 12}), "roc/1/12");
  std::string base;
  std::vector<int> path;
  ASSERT_TRUE(dsl::ParsePartLabel("roc/1/12", &base, &path));
  EXPECT_EQ(base, "roc");
  EXPECT_THAT(path, ElementsAre(1, 12));
  ASSERT_TRUE(dsl::ParsePartLabel("mean", &base, &path));
  EXPECT_EQ(base, "mean");
  EXPECT_TRUE(path.empty());
  EXPECT_FALSE(dsl::ParsePartLabel("roc/x", &base, &path));
  EXPECT_FALSE(dsl::ParsePartLabel("roc/", &base, &path));
}

TEST(TupleOutputs, ComputeBatchesAndMergeGiveTheTree) {
  // Verifies Program::Compute's labels and the rebuilt tree, over two
  // batches and as the merge of two programs, on both backends; the
  // one-tensor metric beside it is unchanged.
  for (exec::Backend backend : {exec::Backend::kEager, exec::Backend::kTorchScript}) {
    SCOPED_TRACE(backend == exec::Backend::kEager ? "eager" : "torchscript");
    auto p = Make(backend);
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_TRUE((*p)->Update(Batch({1, -2})).ok());
    ASSERT_TRUE((*p)->Update(Batch({3, 0.5})).ok());
    auto r = (*p)->Compute();
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_THAT(Labels(*r), ElementsAre("mean", "stats/0/0", "stats/0/1", "stats/1/0", "stats/1/1"));
    auto mean = CollectResult(*r, "mean");
    ASSERT_TRUE(mean.ok()) << mean.status();
    EXPECT_TRUE(mean->is_leaf());
    EXPECT_THAT(Values(mean->tensor), ElementsAre(0.625));
    auto stats = CollectResult(*r, "stats");
    ASSERT_TRUE(stats.ok()) << stats.status();
    ExpectStats(*stats);

    auto a = Make(backend), b = Make(backend);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_TRUE((*a)->Update(Batch({1, -2})).ok());
    ASSERT_TRUE((*b)->Update(Batch({3, 0.5})).ok());
    ASSERT_TRUE((*a)->Merge(**b).ok());
    auto merged = (*a)->Compute();
    ASSERT_TRUE(merged.ok()) << merged.status();
    auto tree = CollectResult(*merged, "stats");
    ASSERT_TRUE(tree.ok()) << tree.status();
    ExpectStats(*tree);
  }
}

TEST(TupleOutputs, CollectResultRejectsLabelsThatAreNoTree) {
  // Verifies that CollectResult reports missing results, gaps and a leaf
  // that is also a tuple.
  at::Tensor t = at::zeros({});
  EXPECT_EQ(CollectResult({{"a", t}}, "b").status().code(), absl::StatusCode::kNotFound);
  EXPECT_FALSE(CollectResult({{"a/0", t}, {"a/2", t}}, "a").ok());
  EXPECT_FALSE(CollectResult({{"a", t}, {"a/0", t}}, "a").ok());
  EXPECT_FALSE(CollectResult({{"a/0/0", t}, {"a/0", t}}, "a").ok());
  auto ok = CollectResult({{"a/0/0", t}, {"a/0/1", t}, {"ab", t}, {"a/1", t}}, "a");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->parts.size(), 2u);
  EXPECT_EQ(ok->parts[0].parts.size(), 2u);
  EXPECT_TRUE(ok->parts[1].is_leaf());
}

TEST(TupleOutputs, JsonIsTheNestedListOfTheParts) {
  // Verifies what `tally eval --format json` prints for a tuple result: the
  // list of its parts, nested as the tree (vectors of different lengths),
  // next to an unchanged scalar; NaN as null. The table prints the same.
  auto p = Make();
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->Update(Batch({1, -2, 3, 0.5})).ok());
  auto r = (*p)->Compute();
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<tally::EvalResult> results;
  for (const char* label : {"mean", "stats"}) {
    auto tree = CollectResult(*r, label);
    ASSERT_TRUE(tree.ok()) << tree.status();
    results.push_back({label, tree->tensor, *tree});
  }
  std::string text = tally::ResultsToJson(results);
  json doc = json::parse(text);
  EXPECT_EQ(doc["results"][0]["metric"], "mean");
  EXPECT_EQ(doc["results"][0]["value"], json(0.625));
  EXPECT_EQ(doc["results"][1]["value"], json::parse("[[2.5, 3.0], [[-2.0, 0.5, 1.0, 3.0], [1.0, 3.0, 0.5]]]")) << text;
  EXPECT_THAT(tally::ResultsToTable(results), HasSubstr("[[2.5, 3.0], [[-2.0, 0.5, 1.0, 3.0], [1.0, 3.0, 0.5]]]"));
  ResultTree with_nan{at::Tensor(),
                      {ResultTree::Leaf(at::tensor({NAN, 1.0f})), ResultTree::Leaf(at::scalar_tensor(2, at::kLong))}};
  EXPECT_EQ(tally::ValueToJson(with_nan), "[[null, 1.0], 2]");
  // A result made with only `value` (no tree) prints as before.
  EXPECT_EQ(tally::ResultsToJson({{"x", at::scalar_tensor(1.5, at::kDouble)}}),
            "{\"results\": [{\"metric\": \"x\", \"value\": 1.5}]}");
}

TEST(TupleOutputs, ExportedComputeHasOneEntryPerPart) {
  // Verifies that the exported module's compute() returns the labels and
  // values of Program::Compute, and that merge_state folds a second module.
  auto entries = Entries();
  ASSERT_TRUE(entries.ok()) << entries.status();
  CompileOptions co;
  co.fuse_policy = passes::FusePolicy::kReference;
  auto c = CompileModule(*entries, co);
  ASSERT_TRUE(c.ok()) << c.status();
  const char* dir = std::getenv("TEST_TMPDIR");
  std::string path = absl::StrCat(dir ? dir : "/tmp", "/tuple_outputs.pt");
  ASSERT_TRUE(exec::torchscript::ExportModule(*c->module, ir::Device{}, path).ok());
  torch::jit::Module a = torch::jit::load(path), b = torch::jit::load(path);
  a.get_method("update")({at::tensor({1.0f, -2.0f})});
  b.get_method("update")({at::tensor({3.0f, 0.5f})});
  a.get_method("merge_state")({b._ivalue()});
  c10::Dict<c10::IValue, c10::IValue> dict = a.get_method("compute")({}).toGenericDict();
  NamedTensors got;
  for (const auto& item : dict) got.emplace_back(item.key().toStringRef(), item.value().toTensor());
  EXPECT_THAT(Labels(got), ElementsAre("mean", "stats/0/0", "stats/0/1", "stats/1/0", "stats/1/1"));
  auto tree = CollectResult(got, "stats");
  ASSERT_TRUE(tree.ok()) << tree.status();
  ExpectStats(*tree);
}

TEST(TupleOutputs, MalformedTreesAreBuilderErrors) {
  // Verifies that an empty tuple and a value of the update graph are
  // rejected when the metric is built.
  {
    dsl::MetricBuilder b("empty", kSig);
    dsl::State s = b.AddState("s", ir::DType::kFloat64, {}, ir::Reducer::kSum);
    b.Accumulate(s, ops::Sum(ops::Cast(b.Input("value"), ir::DType::kFloat64)));
    b.Output(dsl::Parts{b.Read(s), dsl::Parts(std::vector<dsl::Parts>{})});
    EXPECT_THAT(std::string(b.Finish().status().message()), HasSubstr("empty tuple"));
  }
  {
    dsl::MetricBuilder b("wrong_graph", kSig);
    ops::Expr x = b.Input("value");
    dsl::State s = b.AddState("s", ir::DType::kFloat64, {}, ir::Reducer::kSum);
    b.Accumulate(s, ops::Sum(ops::Cast(x, ir::DType::kFloat64)));
    b.Output(dsl::Parts{b.Read(s), x});
    EXPECT_THAT(std::string(b.Finish().status().message()), HasSubstr("not a finalize value"));
  }
}

}  // namespace
}  // namespace tally
