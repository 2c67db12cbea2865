#include "ops/op_verifier.h"

#include "engine/ir/verifier.h"
#include "ops/op_registry.h"

namespace tally::ops {

absl::Status VerifyGraph(const ir::Graph& g) { return ir::VerifyGraph(g, CheckNode); }

absl::Status VerifyModule(const ir::Module& m) { return ir::VerifyModule(m, CheckNode); }

}  // namespace tally::ops
