#include "engine/ir/graph.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"

namespace tally::ir {

Value* Graph::NewValue(TensorType t) {
  auto v = std::make_unique<Value>();
  v->id_ = next_id_++;
  v->type_ = std::move(t);
  values_.push_back(std::move(v));
  return values_.back().get();
}

Value* Graph::AddParam(std::string name, TensorType type) {
  Value* v = NewValue(std::move(type));
  v->name_ = std::move(name);
  params_.push_back(v);
  return v;
}

Node* Graph::AddNode(std::string op, std::vector<Value*> inputs, AttrMap attrs, std::vector<TensorType> output_types,
                     std::string loc) {
  auto n = std::make_unique<Node>();
  n->op_ = std::move(op);
  n->inputs_ = std::move(inputs);
  n->attrs_ = std::move(attrs);
  n->loc_ = std::move(loc);
  for (size_t i = 0; i < output_types.size(); ++i) {
    Value* v = NewValue(std::move(output_types[i]));
    v->producer_ = n.get();
    v->output_index_ = static_cast<int>(i);
    n->outputs_.push_back(v);
  }
  nodes_.push_back(std::move(n));
  return nodes_.back().get();
}

Value* Graph::FindParam(absl::string_view name) const {
  for (Value* p : params_)
    if (p->name() == name) return p;
  return nullptr;
}

Value* Graph::FindReturn(absl::string_view label) const {
  for (const auto& [l, v] : returns_)
    if (l == label) return v;
  return nullptr;
}

void Graph::ReplaceAllUsesWith(Value* from, Value* to) {
  for (auto& n : nodes_)
    for (auto& in : n->inputs_)
      if (in == from) in = to;
  for (auto& r : returns_)
    if (r.second == from) r.second = to;
}

void Graph::TopologicalSort() {
  absl::flat_hash_set<const Value*> ready(params_.begin(), params_.end());
  std::vector<std::unique_ptr<Node>> order;
  std::vector<std::unique_ptr<Node>> pending = std::move(nodes_);
  bool progress = true;
  while (!pending.empty() && progress) {
    progress = false;
    std::vector<std::unique_ptr<Node>> rest;
    for (auto& n : pending) {
      bool ok = true;
      for (Value* in : n->inputs()) ok &= ready.contains(in);
      if (!ok) {
        rest.push_back(std::move(n));
        continue;
      }
      for (Value* out : n->outputs()) ready.insert(out);
      order.push_back(std::move(n));
      progress = true;
    }
    pending = std::move(rest);
  }
  // A cycle (never produced by Tally) keeps its nodes at the end for the verifier to report.
  for (auto& n : pending) order.push_back(std::move(n));
  nodes_ = std::move(order);
}

void Graph::RemoveParam(Value* v) { params_.erase(std::remove(params_.begin(), params_.end(), v), params_.end()); }

std::vector<int> Graph::UseCounts() const {
  std::vector<int> uses(next_id_, 0);
  for (const auto& n : nodes_)
    for (Value* in : n->inputs()) ++uses[in->id()];
  for (const auto& r : returns_) ++uses[r.second->id()];
  return uses;
}

absl::flat_hash_map<const Value*, Value*> Graph::CloneInto(Graph& dst, absl::flat_hash_map<const Value*, Value*> map,
                                                           const std::string& param_prefix) const {
  for (Value* p : params_) {
    if (!map.contains(p)) map[p] = dst.AddParam(param_prefix + p->name(), p->type());
  }
  for (const auto& n : nodes_) {
    std::vector<Value*> ins;
    for (Value* in : n->inputs()) ins.push_back(map.at(in));
    std::vector<TensorType> types;
    for (Value* out : n->outputs()) types.push_back(out->type());
    Node* copy = dst.AddNode(n->op(), std::move(ins), n->attrs(), std::move(types), n->loc());
    for (size_t i = 0; i < n->outputs().size(); ++i) map[n->output(i)] = copy->output(i);
  }
  return map;
}

std::unique_ptr<Graph> Graph::Clone() const {
  auto g = std::make_unique<Graph>(name_);
  auto map = CloneInto(*g, {});
  for (const auto& [label, v] : returns_) g->AddReturn(label, map.at(v));
  return g;
}

}  // namespace tally::ir
