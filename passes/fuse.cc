#include "passes/fuse.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ops/decompositions.h"
#include "ops/op_registry.h"
#include "passes/eliminate_dead_states.h"
#include "support/status_macros.h"

namespace tally::passes {
namespace {

// PrimitiveSize is how many ATen calls the decomposition of `n` makes.
int PrimitiveSize(const ir::Node& n) {
  ir::Graph scratch("scratch");
  absl::flat_hash_map<const ir::Value*, ir::Value*> map;
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < n.inputs().size(); ++i) {
    ins.push_back(scratch.AddParam(absl::StrCat("in", i), n.input(i)->type()));
  }
  std::vector<ir::TensorType> types;
  for (ir::Value* v : n.outputs()) types.push_back(v->type());
  ir::Node* copy = scratch.AddNode(n.op(), ins, n.attrs(), types, n.loc());
  for (size_t i = 0; i < copy->outputs().size(); ++i) scratch.AddReturn(absl::StrCat("out", i), copy->output(i));
  if (!ops::Decompose(scratch, *copy).ok()) return 1;
  RemoveDeadNodes(scratch);
  return CountAtenCalls(scratch);
}

std::string Describe(const ir::Node& n) {
  std::vector<std::string> attrs;
  for (const auto& [k, v] : n.attrs()) attrs.push_back(absl::StrCat(k, "=", ir::AttrToString(v)));
  return absl::StrCat(n.op(), " {", absl::StrJoin(attrs, ", "), "}");
}

}  // namespace

int CountAtenCalls(const ir::Graph& g) {
  int calls = 0;
  for (const auto& n : g.nodes()) calls += ops::IsCreation(*n) ? 0 : 1;
  return calls;
}

absl::StatusOr<bool> Fuse::Run(ir::Module& m) {
  groups_.clear();
  int kept = 0, decomposed = 0, pruned = 0;
  std::vector<ir::Graph*> graphs{m.update.get(), m.finalize.get()};
  for (auto& [group, g] : m.merges) graphs.push_back(g.get());
  for (ir::Graph* g : graphs) {
    std::vector<ir::Node*> composites;
    for (const auto& n : g->nodes())
      if (ops::IsComposite(*n)) composites.push_back(n.get());
    if (composites.empty()) continue;
    const std::vector<int> uses = g->UseCounts();
    for (ir::Node* n : composites) {
      const ops::OpDef* def = ops::FindOp(n->op());
      if (def != nullptr && def->prune) {
        std::vector<bool> live;
        for (ir::Value* v : n->outputs()) live.push_back(uses[v->id()] > 0);
        pruned += def->prune(*n, live) ? 1 : 0;
      }
      if (policy_ == FusePolicy::kFused && ops::HasFusedKernel(*n, device_)) {
        ++kept;
        groups_.push_back(
            absl::StrCat(Describe(*n), ": 1 fused kernel for ", PrimitiveSize(*n), " ATen ops (@", g->name(), ")"));
        continue;
      }
      TALLY_RETURN_IF_ERROR(ops::Decompose(*g, *n));
      ++decomposed;
    }
    g->TopologicalSort();
    RemoveDeadNodes(*g);
  }
  counters_ = {{"fused_groups", kept},
               {"decomposed", decomposed},
               {"pruned", pruned},
               {"aten_calls_per_update", CountAtenCalls(*m.update)}};
  return decomposed > 0 || pruned > 0;
}

}  // namespace tally::passes
