// Tests of the cse pass: IR in, IR out. Identical pure nodes merge; states
// with the same type, init, reducer, check and partial merge; states that
// differ in anything (a threshold constant, init, reducer, check) or that
// have a custom merge never do.
#include <cstdlib>
#include <memory>
#include <string>

#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/cse.h"
#include "passes/pipeline.h"
#include "tests/testlib/file_check.h"
#include "tests/testlib/ir_testing.h"
#include "tests/testlib/status_matchers.h"

namespace tally::passes {
namespace {

using ::tally::testing::FileCheck;
using ::tally::testing::IrHash;
using ::tally::testing::IsOkAndHolds;
using ::tally::testing::RunPassForTest;
using ::tally::testing::StatusIs;
using ::testing::HasSubstr;

std::unique_ptr<ir::Module> Parse(absl::string_view text) {
  auto m = ir::ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

// Verifies that two metrics computing the same sum share one state: the
// duplicated update nodes merge (locations do not matter), then the states
// whose partial is now the same value merge, and finalize reads the kept one.
TEST(CseTest, IdenticalPartialsMergeStates) {
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
  EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
    // CHECK-LABEL: module {
    // CHECK-NEXT:    state @a.sum : f64[]@cpu init=0.0 reducer=sum metric="a"
    // CHECK-NEXT:    graph @update(%x: f32[N]@cpu) {
    // CHECK-NEXT:      %0 = cast(%x) {dtype="f64"} : f64[N]@cpu loc("a.cc:1")
    // CHECK-NEXT:      %1 = reduce_sum(%0) : f64[]@cpu loc("a.cc:2")
    // CHECK-NEXT:      return (a.sum: %1)
    // CHECK-LABEL:   graph @finalize(%a.sum: f64[]@cpu) {
    // CHECK-NEXT:      %0 = neg(%a.sum) : f64[]@cpu
    // CHECK-NEXT:      %1 = abs(%a.sum) : f64[]@cpu
    // CHECK-NEXT:      return (a: %0, b: %1)
  )"));
  EXPECT_THAT(ir::PrintModule(*m), ::testing::Not(HasSubstr("b.sum")));
  EXPECT_EQ(cse.counters().at("nodes_merged"), 2);
  EXPECT_EQ(cse.counters().at("states_merged"), 1);
}

// Verifies that states that differ only in a threshold constant keep
// separate partials and states: cse reports no change and the IR is the same.
TEST(CseTest, ThresholdsThatDifferDoNotMerge) {
  constexpr char kText[] = R"(module {
  state @p3.tp : i64[]@cpu init=0.0 reducer=sum metric="binary_precision"
  state @p5.tp : i64[]@cpu init=0.0 reducer=sum metric="binary_precision"
  graph @update(%preds: f32[N]@cpu) {
    %0 = constant() {dtype="f32", value=0.3} : f32[]@cpu
    %1 = gt(%preds, %0) : i1[N]@cpu
    %2 = reduce_sum(%1) : i64[]@cpu
    %3 = constant() {dtype="f32", value=0.5} : f32[]@cpu
    %4 = gt(%preds, %3) : i1[N]@cpu
    %5 = reduce_sum(%4) : i64[]@cpu
    return (p3.tp: %2, p5.tp: %5)
  }
  graph @finalize(%p3.tp: i64[]@cpu, %p5.tp: i64[]@cpu) {
    return (p3: %p3.tp, p5: %p5.tp)
  }
}
)";
  auto m = Parse(kText);
  ASSERT_NE(m, nullptr);
  Cse cse;
  EXPECT_THAT(RunPassForTest(cse, *m), IsOkAndHolds(false));
  EXPECT_EQ(ir::PrintModule(*m), kText);
  EXPECT_EQ(cse.counters().at("nodes_merged"), 0);
  EXPECT_EQ(cse.counters().at("states_merged"), 0);
}

// Verifies that states sharing one partial but differing in reducer, init or
// check are kept apart, and that a second run over CSE'd IR is a no-op.
TEST(CseTest, StatesDifferingInReducerInitOrCheckDoNotMerge) {
  auto m = Parse(R"(module {
  state @s.sum : f64[]@cpu init=0.0 reducer=sum metric="s"
  state @s.max : f64[]@cpu init=0.0 reducer=max metric="s"
  state @s.max_inf : f64[]@cpu init=-inf reducer=max metric="s"
  state @s.check0 : f64[]@cpu init=0.0 reducer=sum check="value: {n} bad" metric="s"
  state @s.sum_again : f64[]@cpu init=0.0 reducer=sum metric="t"
  graph @update(%x: f64[N]@cpu) {
    %0 = reduce_sum(%x) : f64[]@cpu
    %1 = reduce_sum(%x) : f64[]@cpu
    return (s.sum: %0, s.max: %0, s.max_inf: %0, s.check0: %0, s.sum_again: %1)
  }
  graph @finalize(%s.sum: f64[]@cpu, %s.max: f64[]@cpu, %s.max_inf: f64[]@cpu, %s.check0: f64[]@cpu, %s.sum_again: f64[]@cpu) {
    %0 = add(%s.sum, %s.max) : f64[]@cpu
    %1 = add(%0, %s.max_inf) : f64[]@cpu
    %2 = add(%1, %s.sum_again) : f64[]@cpu
    return (s: %2)
  }
}
)");
  ASSERT_NE(m, nullptr);
  Cse cse;
  EXPECT_THAT(RunPassForTest(cse, *m), IsOkAndHolds(true));
  // Only s.sum_again (same everything as s.sum once %1 merges into %0) goes.
  EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
    // CHECK:      state @s.sum : f64[]@cpu init=0.0 reducer=sum
    // CHECK-NEXT: state @s.max : f64[]@cpu init=0.0 reducer=max
    // CHECK-NEXT: state @s.max_inf : f64[]@cpu init=-inf reducer=max
    // CHECK-NEXT: state @s.check0 : f64[]@cpu init=0.0 reducer=sum check="value: {n} bad"
    // CHECK-NEXT: graph @update(%x: f64[N]@cpu) {
    // CHECK-NEXT:   %0 = reduce_sum(%x) : f64[]@cpu
    // CHECK-NEXT:   return (s.sum: %0, s.max: %0, s.max_inf: %0, s.check0: %0)
    // CHECK:      graph @finalize(%s.sum: f64[]@cpu, %s.max: f64[]@cpu, %s.max_inf: f64[]@cpu, %s.check0: f64[]@cpu) {
    // CHECK:        %2 = add(%1, %s.sum) : f64[]@cpu
  )"));
  EXPECT_EQ(cse.counters().at("states_merged"), 1);

  const size_t hash = IrHash(*m);
  Cse again;
  EXPECT_THAT(RunPassForTest(again, *m), IsOkAndHolds(false));
  EXPECT_EQ(IrHash(*m), hash);
}

// Verifies that custom-merge states are never merged, even with identical
// partials and identical merge graphs; their duplicated nodes still merge.
TEST(CseTest, CustomMergeStatesAreNeverMerged) {
  auto m = Parse(R"(module {
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
  ASSERT_NE(m, nullptr);
  Cse cse;
  EXPECT_THAT(RunPassForTest(cse, *m), IsOkAndHolds(true));
  EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
    // CHECK:      state @a.hi : f64[]@cpu init=-inf reducer=custom group="a.g"
    // CHECK-NEXT: state @b.hi : f64[]@cpu init=-inf reducer=custom group="b.g"
    // CHECK-NEXT: graph @update(%x: f64[N]@cpu) {
    // CHECK-NEXT:   %0 = reduce_max(%x) : f64[]@cpu
    // CHECK-NEXT:   return (a.hi: %0, b.hi: %0)
    // CHECK-NEXT: }
    // CHECK-NEXT: graph @merge.a.g(%a.a.hi: f64[]@cpu, %b.a.hi: f64[]@cpu) {
    // CHECK-NEXT:   %0 = maximum(%a.a.hi, %b.a.hi) : f64[]@cpu
    // CHECK-NEXT:   return (a.hi: %0)
    // CHECK:      graph @merge.b.g
    // CHECK:      graph @finalize(%a.hi: f64[]@cpu, %b.hi: f64[]@cpu) {
  )"));
  EXPECT_EQ(cse.counters().at("nodes_merged"), 2);
  EXPECT_EQ(cse.counters().at("states_merged"), 0);
}

// Verifies that nodes with the same op and inputs but different attributes,
// or commuted operands, stay apart, and that ops the table does not know are
// never merged (they may have side effects).
TEST(CseTest, OnlyIdenticalPureNodesMerge) {
  constexpr char kText[] = R"(module {
  graph @update(%x: f32[N,3]@cpu, %y: f32[N,3]@cpu) {
    %0 = reduce_sum(%x) {dims=[0]} : f32[3]@cpu
    %1 = reduce_sum(%x) {dims=[1]} : f32[N]@cpu
    %2 = reduce_sum(%x) {dims=[1], keepdim=true} : f32[N,1]@cpu
    %3 = sub(%x, %y) : f32[N,3]@cpu
    %4 = sub(%y, %x) : f32[N,3]@cpu
    %5 = log_event(%x) : f32[N,3]@cpu
    %6 = log_event(%x) : f32[N,3]@cpu
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
}

// Verifies that a commutative op's operands are keyed unordered (the op
// table's `commutative` trait): add(x, y) and add(y, x) merge, and so do the
// eq pair, while the sub and lt pairs stay apart.
TEST(CseTest, CommutativeOperandsMergeInEitherOrder) {
  auto m = Parse(R"(module {
  graph @update(%x: f32[N]@cpu, %y: f32[N]@cpu) {
    %0 = add(%x, %y) : f32[N]@cpu
    %1 = add(%y, %x) : f32[N]@cpu
    %2 = sub(%x, %y) : f32[N]@cpu
    %3 = sub(%y, %x) : f32[N]@cpu
    %4 = eq(%x, %y) : i1[N]@cpu
    %5 = eq(%y, %x) : i1[N]@cpu
    %6 = lt(%x, %y) : i1[N]@cpu
    %7 = lt(%y, %x) : i1[N]@cpu
    return (a: %0, b: %1, c: %2, d: %3, e: %4, f: %5, g: %6, h: %7)
  }
  graph @finalize() {
    return ()
  }
}
)");
  ASSERT_NE(m, nullptr);
  Cse cse;
  EXPECT_THAT(RunPassForTest(cse, *m), IsOkAndHolds(true));
  EXPECT_EQ(cse.counters().at("nodes_merged"), 2);
  EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
    // CHECK: %0 = add(%x, %y)
    // CHECK-NEXT: %1 = sub(%x, %y)
    // CHECK-NEXT: %2 = sub(%y, %x)
    // CHECK-NEXT: %3 = eq(%x, %y)
    // CHECK-NEXT: %4 = lt(%x, %y)
    // CHECK-NEXT: %5 = lt(%y, %x)
    // CHECK-NEXT: return (a: %0, b: %0, c: %1, d: %2, e: %3, f: %3, g: %4, h: %5)
  )"));
}

// Verifies that duplicated finalize nodes merge and later uses are rewired.
TEST(CseTest, FinalizeNodesMerge) {
  auto m = Parse(R"(module {
  state @s.n : i64[]@cpu init=0.0 reducer=sum metric="s"
  graph @update(%x: f32[N]@cpu) {
    %0 = size(%x) {dim=0} : i64[]@cpu
    return (s.n: %0)
  }
  graph @finalize(%s.n: i64[]@cpu) {
    %0 = cast(%s.n) {dtype="f64"} : f64[]@cpu
    %1 = cast(%s.n) {dtype="f64"} : f64[]@cpu
    %2 = mul(%0, %1) : f64[]@cpu
    return (s: %2)
  }
}
)");
  ASSERT_NE(m, nullptr);
  Cse cse;
  EXPECT_THAT(RunPassForTest(cse, *m), IsOkAndHolds(true));
  EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
    // CHECK-LABEL: graph @finalize(%s.n: i64[]@cpu) {
    // CHECK-NEXT:    %0 = cast(%s.n) {dtype="f64"} : f64[]@cpu
    // CHECK-NEXT:    %1 = mul(%0, %0) : f64[]@cpu
    // CHECK-NEXT:    return (s: %1)
  )"));
}

// Verifies that the pipeline rejects a malformed module before cse runs,
// naming the start of the pipeline, and leaves the module untouched.
TEST(CseTest, MalformedModuleIsRejected) {
  auto m = Parse(R"(module {
  state @a.sum : f64[]@cpu init=0.0 reducer=sum metric="a"
  state @b.sum : f64[]@cpu init=0.0 reducer=sum metric="b"
  graph @update(%x: f64[N]@cpu) {
    %0 = reduce_sum(%x) : f64[]@cpu
    %1 = reduce_sum(%x) : f64[]@cpu
    return (a.sum: %0)
  }
  graph @finalize(%a.sum: f64[]@cpu, %b.sum: f64[]@cpu) {
    return (a: %a.sum, b: %b.sum)
  }
}
)");
  ASSERT_NE(m, nullptr);
  const size_t hash = IrHash(*m);
  PassPipeline p("cse-only");
  p.AddPass<Cse>();
  EXPECT_THAT(p.Run(*m),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("at the start of pipeline 'cse-only': verifier: state @b.sum has no partial")));
  EXPECT_EQ(IrHash(*m), hash);
  EXPECT_TRUE(p.records().empty());
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
