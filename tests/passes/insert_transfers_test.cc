// Tests of insert-transfers: every input arrives on any device ("*") and
// feeds exactly one explicit transfer node; a second run changes nothing.
#include <memory>

#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/insert_transfers.h"
#include "passes/prove_single_device.h"
#include "tests/testlib/file_check.h"
#include "tests/testlib/ir_testing.h"
#include "tests/testlib/status_matchers.h"

namespace tally::passes {
namespace {

using ::tally::testing::FileCheck;
using ::tally::testing::IsOkAndHolds;
using ::tally::testing::RunPassForTest;
using ::tally::testing::StatusIs;

constexpr char kModule[] = R"(module {
  state @m.s : f64[]@cuda:1 init=0.0 reducer=sum metric="m"
  graph @update(%x: f64[N]@cuda:1, %w: f64[N]@cuda:1) {
    %0 = mul(%x, %w) : f64[N]@cuda:1
    %1 = reduce_sum(%0) : f64[]@cuda:1
    return (m.s: %1)
  }
  graph @finalize(%m.s: f64[]@cuda:1) {
    return (m: %m.s)
  }
}
)";

// Verifies the inserted transfers and that the device proof accepts them as
// the only device-changing edges.
TEST(InsertTransfersTest, OneExplicitTransferPerInput) {
  auto m = ir::ParseModule(kModule);
  ASSERT_TRUE(m.ok());
  InsertTransfers pass(ir::Device{"cuda:1"});
  EXPECT_THAT(RunPassForTest(pass, **m), IsOkAndHolds(true));
  EXPECT_TRUE(FileCheck(ir::PrintModule(**m), R"(
    // CHECK: graph @update(%x: f64[N]@*, %w: f64[N]@*) {
    // CHECK-NEXT: %0 = transfer(%x) {device="cuda:1"} : f64[N]@cuda:1
    // CHECK-NEXT: %1 = transfer(%w) {device="cuda:1"} : f64[N]@cuda:1
    // CHECK-NEXT: %2 = mul(%0, %1) : f64[N]@cuda:1
  )"));
  auto proof = ProveSingleDevice(**m, ir::Device{"cuda:1"});
  ASSERT_TRUE(proof.ok()) << proof.status();
  EXPECT_EQ(proof->edges.at("update: input -> explicit transfer to cuda:1"), 2);
  InsertTransfers again(ir::Device{"cuda:1"});
  EXPECT_THAT(RunPassForTest(again, **m), IsOkAndHolds(false));
}

// Verifies that the proof rejects an input used directly from "*" (a
// device-crossing edge that is not an explicit transfer).
TEST(InsertTransfersTest, ProofRejectsAnUntransferredInput) {
  std::string text = kModule;
  text.replace(text.find("%x: f64[N]@cuda:1"), 17, "%x: f64[N]@*");
  auto m = ir::ParseModule(text);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_THAT(ProveSingleDevice(**m, ir::Device{"cuda:1"}),
              StatusIs(absl::StatusCode::kFailedPrecondition, ::testing::HasSubstr("mul")));
}

}  // namespace
}  // namespace tally::passes
