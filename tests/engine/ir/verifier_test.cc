// Tests of the IR verifier: a valid module passes, and each broken invariant
// is rejected with a message that names it.
#include <memory>
#include <string>

#include "absl/strings/str_replace.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/op_verifier.h"
#include "tests/testlib/status_matchers.h"

namespace tally::ir {
namespace {

using ::tally::testing::IsOk;
using ::tally::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kValid[] = R"(module {
  state @s.a : f64[]@cpu init=0.0 reducer=sum metric="s"
  state @s.b : i64[]@cpu init=0.0 reducer=sum metric="s"
  graph @update(%x: f32[N]@cpu) {
    %0 = cast(%x) {dtype="f64"} : f64[N]@cpu
    %1 = reduce_sum(%0) : f64[]@cpu loc("metrics/s.cc:7")
    %2 = size(%x) {dim=0} : i64[]@cpu
    return (s.a: %1, s.b: %2)
  }
  graph @finalize(%s.a: f64[]@cpu, %s.b: i64[]@cpu) {
    %0 = div(%s.a, %s.b) : f64[]@cpu
    return (s: %0)
  }
}
)";

constexpr char kValidCustom[] = R"(module {
  state @m.mu : f64[]@cpu init=0.0 reducer=custom group="m.moments" metric="m"
  state @m.n : f64[]@cpu init=0.0 reducer=custom group="m.moments" metric="m"
  graph @update(%x: f64[N]@cpu) {
    %0 = reduce_sum(%x) : f64[]@cpu
    %1 = size(%x) {dim=0} : i64[]@cpu
    %2 = cast(%1) {dtype="f64"} : f64[]@cpu
    %3 = safe_div(%0, %2) : f64[]@cpu
    return (m.mu: %3, m.n: %2)
  }
  graph @merge.m.moments(%a.m.mu: f64[]@cpu, %a.m.n: f64[]@cpu, %b.m.mu: f64[]@cpu, %b.m.n: f64[]@cpu) {
    %0 = add(%a.m.n, %b.m.n) : f64[]@cpu
    %1 = mul(%a.m.mu, %a.m.n) : f64[]@cpu
    %2 = mul(%b.m.mu, %b.m.n) : f64[]@cpu
    %3 = add(%1, %2) : f64[]@cpu
    %4 = safe_div(%3, %0) : f64[]@cpu
    return (m.mu: %4, m.n: %0)
  }
  graph @finalize(%m.mu: f64[]@cpu, %m.n: f64[]@cpu) {
    return (m: %m.mu)
  }
}
)";

// Parse parses `text`, failing the test on a parse error.
std::unique_ptr<Module> Parse(absl::string_view text) {
  auto m = ParseModule(text);
  EXPECT_THAT(m, IsOk()) << text;
  return m.ok() ? std::move(*m) : nullptr;
}

// Mutate replaces `from` (which must occur) by `to` in `text`.
std::string Mutate(absl::string_view text, absl::string_view from, absl::string_view to) {
  EXPECT_NE(text.find(from), absl::string_view::npos) << "'" << from << "' not in the base module";
  return absl::StrReplaceAll(text, {{from, to}});
}

// ExpectRejected checks that the verifier rejects `m` with `message`, and
// that it leaves the module as it was.
void ExpectRejected(const Module& m, absl::string_view message) {
  const std::string before = PrintModule(m);
  EXPECT_THAT(ops::VerifyModule(m),
              StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("verifier"), HasSubstr(message))));
  EXPECT_EQ(PrintModule(m), before) << "the verifier changed the module";
}

void ExpectTextRejected(const std::string& text, absl::string_view message) {
  SCOPED_TRACE(text);
  std::unique_ptr<Module> m = Parse(text);
  ASSERT_NE(m, nullptr);
  ExpectRejected(*m, message);
}

// Verifies that the valid modules pass and that verifying does not change them.
TEST(VerifierTest, ValidModulesPass) {
  for (const char* text : {kValid, kValidCustom}) {
    std::unique_ptr<Module> m = Parse(text);
    ASSERT_NE(m, nullptr);
    EXPECT_THAT(ops::VerifyModule(*m), IsOk());
    EXPECT_EQ(PrintModule(*m), text);
  }
}

// Verifies that a node using a value defined after it is rejected (the text
// form cannot express this, so the graph is edited directly).
TEST(VerifierTest, UseBeforeDef) {
  std::unique_ptr<Module> m = Parse(kValid);
  ASSERT_NE(m, nullptr);
  // %1 = reduce_sum(%0) now reads %2, defined by the next node.
  Node* reduce = m->update->nodes()[1].get();
  Value* later = m->update->nodes()[2]->output();
  reduce->set_input(0, later);
  ExpectRejected(*m, "graph @update: reduce_sum uses a value that is not defined before it at metrics/s.cc:7");
}

// Verifies that a result that is not a value of its graph is rejected.
TEST(VerifierTest, ResultFromAnotherGraph) {
  std::unique_ptr<Module> m = Parse(kValid);
  ASSERT_NE(m, nullptr);
  m->update->mutable_returns()[0].second = m->finalize->nodes()[0]->output();
  ExpectRejected(*m, "graph @update: result 's.a' is not defined");
}

// Verifies that a node whose declared result type differs from the op's
// inference is rejected, naming the op, both types and the DSL line.
TEST(VerifierTest, WrongResultType) {
  ExpectTextRejected(Mutate(kValid, "%1 = reduce_sum(%0) : f64[]@cpu", "%1 = reduce_sum(%0) : f32[]@cpu"),
                     "reduce_sum: result 0 has type f32[]@cpu but the op gives f64[]@cpu (metrics/s.cc:7)");
  ExpectTextRejected(Mutate(kValid, "%2 = size(%x) {dim=0} : i64[]@cpu", "%2 = size(%x) {dim=0} : i64[1]@cpu"),
                     "size: result 0 has type i64[1]@cpu but the op gives i64[]@cpu");
}

// Verifies that an op the table does not know is rejected.
TEST(VerifierTest, UnknownOp) {
  ExpectTextRejected(Mutate(kValid, "%2 = size(%x)", "%2 = frobnicate(%x)"), "unknown op 'frobnicate'");
}

// Verifies that wrong arity, missing, unknown and mistyped attributes are
// rejected.
TEST(VerifierTest, ArityAndAttributes) {
  ExpectTextRejected(Mutate(kValid, "div(%s.a, %s.b)", "div(%s.a)"), "graph @finalize: div: takes 2 inputs, got 1");
  ExpectTextRejected(Mutate(kValid, "size(%x) {dim=0}", "size(%x)"), "size: missing attribute 'dim'");
  ExpectTextRejected(Mutate(kValid, "size(%x) {dim=0}", "size(%x) {dim=0, axis=1}"), "size: unknown attribute 'axis'");
  ExpectTextRejected(Mutate(kValid, "size(%x) {dim=0}", "size(%x) {dim=\"0\"}"),
                     "size: attribute 'dim' has the wrong kind");
}

// Verifies that a state without a partial in @update is rejected.
TEST(VerifierTest, MissingPartial) {
  ExpectTextRejected(Mutate(kValid, "return (s.a: %1, s.b: %2)", "return (s.a: %1)"),
                     "state @s.b has no partial in @update");
}

// Verifies that a partial that is not a state is rejected.
TEST(VerifierTest, PartialWithoutState) {
  ExpectTextRejected(Mutate(kValid, "return (s.a: %1, s.b: %2)", "return (s.a: %1, s.b: %2, s.c: %1)"),
                     "@update returns a partial that is not a state");
}

// Verifies that a duplicate result label is rejected.
TEST(VerifierTest, DuplicateResult) {
  ExpectTextRejected(Mutate(kValid, "return (s: %0)", "return (s: %0, s: %0)"),
                     "graph @finalize: duplicate result 's'");
}

// Verifies that a partial whose dtype, shape or device differs from its
// state's is rejected with both types.
TEST(VerifierTest, PartialOfWrongType) {
  ExpectTextRejected(Mutate(kValid, "return (s.a: %1, s.b: %2)", "return (s.a: %2, s.b: %2)"),
                     "partial of @s.a is i64[]@cpu, state is f64[]@cpu");
  ExpectTextRejected(Mutate(kValid, "state @s.a : f64[]@cpu", "state @s.a : f64[2]@cpu"),
                     "partial of @s.a is f64[]@cpu, state is f64[2]@cpu");
  ExpectTextRejected(Mutate(kValid, "state @s.a : f64[]@cpu", "state @s.a : f64[]@meta"),
                     "partial of @s.a is f64[]@cpu, state is f64[]@meta");
}

constexpr char kValidScatter[] = R"(module {
  state @h.counts : i64[4]@cpu init=0.0 reducer=sum scatter=true metric="h"
  graph @update(%rows: i64[N,3,2]@cpu) {
    return (h.counts: %rows)
  }
  graph @finalize(%h.counts: i64[4]@cpu) {
    return (h: %h.counts)
  }
}
)";

// Verifies a scatter state: its partial is i64 (index, count) rows
// [..., 2] of any leading shape, and only an int64 sum state scatters.
TEST(VerifierTest, ScatterStates) {
  std::unique_ptr<Module> m = Parse(kValidScatter);
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(ops::VerifyModule(*m), IsOk());
  EXPECT_EQ(PrintModule(*m), kValidScatter);
  ExpectTextRejected(Mutate(kValidScatter, "i64[N,3,2]@cpu", "i64[N,2,3]@cpu"),
                     "partial of @h.counts is i64[N,2,3]@cpu, state is i64[4]@cpu");
  ExpectTextRejected(Mutate(kValidScatter, "reducer=sum scatter=true", "reducer=max scatter=true"),
                     "scatter state @h.counts must be an int64 sum");
  const std::string f64 = absl::StrReplaceAll(kValidScatter, {{"i64[4]", "f64[4]"}});
  ExpectTextRejected(f64, "scatter state @h.counts must be an int64 sum, is f64[4]@cpu");
  // Without scatter the rows are a partial of the wrong shape.
  ExpectTextRejected(Mutate(kValidScatter, " scatter=true", ""),
                     "partial of @h.counts is i64[N,3,2]@cpu, state is i64[4]@cpu");
}

// Verifies that @finalize must take exactly the states, in order, with their
// types.
TEST(VerifierTest, FinalizeParamsMatchStates) {
  ExpectTextRejected(Mutate(kValid, "graph @finalize(%s.a: f64[]@cpu, %s.b: i64[]@cpu)",
                            "graph @finalize(%s.b: i64[]@cpu, %s.a: f64[]@cpu)"),
                     "@finalize parameter 0 is %s.b");
  ExpectTextRejected(Mutate(kValid, "graph @finalize(%s.a: f64[]@cpu, %s.b: i64[]@cpu)",
                            "graph @finalize(%s.a: f64[]@cpu, %s.b: i32[]@cpu)"),
                     "@finalize parameter 1 is %s.b: i32[]@cpu, expected %s.b: i64[]@cpu");
  std::string missing =
      Mutate(kValid, "graph @finalize(%s.a: f64[]@cpu, %s.b: i64[]@cpu)", "graph @finalize(%s.a: f64[]@cpu)");
  missing = Mutate(missing, "%0 = div(%s.a, %s.b) : f64[]@cpu", "%0 = neg(%s.a) : f64[]@cpu");
  ExpectTextRejected(missing, "@finalize must take every state");
}

// Verifies that a missing update or finalize graph is rejected.
TEST(VerifierTest, MissingGraphs) {
  std::unique_ptr<Module> m = Parse(kValid);
  ASSERT_NE(m, nullptr);
  m->finalize.reset();
  EXPECT_THAT(ops::VerifyModule(*m),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("module needs update and finalize graphs")));
}

// Verifies that merge graphs must take a.* then b.* of their group's states
// with the states' types and return each state once, in order.
TEST(VerifierTest, MergeGraphMismatch) {
  ExpectTextRejected(Mutate(kValidCustom, "return (m.mu: %4, m.n: %0)", "return (m.n: %0, m.mu: %4)"),
                     "merge graph of 'm.moments' does not match state @m.mu");
  ExpectTextRejected(Mutate(kValidCustom, "return (m.mu: %4, m.n: %0)", "return (m.mu: %4)"),
                     "merge graph of 'm.moments' must take a.* and b.* of its 2 states");
  ExpectTextRejected(Mutate(kValidCustom, "%a.m.n: f64[]@cpu, %b.m.mu", "%a.m.n: f32[]@cpu, %b.m.mu"),
                     "merge graph of 'm.moments' does not match state @m.n");
  ExpectTextRejected(Mutate(kValidCustom, "%b.m.n: f64[]@cpu) {", "%b.m.n: f32[]@cpu) {"),
                     "merge graph of 'm.moments' does not match state @m.n");
  // Parameters must be a.* first, then b.*.
  std::string swapped =
      Mutate(kValidCustom, "(%a.m.mu: f64[]@cpu, %a.m.n: f64[]@cpu, %b.m.mu: f64[]@cpu, %b.m.n: f64[]@cpu)",
             "(%a.m.mu: f64[]@cpu, %b.m.mu: f64[]@cpu, %a.m.n: f64[]@cpu, %b.m.n: f64[]@cpu)");
  ExpectTextRejected(swapped, "does not match state @m.mu");
}

// Verifies that a custom state needs a merge graph, and a merge graph needs
// states.
TEST(VerifierTest, MergeGroupsAndStates) {
  std::unique_ptr<Module> m = Parse(kValidCustom);
  ASSERT_NE(m, nullptr);
  m->merges.clear();
  ExpectRejected(*m, "state @m.mu has no merge graph for group 'm.moments'");

  m = Parse(kValidCustom);
  ASSERT_NE(m, nullptr);
  m->merges["other"] = m->merges.at("m.moments")->Clone();
  ExpectRejected(*m, "merge group 'other' has no states");
}

// Verifies that an edge between values on different devices is rejected:
// mixed operands, a result placed elsewhere than its operands, and a
// partial on another device than its state.
TEST(VerifierTest, DevicesMixedOnAnEdge) {
  std::string mixed = Mutate(kValid, "    %2 = size(%x) {dim=0} : i64[]@cpu\n",
                             "    %2 = size(%x) {dim=0} : i64[]@cpu\n"
                             "    %3 = constant() {dtype=\"f64\", value=1.0} : f64[]@meta\n"
                             "    %4 = add(%1, %3) : f64[]@cpu\n");
  mixed = Mutate(mixed, "return (s.a: %1, s.b: %2)", "return (s.a: %4, s.b: %2)");
  ExpectTextRejected(mixed, "add: inputs on different devices (cpu and meta)");
  ExpectTextRejected(
      Mutate(kValid, "%0 = cast(%x) {dtype=\"f64\"} : f64[N]@cpu", "%0 = cast(%x) {dtype=\"f64\"} : f64[N]@meta"),
      "cast: result 0 has type f64[N]@meta but the op gives f64[N]@cpu");
  ExpectTextRejected(Mutate(kValid, "graph @finalize(%s.a: f64[]@cpu", "graph @finalize(%s.a: f64[]@meta"),
                     "div: inputs on different devices (meta and cpu)");
}

// Verifies that VerifyGraph alone checks duplicate parameters.
TEST(VerifierTest, DuplicateParameter) {
  Graph g("g");
  g.AddParam("x", TensorType{});
  g.AddParam("x", TensorType{});
  EXPECT_THAT(ops::VerifyGraph(g),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("graph @g: duplicate parameter %x")));
}

}  // namespace
}  // namespace tally::ir
