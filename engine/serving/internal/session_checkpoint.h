// The payload of a Session checkpoint (engine-internal; the file format is
// in session.h, SaveCheckpoint, and the framing in checkpoint_format.h):
// the input signature, then per set its name, specs, program fingerprint
// hash, counters, states and the rings of its update-count windows.
#ifndef TALLY_ENGINE_SERVING_INTERNAL_SESSION_CHECKPOINT_H_
#define TALLY_ENGINE_SERVING_INTERNAL_SESSION_CHECKPOINT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/dsl/builder.h"
#include "engine/persist/checkpoint_format.h"
#include "engine/persist/state_file.h"
#include "engine/runtime/program.h"
#include "engine/serving/internal/window_ring.h"
#include "engine/serving/session_types.h"

namespace tally::serving::internal {

struct MetricSet;  // metric_set.h

// PutSet appends one harvested set: name, specs, fingerprint hash, counters,
// states, the update counter and the read side's rings of the update-count
// windows among `windows`. Time windows are not saved: their intervals come
// from a monotonic clock that does not survive a restart.
absl::Status PutSet(std::string& out, const MetricSet& set, const std::vector<Window>& windows);

// LoadedSet is one set as read from a checkpoint, not yet installed.
struct LoadedSet {
  std::unique_ptr<Program> total;
  SessionCounters counters;
  int64_t update_seq = 0;
  // Per window, the restored ring; empty: the window restarts (a time
  // window, or one declared differently).
  std::vector<Ring> rings;
};

// ReadPayload reads a whole payload (the signature, the set count, then
// each set as PutSet wrote it) for a session of `sig`, `sets` and
// `windows`. Any mismatch or corruption is an InvalidArgument naming
// `path`; nothing is changed.
absl::StatusOr<std::vector<LoadedSet>> ReadPayload(persist::Reader& r, absl::string_view path,
                                                   const dsl::Signature& sig,
                                                   const std::vector<std::unique_ptr<MetricSet>>& sets,
                                                   const std::vector<Window>& windows);

}  // namespace tally::serving::internal

#endif  // TALLY_ENGINE_SERVING_INTERNAL_SESSION_CHECKPOINT_H_
