#include "engine/dsl/builder.h"

#include <cmath>
#include <functional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "ops/op_registry.h"
#include "ops/op_verifier.h"
#include "support/status_macros.h"

namespace tally::dsl {

MetricBuilder::MetricBuilder(std::string metric_name, Signature sig, ir::Device device)
    : ops::GraphBuilder(std::move(metric_name), std::move(device)),
      sig_(std::move(sig)),
      module_(std::make_unique<ir::Module>()) {
  module_->update = std::make_unique<ir::Graph>("update");
  module_->finalize = std::make_unique<ir::Graph>("finalize");
}

const InputSpec* MetricBuilder::FindInput(absl::string_view name) const {
  for (const auto& s : sig_)
    if (s.name == name) return &s;
  return nullptr;
}

void MetricBuilder::FailInput(const std::string& input, const std::string& what) {
  Fail(absl::InvalidArgumentError(absl::StrCat(name_, ": ", input, ": ", what)));
}

ops::Expr MetricBuilder::Input(const std::string& name) {
  ops::Expr raw = RawInput(name);
  // 16-bit floats widen exactly: every metric computes as for float32.
  if (raw.valid() && (raw.dtype() == DType::kFloat16 || raw.dtype() == DType::kBFloat16)) {
    return Cast(raw, DType::kFloat32);
  }
  return raw;
}

ops::Expr MetricBuilder::RawInput(const std::string& name) { return RaggedInput(name, 0, "N"); }

ops::Expr MetricBuilder::RaggedInput(const std::string& name, int64_t dim, const std::string& symbol) {
  if (ir::Value* v = module_->update->FindParam(name)) return ops::Expr(this, update_graph(), v);
  const InputSpec* spec = FindInput(name);
  if (spec == nullptr) {
    FailInput(name, "missing input");
    return ops::Expr();
  }
  ir::TensorType t;
  t.dtype = spec->dtype;
  t.device = device_;
  for (size_t i = 0; i < spec->shape.size(); ++i) {
    const bool rows = i == 0;
    const bool ragged = static_cast<int64_t>(i) == dim && !rows;
    t.shape.push_back(rows ? ir::Dim::Symbol("N") : ragged ? ir::Dim::Symbol(symbol) : ir::Dim::Fixed(spec->shape[i]));
  }
  return ops::Expr(this, update_graph(), module_->update->AddParam(name, t));
}

State MetricBuilder::AddState(const std::string& name, DType dtype, std::vector<int64_t> shape, Reducer reducer,
                              double init, const std::string& group) {
  ir::StateDecl s;
  s.name = name;
  s.type.dtype = dtype;
  s.type.device = device_;
  if (reducer == Reducer::kCat) s.type.shape.push_back(ir::Dim::Symbol("R"));
  for (int64_t d : shape) s.type.shape.push_back(ir::Dim::Fixed(d));
  s.init = init;
  s.reducer = reducer;
  s.group = group;
  s.metric = name_;
  if (module_->FindState(name)) Fail(absl::InternalError(absl::StrCat("state '", name, "' declared twice")));
  if (reducer == Reducer::kCustom && group.empty()) {
    Fail(absl::InternalError(absl::StrCat("custom state '", name, "' needs a merge group")));
  }
  module_->states.push_back(s);
  state_partials_.push_back(nullptr);
  merged_.push_back(nullptr);
  return State{static_cast<int>(module_->states.size()) - 1, name};
}

void MetricBuilder::Accumulate(const State& s, ops::Expr partial, ops::Loc loc) {
  if (!ok() || !partial.valid() || s.index < 0) return;
  const ir::StateDecl& decl = module_->states[s.index];
  if (partial.graph() != update_graph()) {
    Fail(absl::InternalError(absl::StrCat("partial of '", s.name, "' is not an update value (", loc.ToString(), ")")));
    return;
  }
  if (partial.dtype() != decl.type.dtype) partial = Cast(partial, decl.type.dtype, loc);
  if (!partial.valid()) return;
  const ir::Shape& ps = partial.type().shape;
  const ir::Shape& ss = decl.type.shape;
  bool ok_shape = decl.reducer == Reducer::kCat
                      ? ps.size() == ss.size() && std::equal(ps.begin() + 1, ps.end(), ss.begin() + 1)
                      : ps == ss;
  if (!ok_shape) {
    Fail(absl::InternalError(absl::StrCat("partial of '", s.name, "' has shape ", partial.type().ShapeString(),
                                          ", state is ", decl.type.ShapeString(), " (", loc.ToString(), ")")));
    return;
  }
  state_partials_[s.index] = partial.value();
}

void MetricBuilder::AccumulateAt(const State& s, ops::Expr rows, ops::Loc loc) {
  if (!ok() || !rows.valid() || s.index < 0) return;
  ir::StateDecl& decl = module_->states[s.index];
  if (rows.graph() != update_graph()) {
    Fail(absl::InternalError(absl::StrCat("rows of '", s.name, "' are not an update value (", loc.ToString(), ")")));
    return;
  }
  const ir::TensorType& t = rows.type();
  if (decl.reducer != Reducer::kSum || decl.type.dtype != DType::kInt64 || t.dtype != DType::kInt64 || t.rank() < 1 ||
      !(t.shape.back() == ir::Dim::Fixed(2))) {
    Fail(absl::InternalError(absl::StrCat("rows of '", s.name, "' must be i64 [..., 2] into an int64 sum state, got ",
                                          t.ToString(), " (", loc.ToString(), ")")));
    return;
  }
  decl.scatter = true;
  state_partials_[s.index] = rows.value();
}

void MetricBuilder::Check(const std::string& input, const std::string& message, ops::Expr count, ops::Loc loc) {
  if (!ok() || !count.valid()) return;
  int k = 0;
  for (const auto& st : module_->states) k += st.check.empty() ? 0 : 1;
  State s = AddState(absl::StrCat("check", k), DType::kInt64, {}, Reducer::kSum, 0);
  std::string text = message.find("{n}") == std::string::npos ? "{n} " + message : message;
  module_->states[s.index].check = absl::StrCat(input, ": ", text);
  Accumulate(s, count.rank() == 0 ? count : Sum(count, {}, false, loc), loc);
}

ops::Expr MetricBuilder::Read(const State& s) {
  if (s.index < 0) return ops::Expr();
  const ir::StateDecl& decl = module_->states[s.index];
  ir::Value* v = module_->finalize->FindParam(decl.name);
  if (v == nullptr) v = module_->finalize->AddParam(decl.name, decl.type);
  return ops::Expr(this, finalize_graph(), v);
}

ir::Graph* MetricBuilder::MergeGraph(const std::string& group) {
  auto& g = module_->merges[group];
  if (!g) g = std::make_unique<ir::Graph>("merge." + group);
  return g.get();
}

ops::Expr MetricBuilder::MergeA(const State& s) {
  if (s.index < 0) return ops::Expr();
  const ir::StateDecl& d = module_->states[s.index];
  ir::Graph* g = MergeGraph(d.group);
  ir::Value* v = g->FindParam("a." + d.name);
  if (!v) v = g->AddParam("a." + d.name, d.type);
  return ops::Expr(this, g, v);
}

ops::Expr MetricBuilder::MergeB(const State& s) {
  if (s.index < 0) return ops::Expr();
  const ir::StateDecl& d = module_->states[s.index];
  ir::Graph* g = MergeGraph(d.group);
  ir::Value* v = g->FindParam("b." + d.name);
  if (!v) v = g->AddParam("b." + d.name, d.type);
  return ops::Expr(this, g, v);
}

void MetricBuilder::SetMerged(const State& s, ops::Expr merged, ops::Loc loc) {
  if (!ok() || !merged.valid() || s.index < 0) return;
  const ir::StateDecl& d = module_->states[s.index];
  if (merged.dtype() != d.type.dtype) merged = Cast(merged, d.type.dtype, loc);
  if (merged.valid() && merged.type().shape != d.type.shape) {
    Fail(absl::InternalError(absl::StrCat("merged '", s.name, "' has the wrong shape (", loc.ToString(), ")")));
    return;
  }
  merged_[s.index] = merged.value();
}

void MetricBuilder::Output(ops::Expr value, ops::Loc loc) {
  if (!ok() || !value.valid()) return;
  if (value.graph() != finalize_graph()) {
    Fail(absl::InternalError(absl::StrCat("output is not a finalize value (", loc.ToString(), ")")));
    return;
  }
  module_->finalize->mutable_returns().clear();
  module_->finalize->AddReturn(std::string(kResultLabel), value.value());
  output_set_ = true;
}

void MetricBuilder::Output(const Parts& value, ops::Loc loc) {
  if (!ok()) return;
  if (value.is_leaf()) {
    Output(value.leaf(), loc);
    return;
  }
  // Leaves in depth-first order with their paths; an empty tuple or an
  // invalid leaf makes the tree unrepresentable.
  std::vector<std::pair<std::vector<int>, ops::Expr>> leaves;
  std::vector<int> path;
  std::function<bool(const Parts&)> walk = [&](const Parts& p) {
    if (p.is_leaf()) {
      leaves.emplace_back(path, p.leaf());
      return true;
    }
    if (p.items().empty()) return false;
    for (size_t i = 0; i < p.items().size(); ++i) {
      path.push_back(static_cast<int>(i));
      bool fine = walk(p.items()[i]);
      path.pop_back();
      if (!fine) return false;
    }
    return true;
  };
  if (!walk(value)) {
    Fail(absl::InternalError(absl::StrCat("output has an empty tuple or an invalid tensor (", loc.ToString(), ")")));
    return;
  }
  for (const auto& [p, e] : leaves) {
    if (e.graph() != finalize_graph()) {
      Fail(absl::InternalError(absl::StrCat("output is not a finalize value (", loc.ToString(), ")")));
      return;
    }
  }
  module_->finalize->mutable_returns().clear();
  for (const auto& [p, e] : leaves) module_->finalize->AddReturn(PartLabel(kResultLabel, p), e.value());
  output_set_ = true;
}

absl::StatusOr<Metric> MetricBuilder::Finish() {
  TALLY_RETURN_IF_ERROR(status_);
  for (size_t i = 0; i < module_->states.size(); ++i) {
    if (state_partials_[i] == nullptr) {
      return absl::InternalError(absl::StrCat(name_, ": state '", module_->states[i].name, "' is never accumulated"));
    }
    module_->update->AddReturn(module_->states[i].name, state_partials_[i]);
  }
  if (!output_set_) return absl::InternalError(absl::StrCat(name_, ": no output"));
  // The finalize graph takes every state, in declaration order.
  std::vector<ir::Value*> params;
  for (const auto& s : module_->states) {
    ir::Value* v = module_->finalize->FindParam(s.name);
    if (!v) v = module_->finalize->AddParam(s.name, s.type);
    params.push_back(v);
  }
  module_->finalize->mutable_params() = params;
  // Merge graphs take a.* then b.* of their group's states and return each.
  for (auto& [group, g] : module_->merges) {
    std::vector<ir::Value*> a, b;
    for (size_t i = 0; i < module_->states.size(); ++i) {
      const auto& s = module_->states[i];
      if (s.group != group) continue;
      ir::Value* va = g->FindParam("a." + s.name);
      if (!va) va = g->AddParam("a." + s.name, s.type);
      ir::Value* vb = g->FindParam("b." + s.name);
      if (!vb) vb = g->AddParam("b." + s.name, s.type);
      a.push_back(va);
      b.push_back(vb);
      if (merged_[i] == nullptr) {
        return absl::InternalError(absl::StrCat(name_, ": custom state '", s.name, "' has no merge"));
      }
      g->AddReturn(s.name, merged_[i]);
    }
    a.insert(a.end(), b.begin(), b.end());
    g->mutable_params() = a;
  }
  for (const auto& s : module_->states) {
    if (s.reducer == Reducer::kCustom && !module_->merges.count(s.group)) {
      return absl::InternalError(absl::StrCat(name_, ": group '", s.group, "' has no merge graph"));
    }
  }
  TALLY_RETURN_IF_ERROR(ops::VerifyModule(*module_));
  Metric m;
  m.name = name_;
  m.module = std::move(module_);
  m.result_keys = std::move(result_keys_);
  return m;
}

}  // namespace tally::dsl
