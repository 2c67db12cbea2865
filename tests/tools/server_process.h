// A long-running binary (e.g. `tally serve --port 0`) started by a test as a
// child process: stdout on a pipe, so that the test can wait for the
// `listening on HOST:PORT` line the server prints first; stderr in a file
// under $TEST_TMPDIR. The child is killed (SIGKILL) and reaped when the
// ServerProcess is destroyed, and dies with the test process if that dies
// first (PR_SET_PDEATHSIG), so a failing test never leaks a server.
#ifndef TALLY_TESTS_TOOLS_SERVER_PROCESS_H_
#define TALLY_TESTS_TOOLS_SERVER_PROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "tests/tools/cli_testing.h"

namespace tally::testing {

class ServerProcess {
 public:
  // Spawn starts `binary` (a path, e.g. from TallyBinary()) with `args`. It
  // does not wait for anything: call WaitUntilListening next.
  static std::unique_ptr<ServerProcess> Spawn(const std::string& binary, const std::vector<std::string>& args);

  // ~ServerProcess kills the child with SIGKILL unless it already exited,
  // and reaps it.
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // WaitUntilListening reads the first stdout line and parses
  // `listening on HOST:PORT` into host() and port(). An error says why
  // (timeout, the child exited first, another first line) and carries the
  // child's stderr. The rest of stdout is drained in the background.
  absl::Status WaitUntilListening(std::chrono::milliseconds timeout = std::chrono::seconds(60));

  // Signal sends `sig` (e.g. SIGTERM, SIGKILL) to the child.
  void Signal(int sig);

  // Wait waits up to `timeout` for the child to exit and returns what it
  // did: exit code or signal, all of its stdout (the first line included)
  // and stderr. On a timeout the child is still running and the result has
  // exit_code -1 and signal 0.
  Invocation Wait(std::chrono::milliseconds timeout = std::chrono::seconds(30));

  // Running is true until Wait has seen the child exit.
  bool Running() const { return !exited_; }

  pid_t pid() const { return pid_; }
  const std::string& host() const { return host_; }
  int port() const { return port_; }
  // stderr_text is what the child wrote to stderr so far.
  std::string stderr_text() const;

 private:
  ServerProcess() = default;
  // TryReap reaps the child if it exited; true then.
  bool TryReap();
  void StartDrain();

  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  bool exited_ = false;
  int exit_code_ = -1, signal_ = 0;
  std::string command_, stderr_path_, host_;
  int port_ = 0;
  mutable std::mutex out_mu_;
  std::string out_;  // stdout read so far
  std::thread drain_;
};

}  // namespace tally::testing

#endif  // TALLY_TESTS_TOOLS_SERVER_PROCESS_H_
