// Tests of the narrow-states pass's counters. The IR-in/IR-out cases (a
// C x C matrix state that finalize reads only through confmat_part becomes
// the rows it reads; a matrix read whole, one whose batch matrix has another
// reader, or one not made by mc_confmat stays) are in ir/narrow_states.ir.
#include <memory>
#include <string>

#include "absl/strings/str_replace.h"
#include "engine/ir/parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/narrow_states.h"
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

// Recall per class, tp / target, reading the matrix through two parts.
constexpr char kRecall[] = R"ir(module {
  state @m.check0 : i64[]@cpu init=0.0 reducer=sum check="target: {n} values outside [0, 3)" metric="m"
  state @m.confmat : i64[3,3]@cpu init=0.0 reducer=sum metric="m"
  graph @update(%preds: f32[N,3]@cpu, %target: i64[N]@cpu) {
    %0, %1, %2 = mc_confmat(%preds, %target) {ignore_index=1, num_classes=3} : i64[3,3]@cpu, i64[]@cpu, i64[]@cpu loc("m.cc:10")
    return (m.check0: %1, m.confmat: %0)
  }
  graph @finalize(%m.check0: i64[]@cpu, %m.confmat: i64[3,3]@cpu) {
    %0 = confmat_part(%m.confmat) {part="target"} : i64[3]@cpu loc("m.cc:20")
    %1 = confmat_part(%m.confmat) {part="tp"} : i64[3]@cpu loc("m.cc:21")
    %2 = cast(%1) {dtype="f64"} : f64[3]@cpu
    %3 = cast(%0) {dtype="f64"} : f64[3]@cpu
    %4 = safe_div(%2, %3) {zero_division=0.0} : f64[3]@cpu
    return (m: %4)
  }
}
)ir";

// Verifies the counters: one state narrowed, its bytes before (the i64
// check counter and the 3x3 matrix) and after (the counter and two rows of 3;
// read only through totals, two totals), and none for a matrix read whole.
TEST(NarrowStatesTest, CountersCountNarrowedStatesAndTheirBytes) {
  auto m = Parse(kRecall);
  ASSERT_NE(m, nullptr);
  NarrowStates pass;
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(true));
  EXPECT_EQ(pass.counters().at("states_narrowed"), 1);
  EXPECT_EQ(pass.counters().at("state_bytes_before"), 8 + 72);
  EXPECT_EQ(pass.counters().at("state_bytes_after"), 8 + 48);

  const std::string micro = absl::StrReplaceAll(
      kRecall, {{"    %2 = cast(%1) {dtype=\"f64\"} : f64[3]@cpu\n    %3 = cast(%0) {dtype=\"f64\"} : f64[3]@cpu\n"
                 "    %4 = safe_div(%2, %3) {zero_division=0.0} : f64[3]@cpu\n    return (m: %4)",
                 "    %2 = reduce_sum(%1) : i64[]@cpu\n    %3 = reduce_sum(%0) : i64[]@cpu\n"
                 "    %4 = safe_div(%2, %3) {zero_division=0.0} : i64[]@cpu\n    return (m: %4)"}});
  auto totals = Parse(micro);
  ASSERT_NE(totals, nullptr);
  NarrowStates again;
  EXPECT_THAT(RunPassForTest(again, *totals), IsOkAndHolds(true));
  EXPECT_EQ(again.counters().at("states_narrowed"), 1);
  EXPECT_EQ(again.counters().at("state_bytes_after"), 8 + 16);

  auto whole = Parse(absl::StrReplaceAll(kRecall, {{"return (m: %4)", "return (m: %4, cm: %m.confmat)"}}));
  ASSERT_NE(whole, nullptr);
  NarrowStates kept;
  EXPECT_THAT(RunPassForTest(kept, *whole), IsOkAndHolds(false));
  EXPECT_EQ(kept.counters().at("states_narrowed"), 0);
}

}  // namespace
}  // namespace tally::passes
