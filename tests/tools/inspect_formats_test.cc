// Verifies `tally inspect --format dot|json`: the Graphviz graph renders
// with dot (Debian's graphviz) and shows inputs, states, fusion groups and
// devices; the JSON holds the same facts as the text form (states,
// reducers, fusion groups, the update's ATen calls, the proof) and the
// devices `--device` names, hardware or not.
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tools/cli_testing.h"

namespace tally {
namespace {

using ::tally::testing::Invocation;
using ::tally::testing::OneCleanErrorLine;
using ::tally::testing::RunTally;
using ::testing::HasSubstr;
using json = nlohmann::json;

const char kAcc[] = "multiclass_accuracy(num_classes=3)";
const char kF1[] = "multiclass_f1_score(num_classes=3)";

TEST(InspectFormatsTest, DotRendersWithGraphviz) {
  Invocation r = RunTally({"inspect", "--metric", kAcc, "--metric", kF1, "--format", "dot"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("digraph tally {"));
  EXPECT_THAT(r.out, HasSubstr("\"%preds\""));                    // an input
  EXPECT_THAT(r.out, HasSubstr("@multiclass_accuracy.confmat"));  // a state
  EXPECT_THAT(r.out, HasSubstr("fillcolor=lightblue"));           // a fused kernel
  EXPECT_THAT(r.out, HasSubstr("fusion groups:"));
  EXPECT_THAT(r.out, HasSubstr("@cpu"));
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("color=red")));  // proved: nothing elsewhere
  const std::string dir = ::tally::testing::TestTmpDir();
  const std::string dot = absl::StrCat(dir, "/program.dot"), png = absl::StrCat(dir, "/program.png");
  std::ofstream(dot) << r.out;
  ASSERT_EQ(std::system(absl::StrCat("dot -Tpng '", dot, "' -o '", png, "'").c_str()), 0)
      << "graphviz's dot (scripts/setup installs it) rejected the graph";
  std::ifstream in(png, std::ios::binary);
  std::string magic(8, '\0');
  in.read(magic.data(), 8);
  EXPECT_EQ(magic, "\x89PNG\r\n\x1a\n");
}

TEST(InspectFormatsTest, JsonHoldsTheTextFormsFacts) {
  Invocation r = RunTally({"inspect", "--metric", kAcc, "--metric", kF1, "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r;
  json j = json::parse(r.out);
  EXPECT_EQ(j["device"], "cpu");
  ASSERT_EQ(j["inputs"].size(), 2u);
  EXPECT_EQ(j["inputs"][0]["name"], "preds");
  bool confmat = false;
  for (const auto& s : j["states"]) {
    EXPECT_EQ(s["device"], "cpu");
    if (s["name"] == "multiclass_accuracy.confmat") {
      confmat = true;
      EXPECT_EQ(s["reducer"], "sum");
      EXPECT_EQ(s["shape"], json::array({"3", "3"}));
    }
  }
  EXPECT_TRUE(confmat);
  ASSERT_FALSE(j["fusion_groups"].empty());
  // The text form's counts, from the same compile.
  Invocation text = RunTally({"inspect", "--metric", kAcc, "--metric", kF1});
  ASSERT_EQ(text.exit_code, 0) << text;
  EXPECT_THAT(text.out, HasSubstr(absl::StrCat("update: ", j["update"]["aten_calls"].get<int>(), " ATen calls")));
  EXPECT_THAT(text.out, HasSubstr(j["fusion_groups"][0].get<std::string>()));
  int fused = 0;
  for (const auto& n : j["update"]["nodes"]) fused += n["fused"].get<bool>() ? 1 : 0;
  EXPECT_GE(fused, 1);
  EXPECT_EQ(j["outputs"], json::array({"multiclass_accuracy", "multiclass_f1_score"}));
  EXPECT_EQ(j["proof"]["device"], "cpu");
  EXPECT_EQ(j["passes"].back()["pass"], "prove-single-device");
}

TEST(InspectFormatsTest, JsonPlansForADeviceThisMachineLacks) {
  Invocation r = RunTally({"inspect", "--metric", kAcc, "--device", "cuda:1", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r;
  json j = json::parse(r.out);
  EXPECT_EQ(j["device"], "cuda:1");
  for (const auto& n : j["update"]["nodes"]) {
    for (const auto& o : n["outputs"]) EXPECT_EQ(o["device"], "cuda:1");
  }
  Invocation dot = RunTally({"inspect", "--metric", kAcc, "--device", "cuda:1", "--format", "dot"});
  ASSERT_EQ(dot.exit_code, 0) << dot;
  EXPECT_THAT(dot.out, HasSubstr("@cuda:1"));
}

TEST(InspectFormatsTest, UnknownFormatIsOneLine) {
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"inspect", "--metric", kAcc, "--format", "svg"}), {"--format", "svg"}));
}

}  // namespace
}  // namespace tally
