// Tests of remove-host-syncs through the C++ API: the status a sync with no
// rewrite fails with. The IR-in/IR-out cases (one per rewrite rule, an
// unchanged case, the error's text) are in ir/remove_host_syncs.ir.
#include <memory>

#include "engine/ir/parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/remove_host_syncs.h"
#include "tests/testlib/status_matchers.h"

namespace tally::passes {
namespace {

using ::tally::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::unique_ptr<ir::Module> Parse(absl::string_view text) {
  auto m = ir::ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

// Verifies that a sync with no rewrite is a FailedPrecondition naming the
// metric, the op and its DSL line.
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
