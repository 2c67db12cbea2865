// Tests of remove-host-syncs: one IR-in/IR-out case per rewrite rule, an
// unchanged case, and the compile error for a sync with no rewrite.
#include <memory>

#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/remove_host_syncs.h"
#include "tests/testlib/file_check.h"
#include "tests/testlib/ir_testing.h"
#include "tests/testlib/status_matchers.h"

namespace tally::passes {
namespace {

using ::tally::testing::FileCheck;
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

constexpr char kMaskedSum[] = R"(module {
  state @m.total : f32[]@cpu init=0.0 reducer=sum metric="m"
  graph @update(%v: f32[N]@cpu) {
    %0 = constant() {dtype="f32", value=0.0} : f32[]@cpu
    %1 = gt(%v, %0) : i1[N]@cpu
    %2 = masked_select(%v, %1) : f32[M]@cpu loc("m.cc:2")
    %3 = reduce_sum(%2) : f32[]@cpu
    return (m.total: %3)
  }
  graph @finalize(%m.total: f32[]@cpu) {
    return (m: %m.total)
  }
}
)";

// Verifies sum(masked_select(x, m)) -> sum(where(m, x, 0)).
TEST(RemoveHostSyncsTest, MaskedSumBecomesWhere) {
  auto m = Parse(kMaskedSum);
  RemoveHostSyncs pass;
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(true));
  EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
    // CHECK: graph @update
    // CHECK-NOT: masked_select
    // CHECK: where(%1, %v, %
    // CHECK: reduce_sum
  )"));
}

// Verifies max(masked_select(x, m)) uses -inf for the masked-out elements.
TEST(RemoveHostSyncsTest, MaskedMaxUsesItsIdentity) {
  std::string text = kMaskedSum;
  text.replace(text.find("%3 = reduce_sum"), 15, "%3 = reduce_max");
  auto m = Parse(text);
  RemoveHostSyncs pass;
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(true));
  EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
    // CHECK: constant() {dtype="f32", value=-inf}
    // CHECK: where(
    // CHECK: reduce_max(
  )"));
}

// Verifies size(nonzero(x), 0) -> reduce_sum(ne(x, 0)).
TEST(RemoveHostSyncsTest, NonzeroCountBecomesSumOfNe) {
  auto m = Parse(R"(module {
  state @m.n : i64[]@cpu init=0.0 reducer=sum metric="m"
  graph @update(%x: i64[N]@cpu) {
    %0 = nonzero(%x) : i64[M,1]@cpu
    %1 = size(%0) {dim=0} : i64[]@cpu
    return (m.n: %1)
  }
  graph @finalize(%m.n: i64[]@cpu) {
    return (m: %m.n)
  }
}
)");
  RemoveHostSyncs pass;
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(true));
  EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
    // CHECK-NOT: nonzero
    // CHECK: ne(%x, %0) : i1[N]@cpu
    // CHECK-NEXT: reduce_sum(%1) : i64[]@cpu
  )"));
}

// Verifies bincount -> a fixed-size histogram plus a deferred check state for
// values outside [0, minlength), named after the metric.
TEST(RemoveHostSyncsTest, BincountBecomesHistogramAndCheck) {
  auto m = Parse(R"(module {
  state @m.hist : i64[4]@cpu init=0.0 reducer=sum metric="m"
  graph @update(%x: i64[N]@cpu) {
    %0 = bincount(%x) {minlength=4} : i64[4]@cpu loc("m.cc:1")
    return (m.hist: %0)
  }
  graph @finalize(%m.hist: i64[4]@cpu) {
    return (m: %m.hist)
  }
}
)");
  RemoveHostSyncs pass;
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(true));
  std::string out = ir::PrintModule(*m);
  EXPECT_TRUE(FileCheck(out, R"chk(
    // CHECK: state @sync_check0 : i64[]@cpu init=0.0 reducer=sum check="bincount: {n} values outside [0, 4) (m.cc:1)" metric="m"
    // CHECK: histogram(%x) {size=4}
    // CHECK: logical_or(
    // CHECK: sync_check0:
    // CHECK: graph @finalize(%m.hist: i64[4]@cpu, %sync_check0: i64[]@cpu)
  )chk"));
}

// Verifies that a module without syncing ops is left unchanged.
TEST(RemoveHostSyncsTest, SyncFreeModuleIsUnchanged) {
  auto m = Parse(R"(module {
  state @m.s : f64[]@cpu init=0.0 reducer=sum metric="m"
  graph @update(%x: f64[N]@cpu) {
    %0 = reduce_sum(%x) : f64[]@cpu
    return (m.s: %0)
  }
  graph @finalize(%m.s: f64[]@cpu) {
    return (m: %m.s)
  }
}
)");
  RemoveHostSyncs pass;
  EXPECT_THAT(RunPassForTest(pass, *m), IsOkAndHolds(false));
}

// Verifies that a sync with no rewrite is a compile error naming the metric,
// the op and its DSL line.
TEST(RemoveHostSyncsTest, RejectsASyncItCannotRewrite) {
  auto m = Parse(R"(module {
  state @acc.s : i64[]@cpu init=0.0 reducer=sum metric="multiclass_accuracy"
  graph @update(%x: i64[N]@cpu) {
    %0 = nonzero(%x) : i64[M,1]@cpu loc("metrics/classification/classification.cc:88")
    %1 = reduce_sum(%0) : i64[]@cpu
    return (acc.s: %1)
  }
  graph @finalize(%acc.s: i64[]@cpu) {
    return (acc: %acc.s)
  }
}
)");
  RemoveHostSyncs pass;
  EXPECT_THAT(pass.Run(*m), StatusIs(absl::StatusCode::kFailedPrecondition,
                                     AllOf(HasSubstr("multiclass_accuracy"), HasSubstr("nonzero"),
                                           HasSubstr("syncs the host inside update"),
                                           HasSubstr("metrics/classification/classification.cc:88"))));
}

}  // namespace
}  // namespace tally::passes
