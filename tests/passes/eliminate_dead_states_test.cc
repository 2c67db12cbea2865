// Tests of the eliminate-dead-states pass's counters. The IR-in/IR-out
// cases (states no output reads go, with the nodes that only fed them;
// deferred-check counters and live custom-merge groups stay) are in
// ir/eliminate_dead_states.ir.
#include <memory>

#include "engine/ir/parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/eliminate_dead_states.h"
#include "tests/testlib/ir_testing.h"
#include "tests/testlib/status_matchers.h"

namespace tally::passes {
namespace {

using ::tally::testing::IsOkAndHolds;
using ::tally::testing::RunPassForTest;

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

// Verifies the counters over the module of ir/eliminate_dead_states.ir's
// first case: two states go (m.dead, d.hi) and five nodes (finalize's neg
// and exp; update's exp, the reduce_sum of m.dead and the reduce_max of d.hi).
TEST(EliminateDeadStatesTest, CountersCountRemovedStatesAndNodes) {
  auto m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  EliminateDeadStates pass;
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(true));
  EXPECT_EQ(pass.counters().at("states_removed"), 2);
  EXPECT_EQ(pass.counters().at("nodes_removed"), 5);
}

}  // namespace
}  // namespace tally::passes
