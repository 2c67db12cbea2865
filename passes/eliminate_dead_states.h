// eliminate-dead-states: drop what no output needs.
//
// Removes finalize nodes that do not reach a result, then every state whose
// finalize parameter is unused (a custom-merge group lives while any member
// is used; deferred-check counters always live), then the update nodes that
// only fed removed partials. Counters: states_removed, nodes_removed.
#ifndef TALLY_PASSES_ELIMINATE_DEAD_STATES_H_
#define TALLY_PASSES_ELIMINATE_DEAD_STATES_H_

#include "passes/pass.h"

namespace tally::passes {

class EliminateDeadStates : public Pass {
 public:
  absl::string_view name() const override { return "eliminate-dead-states"; }
  absl::StatusOr<bool> Run(ir::Module& m) override;
};

// RemoveDeadNodes deletes pure nodes whose results are unused; returns the count.
int RemoveDeadNodes(ir::Graph& g);

}  // namespace tally::passes

#endif  // TALLY_PASSES_ELIMINATE_DEAD_STATES_H_
