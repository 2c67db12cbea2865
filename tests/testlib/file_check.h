// FileCheck for tests: match text (usually printed IR) against check lines.
//
// A thin wrapper over LibTorch's torch::jit::testing::FileCheck, which throws
// on a mismatch; here a mismatch is a testing::AssertionResult, so
//
//   EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
//     // CHECK-LABEL: graph @update
//     // CHECK-NEXT:    %0 = reduce_sum(%x) : f64[]@cpu
//     // CHECK-NOT:     reduce_sum
//     // CHECK:         return (s.a: %0)
//   )"));
//
// Check lines may start with `//` (MLIR style) or `#` (TorchScript style).
// Directives: CHECK, CHECK-LABEL (a plain CHECK here), CHECK-NEXT,
// CHECK-SAME, CHECK-NOT, CHECK-DAG, CHECK-COUNT-<n> and
// CHECK-COUNT-EXACTLY-<n>. LibTorch 1.13's FileCheck matches literal text
// only: there are no regexes or `[[X:...]]` captures, which Tally's printer
// makes unnecessary (node results are renumbered %0, %1, ... in order).
//
// The header is free of LibTorch so that tests including it compile fast.
#ifndef TALLY_TESTS_TESTLIB_FILE_CHECK_H_
#define TALLY_TESTS_TESTLIB_FILE_CHECK_H_

#include <string>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace tally::testing {

// FileCheck succeeds when `text` satisfies the check lines in `checks`.
// Text without any check line is a failure (a test that checks nothing).
::testing::AssertionResult FileCheck(absl::string_view text, absl::string_view checks);

// TranslateChecks rewrites `// CHECK...:` lines into LibTorch's `# CHECK...:`
// form and CHECK-LABEL into CHECK; other lines are dropped. Exposed for tests.
std::string TranslateChecks(absl::string_view checks);

}  // namespace tally::testing

#endif  // TALLY_TESTS_TESTLIB_FILE_CHECK_H_
