// Decompositions of composite ops into primitive ops: the ATen reference
// path, used where no fused kernel exists and by the tests that compare the
// fused kernels against it.
#ifndef TALLY_OPS_DECOMPOSITIONS_H_
#define TALLY_OPS_DECOMPOSITIONS_H_

#include "absl/status/statusor.h"
#include "engine/ir/graph.h"

namespace tally::ops {

// Decompose appends the primitive form of composite node `n` to `g` and
// redirects every use of n's results to it; `n` is left unused (the caller
// removes it and restores topological order). Unimplemented for ops without
// a decomposition.
absl::Status Decompose(ir::Graph& g, ir::Node& n);

}  // namespace tally::ops

#endif  // TALLY_OPS_DECOMPOSITIONS_H_
