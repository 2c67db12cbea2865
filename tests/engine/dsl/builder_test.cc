// Unit tests of the metric-authoring DSL: MetricBuilder's states, graphs,
// outputs and source locations; its first-error-wins reporting; the Expr
// operators' scalar typing; and a DSL metric run through the public API.
#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "api/tally.h"
#include "engine/dsl/builder.h"
#include "engine/dsl/metric.h"
#include "engine/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testlib/file_check.h"
#include "tests/testlib/status_matchers.h"

namespace tally {
namespace {

using ::tally::dsl::DType;
using ::tally::dsl::MetricBuilder;
using ::tally::dsl::Parts;
using ::tally::dsl::Reducer;
using ::tally::dsl::Signature;
using ::tally::dsl::State;
using ::tally::ops::Expr;
using ::tally::testing::FileCheck;
using ::tally::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const Signature kValue = {{"value", DType::kFloat32, {4}}};

// Here is the loc string a node made on `line` of this file records.
std::string Here(int line) { return absl::StrCat(__FILE__, ":", line); }

// FindNode returns the first node of `g` running `op`, or nullptr.
const ir::Node* FindNode(const ir::Graph& g, const std::string& op) {
  for (const auto& n : g.nodes())
    if (n->op() == op) return n.get();
  return nullptr;
}

// ParamNames lists a graph's parameter names in order.
std::vector<std::string> ParamNames(const ir::Graph& g) {
  std::vector<std::string> out;
  for (const ir::Value* p : g.params()) out.push_back(p->name());
  return out;
}

// ReturnLabels lists a graph's result labels in order.
std::vector<std::string> ReturnLabels(const ir::Graph& g) {
  std::vector<std::string> out;
  for (const auto& [label, v] : g.returns()) out.push_back(label);
  return out;
}

// RunOne compiles `m` alone under `label` and feeds it `batches` of "value".
absl::StatusOr<NamedTensors> RunOne(dsl::Metric m, const std::string& label, const std::vector<at::Tensor>& batches) {
  std::vector<dsl::CollectionEntry> entries;
  entries.push_back({label, std::move(m)});
  absl::StatusOr<std::unique_ptr<Program>> program = Compile(entries, CompileOptions{});
  if (!program.ok()) return program.status();
  for (const at::Tensor& t : batches) {
    absl::Status st = (*program)->Update({{"value", t}});
    if (!st.ok()) return st;
  }
  return (*program)->Compute();
}

// Verifies a sum/count mean builds the expected states, update and finalize graphs.
TEST(MetricBuilderTest, MeanBuildsStatesAndGraphs) {
  MetricBuilder b("my_mean", kValue);
  Expr x = b.Input("value");
  State sum = b.AddState("sum", DType::kFloat64, {}, Reducer::kSum);
  State count = b.AddState("count", DType::kInt64, {}, Reducer::kSum, 0);
  EXPECT_EQ(sum.index, 0);
  EXPECT_EQ(sum.name, "sum");
  EXPECT_EQ(count.index, 1);
  const int sum_line = __LINE__ + 1;
  b.Accumulate(sum, ops::Sum(x));
  const int count_line = __LINE__ + 1;
  b.Accumulate(count, ops::Size(x, 0));
  const int cast_line = __LINE__ + 1;
  Expr n = ops::Cast(b.Read(count), DType::kFloat64);
  Expr s = b.Read(sum);
  b.Output(s / n);
  TALLY_ASSERT_OK_AND_ASSIGN(dsl::Metric m, b.Finish());

  EXPECT_EQ(m.name, "my_mean");
  ASSERT_EQ(m.module->states.size(), 2u);
  const ir::StateDecl& s0 = m.module->states[0];
  EXPECT_EQ(s0.name, "sum");
  EXPECT_EQ(s0.type.dtype, DType::kFloat64);
  EXPECT_EQ(s0.type.rank(), 0);
  EXPECT_EQ(s0.reducer, Reducer::kSum);
  EXPECT_EQ(s0.init, 0.0);
  EXPECT_EQ(s0.metric, "my_mean");
  EXPECT_EQ(m.module->states[1].type.dtype, DType::kInt64);
  EXPECT_THAT(ParamNames(*m.module->update), ElementsAre("value"));
  EXPECT_THAT(ReturnLabels(*m.module->update), ElementsAre("sum", "count"));
  // The finalize graph takes every state, in declaration order, though
  // `count` was read first.
  EXPECT_THAT(ParamNames(*m.module->finalize), ElementsAre("sum", "count"));
  EXPECT_THAT(ReturnLabels(*m.module->finalize), ElementsAre("value"));
  EXPECT_TRUE(m.module->merges.empty());

  // The f32 sum is cast to the f64 state at the Accumulate line.
  const std::string text = ir::PrintModule(*m.module);
  EXPECT_TRUE(FileCheck(
      text, absl::StrReplaceAll(R"(
    // CHECK: state @sum : f64[]@cpu init=0.0 reducer=sum metric="my_mean"
    // CHECK-NEXT: state @count : i64[]@cpu init=0.0 reducer=sum metric="my_mean"
    // CHECK-NEXT: graph @update(%value: f32[N]@cpu) {
    // CHECK-NEXT: %0 = reduce_sum(%value) : f32[]@cpu loc("SUM")
    // CHECK-NEXT: %1 = cast(%0) {dtype="f64"} : f64[]@cpu loc("SUM")
    // CHECK-NEXT: %2 = size(%value) {dim=0} : i64[]@cpu loc("COUNT")
    // CHECK-NEXT: return (sum: %1, count: %2)
    // CHECK: graph @finalize(%sum: f64[]@cpu, %count: i64[]@cpu) {
    // CHECK-NEXT: %0 = cast(%count) {dtype="f64"} : f64[]@cpu loc("CAST")
    // CHECK-NEXT: %1 = div(%sum, %0) : f64[]@cpu
    // CHECK-NEXT: return (value: %1)
  )",
                                {{"SUM", Here(sum_line)}, {"COUNT", Here(count_line)}, {"CAST", Here(cast_line)}})))
      << text;
}

// Verifies each node records the file and line of the DSL call that made it.
TEST(MetricBuilderTest, NodesRecordTheirSourceLine) {
  MetricBuilder b("m", kValue);
  Expr x = b.Input("value");
  State s = b.AddState("s", DType::kFloat32, {}, Reducer::kMax, -1);
  const int abs_line = __LINE__ + 1;
  Expr a = ops::Abs(x);
  const int max_line = __LINE__ + 1;
  Expr peak = ops::Max(a);
  b.Accumulate(s, peak);
  b.Output(b.Read(s));
  TALLY_ASSERT_OK_AND_ASSIGN(dsl::Metric m, b.Finish());
  const ir::Node* abs = FindNode(*m.module->update, "abs");
  const ir::Node* max = FindNode(*m.module->update, "reduce_max");
  ASSERT_NE(abs, nullptr);
  ASSERT_NE(max, nullptr);
  EXPECT_EQ(abs->loc(), Here(abs_line));
  EXPECT_EQ(max->loc(), Here(max_line));
  EXPECT_THAT(abs->loc(), ::testing::EndsWith(absl::StrCat("builder_test.cc:", abs_line)));
  EXPECT_EQ(m.module->states[0].init, -1.0);
  EXPECT_EQ(m.module->states[0].reducer, Reducer::kMax);
}

// Verifies a tuple output is returned leaf by leaf, labelled by its path.
TEST(MetricBuilderTest, PartsAreLabelledByPath) {
  MetricBuilder b("my_range", kValue);
  Expr x = b.Input("value");
  const double inf = std::numeric_limits<double>::infinity();
  State lo = b.AddState("lo", DType::kFloat32, {}, Reducer::kMin, inf);
  State hi = b.AddState("hi", DType::kFloat32, {}, Reducer::kMax, -inf);
  b.Accumulate(lo, ops::Min(x));
  b.Accumulate(hi, ops::Max(x));
  Expr l = b.Read(lo), h = b.Read(hi);
  b.Output(Parts{l, Parts{h, h - l}});
  TALLY_ASSERT_OK_AND_ASSIGN(dsl::Metric m, b.Finish());
  EXPECT_THAT(ReturnLabels(*m.module->finalize), ElementsAre("value/0", "value/1/0", "value/1/1"));
  const std::string text = ir::PrintModule(*m.module);
  EXPECT_TRUE(FileCheck(text, R"(
    // CHECK: state @lo : f32[]@cpu init=inf reducer=min metric="my_range"
    // CHECK: state @hi : f32[]@cpu init=-inf reducer=max metric="my_range"
  )")) << text;
}

// Verifies PartLabel and ParsePartLabel are inverses and refuse non-index paths.
TEST(MetricBuilderTest, PartLabels) {
  EXPECT_EQ(dsl::PartLabel("roc", {}), "roc");
  EXPECT_EQ(dsl::PartLabel("roc", {1, 2}), "roc/1/2");
  std::string base;
  std::vector<int> path;
  ASSERT_TRUE(dsl::ParsePartLabel("roc/1/2", &base, &path));
  EXPECT_EQ(base, "roc");
  EXPECT_THAT(path, ElementsAre(1, 2));
  ASSERT_TRUE(dsl::ParsePartLabel("roc", &base, &path));
  EXPECT_TRUE(path.empty());
  EXPECT_FALSE(dsl::ParsePartLabel("roc/x", &base, &path));
  EXPECT_FALSE(dsl::ParsePartLabel("roc/-1", &base, &path));
  EXPECT_FALSE(dsl::ParsePartLabel("roc//1", &base, &path));
}

// Verifies a custom-merge state gets a merge graph over a.* then b.*.
TEST(MetricBuilderTest, CustomStateMergeGraph) {
  MetricBuilder b("m", kValue);
  Expr x = b.Input("value");
  State c = b.AddState("c", DType::kFloat64, {}, Reducer::kCustom, 0, "g");
  b.Accumulate(c, ops::Max(x));
  b.SetMerged(c, ops::Maximum(b.MergeA(c), b.MergeB(c)));
  b.Output(b.Read(c));
  TALLY_ASSERT_OK_AND_ASSIGN(dsl::Metric m, b.Finish());
  ASSERT_EQ(m.module->merges.count("g"), 1u);
  const ir::Graph& g = *m.module->merges.at("g");
  EXPECT_EQ(g.name(), "merge.g");
  EXPECT_THAT(ParamNames(g), ElementsAre("a.c", "b.c"));
  EXPECT_THAT(ReturnLabels(g), ElementsAre("c"));
  EXPECT_EQ(m.module->states[0].group, "g");
}

// Verifies a 16-bit float input is widened to f32 by Input but not by RawInput.
TEST(MetricBuilderTest, InputWidensHalf) {
  MetricBuilder b("m", {{"value", DType::kFloat16, {4, 3}}});
  Expr raw = b.RawInput("value");
  Expr x = b.Input("value");
  EXPECT_EQ(raw.dtype(), DType::kFloat16);
  EXPECT_EQ(x.dtype(), DType::kFloat32);
  EXPECT_EQ(x.type().ShapeString(), "[N,3]");
  // Both read the one parameter.
  EXPECT_EQ(b.update_graph()->params().size(), 1u);
  EXPECT_TRUE(b.ok());
}

// Verifies a ragged input: the named dim is the given symbol, the others as
// declared (rows N), and a second read returns the same parameter.
TEST(MetricBuilderTest, RaggedInputNamesItsWidth) {
  MetricBuilder b("m", {{"target", DType::kInt64, {4, 2, 7}}});
  Expr t = b.RaggedInput("target", 2, "Lt");
  EXPECT_EQ(t.type().ShapeString(), "[N,2,Lt]");
  EXPECT_EQ(b.RawInput("target").type().ShapeString(), "[N,2,Lt]");
  EXPECT_EQ(b.update_graph()->params().size(), 1u);
  EXPECT_TRUE(b.ok());
}

// Verifies the scalar operands of the Expr operators take the documented dtypes.
TEST(ExprTest, ScalarOperandDTypes) {
  MetricBuilder b("m", {{"target", DType::kInt64, {4}}, {"value", DType::kFloat64, {4}}});
  Expr t = b.Input("target");
  Expr x = b.Input("value");
  // An integral scalar keeps an integer operand's dtype.
  Expr plus = t + 2.0;
  EXPECT_EQ(plus.dtype(), DType::kInt64);
  EXPECT_EQ(std::get<std::string>(plus.value()->producer()->input(1)->producer()->attrs().at("dtype")), "i64");
  // A fractional one is f32, and i64 * f32 promotes to f32.
  Expr half = t * 0.5;
  EXPECT_EQ(std::get<std::string>(half.value()->producer()->input(1)->producer()->attrs().at("dtype")), "f32");
  EXPECT_EQ(half.dtype(), DType::kFloat32);
  // A float operand gives its own dtype to any scalar.
  EXPECT_EQ((x * 0.5).dtype(), DType::kFloat64);
  // True division of integers is floating.
  EXPECT_EQ((t / 2.0).dtype(), DType::kFloat32);
  // Bools take integral scalars as i64; comparisons give bools.
  Expr gt = t > 1.0;
  EXPECT_EQ(gt.dtype(), DType::kBool);
  EXPECT_EQ((gt + 1.0).dtype(), DType::kInt64);
  // A scalar on the left stays the left operand: 2 - t, not t - 2.
  Expr rsub = 2.0 - t;
  const ir::Node* sub = rsub.value()->producer();
  EXPECT_EQ(sub->op(), "sub");
  EXPECT_EQ(sub->input(0)->producer()->op(), "constant");
  EXPECT_EQ(std::get<double>(sub->input(0)->producer()->attrs().at("value")), 2.0);
  EXPECT_EQ(sub->input(1), t.value());
  EXPECT_EQ(rsub.type().ShapeString(), "[N]");
  EXPECT_TRUE(b.ok());
}

// Verifies an invalid Expr stays invalid through ops without poisoning the builder.
TEST(ExprTest, InvalidExprPropagates) {
  MetricBuilder b("m", kValue);
  Expr x = b.Input("value");
  Expr none;
  EXPECT_FALSE(none.valid());
  EXPECT_FALSE((none + 1.0).valid());
  EXPECT_FALSE((1.0 - none).valid());
  EXPECT_FALSE((x * none).valid());
  EXPECT_FALSE(ops::Sum(ops::Abs(none)).valid());
  EXPECT_FALSE(ops::Cast(none, DType::kFloat64).valid());
  EXPECT_FALSE(ops::Where(x > 0.0, none, 1.0).valid());
  EXPECT_TRUE(b.ok());
  State s = b.AddState("s", DType::kFloat64, {}, Reducer::kSum);
  b.Accumulate(s, ops::Sum(none));  // ignored
  b.Output(none);                   // ignored
  EXPECT_TRUE(b.ok());
  EXPECT_THAT(b.Finish(), StatusIs(absl::StatusCode::kInternal, "m: state 's' is never accumulated"));
}

// Verifies the first failure poisons the builder and Finish reports it, not later ones.
TEST(MetricBuilderErrorTest, FirstErrorWins) {
  MetricBuilder b("my_metric", {{"value", DType::kFloat32, {4, 3}}, {"weight", DType::kFloat32, {4, 2}}});
  Expr x = b.Input("value");
  Expr w = b.Input("weight");
  const int line = __LINE__ + 1;
  Expr bad = ops::Maximum(x, w);
  EXPECT_FALSE(bad.valid());
  EXPECT_FALSE(b.ok());
  const std::string first = absl::StrCat("my_metric: maximum: shapes do not broadcast: dim 3 vs 2 (", Here(line), ")");
  EXPECT_THAT(b.status(), StatusIs(absl::StatusCode::kInternal, first));
  // Later failures and ops are ignored: a missing input, a repeated state.
  EXPECT_FALSE(b.Input("target").valid());
  EXPECT_FALSE(ops::Sum(x).valid());
  b.AddState("s", DType::kFloat64, {}, Reducer::kSum);
  b.AddState("s", DType::kFloat64, {}, Reducer::kSum);
  EXPECT_THAT(b.Finish(), StatusIs(absl::StatusCode::kInternal, first));
}

// Verifies an op on operands of different dtypes that the op requires equal is refused.
TEST(MetricBuilderErrorTest, MismatchedDTypes) {
  MetricBuilder b("m", {{"value", DType::kFloat32, {4}}, {"target", DType::kInt64, {4}}});
  const int line = __LINE__ + 1;
  Expr joined = ops::Concat({b.Input("value"), b.Input("target")});
  EXPECT_FALSE(joined.valid());
  EXPECT_THAT(b.Finish(),
              StatusIs(absl::StatusCode::kInternal,
                       absl::StrCat("m: concat: operands differ in dtype (f32 vs i64) (", Here(line), ")")));
}

// Verifies a numeric op on a bool is refused.
TEST(MetricBuilderErrorTest, AbsOfBool) {
  MetricBuilder b("m", kValue);
  Expr x = b.Input("value");
  EXPECT_FALSE(ops::Abs(x > 0.0).valid());
  EXPECT_THAT(b.Finish(), StatusIs(absl::StatusCode::kInternal, HasSubstr("m: abs: expects a numeric input, got i1")));
}

// Verifies reading a dim an input does not have is refused, naming the op and the rank.
TEST(MetricBuilderErrorTest, InputReadWithWrongRank) {
  MetricBuilder b("m", kValue);
  Expr x = b.Input("value");  // f32[N]
  const int line = __LINE__ + 1;
  EXPECT_FALSE(ops::Select(x, 1, 0).valid());
  EXPECT_THAT(b.Finish(), StatusIs(absl::StatusCode::kInternal,
                                   absl::StrCat("m: select: dim 1 out of range for rank 1 (", Here(line), ")")));
}

// Verifies a state declared twice is refused.
TEST(MetricBuilderErrorTest, StateDeclaredTwice) {
  MetricBuilder b("m", kValue);
  b.AddState("sum", DType::kFloat64, {}, Reducer::kSum);
  b.AddState("sum", DType::kInt64, {}, Reducer::kSum);
  EXPECT_THAT(b.Finish(), StatusIs(absl::StatusCode::kInternal, "m: state 'sum' declared twice"));
}

// Verifies a missing input is an InvalidArgument naming the metric and the input.
TEST(MetricBuilderErrorTest, MissingInput) {
  MetricBuilder b("m", kValue);
  EXPECT_FALSE(b.Input("target").valid());
  EXPECT_THAT(b.status(), StatusIs(absl::StatusCode::kInvalidArgument, "m: target: missing input"));
  EXPECT_THAT(b.Finish(), StatusIs(absl::StatusCode::kInvalidArgument, "m: target: missing input"));
}

// Verifies a metric without an output is refused.
TEST(MetricBuilderErrorTest, NoOutput) {
  MetricBuilder b("m", kValue);
  State s = b.AddState("s", DType::kFloat64, {}, Reducer::kSum);
  b.Accumulate(s, ops::Sum(b.Input("value")));
  EXPECT_THAT(b.Finish(), StatusIs(absl::StatusCode::kInternal, "m: no output"));
}

// Verifies a partial whose shape differs from its state's is refused at the Accumulate line.
TEST(MetricBuilderErrorTest, PartialShapeMismatch) {
  MetricBuilder b("m", kValue);
  State s = b.AddState("s", DType::kFloat64, {}, Reducer::kSum);
  Expr x = b.Input("value");
  const int line = __LINE__ + 1;
  b.Accumulate(s, x);  // [N] into a scalar
  EXPECT_THAT(b.Finish(), StatusIs(absl::StatusCode::kInternal,
                                   absl::StrCat("m: partial of 's' has shape [N], state is [] (", Here(line), ")")));
}

// Verifies a cat state takes rows of its trailing shape and refuses a scalar partial.
TEST(MetricBuilderErrorTest, CatStateShapes) {
  {
    MetricBuilder b("m", kValue);
    State rows = b.AddState("rows", DType::kFloat32, {}, Reducer::kCat);
    b.Accumulate(rows, b.Input("value"));
    b.Output(b.Read(rows));
    TALLY_ASSERT_OK_AND_ASSIGN(dsl::Metric m, b.Finish());
    EXPECT_EQ(m.module->states[0].type.ShapeString(), "[R]");
  }
  MetricBuilder b("m", kValue);
  State rows = b.AddState("rows", DType::kFloat32, {}, Reducer::kCat);
  b.Accumulate(rows, ops::Sum(b.Input("value")));
  EXPECT_THAT(b.Finish(),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("partial of 'rows' has shape [], state is [R]")));
}

// Verifies outputs must be finalize values and operands must share a graph.
TEST(MetricBuilderErrorTest, WrongGraph) {
  {
    MetricBuilder b("m", kValue);
    State s = b.AddState("s", DType::kFloat64, {}, Reducer::kSum);
    Expr total = ops::Sum(b.Input("value"));
    b.Accumulate(s, total);
    b.Output(total);
    EXPECT_THAT(b.Finish(), StatusIs(absl::StatusCode::kInternal, HasSubstr("m: output is not a finalize value")));
  }
  MetricBuilder b("m", kValue);
  State s = b.AddState("s", DType::kFloat64, {}, Reducer::kSum);
  Expr total = ops::Cast(ops::Sum(b.Input("value")), DType::kFloat64);
  EXPECT_FALSE(ops::Maximum(b.Read(s), total).valid());
  EXPECT_THAT(b.Finish(),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("m: maximum: operands come from different graphs")));
}

// Verifies a tuple output with an empty tuple is refused.
TEST(MetricBuilderErrorTest, EmptyTupleOutput) {
  MetricBuilder b("m", kValue);
  State s = b.AddState("s", DType::kFloat64, {}, Reducer::kSum);
  b.Accumulate(s, ops::Sum(b.Input("value")));
  b.Output(Parts{b.Read(s), Parts(std::vector<Parts>{})});
  EXPECT_THAT(b.Finish(), StatusIs(absl::StatusCode::kInternal, HasSubstr("m: output has an empty tuple")));
}

// Verifies custom states need a group, a merge graph and a merged value.
TEST(MetricBuilderErrorTest, CustomStateNeedsMerge) {
  {
    MetricBuilder b("m", kValue);
    b.AddState("c", DType::kFloat64, {}, Reducer::kCustom);
    EXPECT_THAT(b.Finish(), StatusIs(absl::StatusCode::kInternal, "m: custom state 'c' needs a merge group"));
  }
  {
    MetricBuilder b("m", kValue);
    State c = b.AddState("c", DType::kFloat64, {}, Reducer::kCustom, 0, "g");
    b.Accumulate(c, ops::Max(b.Input("value")));
    b.Output(b.Read(c));
    EXPECT_THAT(b.Finish(), StatusIs(absl::StatusCode::kInternal, "m: group 'g' has no merge graph"));
  }
  MetricBuilder b("m", kValue);
  State c = b.AddState("c", DType::kFloat64, {}, Reducer::kCustom, 0, "g");
  b.Accumulate(c, ops::Max(b.Input("value")));
  b.MergeA(c);
  b.Output(b.Read(c));
  EXPECT_THAT(b.Finish(), StatusIs(absl::StatusCode::kInternal, "m: custom state 'c' has no merge"));
}

// BuildMean is the sum/count mean with a deferred NaN check.
absl::StatusOr<dsl::Metric> BuildMean() {
  MetricBuilder b("my_mean", kValue);
  Expr x = b.Input("value");
  State sum = b.AddState("sum", DType::kFloat64, {}, Reducer::kSum);
  State count = b.AddState("count", DType::kInt64, {}, Reducer::kSum);
  b.Check("value", "NaN values", ops::Sum(ops::IsNan(x)));
  b.Accumulate(sum, ops::Sum(x));
  b.Accumulate(count, ops::Size(x, 0));
  b.Output(b.Read(sum) / ops::Cast(b.Read(count), DType::kFloat64));
  return b.Finish();
}

// Verifies Check adds an i64 counter state whose message gains the {n} placeholder.
TEST(MetricBuilderTest, CheckAddsCounterState) {
  TALLY_ASSERT_OK_AND_ASSIGN(dsl::Metric m, BuildMean());
  const ir::StateDecl* check = m.module->FindState("check0");
  ASSERT_NE(check, nullptr);
  EXPECT_EQ(check->type.dtype, DType::kInt64);
  EXPECT_EQ(check->reducer, Reducer::kSum);
  EXPECT_EQ(check->check, "value: {n} NaN values");
}

// Verifies the DSL mean computes (1+...+6)/6 = 3.5 over two updates through Compile/Program.
TEST(MetricBuilderRunTest, MeanOverTwoUpdates) {
  TALLY_ASSERT_OK_AND_ASSIGN(dsl::Metric m, BuildMean());
  TALLY_ASSERT_OK_AND_ASSIGN(NamedTensors values,
                             RunOne(std::move(m), "mean", {at::tensor({1.f, 2.f, 3.f, 4.f}), at::tensor({5.f, 6.f})}));
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(values[0].first, "mean");
  EXPECT_EQ(values[0].second.scalar_type(), at::kDouble);
  EXPECT_DOUBLE_EQ(values[0].second.item<double>(), 3.5);
}

// Verifies the deferred check makes Compute fail with the counted NaNs.
TEST(MetricBuilderRunTest, CheckFailsCompute) {
  TALLY_ASSERT_OK_AND_ASSIGN(dsl::Metric m, BuildMean());
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THAT(RunOne(std::move(m), "mean", {at::tensor({1.f, nan}), at::tensor({nan, 2.f})}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("my_mean: value: 2 NaN values")));
}

// Verifies a tuple metric's parts come back labelled and rebuild into a tree.
TEST(MetricBuilderRunTest, RangeParts) {
  MetricBuilder b("my_range", kValue);
  Expr x = b.Input("value");
  const double inf = std::numeric_limits<double>::infinity();
  State lo = b.AddState("lo", DType::kFloat32, {}, Reducer::kMin, inf);
  State hi = b.AddState("hi", DType::kFloat32, {}, Reducer::kMax, -inf);
  b.Accumulate(lo, ops::Min(x));
  b.Accumulate(hi, ops::Max(x));
  Expr l = b.Read(lo), h = b.Read(hi);
  b.Output(Parts{l, Parts{h, h - l}});
  TALLY_ASSERT_OK_AND_ASSIGN(dsl::Metric m, b.Finish());
  TALLY_ASSERT_OK_AND_ASSIGN(NamedTensors values,
                             RunOne(std::move(m), "r", {at::tensor({3.f, -1.f, 2.f}), at::tensor({7.f})}));
  TALLY_ASSERT_OK_AND_ASSIGN(ResultTree tree, CollectResult(values, "r"));
  ASSERT_EQ(tree.parts.size(), 2u);
  ASSERT_TRUE(tree.parts[0].is_leaf());
  EXPECT_EQ(tree.parts[0].tensor.item<float>(), -1.f);
  ASSERT_EQ(tree.parts[1].parts.size(), 2u);
  EXPECT_EQ(tree.parts[1].parts[0].tensor.item<float>(), 7.f);
  EXPECT_EQ(tree.parts[1].parts[1].tensor.item<float>(), 8.f);
}

}  // namespace
}  // namespace tally
