#include "passes/cse.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "ops/op_registry.h"
#include "support/rewrite_log.h"

namespace tally::passes {
namespace {

// NodeKey is equal for nodes that compute the same values; the operands of a
// commutative op are keyed unordered, so add(%a, %b) and add(%b, %a) merge.
std::string NodeKey(const ir::Node& n) {
  std::string key = n.op();
  std::vector<int64_t> ids;
  for (ir::Value* in : n.inputs()) ids.push_back(in->id());
  if (ops::IsCommutative(n)) std::sort(ids.begin(), ids.end());
  for (int64_t v : ids) absl::StrAppend(&key, " %", v);
  for (const auto& [k, v] : n.attrs()) absl::StrAppend(&key, " ", k, "=", ir::AttrToString(v));
  for (ir::Value* out : n.outputs()) absl::StrAppend(&key, " :", out->type().ToString());
  return key;
}

// TryMergeStates merges one pair of identical states; true when it did.
bool TryMergeStates(ir::Module& m) {
  for (size_t i = 0; i < m.states.size(); ++i) {
    for (size_t j = i + 1; j < m.states.size(); ++j) {
      const ir::StateDecl& a = m.states[i];
      const ir::StateDecl& b = m.states[j];
      if (a.reducer == ir::Reducer::kCustom || b.reducer == ir::Reducer::kCustom) continue;
      if (a.type != b.type || a.reducer != b.reducer || a.check != b.check || a.scatter != b.scatter) continue;
      if (!(a.init == b.init)) continue;
      if (m.update->FindReturn(a.name) != m.update->FindReturn(b.name)) continue;
      ir::Value* pa = m.finalize->FindParam(a.name);
      ir::Value* pb = m.finalize->FindParam(b.name);
      TALLY_GRAPH_UPDATE("state ", b.name, " merged into the identical state ", a.name);
      m.finalize->ReplaceAllUsesWith(pb, pa);
      m.finalize->RemoveParam(pb);
      auto& rets = m.update->mutable_returns();
      for (auto it = rets.begin(); it != rets.end(); ++it) {
        if (it->first == b.name) {
          rets.erase(it);
          break;
        }
      }
      m.states.erase(m.states.begin() + j);
      return true;
    }
  }
  return false;
}

}  // namespace

int CseGraph(ir::Graph& g) {
  absl::flat_hash_map<std::string, ir::Node*> seen;
  absl::flat_hash_set<const ir::Node*> dead;
  int merged = 0;
  for (const auto& n : g.nodes()) {
    if (!ops::IsPure(*n)) continue;
    std::string key = NodeKey(*n);
    auto [it, inserted] = seen.emplace(key, n.get());
    if (inserted) continue;
    TALLY_GRAPH_UPDATE("@", g.name(), ": ", n->op(), " -> %", n->output(0)->id(), " replaced by the same ",
                       it->second->op(), " -> %", it->second->output(0)->id());
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      g.ReplaceAllUsesWith(n->output(i), it->second->output(i));
    }
    dead.insert(n.get());
    ++merged;
  }
  if (merged) g.RemoveNodesIf([&](const ir::Node* n) { return dead.contains(n); });
  return merged;
}

absl::StatusOr<bool> Cse::Run(ir::Module& m) {
  int nodes = 0, states = 0;
  nodes += CseGraph(*m.update);
  for (auto& [group, g] : m.merges) nodes += CseGraph(*g);
  while (TryMergeStates(m)) ++states;
  nodes += CseGraph(*m.finalize);
  counters_ = {{"nodes_merged", nodes}, {"states_merged", states}};
  return nodes + states > 0;
}

}  // namespace tally::passes
