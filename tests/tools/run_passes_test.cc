// Tests of tally_opt's driver loop (tools/tally_opt/run_passes.h): every pass
// is held to its "changed" answer against the printed module.
#include "tools/tally_opt/run_passes.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "passes/cse.h"
#include "passes/pass.h"
#include "tests/testlib/status_matchers.h"

namespace tally::tools {
namespace {

using ::tally::testing::IsOk;
using ::tally::testing::StatusIs;
using ::testing::HasSubstr;

// Two identical sums: cse merges them (an honest "changed").
constexpr char kModule[] = R"(module {
  state @a.sum : f64[]@cpu init=0.0 reducer=sum metric="a"
  state @b.sum : f64[]@cpu init=0.0 reducer=sum metric="b"
  graph @update(%x: f64[N]@cpu) {
    %0 = reduce_sum(%x) : f64[]@cpu
    %1 = reduce_sum(%x) : f64[]@cpu
    return (a.sum: %0, b.sum: %1)
  }
  graph @finalize(%a.sum: f64[]@cpu, %b.sum: f64[]@cpu) {
    %0 = add(%a.sum, %b.sum) : f64[]@cpu
    return (a: %0)
  }
}
)";

// A pass that changes a state's initial value, answering `answer`.
class SetInitPass : public passes::Pass {
 public:
  SetInitPass(std::string name, bool answer) : name_(std::move(name)), answer_(answer) {}
  absl::string_view name() const override { return name_; }
  absl::StatusOr<bool> Run(ir::Module& m) override {
    m.states[0].init = 5.0;
    return answer_;
  }

 private:
  std::string name_;
  bool answer_;
};

// A pass that changes nothing, answering `answer`.
class IdlePass : public passes::Pass {
 public:
  explicit IdlePass(bool answer) : answer_(answer) {}
  absl::string_view name() const override { return "idle"; }
  absl::StatusOr<bool> Run(ir::Module&) override { return answer_; }

 private:
  bool answer_;
};

std::unique_ptr<ir::Module> Parse() {
  auto m = ir::ParseModule(kModule);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(*m) : nullptr;
}

template <typename... P>
std::vector<std::unique_ptr<passes::Pass>> Passes(std::unique_ptr<P>... p) {
  std::vector<std::unique_ptr<passes::Pass>> v;
  (v.push_back(std::move(p)), ...);
  return v;
}

// Verifies that a pass which changes the module while answering "unchanged"
// fails with one line naming it, even after honest passes.
TEST(RunPassesCheckedTest, PassThatChangesButAnswersFalseFails) {
  auto m = Parse();
  ASSERT_NE(m, nullptr);
  absl::Status s =
      RunPassesChecked(Passes(std::make_unique<passes::Cse>(), std::make_unique<SetInitPass>("set-init", false)), *m);
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInternal,
                          HasSubstr("pass 'set-init' changed the module but answered that it did not")));
  EXPECT_EQ(std::string(s.message()).find('\n'), std::string::npos);
}

// Verifies that honest passes run in order and leave their changes: cse
// merges the two sums, the second pass sets the init and says so, and a
// pass answering "changed" without a change is accepted.
TEST(RunPassesCheckedTest, HonestAndConservativeAnswersPass) {
  auto m = Parse();
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(RunPassesChecked(Passes(std::make_unique<passes::Cse>(), std::make_unique<SetInitPass>("set-init", true),
                                      std::make_unique<IdlePass>(true), std::make_unique<IdlePass>(false)),
                               *m),
              IsOk());
  const std::string out = ir::PrintModule(*m);
  EXPECT_THAT(out, HasSubstr("init=5.0"));
  EXPECT_EQ(out.find("@b.sum"), std::string::npos) << out;
}

// Verifies that the verifier still runs after a pass that reports a change:
// a pass that breaks the module fails `after pass '<name>'`.
TEST(RunPassesCheckedTest, VerifierRunsAfterAChange) {
  class DuplicateState : public passes::Pass {
   public:
    absl::string_view name() const override { return "duplicate-state"; }
    absl::StatusOr<bool> Run(ir::Module& m) override {
      m.states.push_back(m.states[0]);  // a second state of the same name
      return true;
    }
  };
  auto m = Parse();
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(RunPassesChecked(Passes(std::make_unique<DuplicateState>()), *m),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("after pass 'duplicate-state'")));
}

}  // namespace
}  // namespace tally::tools
