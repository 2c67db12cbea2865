// Module: the unit the compiler works on — the states of one or more metrics
// with their reducers, and the update, finalize and merge graphs over them.
//
// The update graph maps the data inputs (its parameters) to one partial per
// state, labelled with the state's name; the executor folds each partial into
// its state with the state's reducer (a scatter state's partial names the
// elements it adds to: see StateDecl::scatter). Because every reducer is associative,
// batching, thread shards, checkpoint restore and distributed sync are the same
// fold. The finalize graph takes every state (parameters named like the
// states) and returns the outputs. A custom-merge group has a merge graph whose
// parameters are `a.<state>` then `b.<state>` and whose results are labelled
// with the group's state names.
#ifndef TALLY_ENGINE_IR_MODULE_H_
#define TALLY_ENGINE_IR_MODULE_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/ir/graph.h"

namespace tally::ir {

// Reducer folds a partial (or another shard's state) into a state.
enum class Reducer { kSum, kMax, kMin, kCat, kCustom };
absl::string_view ReducerName(Reducer r);
absl::StatusOr<Reducer> ParseReducer(absl::string_view s);

// StateDecl declares one accumulator.
struct StateDecl {
  std::string name;  // "metric.state", unique in a module
  TensorType type;   // cat states have a symbolic leading dim
  double init = 0;   // every element's initial value (cat: starts empty)
  Reducer reducer = Reducer::kSum;
  std::string group;   // merge group for kCustom
  std::string check;   // non-empty: a deferred validation counter with this message
  std::string metric;  // the metric that owns it (for error messages)
  // scatter: the update's partial is rows [..., 2] of (flat element index,
  // count) added at those elements, not a whole state, so that an update
  // touches only the elements it counts (a large histogram, sparsely hit).
  // Only int64 sum states scatter; merges and syncs fold whole states.
  bool scatter = false;

  // Bytes is the state's memory: all of it for a fixed shape; for a cat
  // state, the bytes of one accumulated row (its leading dim is symbolic).
  int64_t Bytes() const;
};

// Module holds the states and plans of a metric or a collection.
struct Module {
  std::vector<StateDecl> states;
  std::unique_ptr<Graph> update;
  std::unique_ptr<Graph> finalize;
  std::map<std::string, std::unique_ptr<Graph>> merges;  // group -> merge graph

  const StateDecl* FindState(absl::string_view name) const;
  int StateIndex(absl::string_view name) const;
  // MetricNames lists the metrics owning states, in state order, once each.
  std::vector<std::string> MetricNames() const;
  // PartialIndices gives, per state, the index of its partial among the
  // update graph's results (Internal error if a state has none).
  absl::StatusOr<std::vector<int>> PartialIndices() const;
  // FixedStateBytes is the memory of the states whose shape is fixed (what
  // is allocated up front; cat states grow with the rows and count 0 here).
  int64_t FixedStateBytes() const;
  // Clone returns a deep copy.
  std::unique_ptr<Module> Clone() const;
};

}  // namespace tally::ir

#endif  // TALLY_ENGINE_IR_MODULE_H_
