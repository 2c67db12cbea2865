// narrow-states: keep only the statistics a module's finalize reads.
//
// A C x C confusion-matrix state (the matrix result of an mc_confmat) that
// finalize reads only through confmat_part — the stat-score family, Jaccard,
// MCC and Cohen's kappa all read its diagonal, row sums and column sums, and
// weighted kappa the per-class sums of |target - pred| or its square —
// becomes one i64[P, C] state of the P parts read: mc_marginals in update,
// a select of a row in finalize. 131,072 classes then cost 3 MB instead of
// 128 GiB, and the update counts into C-vectors instead of a matrix. The
// state keeps its name and its sum reducer, so merge, sync, checkpoints and
// export treat it as any other (smaller) sum state.
//
// When every part is read only through its total (micro averages), the
// state is the totals, i64[P]: a few scalars whatever C.
//
// A matrix read whole (multiclass_confusion_matrix in the collection) is
// kept, and the other metrics read their parts off it: sharing stays
// structural. Runs after cse and eliminate-dead-states, so it sees the
// collection's one shared matrix and only the reads that reach a result.
// Counters: states_narrowed, state_bytes_before, state_bytes_after (the
// fixed-size states of the whole module).
#ifndef TALLY_PASSES_NARROW_STATES_H_
#define TALLY_PASSES_NARROW_STATES_H_

#include "passes/pass.h"

namespace tally::passes {

class NarrowStates : public Pass {
 public:
  absl::string_view name() const override { return "narrow-states"; }
  absl::StatusOr<bool> Run(ir::Module& m) override;
};

}  // namespace tally::passes

#endif  // TALLY_PASSES_NARROW_STATES_H_
