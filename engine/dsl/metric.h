// Metric: one compiled-from-DSL metric — a module whose finalize graph returns
// its result — and Collection, several metrics compiled together over shared
// inputs.
//
// Result labels. A metric's result is one tensor, returned by its finalize
// graph with the label "value", or a tree of tensors — a tuple or list whose
// items are tensors or nested tuples/lists, as TorchMetrics' roc returns
// (fpr, tpr, thresholds), and its exact multiclass form a tuple of per-class
// lists. A tree is returned as one tensor per leaf, in depth-first order,
// labelled with the leaf's path of item indices: "value/0", "value/1/2".
// Every tuple or list has at least one item, so the labels determine the
// tree. Linking replaces "value" with the metric's label in the collection:
// "roc", or "roc/0", "roc/1/2"; Program::Compute and exported modules'
// compute() use these labels, and CollectResult (engine/runtime/results.h) rebuilds
// the tree from them.
#ifndef TALLY_ENGINE_DSL_METRIC_H_
#define TALLY_ENGINE_DSL_METRIC_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/ir/module.h"

namespace tally::dsl {

// Metric is what a DSL builder produces.
struct Metric {
  std::string name;                    // the function name, e.g. "multiclass_accuracy"
  std::unique_ptr<ir::Module> module;  // states named "<state>", output "value" or "value/<path>"
  // result_keys name the items of a tuple result, in order, when the
  // result is a dict in TorchMetrics (mean_average_precision's "map", ...):
  // JSON output then writes an object. Empty for every other metric.
  std::vector<std::string> result_keys;
};

// kResultLabel labels a metric's result in its own finalize graph.
inline constexpr absl::string_view kResultLabel = "value";

// PartLabel is the label of the leaf at `path` of the result labelled
// `base`: `base` itself for an empty path, else "base/i/j...".
std::string PartLabel(absl::string_view base, const std::vector<int>& path);

// ParsePartLabel splits a result label into its base and leaf path
// ("roc/1/2" -> "roc", {1, 2}; "roc" -> "roc", {}); false if a path item is
// not a non-negative integer.
bool ParsePartLabel(absl::string_view label, std::string* base, std::vector<int>* path);

// CollectionEntry names one metric of a collection by a unique label.
struct CollectionEntry {
  std::string label;  // unique; prefixes the metric's states ("<label>.<state>")
  Metric metric;
  // size_args are the integer arguments of the metric's spec (num_classes,
  // thresholds, ...), so that an error about a state's size can name the
  // argument that drives it.
  std::vector<std::pair<std::string, int64_t>> size_args;
};

// LinkCollection combines metrics into one module over shared inputs: states
// and merge groups are prefixed with each entry's label, the update graphs
// share parameters by name (their types must agree), and the finalize graph
// returns each entry's result labelled with the entry's label ("<label>", or
// "<label>/<path>" per tensor of a multi-part result).
absl::StatusOr<std::unique_ptr<ir::Module>> LinkCollection(const std::vector<CollectionEntry>& entries);

}  // namespace tally::dsl

#endif  // TALLY_ENGINE_DSL_METRIC_H_
