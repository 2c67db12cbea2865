// MetricSet (engine-internal): one named set of a Session, its
// compiled program, the shards its threads update and the read side
// (total, window rings, counters) that reads fold them into.
#ifndef TALLY_ENGINE_SERVING_INTERNAL_METRIC_SET_H_
#define TALLY_ENGINE_SERVING_INTERNAL_METRIC_SET_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/runtime/program.h"
#include "engine/serving/internal/window_ring.h"
#include "engine/serving/session_types.h"

namespace tally::serving::internal {

struct Shard;

struct MetricSet {
  std::string name;
  size_t index = 0;  // in Session::sets_
  std::vector<std::string> specs;
  std::vector<std::string> labels;
  std::vector<std::vector<std::string>> keys;  // per metric: dsl::Metric::result_keys
  std::vector<std::string> params;             // inputs the program takes
  bool batchable = false;                      // every input has the same symbolic leading dim
  std::unique_ptr<Program> proto;
  std::string fingerprint_hash;
  std::atomic<Shard*> shards{nullptr};
  std::atomic<int64_t> update_seq{0};  // numbers updates for kUpdates windows
  // Read side (under Session::read_mu_):
  std::unique_ptr<Program> total;
  std::vector<Ring> rings;  // per window
  SessionCounters counters;
  std::vector<Window>* windows = nullptr;

  // NewProgram instantiates the set's module. Each program numbers the rows
  // it is fed from its own start (2^40 apart), so that rows fed to different
  // shards never share a default bootstrap key (row_id).
  absl::StatusOr<std::unique_ptr<Program>> NewProgram() const {
    absl::StatusOr<std::unique_ptr<Program>> p = Program::Create(proto->module().Clone(), proto->options());
    if (p.ok()) (*p)->SeekRows(programs_made.fetch_add(1, std::memory_order_relaxed) << 40);
    return p;
  }
  mutable std::atomic<int64_t> programs_made{0};
  // Scratch programs for reject_invalid_values (eager, whatever the
  // session's backend: see Program::CheckValues), shared by the set's
  // threads: as many exist as checks ever ran at once, each reset after use.
  mutable std::mutex probes_mu;
  mutable std::vector<std::unique_ptr<Program>> probes;  // idle, under probes_mu

  // CheckValues runs `inputs` (validated) through a scratch program and
  // reports a bad value as Compute would.
  absl::Status CheckValues(const NamedTensors& inputs) const;
  ~MetricSet();
};

// MakeMetricSet compiles one set of a session (its name already checked)
// with `options`; its rings follow `windows` (the session's, which outlive
// it).
absl::StatusOr<std::unique_ptr<MetricSet>> MakeMetricSet(BuiltMetricSet spec, const SessionOptions& options,
                                                         std::vector<Window>* windows);

// RoutedInputs are, per targeted set, the inputs it takes: all of them
// (`whole`) or those in `filtered`.
struct RoutedInputs {
  absl::InlinedVector<NamedTensors, 4> filtered;
  absl::InlinedVector<bool, 4> whole;
};

// RouteInputs validates one update against every targeted set before any
// state changes: every input is taken by some set, and each set's inputs
// pass Program::Validate (and, with `check_values`, the set's CheckValues).
// `name_sets` prefixes a set's error with its name. `routed` is filled for
// the sets checked.
absl::Status RouteInputs(const std::vector<MetricSet*>& sets, const NamedTensors& inputs, bool check_values,
                         bool name_sets, RoutedInputs& routed);

// RowsOf is the leading dim of the first input with one (0 if none).
int64_t RowsOf(const NamedTensors& inputs);

// Collect computes `p` (the set's total or a window's view) and gives each
// of the set's metrics its result.
absl::StatusOr<std::vector<MetricValue>> Collect(const Program& p, const MetricSet& set);

}  // namespace tally::serving::internal

#endif  // TALLY_ENGINE_SERVING_INTERNAL_METRIC_SET_H_
