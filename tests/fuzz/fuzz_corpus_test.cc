// Replays every committed seed (corpus/<target>/) and every input that once
// crashed a fuzzer (regressions/<target>/) through the fuzz targets, so the
// regular test suite checks the fixed bugs without libFuzzer. A target that
// crashes or fails a FuzzCheck aborts this test.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"
#include "tests/fuzz/targets.h"

namespace tally::fuzz {
namespace {

namespace fs = std::filesystem;

fs::path FuzzDir() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  return fs::path(srcdir != nullptr ? srcdir : ".") / "tally" / "tests" / "fuzz";
}

std::vector<fs::path> FilesIn(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  return out;
}

std::string Contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs every seed and regression of `target`; returns how many seeds ran.
int ReplayAll(const std::string& target, void (*fn)(absl::string_view)) {
  int seeds = 0;
  for (const char* kind : {"corpus", "regressions"}) {
    for (const fs::path& file : FilesIn(FuzzDir() / kind / target)) {
      SCOPED_TRACE(file.string());
      // Printed first: a crash ends the test before the trace is shown.
      std::fprintf(stderr, "replaying %s\n", file.string().c_str());
      fn(Contents(file));
      if (absl::string_view(kind) == "corpus") ++seeds;
    }
  }
  return seeds;
}

// Each target has seeds: an empty corpus would make its fuzzer start blind
// and this test pass vacuously.
TEST(FuzzCorpusTest, NpySeedsAndRegressionsParseWithoutCrashing) { EXPECT_GT(ReplayAll("npy", FuzzNpy), 0); }

TEST(FuzzCorpusTest, MetricSpecSeedsAndRegressionsParseWithoutCrashing) {
  EXPECT_GT(ReplayAll("metric_spec", FuzzMetricSpec), 0);
}

TEST(FuzzCorpusTest, IrSeedsAndRegressionsRoundTrip) { EXPECT_GT(ReplayAll("ir", FuzzIr), 0); }

TEST(FuzzCorpusTest, CheckpointSeedsAndRegressionsLoadWithoutCrashing) {
  EXPECT_GT(ReplayAll("checkpoint", FuzzCheckpoint), 0);
}

TEST(FuzzCorpusTest, JsonInputsSeedsAndRegressionsParseWithoutCrashing) {
  EXPECT_GT(ReplayAll("json_inputs", FuzzJsonInputs), 0);
}

TEST(FuzzCorpusTest, ProgramStateSeedsAndRegressionsLoadWithoutCrashing) {
  EXPECT_GT(ReplayAll("program_state", FuzzProgramState), 0);
}

TEST(FuzzCorpusTest, StateFileSeedsAndRegressionsMergeWithoutCrashing) {
  EXPECT_GT(ReplayAll("state_file", FuzzStateFile), 0);
}

}  // namespace
}  // namespace tally::fuzz
