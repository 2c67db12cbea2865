// The SSA graph of the Tally IR: Value, Node and Graph.
//
// A Graph is a straight-line SSA function: named parameters, nodes in
// topological order, and labelled results. Update plans return one partial per
// state (labelled by the state's name); finalize plans take the states as
// parameters and return the metric outputs; merge plans fold two copies of a
// group of custom-merge states. Graphs own their values and nodes.
#ifndef TALLY_ENGINE_IR_GRAPH_H_
#define TALLY_ENGINE_IR_GRAPH_H_

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "engine/ir/attribute.h"
#include "engine/ir/types.h"

namespace tally::ir {

class Node;

// Value is an SSA value: a graph parameter or one output of a node.
class Value {
 public:
  int id() const { return id_; }
  const TensorType& type() const { return type_; }
  TensorType& mutable_type() { return type_; }
  // name is the parameter name; empty for node outputs.
  const std::string& name() const { return name_; }
  // producer is the node that defines the value, or nullptr for a parameter.
  Node* producer() const { return producer_; }
  int output_index() const { return output_index_; }

 private:
  friend class Graph;
  int id_ = 0;
  TensorType type_;
  std::string name_;
  Node* producer_ = nullptr;
  int output_index_ = 0;
};

// Node applies one op to its inputs. `loc` is the DSL source line that made it.
class Node {
 public:
  const std::string& op() const { return op_; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  const std::vector<Value*>& outputs() const { return outputs_; }
  Value* input(int i) const { return inputs_[i]; }
  Value* output(int i = 0) const { return outputs_[i]; }
  const AttrMap& attrs() const { return attrs_; }
  AttrMap& mutable_attrs() { return attrs_; }
  const std::string& loc() const { return loc_; }
  void set_loc(std::string loc) { loc_ = std::move(loc); }
  void set_input(int i, Value* v) { inputs_[i] = v; }

  // Attributes are read and written through their op's typed struct
  // (ops/attrs.h: ops::AttrsOf, ops::ToAttrMap), never by key here.

  // The op's index in the op list (ops/op_list.h), cached by ops::IdOf so
  // that asking a node its op hashes its name once: -1 not looked up yet,
  // -2 no op has the name. Relaxed atomics: any thread may fill it.
  int opcode_cache() const { return opcode_.load(std::memory_order_relaxed); }
  void set_opcode_cache(int code) const { opcode_.store(code, std::memory_order_relaxed); }

 private:
  friend class Graph;
  std::string op_;
  std::vector<Value*> inputs_;
  std::vector<Value*> outputs_;
  AttrMap attrs_;
  std::string loc_;
  mutable std::atomic<int> opcode_{-1};
};

// Graph is a straight-line SSA function with labelled results.
class Graph {
 public:
  explicit Graph(std::string name = "g") : name_(std::move(name)) {}
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }

  // AddParam appends a named parameter.
  Value* AddParam(std::string name, TensorType type);
  // AddNode appends a node whose output types are already known.
  Node* AddNode(std::string op, std::vector<Value*> inputs, AttrMap attrs, std::vector<TensorType> output_types,
                std::string loc = "");
  // AddReturn appends a labelled result.
  void AddReturn(std::string label, Value* v) { returns_.emplace_back(std::move(label), v); }

  const std::vector<Value*>& params() const { return params_; }
  std::vector<Value*>& mutable_params() { return params_; }
  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  const std::vector<std::pair<std::string, Value*>>& returns() const { return returns_; }
  std::vector<std::pair<std::string, Value*>>& mutable_returns() { return returns_; }
  Value* FindParam(absl::string_view name) const;
  Value* FindReturn(absl::string_view label) const;
  int num_values() const { return next_id_; }

  // ReplaceAllUsesWith redirects every use of `from` (node inputs, results) to `to`.
  void ReplaceAllUsesWith(Value* from, Value* to);
  // RemoveNodes deletes the nodes for which `dead` is true; their outputs must be unused.
  template <typename Pred>
  int RemoveNodesIf(Pred dead) {
    int removed = 0;
    std::vector<std::unique_ptr<Node>> kept;
    for (auto& n : nodes_) {
      if (dead(n.get())) {
        ++removed;
        graveyard_.push_back(std::move(n));
      } else
        kept.push_back(std::move(n));
    }
    nodes_ = std::move(kept);
    return removed;
  }
  // SortNodes reorders nodes (stable) by `less`; callers keep SSA order valid.
  template <typename Less>
  void SortNodes(Less less) {
    std::stable_sort(nodes_.begin(), nodes_.end(), [&](const std::unique_ptr<Node>& a, const std::unique_ptr<Node>& b) {
      return less(a.get(), b.get());
    });
  }
  // TopologicalSort restores definition-before-use after rewrites appended
  // nodes, keeping the existing order where it is already valid.
  void TopologicalSort();
  // RemoveParam drops a parameter that has no uses.
  void RemoveParam(Value* v);
  // UseCounts returns, per value id, how many node inputs and results use it.
  std::vector<int> UseCounts() const;

  // CloneInto copies this graph's nodes into `dst`, mapping each parameter
  // through `param_map` (missing entries become new params of `dst`), and
  // returns the mapping of every value. Result labels are not copied.
  absl::flat_hash_map<const Value*, Value*> CloneInto(Graph& dst, absl::flat_hash_map<const Value*, Value*> param_map,
                                                      const std::string& param_prefix = "") const;
  // Clone returns a deep copy (with results).
  std::unique_ptr<Graph> Clone() const;

 private:
  Value* NewValue(TensorType t);

  std::string name_;
  int next_id_ = 0;
  std::vector<std::unique_ptr<Value>> values_;
  std::vector<Value*> params_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Node>> graveyard_;  // keeps removed nodes' pointers valid
  std::vector<std::pair<std::string, Value*>> returns_;
};

}  // namespace tally::ir

#endif  // TALLY_ENGINE_IR_GRAPH_H_
