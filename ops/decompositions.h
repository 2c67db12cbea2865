// Decompositions of composite ops into primitive ops: the ATen reference
// path, used where no fused kernel exists and by the tests that compare the
// fused kernels against it.
#ifndef TALLY_OPS_DECOMPOSITIONS_H_
#define TALLY_OPS_DECOMPOSITIONS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "engine/ir/graph.h"

namespace tally::ops {

// Decompose appends the primitive form of composite node `n` to `g` and
// redirects every use of n's results to it; `n` is left unused (the caller
// removes it and restores topological order). Unimplemented for ops without
// a decomposition. `shifts`, when given, receives the values the
// decomposition reads only as a centring shift: its results hold for any
// value there (in exact arithmetic), so a transformation may replace one by
// another value (dsl::Replicate's bootstrap shares the batch's).
absl::Status Decompose(ir::Graph& g, ir::Node& n, std::vector<const ir::Value*>* shifts = nullptr);

}  // namespace tally::ops

#endif  // TALLY_OPS_DECOMPOSITIONS_H_
