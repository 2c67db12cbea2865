// Tests of the place pass's counter. The IR-in/IR-out cases (every value,
// state and merge/finalize value moves to the program's device; planning for
// a device the machine lacks needs no hardware) are in ir/place.ir.
#include <memory>

#include "engine/ir/parser.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/place.h"
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

// Verifies the values_moved counter: every parameter, result and state
// placed on meta counts once; placing on the device they are on counts none.
TEST(PlaceTest, ValuesMovedCountsEveryPlacedValue) {
  auto m = Parse(kCpu);
  ASSERT_NE(m, nullptr);
  Place place(ir::Device{"meta"});
  EXPECT_THAT(RunPassForTest(place, *m), IsOkAndHolds(true));
  // 1 param + 4 results in update, 2 + 1 in merge, 2 + 1 in finalize, 2 states.
  EXPECT_EQ(place.counters().at("values_moved"), 13);

  auto placed = Parse(kCpu);
  ASSERT_NE(placed, nullptr);
  Place again(ir::Device{"cpu"});
  EXPECT_THAT(RunPassForTest(again, *placed), IsOkAndHolds(false));
  EXPECT_EQ(again.counters().at("values_moved"), 0);
}

}  // namespace
}  // namespace tally::passes
