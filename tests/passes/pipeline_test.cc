// Tests of PassPipeline and the pass registry: the verifier between passes, errors
// naming the pass, dumps recorded only for passes that changed the IR, the
// per-pass log, and the name -> pass table.
#include <memory>
#include <string>

#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/cse.h"
#include "passes/eliminate_dead_states.h"
#include "passes/fuse.h"
#include "passes/pipeline.h"
#include "passes/place.h"
#include "passes/prove_single_device.h"
#include "passes/registry.h"
#include "tests/testlib/file_check.h"
#include "tests/testlib/ir_testing.h"
#include "tests/testlib/status_matchers.h"

namespace tally::passes {
namespace {

using ::tally::testing::FileCheck;
using ::tally::testing::IrHash;
using ::tally::testing::IsOk;
using ::tally::testing::IsOkAndHolds;
using ::tally::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

std::unique_ptr<ir::Module> Parse(absl::string_view text) {
  auto m = ir::ParseModule(text);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

// Duplicated nodes (for cse) and, once they merge, nothing dead; a dead
// state (for eliminate-dead-states).
constexpr char kModule[] = R"(module {
  state @s.a : f64[]@cpu init=0.0 reducer=sum metric="s"
  state @s.dead : f64[]@cpu init=0.0 reducer=max metric="s"
  graph @update(%x: f64[N]@cpu) {
    %0 = exp(%x) : f64[N]@cpu
    %1 = exp(%x) : f64[N]@cpu
    %2 = add(%0, %1) : f64[N]@cpu
    %3 = reduce_sum(%2) : f64[]@cpu
    %4 = reduce_max(%x) : f64[]@cpu
    return (s.a: %3, s.dead: %4)
  }
  graph @finalize(%s.a: f64[]@cpu, %s.dead: f64[]@cpu) {
    return (s: %s.a)
  }
}
)";

// A module with nothing for either pass to do.
constexpr char kClean[] = R"(module {
  state @s.a : f64[]@cpu init=0.0 reducer=sum metric="s"
  graph @update(%x: f64[N]@cpu) {
    %0 = reduce_sum(%x) : f64[]@cpu
    return (s.a: %0)
  }
  graph @finalize(%s.a: f64[]@cpu) {
    return (s: %s.a)
  }
}
)";

// BreakPartials drops every update result: the module no longer verifies.
class BreakPartials : public Pass {
 public:
  absl::string_view name() const override { return "break-partials"; }
  absl::StatusOr<bool> Run(ir::Module& m) override {
    m.update->mutable_returns().clear();
    return true;
  }
};

// Fail always fails, with a FailedPrecondition.
class Fail : public Pass {
 public:
  absl::string_view name() const override { return "fail"; }
  absl::StatusOr<bool> Run(ir::Module&) override { return absl::FailedPreconditionError("cannot run here"); }
};

// Verifies that the pipeline runs its passes in order, answers whether any
// changed the module, and records one log line per pass with its counters.
TEST(PipelineTest, RunsPassesInOrderAndLogsThem) {
  auto m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  PassPipeline p("test");
  p.AddPass<Cse>();
  p.AddPass<EliminateDeadStates>();
  EXPECT_EQ(p.name(), "test");
  EXPECT_THAT(p.Run(*m), IsOkAndHolds(true));
  ASSERT_EQ(p.records().size(), 2u);
  EXPECT_EQ(p.records()[0].pass, "cse");
  EXPECT_TRUE(p.records()[0].changed);
  EXPECT_EQ(p.records()[0].counters.at("nodes_merged"), 1);
  EXPECT_EQ(p.records()[1].pass, "eliminate-dead-states");
  EXPECT_TRUE(p.records()[1].changed);
  EXPECT_EQ(p.records()[1].counters.at("states_removed"), 1);
  EXPECT_TRUE(FileCheck(ir::PrintModule(*m), R"(
    // CHECK:      graph @update(%x: f64[N]@cpu) {
    // CHECK-NEXT:   %0 = exp(%x) : f64[N]@cpu
    // CHECK-NEXT:   %1 = add(%0, %0) : f64[N]@cpu
    // CHECK-NEXT:   %2 = reduce_sum(%1) : f64[]@cpu
    // CHECK-NEXT:   return (s.a: %2)
  )"));

  auto clean = Parse(kClean);
  ASSERT_NE(clean, nullptr);
  PassPipeline q("clean");
  q.AddPass<Cse>();
  q.AddPass<EliminateDeadStates>();
  EXPECT_THAT(q.Run(*clean), IsOkAndHolds(false));
  EXPECT_EQ(ir::PrintModule(*clean), kClean);
  ASSERT_EQ(q.records().size(), 2u);
  EXPECT_FALSE(q.records()[0].changed);
  EXPECT_FALSE(q.records()[1].changed);
}

// Verifies that --dump-after records the IR only after the named pass, and
// only when that pass changed it; "all" records every pass that changed it.
TEST(PipelineTest, DumpAfterRecordsOnlyChangingPasses) {
  {
    auto m = Parse(kModule);
    ASSERT_NE(m, nullptr);
    PassPipeline p("dump-cse");
    p.AddPass<Cse>();
    p.AddPass<EliminateDeadStates>();
    p.set_dump_after("cse");
    ASSERT_THAT(p.Run(*m), IsOk());
    ASSERT_EQ(p.records().size(), 2u);
    // After cse the dead state is still there, its reduce_max too.
    EXPECT_TRUE(FileCheck(p.records()[0].dump, R"(
      // CHECK: state @s.dead
      // CHECK: %1 = add(%0, %0)
      // CHECK: reduce_max
    )"));
    EXPECT_EQ(p.records()[1].dump, "");
  }
  {
    auto m = Parse(kModule);
    ASSERT_NE(m, nullptr);
    PassPipeline p("dump-all");
    p.AddPass<Cse>();
    p.AddPass<EliminateDeadStates>();
    p.AddPass<Cse>();  // nothing left to merge: no dump
    p.set_dump_after("all");
    ASSERT_THAT(p.Run(*m), IsOk());
    ASSERT_EQ(p.records().size(), 3u);
    EXPECT_NE(p.records()[0].dump, "");
    EXPECT_EQ(p.records()[1].dump, ir::PrintModule(*m));
    EXPECT_FALSE(p.records()[2].changed);
    EXPECT_EQ(p.records()[2].dump, "");
  }
  {
    auto m = Parse(kClean);
    ASSERT_NE(m, nullptr);
    PassPipeline p("dump-unchanged");
    p.AddPass<Cse>();
    p.set_dump_after("cse");
    ASSERT_THAT(p.Run(*m), IsOk());
    ASSERT_EQ(p.records().size(), 1u);
    EXPECT_EQ(p.records()[0].dump, "");
  }
  {
    auto m = Parse(kModule);
    ASSERT_NE(m, nullptr);
    PassPipeline p("dump-none");
    p.AddPass<Cse>();
    ASSERT_THAT(p.Run(*m), IsOk());
    EXPECT_EQ(p.records()[0].dump, "");
  }
}

// Verifies that a malformed module is rejected before any pass runs.
TEST(PipelineTest, VerifiesAtTheStart) {
  auto m = Parse(kClean);
  ASSERT_NE(m, nullptr);
  m->update->mutable_returns().clear();
  const size_t hash = IrHash(*m);
  PassPipeline p("start");
  p.AddPass<Cse>();
  EXPECT_THAT(p.Run(*m), StatusIs(absl::StatusCode::kInvalidArgument,
                                  HasSubstr("at the start of pipeline 'start': verifier: state @s.a has no partial")));
  EXPECT_TRUE(p.records().empty());
  EXPECT_EQ(IrHash(*m), hash);
}

// Verifies that a pass that breaks the module is caught right after it, as
// an Internal error naming the pass, and later passes do not run.
TEST(PipelineTest, VerifiesAfterEveryChangingPass) {
  auto m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  PassPipeline p("broken");
  p.AddPass<Cse>();
  p.AddPass<BreakPartials>();
  p.AddPass<EliminateDeadStates>();
  EXPECT_THAT(p.Run(*m), StatusIs(absl::StatusCode::kInternal,
                                  HasSubstr("after pass 'break-partials': verifier: state @s.a has no partial")));
  ASSERT_EQ(p.records().size(), 1u);
  EXPECT_EQ(p.records()[0].pass, "cse");
}

// Verifies that a pass's own error is returned with its code and its name.
TEST(PipelineTest, PassErrorsNameThePass) {
  auto m = Parse(kClean);
  ASSERT_NE(m, nullptr);
  PassPipeline p("failing");
  p.AddPass(std::make_unique<Fail>());
  EXPECT_THAT(p.Run(*m), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("pass 'fail': cannot run here")));
}

// Verifies that CreatePass knows every pass by its stable name, and that an
// unknown name is an InvalidArgument listing the known ones.
TEST(PipelineTest, CreatePassNames) {
  EXPECT_THAT(PassNames(),
              ::testing::ElementsAre("canonicalize", "cse", "eliminate-dead-states", "narrow-states",
                                     "remove-host-syncs", "place", "fuse", "insert-transfers", "prove-single-device"));
  for (const std::string& name : PassNames()) {
    auto pass = CreatePass(name);
    ASSERT_THAT(pass, IsOk()) << name;
    EXPECT_EQ((*pass)->name(), name);
  }
  EXPECT_THAT(CreatePass("cse2"), StatusIs(absl::StatusCode::kInvalidArgument,
                                           ::testing::AllOf(HasSubstr("unknown pass 'cse2'"), HasSubstr("cse"),
                                                            HasSubstr("eliminate-dead-states"))));
  EXPECT_THAT(CreatePass(""), StatusIs(absl::StatusCode::kInvalidArgument));
}

// Verifies that passes made by name run in a pipeline like the typed ones.
TEST(PipelineTest, PassesMadeByNameRun) {
  auto m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  PassPipeline p("by-name");
  for (const char* name : {"cse", "eliminate-dead-states"}) {
    auto pass = CreatePass(name);
    ASSERT_THAT(pass, IsOk());
    p.AddPass(std::move(*pass));
  }
  EXPECT_THAT(p.Run(*m), IsOkAndHolds(true));
  EXPECT_THAT(ir::PrintModule(*m), ::testing::Not(HasSubstr("s.dead")));
}

// Verifies that a pipeline is a pass: nested in another, its passes' records
// join the outer log in order, a change inside is a change outside, and an
// error inside names the inner pass.
TEST(PipelineTest, PipelinesNest) {
  auto m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  PassPipeline outer("outer");
  auto inner = std::make_unique<PassPipeline>("inner");
  inner->AddPass<Cse>();
  inner->AddPass<EliminateDeadStates>();
  outer.AddPass(std::move(inner));
  EXPECT_THAT(outer.Run(*m), IsOkAndHolds(true));
  ASSERT_EQ(outer.records().size(), 2u);
  EXPECT_EQ(outer.records()[0].pass, "cse");
  EXPECT_EQ(outer.records()[1].pass, "eliminate-dead-states");
  EXPECT_EQ(outer.records()[1].counters.at("states_removed"), 1);

  auto again = Parse(kModule);
  PassPipeline failing("outer");
  auto broken = std::make_unique<PassPipeline>("inner");
  broken->AddPass<Fail>();
  failing.AddPass(std::move(broken));
  EXPECT_THAT(failing.Run(*again), StatusIs(absl::StatusCode::kFailedPrecondition,
                                            AllOf(HasSubstr("pass 'inner'"), HasSubstr("pass 'fail'"))));
}

// Verifies that the passes write their artefacts into the report: fuse its
// fusion groups, prove-single-device its proof; a pipeline without the proof
// leaves it empty; and a second run starts a fresh report.
TEST(PipelineTest, PassesWriteTheReport) {
  auto m = Parse(kClean);
  ASSERT_NE(m, nullptr);
  PassPipeline p("placement");
  p.AddPass<Place>(ir::Device{"meta"});
  p.AddPass<Fuse>(ir::Device{"meta"}, FusePolicy::kFused);
  p.AddPass<ProveSingleDevicePass>(ir::Device{"meta"});
  ASSERT_THAT(p.Run(*m), IsOk());
  ASSERT_TRUE(p.report().proof.has_value());
  EXPECT_EQ(p.report().proof->device, "meta");
  EXPECT_EQ(p.report().proof->states, 1);
  EXPECT_EQ(p.report().log.size(), 3u);

  PassPipeline q("no-proof");
  q.AddPass<Cse>();
  auto n = Parse(kClean);
  ASSERT_THAT(q.Run(*n), IsOk());
  EXPECT_FALSE(q.report().proof.has_value());
  ASSERT_THAT(q.Run(*n), IsOk());
  EXPECT_EQ(q.report().log.size(), 1u);
}

// Verifies that invariants are pluggable: an added one runs after each pass
// that changed the module and its failure names the pass; with the verifier
// cleared, a module that breaks it passes.
TEST(PipelineTest, InvariantsArePluggable) {
  auto m = Parse(kModule);
  ASSERT_NE(m, nullptr);
  PassPipeline p("test");
  int checks = 0;
  p.AddInvariant("at-most-one-state", [&](const ir::Module& mod) {
    ++checks;
    return mod.states.size() <= 1 ? absl::OkStatus() : absl::FailedPreconditionError("more than one state");
  });
  p.AddPass<Cse>();
  EXPECT_THAT(p.Run(*m),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("at the start of pipeline 'test'"), HasSubstr("more than one state"))));
  EXPECT_EQ(checks, 1);

  auto n = Parse(kModule);
  PassPipeline q("test");
  q.AddInvariant("at-most-one-state", [](const ir::Module& mod) {
    return mod.states.size() <= 1 ? absl::OkStatus() : absl::FailedPreconditionError("more than one state");
  });
  q.ClearInvariants();
  q.AddPass<BreakPartials>();
  EXPECT_THAT(q.Run(*n), IsOkAndHolds(true));
}

}  // namespace
}  // namespace tally::passes
