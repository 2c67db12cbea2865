// Window rings of a Session (engine-internal; the design is in session.h,
// "Windows"): a window is a ring of `buckets` per-interval Programs, one
// ring per window in every shard and one on the read side, merged with the
// states' reducers on read.
#ifndef TALLY_ENGINE_SERVING_INTERNAL_WINDOW_RING_H_
#define TALLY_ENGINE_SERVING_INTERNAL_WINDOW_RING_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/runtime/program.h"
#include "engine/serving/session_types.h"

namespace tally::serving::internal {

struct MetricSet;  // metric_set.h

// Window is a declared window and the length of its intervals.
struct Window {
  WindowSpec spec;
  int64_t interval = 1;  // updates, or ns, per bucket
};

// Bucket is one interval of a window ring: the programs of updates whose
// interval number is `epoch` (-1: none yet).
struct Bucket {
  int64_t epoch = -1;
  bool dirty = false;
  std::unique_ptr<Program> program;
};

using Ring = std::vector<Bucket>;
// Epochs are one update's interval numbers, one per window.
using Epochs = absl::InlinedVector<int64_t, 2>;

// MakeWindows checks the declared windows (unique names, sizes, buckets)
// and derives their intervals.
absl::StatusOr<std::vector<Window>> MakeWindows(const std::vector<WindowSpec>& specs);

// EpochsOf numbers the interval of one update in every window of `set`
// (taking an update number when the set has an update-count window).
Epochs EpochsOf(MetricSet& set, int64_t now_ns);

// UpdateRings folds validated inputs into, per window, the bucket of the
// update's interval in `rings` (a shard's), sizing the rings on first use.
absl::Status UpdateRings(const MetricSet& set, std::vector<Ring>& rings, const NamedTensors& inputs,
                         const Epochs& epochs);

// FoldBucket merges a shard's bucket `b` into the read side's `ring` and
// empties it.
absl::Status FoldBucket(const MetricSet& set, Ring& ring, Bucket& b);

// MergeWindow merges into `view` the live buckets of window `w` of `set`'s
// read-side ring: the current interval (the newest of the clock, or update
// counter, and every bucket's) and the `buckets - 1` before it. `now_ns` is
// read for time windows only.
absl::Status MergeWindow(const MetricSet& set, size_t w, const std::function<int64_t()>& now_ns, Program& view);

// ResetRing empties every bucket; it stops at the first failed reset.
absl::Status ResetRing(Ring& ring);
// DropRing empties every bucket, ignoring failed resets (the ring restarts
// empty either way).
void DropRing(Ring& ring);

}  // namespace tally::serving::internal

#endif  // TALLY_ENGINE_SERVING_INTERNAL_WINDOW_RING_H_
