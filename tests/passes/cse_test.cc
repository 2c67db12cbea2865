// Tests of the cse pass through its C++ API: its counters, ops unknown to
// the op table, and the rewrite log. The IR-in/IR-out cases (what merges and
// what never does) are in ir/cse.ir.
#include <cstdlib>
#include <memory>
#include <string>

#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/cse.h"
#include "tests/testlib/ir_testing.h"
#include "tests/testlib/status_matchers.h"

namespace tally::passes {
namespace {

using ::tally::testing::IsOkAndHolds;
using ::tally::testing::RunPassForTest;
using ::testing::HasSubstr;

std::unique_ptr<ir::Module> Parse(absl::string_view text) {
  auto m = ir::ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

// Verifies the counters: two merged nodes and the one merged state they
// make identical; custom-merge states whose nodes merge count no state.
TEST(CseTest, CountersCountMergedNodesAndStates) {
  auto m = Parse(R"(module {
  state @a.sum : f64[]@cpu init=0.0 reducer=sum metric="a"
  state @b.sum : f64[]@cpu init=0.0 reducer=sum metric="b"
  graph @update(%x: f32[N]@cpu) {
    %0 = cast(%x) {dtype="f64"} : f64[N]@cpu loc("a.cc:1")
    %1 = reduce_sum(%0) : f64[]@cpu loc("a.cc:2")
    %2 = cast(%x) {dtype="f64"} : f64[N]@cpu loc("b.cc:1")
    %3 = reduce_sum(%2) : f64[]@cpu loc("b.cc:2")
    return (a.sum: %1, b.sum: %3)
  }
  graph @finalize(%a.sum: f64[]@cpu, %b.sum: f64[]@cpu) {
    %0 = neg(%a.sum) : f64[]@cpu
    %1 = abs(%b.sum) : f64[]@cpu
    return (a: %0, b: %1)
  }
}
)");
  ASSERT_NE(m, nullptr);
  Cse cse;
  EXPECT_THAT(RunPassForTest(cse, *m), IsOkAndHolds(true));
  EXPECT_EQ(cse.counters().at("nodes_merged"), 2);
  EXPECT_EQ(cse.counters().at("states_merged"), 1);

  auto custom = Parse(R"(module {
  state @a.hi : f64[]@cpu init=-inf reducer=custom group="a.g" metric="a"
  state @b.hi : f64[]@cpu init=-inf reducer=custom group="b.g" metric="b"
  graph @update(%x: f64[N]@cpu) {
    %0 = reduce_max(%x) : f64[]@cpu
    %1 = reduce_max(%x) : f64[]@cpu
    return (a.hi: %0, b.hi: %1)
  }
  graph @merge.a.g(%a.a.hi: f64[]@cpu, %b.a.hi: f64[]@cpu) {
    %0 = maximum(%a.a.hi, %b.a.hi) : f64[]@cpu
    %1 = maximum(%a.a.hi, %b.a.hi) : f64[]@cpu
    return (a.hi: %1)
  }
  graph @merge.b.g(%a.b.hi: f64[]@cpu, %b.b.hi: f64[]@cpu) {
    %0 = maximum(%a.b.hi, %b.b.hi) : f64[]@cpu
    return (b.hi: %0)
  }
  graph @finalize(%a.hi: f64[]@cpu, %b.hi: f64[]@cpu) {
    return (a: %a.hi, b: %b.hi)
  }
}
)");
  ASSERT_NE(custom, nullptr);
  Cse again;
  EXPECT_THAT(RunPassForTest(again, *custom), IsOkAndHolds(true));
  EXPECT_EQ(again.counters().at("nodes_merged"), 2);
  EXPECT_EQ(again.counters().at("states_merged"), 0);
}

// Verifies that ops the op table does not know are never merged (they may
// have side effects). Only the C++ API reaches this: the verifier that
// tally_opt runs first refuses an unknown op, so it cannot be an .ir case.
TEST(CseTest, OpsTheTableDoesNotKnowNeverMerge) {
  constexpr char kText[] = R"(module {
  graph @update(%x: f32[N,3]@cpu) {
    %0 = log_event(%x) : f32[N,3]@cpu
    %1 = log_event(%x) : f32[N,3]@cpu
    return ()
  }
  graph @finalize() {
    return ()
  }
}
)";
  auto m = Parse(kText);
  ASSERT_NE(m, nullptr);
  Cse cse;
  EXPECT_THAT(RunPassForTest(cse, *m), IsOkAndHolds(false));
  EXPECT_EQ(ir::PrintModule(*m), kText);
  EXPECT_EQ(cse.counters().at("nodes_merged"), 0);
}

// Verifies the per-file rewrite log: silent by default; with
// TALLY_LOG_REWRITES=cse one line per merged node and per merged state,
// naming the file; a list that does not name cse keeps it silent.
TEST(CseTest, RewriteLogNamesTheFileWhenAsked) {
  constexpr absl::string_view kText = R"(module {
  state @a.sum : f64[]@cpu init=0.0 reducer=sum metric="a"
  state @b.sum : f64[]@cpu init=0.0 reducer=sum metric="b"
  graph @update(%x: f64[N]@cpu) {
    %0 = reduce_sum(%x) : f64[]@cpu
    %1 = reduce_sum(%x) : f64[]@cpu
    return (a.sum: %0, b.sum: %1)
  }
  graph @finalize(%a.sum: f64[]@cpu, %b.sum: f64[]@cpu) {
    %0 = neg(%a.sum) : f64[]@cpu
    %1 = abs(%b.sum) : f64[]@cpu
    return (a: %0, b: %1)
  }
}
)";
  auto run = [&](const char* env) {
    if (env == nullptr) {
      unsetenv("TALLY_LOG_REWRITES");
    } else {
      setenv("TALLY_LOG_REWRITES", env, 1);
    }
    auto m = Parse(kText);
    Cse cse;
    ::testing::internal::CaptureStderr();
    EXPECT_THAT(RunPassForTest(cse, *m), IsOkAndHolds(true));
    return ::testing::internal::GetCapturedStderr();
  };
  EXPECT_EQ(run(nullptr), "");
  EXPECT_EQ(run("fuse,canonicalize"), "");
  const std::string log = run("place, cse");
  EXPECT_THAT(log, HasSubstr("[tally cse.cc:"));
  EXPECT_THAT(log, HasSubstr("@update: reduce_sum -> %"));
  EXPECT_THAT(log, HasSubstr("state b.sum merged into the identical state a.sum"));
  EXPECT_THAT(run("all"), HasSubstr("[tally cse.cc:"));
  unsetenv("TALLY_LOG_REWRITES");
}

}  // namespace
}  // namespace tally::passes
