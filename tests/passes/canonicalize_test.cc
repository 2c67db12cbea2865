// Tests of the canonicalize pass: IR in, IR out, one case per rewrite rule,
// an unchanged case, and a case that must not be rewritten.
#include <memory>

#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/canonicalize.h"
#include "tests/testlib/file_check.h"
#include "tests/testlib/ir_testing.h"
#include "tests/testlib/status_matchers.h"

namespace tally::passes {
namespace {

using ::tally::testing::FileCheck;
using ::tally::testing::IsOkAndHolds;
using ::tally::testing::RunPassForTest;

std::unique_ptr<ir::Module> Parse(absl::string_view text) {
  auto m = ir::ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

// Verifies constant folding of scalar constants, rounded to the result dtype.
TEST(CanonicalizeTest, FoldsScalarConstants) {
  auto m = Parse(R"(module {
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
  Canonicalize pass;
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(true));
  EXPECT_EQ(pass.counters().at("constants_folded"), 1);
  // 0.1f + 0.2f in float32 is 0.300000012 (not 0.3 in double).
  EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
    // CHECK: graph @update
    // CHECK-NOT: add(
    // CHECK: constant() {dtype="f32", value=0.30000001192092896}
    // CHECK-NEXT: mul(%x, %0)
  )"));
}

// Verifies the algebraic identities x*1, x+0 and cast-to-own-dtype.
TEST(CanonicalizeTest, RemovesIdentities) {
  auto m = Parse(R"(module {
  state @m.s : f64[]@cpu init=0.0 reducer=sum metric="m"
  graph @update(%x: f64[N]@cpu) {
    %0 = constant() {dtype="f64", value=1.0} : f64[]@cpu
    %1 = mul(%x, %0) : f64[N]@cpu
    %2 = cast(%1) {dtype="f64"} : f64[N]@cpu
    %3 = reduce_sum(%2) : f64[]@cpu
    %4 = constant() {dtype="f64", value=0.0} : f64[]@cpu
    %5 = add(%3, %4) : f64[]@cpu
    return (m.s: %5)
  }
  graph @finalize(%m.s: f64[]@cpu) {
    return (m: %m.s)
  }
}
)");
  Canonicalize pass;
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(true));
  EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
    // CHECK: graph @update(%x: f64[N]@cpu) {
    // CHECK-NEXT: %0 = reduce_sum(%x) : f64[]@cpu
    // CHECK-NEXT: return (m.s: %0)
  )"));
}

// Verifies that a float32 sum cast to float64 accumulates in float64.
TEST(CanonicalizeTest, WidensFloatAccumulators) {
  auto m = Parse(R"(module {
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
  Canonicalize pass;
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(true));
  EXPECT_EQ(pass.counters().at("accumulators_widened"), 1);
  EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
    // CHECK: %0 = cast(%x) {dtype="f64"} : f64[N]@cpu
    // CHECK-NEXT: %1 = reduce_sum(%0) : f64[]@cpu
    // CHECK-NEXT: return (m.s: %1)
  )"));
}

// Verifies that a change of dtype is not an identity: x + 0 with an f32
// constant on an i64 input keeps its add (the result is f32).
TEST(CanonicalizeTest, KeepsTypeChangingArithmetic) {
  auto m = Parse(R"(module {
  state @m.s : f32[]@cpu init=0.0 reducer=sum metric="m"
  graph @update(%x: i64[N]@cpu) {
    %0 = constant() {dtype="f32", value=0.0} : f32[]@cpu
    %1 = add(%x, %0) : f32[N]@cpu
    %2 = reduce_sum(%1) : f32[]@cpu
    return (m.s: %2)
  }
  graph @finalize(%m.s: f32[]@cpu) {
    return (m: %m.s)
  }
}
)");
  Canonicalize pass;
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(false));
  EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
    // CHECK: add(%x, %0) : f32[N]@cpu
  )"));
}

}  // namespace
}  // namespace tally::passes
