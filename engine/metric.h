// Metric: one compiled-from-DSL metric — a module whose finalize graph returns
// one result labelled "value" — and Collection, several metrics compiled
// together over shared inputs.
#ifndef TALLY_ENGINE_METRIC_H_
#define TALLY_ENGINE_METRIC_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/ir/module.h"

namespace tally {

// Metric is what a DSL builder produces.
struct Metric {
  std::string name;                   // the function name, e.g. "multiclass_accuracy"
  std::unique_ptr<ir::Module> module; // states named "<state>", output "value"
};

// CollectionEntry names one metric of a collection by a unique label.
struct CollectionEntry {
  std::string label;  // unique; prefixes the metric's states ("<label>.<state>")
  Metric metric;
};

// LinkCollection combines metrics into one module over shared inputs: states
// and merge groups are prefixed with each entry's label, the update graphs
// share parameters by name (their types must agree), and the finalize graph
// returns one result per entry, labelled with the entry's label.
absl::StatusOr<std::unique_ptr<ir::Module>> LinkCollection(
    const std::vector<CollectionEntry>& entries);

}  // namespace tally

#endif  // TALLY_ENGINE_METRIC_H_
