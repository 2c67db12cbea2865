// ServerProcess: a server binary run in the background by a test, for the
// servers that print "listening on HOST:PORT" as their first stdout line
// (examples/inference_server).
#ifndef TALLY_TESTS_EXAMPLES_SERVER_PROCESS_H_
#define TALLY_TESTS_EXAMPLES_SERVER_PROCESS_H_

#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tally::testing {

// ServerProcess owns a started server: its pid and the port it announced.
class ServerProcess {
 public:
  // Start runs `binary` with `args` (stderr to a file under TestTmpDir) and
  // waits up to `timeout_s` for its first stdout line, "listening on
  // 127.0.0.1:PORT". An error (with the server's stderr) when it exits or
  // says something else first.
  static absl::StatusOr<ServerProcess> Start(const std::string& binary, const std::vector<std::string>& args,
                                             int timeout_s = 120);
  ServerProcess(ServerProcess&& other) noexcept;
  ServerProcess& operator=(ServerProcess&&) = delete;
  // The destructor kills a server that was not stopped.
  ~ServerProcess();

  int port() const { return port_; }

  // Terminate sends SIGTERM and waits: the exit code, or 128 + the signal
  // that ended it.
  int Terminate();
  // Stderr returns what the server printed on stderr so far.
  std::string Stderr() const;

 private:
  ServerProcess(pid_t pid, int out_fd, std::string err_path, int port)
      : pid_(pid), out_fd_(out_fd), err_path_(std::move(err_path)), port_(port) {}
  pid_t pid_ = -1;
  int out_fd_ = -1;  // the read end of its stdout, kept open so that it can write
  std::string err_path_;
  int port_ = 0;
};

}  // namespace tally::testing

#endif  // TALLY_TESTS_EXAMPLES_SERVER_PROCESS_H_
