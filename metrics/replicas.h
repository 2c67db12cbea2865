// The arguments every metric spec accepts to slice or bootstrap it
// (engine/dsl/replicate.h):
//   num_groups=G [, overall=true]   one value per group of the `groups` input
//                                   (unless the metric reads num_groups itself);
//   num_bootstraps=B [, seed=S, mean=true, std=true, quantile=q|[q, ...],
//                     raw=false, sampling_strategy=poisson]
//                                   TorchMetrics' BootStrapper outputs, each row
//                                   resampled by a Poisson(1) draw keyed by
//                                   (S, its `row_id`, b).
#ifndef TALLY_METRICS_REPLICAS_H_
#define TALLY_METRICS_REPLICAS_H_

#include <optional>

#include "absl/status/statusor.h"
#include "engine/dsl/replicate.h"
#include "metrics/spec.h"

namespace tally::metrics {

// ReadReplicaArgs reads the arguments above that the metric's own builder
// left unread (it runs after the builder): the transformations to apply in
// order (none, one, or the bootstrap and then the slices: every group's
// intervals).
absl::StatusOr<std::vector<dsl::ReplicaSpec>> ReadReplicaArgs(SpecArgs& args);

// kReplicaArgs are the arguments above: a builder that checks its spec's
// arguments itself (the task wrappers) leaves them to ReadReplicaArgs.
inline constexpr absl::string_view kReplicaArgs[] = {"num_groups", "overall", "num_bootstraps",   "seed", "mean", "std",
                                                     "quantile",   "raw",     "sampling_strategy"};

}  // namespace tally::metrics

#endif  // TALLY_METRICS_REPLICAS_H_
