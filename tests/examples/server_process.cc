#include "tests/examples/server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tests/tools/cli_testing.h"

namespace tally::testing {
namespace {

// ExitCode is the exit code, or 128 + the signal.
int ExitCode(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

}  // namespace

absl::StatusOr<ServerProcess> ServerProcess::Start(const std::string& binary, const std::vector<std::string>& args,
                                                   int timeout_s) {
  static int counter = 0;
  const std::string err_path = absl::StrCat(TestTmpDir(), "/server_", getpid(), "_", counter++, ".err");
  // Built before fork: the child of a threaded process only execs.
  std::vector<char*> argv = {const_cast<char*>(binary.c_str())};
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  int out[2];
  if (pipe(out) != 0) return absl::InternalError("pipe failed");
  const pid_t pid = fork();
  if (pid == 0) {
    int fe = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out[1], 1);
    dup2(fe, 2);
    close(out[0]);
    execv(binary.c_str(), argv.data());
    _exit(127);
  }
  close(out[1]);
  ServerProcess server(pid, out[0], err_path, 0);

  // Read the first line, a byte at a time so that nothing after it is taken.
  std::string line;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  while (line.empty() || line.back() != '\n') {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p = {server.out_fd_, POLLIN, 0};
    char c = 0;
    if (left.count() <= 0 || poll(&p, 1, static_cast<int>(left.count())) <= 0 || read(server.out_fd_, &c, 1) != 1) {
      return absl::UnavailableError(absl::StrCat(binary, " printed '", line, "' and then ",
                                                 left.count() <= 0 ? "nothing in time" : "closed stdout",
                                                 "; stderr: ", server.Stderr()));
    }
    line += c;
  }
  const std::string prefix = "listening on 127.0.0.1:";
  int port = 0;
  if (!absl::StartsWith(line, prefix) || !absl::SimpleAtoi(line.substr(prefix.size()), &port) || port <= 0) {
    return absl::UnavailableError(absl::StrCat(binary, " started with '", line, "', not '", prefix, "PORT'"));
  }
  server.port_ = port;
  return std::move(server);
}

ServerProcess::ServerProcess(ServerProcess&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)),
      out_fd_(std::exchange(other.out_fd_, -1)),
      err_path_(std::move(other.err_path_)),
      port_(other.port_) {}

ServerProcess::~ServerProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
}

int ServerProcess::Terminate() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return ExitCode(status);
}

std::string ServerProcess::Stderr() const {
  std::ifstream in(err_path_);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tally::testing
