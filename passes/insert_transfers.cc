#include "passes/insert_transfers.h"

#include "absl/container/flat_hash_set.h"
#include "ops/attrs.h"
#include "ops/op_list.h"

namespace tally::passes {

absl::StatusOr<bool> InsertTransfers::Run(ir::Module& m) {
  ir::Graph& g = *m.update;
  absl::flat_hash_set<const ir::Node*> transfers;
  int inserted = 0;
  for (ir::Value* p : g.params()) {
    if (p->type().device.is_any()) continue;  // already done
    ir::TensorType on_device = p->type();
    on_device.device = device_;
    p->mutable_type().device = ir::Device::Any();
    ir::Node* t = g.AddNode(std::string(ops::OpName(ops::OpId::kTransfer)), {p},
                            ops::ToAttrMap(ops::TransferAttrs{device_.name}), {on_device});
    // Redirect every other use of the parameter to the transferred value.
    ir::Value* moved = t->output();
    for (const auto& n : g.nodes()) {
      if (n.get() == t) continue;
      for (size_t i = 0; i < n->inputs().size(); ++i)
        if (n->input(i) == p) n->set_input(static_cast<int>(i), moved);
    }
    for (auto& r : g.mutable_returns())
      if (r.second == p) r.second = moved;
    transfers.insert(t);
    ++inserted;
  }
  g.SortNodes([&](const ir::Node* a, const ir::Node* b) { return transfers.contains(a) && !transfers.contains(b); });
  counters_ = {{"transfers_inserted", inserted}};
  return inserted > 0;
}

}  // namespace tally::passes
