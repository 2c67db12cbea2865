#include "passes/remove_host_syncs.h"

#include <cmath>
#include <limits>
#include <optional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/ir/printer.h"
#include "ops/attrs.h"
#include "ops/op_registry.h"
#include "passes/eliminate_dead_states.h"
#include "support/status_macros.h"

namespace tally::passes {
namespace {

using ir::Node;
using ir::Value;

// Builder appends nodes right away; the graph is re-sorted afterwards.
absl::StatusOr<Value*> Emit(ir::Graph& g, ops::OpId op, std::vector<Value*> in, ir::AttrMap attrs, const Node& origin) {
  TALLY_ASSIGN_OR_RETURN(
      Node * n, ops::Build(g, op, std::move(in), std::move(attrs), origin.output(0)->type().device, origin.loc()));
  return n->output(0);
}

absl::StatusOr<Value*> Constant(ir::Graph& g, double v, ir::DType dt, const Node& origin) {
  return Emit(g, ops::OpId::kConstant, {},
              ops::ToAttrMap(ops::ConstantAttrs::Scalar(v, std::string(ir::DTypeName(dt)))), origin);
}

double Identity(ops::OpId op, ir::DType dt) {
  bool fl = ir::IsFloating(dt);
  if (op == ops::OpId::kReduceMax) return fl ? -INFINITY : static_cast<double>(std::numeric_limits<int64_t>::min());
  if (op == ops::OpId::kReduceMin) return fl ? INFINITY : static_cast<double>(std::numeric_limits<int64_t>::max());
  return 0;
}

// MetricOf names the metric whose state a node feeds.
std::string MetricOf(const ir::Module& m, const ir::Graph& g, const Node* target) {
  for (const auto& [label, v] : g.returns()) {
    std::vector<const Value*> stack{v};
    absl::flat_hash_set<const Value*> seen;
    while (!stack.empty()) {
      const Value* cur = stack.back();
      stack.pop_back();
      if (!seen.insert(cur).second || cur->producer() == nullptr) continue;
      if (cur->producer() == target) {
        const ir::StateDecl* s = m.FindState(label);
        return s && !s->metric.empty() ? s->metric : label;
      }
      for (const Value* in : cur->producer()->inputs()) stack.push_back(in);
    }
  }
  return "program";
}

struct Rewriter {
  ir::Module& m;
  int removed = 0;
  int checks = 0;

  absl::Status RewriteGraph(ir::Graph& g, bool is_update) {
    // Snapshot: rewrites append nodes.
    std::vector<Node*> nodes;
    for (const auto& n : g.nodes()) nodes.push_back(n.get());
    for (Node* n : nodes) {
      std::optional<ops::OpId> op = ops::IdOf(*n);
      if (!op) continue;
      using ops::OpId;
      Node* src = n->inputs().empty() ? nullptr : n->input(0)->producer();
      if ((*op == OpId::kReduceSum || *op == OpId::kReduceMax || *op == OpId::kReduceMin) &&
          ops::Is(src, OpId::kMaskedSelect) && ops::AttrsOf<ops::ReduceAttrs>(*n).dims.get().empty()) {
        Value* x = src->input(0);
        Value* mask = src->input(1);
        TALLY_ASSIGN_OR_RETURN(Value * id, Constant(g, Identity(*op, x->type().dtype), x->type().dtype, *n));
        TALLY_ASSIGN_OR_RETURN(Value * w, Emit(g, ops::OpId::kWhere, {mask, x, id}, {}, *n));
        TALLY_ASSIGN_OR_RETURN(Value * r, Emit(g, *op, {w}, n->attrs(), *n));
        g.ReplaceAllUsesWith(n->output(), r);
        ++removed;
      } else if (*op == OpId::kSize && ops::AttrsOf<ops::DimAttrs>(*n).dim == 0 &&
                 (ops::Is(src, OpId::kMaskedSelect) || ops::Is(src, OpId::kNonzero))) {
        Value* flag;
        if (ops::Is(*src, OpId::kNonzero)) {
          Value* x = src->input(0);
          TALLY_ASSIGN_OR_RETURN(Value * zero, Constant(g, 0, x->type().dtype, *n));
          TALLY_ASSIGN_OR_RETURN(flag, Emit(g, ops::OpId::kNe, {x, zero}, {}, *n));
        } else {
          Value* x = src->input(0);
          TALLY_ASSIGN_OR_RETURN(Value * t,
                                 Emit(g, ops::OpId::kFullLike, {x}, ops::ToAttrMap(ops::FullLikeAttrs{1.0, "i1"}), *n));
          TALLY_ASSIGN_OR_RETURN(flag, Emit(g, ops::OpId::kLogicalAnd, {src->input(1), t}, {}, *n));
        }
        TALLY_ASSIGN_OR_RETURN(Value * r, Emit(g, ops::OpId::kReduceSum, {flag}, {}, *n));
        g.ReplaceAllUsesWith(n->output(), r);
        ++removed;
      } else if (*op == OpId::kBincount && is_update) {
        const int64_t k = ops::AttrsOf<ops::BincountAttrs>(*n).minlength;
        Value* x = n->input(0);
        std::string metric = MetricOf(m, g, n);
        TALLY_ASSIGN_OR_RETURN(Value * h,
                               Emit(g, ops::OpId::kHistogram, {x}, ops::ToAttrMap(ops::HistogramAttrs{k}), *n));
        // Values outside [0, K) become a deferred check instead of a bigger output.
        TALLY_ASSIGN_OR_RETURN(Value * lo, Constant(g, 0, x->type().dtype, *n));
        TALLY_ASSIGN_OR_RETURN(Value * hi, Constant(g, static_cast<double>(k), x->type().dtype, *n));
        TALLY_ASSIGN_OR_RETURN(Value * below, Emit(g, ops::OpId::kLt, {x, lo}, {}, *n));
        TALLY_ASSIGN_OR_RETURN(Value * above, Emit(g, ops::OpId::kGe, {x, hi}, {}, *n));
        TALLY_ASSIGN_OR_RETURN(Value * bad, Emit(g, ops::OpId::kLogicalOr, {below, above}, {}, *n));
        TALLY_ASSIGN_OR_RETURN(Value * count, Emit(g, ops::OpId::kReduceSum, {bad}, {}, *n));
        g.ReplaceAllUsesWith(n->output(), h);
        ir::StateDecl s;
        s.name = absl::StrCat("sync_check", checks++);
        while (m.FindState(s.name)) s.name += "_";
        s.type = count->type();
        s.reducer = ir::Reducer::kSum;
        s.check = absl::StrCat("bincount: {n} values outside [0, ", k, ") (", n->loc(), ")");
        s.metric = metric;
        m.states.push_back(s);
        g.AddReturn(s.name, count);
        m.finalize->AddParam(s.name, s.type);
        ++removed;
      }
    }
    if (removed) {
      g.TopologicalSort();
      RemoveDeadNodes(g);
    }
    return absl::OkStatus();
  }
};

absl::Status CheckSyncFree(const ir::Module& m, const ir::Graph& g) {
  for (const auto& n : g.nodes()) {
    if (!ops::SyncsHost(*n) && !ops::HasDataDependentShape(*n)) continue;
    std::string metric = MetricOf(m, g, n.get());
    return absl::FailedPreconditionError(
        absl::StrCat(metric, ": ", n->op(), " in @", g.name(), ": ",
                     ops::SyncsHost(*n) ? "syncs the host" : "has a data-dependent shape",
                     " inside update and has no sync-free rewrite", n->loc().empty() ? "" : " (" + n->loc() + ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<bool> RemoveHostSyncs::Run(ir::Module& m) {
  Rewriter r{m};
  TALLY_RETURN_IF_ERROR(r.RewriteGraph(*m.update, /*is_update=*/true));
  for (auto& [group, g] : m.merges) TALLY_RETURN_IF_ERROR(r.RewriteGraph(*g, /*is_update=*/false));
  TALLY_RETURN_IF_ERROR(CheckSyncFree(m, *m.update));
  for (const auto& [group, g] : m.merges) TALLY_RETURN_IF_ERROR(CheckSyncFree(m, *g));
  counters_ = {{"syncs_removed", r.removed}};
  return r.removed > 0;
}

}  // namespace tally::passes
