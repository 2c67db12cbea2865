// Tests of the narrow-states pass: IR in, IR out. A C x C matrix state that
// finalize reads only through confmat_part becomes the rows it reads
// (mc_marginals in update, select in finalize); a matrix read whole, one
// whose batch matrix has another reader, or one not made by mc_confmat
// stays as it is.
#include <memory>
#include <string>

#include "absl/strings/str_replace.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/narrow_states.h"
#include "passes/pipeline.h"
#include "passes/registry.h"
#include "tests/testlib/file_check.h"
#include "tests/testlib/ir_testing.h"
#include "tests/testlib/status_matchers.h"

namespace tally::passes {
namespace {

using ::tally::testing::FileCheck;
using ::tally::testing::IsOkAndHolds;
using ::tally::testing::RunPassForTest;
using ::testing::HasSubstr;
using ::testing::Not;

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

// Verifies that the matrix becomes the two rows read, in canonical order
// (tp before target), with the check counter rewired to the new node and
// each confmat_part replaced by a select of its row.
TEST(NarrowStatesTest, NarrowsAMatrixReadThroughItsParts) {
  auto m = Parse(kRecall);
  ASSERT_NE(m, nullptr);
  NarrowStates pass;
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(true));
  const std::string out = ir::PrintModule(*m);
  EXPECT_TRUE(FileCheck(out, R"(
    // CHECK-LABEL: module {
    // CHECK-NEXT:    state @m.check0 : i64[]@cpu
    // CHECK-NEXT:    state @m.confmat : i64[2,3]@cpu init=0.0 reducer=sum metric="m"
    // CHECK-NEXT:    graph @update(%preds: f32[N,3]@cpu, %target: i64[N]@cpu) {
    // CHECK-NEXT:      %0, %1, %2 = mc_marginals(%preds, %target) {ignore_index=1, num_classes=3, parts="tp,target"} : i64[2,3]@cpu, i64[]@cpu, i64[]@cpu loc("m.cc:10")
    // CHECK-NEXT:      return (m.check0: %1, m.confmat: %0)
    // CHECK:         graph @finalize(%m.check0: i64[]@cpu, %m.confmat: i64[2,3]@cpu) {
    // CHECK-DAG:       select(%m.confmat) {dim=0, index=1} : i64[3]@cpu loc("m.cc:20")
    // CHECK-DAG:       select(%m.confmat) {dim=0, index=0} : i64[3]@cpu loc("m.cc:21")
    // CHECK:           safe_div
  )"));
  EXPECT_THAT(out, Not(HasSubstr("confmat_part")));
  EXPECT_THAT(out, Not(HasSubstr("mc_confmat")));
  EXPECT_EQ(pass.counters().at("states_narrowed"), 1);
  EXPECT_EQ(pass.counters().at("state_bytes_before"), 8 + 72);
  EXPECT_EQ(pass.counters().at("state_bytes_after"), 8 + 48);
}

// Verifies the must-not-narrow cases: the pass says unchanged and the IR is
// identical when a result reads the matrix whole (a confusion matrix in the
// collection), when another update node reads the batch's matrix, and when
// the matrix does not come from mc_confmat.
TEST(NarrowStatesTest, KeepsAMatrixReadWholeOrNotFromMcConfmat) {
  const std::string read_whole = absl::StrReplaceAll(kRecall, {{"return (m: %4)", "return (m: %4, cm: %m.confmat)"}});
  const std::string batch_read =
      absl::StrReplaceAll(kRecall, {{"    return (m.check0: %1, m.confmat: %0)",
                                     "    %3 = reduce_sum(%0) : i64[]@cpu\n    return (m.check0: %3, m.confmat: %0)"}});
  const std::string histogram = R"ir(module {
  state @m.confmat : i64[2,2]@cpu init=0.0 reducer=sum metric="m"
  graph @update(%idx: i64[N]@cpu) {
    %0 = histogram(%idx) {size=4} : i64[4]@cpu
    %1 = reshape(%0) {shape=[2, 2]} : i64[2,2]@cpu
    return (m.confmat: %1)
  }
  graph @finalize(%m.confmat: i64[2,2]@cpu) {
    %0 = confmat_part(%m.confmat) {part="tp"} : i64[2]@cpu
    return (m: %0)
  }
}
)ir";
  for (const std::string& text : {read_whole, batch_read, histogram}) {
    auto m = Parse(text);
    ASSERT_NE(m, nullptr);
    const std::string before = ir::PrintModule(*m);
    NarrowStates pass;
    EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(false)) << text;
    EXPECT_EQ(ir::PrintModule(*m), before);
    EXPECT_EQ(pass.counters().at("states_narrowed"), 0);
  }
}

// Verifies that parts read only through their totals (micro averages) make
// the state the totals, i64[P], and each sum a select of one total.
TEST(NarrowStatesTest, MicroReadsKeepOnlyTotals) {
  const std::string micro = absl::StrReplaceAll(
      kRecall, {{"    %2 = cast(%1) {dtype=\"f64\"} : f64[3]@cpu\n    %3 = cast(%0) {dtype=\"f64\"} : f64[3]@cpu\n"
                 "    %4 = safe_div(%2, %3) {zero_division=0.0} : f64[3]@cpu\n    return (m: %4)",
                 "    %2 = reduce_sum(%1) : i64[]@cpu\n    %3 = reduce_sum(%0) : i64[]@cpu\n"
                 "    %4 = safe_div(%2, %3) {zero_division=0.0} : i64[]@cpu\n    return (m: %4)"}});
  auto m = Parse(micro);
  ASSERT_NE(m, nullptr);
  NarrowStates pass;
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(true));
  const std::string out = ir::PrintModule(*m);
  EXPECT_TRUE(FileCheck(out, R"(
    // CHECK: state @m.confmat : i64[2]@cpu
    // CHECK: mc_marginals(%preds, %target) {ignore_index=1, num_classes=3, parts="tp,target", totals=true} : i64[2]@cpu
    // CHECK-DAG: select(%m.confmat) {dim=0, index=0} : i64[]@cpu
    // CHECK-DAG: select(%m.confmat) {dim=0, index=1} : i64[]@cpu
  )")) << out;
  EXPECT_THAT(out, Not(HasSubstr("reduce_sum")));
  EXPECT_EQ(pass.counters().at("state_bytes_after"), 8 + 16);
}

// Verifies that every part a reader names is kept, weighted kappa's error
// sums included, and that the pass is available by name to tally_opt.
TEST(NarrowStatesTest, KeepsEveryPartReadAndIsMadeByName) {
  const std::string all =
      absl::StrReplaceAll(kRecall, {{"    %2 = cast(%1) {dtype=\"f64\"} : f64[3]@cpu",
                                     "    %5 = confmat_part(%m.confmat) {part=\"sq_err\"} : i64[3]@cpu\n"
                                     "    %6 = confmat_part(%m.confmat) {part=\"abs_err\"} : i64[3]@cpu\n"
                                     "    %7 = confmat_part(%m.confmat) {part=\"pred\"} : i64[3]@cpu\n"
                                     "    %8 = add(%5, %6) : i64[3]@cpu\n"
                                     "    %9 = add(%8, %7) : i64[3]@cpu\n"
                                     "    %10 = add(%9, %1) : i64[3]@cpu\n"
                                     "    %2 = cast(%10) {dtype=\"f64\"} : f64[3]@cpu"}});
  auto m = Parse(all);
  ASSERT_NE(m, nullptr);
  auto pass = CreatePass("narrow-states");
  ASSERT_TRUE(pass.ok()) << pass.status();
  EXPECT_THAT(RunPassForTest(**pass, *m), IsOkAndHolds(true));
  EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
    // CHECK: state @m.confmat : i64[5,3]@cpu
    // CHECK: mc_marginals(%preds, %target) {ignore_index=1, num_classes=3, parts="tp,target,pred,abs_err,sq_err"} : i64[5,3]@cpu
    // CHECK-DAG: select(%m.confmat) {dim=0, index=4}
    // CHECK-DAG: select(%m.confmat) {dim=0, index=3}
    // CHECK-DAG: select(%m.confmat) {dim=0, index=2}
  )"));
}

}  // namespace
}  // namespace tally::passes
