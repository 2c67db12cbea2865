// The full IR verifier: the structural checks of engine/ir/verifier.h with
// the op table's check of every node (known op, arity, attributes, result
// types equal to what the op infers). What the DSL, the pass pipeline and
// tools run.
#ifndef TALLY_OPS_OP_VERIFIER_H_
#define TALLY_OPS_OP_VERIFIER_H_

#include "absl/status/status.h"
#include "engine/ir/graph.h"
#include "engine/ir/module.h"

namespace tally::ops {

// VerifyGraph checks SSA form and every node against the op table.
absl::Status VerifyGraph(const ir::Graph& g);
// VerifyModule checks every graph and the state contracts.
absl::Status VerifyModule(const ir::Module& m);

}  // namespace tally::ops

#endif  // TALLY_OPS_OP_VERIFIER_H_
