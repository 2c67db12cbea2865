// Lock-free shards of a Session (engine-internal; the protocol and its
// memory ordering are described in session.h). Each (thread, metric set)
// pair owns a Shard whose slot publishes a ShardState: the owner swaps a
// busy marker in around an update, a read swaps in an empty spare.
#ifndef TALLY_ENGINE_SERVING_INTERNAL_SESSION_SHARDS_H_
#define TALLY_ENGINE_SERVING_INTERNAL_SESSION_SHARDS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "engine/runtime/program.h"
#include "engine/serving/internal/micro_batch.h"
#include "engine/serving/internal/window_ring.h"
#include "engine/serving/session_types.h"

namespace tally::serving::internal {

struct MetricSet;  // metric_set.h

// ShardState is what a shard's slot publishes: the programs one thread
// updates and its counters. Whoever holds it (the owner thread between its
// exchange and store, or a read after taking it) has it exclusively.
struct ShardState {
  std::unique_ptr<Program> all;
  bool all_dirty = false;
  std::vector<Ring> rings;  // per window
  int64_t updates = 0, rows = 0, rejected = 0;
  MicroBatchQueue queue;
};

// Shard is one (thread, metric set) pair.
struct Shard {
  std::atomic<ShardState*> slot{nullptr};
  std::unique_ptr<ShardState> spare;  // read side only (under Session::read_mu_)
  Shard* next = nullptr;
  ~Shard() { delete slot.load(); }
};

// ThreadShardsOf returns this thread's shard of every set of the session
// `id`, creating and publishing them on first use.
std::vector<Shard*>& ThreadShardsOf(uint64_t id, const std::vector<std::unique_ptr<MetricSet>>& sets);

// Hold takes the shard's state for its owner thread (exchange, acquire);
// Publish stores it back (release).
ShardState* Hold(Shard& sh);
void Publish(Shard& sh, ShardState* st);

// ApplyNow folds validated inputs into one shard state: the all-time
// program and, per window, the bucket of the update's interval.
// `all_applied`, when given, tells whether the all-time program took them
// (Program::Update applies fully or not at all), also on a later failure.
absl::Status ApplyNow(MetricSet& set, ShardState& st, const NamedTensors& inputs, const Epochs& epochs,
                      bool* all_applied = nullptr);

// HarvestShards takes every shard's state of `set` (yielding while an
// update holds it), flushes its queue and folds it into the set's read
// side: counters, the all-time total and the window rings. Callers hold
// Session::read_mu_.
absl::Status HarvestShards(MetricSet& set);

}  // namespace tally::serving::internal

#endif  // TALLY_ENGINE_SERVING_INTERNAL_SESSION_SHARDS_H_
