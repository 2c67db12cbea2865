#include "passes/eliminate_dead_states.h"

#include "absl/container/flat_hash_set.h"
#include "ops/op_registry.h"
#include "support/rewrite_log.h"

namespace tally::passes {

int RemoveDeadNodes(ir::Graph& g) {
  int total = 0;
  while (true) {
    std::vector<int> uses = g.UseCounts();
    int removed = g.RemoveNodesIf([&](const ir::Node* n) {
      if (!ops::IsPure(*n)) return false;
      for (ir::Value* out : n->outputs())
        if (uses[out->id()] > 0) return false;
      return true;
    });
    if (removed == 0) return total;
    total += removed;
  }
}

absl::StatusOr<bool> EliminateDeadStates::Run(ir::Module& m) {
  int nodes = RemoveDeadNodes(*m.finalize);
  std::vector<int> uses = m.finalize->UseCounts();
  absl::flat_hash_set<std::string> live_groups;
  for (const auto& s : m.states) {
    if (s.reducer == ir::Reducer::kCustom && uses[m.finalize->FindParam(s.name)->id()] > 0) {
      live_groups.insert(s.group);
    }
  }
  std::vector<ir::StateDecl> kept;
  int removed = 0;
  for (const auto& s : m.states) {
    ir::Value* p = m.finalize->FindParam(s.name);
    bool live =
        uses[p->id()] > 0 || !s.check.empty() || (s.reducer == ir::Reducer::kCustom && live_groups.contains(s.group));
    if (live) {
      kept.push_back(s);
      continue;
    }
    ++removed;
    TALLY_GRAPH_UPDATE("state ", s.name, " removed: finalize does not read it");
    m.finalize->RemoveParam(p);
    auto& rets = m.update->mutable_returns();
    for (auto it = rets.begin(); it != rets.end(); ++it) {
      if (it->first == s.name) {
        rets.erase(it);
        break;
      }
    }
  }
  m.states = std::move(kept);
  for (auto it = m.merges.begin(); it != m.merges.end();) {
    bool used = false;
    for (const auto& s : m.states) used |= s.group == it->first;
    it = used ? std::next(it) : m.merges.erase(it);
  }
  nodes += RemoveDeadNodes(*m.update);
  counters_ = {{"states_removed", removed}, {"nodes_removed", nodes}};
  return removed + nodes > 0;
}

}  // namespace tally::passes
