// Running a built binary (`tally`, or another one such as an example) from a
// test: its exit, stdout and stderr, and the one-clean-error-line check of
// docs/cli.md.
#ifndef TALLY_TESTS_TOOLS_CLI_TESTING_H_
#define TALLY_TESTS_TOOLS_CLI_TESTING_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/io/npy.h"
#include "gtest/gtest.h"

namespace tally::testing {

// FindBinary finds a binary among the test's runfiles by its workspace path
// (e.g. "tools/tally/tally" for //tools/tally:tally; the test needs it as a
// data dependency). "" if absent.
std::string FindBinary(const std::string& workspace_path);

// TallyBinary is FindBinary("tools/tally/tally").
std::string TallyBinary();

// ReadFile is the whole file at `path`, bytes as they are; "" when it cannot
// be read.
std::string ReadFile(const std::string& path);

// TestTmpDir is $TEST_TMPDIR, or /tmp.
std::string TestTmpDir();

// WriteNpyFile writes `bytes` of raw little-endian C-order elements as an
// input file for the binary.
absl::Status WriteNpyFile(const std::string& path, io::NpyDType dtype, std::vector<int64_t> shape, const void* data,
                          size_t bytes);

// Invocation is what one run of the binary did.
struct Invocation {
  int exit_code = -1;  // when it exited normally
  int signal = 0;      // when a signal ended it
  std::string out;
  std::string err;
  std::string command;
};
std::ostream& operator<<(std::ostream& os, const Invocation& r);

// RunBinary runs the binary at `path` (e.g. from FindBinary) with `args`,
// capturing stdout and stderr; with a `cwd` it runs there (relative file
// arguments are read from it).
Invocation RunBinary(const std::string& path, const std::vector<std::string>& args, const std::string& cwd = "");

// RunTally is RunBinary(TallyBinary(), args, cwd).
Invocation RunTally(const std::vector<std::string>& args, const std::string& cwd = "");

// OneCleanErrorLine checks a failed run: a normal non-zero exit, exactly one
// line on stderr containing every one of `names`, and no trace of a crash.
::testing::AssertionResult OneCleanErrorLine(const Invocation& r, const std::vector<std::string>& names);

}  // namespace tally::testing

#endif  // TALLY_TESTS_TOOLS_CLI_TESTING_H_
