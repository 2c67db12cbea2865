// Tests of insert-transfers through the C++ API: its counter and the device
// proof of its output. The IR-in/IR-out cases (every input arrives on any
// device ("*") and feeds one explicit transfer; a second run changes
// nothing) are in ir/insert_transfers.ir.
#include <memory>
#include <string>

#include "engine/ir/parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/insert_transfers.h"
#include "passes/prove_single_device.h"
#include "tests/testlib/ir_testing.h"
#include "tests/testlib/status_matchers.h"

namespace tally::passes {
namespace {

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

// Verifies that the device proof counts the inserted transfers as the only
// device-changing edges, one per input (the IR: ir/insert_transfers.ir).
TEST(InsertTransfersTest, ProofCountsOneTransferPerInput) {
  auto m = ir::ParseModule(kModule);
  ASSERT_TRUE(m.ok());
  InsertTransfers pass(ir::Device{"cuda:1"});
  EXPECT_THAT(RunPassForTest(pass, **m), IsOkAndHolds(true));
  EXPECT_EQ(pass.counters().at("transfers_inserted"), 2);
  auto proof = ProveSingleDevice(**m, ir::Device{"cuda:1"});
  ASSERT_TRUE(proof.ok()) << proof.status();
  EXPECT_EQ(proof->edges.at("update: input -> explicit transfer to cuda:1"), 2);
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
