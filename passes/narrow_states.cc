#include "passes/narrow_states.h"

#include <string>
#include <vector>

#include "ops/attrs.h"
#include "ops/confmat_parts.h"
#include "ops/op_registry.h"
#include "passes/eliminate_dead_states.h"
#include "support/status_macros.h"

namespace tally::passes {
namespace {

using ir::Node;
using ir::Value;
using ops::ConfmatPart;

// MatrixReads are the finalize nodes reading a matrix state; `whole` when
// anything else reads it (then it must stay a matrix).
struct MatrixReads {
  std::vector<Node*> parts;
  bool whole = false;
};

MatrixReads FindReads(ir::Graph& finalize, Value* param) {
  MatrixReads r;
  for (const auto& n : finalize.nodes()) {
    for (Value* in : n->inputs()) {
      if (in != param) continue;
      if (ops::Is(*n, ops::OpId::kConfmatPart))
        r.parts.push_back(n.get());
      else
        r.whole = true;
    }
  }
  for (const auto& [label, v] : finalize.returns()) r.whole |= v == param;
  return r;
}

// TotalsOf lists the nodes that read `read`'s [C] result, when each of them
// is a full sum over the classes (what micro averages read); empty when any
// other node uses it.
std::vector<Node*> TotalsOf(const ir::Graph& g, const Node* read) {
  std::vector<Node*> sums;
  for (const auto& n : g.nodes()) {
    for (Value* in : n->inputs()) {
      if (in != read->output(0)) continue;
      if (!ops::Is(*n, ops::OpId::kReduceSum)) return {};
      const auto a = ops::AttrsOf<ops::ReduceAttrs>(*n);
      const std::vector<int64_t>& dims = a.dims.get();
      const bool full = dims.empty() || (dims.size() == 1 && (dims[0] == 0 || dims[0] == -1));
      if (!full || a.keepdim.get()) return {};
      sums.push_back(n.get());
    }
  }
  for (const auto& [label, v] : g.returns()) {
    if (v == read->output(0)) return {};
  }
  return sums;
}

// NarrowConfmat rewrites one state if it is a narrowable matrix; returns
// whether it did.
absl::StatusOr<bool> NarrowConfmat(ir::Module& m, ir::StateDecl& s) {
  // int64 counts, or float64 weight sums (a weighted mc_confmat).
  const bool counts = s.type.dtype == ir::DType::kInt64 || s.type.dtype == ir::DType::kFloat64;
  if (s.reducer != ir::Reducer::kSum || !counts || s.type.rank() != 2 || !s.check.empty() || s.scatter) {
    return false;
  }
  Value* partial = m.update->FindReturn(s.name);
  Value* param = m.finalize->FindParam(s.name);
  if (partial == nullptr || param == nullptr) return false;
  Node* src = partial->producer();
  if (!ops::Is(src, ops::OpId::kMcConfmat) || partial->output_index() != 0) return false;
  if (m.update->UseCounts()[partial->id()] != 1) return false;  // something else reads the batch's matrix
  MatrixReads reads = FindReads(*m.finalize, param);
  if (reads.whole || reads.parts.empty()) return false;

  // The parts read, in a canonical order (so equal reads give equal IR).
  std::vector<ConfmatPart> parts;
  for (ConfmatPart p : ops::kAllConfmatParts) {
    for (Node* n : reads.parts) {
      if (ops::AttrsOf<ops::ConfmatPartAttrs>(*n).part == ops::ConfmatPartName(p)) {
        parts.push_back(p);
        break;
      }
    }
  }
  // Micro averages read each part only through its total: then the state is
  // the totals, i64[P], whatever C.
  bool totals = true;
  for (Node* n : reads.parts) totals = totals && !TotalsOf(*m.finalize, n).empty();
  const ir::Device device = partial->type().device;
  const auto confmat = ops::AttrsOf<ops::McConfmatAttrs>(*src);
  ops::McMarginalsAttrs attrs;
  attrs.num_classes = confmat.num_classes;
  attrs.ignore_index = confmat.ignore_index;
  attrs.parts = ops::JoinConfmatParts(parts);
  if (totals) attrs.totals = true;
  TALLY_ASSIGN_OR_RETURN(Node * marginals, ops::Build(*m.update, ops::OpId::kMcMarginals, src->inputs(),
                                                      ops::ToAttrMap(attrs), device, src->loc()));
  for (int i = 0; i < 3; ++i) m.update->ReplaceAllUsesWith(src->output(i), marginals->output(i));

  s.type = marginals->output(0)->type();
  param->mutable_type() = s.type;
  for (Node* read : reads.parts) {
    int64_t row = 0;
    while (ops::ConfmatPartName(parts[row]) != ops::AttrsOf<ops::ConfmatPartAttrs>(*read).part) ++row;
    // The row of the part (a C-vector), or with totals its total (a scalar)
    // in place of each sum that read it.
    std::vector<Node*> users = totals ? TotalsOf(*m.finalize, read) : std::vector<Node*>{read};
    for (Node* user : users) {
      TALLY_ASSIGN_OR_RETURN(
          Node * sel, ops::Build(*m.finalize, ops::OpId::kSelect, {param}, ops::ToAttrMap(ops::SelectAttrs{0, row}),
                                 param->type().device, read->loc()));
      m.finalize->ReplaceAllUsesWith(user->output(0), sel->output(0));
    }
  }
  RemoveDeadNodes(*m.update);
  RemoveDeadNodes(*m.finalize);
  m.update->TopologicalSort();
  m.finalize->TopologicalSort();
  return true;
}

}  // namespace

absl::StatusOr<bool> NarrowStates::Run(ir::Module& m) {
  const int64_t before = m.FixedStateBytes();
  int64_t narrowed = 0;
  for (ir::StateDecl& s : m.states) {
    TALLY_ASSIGN_OR_RETURN(bool changed, NarrowConfmat(m, s));
    narrowed += changed;
  }
  counters_ = {
      {"states_narrowed", narrowed}, {"state_bytes_before", before}, {"state_bytes_after", m.FixedStateBytes()}};
  return narrowed > 0;
}

}  // namespace tally::passes
