#include "passes/canonicalize.h"

#include <cmath>
#include <optional>


#include "support/status_macros.h"
#include "ops/op_registry.h"
#include "passes/eliminate_dead_states.h"
#include "support/rewrite_log.h"

namespace tally::passes {
namespace {

using ir::DType;
using ir::Node;
using ir::Value;

std::optional<double> ScalarConstant(const Value* v) {
  const Node* p = v->producer();
  if (p == nullptr || p->op() != "constant") return std::nullopt;
  return p->GetDouble("value");
}

// RoundTo gives the value an op of dtype `dt` would hold.
double RoundTo(double v, DType dt) {
  switch (dt) {
    case DType::kBool: return v != 0 ? 1 : 0;
    case DType::kInt32: return static_cast<double>(static_cast<int32_t>(v));
    case DType::kInt64: return static_cast<double>(static_cast<int64_t>(v));
    case DType::kFloat32: return static_cast<double>(static_cast<float>(v));
    case DType::kFloat64: return v;
    case DType::kFloat16:
    case DType::kBFloat16: return std::nan("");  // never folded (see Fold)
  }
  return v;
}

std::optional<double> Fold(const Node& n, const std::vector<double>& x) {
  const std::string& op = n.op();
  DType out = n.output()->type().dtype;
  if (out == DType::kFloat16 || out == DType::kBFloat16) return std::nullopt;  // input dtypes only
  // Operands are first brought to the op's compute dtype, as the kernels do.
  auto a = [&](int i) { return x[i]; };
  if (op == "add") return a(0) + a(1);
  if (op == "sub") return a(0) - a(1);
  if (op == "mul") return a(0) * a(1);
  if (op == "div") return a(0) / a(1);
  if (op == "safe_div") return a(1) != 0 ? a(0) / a(1) : n.GetDouble("zero_division", 0.0);
  if (op == "maximum") return std::max(a(0), a(1));
  if (op == "minimum") return std::min(a(0), a(1));
  if (op == "neg") return -a(0);
  if (op == "abs") return std::abs(a(0));
  if (op == "sqrt") return std::sqrt(a(0));
  if (op == "exp") return std::exp(a(0));
  if (op == "log") return std::log(a(0));
  if (op == "eq") return a(0) == a(1) ? 1 : 0;
  if (op == "ne") return a(0) != a(1) ? 1 : 0;
  if (op == "lt") return a(0) < a(1) ? 1 : 0;
  if (op == "le") return a(0) <= a(1) ? 1 : 0;
  if (op == "gt") return a(0) > a(1) ? 1 : 0;
  if (op == "ge") return a(0) >= a(1) ? 1 : 0;
  if (op == "logical_and") return (a(0) != 0 && a(1) != 0) ? 1 : 0;
  if (op == "logical_or") return (a(0) != 0 || a(1) != 0) ? 1 : 0;
  if (op == "logical_not") return a(0) == 0 ? 1 : 0;
  if (op == "cast") return a(0);
  (void)out;
  return std::nullopt;
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
      if (!c || in->type().rank() != 0) { all = false; break; }
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
    Node* c = g.AddNode("constant", {},
                        {{"value", v}, {"dtype", std::string(ir::DTypeName(n->output()->type().dtype))}},
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
    const std::string& op = n->op();
    if (n->outputs().size() != 1) continue;
    const ir::TensorType& out = n->output()->type();
    Value* repl = nullptr;
    auto same = [&](Value* v) { return v->type() == out ? v : nullptr; };
    if (op == "add" && IsConstant(n->input(1), 0)) repl = same(n->input(0));
    else if (op == "add" && IsConstant(n->input(0), 0)) repl = same(n->input(1));
    else if (op == "sub" && IsConstant(n->input(1), 0)) repl = same(n->input(0));
    else if (op == "mul" && IsConstant(n->input(1), 1)) repl = same(n->input(0));
    else if (op == "mul" && IsConstant(n->input(0), 1)) repl = same(n->input(1));
    else if (op == "div" && IsConstant(n->input(1), 1)) repl = same(n->input(0));
    else if (op == "cast" && n->input(0)->type().dtype == out.dtype) repl = same(n->input(0));
    else if (op == "where" && n->input(1) == n->input(2)) repl = same(n->input(1));
    else if (op == "logical_not" && n->input(0)->producer() &&
             n->input(0)->producer()->op() == "logical_not") {
      repl = same(n->input(0)->producer()->input(0));
    }
    if (repl) {
      TALLY_GRAPH_UPDATE("@", g.name(), ": identity ", op, " -> %", n->output()->id(), " replaced by %", repl->id());
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
    if (n->op() != "cast" || n->output()->type().dtype != DType::kFloat64) continue;
    Node* sum = n->input(0)->producer();
    if (sum == nullptr || sum->op() != "reduce_sum" || sum->output()->type().dtype != DType::kFloat32) continue;
    Value* x = sum->input(0);
    auto cast = ops::Build(g, "cast", {x}, {{"dtype", std::string("f64")}}, x->type().device, n->loc());
    if (!cast.ok()) continue;
    auto wide = ops::Build(g, "reduce_sum", {(*cast)->output()}, sum->attrs(), x->type().device, sum->loc());
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
  counters_ = {{"constants_folded", folded}, {"identities_removed", identities},
               {"accumulators_widened", widened}};
  return folded + identities + widened > 0;
}

}  // namespace tally::passes
