// Tests of Program: update/compute/reset/merge/save/load on the aggregation
// metrics and on hand-written modules; every class of bad input rejected with
// a message naming the metric and the input and with the states untouched;
// deferred checks; checked mode; programs on meta; a device this machine
// lacks.
#include <ATen/ATen.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/tally.h"
#include "engine/dsl/builder.h"
#include "engine/ir/parser.h"
#include "engine/runtime/compiler.h"
#include "engine/runtime/program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "metrics/spec.h"
#include "tests/testlib/status_matchers.h"

namespace tally {
namespace {

using ::tally::testing::IsOk;
using ::tally::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

const dsl::Signature kValue = {{"value", ir::DType::kFloat32, {4}}};
const dsl::Signature kValueWeight = {{"value", ir::DType::kFloat32, {4}}, {"weight", ir::DType::kFloat32, {4}}};

// MakeProgram builds `specs` for `sig` and compiles them for `device`.
absl::StatusOr<std::unique_ptr<Program>> MakeProgram(const std::vector<std::string>& specs, const dsl::Signature& sig,
                                                     const std::string& device = "cpu", bool checked = false) {
  std::vector<dsl::CollectionEntry> entries;
  for (const std::string& text : specs) {
    auto spec = metrics::ParseMetricSpec(text);
    if (!spec.ok()) return spec.status();
    auto metric = metrics::BuildMetric(*spec, sig, ir::Device{device});
    if (!metric.ok()) return metric.status();
    entries.push_back({spec->name, std::move(*metric)});
  }
  CompileOptions options;
  options.device = ir::Device{device};
  options.checked = checked;
  return Compile(entries, options);
}

// FromText instantiates a hand-written module.
absl::StatusOr<std::unique_ptr<Program>> FromText(absl::string_view text, const std::string& device = "cpu",
                                                  bool checked = false) {
  auto m = ir::ParseModule(text);
  if (!m.ok()) return m.status();
  ProgramOptions options;
  options.device = ir::Device{device};
  options.checked = checked;
  return Program::Create(std::move(*m), options);
}

at::Tensor F32(std::vector<float> v) { return at::tensor(v, at::kFloat); }

// Results maps each result label to its value as a double.
std::map<std::string, double> Results(const Program& p) {
  std::map<std::string, double> out;
  auto r = p.Compute();
  EXPECT_THAT(r, IsOk());
  if (!r.ok()) return out;
  for (const auto& [label, t] : *r) out[label] = t.item<double>();
  return out;
}

std::string Saved(const Program& p) {
  auto s = p.SaveState();
  EXPECT_THAT(s, IsOk());
  return s.ok() ? *s : "";
}

// Verifies update and compute of mean, sum, max and min over two batches.
TEST(ProgramTest, UpdateAndCompute) {
  TALLY_ASSERT_OK_AND_ASSIGN(auto p, MakeProgram({"mean", "sum", "max", "min"}, kValue));
  EXPECT_EQ(p->metric_names(), "mean, sum, max, min");
  TALLY_ASSERT_OK(p->Update({{"value", F32({1, 2, 3, 4})}}));
  TALLY_ASSERT_OK(p->Update({{"value", F32({5})}}));
  auto r = Results(*p);
  EXPECT_EQ(r["mean"], 3.0);
  EXPECT_EQ(r["sum"], 15.0);
  EXPECT_EQ(r["max"], 5.0);
  EXPECT_EQ(r["min"], 1.0);
  // Compute does not change the states.
  std::string before = Saved(*p);
  EXPECT_EQ(Results(*p), r);
  EXPECT_EQ(Saved(*p), before);
}

// Verifies that an empty batch is a valid update that changes nothing.
TEST(ProgramTest, EmptyBatchChangesNothing) {
  TALLY_ASSERT_OK_AND_ASSIGN(auto p, MakeProgram({"mean", "sum", "max", "min"}, kValue));
  TALLY_ASSERT_OK(p->Update({{"value", F32({2, 4})}}));
  std::string before = Saved(*p);
  TALLY_ASSERT_OK(p->Update({{"value", at::empty({0}, at::kFloat)}}));
  EXPECT_EQ(Saved(*p), before);
}

// Verifies that float64 accumulation keeps the digits of data offset by 1e4.
TEST(ProgramTest, LargeOffsetsKeepTheirDigits) {
  TALLY_ASSERT_OK_AND_ASSIGN(auto p, MakeProgram({"mean", "sum"}, kValue));
  for (int i = 0; i < 100; ++i) TALLY_ASSERT_OK(p->Update({{"value", F32({10000.25f, 10000.75f})}}));
  auto r = Results(*p);
  EXPECT_EQ(r["mean"], 10000.5);
  EXPECT_EQ(r["sum"], 2000100.0);
}

struct BadInput {
  const char* name;
  NamedTensors inputs;
  const char* input;  // the input the message must name
  const char* what;
};

// Verifies every class of bad input: each is an InvalidArgument naming the
// metric and the input, and leaves every state bit-identical.
TEST(ProgramTest, BadInputsAreRejectedAndLeaveStatesUnchanged) {
  TALLY_ASSERT_OK_AND_ASSIGN(auto p, MakeProgram({"mean"}, kValueWeight));
  TALLY_ASSERT_OK(p->Update({{"value", F32({1, 2, 3})}, {"weight", F32({1, 1, 2})}}));
  const std::string before = Saved(*p);
  const at::Tensor v3 = F32({1, 2, 3}), w3 = F32({1, 1, 1});
  const BadInput cases[] = {
      {"missing input", {{"value", v3}}, "weight", "missing input 'weight'"},
      {"unexpected input", {{"value", v3}, {"weight", w3}, {"target", v3}}, "target", "unexpected input 'target'"},
      {"input given twice", {{"value", v3}, {"value", v3}, {"weight", w3}}, "value", "given twice"},
      {"wrong dtype",
       {{"value", v3.to(at::kDouble)}, {"weight", w3}},
       "value",
       "wrong dtype: expected f32[N]@cpu, got f64[3]@cpu"},
      {"int dtype", {{"value", v3}, {"weight", w3.to(at::kLong)}}, "weight", "wrong dtype"},
      {"wrong rank", {{"value", v3.reshape({3, 1})}, {"weight", w3}}, "value", "wrong rank: expected f32[N]@cpu"},
      {"scalar", {{"value", at::scalar_tensor(1.0, at::kFloat)}, {"weight", w3}}, "value", "wrong rank"},
      {"mismatched rows",
       {{"value", v3}, {"weight", F32({1, 1, 1, 1})}},
       "weight",
       "has 4 rows (dim 0) but another input has 3"},
      {"wrong device",
       {{"value", at::empty({3}, at::TensorOptions().dtype(at::kFloat).device(at::kMeta))}, {"weight", w3}},
       "value",
       "is on meta but the program is placed on cpu"},
      {"undefined tensor", {{"value", at::Tensor()}, {"weight", w3}}, "value", "undefined tensor"},
  };
  for (const BadInput& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(p->Update(c.inputs),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("mean"), HasSubstr(absl::StrCat("'", c.input, "'")), HasSubstr(c.what))));
    EXPECT_EQ(Saved(*p), before);
  }
  EXPECT_EQ(Results(*p)["mean"], 9.0 / 4.0);
}

// A hand-written module with a fixed trailing dim and a node that fails at
// run time when a batch has fewer than 3 rows (topk_mask with k=3).
constexpr char kTopk[] = R"(module {
  state @h.sum : f64[3]@cpu init=0.0 reducer=sum metric="handmade"
  state @h.top : i64[]@cpu init=0.0 reducer=sum metric="handmade"
  graph @update(%x: f64[N,3]@cpu, %y: f64[N]@cpu) {
    %0 = reduce_sum(%x) {dims=[0]} : f64[3]@cpu
    %1 = topk_mask(%y) {k=3} : i1[N]@cpu loc("handmade.cc:7")
    %2 = reduce_sum(%1) : i64[]@cpu
    return (h.sum: %0, h.top: %2)
  }
  graph @finalize(%h.sum: f64[3]@cpu, %h.top: i64[]@cpu) {
    %0 = reduce_sum(%h.sum) : f64[]@cpu
    return (h: %0)
  }
}
)";

// Verifies that a fixed dim of the wrong size is rejected, naming the input.
TEST(ProgramTest, FixedDimMismatchIsRejected) {
  TALLY_ASSERT_OK_AND_ASSIGN(auto p, FromText(kTopk));
  EXPECT_EQ(p->metric_names(), "handmade");
  EXPECT_THAT(
      p->Update({{"x", at::ones({4, 2}, at::kDouble)}, {"y", at::ones({4}, at::kDouble)}}),
      StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("handmade: input 'x': wrong size of dim 1"),
                                                         HasSubstr("expected f64[N,3]@cpu, got f64[4,2]@cpu"))));
}

// Verifies that a kernel failing in the middle of an update (after another
// state's partial was computed) leaves every state unchanged and names the
// node.
TEST(ProgramTest, KernelFailureMidUpdateLeavesStatesUnchanged) {
  TALLY_ASSERT_OK_AND_ASSIGN(auto p, FromText(kTopk));
  TALLY_ASSERT_OK(p->Update({{"x", at::ones({4, 3}, at::kDouble)}, {"y", at::arange(4, at::kDouble)}}));
  const std::string before = Saved(*p);
  EXPECT_THAT(
      p->Update({{"x", at::ones({2, 3}, at::kDouble)}, {"y", at::arange(2, at::kDouble)}}),
      StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("handmade: update: topk_mask at handmade.cc:7"))));
  EXPECT_EQ(Saved(*p), before);
  EXPECT_EQ(Results(*p)["h"], 12.0);
}

// Verifies that Reset restores the initial states.
TEST(ProgramTest, Reset) {
  TALLY_ASSERT_OK_AND_ASSIGN(auto fresh, MakeProgram({"mean", "max"}, kValue));
  TALLY_ASSERT_OK_AND_ASSIGN(auto p, MakeProgram({"mean", "max"}, kValue));
  TALLY_ASSERT_OK(p->Update({{"value", F32({1, 2})}}));
  EXPECT_NE(Saved(*p), Saved(*fresh));
  TALLY_ASSERT_OK(p->Reset());
  EXPECT_EQ(Saved(*p), Saved(*fresh));
  EXPECT_EQ(Results(*p)["max"], -INFINITY);
  TALLY_ASSERT_OK(p->Update({{"value", F32({7})}}));
  EXPECT_EQ(Results(*p)["mean"], 7.0);
}

// Verifies that merging two programs fed the two halves of the data equals
// one program fed everything, bit for bit, and leaves the other unchanged.
TEST(ProgramTest, MergeEqualsSinglePass) {
  const std::vector<std::string> specs = {"mean", "sum", "max", "min"};
  TALLY_ASSERT_OK_AND_ASSIGN(auto all, MakeProgram(specs, kValue));
  TALLY_ASSERT_OK_AND_ASSIGN(auto a, MakeProgram(specs, kValue));
  TALLY_ASSERT_OK_AND_ASSIGN(auto b, MakeProgram(specs, kValue));
  at::Tensor data = F32({3, -1, 4, 1, -5, 9, 2, 6});
  TALLY_ASSERT_OK(all->Update({{"value", data}}));
  TALLY_ASSERT_OK(a->Update({{"value", data.slice(0, 0, 3)}}));
  TALLY_ASSERT_OK(b->Update({{"value", data.slice(0, 3)}}));
  const std::string b_before = Saved(*b);
  TALLY_ASSERT_OK(a->Merge(*b));
  EXPECT_EQ(Saved(*a), Saved(*all));
  EXPECT_EQ(Results(*a), Results(*all));
  EXPECT_EQ(Saved(*b), b_before);
  // Merging an empty program changes nothing.
  TALLY_ASSERT_OK_AND_ASSIGN(auto empty, MakeProgram(specs, kValue));
  TALLY_ASSERT_OK(a->Merge(*empty));
  EXPECT_EQ(Saved(*a), Saved(*all));
}

// A custom-merge group (a running mean and its count) and a cat state.
constexpr char kScatter[] = R"(module {
  state @h.counts : i64[2,3]@cpu init=0.0 reducer=sum scatter=true metric="scatter"
  state @h.rows : i64[]@cpu init=0.0 reducer=sum metric="scatter"
  graph @update(%r: i64[N,2]@cpu) {
    %0 = size(%r) {dim=0} : i64[]@cpu
    return (h.counts: %r, h.rows: %0)
  }
  graph @finalize(%h.counts: i64[2,3]@cpu, %h.rows: i64[]@cpu) {
    return (counts: %h.counts, rows: %h.rows)
  }
}
)";

// Verifies a scatter state: an update adds each (flat index, count) row at
// its element (repeated indices add up, a count of 0 adds nothing), a merge
// adds the other program's whole state, and the state file round-trips.
TEST(ProgramTest, ScatterStateAddsRowsAtTheirElements) {
  TALLY_ASSERT_OK_AND_ASSIGN(auto a, FromText(kScatter));
  TALLY_ASSERT_OK_AND_ASSIGN(auto b, FromText(kScatter));
  const auto rows = [](std::vector<int64_t> v) { return at::tensor(v, at::kLong).view({-1, 2}); };
  TALLY_ASSERT_OK(a->Update({{"r", rows({1, 2, 5, 1, 1, 3, 0, 0})}}));
  TALLY_ASSERT_OK(a->Update({{"r", rows({5, 4})}}));
  TALLY_ASSERT_OK(b->Update({{"r", rows({0, 7, 1, 1})}}));
  const auto counts = [](const Program& p) {
    auto r = p.Compute();
    EXPECT_THAT(r, IsOk());
    if (r.ok()) {
      for (const auto& [label, t] : *r) {
        if (label == "counts") return t;
      }
    }
    return at::Tensor();
  };
  EXPECT_TRUE(at::equal(counts(*a), at::tensor({0, 5, 0, 0, 0, 5}, at::kLong).view({2, 3}))) << counts(*a);
  TALLY_ASSERT_OK(a->Merge(*b));
  EXPECT_TRUE(at::equal(counts(*a), at::tensor({7, 6, 0, 0, 0, 5}, at::kLong).view({2, 3}))) << counts(*a);
  TALLY_ASSERT_OK_AND_ASSIGN(auto c, FromText(kScatter));
  TALLY_ASSERT_OK(c->LoadState(Saved(*a)));
  EXPECT_TRUE(at::equal(counts(*c), counts(*a)));
  TALLY_ASSERT_OK(c->Update({{"r", rows({2, 1})}}));
  EXPECT_EQ(counts(*c)[0][2].item<int64_t>(), 1);
}

constexpr char kCustom[] = R"(module {
  state @m.mu : f64[]@cpu init=0.0 reducer=custom group="m.moments" metric="moments"
  state @m.n : f64[]@cpu init=0.0 reducer=custom group="m.moments" metric="moments"
  state @m.rows : f64[R]@cpu init=0.0 reducer=cat metric="moments"
  graph @update(%x: f64[N]@cpu) {
    %0 = reduce_sum(%x) : f64[]@cpu
    %1 = size(%x) {dim=0} : i64[]@cpu
    %2 = cast(%1) {dtype="f64"} : f64[]@cpu
    %3 = safe_div(%0, %2) : f64[]@cpu
    return (m.mu: %3, m.n: %2, m.rows: %x)
  }
  graph @merge.m.moments(%a.m.mu: f64[]@cpu, %a.m.n: f64[]@cpu, %b.m.mu: f64[]@cpu, %b.m.n: f64[]@cpu) {
    %0 = add(%a.m.n, %b.m.n) : f64[]@cpu
    %1 = mul(%a.m.mu, %a.m.n) : f64[]@cpu
    %2 = mul(%b.m.mu, %b.m.n) : f64[]@cpu
    %3 = add(%1, %2) : f64[]@cpu
    %4 = safe_div(%3, %0) : f64[]@cpu
    return (m.mu: %4, m.n: %0)
  }
  graph @finalize(%m.mu: f64[]@cpu, %m.n: f64[]@cpu, %m.rows: f64[R]@cpu) {
    %0 = reduce_sum(%m.rows) : f64[]@cpu
    return (mean: %m.mu, count: %m.n, total: %0)
  }
}
)";

// Verifies that custom-merge groups fold through their merge graph in
// updates and merges, and cat states concatenate, so batches and merges
// agree with one pass.
TEST(ProgramTest, CustomMergeGroupsAndCatStates) {
  TALLY_ASSERT_OK_AND_ASSIGN(auto all, FromText(kCustom));
  TALLY_ASSERT_OK_AND_ASSIGN(auto a, FromText(kCustom));
  TALLY_ASSERT_OK_AND_ASSIGN(auto b, FromText(kCustom));
  at::Tensor data = at::tensor({1.0, 2.0, 3.0, 4.0, 10.0, 20.0}, at::kDouble);
  TALLY_ASSERT_OK(all->Update({{"x", data}}));
  TALLY_ASSERT_OK(a->Update({{"x", data.slice(0, 0, 2)}}));
  TALLY_ASSERT_OK(a->Update({{"x", data.slice(0, 2, 4)}}));
  TALLY_ASSERT_OK(b->Update({{"x", data.slice(0, 4)}}));
  TALLY_ASSERT_OK(a->Merge(*b));
  auto r = Results(*a);
  EXPECT_EQ(r["mean"], 40.0 / 6.0);
  EXPECT_EQ(r["count"], 6.0);
  EXPECT_EQ(r["total"], 40.0);
  EXPECT_EQ(Results(*all)["count"], 6.0);
  EXPECT_NEAR(Results(*all)["mean"], r["mean"], 1e-15);
  ASSERT_EQ(a->states().size(), 3u);
  EXPECT_TRUE(at::equal(a->states()[2], data));
}

// Verifies that Reset empties a cat state but keeps its buffer: the updates
// after it append into the same storage (no new allocation), a result taken
// before the Reset keeps its values, and the state holds only the new rows.
TEST(ProgramTest, ResetReleasesCatBuffers) {
  // A buffer's capacity counts against the state budget, so Reset gives it
  // back (a read that moves a shard's rows to the total resets the shard),
  // and the next updates grow a new one.
  TALLY_ASSERT_OK_AND_ASSIGN(auto p, FromText(kCustom));
  TALLY_ASSERT_OK(p->Update({{"x", at::tensor({1.0, 2.0, 3.0}, at::kDouble)}}));
  EXPECT_GT(p->states()[2].storage().nbytes(), 0u);
  TALLY_ASSERT_OK_AND_ASSIGN(NamedTensors before, p->Compute());
  TALLY_ASSERT_OK(p->Reset());
  EXPECT_EQ(p->states()[2].size(0), 0);
  EXPECT_EQ(p->states()[2].storage().nbytes(), 0u);
  EXPECT_EQ(Results(*p)["total"], 0.0);
  TALLY_ASSERT_OK(p->Update({{"x", at::tensor({5.0}, at::kDouble)}}));
  TALLY_ASSERT_OK(p->Update({{"x", at::tensor({7.0, 8.0}, at::kDouble)}}));
  EXPECT_TRUE(at::equal(p->states()[2], at::tensor({5.0, 7.0, 8.0}, at::kDouble)));
  EXPECT_EQ(Results(*p)["total"], 20.0);
  for (const auto& [name, value] : before) {
    if (name == "total") {
      EXPECT_EQ(value.item<double>(), 6.0);
    }
  }
}

// Verifies that merging programs of different metrics fails and changes
// nothing.
TEST(ProgramTest, MergeOfDifferentMetricsFails) {
  TALLY_ASSERT_OK_AND_ASSIGN(auto mean, MakeProgram({"mean"}, kValue));
  TALLY_ASSERT_OK_AND_ASSIGN(auto sum, MakeProgram({"sum"}, kValue));
  TALLY_ASSERT_OK_AND_ASSIGN(auto mean_sum, MakeProgram({"mean", "sum"}, kValue));
  TALLY_ASSERT_OK(mean->Update({{"value", F32({1, 2})}}));
  TALLY_ASSERT_OK(sum->Update({{"value", F32({5})}}));
  const std::string before = Saved(*mean);
  EXPECT_THAT(mean->Merge(*sum), StatusIs(absl::StatusCode::kFailedPrecondition,
                                          AllOf(HasSubstr("mean"), HasSubstr("different metrics"), HasSubstr("sum"))));
  EXPECT_THAT(mean->Merge(*mean_sum), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(Saved(*mean), before);
}

// Verifies that SaveState/LoadState round-trip exactly, also into a fresh
// program.
TEST(ProgramTest, SaveLoadRoundTrip) {
  const std::vector<std::string> specs = {"mean", "max"};
  TALLY_ASSERT_OK_AND_ASSIGN(auto p, MakeProgram(specs, kValue));
  TALLY_ASSERT_OK(p->Update({{"value", F32({1.5, -2, 8})}}));
  const std::string saved = Saved(*p);
  const auto results = Results(*p);
  TALLY_ASSERT_OK(p->Update({{"value", F32({100})}}));
  TALLY_ASSERT_OK(p->LoadState(saved));
  EXPECT_EQ(Saved(*p), saved);
  EXPECT_EQ(Results(*p), results);
  TALLY_ASSERT_OK_AND_ASSIGN(auto q, MakeProgram(specs, kValue));
  TALLY_ASSERT_OK(q->LoadState(saved));
  EXPECT_EQ(Results(*q), results);
  // Cat states of any length round-trip too.
  TALLY_ASSERT_OK_AND_ASSIGN(auto c, FromText(kCustom));
  TALLY_ASSERT_OK(c->Update({{"x", at::tensor({1.0, 2.0, 3.0}, at::kDouble)}}));
  const std::string cat_saved = Saved(*c);
  TALLY_ASSERT_OK_AND_ASSIGN(auto c2, FromText(kCustom));
  TALLY_ASSERT_OK(c2->LoadState(cat_saved));
  EXPECT_EQ(Saved(*c2), cat_saved);
}

// Verifies that LoadState rejects every truncation of a saved state, state
// bytes of other metrics, extra trailing bytes and garbage, each time without
// changing the states.
TEST(ProgramTest, LoadStateRejectsBadBytes) {
  TALLY_ASSERT_OK_AND_ASSIGN(auto p, MakeProgram({"mean", "max"}, kValue));
  TALLY_ASSERT_OK(p->Update({{"value", F32({1, 2, 3})}}));
  const std::string saved = Saved(*p);
  TALLY_ASSERT_OK_AND_ASSIGN(auto q, MakeProgram({"mean", "max"}, kValue));
  TALLY_ASSERT_OK(q->Update({{"value", F32({-7})}}));
  const std::string before = Saved(*q);
  for (size_t len = 0; len < saved.size(); ++len) {
    EXPECT_THAT(q->LoadState(saved.substr(0, len)),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("load state")))
        << "prefix of " << len << " bytes";
    ASSERT_EQ(Saved(*q), before) << "prefix of " << len << " bytes changed the states";
  }
  EXPECT_THAT(q->LoadState(saved + "x"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("load state")));
  EXPECT_THAT(q->LoadState("garbage"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("load state")));

  TALLY_ASSERT_OK_AND_ASSIGN(auto sum, MakeProgram({"sum"}, kValue));
  EXPECT_THAT(q->LoadState(Saved(*sum)), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("load state")));
  // A program with one more state than q, whose first states match q's.
  TALLY_ASSERT_OK_AND_ASSIGN(auto more, MakeProgram({"mean", "max", "min"}, kValue));
  EXPECT_THAT(q->LoadState(Saved(*more)), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("load state")));
  TALLY_ASSERT_OK_AND_ASSIGN(auto fewer, MakeProgram({"mean"}, kValue));
  EXPECT_THAT(fewer->LoadState(saved), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("load state")));
  EXPECT_EQ(Saved(*q), before);
}

// Verifies the deferred check of mean(nan_strategy=error): NaN rows are
// counted on device, do not touch the other states, and Compute fails with
// the count; Reset clears the counter.
TEST(ProgramTest, DeferredCheckCountsAndMasksBadRows) {
  TALLY_ASSERT_OK_AND_ASSIGN(auto p, MakeProgram({"mean(nan_strategy=error)"}, kValue));
  TALLY_ASSERT_OK_AND_ASSIGN(auto valid_only, MakeProgram({"mean(nan_strategy=error)"}, kValue));
  TALLY_ASSERT_OK(p->Update({{"value", F32({1, NAN, 3})}}));
  TALLY_ASSERT_OK(p->Update({{"value", F32({NAN, 5})}}));
  TALLY_ASSERT_OK(valid_only->Update({{"value", F32({1, 3})}}));
  TALLY_ASSERT_OK(valid_only->Update({{"value", F32({5})}}));
  EXPECT_THAT(p->Compute(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("mean: value: 2 NaN values (nan_strategy=error)")));
  const ir::Module& m = p->module();
  int checks = 0;
  for (size_t i = 0; i < m.states.size(); ++i) {
    if (!m.states[i].check.empty()) {
      ++checks;
      EXPECT_EQ(p->states()[i].item<int64_t>(), 2);
      continue;
    }
    EXPECT_TRUE(at::equal(p->states()[i], valid_only->states()[i])) << m.states[i].name;
  }
  EXPECT_EQ(checks, 1);
  EXPECT_EQ(Results(*valid_only)["mean"], 3.0);
  TALLY_ASSERT_OK(p->Reset());
  TALLY_ASSERT_OK(p->Update({{"value", F32({2})}}));
  EXPECT_EQ(Results(*p)["mean"], 2.0);
}

// Verifies that checked mode runs valid programs with the same results.
TEST(ProgramTest, CheckedModeMatchesUnchecked) {
  const std::vector<std::string> specs = {"mean", "sum", "max", "min"};
  TALLY_ASSERT_OK_AND_ASSIGN(auto checked, MakeProgram(specs, kValue, "cpu", /*checked=*/true));
  TALLY_ASSERT_OK_AND_ASSIGN(auto plain, MakeProgram(specs, kValue));
  EXPECT_TRUE(checked->options().checked);
  for (auto* p : {checked.get(), plain.get()}) {
    TALLY_ASSERT_OK(p->Update({{"value", F32({1, 2, 3})}}));
    TALLY_ASSERT_OK(p->Update({{"value", at::empty({0}, at::kFloat)}}));
  }
  EXPECT_EQ(Results(*checked), Results(*plain));
}

// Verifies that checked mode catches a plan whose kernel produces another
// dtype than planned (Program::Create trusts its module; the checked
// executor does not), while unchecked execution lets it through.
TEST(ProgramTest, CheckedModeCatchesAMisplannedNode) {
  constexpr char kMisplanned[] = R"(module {
  state @s.a : f32[]@cpu init=0.0 reducer=sum metric="misplanned"
  graph @update(%x: f64[N]@cpu) {
    %0 = neg(%x) : f32[N]@cpu loc("bad.cc:3")
    %1 = reduce_sum(%0) : f32[]@cpu
    return (s.a: %1)
  }
  graph @finalize(%s.a: f32[]@cpu) {
    return (s: %s.a)
  }
}
)";
  TALLY_ASSERT_OK_AND_ASSIGN(auto checked, FromText(kMisplanned, "cpu", /*checked=*/true));
  TALLY_ASSERT_OK_AND_ASSIGN(auto plain, FromText(kMisplanned));
  const at::Tensor x = at::tensor({1.0, 2.0}, at::kDouble);
  EXPECT_THAT(
      checked->Update({{"x", x}}),
      StatusIs(absl::StatusCode::kInternal, AllOf(HasSubstr("misplanned: update"),
                                                  HasSubstr("neg: produced Double rank 1 but planned f32[N]@cpu"))));
  EXPECT_THAT(plain->Update({{"x", x}}), IsOk());
}

// Verifies that a program compiled for meta runs updates on meta inputs (no
// value is read on the host) and computes meta results; a deferred check,
// which Compute must read, is reported as an error rather than thrown.
TEST(ProgramTest, MetaProgramRunsOnMetaInputs) {
  TALLY_ASSERT_OK_AND_ASSIGN(auto p, MakeProgram({"mean", "sum", "max", "min"}, kValueWeight, "meta"));
  auto meta = at::TensorOptions().dtype(at::kFloat).device(at::kMeta);
  TALLY_ASSERT_OK(p->Update({{"value", at::empty({16}, meta)}, {"weight", at::empty({16}, meta)}}));
  TALLY_ASSERT_OK(p->Update({{"value", at::empty({0}, meta)}, {"weight", at::empty({0}, meta)}}));
  for (const at::Tensor& s : p->states()) EXPECT_TRUE(s.is_meta());
  TALLY_ASSERT_OK_AND_ASSIGN(NamedTensors out, p->Compute());
  ASSERT_EQ(out.size(), 4u);
  for (const auto& [label, t] : out) EXPECT_TRUE(t.is_meta()) << label;
  // A cpu tensor is the wrong device for a meta program.
  EXPECT_THAT(p->Update({{"value", F32({1})}, {"weight", F32({1})}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is on cpu but the program is placed on meta")));

  TALLY_ASSERT_OK_AND_ASSIGN(auto checked, MakeProgram({"mean(nan_strategy=error)"}, kValue, "meta"));
  TALLY_ASSERT_OK(checked->Update({{"value", at::empty({4}, meta)}}));
  EXPECT_THAT(checked->Compute(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mean: reading check")));
}

// MetaInputs makes meta tensors for a signature with `rows` rows.
NamedTensors MetaInputs(const dsl::Signature& sig, int64_t rows) {
  NamedTensors out;
  for (const dsl::InputSpec& s : sig) {
    std::vector<int64_t> sizes = s.shape;
    if (!sizes.empty()) sizes[0] = rows;
    at::ScalarType dt = s.dtype == ir::DType::kBool      ? at::kBool
                        : s.dtype == ir::DType::kInt32   ? at::kInt
                        : s.dtype == ir::DType::kInt64   ? at::kLong
                        : s.dtype == ir::DType::kFloat64 ? at::kDouble
                                                         : at::kFloat;
    out.emplace_back(s.name, at::empty(sizes, at::TensorOptions().dtype(dt).device(at::kMeta)));
  }
  return out;
}

// Verifies the sync-freedom oracle for the whole library: every registered
// metric (with a default spec that builds for its default signature) compiles
// for meta and runs update on meta inputs, for a batch and an empty batch.
TEST(ProgramTest, EveryRegisteredMetricUpdatesOnMeta) {
  int ran = 0;
  std::vector<std::string> skipped;
  for (const metrics::MetricInfo& info : metrics::AllMetrics()) {
    const int ran_before = ran;
    std::vector<std::pair<std::string, dsl::Signature>> candidates;
    for (const char* args :
         {"", "num_classes=3", "num_labels=3", "beta=2.0", "beta=2.0, num_classes=3", "beta=2.0, num_labels=3",
          "num_groups=3", "task=binary", "task=multiclass, num_classes=3", "p=3.0", "threshold=0.5", "num_clusters=3",
          "metric=scale_invariant_signal_distortion_ratio", "things=[0, 1], stuffs=[2]"}) {
      std::string text = *args ? absl::StrCat(info.name, "(", args, ")") : info.name;
      candidates.emplace_back(text, tally::DefaultSignature({text}));
    }
    if (absl::StrContains(info.name, "_at_")) {  // recall_at_fixed_precision(task=binary) requires min_precision
      std::string text =
          absl::StrCat(info.name, "(task=binary, min_", info.name.substr(info.name.rfind('_') + 1), "=0.5)");
      candidates.emplace_back(text, tally::DefaultSignature({text}));
    }
    if (absl::StrContains(info.name, "_at_")) {  // binary_recall_at_fixed_precision & co.: min_precision & co.
      std::string min = absl::StrCat("min_", info.name.substr(info.name.rfind('_') + 1), "=0.5");
      for (const char* num : {"", "num_classes=3, ", "num_labels=3, "}) {
        std::string text = absl::StrCat(info.name, "(", num, min, ")");
        candidates.emplace_back(text, tally::DefaultSignature({text}));
      }
    }
    candidates.emplace_back(
        info.name, dsl::Signature{{"preds", ir::DType::kFloat32, {8, 3}}, {"target", ir::DType::kFloat32, {8, 3}}});
    for (const auto& [text, sig] : candidates) {
      auto p = MakeProgram({text}, sig, "meta");
      if (!p.ok()) continue;
      SCOPED_TRACE(text);
      EXPECT_THAT((*p)->Update(MetaInputs(sig, 8)), IsOk());
      EXPECT_THAT((*p)->Update(MetaInputs(sig, 0)), IsOk());
      for (const at::Tensor& s : (*p)->states()) EXPECT_TRUE(s.is_meta());
      ++ran;
      break;
    }
    if (ran == ran_before) skipped.push_back(info.name);
  }
  // Every metric builds for one of the candidates (a new kind of metric
  // needs a candidate spec or signature above).
  EXPECT_TRUE(skipped.empty()) << "no candidate spec builds for: " << absl::StrJoin(skipped, ", ");
  EXPECT_EQ(ran, static_cast<int>(metrics::AllMetrics().size()));
}

// Verifies that a program for a device this machine lacks fails to be
// created with a clear status naming the device (no exception, no abort).
TEST(ProgramTest, MissingDeviceIsAStatusNotAThrow) {
  auto p = MakeProgram({"mean"}, kValue, "cuda:1");
  EXPECT_THAT(p, StatusIs(absl::StatusCode::kFailedPrecondition,
                          HasSubstr("mean: cannot create states on cuda:1: the device is not available")));
  auto q = FromText(kTopk, "cuda:1");
  EXPECT_THAT(q,
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("handmade: cannot create states on cuda:1")));
  EXPECT_THAT(FromText(kTopk, "mps"), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("mps")));
}

}  // namespace
}  // namespace tally
