// Tests of the fuse pass through its C++ API: the fusion groups it reports,
// its counters, and the reference policy (which tally_opt does not set). The
// IR-in/IR-out cases (a composite stays whole where its fused kernel exists,
// is decomposed into ATen ops elsewhere; reg_stats pruning) are in
// ir/fuse.ir.
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"

#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/fuse.h"
#include "passes/place.h"
#include "tests/testlib/file_check.h"
#include "tests/testlib/ir_testing.h"
#include "tests/testlib/status_matchers.h"

namespace tally::passes {
namespace {

using ::tally::testing::FileCheck;
using ::tally::testing::IsOkAndHolds;
using ::tally::testing::RunPassForTest;

constexpr char kConfmat[] = R"ir(module {
  state @a.check0 : i64[]@DEV init=0.0 reducer=sum check="target: {n} values outside [0, 3)" metric="a"
  state @a.confmat : i64[3,3]@DEV init=0.0 reducer=sum metric="a"
  graph @update(%preds: f32[N,3]@DEV, %target: i64[N]@DEV) {
    %0, %1, %2 = mc_confmat(%preds, %target) {num_classes=3} : i64[3,3]@DEV, i64[]@DEV, i64[]@DEV
    return (a.check0: %1, a.confmat: %0)
  }
  graph @finalize(%a.check0: i64[]@DEV, %a.confmat: i64[3,3]@DEV) {
    return (a: %a.confmat)
  }
}
)ir";

std::unique_ptr<ir::Module> ParseOn(const std::string& device) {
  std::string text = kConfmat;
  for (size_t p; (p = text.find("@DEV")) != std::string::npos;) text.replace(p, 4, "@" + device);
  auto m = ir::ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

// Verifies that on cpu the composite is kept and reported as a fusion group.
TEST(FuseTest, KeepsCompositeWithAFusedKernel) {
  auto m = ParseOn("cpu");
  Fuse pass(ir::Device{"cpu"}, FusePolicy::kFused);
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(false));
  ASSERT_EQ(pass.groups().size(), 1u);
  EXPECT_THAT(pass.groups()[0], ::testing::HasSubstr("mc_confmat {num_classes=3}: 1 fused kernel for"));
  EXPECT_EQ(pass.counters().at("aten_calls_per_update"), 1);
}

// Verifies that on cuda:1 (no fused kernel) a decomposed composite reports
// no fusion group (the ATen ops it becomes: ir/fuse.ir).
TEST(FuseTest, DecomposedCompositeIsNoFusionGroup) {
  auto m = ParseOn("cuda:1");
  Fuse pass(ir::Device{"cuda:1"}, FusePolicy::kFused);
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(true));
  EXPECT_TRUE(pass.groups().empty());
}

// Verifies that the reference policy decomposes even where a kernel exists.
TEST(FuseTest, ReferencePolicyAlwaysDecomposes) {
  auto m = ParseOn("cpu");
  Fuse pass(ir::Device{"cpu"}, FusePolicy::kReference);
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(true));
  EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
    // CHECK-NOT: mc_confmat
    // CHECK: argmax(
  )"));
  EXPECT_GT(pass.counters().at("aten_calls_per_update"), 5);
}

// A reg_stats whose error moments (results 7..9) feed a state, or not.
std::string RegStatsModule(bool error_moments_used) {
  std::string ret = error_moments_used ? ", r.m2_error: %9" : "";
  std::string state = error_moments_used ? "  state @r.m2_error : f64[1]@cpu init=0.0 reducer=sum metric=\"r\"\n" : "";
  return absl::StrCat(R"ir(module {
  state @r.sse : f64[]@cpu init=0.0 reducer=sum metric="r"
)ir",
                      state, R"ir(  graph @update(%preds: f32[N]@cpu, %target: f32[N]@cpu) {
    %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14 = reg_stats(%preds, %target) : i64[]@cpu, f64[1]@cpu, f64[1]@cpu, f64[1]@cpu, f64[1]@cpu, f64[1]@cpu, f64[1]@cpu, f64[1]@cpu, f64[1]@cpu, f64[1]@cpu, f64[1]@cpu, f64[1]@cpu, f64[1]@cpu, f64[]@cpu, f64[]@cpu
    return (r.sse: %13)ir",
                      ret, R"ir()
  }
  graph @finalize(%r.sse: f64[]@cpu)ir",
                      error_moments_used ? ", %r.m2_error: f64[1]@cpu" : "", R"ir() {
    return (r: %r.sse)
  }
}
)ir");
}

// Verifies the `pruned` counter: a reg_stats none of whose error moments is
// read is pruned once; one whose error moments feed a state is not (the IR
// of both: ir/fuse.ir).
TEST(FuseTest, PrunedCounterCountsNarrowedRegStats) {
  auto unused = ir::ParseModule(RegStatsModule(false));
  ASSERT_TRUE(unused.ok()) << unused.status();
  Fuse pass(ir::Device{"cpu"}, FusePolicy::kFused);
  EXPECT_THAT(RunPassForTest(pass, **unused), IsOkAndHolds(true));
  EXPECT_EQ(pass.counters().at("pruned"), 1);
  auto used = ir::ParseModule(RegStatsModule(true));
  ASSERT_TRUE(used.ok()) << used.status();
  Fuse again(ir::Device{"cpu"}, FusePolicy::kFused);
  EXPECT_THAT(RunPassForTest(again, **used), IsOkAndHolds(false));
  EXPECT_EQ(again.counters().at("pruned"), 0);
}

}  // namespace
}  // namespace tally::passes
