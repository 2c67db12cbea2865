// Session: the metrics API an inference server embeds.
//
// A Session holds one or more named metric sets (each a collection of
// TorchMetrics-style specs compiled into one Program for an input
// signature). Request threads call `Update` concurrently; reads (`Compute`,
// `Snapshot`, `ExportPrometheus`, `SaveCheckpoint`) fold what the threads
// accumulated with the states' reducers.
//
// The hot path takes no lock. Each (thread, metric set) pair owns a shard:
// a ShardState (its Programs and counters) published through one atomic
// pointer slot. An update swaps a busy marker into the slot
// (exchange, acquire), updates the shard's programs, and stores the state
// back (release): two uncontended atomic operations around Program::Update.
// A read (serialized with other reads by a mutex that updates never touch)
// walks the lock-free list of shards and, per shard, replaces the published
// state by an empty spare with a compare-and-swap (acq_rel; it yields while
// the slot holds the busy marker, i.e. during one in-flight update), then
// merges the taken state into the set's accumulated Program with
// Program::Merge and keeps it, reset, as the next spare.
//
// Read consistency: an update that returned before a read started (the
// return happens-before the read, e.g. through the caller's own
// synchronization, a join, or simply program order on one thread) released
// its state into the slot before returning; the read's compare-and-swap is a
// read-modify-write, which always sees the last value in the slot's
// modification order, and its acquire makes every tensor write of that
// update visible. Shards registered by such an update are pushed onto the
// set's list with a release CAS that the read's acquire load of the head
// observes. So a read sees every update that returned before it started,
// and perhaps some that were in flight; counts only grow between reads
// (Reset and LoadCheckpoint aside). An update applies to every targeted set
// or to none: inputs are validated against every set before any changes.
//
// Windows. A window is the last N updates or the last T seconds of a set,
// kept as a ring of `buckets` per-interval Programs (N/buckets updates or
// T/buckets seconds each) in every shard and in the session, merged with the
// same reducers on read. A window read covers the current interval and the
// `buckets - 1` before it, so "last N updates" means the last
// (buckets - 1) * N/buckets updates plus those of the current interval.
// Update intervals number updates by one atomic counter per set (a relaxed
// fetch_add, the only shared write of the hot path when windows exist). With
// W windows an update runs W + 1 Program updates (the all-time one and one
// bucket per window).
//
// Lifetime and costs: a thread finds its shards in a thread_local map keyed
// by a session id that is never reused (an entry per session the thread
// ever updated); shards live until the Session is destroyed, which must not
// race with updates. A read merges every shard, so for `cat` states (exact
// curves, retrieval) it copies the accumulated rows once per shard.
//
// Micro-batching (SessionOptions::micro_batching, off by default): a shard
// queues validated updates (bad input is still rejected synchronously) and
// applies them as one update of the concatenated rows when the queue holds
// `max_rows` rows or `max_updates` updates, when an update arrives
// `max_delay_us` after the first queued one, when a window interval changes,
// and always before a read merges the shard, so reads still see every
// update that returned. An update is queued only when the queued rows and
// its own pass together every check Update makes (Program::CheckBatch: the
// budget of the temporaries and of the accumulated rows), else the queue
// flushes first: a refusal comes from Update, never from a later flush, so
// an update that returned OK is in the state. Sets whose inputs do not all
// share one symbolic leading dim, or whose appended rows depend on the
// values, are never batched. Float sums may differ in the last bits from
// unbatched updates (another summation order); counts are exact.
#ifndef TALLY_ENGINE_SERVING_SESSION_H_
#define TALLY_ENGINE_SERVING_SESSION_H_

#include <ATen/core/Tensor.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/dsl/builder.h"
#include "engine/dsl/metric.h"
#include "engine/exec/plan_runner.h"
#include "engine/runtime/program.h"
#include "engine/runtime/results.h"
#include "engine/serving/session_types.h"

namespace tally {
namespace serving::internal {
struct MetricSet;  // engine/serving/internal/metric_set.h
struct Window;     // engine/serving/internal/window_ring.h
}  // namespace serving::internal

class Session {
 public:
  // Create compiles every set, built for `sig` on options.device. Set names
  // must be unique and non-empty. From spec strings: CreateSession
  // (api/session_factory.h).
  static absl::StatusOr<std::unique_ptr<Session>> Create(std::vector<BuiltMetricSet> sets, const dsl::Signature& sig,
                                                         SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Update folds one batch into every set (each takes the inputs it uses;
  // an input no set takes is an error). Thread-safe and lock-free; all or
  // nothing across sets; bad input is an InvalidArgument naming the metric
  // and the input.
  absl::Status Update(const NamedTensors& inputs);
  // CountRejected counts, in every set, an update rejected before it could
  // reach Update (a request body that is not even tensors), so that the
  // rejected counter covers everything a server turned away.
  void CountRejected();
  // Update folds one batch into the set `set` only.
  absl::Status Update(absl::string_view set, const NamedTensors& inputs);

  // Compute returns every metric of `set` over all updates so far.
  absl::StatusOr<std::vector<MetricValue>> Compute(absl::string_view set = "default") const;
  // ComputeWindow returns every metric of `set` over the window `window`.
  absl::StatusOr<std::vector<MetricValue>> ComputeWindow(absl::string_view set, absl::string_view window) const;
  // Snapshot returns copies of `set`'s merged states (the layout of
  // Program::states()).
  absl::StatusOr<std::vector<at::Tensor>> Snapshot(absl::string_view set = "default") const;
  // Counters returns `set`'s counters.
  absl::StatusOr<SessionCounters> Counters(absl::string_view set = "default") const;
  // Reset empties every set's states and windows (counters keep counting, as
  // Prometheus counters must). Updates racing with Reset land on either side.
  absl::Status Reset();

  // AddCounters adds `from`'s counters to those of this session's sets of
  // the same names (a server that replaces its session keeps counting).
  absl::Status AddCounters(const Session& from);

  // ExportPrometheus renders the text exposition format 0.0.4: gauges
  // `<prefix>_metric{set,metric[,part][,class|index]}` per output element,
  // `<prefix>_window_metric{...,window}` for windows, and counters
  // `<prefix>_updates_total`, `_rows_total`, `_rejected_updates_total`,
  // `_compute_errors_total` per set. A set whose compute fails exports no
  // gauges and counts a compute error.
  std::string ExportPrometheus() const;

  // SaveCheckpoint writes every set's merged states and counters to `path`
  // atomically (temp file in the same directory, fsync, rename, fsync of the
  // directory). Format: "TALLYCKP", u32 version, u64 payload size, payload
  // (sets: name, specs, program fingerprint hash, counters, SaveState
  // bytes), u64 FNV-1a of everything before it; little-endian. The payload
  // starts with the input signature (count, then name, dtype, dims each).
  absl::Status SaveCheckpoint(const std::string& path) const;
  // SaveState returns `set`'s merged states as a state file
  // (engine/persist/state_file.h), a consistent cut as every read is: what another
  // replica's states, or `tally merge`, fold it with (api/state_files.h).
  absl::StatusOr<std::string> SaveState(absl::string_view set = "default") const;
  // CheckpointSignature reads the input signature a checkpoint was saved
  // with, so that a restarting server can create the same session
  // (`tally serve --checkpoint`) before it has seen any input.
  static absl::StatusOr<dsl::Signature> CheckpointSignature(const std::string& path);
  // LoadCheckpoint replaces the states and counters by the checkpoint's,
  // and the rings of the update-count windows this session declares alike
  // (same name, size and buckets); time windows, whose intervals come from a
  // monotonic clock that does not survive a restart, and windows declared
  // otherwise restart empty. A corrupt, truncated or foreign file (other
  // sets, specs or program) is an error and changes nothing.
  absl::Status LoadCheckpoint(const std::string& path);

  // signature is the input signature the sets were compiled for.
  const dsl::Signature& signature() const { return sig_; }
  // set_names lists the sets in order.
  std::vector<std::string> set_names() const;

 private:
  using MetricSet = serving::internal::MetricSet;
  using Window = serving::internal::Window;

  Session() = default;
  absl::StatusOr<MetricSet*> FindSet(absl::string_view name) const;
  // Harvest folds every shard of `s` into its accumulated programs; callers
  // hold read_mu_.
  absl::Status Harvest(MetricSet& s) const;
  absl::Status UpdateSets(const std::vector<MetricSet*>& sets, const NamedTensors& inputs);
  // WindowValues merges the live buckets of window `w` of `set` and computes
  // them; callers hold read_mu_ and have harvested.
  absl::StatusOr<std::vector<MetricValue>> WindowValues(MetricSet& set, size_t w) const;
  int64_t NowNs() const;

  uint64_t id_ = 0;  // unique per session, never reused: the thread-local shard key
  SessionOptions options_;
  dsl::Signature sig_;
  std::unique_ptr<std::vector<Window>> windows_;
  std::vector<std::unique_ptr<MetricSet>> sets_;
  std::vector<MetricSet*> all_sets_;  // sets_, for Update(inputs)
  mutable std::mutex read_mu_;        // serializes reads; never taken by Update
};

}  // namespace tally

#endif  // TALLY_ENGINE_SERVING_SESSION_H_
