// Launch: run one function as W ranks in forked processes on this machine.
//
// RunRanks forks W children, then starts a rendezvous store (a TCPStore
// server on an OS-assigned loopback port, engine/dist/gloo_group.h) in the
// calling process and hands each child its Rendezvous through a pipe. Each
// child runs `fn` — typically ConnectGloo, updates, dist::Sync — and reports
// its status and an output string back through another pipe, then exits
// without running destructors or atexit handlers. The caller gets one
// RankOutcome per rank: what the rank reported, or how it ended (killed by a
// signal, exited without reporting, or stopped by RunRanks).
//
// Never a hang: once a rank has failed or died, the others get `timeout` plus
// a few seconds (their collectives fail within `timeout`) and are then
// killed; with `stop_all_on_failure` they are killed at once.
//
// Children run with `threads_per_rank` ATen intra-op threads (default 1):
// Debian's LibTorch uses GNU OpenMP, whose thread pool hangs in a child forked
// after the parent ran a parallel region, unless the child stays on one
// thread. The caller must not hold locks other threads may need, as with any
// fork.
#ifndef TALLY_ENGINE_DIST_LAUNCH_H_
#define TALLY_ENGINE_DIST_LAUNCH_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/dist/gloo_group.h"

namespace tally::dist {

// LaunchOptions configure RunRanks.
struct LaunchOptions {
  // timeout goes into every rank's Rendezvous (joining, each collective).
  absl::Duration timeout = absl::Seconds(30);
  int threads_per_rank = 1;
  // stop_all_on_failure kills the other ranks as soon as one fails (a
  // command line wants the first error, not every rank's consequence of it).
  bool stop_all_on_failure = false;
};

// RankOutcome is how one rank ended.
struct RankOutcome {
  int rank = 0;
  absl::Status status;  // what the rank reported, or why it reported nothing
  std::string output;   // the string `fn` returned
  // abnormal: the rank reported nothing (a signal, an early exit, or
  // stopped by RunRanks, see `stopped`).
  bool abnormal = false;
  bool stopped = false;  // killed by RunRanks after another rank failed
  double seconds = 0;    // from fork to the end of its report
};

// RankFn runs on each rank; its string comes back in RankOutcome::output.
using RankFn = std::function<absl::StatusOr<std::string>(const Rendezvous& rendezvous)>;

// RunRanks runs `fn` on `world_size` forked ranks and waits for all of them.
// It fails itself only when it cannot fork or start the store.
absl::StatusOr<std::vector<RankOutcome>> RunRanks(int world_size, const LaunchOptions& options, const RankFn& fn);

// ShardRange is rank `rank`'s rows [first, second) of `rows` split into
// `world_size` contiguous shards as equal as possible (the first
// rows % world_size ranks get one more; ranks past the rows get none).
std::pair<int64_t, int64_t> ShardRange(int64_t rows, int world_size, int rank);

// FirstFailure is OK when every rank succeeded, otherwise the failure that
// explains the run, prefixed "rank R of W: ": a rank's own error first (a
// bad input, a program mismatch), then a rank that died, then the
// communication errors other ranks saw as a consequence, then ranks stopped.
// A rank's own error that every failed rank reported alike (the same bad
// input everywhere, or rank 0's Compute; ranks stopped by RunRanks reported
// nothing) is the run's error as one process would give it, without the
// prefix.
absl::Status FirstFailure(const std::vector<RankOutcome>& outcomes);

}  // namespace tally::dist

#endif  // TALLY_ENGINE_DIST_LAUNCH_H_
