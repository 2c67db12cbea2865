// Tests of prove-single-device: the proof of a placed module (edge classes,
// states, boundary checks), a pass that never changes the IR, and failures
// naming the offending edge, node and DSL line.
#include <memory>
#include <string>

#include "absl/strings/str_replace.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/pipeline.h"
#include "passes/place.h"
#include "passes/prove_single_device.h"
#include "tests/testlib/file_check.h"
#include "tests/testlib/ir_testing.h"
#include "tests/testlib/status_matchers.h"

namespace tally::passes {
namespace {

using ::tally::testing::FileCheck;
using ::tally::testing::IsOk;
using ::tally::testing::IsOkAndHolds;
using ::tally::testing::RunPassForTest;
using ::tally::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::unique_ptr<ir::Module> Parse(absl::string_view text) {
  auto m = ir::ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

constexpr char kMeta[] = R"(module {
  state @s.sum : f64[]@meta init=0.0 reducer=sum metric="s"
  state @s.n : i64[]@meta init=0.0 reducer=sum metric="s"
  graph @update(%x: f64[N]@meta) {
    %0 = reduce_sum(%x) : f64[]@meta
    %1 = size(%x) {dim=0} : i64[]@meta loc("s.cc:4")
    return (s.sum: %0, s.n: %1)
  }
  graph @finalize(%s.sum: f64[]@meta, %s.n: i64[]@meta) {
    %0 = constant() {dtype="f64", value=1.0} : f64[]@meta
    %1 = add(%s.sum, %0) : f64[]@meta
    %2 = div(%1, %s.n) : f64[]@meta
    return (s: %2)
  }
}
)";

// Verifies the proof of a module placed on one device: every edge class is
// counted, states are counted, every input has a boundary check, and the
// pass reports no change.
TEST(ProveSingleDeviceTest, ProvesAPlacedModule) {
  auto m = Parse(kMeta);
  ASSERT_NE(m, nullptr);
  auto proof = ProveSingleDevice(*m, ir::Device{"meta"});
  ASSERT_THAT(proof, IsOk());
  EXPECT_EQ(proof->device, "meta");
  EXPECT_EQ(proof->states, 2);
  EXPECT_EQ(proof->edges.at("update: param -> node"), 2);
  EXPECT_EQ(proof->edges.at("update: value -> result"), 2);
  EXPECT_EQ(proof->edges.at("finalize: node -> node"), 2);
  EXPECT_EQ(proof->edges.at("finalize: param -> node"), 2);
  EXPECT_EQ(proof->edges.at("finalize: constant materialized"), 1);
  ASSERT_EQ(proof->boundary_checks.size(), 1u);
  EXPECT_THAT(proof->boundary_checks[0], HasSubstr("%x must be f64[N]@meta"));
  EXPECT_TRUE(FileCheck(proof->ToString(), R"(
    // CHECK:      single-device proof: every edge is on meta
    // CHECK:      update: param -> node: 2 edges, all on meta
    // CHECK:      states: 2, all on meta
    // CHECK-NEXT: boundary check: %x must be f64[N]@meta
  )"));

  ProveSingleDevicePass pass(ir::Device{"meta"});
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(false));
  EXPECT_EQ(ir::PrintModule(*m), kMeta);
  EXPECT_EQ(pass.counters().at("boundary_checks"), 1);
  EXPECT_EQ(pass.counters().at("edges_proved"), 10);
}

// Verifies that the proof fails for another device, naming the parameter.
TEST(ProveSingleDeviceTest, WrongDeviceNamesTheParameter) {
  auto m = Parse(kMeta);
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(
      ProveSingleDevice(*m, ir::Device{"cpu"}),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               HasSubstr("device proof failed in @update: parameter %x is f64[N]@meta; the program is placed on cpu")));
}

// Verifies that a node whose result lives elsewhere is named with its line.
TEST(ProveSingleDeviceTest, MixedEdgeNamesTheNode) {
  auto m =
      Parse(absl::StrReplaceAll(kMeta, {{"%1 = size(%x) {dim=0} : i64[]@meta", "%1 = size(%x) {dim=0} : i64[]@cpu"}}));
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(ProveSingleDevice(*m, ir::Device{"meta"}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("device proof failed in @update: result i64[]@cpu at size (s.cc:4)")));
  auto c = Parse(absl::StrReplaceAll(kMeta, {{"%0 = constant() {dtype=\"f64\", value=1.0} : f64[]@meta",
                                              "%0 = constant() {dtype=\"f64\", value=1.0} : f64[]@cpu"}}));
  ASSERT_NE(c, nullptr);
  EXPECT_THAT(ProveSingleDevice(*c, ir::Device{"meta"}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("in @finalize: result f64[]@cpu at constant")));
}

// Verifies that a state on another device is named.
TEST(ProveSingleDeviceTest, StateOnAnotherDevice) {
  auto m = Parse(kMeta);
  ASSERT_NE(m, nullptr);
  m->states[1].type.device = ir::Device{"cpu"};
  EXPECT_THAT(ProveSingleDevice(*m, ir::Device{"meta"}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("state @s.n is on cpu, the program on meta")));
}

// Verifies that an input arriving on any device ("*") may only feed an
// explicit transfer to the program's device.
TEST(ProveSingleDeviceTest, TransfersAreTheOnlyDeviceChangingEdges) {
  ASSERT_TRUE(ir::ParseDevice("*").ok()) << "no '*' device";
  constexpr char kTransfer[] = R"(module {
  state @s.sum : f64[]@meta init=0.0 reducer=sum metric="s"
  graph @update(%x: f64[N]@*) {
    %0 = transfer(%x) {device="meta"} : f64[N]@meta
    %1 = reduce_sum(%0) : f64[]@meta
    return (s.sum: %1)
  }
  graph @finalize(%s.sum: f64[]@meta) {
    return (s: %s.sum)
  }
}
)";
  auto m = Parse(kTransfer);
  ASSERT_NE(m, nullptr);
  auto proof = ProveSingleDevice(*m, ir::Device{"meta"});
  ASSERT_THAT(proof, IsOk());
  EXPECT_EQ(proof->edges.at("update: input -> explicit transfer to meta"), 1);
  EXPECT_THAT(proof->boundary_checks[0], HasSubstr("then one explicit transfer to meta"));

  auto direct = Parse(absl::StrReplaceAll(kTransfer, {{"%1 = reduce_sum(%0)", "%1 = reduce_sum(%x)"}}));
  ASSERT_NE(direct, nullptr);
  EXPECT_THAT(
      ProveSingleDevice(*direct, ir::Device{"meta"}),
      StatusIs(absl::StatusCode::kFailedPrecondition, AllOf(HasSubstr("input f64[N]@*"), HasSubstr("reduce_sum"))));
  auto elsewhere =
      Parse(absl::StrReplaceAll(kTransfer, {{"{device=\"meta\"} : f64[N]@meta", "{device=\"cpu\"} : f64[N]@cpu"}}));
  ASSERT_NE(elsewhere, nullptr);
  EXPECT_THAT(ProveSingleDevice(*elsewhere, ir::Device{"meta"}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("transfer of")));
}

// Verifies the pass in a pipeline: after place the proof holds; without place
// the pipeline fails naming the pass.
TEST(ProveSingleDeviceTest, InAPipeline) {
  auto m = Parse(absl::StrReplaceAll(kMeta, {{"@meta", "@cpu"}}));
  ASSERT_NE(m, nullptr);
  PassPipeline ok("placed");
  ok.AddPass<Place>(ir::Device{"meta"});
  ok.AddPass<ProveSingleDevicePass>(ir::Device{"meta"});
  EXPECT_THAT(ok.Run(*m), IsOkAndHolds(true));

  auto n = Parse(kMeta);
  ASSERT_NE(n, nullptr);
  PassPipeline bad("unplaced");
  bad.AddPass<ProveSingleDevicePass>(ir::Device{"cpu"});
  EXPECT_THAT(bad.Run(*n), StatusIs(absl::StatusCode::kFailedPrecondition,
                                    HasSubstr("pass 'prove-single-device': device proof failed")));
}

}  // namespace
}  // namespace tally::passes
