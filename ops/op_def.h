// OpDef: one entry of the op table — arity, attribute schema, type inference
// and traits. Passes ask the table about a node (`IsPure`, `SyncsHost`); they
// never compare op-name strings. The eager kernels live apart (kernels.h) so
// that the IR and the passes compile without ATen.
#ifndef TALLY_OPS_OP_DEF_H_
#define TALLY_OPS_OP_DEF_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/ir/attribute.h"
#include "engine/ir/graph.h"
#include "engine/ir/types.h"
#include "ops/attrs.h"
#include "ops/op_list.h"

namespace tally::ops {

// OpTraits are the facts passes and verifiers reason with.
struct OpTraits {
  bool syncs_host = false;            // reads a device value on the host
  bool data_dependent_shape = false;  // output shape depends on values
  bool preserves_device = true;       // outputs live on the inputs' device
  bool pure = true;                   // no side effects: CSE/DCE may touch it
  bool commutative = false;           // op(a, b) == op(b, a): CSE keys its operands unordered
  bool creates = false;               // no tensor inputs; materialized on the program device
  // composite: defined by a decomposition into primitive ops (the reference
  // path); `fused_devices` lists where a one-pass kernel of Tally's exists.
  bool composite = false;
};

// InferFn computes output types from input types and attributes. `device` is
// the device for ops that create tensors (no inputs).
using InferFn = std::function<absl::StatusOr<std::vector<ir::TensorType>>(
    const std::vector<ir::TensorType>& inputs, const ir::AttrMap& attrs, const ir::Device& device)>;

// PruneFn narrows a composite node's attributes to the results in use
// (`live[i]`: result i has a use), so that its kernel skips work nobody
// reads; returns whether it changed the node.
using PruneFn = std::function<bool(ir::Node& node, const std::vector<bool>& live)>;

// FoldFn computes the op on scalar constants (`x`: the operands, already
// rounded to the op's compute dtype); nullopt when it does not fold.
using FoldFn = std::function<std::optional<double>(const ir::Node& node, const std::vector<double>& x)>;

// OpDef describes one op kind.
struct OpDef {
  // The op, by id (ops/op_list.h); `name` is filled from it by AddOp.
  std::optional<OpId> id;
  std::string name;
  int min_inputs = 0;
  int max_inputs = 0;  // -1: variadic
  std::vector<AttrSpec> attrs;
  OpTraits traits;
  InferFn infer;
  std::vector<std::string> fused_devices;  // composite ops: "cpu", "meta"
  PruneFn prune;                           // composite ops, optional
  FoldFn fold;                             // scalar ops canonicalize may fold, optional
};

}  // namespace tally::ops

#endif  // TALLY_OPS_OP_DEF_H_
