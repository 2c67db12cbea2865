#include "tests/tools/cli_testing.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tally::testing {
namespace {

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string FindBinary(const std::string& workspace_path) {
  std::vector<std::string> candidates;
  for (const char* env : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    if (const char* dir = std::getenv(env)) candidates.push_back(absl::StrCat(dir, "/tally/", workspace_path));
  }
  candidates.push_back(workspace_path);
  for (const std::string& c : candidates) {
    if (access(c.c_str(), X_OK) == 0) return c;
  }
  return "";
}

std::string TallyBinary() { return FindBinary("tools/tally/tally"); }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string TestTmpDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir ? dir : "/tmp";
}

absl::Status WriteNpyFile(const std::string& path, io::NpyDType dtype, std::vector<int64_t> shape, const void* data,
                          size_t bytes) {
  io::NpyArray a;
  a.dtype = dtype;
  a.shape = std::move(shape);
  a.data.assign(static_cast<const char*>(data), bytes);
  return io::WriteNpy(path, a);
}

std::ostream& operator<<(std::ostream& os, const Invocation& r) {
  return os << "$ " << r.command << "\nexit " << r.exit_code << " signal " << r.signal << "\n--- stdout ---\n"
            << r.out << "--- stderr ---\n"
            << r.err;
}

Invocation RunBinary(const std::string& path, const std::vector<std::string>& args, const std::string& cwd) {
  static int counter = 0;
  // Absolute, so that it still names the binary after a chdir.
  char* resolved = realpath(path.c_str(), nullptr);
  const std::string binary = resolved != nullptr ? resolved : "";
  std::free(resolved);
  Invocation r;
  r.command = absl::StrCat(path.substr(path.rfind('/') + 1), " ", absl::StrJoin(args, " "));
  const std::string base = absl::StrCat(TestTmpDir(), "/run_", getpid(), "_", counter++);
  const std::string out_path = base + ".out", err_path = base + ".err";
  pid_t pid = fork();
  if (pid == 0) {
    int fo = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fo, 1);
    dup2(fe, 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(binary.c_str()));
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  r.out = ReadWhole(out_path);
  r.err = ReadWhole(err_path);
  return r;
}

Invocation RunTally(const std::vector<std::string>& args, const std::string& cwd) {
  return RunBinary(TallyBinary(), args, cwd);
}

::testing::AssertionResult OneCleanErrorLine(const Invocation& r, const std::vector<std::string>& names) {
  if (r.signal != 0) return ::testing::AssertionFailure() << "killed by signal " << r.signal << "\n" << r;
  if (r.exit_code == 0) return ::testing::AssertionFailure() << "exited 0\n" << r;
  if (r.exit_code == 127) return ::testing::AssertionFailure() << "could not run the binary\n" << r;
  if (r.err.empty() || r.err.back() != '\n' || r.err.find('\n') != r.err.size() - 1) {
    return ::testing::AssertionFailure() << "stderr is not exactly one line\n" << r;
  }
  for (const char* crash :
       {"terminate", "Exception raised from", "what():", "Aborted", "frame #", "Traceback", "Segmentation"}) {
    if (absl::StrContains(r.err, crash)) {
      return ::testing::AssertionFailure() << "stderr has '" << crash << "'\n" << r;
    }
  }
  for (const std::string& n : names) {
    if (!absl::StrContains(r.err, n))
      return ::testing::AssertionFailure() << "stderr does not name '" << n << "'\n" << r;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace tally::testing
