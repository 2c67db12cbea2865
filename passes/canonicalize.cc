#include "passes/canonicalize.h"

#include <cmath>
#include <optional>

#include "ops/attrs.h"
#include "ops/op_registry.h"
#include "passes/eliminate_dead_states.h"
#include "support/rewrite_log.h"
#include "support/status_macros.h"

namespace tally::passes {
namespace {

using ir::DType;
using ir::Node;
using ir::Value;

std::optional<double> ScalarConstant(const Value* v) {
  const Node* p = v->producer();
  if (!ops::Is(p, ops::OpId::kConstant)) return std::nullopt;
  return ops::AttrsOf<ops::ConstantAttrs>(*p).value.optional();
}

// RoundTo gives the value an op of dtype `dt` would hold.
double RoundTo(double v, DType dt) {
  switch (dt) {
    case DType::kBool:
      return v != 0 ? 1 : 0;
    case DType::kInt32:
      return static_cast<double>(static_cast<int32_t>(v));
    case DType::kInt64:
      return static_cast<double>(static_cast<int64_t>(v));
    case DType::kFloat32:
      return static_cast<double>(static_cast<float>(v));
    case DType::kFloat64:
      return v;
    case DType::kFloat16:
    case DType::kBFloat16:
      return std::nan("");  // never folded (see Fold)
  }
  return v;
}

// Fold computes `n` on scalar constants with its op's fold hook.
std::optional<double> Fold(const Node& n, const std::vector<double>& x) {
  DType out = n.output()->type().dtype;
  if (out == DType::kFloat16 || out == DType::kBFloat16) return std::nullopt;  // input dtypes only
  const ops::OpDef* def = ops::FindOp(n.op());
  if (def == nullptr || !def->fold) return std::nullopt;
  return def->fold(n, x);
}

int FoldConstants(ir::Graph& g) {
  int folded = 0;
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  for (Node* n : nodes) {
    if (n->inputs().empty() || n->outputs().size() != 1 || n->output()->type().rank() != 0) continue;
    std::vector<double> xs;
    bool all = true;
    DType compute = n->output()->type().dtype;
    for (Value* in : n->inputs()) {
      auto c = ScalarConstant(in);
      if (!c || in->type().rank() != 0) {
        all = false;
        break;
      }
      xs.push_back(*c);
    }
    if (!all) continue;
    // Comparisons and logic compute in the promoted input dtype; arithmetic
    // in the result dtype.
    DType in_dt = n->input(0)->type().dtype;
    for (Value* in : n->inputs()) in_dt = ir::PromoteTypes(in_dt, in->type().dtype);
    if (compute == DType::kBool) compute = in_dt;
    for (double& v : xs) v = RoundTo(v, compute);
    auto r = Fold(*n, xs);
    if (!r) continue;
    double v = RoundTo(*r, n->output()->type().dtype);
    Node* c =
        g.AddNode(std::string(ops::OpName(ops::OpId::kConstant)), {},
                  ops::ToAttrMap(ops::ConstantAttrs::Scalar(v, std::string(ir::DTypeName(n->output()->type().dtype)))),
                  {n->output()->type()}, n->loc());
    g.ReplaceAllUsesWith(n->output(), c->output());
    ++folded;
  }
  return folded;
}

bool IsConstant(const Value* v, double k) {
  auto c = ScalarConstant(v);
  return c && *c == k;
}

int RemoveIdentities(ir::Graph& g) {
  int removed = 0;
  for (const auto& n : g.nodes()) {
    if (n->outputs().size() != 1) continue;
    std::optional<ops::OpId> op = ops::IdOf(*n);
    if (!op) continue;
    using ops::OpId;
    const ir::TensorType& out = n->output()->type();
    Value* repl = nullptr;
    auto same = [&](Value* v) { return v->type() == out ? v : nullptr; };
    if (*op == OpId::kAdd && IsConstant(n->input(1), 0))
      repl = same(n->input(0));
    else if (*op == OpId::kAdd && IsConstant(n->input(0), 0))
      repl = same(n->input(1));
    else if (*op == OpId::kSub && IsConstant(n->input(1), 0))
      repl = same(n->input(0));
    else if (*op == OpId::kMul && IsConstant(n->input(1), 1))
      repl = same(n->input(0));
    else if (*op == OpId::kMul && IsConstant(n->input(0), 1))
      repl = same(n->input(1));
    else if (*op == OpId::kDiv && IsConstant(n->input(1), 1))
      repl = same(n->input(0));
    else if (*op == OpId::kCast && n->input(0)->type().dtype == out.dtype)
      repl = same(n->input(0));
    else if (*op == OpId::kWhere && n->input(1) == n->input(2))
      repl = same(n->input(1));
    else if (*op == OpId::kLogicalNot && ops::Is(n->input(0)->producer(), OpId::kLogicalNot)) {
      repl = same(n->input(0)->producer()->input(0));
    }
    if (repl) {
      TALLY_GRAPH_UPDATE("@", g.name(), ": identity ", n->op(), " -> %", n->output()->id(), " replaced by %",
                         repl->id());
      g.ReplaceAllUsesWith(n->output(), repl);
      ++removed;
    }
  }
  return removed;
}

int WidenAccumulators(ir::Graph& g) {
  int widened = 0;
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  for (Node* n : nodes) {
    if (!ops::Is(*n, ops::OpId::kCast) || n->output()->type().dtype != DType::kFloat64) continue;
    Node* sum = n->input(0)->producer();
    if (!ops::Is(sum, ops::OpId::kReduceSum) || sum->output()->type().dtype != DType::kFloat32) continue;
    Value* x = sum->input(0);
    auto cast = ops::Build(g, ops::OpId::kCast, {x}, ops::ToAttrMap(ops::CastAttrs{"f64"}), x->type().device, n->loc());
    if (!cast.ok()) continue;
    auto wide = ops::Build(g, ops::OpId::kReduceSum, {(*cast)->output()}, sum->attrs(), x->type().device, sum->loc());
    if (!wide.ok()) continue;
    g.ReplaceAllUsesWith(n->output(), (*wide)->output());
    ++widened;
  }
  return widened;
}

}  // namespace

absl::StatusOr<bool> Canonicalize::Run(ir::Module& m) {
  int folded = 0, identities = 0, widened = 0;
  std::vector<ir::Graph*> graphs{m.update.get(), m.finalize.get()};
  for (auto& [group, g] : m.merges) graphs.push_back(g.get());
  for (ir::Graph* g : graphs) {
    int f = FoldConstants(*g);
    int i = RemoveIdentities(*g);
    int w = WidenAccumulators(*g);
    if (f + i + w > 0) {
      g->TopologicalSort();
      RemoveDeadNodes(*g);
    }
    folded += f;
    identities += i;
    widened += w;
  }
  counters_ = {{"constants_folded", folded}, {"identities_removed", identities}, {"accumulators_widened", widened}};
  return folded + identities + widened > 0;
}

}  // namespace tally::passes
