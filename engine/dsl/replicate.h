// Replicate: slices and bootstrap intervals as one transformation of a
// metric's state graph. Every state gains a leading axis of K replicas, and
// row i counts in replica k with a multiplicity m(i, k):
//   * slices (`num_groups=G`): m = 1 when the row's `groups` id is k, else 0;
//   * bootstrap (`num_bootstraps=B`): m = a Poisson(1) draw keyed by (seed,
//     the row's `row_id`, k), so a row weighs the same in any batch, shard
//     or merge order and the intervals are bit-identical across them.
// The update's row reductions (histograms and sums over rows; composite ops
// are decomposed first) become one replica_histogram each, filled in one
// pass; what the update computes between those reductions and the partials
// runs per replica. The finalize runs once per replica (a copy of the
// graph per replica on that replica's states) and the values are stacked:
//   * slices: [G, ...] per result tensor (a list of per-group results when a
//     result's length depends on the data), and with overall=true the tuple
//     (per group, over all rows);
//   * bootstrap: TorchMetrics' BootStrapper outputs in its order — mean, std
//     (unbiased), quantile (linear interpolation), raw [B, ...] — the ones
//     asked for, as a tuple.
// Deferred checks stay global. Cat states (exact curves) slice by keeping
// each row's group beside it and selecting it at finalize; they cannot be
// bootstrapped (a fixed-size form — thresholds, exact16 — can). Custom-merge
// states (the moments) slice: a row value that reads a batch statistic (the
// mean that centres a two-pass variance) reads its own group's, gathered by
// its group id, and the merge graph runs once over the [G, ...] states; a
// bootstrap, where a row is in every replica, refuses them. Max/min states
// are refused; each refusal names the state.
// Batch-level decisions an update makes (whether to apply a sigmoid to the
// batch) are taken once per batch for every replica, as for the whole metric.
#ifndef TALLY_ENGINE_DSL_REPLICATE_H_
#define TALLY_ENGINE_DSL_REPLICATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/dsl/builder.h"
#include "engine/dsl/metric.h"

namespace tally::dsl {

struct ReplicaSpec {
  enum class Kind { kGroups, kBootstrap };
  Kind kind = Kind::kGroups;
  int64_t replicas = 0;   // G or B
  std::string key_input;  // the row key's input: "groups" or "row_id"
  std::string arg_name;   // what the spec called the count: "num_groups", "num_bootstraps"
  // Slices.
  bool overall = false;
  // Bootstrap.
  int64_t seed = 0;
  bool mean = true;
  bool std = true;
  bool raw = false;
  std::vector<double> quantiles;  // empty: none
  bool quantile_list = false;     // the spec gave a list: the quantile output is [Q, ...]
};

// Replicate transforms `metric` (built for `sig` on `device`). The key input
// is read from `sig` when it is there, else declared as int64 [N] (the
// runtime fills `row_id` with each row's position in the stream of updates).
absl::StatusOr<Metric> Replicate(Metric metric, const ReplicaSpec& spec, const Signature& sig,
                                 const ir::Device& device);

}  // namespace tally::dsl

#endif  // TALLY_ENGINE_DSL_REPLICATE_H_
