// Tests of the test helpers themselves: a FileCheck or matcher that never
// fails would make every test built on it pass vacuously.
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testlib/file_check.h"
#include "tests/testlib/status_matchers.h"

namespace tally::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kText[] = R"(module {
  state @a : f64[]@cpu
  graph @update(%x: f32[N]@cpu) {
    %0 = reduce_sum(%x) : f32[]@cpu
    return (a: %0)
  }
}
)";

// Verifies that matching checks pass, in both comment styles.
TEST(FileCheckTest, Matches) {
  EXPECT_TRUE(FileCheck(kText, R"(
    // CHECK-LABEL: graph @update
    // CHECK-NEXT:    %0 = reduce_sum(%x)
    // CHECK-SAME:    : f32[]@cpu
    // CHECK-NOT:     add(
    // CHECK:         return (a: %0)
  )"));
  EXPECT_TRUE(FileCheck(kText, "# CHECK: state @a\n# CHECK-COUNT-2: %x\n"));
}

// Verifies that each directive can fail, and that the failure shows the input.
TEST(FileCheckTest, Mismatches) {
  ::testing::AssertionResult r = FileCheck(kText, "// CHECK: state @b\n");
  EXPECT_FALSE(r);
  EXPECT_THAT(r.message(), HasSubstr("--- input ---"));
  EXPECT_FALSE(FileCheck(kText, "// CHECK: module {\n// CHECK-NEXT: graph @update\n"));
  EXPECT_FALSE(FileCheck(kText, "// CHECK: state @a\n// CHECK-NOT: reduce_sum\n// CHECK: return\n"));
  EXPECT_FALSE(FileCheck(kText, "// CHECK: reduce_sum\n// CHECK-SAME: f64\n"));
  EXPECT_FALSE(FileCheck(kText, "// CHECK: return\n// CHECK: state @a\n"));
}

// Verifies that a check text without CHECK lines is an error, not a pass.
TEST(FileCheckTest, NoChecksIsAFailure) {
  EXPECT_FALSE(FileCheck(kText, "state @a"));
  EXPECT_FALSE(FileCheck(kText, ""));
}

// Verifies the translation to LibTorch's directive syntax.
TEST(FileCheckTest, Translation) {
  EXPECT_EQ(TranslateChecks("  // CHECK-LABEL:   graph @g\n  # CHECK-NEXT: x\nnot a check\n"),
            "# CHECK: graph @g\n# CHECK-NEXT: x\n");
}

// Verifies the status matchers on OK and error values.
TEST(StatusMatchersTest, MatchAndMismatch) {
  absl::Status ok = absl::OkStatus();
  absl::Status bad = absl::InvalidArgumentError("mean: input 'value': wrong dtype");
  absl::StatusOr<int> five = 5;
  absl::StatusOr<int> none = absl::NotFoundError("gone");
  EXPECT_THAT(ok, IsOk());
  EXPECT_THAT(five, IsOk());
  EXPECT_THAT(bad, Not(IsOk()));
  EXPECT_THAT(none, Not(IsOk()));
  EXPECT_THAT(bad, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(bad, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("wrong dtype")));
  EXPECT_THAT(bad, Not(StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("wrong rank"))));
  EXPECT_THAT(bad, Not(StatusIs(absl::StatusCode::kInternal)));
  EXPECT_THAT(none, StatusIs(absl::StatusCode::kNotFound, "gone"));
  EXPECT_THAT(five, IsOkAndHolds(5));
  EXPECT_THAT(five, Not(IsOkAndHolds(6)));
  EXPECT_THAT(none, Not(IsOkAndHolds(5)));
  EXPECT_THAT(five, IsOkAndHolds(::testing::Gt(4)));
}

// Verifies the assign macro.
TEST(StatusMatchersTest, AssertOkAndAssign) {
  TALLY_ASSERT_OK_AND_ASSIGN(int v, absl::StatusOr<int>(7));
  EXPECT_EQ(v, 7);
}

}  // namespace
}  // namespace tally::testing
