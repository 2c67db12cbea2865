// The option and value types of a Session (engine/serving/session.h): what
// creates one and what its reads return. Apart from session.h so that the
// session's internals (engine/serving/internal/) use them without the
// public header.
#ifndef TALLY_ENGINE_SERVING_SESSION_TYPES_H_
#define TALLY_ENGINE_SERVING_SESSION_TYPES_H_

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "engine/dsl/builder.h"
#include "engine/exec/plan_runner.h"
#include "engine/ir/types.h"
#include "engine/runtime/results.h"

namespace tally {

// BuiltMetricSet is a named collection of built metrics (metrics::BuildEntries;
// api/session_factory.h builds them from spec strings). `specs`, one per
// entry, are the metrics' identity: results and checkpoints name them.
struct BuiltMetricSet {
  std::string name;
  std::vector<std::string> specs;
  std::vector<dsl::CollectionEntry> entries;
};

// WindowSpec declares a windowed view kept for every metric set.
struct WindowSpec {
  enum class Kind { kUpdates, kSeconds };
  std::string name;  // e.g. "last_1000" or "last_60s"; unique in a session
  Kind kind = Kind::kUpdates;
  int64_t size = 0;     // N updates, or T seconds
  int64_t buckets = 1;  // intervals in the ring; must divide `size` for kUpdates
};

// MicroBatching bounds the per-thread queue of lazy updates.
struct MicroBatching {
  int64_t max_rows = 0;         // 0: off; otherwise flush at this many queued rows
  int64_t max_updates = 64;     // ... or this many queued updates
  int64_t max_delay_us = 1000;  // ... or when an update comes this late after the first
};

// SessionOptions configure a Session.
struct SessionOptions {
  ir::Device device;  // cpu by default
  exec::Backend backend = exec::Backend::kEager;
  std::vector<WindowSpec> windows;
  MicroBatching micro_batching;
  // now_ns returns the time for kSeconds windows (monotonic ns); defaults to
  // std::chrono::steady_clock. Tests inject a fake clock.
  std::function<int64_t()> now_ns;
  // reject_invalid_values makes Update reject a batch with bad values (a
  // label out of range, a non-binary retrieval target: what Compute would
  // report as a deferred check) with that error, changing nothing, instead
  // of deferring it to every later Compute. Each update then first runs
  // through a scratch program (Program::CheckValues; pooled per set: as many
  // as updates ever ran at once), which roughly doubles its cost.
  // `tally serve` turns it on.
  bool reject_invalid_values = false;
  // prometheus_prefix starts every exported metric name ([a-zA-Z_:][a-zA-Z0-9_:]*).
  std::string prometheus_prefix = "tally";
  // max_state_bytes bounds each set's fixed-size states (engine/runtime/state_budget.h):
  // a set over it fails Create with ResourceExhausted; 0: half the physical
  // memory. It also bounds the rows a set accumulates (cat states) across
  // all its programs together — every thread's shard, the total that reads
  // fold them into, the windows — so whether an update is accepted does not
  // depend on whether someone read in between (RowLedger, engine/runtime/program.h).
  int64_t max_state_bytes = 0;
};

// MetricValue is one metric's result.
struct MetricValue {
  std::string spec;   // as given
  std::string label;  // the program's label for it
  ResultTree value;
};

// `spec = value`, the value as `tally eval` prints it (logs; test failures).
std::ostream& operator<<(std::ostream& os, const MetricValue& v);

// SessionCounters count a set's traffic since the session was created (or
// the checkpoint it was restored from was): accepted updates, their rows
// (leading dim of the inputs), rejected updates, and failed computes.
struct SessionCounters {
  int64_t updates = 0;
  int64_t rows = 0;
  int64_t rejected = 0;
  int64_t compute_errors = 0;
};

}  // namespace tally

#endif  // TALLY_ENGINE_SERVING_SESSION_TYPES_H_
