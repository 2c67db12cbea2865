#include "engine/exec/eager_executor.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/ir/aten_types.h"
#include "ops/op_registry.h"
#include "support/status_macros.h"
#include "support/torch_status.h"

namespace tally::exec {

absl::StatusOr<std::unique_ptr<EagerPlan>> EagerPlan::Create(const ir::Graph& g) {
  std::unique_ptr<EagerPlan> p(new EagerPlan(g));
  for (ir::Value* v : g.params()) p->param_slots_.push_back(v->id());
  for (const auto& n : g.nodes()) {
    ops::Kernel k = ops::FindKernel(n->op());
    if (k == nullptr) {
      return absl::UnimplementedError(absl::StrCat("no eager kernel for op '", n->op(), "'"));
    }
    Step s{n.get(), k, {}, {}, ops::IsCreation(*n)};
    for (ir::Value* v : n->inputs()) s.in.push_back(v->id());
    for (ir::Value* v : n->outputs()) s.out.push_back(v->id());
    p->steps_.push_back(std::move(s));
  }
  for (const auto& r : g.returns()) p->return_slots_.push_back(r.second->id());
  // Each slot's last reader (or its producer, when nothing reads it); the
  // results stay.
  std::vector<int> last(g.num_values(), -1);
  for (size_t i = 0; i < p->steps_.size(); ++i) {
    for (int slot : p->steps_[i].in) last[slot] = static_cast<int>(i);
    for (int slot : p->steps_[i].out) last[slot] = std::max(last[slot], static_cast<int>(i));
  }
  for (int slot : p->return_slots_) last[slot] = -1;
  for (size_t slot = 0; slot < last.size(); ++slot) {
    if (last[slot] >= 0) p->steps_[last[slot]].release.push_back(static_cast<int>(slot));
  }
  return p;
}

int EagerPlan::num_kernel_calls() const {
  int n = 0;
  for (const Step& s : steps_) n += s.hoisted ? 0 : 1;
  return n;
}

absl::Status EagerPlan::RunStep(const Step& s, std::vector<at::Tensor>& env, bool checked) const {
  at::Tensor ins[8];
  at::Tensor small_outs[4];
  std::vector<at::Tensor> big_in, big_outs;
  const at::Tensor* in_ptr = ins;
  if (s.in.size() > 8) {
    for (int slot : s.in) big_in.push_back(env[slot]);
    in_ptr = big_in.data();
  } else {
    for (size_t i = 0; i < s.in.size(); ++i) ins[i] = env[s.in[i]];
  }
  // Nodes with many results (fused statistics) get a heap array; the kernel
  // writes one tensor per result.
  at::Tensor* outs = small_outs;
  if (s.out.size() > 4) {
    big_outs.resize(s.out.size());
    outs = big_outs.data();
  }
  absl::Status st = support::CatchTorch([&] { s.kernel(*s.node, in_ptr, outs); },
                                        absl::StrCat(s.node->op(), s.node->loc().empty() ? "" : " at ", s.node->loc()));
  if (!st.ok()) return st;
  for (size_t i = 0; i < s.out.size(); ++i) {
    if (checked) {
      const ir::TensorType& t = s.node->output(i)->type();
      std::string dev = outs[i].device().str();
      if (dev != t.device.name) {
        return absl::InternalError(
            absl::StrCat(s.node->op(), ": produced a tensor on ", dev, " but the plan places it on ", t.device.name));
      }
      if (outs[i].scalar_type() != ir::ToScalarType(t.dtype) || outs[i].dim() != t.rank()) {
        return absl::InternalError(absl::StrCat(s.node->op(), ": produced ", c10::toString(outs[i].scalar_type()),
                                                " rank ", outs[i].dim(), " but planned ", t.ToString()));
      }
    }
    env[s.out[i]] = std::move(outs[i]);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<at::Tensor>> EagerPlan::Run(const std::vector<at::Tensor>& params, bool checked) const {
  if (params.size() != param_slots_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(graph_.name(), ": expected ", param_slots_.size(), " inputs, got ", params.size()));
  }
  std::call_once(hoist_once_, [&] {
    hoisted_.resize(graph_.num_values());
    for (const Step& s : steps_) {
      if (!s.hoisted) continue;
      hoist_status_ = RunStep(s, hoisted_, checked);
      if (!hoist_status_.ok()) return;
    }
  });
  TALLY_RETURN_IF_ERROR(hoist_status_);
  std::vector<at::Tensor> env(graph_.num_values());
  for (size_t i = 0; i < params.size(); ++i) env[param_slots_[i]] = params[i];
  for (const Step& s : steps_) {
    if (s.hoisted) {
      for (int slot : s.out) env[slot] = hoisted_[slot];
    } else {
      TALLY_RETURN_IF_ERROR(RunStep(s, env, checked));
    }
    for (int slot : s.release) env[slot].reset();
  }
  std::vector<at::Tensor> out;
  out.reserve(return_slots_.size());
  for (int slot : return_slots_) out.push_back(env[slot]);
  return out;
}

}  // namespace tally::exec
