#include "engine/dist/launch.h"

#include <ATen/Parallel.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <exception>
#include <iostream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tally::dist {
namespace {

bool WriteAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Report: int32 status code, u64 message length, message, u64 output
// length, output.
std::string EncodeReport(const absl::StatusOr<std::string>& r) {
  int32_t code = static_cast<int32_t>(r.ok() ? absl::StatusCode::kOk : r.status().code());
  std::string msg = r.ok() ? "" : std::string(r.status().message());
  std::string out = r.ok() ? *r : "";
  uint64_t ml = msg.size(), ol = out.size();
  std::string s;
  s.append(reinterpret_cast<const char*>(&code), sizeof code);
  s.append(reinterpret_cast<const char*>(&ml), sizeof ml);
  s += msg;
  s.append(reinterpret_cast<const char*>(&ol), sizeof ol);
  s += out;
  return s;
}

bool DecodeReport(const std::string& s, absl::Status* status, std::string* output) {
  size_t at = 0;
  auto take = [&](void* dst, size_t n) {
    if (s.size() - at < n) return false;
    memcpy(dst, s.data() + at, n);
    at += n;
    return true;
  };
  int32_t code;
  uint64_t ml, ol;
  if (!take(&code, sizeof code) || !take(&ml, sizeof ml) || s.size() - at < ml) return false;
  std::string msg = s.substr(at, ml);
  at += ml;
  if (!take(&ol, sizeof ol) || s.size() - at != ol) return false;
  *output = s.substr(at, ol);
  *status = code == 0 ? absl::OkStatus() : absl::Status(static_cast<absl::StatusCode>(code), msg);
  return true;
}

// ReadPort waits up to `timeout` for the parent to send the store's port.
absl::StatusOr<int> ReadPort(int fd, absl::Duration timeout) {
  std::string text;
  absl::Time deadline = absl::Now() + timeout;
  while (true) {
    int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (ms <= 0) return absl::DeadlineExceededError("no rendezvous port from the launcher");
    pollfd p{fd, POLLIN, 0};
    int n = poll(&p, 1, static_cast<int>(std::min<int64_t>(ms, 1 << 30)));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) continue;
    char buf[32];
    ssize_t r = read(fd, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    text.append(buf, r);
  }
  int port = 0;
  if (!absl::SimpleAtoi(text, &port) || port <= 0) {
    return absl::UnavailableError("the launcher could not start the rendezvous store");
  }
  return port;
}

[[noreturn]] void RunChild(int rank, int world_size, int port_fd, int report_fd, const LaunchOptions& options,
                           const RankFn& fn, pid_t parent) {
  // A rank outlives no launcher (a Ctrl-C'd `tally eval` leaves no rank
  // waiting out its timeout).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);
  // Gloo writes to peers' sockets without MSG_NOSIGNAL: when a peer dies,
  // a survivor must get EPIPE (an error its Sync reports), not SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  at::set_num_threads(std::max(1, options.threads_per_rank));
  absl::StatusOr<std::string> result = absl::InternalError("not run");
  auto port = ReadPort(port_fd, options.timeout + absl::Seconds(10));
  close(port_fd);
  if (!port.ok()) {
    result = port.status();
  } else {
    Rendezvous rv;
    rv.port = *port;
    rv.rank = rank;
    rv.world_size = world_size;
    rv.timeout = options.timeout;
    try {
      result = fn(rv);
    } catch (const std::exception& e) {
      result = absl::InternalError(absl::StrCat("uncaught exception: ", e.what()));
    } catch (...) {
      result = absl::InternalError("uncaught exception");
    }
  }
  std::string report = EncodeReport(result);
  bool sent = WriteAll(report_fd, report.data(), report.size());
  close(report_fd);
  _exit(sent && result.ok() ? 0 : 1);
}

std::string DescribeWait(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return absl::StrCat("was killed by signal ", sig, " (", strsignal(sig), ")");
  }
  if (WIFEXITED(status)) return absl::StrCat("exited with status ", WEXITSTATUS(status));
  return "ended";
}

}  // namespace

absl::StatusOr<std::vector<RankOutcome>> RunRanks(int world_size, const LaunchOptions& options, const RankFn& fn) {
  if (world_size < 1) return absl::InvalidArgumentError(absl::StrCat("world size must be positive, got ", world_size));
  // Buffered output would otherwise be written once more by every child.
  std::cout.flush();
  std::cerr.flush();
  fflush(nullptr);
  std::vector<int> report_read(world_size, -1), report_write(world_size, -1);
  std::vector<int> port_read(world_size, -1), port_write(world_size, -1);
  auto close_fd = [](int& fd) {
    if (fd >= 0) close(fd);
    fd = -1;
  };
  auto close_all = [&] {
    for (int r = 0; r < world_size; ++r) {
      close_fd(report_read[r]);
      close_fd(report_write[r]);
      close_fd(port_read[r]);
      close_fd(port_write[r]);
    }
  };
  for (int r = 0; r < world_size; ++r) {
    int a[2], b[2];
    if (pipe(a) != 0 || pipe(b) != 0) {
      close_all();
      return absl::ResourceExhaustedError(
          absl::StrCat("cannot create pipes for ", world_size, " ranks: ", strerror(errno)));
    }
    report_read[r] = a[0];
    report_write[r] = a[1];
    port_read[r] = b[0];
    port_write[r] = b[1];
  }
  const absl::Time start = absl::Now();
  const pid_t parent = getpid();
  // Writing a port to a rank that already died must not kill the launcher.
  struct sigaction ignore_pipe = {}, old_pipe = {};
  ignore_pipe.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore_pipe, &old_pipe);
  std::vector<pid_t> pids(world_size, -1);
  for (int r = 0; r < world_size; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      int err = errno;
      for (int q = 0; q < r; ++q) kill(pids[q], SIGKILL);
      for (int q = 0; q < r; ++q) waitpid(pids[q], nullptr, 0);
      close_all();
      sigaction(SIGPIPE, &old_pipe, nullptr);
      return absl::ResourceExhaustedError(absl::StrCat("cannot fork rank ", r, ": ", strerror(err)));
    }
    if (pid == 0) {
      // Keep only this rank's ends: a pipe reaches EOF only when every
      // process holding its write end has closed it.
      for (int q = 0; q < world_size; ++q) {
        close_fd(report_read[q]);
        close_fd(port_write[q]);
        if (q != r) {
          close_fd(report_write[q]);
          close_fd(port_read[q]);
        }
      }
      RunChild(r, world_size, port_read[r], report_write[r], options, fn, parent);
    }
    pids[r] = pid;
  }
  for (int r = 0; r < world_size; ++r) {
    close_fd(report_write[r]);
    close_fd(port_read[r]);
  }
  // The store starts after the forks: the children inherit no thread of it.
  auto server = StoreServer::Start("127.0.0.1", options.timeout);
  std::string port_text = server.ok() ? absl::StrCat((*server)->port()) : "";
  for (int r = 0; r < world_size; ++r) {
    WriteAll(port_write[r], port_text.data(), port_text.size());  // a dead child is reported below
    close_fd(port_write[r]);
  }

  std::vector<RankOutcome> outcomes(world_size);
  std::vector<std::string> reports(world_size);
  std::vector<bool> open(world_size, true), reported(world_size, false), failed(world_size, false);
  absl::Time deadline = absl::InfiniteFuture();
  const absl::Duration grace = options.timeout + absl::Seconds(5);
  int remaining = world_size;
  auto stop = [&](int r) {
    kill(pids[r], SIGKILL);
    outcomes[r].stopped = true;
    close_fd(report_read[r]);
    open[r] = false;
    --remaining;
  };
  while (remaining > 0) {
    std::vector<pollfd> fds;
    std::vector<int> ranks;
    for (int r = 0; r < world_size; ++r) {
      if (open[r]) {
        fds.push_back({report_read[r], POLLIN, 0});
        ranks.push_back(r);
      }
    }
    int wait_ms = -1;
    if (deadline != absl::InfiniteFuture()) {
      wait_ms = static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
    }
    int n = poll(fds.data(), fds.size(), wait_ms);
    if (n < 0 && errno == EINTR) continue;
    for (size_t k = 0; n > 0 && k < fds.size(); ++k) {
      if (fds[k].revents == 0) continue;
      int r = ranks[k];
      char buf[65536];
      ssize_t got = read(report_read[r], buf, sizeof buf);
      if (got < 0 && errno == EINTR) continue;
      if (got > 0) {
        reports[r].append(buf, got);
        continue;
      }
      // End of the report: the rank has finished (or died).
      close_fd(report_read[r]);
      open[r] = false;
      --remaining;
      outcomes[r].seconds = absl::ToDoubleSeconds(absl::Now() - start);
      reported[r] = DecodeReport(reports[r], &outcomes[r].status, &outcomes[r].output);
      failed[r] = !reported[r] || !outcomes[r].status.ok();
      if (failed[r] && deadline == absl::InfiniteFuture()) {
        deadline = absl::Now() + grace;
        if (options.stop_all_on_failure) {
          for (int q = 0; q < world_size; ++q) {
            if (open[q]) stop(q);
          }
        }
      }
    }
    if (remaining > 0 && (n < 0 || absl::Now() >= deadline)) {
      for (int r = 0; r < world_size; ++r) {
        if (open[r]) stop(r);
      }
    }
  }
  sigaction(SIGPIPE, &old_pipe, nullptr);
  for (int r = 0; r < world_size; ++r) {
    int status = 0;
    while (waitpid(pids[r], &status, 0) < 0 && errno == EINTR) {
    }
    RankOutcome& o = outcomes[r];
    o.rank = r;
    if (o.stopped) {
      o.abnormal = true;
      o.status = absl::DeadlineExceededError(
          absl::StrCat("did not finish within ", absl::FormatDuration(grace), " after another rank failed; stopped"));
    } else if (!reported[r]) {
      o.abnormal = true;
      o.status = absl::AbortedError(absl::StrCat("died before reporting: it ", DescribeWait(status)));
    }
  }
  if (!server.ok()) {
    // Every child saw no port; say why once.
    return server.status();
  }
  return outcomes;
}

std::pair<int64_t, int64_t> ShardRange(int64_t rows, int world_size, int rank) {
  const int64_t base = rows / world_size, extra = rows % world_size;
  const int64_t begin = rank * base + std::min<int64_t>(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

absl::Status FirstFailure(const std::vector<RankOutcome>& outcomes) {
  auto category = [](const RankOutcome& o) {
    if (o.status.ok()) return 4;
    if (o.stopped) return 3;
    if (o.abnormal) return 1;
    absl::StatusCode c = o.status.code();
    if (c == absl::StatusCode::kUnavailable || c == absl::StatusCode::kDeadlineExceeded) return 2;
    return 0;
  };
  const RankOutcome* best = nullptr;
  for (const RankOutcome& o : outcomes) {
    if (category(o) == 4) continue;
    if (best == nullptr || category(o) < category(*best)) best = &o;
  }
  if (best == nullptr) return absl::OkStatus();
  if (category(*best) == 0) {
    bool alike = true;
    for (const RankOutcome& o : outcomes) alike &= o.status.ok() || o.stopped || o.status == best->status;
    if (alike) return best->status;
  }
  const std::string prefix = absl::StrCat("rank ", best->rank, " of ", outcomes.size());
  std::string msg(best->status.message());
  if (absl::StrContains(msg, absl::StrCat("(", prefix, ")"))) return best->status;
  return absl::Status(best->status.code(), absl::StrCat(prefix, ": ", msg));
}

}  // namespace tally::dist
