#include "tests/tools/server_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"

namespace tally::testing {
namespace {

constexpr char kListening[] = "listening on ";

}  // namespace

std::unique_ptr<ServerProcess> ServerProcess::Spawn(const std::string& binary, const std::vector<std::string>& args) {
  static std::atomic<int> counter{0};
  std::unique_ptr<ServerProcess> p(new ServerProcess());
  // Absolute, as RunBinary does, and everything the child needs is built
  // before fork: between fork and exec it only makes async-signal-safe calls.
  char* resolved = realpath(binary.c_str(), nullptr);
  const std::string path = resolved != nullptr ? resolved : binary;
  std::free(resolved);
  p->command_ = absl::StrCat(binary.substr(binary.rfind('/') + 1), " ", absl::StrJoin(args, " "));
  p->stderr_path_ = absl::StrCat(TestTmpDir(), "/server_", getpid(), "_", counter++, ".err");
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(path.c_str()));
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t parent = getpid();

  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return p;  // pid_ stays -1: WaitUntilListening says so
  const pid_t pid = fork();
  if (pid == 0) {
    // Die with the test process, even if it is killed before the destructor runs.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(125);
    const int err = open(p->stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err < 0 || dup2(err, 2) < 0 || dup2(fds[1], 1) < 0) _exit(126);
    execv(path.c_str(), argv.data());
    _exit(127);
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return p;
  }
  p->pid_ = pid;
  p->stdout_fd_ = fds[0];
  return p;
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    exited_ = true;
  }
  if (drain_.joinable()) drain_.join();
  if (stdout_fd_ >= 0) close(stdout_fd_);
}

absl::Status ServerProcess::WaitUntilListening(std::chrono::milliseconds timeout) {
  if (pid_ <= 0) return absl::InternalError(absl::StrCat("could not start ", command_));
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string first;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(out_mu_);
      if (size_t nl = out_.find('\n'); nl != std::string::npos) {
        first = out_.substr(0, nl);
        break;
      }
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return absl::DeadlineExceededError(
          absl::StrCat(command_, ": no stdout line within ", timeout.count(), " ms; stderr: ", stderr_text()));
    }
    pollfd pfd{stdout_fd_, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(stdout_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {  // EOF: the child closed stdout, i.e. it is exiting
      Invocation r = Wait(std::chrono::seconds(10));
      return absl::FailedPreconditionError(absl::StrCat(command_, ": exited before listening (exit ", r.exit_code,
                                                        ", signal ", r.signal, "); stdout: ", r.out,
                                                        " stderr: ", r.err));
    }
    std::lock_guard<std::mutex> lock(out_mu_);
    out_.append(buf, static_cast<size_t>(n));
  }
  StartDrain();
  absl::string_view rest = first;
  const size_t colon = rest.rfind(':');
  if (!absl::ConsumePrefix(&rest, kListening) || colon == std::string::npos ||
      !absl::SimpleAtoi(absl::string_view(first).substr(colon + 1), &port_) || port_ <= 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(command_, ": first stdout line is not 'listening on HOST:PORT': '", first, "'"));
  }
  host_ = std::string(rest.substr(0, colon - (sizeof(kListening) - 1)));
  return absl::OkStatus();
}

void ServerProcess::StartDrain() {
  if (drain_.joinable() || stdout_fd_ < 0) return;
  // The server may write more; a full pipe must never block it.
  drain_ = std::thread([this] {
    char buf[4096];
    while (true) {
      const ssize_t n = read(stdout_fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;
      std::lock_guard<std::mutex> lock(out_mu_);
      out_.append(buf, static_cast<size_t>(n));
    }
  });
}

void ServerProcess::Signal(int sig) {
  if (pid_ > 0 && !exited_) kill(pid_, sig);
}

bool ServerProcess::TryReap() {
  if (exited_) return true;
  if (pid_ <= 0) return false;
  int status = 0;
  const pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r != pid_) return false;
  exited_ = true;
  if (WIFEXITED(status)) exit_code_ = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) signal_ = WTERMSIG(status);
  return true;
}

Invocation ServerProcess::Wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!TryReap() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Invocation r;
  r.command = command_;
  if (exited_) {
    r.exit_code = exit_code_;
    r.signal = signal_;
    // The child is gone: its stdout reaches EOF.
    StartDrain();
    if (drain_.joinable()) drain_.join();
  }
  {
    std::lock_guard<std::mutex> lock(out_mu_);
    r.out = out_;
  }
  r.err = stderr_text();
  return r;
}

std::string ServerProcess::stderr_text() const {
  std::ifstream in(stderr_path_, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace tally::testing
