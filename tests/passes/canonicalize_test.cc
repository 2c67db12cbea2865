// Tests of the canonicalize pass's counters. The IR-in/IR-out cases (one
// per rewrite rule, an unchanged case, a rejected one) are in
// ir/canonicalize.ir.
#include <memory>

#include "engine/ir/parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/canonicalize.h"
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

// Verifies the counters: one folded constant (0.1f + 0.2f), one widened
// accumulator (a float32 sum cast to float64), none of the other kind.
TEST(CanonicalizeTest, CountersCountEachRewrite) {
  auto fold = Parse(R"(module {
  state @m.s : f32[]@cpu init=0.0 reducer=sum metric="m"
  graph @update(%x: f32[N]@cpu) {
    %0 = constant() {dtype="f32", value=0.1} : f32[]@cpu
    %1 = constant() {dtype="f32", value=0.2} : f32[]@cpu
    %2 = add(%0, %1) : f32[]@cpu
    %3 = mul(%x, %2) : f32[N]@cpu
    %4 = reduce_sum(%3) : f32[]@cpu
    return (m.s: %4)
  }
  graph @finalize(%m.s: f32[]@cpu) {
    return (m: %m.s)
  }
}
)");
  ASSERT_NE(fold, nullptr);
  Canonicalize pass;
  EXPECT_THAT(RunPassForTest(pass, *fold), IsOkAndHolds(true));
  EXPECT_EQ(pass.counters().at("constants_folded"), 1);
  EXPECT_EQ(pass.counters().at("accumulators_widened"), 0);

  auto widen = Parse(R"(module {
  state @m.s : f64[]@cpu init=0.0 reducer=sum metric="m"
  graph @update(%x: f32[N]@cpu) {
    %0 = reduce_sum(%x) : f32[]@cpu
    %1 = cast(%0) {dtype="f64"} : f64[]@cpu
    return (m.s: %1)
  }
  graph @finalize(%m.s: f64[]@cpu) {
    return (m: %m.s)
  }
}
)");
  ASSERT_NE(widen, nullptr);
  Canonicalize again;
  EXPECT_THAT(RunPassForTest(again, *widen), IsOkAndHolds(true));
  EXPECT_EQ(again.counters().at("accumulators_widened"), 1);
  EXPECT_EQ(again.counters().at("constants_folded"), 0);
}

}  // namespace
}  // namespace tally::passes
