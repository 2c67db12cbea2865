// Distributed sync: every rank's states folded into one set, over a c10d
// process group (Gloo here, NCCL on a CUDA build; the code is the same).
//
// Because every state has an associative reducer, syncing is the fold that
// batching and Program::Merge already do, run across processes:
//
//   1. one allgather of a fixed-size header per rank: a fingerprint of the
//      compiled module (device names left out) and the row count of every
//      `cat` state. Ranks whose programs differ stop here with a clear
//      FailedPrecondition on every rank, before any collective whose size
//      depends on the program (a mismatched size would hang or corrupt).
//   2. one allreduce (SUM) per dtype of the sum states, each dtype's states
//      packed into one flat buffer (all the int64 counts of a
//      classification collection are one collective);
//   3. one allgather of a byte buffer holding every max/min state, every
//      `cat` state's rows and every custom-merge state (max/min folded with
//      exec::FoldState), padded to the longest rank (the lengths are
//      known from 1, so ranks with different row counts, zero included,
//      cannot mismatch); cat states are concatenated in rank order, custom
//      groups folded in rank order with the program's merge graphs.
//
// A collection of sum states therefore syncs with 2 collectives, whatever
// the number of metrics. The result goes to Program::SetSynced: the local
// states are untouched, Compute reads the synced copy, and the next Update
// (or Reset, Merge, LoadState, Unsync) drops it, so updates keep adding this
// rank's own rows and a later Sync folds everything again.
//
// Every collective waits at most `timeout`; a rank that died, left or never
// arrives gives each other rank an Unavailable or DeadlineExceeded status
// naming the step, never a hang. Sync is collective: every rank of the group
// must call it, in the same order relative to other collectives.
#ifndef TALLY_ENGINE_DIST_SYNC_H_
#define TALLY_ENGINE_DIST_SYNC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/runtime/program.h"

namespace c10d {
class ProcessGroup;
}  // namespace c10d

namespace tally::dist {

// SyncOptions configure one Sync.
struct SyncOptions {
  // timeout bounds the wait for each collective.
  absl::Duration timeout = absl::Seconds(30);
};

// SyncStats describe what one Sync did on this rank.
struct SyncStats {
  int collectives = 0;     // collective calls issued (the same on every rank)
  int64_t bytes_sent = 0;  // payload this rank contributed, headers included
};

// Sync folds the states of every rank of `group` into a synced copy of
// `program`'s states (Program::SetSynced). On error the program is left as it
// was (not synced). World size 1 syncs with no collective.
absl::StatusOr<SyncStats> Sync(Program& program, c10d::ProcessGroup& group, const SyncOptions& options = {});

// SyncFingerprint is the 128-bit digest of `program`'s module that ranks
// compare before syncing, as 32 hex digits. Device names are left out, so
// ranks on cuda:0 and cuda:1 sync; anything else that differs (metrics,
// arguments, input signature, dtypes) does not.
std::string SyncFingerprint(const Program& program);

}  // namespace tally::dist

#endif  // TALLY_ENGINE_DIST_SYNC_H_
