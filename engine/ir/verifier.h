// The IR verifier: checks a graph or a module without changing it.
//
// Graph: SSA (every input defined before use, by a parameter or an earlier
// node), known ops, and every node's result types equal to what the op table
// infers. Module: the update graph returns exactly one partial per state with
// the state's dtype and trailing shape; the finalize graph takes exactly the
// states, in order; each custom-merge group has a merge graph over a.*/b.* of
// its states. Runs at pipeline start and after every pass that changed the IR.
#ifndef TALLY_ENGINE_IR_VERIFIER_H_
#define TALLY_ENGINE_IR_VERIFIER_H_

#include "absl/status/status.h"
#include "engine/ir/graph.h"
#include "engine/ir/module.h"

namespace tally::ir {

// VerifyGraph checks SSA form and types.
absl::Status VerifyGraph(const Graph& g);
// VerifyModule checks every graph and the state contracts.
absl::Status VerifyModule(const Module& m);

}  // namespace tally::ir

#endif  // TALLY_ENGINE_IR_VERIFIER_H_
