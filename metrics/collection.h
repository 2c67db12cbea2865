// BuildEntries: metric spec strings ("name(key=value, ...)") to the entries
// of a collection, for the command line and for embedders (tally::Session).
#ifndef TALLY_METRICS_COLLECTION_H_
#define TALLY_METRICS_COLLECTION_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/dsl/builder.h"
#include "engine/dsl/metric.h"
#include "engine/ir/types.h"

namespace tally::metrics {

// BuildEntries parses and builds every spec for `sig` on `device`. Labels
// are the metric names, made unique with a suffix ("mean", "mean_2").
absl::StatusOr<std::vector<dsl::CollectionEntry>> BuildEntries(const std::vector<std::string>& specs,
                                                               const dsl::Signature& sig, const ir::Device& device);

}  // namespace tally::metrics

#endif  // TALLY_METRICS_COLLECTION_H_
