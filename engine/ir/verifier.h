// The structural IR verifier: checks a graph or a module without changing it.
//
// Graph: SSA (every input defined before use, by a parameter or an earlier
// node), unique parameters and result labels, and whatever the node check
// says of each node (ops::VerifyModule passes the op table's: known ops and
// result types equal to what the op infers). Module: the update graph returns exactly one partial per state with
// the state's dtype and trailing shape; the finalize graph takes exactly the
// states, in order; each custom-merge group has a merge graph over a.*/b.* of
// its states. Runs at pipeline start and after every pass that changed the IR.
#ifndef TALLY_ENGINE_IR_VERIFIER_H_
#define TALLY_ENGINE_IR_VERIFIER_H_

#include <functional>

#include "absl/status/status.h"
#include "engine/ir/graph.h"
#include "engine/ir/module.h"

namespace tally::ir {

// NodeCheck judges one node (null: every node passes).
using NodeCheck = std::function<absl::Status(const Node&)>;

// VerifyGraph checks SSA form, then each node with `check`.
absl::Status VerifyGraph(const Graph& g, const NodeCheck& check = nullptr);
// VerifyModule checks every graph and the state contracts.
absl::Status VerifyModule(const Module& m, const NodeCheck& check = nullptr);

}  // namespace tally::ir

#endif  // TALLY_ENGINE_IR_VERIFIER_H_
