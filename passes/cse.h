// cse: common-subexpression elimination over a module.
//
// Merges pure nodes with the same op, the same inputs and identical
// attributes, in every graph; then merges states that are identical by
// structure — same type, initial value, reducer and check, and the very same
// partial value in @update after node merging. Sharing is decided from the
// IR alone, never by comparing state values (TorchMetrics' compute groups
// compare values after the first update and so merge metrics that differ).
// Counters: nodes_merged, states_merged.
#ifndef TALLY_PASSES_CSE_H_
#define TALLY_PASSES_CSE_H_

#include "passes/pass.h"

namespace tally::passes {

class Cse : public Pass {
 public:
  absl::string_view name() const override { return "cse"; }
  absl::StatusOr<bool> Run(ir::Module& m) override;
};

// CseGraph merges identical pure nodes of one graph; returns the number merged.
int CseGraph(ir::Graph& g);

}  // namespace tally::passes

#endif  // TALLY_PASSES_CSE_H_
