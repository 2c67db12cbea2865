// docs/cli.md is the complete command-line reference: every command that
// `tally --help` lists has a section, and every flag its `--help` prints is
// written in that section.
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/tools/cli_testing.h"
#include "tools/tally/bench.h"

namespace tally {
namespace {

using ::tally::testing::ReadFile;

// The commands under "Subcommands:" in `tally --help`.
std::vector<std::string> Commands() {
  testing::Invocation r = testing::RunTally({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r;
  std::vector<std::string> out;
  bool in_list = false;
  for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
    if (line == "Subcommands:") {
      in_list = true;
    } else if (in_list && absl::StartsWith(line, "  ")) {
      std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
      out.push_back(words.front());
    } else if (in_list && !line.empty()) {
      in_list = false;
    }
  }
  return out;
}

// The section "## <command> ..." of the reference, up to the next "## ".
std::string Section(const std::string& doc, const std::string& command) {
  size_t start = doc.find(absl::StrCat("\n## ", command, " "));
  if (start == std::string::npos) return "";
  size_t end = doc.find("\n## ", start + 1);
  return doc.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

TEST(CliReference, EveryFlagOfEveryCommandIsDocumented) {
  const std::string doc = ReadFile("docs/cli.md");
  ASSERT_FALSE(doc.empty()) << "docs/cli.md is missing from the runfiles";
  const std::vector<std::string> commands = Commands();
  ASSERT_GE(commands.size(), 6u);
  const std::regex flag("--[a-z][a-z-]*");
  for (const std::string& command : commands) {
    SCOPED_TRACE(command);
    const std::string section = Section(doc, command);
    ASSERT_FALSE(section.empty()) << "docs/cli.md has no section '## " << command << " ...'";
    testing::Invocation r = testing::RunTally({command, "--help"});
    ASSERT_EQ(r.exit_code, 0) << r;
    std::set<std::string> flags;
    for (std::sregex_iterator it(r.out.begin(), r.out.end(), flag), end; it != end; ++it) flags.insert(it->str());
    flags.erase("--help");
    for (const std::string& f : flags) {
      EXPECT_NE(section.find(f), std::string::npos) << "docs/cli.md, section " << command << ", lacks " << f;
    }
  }
}

TEST(CliReference, EveryBenchWorkloadAndJsonKeyIsDocumented) {
  // Verifies that the bench section names every workload in its table and
  // every key BenchToJson can print (all fields set).
  const std::string section = Section(ReadFile("docs/cli.md"), "bench");
  ASSERT_FALSE(section.empty());
  for (const std::string& w : tools::BenchWorkloads()) {
    EXPECT_NE(section.find(absl::StrCat("\n| ", w, " |")), std::string::npos) << "no table row for workload " << w;
  }
  tools::BenchResult all;
  all.workload = "w";
  for (std::optional<double>* f :
       {&all.us_per_update, &all.ms_compute, &all.us_per_update_cold, &all.gb_per_s, &all.ms_per_sync,
        &all.collectives_per_sync, &all.read_gb_per_s, &all.read_gb_per_s_spread, &all.read_probe_bytes,
        &all.read_probe_runs, &all.bandwidth_fraction, &all.state_bytes, &all.peak_rss_mb, &all.state_file_bytes,
        &all.sources_merged, &all.ms_merge}) {
    *f = 1;
  }
  const std::string json = tools::BenchToJson(all);
  const std::regex key("\"([a-z_0-9]+)\":");
  int keys = 0;
  for (std::sregex_iterator it(json.begin(), json.end(), key), end; it != end; ++it, ++keys) {
    EXPECT_NE(section.find(absl::StrCat("\"", (*it)[1].str(), "\"")), std::string::npos)
        << "docs/cli.md, section bench, lacks the JSON key " << (*it)[1].str();
  }
  EXPECT_GE(keys, 19);
}

TEST(CliReference, GlobalHelpAndVersionAreDocumented) {
  const std::string doc = ReadFile("docs/cli.md");
  EXPECT_NE(doc.find("tally --version"), std::string::npos);
  EXPECT_NE(doc.find("tally <command> --help"), std::string::npos);
}

}  // namespace
}  // namespace tally
