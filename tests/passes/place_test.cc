// Tests of the place pass: IR in, IR out. Every value, state and
// merge/finalize value moves to the program's device; planning for a device
// the machine lacks needs no hardware.
#include <memory>
#include <string>

#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/op_verifier.h"
#include "passes/pipeline.h"
#include "passes/place.h"
#include "tests/testlib/file_check.h"
#include "tests/testlib/ir_testing.h"
#include "tests/testlib/status_matchers.h"

namespace tally::passes {
namespace {

using ::tally::testing::FileCheck;
using ::tally::testing::IrHash;
using ::tally::testing::IsOk;
using ::tally::testing::IsOkAndHolds;
using ::tally::testing::RunPassForTest;
using ::tally::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

std::unique_ptr<ir::Module> Parse(absl::string_view text) {
  auto m = ir::ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

constexpr char kCpu[] = R"(module {
  state @m.mu : f64[]@cpu init=0.0 reducer=custom group="m.g" metric="m"
  state @m.hi : f64[]@cpu init=-inf reducer=max metric="m"
  graph @update(%x: f64[N]@cpu) {
    %0 = reduce_sum(%x) : f64[]@cpu
    %1 = constant() {dtype="f64", value=2.0} : f64[]@cpu
    %2 = div(%0, %1) : f64[]@cpu
    %3 = reduce_max(%x) : f64[]@cpu
    return (m.mu: %2, m.hi: %3)
  }
  graph @merge.m.g(%a.m.mu: f64[]@cpu, %b.m.mu: f64[]@cpu) {
    %0 = add(%a.m.mu, %b.m.mu) : f64[]@cpu
    return (m.mu: %0)
  }
  graph @finalize(%m.mu: f64[]@cpu, %m.hi: f64[]@cpu) {
    %0 = add(%m.mu, %m.hi) : f64[]@cpu
    return (m: %0)
  }
}
)";

// Verifies that placing on meta moves every parameter, result, constant and
// state, in every graph, and that the module still verifies.
TEST(PlaceTest, MovesEverythingToTheDevice) {
  auto m = Parse(kCpu);
  ASSERT_NE(m, nullptr);
  Place place(ir::Device{"meta"});
  EXPECT_THAT(RunPassForTest(place, *m), IsOkAndHolds(true));
  const std::string out = ir::PrintModule(*m);
  EXPECT_TRUE(FileCheck(out, R"(
    // CHECK:      state @m.mu : f64[]@meta init=0.0 reducer=custom group="m.g"
    // CHECK-NEXT: state @m.hi : f64[]@meta init=-inf reducer=max
    // CHECK-NEXT: graph @update(%x: f64[N]@meta) {
    // CHECK-NEXT:   %0 = reduce_sum(%x) : f64[]@meta
    // CHECK-NEXT:   %1 = constant() {dtype="f64", value=2.0} : f64[]@meta
    // CHECK-NEXT:   %2 = div(%0, %1) : f64[]@meta
    // CHECK:      graph @merge.m.g(%a.m.mu: f64[]@meta, %b.m.mu: f64[]@meta) {
    // CHECK-NEXT:   %0 = add(%a.m.mu, %b.m.mu) : f64[]@meta
    // CHECK:      graph @finalize(%m.mu: f64[]@meta, %m.hi: f64[]@meta) {
  )"));
  EXPECT_THAT(out, Not(HasSubstr("@cpu")));
  EXPECT_THAT(ops::VerifyModule(*m), IsOk());
  // 1 param + 4 results in update, 2 + 1 in merge, 2 + 1 in finalize, 2 states.
  EXPECT_EQ(place.counters().at("values_moved"), 13);
}

// Verifies that a device this machine lacks can be planned for.
TEST(PlaceTest, PlansForADeviceWithoutHardware) {
  auto m = Parse(kCpu);
  ASSERT_NE(m, nullptr);
  Place place(ir::Device{"cuda:1"});
  EXPECT_THAT(RunPassForTest(place, *m), IsOkAndHolds(true));
  EXPECT_THAT(ir::PrintModule(*m), Not(HasSubstr("@cpu")));
  EXPECT_THAT(ir::PrintModule(*m), HasSubstr("%x: f64[N]@cuda:1"));
  EXPECT_THAT(ops::VerifyModule(*m), IsOk());
}

// Verifies that a module already on the device is left alone.
TEST(PlaceTest, UnchangedWhenAlreadyPlaced) {
  auto m = Parse(kCpu);
  ASSERT_NE(m, nullptr);
  Place place(ir::Device{"cpu"});
  EXPECT_THAT(RunPassForTest(place, *m), IsOkAndHolds(false));
  EXPECT_EQ(ir::PrintModule(*m), kCpu);
  EXPECT_EQ(place.counters().at("values_moved"), 0);
}

// Verifies that the pipeline rejects a malformed module before placing it.
TEST(PlaceTest, MalformedModuleIsRejected) {
  auto m = Parse(kCpu);
  ASSERT_NE(m, nullptr);
  m->merges.clear();
  const size_t hash = IrHash(*m);
  PassPipeline p("place-only");
  p.AddPass<Place>(ir::Device{"meta"});
  EXPECT_THAT(p.Run(*m),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("at the start of pipeline 'place-only': verifier: state @m.mu has no merge graph")));
  EXPECT_EQ(IrHash(*m), hash);
}

}  // namespace
}  // namespace tally::passes
