#include "engine/program.h"

#include <ATen/ATen.h>

#include <cstring>
#include <limits>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "engine/ir/aten_types.h"
#include "engine/exec/fold_state.h"
#include "engine/exec/stream_copy.h"
#include "support/torch_status.h"
#include "engine/exec/torchscript/plan.h"
#include "engine/ir/printer.h"
#include "support/status_macros.h"

namespace tally {
namespace {

std::string Describe(const at::Tensor& t) {
  std::string dt = c10::toString(t.scalar_type());
  auto dtype = ir::FromScalarType(t.scalar_type());
  if (dtype.ok()) dt = std::string(ir::DTypeName(*dtype));
  return absl::StrCat(dt, "[", absl::StrJoin(t.sizes(), ","), "]@", t.device().str());
}

// EagerRunner adapts the eager interpreter to PlanRunner.
class EagerRunner : public exec::PlanRunner {
 public:
  explicit EagerRunner(std::unique_ptr<exec::EagerPlan> plan) : plan_(std::move(plan)) {}
  absl::StatusOr<std::vector<at::Tensor>> Run(const std::vector<at::Tensor>& params, bool checked) const override {
    return plan_->Run(params, checked);
  }
  int num_kernel_calls() const override { return plan_->num_kernel_calls(); }

 private:
  std::unique_ptr<exec::EagerPlan> plan_;
};

// MakeRunner prepares `g` for the chosen backend.
absl::StatusOr<std::unique_ptr<exec::PlanRunner>> MakeRunner(const ir::Graph& g, exec::Backend backend) {
  if (backend == exec::Backend::kTorchScript) return exec::torchscript::CreatePlan(g);
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<exec::EagerPlan> plan, exec::EagerPlan::Create(g));
  return std::unique_ptr<exec::PlanRunner>(new EagerRunner(std::move(plan)));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Program>> Program::Create(std::unique_ptr<ir::Module> m,
                                                         ProgramOptions options) {
  std::unique_ptr<Program> p(new Program());
  p->options_ = std::move(options);
  std::vector<std::string> names = m->MetricNames();
  p->metric_names_ = names.empty() ? "program" : absl::StrJoin(names, ", ");
  p->fingerprint_ = ir::PrintModule(*m);
  p->module_ = std::move(m);
  const ir::Module& mod = *p->module_;
  const exec::Backend backend = p->options_.backend;
  TALLY_ASSIGN_OR_RETURN(p->update_plan_, MakeRunner(*mod.update, backend));
  TALLY_ASSIGN_OR_RETURN(p->finalize_plan_, MakeRunner(*mod.finalize, backend));
  p->update_footprint_ = Footprint(*mod.update);
  p->finalize_footprint_ = Footprint(*mod.finalize);
  // The fixed part of the temporaries (sized by arguments alone) up front.
  TALLY_RETURN_IF_ERROR(CheckFootprint(p->update_footprint_, {}, p->options_.max_bytes, p->options_.size_args,
                                       p->metric_names_, "an update"));
  TALLY_RETURN_IF_ERROR(CheckFootprint(p->finalize_footprint_, {}, p->options_.max_bytes, p->options_.size_args,
                                       p->metric_names_, "compute"));
  for (const auto& n : mod.finalize->nodes()) {
    p->finalize_value_checks_ |= n->op() == "assert_zero" && !n->GetBool("whole_state");
  }
  for (const auto& [group, g] : mod.merges) {
    TALLY_ASSIGN_OR_RETURN(auto plan, MakeRunner(*g, backend));
    p->merge_plans_.emplace_back(group, std::move(plan));
  }
  TALLY_ASSIGN_OR_RETURN(p->partial_of_state_, mod.PartialIndices());
  TALLY_ASSIGN_OR_RETURN(p->states_, p->InitialStates());
  return p;
}

absl::StatusOr<std::vector<at::Tensor>> Program::InitialStates() const {
  std::vector<at::Tensor> out;
  TALLY_ASSIGN_OR_RETURN(c10::Device dev, ir::ToDevice(options_.device));
  // Planning for a device needs no hardware; holding states on it does. Say
  // so plainly instead of passing on ATen's list of dispatch keys.
  const bool available = dev.is_cuda()  ? at::hasCUDA() && (!dev.has_index() || static_cast<int64_t>(dev.index()) < static_cast<int64_t>(at::getNumGPUs()))
                         : dev.is_mps() ? at::hasMPS()
                                        : true;
  if (!available) {
    return absl::FailedPreconditionError(absl::StrCat(
        metric_names_, ": cannot create states on ", options_.device.name,
        ": the device is not available on this machine (plan for it with `tally inspect --device ",
        options_.device.name, "`)"));
  }
  absl::Status st = support::CatchTorch(
      [&] {
        for (const auto& s : module_->states) {
          std::vector<int64_t> sizes;
          for (const auto& d : s.type.shape) sizes.push_back(d.is_symbolic() ? 0 : d.size);
          auto opts = at::TensorOptions().dtype(ir::ToScalarType(s.type.dtype)).device(dev);
          out.push_back(s.reducer == ir::Reducer::kCat ? at::empty(sizes, opts)
                                                       : at::full(sizes, s.init, opts));
        }
      },
      absl::StrCat(metric_names_, ": creating states on ", options_.device.name));
  TALLY_RETURN_IF_ERROR(st);
  return out;
}

absl::Status Program::CheckInputs(const NamedTensors& inputs, std::vector<at::Tensor>& ordered,
                                  SymbolSizes* sizes) const {
  const auto& params = module_->update->params();
  ordered.assign(params.size(), at::Tensor());
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i]->name() != name) continue;
      known = true;
      if (ordered[i].defined()) {
        return absl::InvalidArgumentError(absl::StrCat(metric_names_, ": input '", name, "' given twice"));
      }
      if (!t.defined()) {
        return absl::InvalidArgumentError(absl::StrCat(metric_names_, ": input '", name, "' is an undefined tensor"));
      }
      ordered[i] = t;
    }
    if (!known) {
      std::vector<std::string> expected;
      for (auto* p : params) expected.push_back(p->name());
      return absl::InvalidArgumentError(absl::StrCat(metric_names_, ": unexpected input '", name,
                                                     "' (expected: ", absl::StrJoin(expected, ", "), ")"));
    }
  }
  // Symbolic dims seen so far (few per program: a small vector, no hashing).
  std::vector<std::pair<const std::string*, int64_t>> symbols;
  for (size_t i = 0; i < params.size(); ++i) {
    const ir::TensorType& want = params[i]->type();
    const std::string& name = params[i]->name();
    if (!ordered[i].defined()) {
      return absl::InvalidArgumentError(absl::StrCat(metric_names_, ": missing input '", name, "'"));
    }
    const at::Tensor& t = ordered[i];
    auto mismatch = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat(metric_names_, ": input '", name, "': ", what,
                                                     ": expected ", want.ToString(), ", got ", Describe(t)));
    };
    auto dtype = ir::FromScalarType(t.scalar_type());
    if (!dtype.ok() || *dtype != want.dtype) return mismatch("wrong dtype");
    if (t.dim() != want.rank()) return mismatch("wrong rank");
    // Rows of zero elements, e.g. [2^30, 0]: nothing to measure, and per-row
    // work (a mask per row, a batch per row) would cost O(rows) for nothing.
    if (t.dim() >= 2 && t.size(0) > 0 && t.numel() == 0) {
      return absl::InvalidArgumentError(absl::StrCat(metric_names_, ": input '", name, "' is ", Describe(t),
                                                     ": rows of zero elements (an empty batch has 0 rows)"));
    }
    for (int64_t d = 0; d < t.dim(); ++d) {
      const ir::Dim& dim = want.shape[d];
      if (!dim.is_symbolic()) {
        if (t.size(d) != dim.size) return mismatch(absl::StrCat("wrong size of dim ", d));
        continue;
      }
      auto it = std::find_if(symbols.begin(), symbols.end(),
                             [&](const auto& e) { return *e.first == dim.symbol; });
      bool inserted = it == symbols.end();
      if (inserted) {
        symbols.emplace_back(&dim.symbol, t.size(d));
        it = symbols.end() - 1;
      }
      if (!inserted && it->second != t.size(d)) {
        return absl::InvalidArgumentError(absl::StrCat(
            metric_names_, ": input '", name, "' has ", t.size(d), " rows (dim ", d,
            ") but another input has ", it->second));
      }
    }
    if (!want.device.is_any() && t.device().str() != want.device.name) {
      return absl::InvalidArgumentError(absl::StrCat(metric_names_, ": input '", name, "' is on ",
                                                     t.device().str(), " but the program is placed on ",
                                                     want.device.name,
                                                     " (compile with transfer_inputs / --transfer-inputs to copy it explicitly)"));
    }
  }
  if (sizes != nullptr) *sizes = SymbolSizes(symbols.begin(), symbols.end());
  return absl::OkStatus();
}

absl::Status Program::CheckFinalizeBudget(const std::vector<at::Tensor>& values) const {
  SymbolSizes sizes;
  const auto& params = module_->finalize->params();
  for (size_t i = 0; i < params.size() && i < values.size(); ++i) {
    const ir::TensorType& t = params[i]->type();
    for (int64_t d = 0; d < t.rank() && d < values[i].dim(); ++d) {
      if (t.shape[d].is_symbolic()) sizes.emplace_back(&t.shape[d].symbol, values[i].size(d));
    }
  }
  int64_t rows = 0;
  for (const auto& [name, size] : sizes) rows = std::max(rows, size);
  return CheckFootprint(finalize_footprint_, sizes, options_.max_bytes, options_.size_args, metric_names_,
                        absl::StrCat("compute over ", rows, " accumulated rows"));
}

absl::StatusOr<std::vector<at::Tensor>> Program::Fold(const std::vector<at::Tensor>& current,
                                                      const std::vector<at::Tensor>& incoming,
                                                      bool skip_sums, bool skip_cats) const {
  std::vector<at::Tensor> next(current.size());
  const auto& states = module_->states;
  absl::Status st = support::CatchTorch(
      [&] {
        for (size_t i = 0; i < states.size(); ++i) {
          const ir::Reducer r = states[i].reducer;
          if ((r == ir::Reducer::kSum && skip_sums) || (r == ir::Reducer::kCat && skip_cats)) continue;
          next[i] = exec::FoldState(r, current[i], incoming[i]);  // undefined for kCustom: merge plans below
        }
      },
      metric_names_);
  TALLY_RETURN_IF_ERROR(st);
  TALLY_RETURN_IF_ERROR(RunMergePlans(current, incoming, next));
  return next;
}

absl::Status Program::RunMergePlans(const std::vector<at::Tensor>& current,
                                    const std::vector<at::Tensor>& incoming,
                                    std::vector<at::Tensor>& next) const {
  const auto& states = module_->states;
  for (const auto& [group, plan] : merge_plans_) {
    std::vector<int> members;
    for (size_t i = 0; i < states.size(); ++i)
      if (states[i].reducer == ir::Reducer::kCustom && states[i].group == group) members.push_back(i);
    std::vector<at::Tensor> args;
    for (int i : members) args.push_back(current[i]);
    for (int i : members) args.push_back(incoming[i]);
    TALLY_ASSIGN_OR_RETURN(std::vector<at::Tensor> merged, plan->Run(args, options_.checked));
    for (size_t k = 0; k < members.size(); ++k) next[members[k]] = merged[k];
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<at::Tensor>> Program::FoldCustom(const std::vector<at::Tensor>& current,
                                                            const std::vector<at::Tensor>& incoming) const {
  const size_t n = module_->states.size();
  if (current.size() != n || incoming.size() != n) {
    return absl::InternalError(absl::StrCat(metric_names_, ": FoldCustom takes ", n, " states, got ",
                                            current.size(), " and ", incoming.size()));
  }
  std::vector<at::Tensor> next(n);
  TALLY_RETURN_IF_ERROR(RunMergePlans(current, incoming, next));
  return next;
}

absl::Status Program::SetSynced(std::vector<at::Tensor> states) {
  const auto& decls = module_->states;
  if (states.size() != decls.size()) {
    return absl::InternalError(absl::StrCat(metric_names_, ": a synced copy needs ", decls.size(),
                                            " states, got ", states.size()));
  }
  for (size_t i = 0; i < decls.size(); ++i) {
    if (!states[i].defined() || states[i].scalar_type() != ir::ToScalarType(decls[i].type.dtype) ||
        states[i].dim() != decls[i].type.rank()) {
      return absl::InternalError(absl::StrCat(metric_names_, ": synced state '", decls[i].name,
                                              "' is not a ", decls[i].type.ToString()));
    }
  }
  synced_states_ = std::move(states);
  synced_ = true;
  return absl::OkStatus();
}

void Program::Unsync() {
  synced_ = false;
  synced_states_.clear();
}

namespace {

// AppendRows copies `src` into `dst`, the rows after a cat state's end: a
// streaming memcpy (exec/stream_copy.h) for contiguous CPU tensors of one dtype (an update of a
// retrieval collection is three such copies, and copy_'s dispatch and
// TensorIterator setup would cost more than the bytes), copy_ otherwise.
// `buf` is the state's contiguous buffer and `len` its current rows; the
// fast path addresses the rows directly rather than through a narrowed view
// (a TensorImpl per state per update).
void AppendRows(const at::Tensor& buf, int64_t len, const at::Tensor& src) {
  if (buf.is_cpu() && src.is_cpu() && buf.scalar_type() == src.scalar_type() && buf.is_contiguous() &&
      src.is_contiguous() && buf.sizes().slice(1) == src.sizes().slice(1)) {
    const size_t row_bytes = src.nbytes() / src.size(0);
    exec::StreamCopy(static_cast<char*>(buf.data_ptr()) + len * row_bytes, src.data_ptr(), src.nbytes());
    return;
  }
  buf.narrow(0, len, src.size(0)).copy_(src);
}

// AddInPlace folds a partial into a sum state of the same sizes and dtype:
// small contiguous CPU states (counts, confusion matrices) by a loop, since
// add_'s dispatch costs more than a dozen additions; add_ otherwise. The
// result is the same elementwise a + b.
template <typename T>
void AddLoop(at::Tensor& state, const at::Tensor& partial) {
  T* s = state.data_ptr<T>();
  const T* p = partial.data_ptr<T>();
  for (int64_t i = 0, n = state.numel(); i < n; ++i) s[i] += p[i];
}
void AddInPlace(at::Tensor& state, const at::Tensor& partial) {
  if (state.is_cpu() && partial.is_cpu() && state.numel() <= 4096 && state.is_contiguous() &&
      partial.is_contiguous() && state.scalar_type() == partial.scalar_type()) {
    switch (state.scalar_type()) {
      case at::kLong: return AddLoop<int64_t>(state, partial);
      case at::kDouble: return AddLoop<double>(state, partial);
      case at::kFloat: return AddLoop<float>(state, partial);
      default: break;
    }
  }
  state.add_(partial);
}

}  // namespace

absl::Status Program::Validate(const NamedTensors& inputs) const {
  std::vector<at::Tensor> ordered;
  return CheckInputs(inputs, ordered);
}

absl::Status Program::Update(const NamedTensors& inputs) {
  Unsync();  // a synced copy no longer describes the states after this batch
  std::vector<at::Tensor> ordered;
  SymbolSizes sizes;
  TALLY_RETURN_IF_ERROR(CheckInputs(inputs, ordered, &sizes));
  TALLY_RETURN_IF_ERROR(CheckFootprint(update_footprint_, sizes, options_.max_bytes, options_.size_args,
                                       metric_names_,
                                       absl::StrCat("an update of ", sizes.empty() ? 0 : sizes[0].second, " rows")));
  auto outs = update_plan_->Run(ordered, options_.checked);
  if (!outs.ok()) {
    return absl::Status(outs.status().code(), absl::StrCat(metric_names_, ": update: ", outs.status().message()));
  }
  std::vector<at::Tensor> partials;
  partials.reserve(states_.size());
  for (int idx : partial_of_state_) partials.push_back((*outs)[idx]);
  // Sum states fold in place (no allocation per update) when the partial
  // matches the state exactly; everything that can fail runs first, so the
  // update still applies fully or not at all.
  const auto& decls = module_->states;
  bool in_place = true;
  for (size_t i = 0; i < decls.size() && in_place; ++i) {
    if (decls[i].reducer != ir::Reducer::kSum) continue;
    const at::Tensor& a = states_[i];
    const at::Tensor& b = partials[i];
    in_place = a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() && a.device() == b.device() &&
               a.is_contiguous();
  }
  if (!in_place) {
    TALLY_ASSIGN_OR_RETURN(std::vector<at::Tensor> next, Fold(states_, partials));
    states_ = std::move(next);
    return absl::OkStatus();
  }
  // Only max/min/custom states need Fold here (sums and cats are done below).
  bool others = false;
  for (const auto& d : decls) others |= d.reducer != ir::Reducer::kSum && d.reducer != ir::Reducer::kCat;
  std::vector<at::Tensor> next(decls.size());
  if (others) {
    TALLY_ASSIGN_OR_RETURN(next, Fold(states_, partials, /*skip_sums=*/true, /*skip_cats=*/true));
  }
  // Cat states grow by amortized doubling: each is a prefix view of a buffer
  // with spare rows, so an update copies only its own rows. (The buffer is
  // recognized by its storage: an empty view's data_ptr() is null.) Growing (which
  // may allocate, and so may fail) happens before anything is committed;
  // writing past the current view leaves the visible state unchanged.
  std::vector<at::Tensor> buffers(decls.size());
  TALLY_RETURN_IF_ERROR(support::CatchTorch(
      [&] {
        for (size_t i = 0; i < decls.size(); ++i) {
          if (decls[i].reducer != ir::Reducer::kCat) continue;
          const at::Tensor& cur = states_[i];
          const at::Tensor& add = partials[i];
          int64_t len = cur.size(0), n = add.size(0);
          at::Tensor buf = i < cat_buffers_.size() ? cat_buffers_[i] : at::Tensor();
          bool usable = buf.defined() && cur.is_contiguous() && buf.size(0) >= len + n &&
                        cur.storage().is_alias_of(buf.storage()) && cur.storage_offset() == 0 && buf.scalar_type() == add.scalar_type() &&
                        buf.device() == add.device() && buf.sizes().slice(1) == add.sizes().slice(1);
          if (!usable) {
            std::vector<int64_t> sizes(cur.sizes().begin(), cur.sizes().end());
            sizes[0] = std::max<int64_t>(2 * (len + n), 64);
            buf = at::empty(sizes, cur.options());
            if (len > 0) buf.narrow(0, 0, len).copy_(cur);
          }
          if (n > 0) AppendRows(buf, len, add);
          next[i] = buf.narrow(0, 0, len + n);
          buffers[i] = buf;
        }
      },
      metric_names_));
  return support::CatchTorch(
      [&] {
        if (cat_buffers_.size() != decls.size()) cat_buffers_.resize(decls.size());
        for (size_t i = 0; i < decls.size(); ++i) {
          if (decls[i].reducer == ir::Reducer::kSum) {
            AddInPlace(states_[i], partials[i]);
          } else {
            states_[i] = std::move(next[i]);
            if (decls[i].reducer == ir::Reducer::kCat) cat_buffers_[i] = std::move(buffers[i]);
          }
        }
      },
      metric_names_);
}

absl::Status Program::CheckCounters(const std::vector<at::Tensor>& values) const {
  const auto& states = module_->states;
  for (size_t i = 0; i < states.size(); ++i) {
    if (states[i].check.empty()) continue;
    int64_t n = 0;
    TALLY_RETURN_IF_ERROR(support::CatchTorch([&] { n = values[i].item<int64_t>(); },
                                           absl::StrCat(states[i].metric, ": reading check")));
    if (n > 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          states[i].metric, ": ", absl::StrReplaceAll(states[i].check, {{"{n}", absl::StrCat(n)}})));
    }
  }
  return absl::OkStatus();
}

absl::Status Program::CheckValues() const {
  const std::vector<at::Tensor>& values = synced_ ? synced_states_ : states_;
  TALLY_RETURN_IF_ERROR(CheckCounters(values));
  if (!finalize_value_checks_) return absl::OkStatus();
  TALLY_RETURN_IF_ERROR(CheckFinalizeBudget(values));
  support::ScopedSkipStateChecks skip;
  auto outs = finalize_plan_->Run(values, options_.checked);
  if (outs.ok()) return absl::OkStatus();
  if (auto check = support::CheckFailure(outs.status().message())) return absl::InvalidArgumentError(*check);
  // Anything else is not about the values (the real Compute will say so).
  return absl::OkStatus();
}

absl::StatusOr<NamedTensors> Program::Compute() const {
  // While synced, everything below reads the synced copy.
  const std::vector<at::Tensor>& values = synced_ ? synced_states_ : states_;
  TALLY_RETURN_IF_ERROR(CheckCounters(values));
  TALLY_RETURN_IF_ERROR(CheckFinalizeBudget(values));
  auto outs = finalize_plan_->Run(values, options_.checked);
  if (!outs.ok()) {
    // A failed finalize check reads like a deferred check: "<metric>: <what>".
    if (auto check = support::CheckFailure(outs.status().message())) return absl::InvalidArgumentError(*check);
    return absl::Status(outs.status().code(), absl::StrCat(metric_names_, ": compute: ", outs.status().message()));
  }
  NamedTensors result;
  const auto& rets = module_->finalize->returns();
  for (size_t i = 0; i < rets.size(); ++i) {
    at::Tensor v = (*outs)[i];
    // States change in place on later updates: results never alias them.
    for (const auto& st : values) {
      if (v.defined() && st.defined() && v.storage().is_alias_of(st.storage())) {
        v = v.clone();
        break;
      }
    }
    result.emplace_back(rets[i].first, v);
  }
  return result;
}

absl::Status Program::Reset() {
  Unsync();
  TALLY_ASSIGN_OR_RETURN(std::vector<at::Tensor> initial, InitialStates());
  const auto& decls = module_->states;
  TALLY_RETURN_IF_ERROR(support::CatchTorch(
      [&] {
        for (size_t i = 0; i < decls.size() && i < cat_buffers_.size(); ++i) {
          const at::Tensor& buf = cat_buffers_[i];
          // An empty prefix view of the buffer: the next update appends in place.
          if (decls[i].reducer == ir::Reducer::kCat && buf.defined()) initial[i] = buf.narrow(0, 0, 0);
        }
      },
      metric_names_));
  states_ = std::move(initial);
  return absl::OkStatus();
}

absl::Status Program::Merge(const Program& other) {
  if (other.fingerprint_ != fingerprint_) {
    return absl::FailedPreconditionError(absl::StrCat(metric_names_, ": cannot merge a program of different metrics (",
                                                      other.metric_names_, ")"));
  }
  std::vector<at::Tensor> incoming;
  TALLY_RETURN_IF_ERROR(support::CatchTorch(
      [&] {
        c10::Device dev(options_.device.name);
        for (const auto& t : other.states_) incoming.push_back(t.to(dev));
      },
      metric_names_));
  TALLY_ASSIGN_OR_RETURN(std::vector<at::Tensor> next, Fold(states_, incoming));
  states_ = std::move(next);
  Unsync();
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Program>> Program::To(const ir::Device& device) const {
  if (recompiler_ == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(metric_names_, ": this program was not made by the compiler and cannot move"));
  }
  return recompiler_(*this, device);
}

absl::StatusOr<std::string> Program::SaveState() const {
  // Format: "tally-state 1\n" then per state "<name> <dtype> <rank> <dims...> <nbytes>\n<bytes>".
  std::string out = "tally-state 1\n";
  const auto& states = module_->states;
  absl::Status st = support::CatchTorch(
      [&] {
        for (size_t i = 0; i < states.size(); ++i) {
          at::Tensor t = states_[i].to(at::kCPU).contiguous();
          absl::StrAppend(&out, states[i].name, " ", ir::DTypeName(states[i].type.dtype), " ", t.dim());
          for (int64_t d : t.sizes()) absl::StrAppend(&out, " ", d);
          size_t nbytes = t.numel() * t.element_size();
          absl::StrAppend(&out, " ", nbytes, "\n");
          out.append(static_cast<const char*>(t.data_ptr()), nbytes);
        }
      },
      absl::StrCat(metric_names_, ": save state"));
  TALLY_RETURN_IF_ERROR(st);
  return out;
}

absl::Status Program::LoadState(absl::string_view bytes) {
  auto bad = [&](absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat(metric_names_, ": load state: ", what));
  };
  absl::string_view rest = bytes;
  auto next_line = [&](std::string& line) {
    size_t nl = rest.find('\n');
    if (nl == absl::string_view::npos) return false;
    line = std::string(rest.substr(0, nl));
    rest.remove_prefix(nl + 1);
    return true;
  };
  std::string line;
  if (!next_line(line) || line != "tally-state 1") return bad("not a tally state file");
  std::vector<at::Tensor> loaded;
  TALLY_ASSIGN_OR_RETURN(c10::Device dev, ir::ToDevice(options_.device));
  for (const auto& s : module_->states) {
    if (!next_line(line)) return bad(absl::StrCat("missing state '", s.name, "'"));
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    int64_t rank = 0, nbytes = 0;
    if (f.size() < 4 || f[0] != s.name || f[1] != ir::DTypeName(s.type.dtype) ||
        !absl::SimpleAtoi(f[2], &rank) || rank != s.type.rank() ||
        static_cast<int64_t>(f.size()) != 4 + rank || !absl::SimpleAtoi(f.back(), &nbytes)) {
      return bad(absl::StrCat("state '", s.name, "' does not match: '", line, "'"));
    }
    std::vector<int64_t> sizes;
    int64_t numel = 1;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t n;
      if (!absl::SimpleAtoi(f[3 + d], &n) || n < 0) return bad("bad size");
      if (!s.type.shape[d].is_symbolic() && n != s.type.shape[d].size) return bad(absl::StrCat("state '", s.name, "' has the wrong shape"));
      sizes.push_back(n);
      if (n != 0 && numel > std::numeric_limits<int64_t>::max() / n) return bad("bad size");
      numel *= n;
    }
    if (static_cast<int64_t>(rest.size()) < nbytes) return bad("truncated");
    // Checked before allocating: a corrupt size must not allocate the tensor
    // it names.
    const int64_t item = static_cast<int64_t>(c10::elementSize(ir::ToScalarType(s.type.dtype)));
    if (numel > std::numeric_limits<int64_t>::max() / item || numel * item != nbytes) {
      return bad(absl::StrCat("state '", s.name, "': ", nbytes, " bytes for ", numel, " elements"));
    }
    // Kernels read bool states as C++ bool: any byte but 0 and 1 is UB there.
    if (s.type.dtype == ir::DType::kBool &&
        rest.substr(0, nbytes).find_first_not_of(absl::string_view("\0\1", 2)) != absl::string_view::npos) {
      return bad(absl::StrCat("state '", s.name, "': a bool byte is not 0 or 1"));
    }
    at::Tensor t;
    absl::Status st = support::CatchTorch(
        [&] {
          t = at::empty(sizes, at::TensorOptions().dtype(ir::ToScalarType(s.type.dtype)));
          if (static_cast<int64_t>(t.numel() * t.element_size()) != nbytes) throw std::runtime_error("byte count mismatch");
          if (nbytes > 0) std::memcpy(t.data_ptr(), rest.data(), nbytes);  // an empty tensor may have no data
          t = t.to(dev);
        },
        absl::StrCat(metric_names_, ": load state '", s.name, "'"));
    TALLY_RETURN_IF_ERROR(st);
    rest.remove_prefix(nbytes);
    loaded.push_back(t);
  }
  if (!rest.empty()) {
    return bad(absl::StrCat(rest.size(), " bytes after the last state (saved by a different program?)"));
  }
  states_ = std::move(loaded);
  Unsync();
  return absl::OkStatus();
}

}  // namespace tally
