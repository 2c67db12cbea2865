// Tests of the eliminate-dead-states pass: IR in, IR out. States no output
// reads go, with the update nodes that only fed them and finalize nodes that
// reach no result; deferred-check counters and custom-merge groups with a
// live member stay.
#include <memory>
#include <string>

#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/eliminate_dead_states.h"
#include "passes/pipeline.h"
#include "tests/testlib/file_check.h"
#include "tests/testlib/ir_testing.h"
#include "tests/testlib/status_matchers.h"

namespace tally::passes {
namespace {

using ::tally::testing::FileCheck;
using ::tally::testing::IrHash;
using ::tally::testing::IsOkAndHolds;
using ::tally::testing::RunPassForTest;
using ::tally::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

std::unique_ptr<ir::Module> Parse(absl::string_view text) {
  auto m = ir::ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

constexpr char kModule[] = R"(module {
  state @m.used : f64[]@cpu init=0.0 reducer=sum metric="m"
  state @m.dead : f64[]@cpu init=0.0 reducer=sum metric="m"
  state @m.check0 : i64[]@cpu init=0.0 reducer=sum check="x: {n} NaN values" metric="m"
  state @m.mu : f64[]@cpu init=0.0 reducer=custom group="m.g" metric="m"
  state @m.n : f64[]@cpu init=0.0 reducer=custom group="m.g" metric="m"
  state @d.hi : f64[]@cpu init=-inf reducer=custom group="d.g" metric="d"
  graph @update(%x: f64[N]@cpu) {
    %0 = reduce_sum(%x) : f64[]@cpu
    %1 = exp(%x) : f64[N]@cpu loc("m.cc:20")
    %2 = reduce_sum(%1) : f64[]@cpu loc("m.cc:21")
    %3 = isnan(%x) : i1[N]@cpu
    %4 = reduce_sum(%3) : i64[]@cpu
    %5 = size(%x) {dim=0} : i64[]@cpu
    %6 = cast(%5) {dtype="f64"} : f64[]@cpu
    %7 = safe_div(%0, %6) : f64[]@cpu
    %8 = reduce_max(%x) : f64[]@cpu loc("d.cc:5")
    return (m.used: %0, m.dead: %2, m.check0: %4, m.mu: %7, m.n: %6, d.hi: %8)
  }
  graph @merge.d.g(%a.d.hi: f64[]@cpu, %b.d.hi: f64[]@cpu) {
    %0 = maximum(%a.d.hi, %b.d.hi) : f64[]@cpu
    return (d.hi: %0)
  }
  graph @merge.m.g(%a.m.mu: f64[]@cpu, %a.m.n: f64[]@cpu, %b.m.mu: f64[]@cpu, %b.m.n: f64[]@cpu) {
    %0 = add(%a.m.n, %b.m.n) : f64[]@cpu
    %1 = mul(%a.m.mu, %a.m.n) : f64[]@cpu
    %2 = mul(%b.m.mu, %b.m.n) : f64[]@cpu
    %3 = add(%1, %2) : f64[]@cpu
    %4 = safe_div(%3, %0) : f64[]@cpu
    return (m.mu: %4, m.n: %0)
  }
  graph @finalize(%m.used: f64[]@cpu, %m.dead: f64[]@cpu, %m.check0: i64[]@cpu, %m.mu: f64[]@cpu, %m.n: f64[]@cpu, %d.hi: f64[]@cpu) {
    %0 = neg(%d.hi) : f64[]@cpu
    %1 = exp(%0) : f64[]@cpu
    %2 = add(%m.used, %m.mu) : f64[]@cpu
    return (m: %2)
  }
}
)";

// Verifies that a state no output reads is removed with the update nodes
// that only fed it, a custom group none of whose states is read goes with
// its merge graph, dead finalize nodes go, and the check counter and the
// live custom group (m.n is read by nobody but m.mu is) stay.
TEST(EliminateDeadStatesTest, RemovesDeadStatesKeepsChecksAndLiveGroups) {
  auto m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  EliminateDeadStates pass;
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(true));
  const std::string out = ir::PrintModule(*m);
  EXPECT_TRUE(FileCheck(out, R"(
    // CHECK-LABEL: module {
    // CHECK-NEXT:    state @m.used : f64[]@cpu
    // CHECK-NEXT:    state @m.check0 : i64[]@cpu init=0.0 reducer=sum check="x: {n} NaN values"
    // CHECK-NEXT:    state @m.mu : f64[]@cpu init=0.0 reducer=custom group="m.g"
    // CHECK-NEXT:    state @m.n : f64[]@cpu init=0.0 reducer=custom group="m.g"
    // CHECK-NEXT:    graph @update(%x: f64[N]@cpu) {
    // CHECK-NEXT:      %0 = reduce_sum(%x) : f64[]@cpu
    // CHECK-NEXT:      %1 = isnan(%x) : i1[N]@cpu
    // CHECK-NEXT:      %2 = reduce_sum(%1) : i64[]@cpu
    // CHECK-NEXT:      %3 = size(%x) {dim=0} : i64[]@cpu
    // CHECK-NEXT:      %4 = cast(%3) {dtype="f64"} : f64[]@cpu
    // CHECK-NEXT:      %5 = safe_div(%0, %4) : f64[]@cpu
    // CHECK-NEXT:      return (m.used: %0, m.check0: %2, m.mu: %5, m.n: %4)
    // CHECK-NEXT:    }
    // CHECK-NEXT:    graph @merge.m.g(
    // CHECK:         graph @finalize(%m.used: f64[]@cpu, %m.check0: i64[]@cpu, %m.mu: f64[]@cpu, %m.n: f64[]@cpu) {
    // CHECK-NEXT:      %0 = add(%m.used, %m.mu) : f64[]@cpu
    // CHECK-NEXT:      return (m: %0)
  )"));
  EXPECT_THAT(out, Not(HasSubstr("m.dead")));
  EXPECT_THAT(out, Not(HasSubstr("d.hi")));
  EXPECT_THAT(out, Not(HasSubstr("merge.d.g")));
  EXPECT_THAT(out, Not(HasSubstr("exp(")));
  EXPECT_THAT(out, Not(HasSubstr("reduce_max")));
  EXPECT_EQ(pass.counters().at("states_removed"), 2);
  // Finalize: neg, exp. Update: exp, reduce_sum (m.dead), reduce_max (d.hi).
  EXPECT_EQ(pass.counters().at("nodes_removed"), 5);
}

// Verifies that a module where every state is read is left alone: the pass
// says unchanged and the printed IR is identical.
TEST(EliminateDeadStatesTest, UnchangedWhenEverythingIsLive) {
  constexpr char kLive[] = R"(module {
  state @s.sum : f64[]@cpu init=0.0 reducer=sum metric="s"
  state @s.n : i64[]@cpu init=0.0 reducer=sum metric="s"
  state @s.check0 : i64[]@cpu init=0.0 reducer=sum check="x: {n} bad" metric="s"
  graph @update(%x: f64[N]@cpu) {
    %0 = reduce_sum(%x) : f64[]@cpu
    %1 = size(%x) {dim=0} : i64[]@cpu
    %2 = isnan(%x) : i1[N]@cpu
    %3 = reduce_sum(%2) : i64[]@cpu
    return (s.sum: %0, s.n: %1, s.check0: %3)
  }
  graph @finalize(%s.sum: f64[]@cpu, %s.n: i64[]@cpu, %s.check0: i64[]@cpu) {
    %0 = div(%s.sum, %s.n) : f64[]@cpu
    return (s: %0)
  }
}
)";
  auto m = Parse(kLive);
  ASSERT_NE(m, nullptr);
  EliminateDeadStates pass;
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(false));
  EXPECT_EQ(ir::PrintModule(*m), kLive);
  EXPECT_EQ(pass.counters().at("states_removed"), 0);
  EXPECT_EQ(pass.counters().at("nodes_removed"), 0);
}

// Verifies that a state read only by a dead finalize chain is itself dead.
TEST(EliminateDeadStatesTest, StateReadOnlyByDeadNodesIsDead) {
  auto m = Parse(R"(module {
  state @s.a : f64[]@cpu init=0.0 reducer=sum metric="s"
  state @s.b : f64[]@cpu init=0.0 reducer=sum metric="s"
  graph @update(%x: f64[N]@cpu) {
    %0 = reduce_sum(%x) : f64[]@cpu
    %1 = reduce_max(%x) : f64[]@cpu
    return (s.a: %0, s.b: %1)
  }
  graph @finalize(%s.a: f64[]@cpu, %s.b: f64[]@cpu) {
    %0 = mul(%s.b, %s.b) : f64[]@cpu
    %1 = sqrt(%0) : f64[]@cpu
    return (s: %s.a)
  }
}
)");
  ASSERT_NE(m, nullptr);
  EliminateDeadStates pass;
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(true));
  EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
    // CHECK:      state @s.a
    // CHECK-NOT:  state @s.b
    // CHECK:      graph @update(%x: f64[N]@cpu) {
    // CHECK-NEXT:   %0 = reduce_sum(%x) : f64[]@cpu
    // CHECK-NEXT:   return (s.a: %0)
    // CHECK:      graph @finalize(%s.a: f64[]@cpu) {
    // CHECK-NEXT:   return (s: %s.a)
  )"));
}

// Verifies that the pipeline rejects a malformed module before the pass
// runs (here @finalize misses a state), naming the start of the pipeline.
TEST(EliminateDeadStatesTest, MalformedModuleIsRejected) {
  auto m = Parse(R"(module {
  state @s.a : f64[]@cpu init=0.0 reducer=sum metric="s"
  state @s.b : f64[]@cpu init=0.0 reducer=sum metric="s"
  graph @update(%x: f64[N]@cpu) {
    %0 = reduce_sum(%x) : f64[]@cpu
    return (s.a: %0, s.b: %0)
  }
  graph @finalize(%s.a: f64[]@cpu) {
    return (s: %s.a)
  }
}
)");
  ASSERT_NE(m, nullptr);
  const size_t hash = IrHash(*m);
  PassPipeline p("dead-states");
  p.AddPass<EliminateDeadStates>();
  EXPECT_THAT(p.Run(*m),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("at the start of pipeline 'dead-states': verifier: @finalize must take every state")));
  EXPECT_EQ(IrHash(*m), hash);
}

}  // namespace
}  // namespace tally::passes
