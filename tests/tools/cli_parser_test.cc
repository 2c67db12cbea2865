// Verifies the command line's parser (CLI11): `tally --help`, `tally
// <command> --help` listing every flag of the command, `tally --version`,
// and the flag errors the hand-written parser gave before it (one line,
// exit 1), including repeated flags and `--flag=value`.
#include <string>
#include <vector>

#include "api/version.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tools/cli_testing.h"

namespace tally {
namespace {

using ::tally::testing::Invocation;
using ::tally::testing::OneCleanErrorLine;
using ::tally::testing::RunTally;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(CliParserTest, TopLevelHelpListsEveryCommand) {
  for (const char* help : {"--help", "-h", "help"}) {
    Invocation r = RunTally({help});
    ASSERT_EQ(r.exit_code, 0) << r;
    for (const char* cmd : {"eval", "inspect", "bench", "export", "serve", "merge", "list-metrics"}) {
      EXPECT_THAT(r.out, HasSubstr(cmd)) << help;
    }
  }
  // No command at all is a usage error, printed on stderr.
  Invocation none = RunTally({});
  EXPECT_EQ(none.exit_code, 2) << none;
  EXPECT_THAT(none.err, HasSubstr("serve"));
}

TEST(CliParserTest, VersionPrintsTheLibraryVersion) {
  Invocation r = RunTally({"--version"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.out, std::string("tally ") + kTallyVersion + "\n");
}

TEST(CliParserTest, CommandHelpListsEveryFlagOfTheCommand) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> expected = {
      {"serve",
       {"--metric", "--host", "--port", "--checkpoint", "--device", "--backend", "--max-body-bytes",
        "--max-state-bytes", "--dtype", "--threads", "--max-connections", "--max-connections-per-client",
        "--idle-timeout", "--request-timeout", "--auth-token-file"}},
      {"eval",
       {"--metric", "--input", "--batch-size", "--world-size", "--sync-timeout", "--rank", "--master-addr",
        "--master-port", "--local-addr", "--inputs-per-rank", "--save-state", "--backend", "--device", "--format",
        "--checked", "--transfer-inputs", "--max-state-bytes"}},
      {"merge",
       {"SOURCE", "--format", "--save-state", "--auth-token-file", "--timeout", "--device", "--backend",
        "--max-state-bytes"}},
      {"inspect", {"--metric", "--input", "--device", "--dump-after", "--proof", "--transfer-inputs", "--format"}},
      {"bench", {"--workload", "--backend", "--format", "--quick"}},
      {"export", {"--metric", "--input", "--out", "--device"}},
  };
  for (const auto& [cmd, flags] : expected) {
    Invocation r = RunTally({cmd, "--help"});
    ASSERT_EQ(r.exit_code, 0) << r;
    EXPECT_THAT(r.err, ::testing::IsEmpty()) << r;
    for (const std::string& f : flags) EXPECT_THAT(r.out, HasSubstr(f + " ")) << cmd;
  }
  // A command's help names only its own flags.
  EXPECT_THAT(RunTally({"export", "--help"}).out, Not(HasSubstr("--threads")));
}

TEST(CliParserTest, FlagErrorsAreOneLine) {
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"serve", "--frobnicate"}), {"unknown flag", "--frobnicate"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--frobnicate=3"}), {"unknown flag", "'--frobnicate'"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric", "mean", "stray"}), {"unexpected argument", "stray"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"inspect", "--device"}), {"--device", "needs a value"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric", "mean", "--checked=maybe"}), {"--checked", "maybe"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"--frobnicate"}), {"unknown command", "--frobnicate"}));
  Invocation r = RunTally({"eval", "--metric", "mean", "--batch-size", "-3"});
  EXPECT_TRUE(OneCleanErrorLine(r, {"--batch-size", "-3"}));
  EXPECT_EQ(r.exit_code, 1);
}

// Verifies that a flag given as --name=value equals --name value, that a
// repeated single-valued flag keeps its last value, that a switch set to
// false is off, and that --metric repeats.
TEST(CliParserTest, FlagFormsAgree) {
  Invocation a = RunTally({"eval", "--metric", "mean", "--metric", "sum", "--format", "json"});
  ASSERT_EQ(a.exit_code, 0) << a;
  EXPECT_THAT(a.out, HasSubstr("\"metric\": \"sum\""));
  EXPECT_EQ(RunTally({"eval", "--metric=mean", "--metric=sum", "--format=json"}).out, a.out);
  EXPECT_EQ(RunTally({"eval", "--metric", "mean", "--metric", "sum", "--format", "table", "--format", "json"}).out,
            a.out);
  EXPECT_EQ(RunTally({"eval", "--metric", "mean", "--metric", "sum", "--format", "json", "--checked=false"}).out,
            a.out);
}

}  // namespace
}  // namespace tally
