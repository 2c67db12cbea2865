// The op table: every op kind Tally knows, looked up by name, and the helpers
// that build and check nodes against it.
#ifndef TALLY_OPS_OP_REGISTRY_H_
#define TALLY_OPS_OP_REGISTRY_H_

#include <array>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/ir/graph.h"
#include "ops/op_def.h"
#include "ops/op_list.h"

namespace tally::ops {

// OpTable holds one definition per op id (ops/op_list.h), in an array
// indexed by the id; iterating yields (name, definition) in op-list order.
class OpTable {
 public:
  // Add enters `d` under its id; false when the id already has one.
  bool Add(OpDef d);
  const OpDef* Find(OpId id) const { return defs_[Index(id)] ? &*defs_[Index(id)] : nullptr; }
  size_t size() const;

  class Iterator {
   public:
    Iterator(const OpTable* t, size_t i) : t_(t), i_(i) { Skip(); }
    std::pair<const std::string&, const OpDef&> operator*() const {
      const OpDef& d = *t_->defs_[i_];
      return {d.name, d};
    }
    Iterator& operator++() {
      ++i_;
      Skip();
      return *this;
    }
    bool operator!=(const Iterator& o) const { return i_ != o.i_; }

   private:
    void Skip() {
      while (i_ < kNumOps && !t_->defs_[i_]) ++i_;
    }
    const OpTable* t_;
    size_t i_;
  };
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, kNumOps); }

 private:
  std::array<std::optional<OpDef>, kNumOps> defs_;
};

// Registry returns the table (built once, on first use).
const OpTable& Registry();
// FindOp returns the definition of `name`, or nullptr.
const OpDef* FindOp(absl::string_view name);
// DefOf returns the definition of a node's op (by its cached id), or nullptr.
const OpDef* DefOf(const ir::Node& n);
// Def returns the definition of op `id` (every id has one: CheckOpTable).
const OpDef& Def(OpId id);
// CheckOpTable says whether the family files define exactly the ops of
// op_list.h, each once, with the kind the list gives. The compiler asks it
// before its first compile.
absl::Status CheckOpTable();

// Trait queries on a node; unknown ops answer conservatively.
bool IsPure(const ir::Node& n);
bool SyncsHost(const ir::Node& n);
bool HasDataDependentShape(const ir::Node& n);
bool IsCreation(const ir::Node& n);
bool IsComposite(const ir::Node& n);
bool IsCommutative(const ir::Node& n);
// HasFusedKernel is true when a composite op has a fused kernel on `device`.
bool HasFusedKernel(const ir::Node& n, const ir::Device& device);

// InferTypes checks arity and attributes and infers the output types.
absl::StatusOr<std::vector<ir::TensorType>> InferTypes(absl::string_view op, const std::vector<ir::TensorType>& inputs,
                                                       const ir::AttrMap& attrs, const ir::Device& device);

// Build appends a node to `g` after inferring its output types.
absl::StatusOr<ir::Node*> Build(ir::Graph& g, absl::string_view op, std::vector<ir::Value*> inputs, ir::AttrMap attrs,
                                const ir::Device& device, std::string loc = "");

// Build by op id: what library code uses (names are for text IR).
inline absl::StatusOr<ir::Node*> Build(ir::Graph& g, OpId op, std::vector<ir::Value*> inputs, ir::AttrMap attrs,
                                       const ir::Device& device, std::string loc = "") {
  return Build(g, OpName(op), std::move(inputs), std::move(attrs), device, std::move(loc));
}

// CheckNode re-infers a node's output types and compares them with its own.
absl::Status CheckNode(const ir::Node& n);

// Family registration (one file per family).
void RegisterElementwiseOps(OpTable& t);
void RegisterReduceOps(OpTable& t);
void RegisterIndexOps(OpTable& t);
void RegisterSyncOps(OpTable& t);
void RegisterCompositeOps(OpTable& t);
void RegisterSegmentOps(OpTable& t);
void RegisterSortOps(OpTable& t);
void RegisterGatherOps(OpTable& t);
void RegisterRetrievalOps(OpTable& t);
void RegisterSequenceOps(OpTable& t);
void RegisterSignalOps(OpTable& t);
void RegisterImageOps(OpTable& t);
void RegisterLinalgOps(OpTable& t);

// Helpers for the family files.
// MakeOp fills the fields every op definition has.
OpDef MakeOp(OpId id, int min_inputs, int max_inputs, std::vector<AttrSpec> attrs, InferFn infer);
// AddOp enters `d` into the table under its id (a definition without one,
// or a second one for an id, is reported by CheckOpTable).
void AddOp(OpTable& t, OpDef d);
absl::StatusOr<ir::Shape> BroadcastShapes(const ir::Shape& a, const ir::Shape& b);
absl::StatusOr<int64_t> NormalizeDim(int64_t dim, int64_t rank);
// FlatDim is the size of `dims` flattened into one: fixed when all are,
// else the product symbol flatten names it by (`N*3`).
ir::Dim FlatDim(const std::vector<ir::Dim>& dims);

}  // namespace tally::ops

#endif  // TALLY_OPS_OP_REGISTRY_H_
