#include "engine/runtime/program.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "engine/exec/fold_state.h"
#include "engine/exec/torchscript/plan.h"
#include "engine/ir/aten_types.h"
#include "engine/ir/printer.h"
#include "engine/runtime/internal/state_codec.h"
#include "ops/attrs.h"
#include "ops/op_list.h"
#include "support/status_macros.h"
#include "support/torch_status.h"

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

// FixedBytes: the bytes of the states that are not cat states (their size
// does not grow with the rows).
double FixedBytes(const std::vector<ir::StateDecl>& decls, const std::vector<at::Tensor>& states) {
  double bytes = 0;
  for (size_t i = 0; i < decls.size() && i < states.size(); ++i) {
    if (decls[i].reducer != ir::Reducer::kCat && states[i].defined()) {
      bytes += static_cast<double>(states[i].numel()) * static_cast<double>(states[i].element_size());
    }
  }
  return bytes;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Program>> Program::Create(std::unique_ptr<ir::Module> m, ProgramOptions options) {
  std::unique_ptr<Program> p(new Program());
  p->options_ = std::move(options);
  std::vector<std::string> names = m->MetricNames();
  p->metric_names_ = names.empty() ? "program" : absl::StrJoin(names, ", ");
  p->fingerprint_ = ir::PrintModule(*m);
  p->module_ = std::move(m);
  const ir::Module& mod = *p->module_;
  p->reads_row_id_ = mod.update->FindParam(kRowIdInput) != nullptr;
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
    p->finalize_value_checks_ |=
        ops::Is(*n, ops::OpId::kAssertZero) && !ops::AttrsOf<ops::AssertZeroAttrs>(*n).whole_state.get();
  }
  for (const auto& [group, g] : mod.merges) {
    TALLY_ASSIGN_OR_RETURN(auto plan, MakeRunner(*g, backend));
    p->merge_plans_.emplace_back(group, std::move(plan));
  }
  TALLY_ASSIGN_OR_RETURN(p->partial_of_state_, mod.PartialIndices());
  // What each update appends to a cat state, from its partial's type; exact
  // when every symbolic dim of those types is an input's.
  std::vector<std::string> input_symbols;
  for (const ir::Value* param : mod.update->params()) {
    for (const ir::Dim& d : param->type().shape)
      if (d.is_symbolic()) input_symbols.push_back(d.symbol);
  }
  p->growth_footprints_.resize(mod.states.size());
  for (size_t i = 0; i < mod.states.size(); ++i) {
    if (mod.states[i].reducer != ir::Reducer::kCat) continue;
    const ir::Value* partial = mod.update->returns()[p->partial_of_state_[i]].second;
    p->growth_footprints_[i] = Footprint(std::vector<const ir::Value*>{partial});
    for (const ir::Dim& d : partial->type().shape) {
      p->growth_exact_ &=
          !d.is_symbolic() || std::find(input_symbols.begin(), input_symbols.end(), d.symbol) != input_symbols.end();
    }
  }
  TALLY_RETURN_IF_ERROR(p->store_.Init(&mod.states, p->options_.device, p->metric_names_));
  return p;
}

Program::~Program() {
  if (!options_.row_ledger) return;
  options_.row_ledger->bytes.fetch_sub(counted_row_bytes_, std::memory_order_relaxed);
  options_.row_ledger->allocated.fetch_sub(counted_alloc_bytes_, std::memory_order_relaxed);
}

void Program::ShareRowLedger(std::shared_ptr<RowLedger> ledger) {
  if (options_.row_ledger) {
    options_.row_ledger->bytes.fetch_sub(counted_row_bytes_, std::memory_order_relaxed);
    options_.row_ledger->allocated.fetch_sub(counted_alloc_bytes_, std::memory_order_relaxed);
  }
  counted_row_bytes_ = counted_alloc_bytes_ = 0;
  options_.row_ledger = std::move(ledger);
  CountRows();
}

void Program::CountRows() {
  if (!options_.row_ledger) return;
  int64_t bytes = 0;
  const auto& decls = module_->states;
  const std::vector<at::Tensor>& states = store_.states();
  for (size_t i = 0; i < decls.size() && i < states.size(); ++i) {
    if (decls[i].reducer == ir::Reducer::kCat && states[i].defined()) bytes += states[i].nbytes();
  }
  options_.row_ledger->bytes.fetch_add(bytes - counted_row_bytes_, std::memory_order_relaxed);
  counted_row_bytes_ = bytes;
  const int64_t allocated = store_.CatAllocatedBytes();
  options_.row_ledger->allocated.fetch_add(allocated - counted_alloc_bytes_, std::memory_order_relaxed);
  counted_alloc_bytes_ = allocated;
}

int64_t Program::Budget() const { return options_.max_bytes > 0 ? options_.max_bytes : DefaultStateBudget(); }

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
      return absl::InvalidArgumentError(absl::StrCat(metric_names_, ": input '", name, "': ", what, ": expected ",
                                                     want.ToString(), ", got ", Describe(t)));
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
      auto it = std::find_if(symbols.begin(), symbols.end(), [&](const auto& e) { return *e.first == dim.symbol; });
      bool inserted = it == symbols.end();
      if (inserted) {
        symbols.emplace_back(&dim.symbol, t.size(d));
        it = symbols.end() - 1;
      }
      if (!inserted && it->second != t.size(d)) {
        return absl::InvalidArgumentError(absl::StrCat(metric_names_, ": input '", name, "' has ", t.size(d),
                                                       " rows (dim ", d, ") but another input has ", it->second));
      }
    }
    if (!want.device.is_any() && t.device().str() != want.device.name) {
      return absl::InvalidArgumentError(
          absl::StrCat(metric_names_, ": input '", name, "' is on ", t.device().str(), " but the program is placed on ",
                       want.device.name, " (compile with transfer_inputs / --transfer-inputs to copy it explicitly)"));
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
                                                      const std::vector<at::Tensor>& incoming, exec::FoldOf of,
                                                      bool skip_sums, bool skip_cats) const {
  std::vector<at::Tensor> next(current.size());
  const auto& states = module_->states;
  absl::Status st = support::CatchTorch(
      [&] {
        for (size_t i = 0; i < states.size(); ++i) {
          const ir::Reducer r = states[i].reducer;
          if ((r == ir::Reducer::kSum && skip_sums) || (r == ir::Reducer::kCat && skip_cats)) continue;
          if (states[i].scatter && of == exec::FoldOf::kPartials) {
            next[i] = current[i].contiguous().clone();
            exec::AddRows(next[i], incoming[i]);
            continue;
          }
          next[i] = exec::FoldState(r, current[i], incoming[i]);  // undefined for kCustom: merge plans below
        }
      },
      metric_names_);
  TALLY_RETURN_IF_ERROR(st);
  TALLY_RETURN_IF_ERROR(RunMergePlans(current, incoming, next));
  return next;
}

absl::Status Program::RunMergePlans(const std::vector<at::Tensor>& current, const std::vector<at::Tensor>& incoming,
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
    return absl::InternalError(absl::StrCat(metric_names_, ": FoldCustom takes ", n, " states, got ", current.size(),
                                            " and ", incoming.size()));
  }
  std::vector<at::Tensor> next(n);
  TALLY_RETURN_IF_ERROR(RunMergePlans(current, incoming, next));
  return next;
}

absl::Status Program::SetSynced(std::vector<at::Tensor> states) { return store_.SetSynced(std::move(states)); }

void Program::Unsync() { store_.Unsync(); }

NamedTensors Program::WithRowIds(const NamedTensors& inputs) const {
  if (!reads_row_id_) return inputs;
  const at::Tensor* rows = nullptr;
  for (const auto& [name, t] : inputs) {
    if (name == kRowIdInput) return inputs;
    if (rows == nullptr && t.defined() && t.dim() > 0) rows = &t;
  }
  if (rows == nullptr) return inputs;  // CheckInputs names what is missing
  NamedTensors out = inputs;
  out.emplace_back(kRowIdInput, at::arange(rows_fed_, rows_fed_ + rows->size(0), rows->options().dtype(at::kLong)));
  return out;
}

absl::Status Program::Validate(const NamedTensors& given) const {
  std::vector<at::Tensor> ordered;
  return CheckInputs(WithRowIds(given), ordered);
}

absl::Status Program::Update(const NamedTensors& given) {
  Unsync();  // a synced copy no longer describes the states after this batch
  // Only a program that reads row_id pays for a copy of the inputs.
  NamedTensors with_ids;
  if (reads_row_id_) with_ids = WithRowIds(given);
  const NamedTensors& inputs = reads_row_id_ ? with_ids : given;
  std::vector<at::Tensor> ordered;
  SymbolSizes sizes;
  TALLY_RETURN_IF_ERROR(CheckInputs(inputs, ordered, &sizes));
  TALLY_RETURN_IF_ERROR(CheckFootprint(update_footprint_, sizes, options_.max_bytes, options_.size_args, metric_names_,
                                       absl::StrCat("an update of ", sizes.empty() ? 0 : sizes[0].second, " rows")));
  auto outs = update_plan_->Run(ordered, options_.checked);
  if (!outs.ok()) {
    return absl::Status(outs.status().code(), absl::StrCat(metric_names_, ": update: ", outs.status().message()));
  }
  std::vector<at::Tensor> partials;
  partials.reserve(partial_of_state_.size());
  for (int idx : partial_of_state_) partials.push_back((*outs)[idx]);
  TALLY_RETURN_IF_ERROR(CheckGrowth(AppendedBytes(partials), "this update"));
  TALLY_RETURN_IF_ERROR(FoldIn(partials, exec::FoldOf::kPartials));
  for (const auto& [symbol, size] : sizes) {
    if (*symbol == "N") rows_fed_ += size;
  }
  return absl::OkStatus();
}

absl::Status Program::CheckBatch(const NamedTensors& given, int64_t extra_rows) const {
  const NamedTensors inputs = WithRowIds(given);
  std::vector<at::Tensor> ordered;
  SymbolSizes sizes;
  TALLY_RETURN_IF_ERROR(CheckInputs(inputs, ordered, &sizes));
  const auto& params = module_->update->params();
  int64_t rows = 0;
  if (!params.empty() && params[0]->type().rank() > 0 && params[0]->type().shape[0].is_symbolic()) {
    for (auto& [symbol, size] : sizes) {
      if (*symbol != params[0]->type().shape[0].symbol) continue;
      size += extra_rows;
      rows = size;
    }
  }
  TALLY_RETURN_IF_ERROR(CheckFootprint(update_footprint_, sizes, options_.max_bytes, options_.size_args, metric_names_,
                                       absl::StrCat("an update of ", rows, " rows")));
  std::vector<double> appended(growth_footprints_.size());
  for (size_t i = 0; i < appended.size(); ++i) appended[i] = growth_footprints_[i].Bytes(sizes);
  return CheckGrowth(appended, "this update");
}

std::vector<double> Program::AppendedBytes(const std::vector<at::Tensor>& partials) const {
  const auto& decls = module_->states;
  std::vector<double> out(decls.size());
  for (size_t i = 0; i < decls.size() && i < partials.size(); ++i) {
    const at::Tensor& t = partials[i];
    if (decls[i].reducer == ir::Reducer::kCat && t.defined()) {
      out[i] = static_cast<double>(t.numel()) * static_cast<double>(t.element_size());
    }
  }
  return out;
}

absl::Status Program::CheckGrowth(const std::vector<double>& appended, absl::string_view what) const {
  const auto& decls = module_->states;
  const std::vector<at::Tensor>& current = store_.states();
  auto bytes_of = [](const at::Tensor& t) -> double {
    return t.defined() ? static_cast<double>(t.numel()) * static_cast<double>(t.element_size()) : 0.0;
  };
  // Doubles, as in the budget checks: a product of dims may overflow int64.
  const double fixed = FixedBytes(decls, current);
  double cat_total = 0, largest_bytes = -1;
  size_t largest = decls.size();
  for (size_t i = 0; i < decls.size() && i < current.size(); ++i) {
    if (decls[i].reducer != ir::Reducer::kCat) continue;
    const double b = bytes_of(current[i]) + (i < appended.size() ? appended[i] : 0.0);
    cat_total += b;
    if (b > largest_bytes) largest_bytes = b, largest = i;
  }
  if (largest == decls.size()) return absl::OkStatus();  // no rows accumulate
  // The rows the other programs of the ledger hold (a Session's total and
  // its other shards).
  double others = 0;
  if (options_.row_ledger) {
    others = std::max<double>(
        0, static_cast<double>(options_.row_ledger->bytes.load(std::memory_order_relaxed) - counted_row_bytes_));
  }
  cat_total += others;
  const int64_t budget = Budget();
  const double need = fixed + 2 * cat_total;
  if (need <= static_cast<double>(budget)) return absl::OkStatus();
  // The largest state's rows: its bytes over the bytes of one of its rows.
  const int64_t rows = static_cast<int64_t>(largest_bytes / std::max<double>(1, decls[largest].Bytes()));
  return absl::ResourceExhaustedError(absl::StrCat(
      metric_names_, ": ", what, " would grow the states' accumulated rows to ",
      FormatBytes(static_cast<int64_t>(cat_total)),
      others > 0 ? absl::StrCat(" (", FormatBytes(static_cast<int64_t>(others)), " of them read or held elsewhere)")
                 : std::string(),
      "; the largest, state '", decls[largest].name, "', ", rows, " rows. With the fixed-size states (",
      FormatBytes(static_cast<int64_t>(fixed)), ") and room to copy the rows while their buffer grows, that needs ",
      FormatBytes(static_cast<int64_t>(need)), ", over the state budget of ", FormatBytes(budget),
      "; nothing was added. Compute over fewer rows, or raise the budget (--max-state-bytes)"));
}

absl::Status Program::CheckMerge(const Program& other) const {
  return CheckGrowth(AppendedBytes(other.store_.states()), "this merge");
}

absl::Status Program::FoldIn(const std::vector<at::Tensor>& partials, exec::FoldOf of) {
  // Sum states fold in place (no allocation per update) when the partial
  // matches the state exactly; everything that can fail runs first, so the
  // update still applies fully or not at all.
  if (!store_.SumsFoldInPlace(partials, of)) {
    TALLY_ASSIGN_OR_RETURN(std::vector<at::Tensor> next, Fold(store_.states(), partials, of));
    store_.Replace(std::move(next));
    CountRows();
    return absl::OkStatus();
  }
  // Only max/min/custom states need Fold here (the store adds the sums and
  // appends the cats).
  const auto& decls = module_->states;
  bool others = false;
  for (const auto& d : decls) others |= d.reducer != ir::Reducer::kSum && d.reducer != ir::Reducer::kCat;
  std::vector<at::Tensor> next(decls.size());
  if (others) {
    TALLY_ASSIGN_OR_RETURN(next, Fold(store_.states(), partials, of, /*skip_sums=*/true, /*skip_cats=*/true));
  }
  // The buffers may take what the budget leaves after the fixed-size states
  // and the other programs' buffers.
  const double fixed = FixedBytes(decls, store_.states());
  const int64_t elsewhere =
      options_.row_ledger
          ? std::max<int64_t>(0, options_.row_ledger->allocated.load(std::memory_order_relaxed) - counted_alloc_bytes_)
          : 0;
  const int64_t max_cat_bytes = std::max<int64_t>(0, Budget() - static_cast<int64_t>(fixed) - elsewhere);
  absl::Status folded = store_.FoldInPlace(partials, std::move(next), max_cat_bytes, of);
  CountRows();
  return folded;
}

absl::Status Program::CheckCounters(const std::vector<at::Tensor>& values) const {
  const auto& states = module_->states;
  for (size_t i = 0; i < states.size(); ++i) {
    if (states[i].check.empty()) continue;
    int64_t n = 0;
    TALLY_RETURN_IF_ERROR(
        support::CatchTorch([&] { n = values[i].item<int64_t>(); }, absl::StrCat(states[i].metric, ": reading check")));
    if (n > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(states[i].metric, ": ", absl::StrReplaceAll(states[i].check, {{"{n}", absl::StrCat(n)}})));
    }
  }
  return absl::OkStatus();
}

absl::Status Program::CheckValues() const {
  const std::vector<at::Tensor>& values = store_.values();
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
  const std::vector<at::Tensor>& values = store_.values();
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
  absl::Status reset = store_.Reset();
  CountRows();
  return reset;
}

absl::Status Program::Merge(const Program& other) {
  if (other.fingerprint_ != fingerprint_) {
    return absl::FailedPreconditionError(
        absl::StrCat(metric_names_, ": cannot merge a program of different metrics (", other.metric_names_, ")"));
  }
  std::vector<at::Tensor> incoming;
  TALLY_RETURN_IF_ERROR(support::CatchTorch(
      [&] {
        c10::Device dev(options_.device.name);
        for (const auto& t : other.store_.states()) incoming.push_back(t.to(dev));
      },
      metric_names_));
  // As an update: cat states append by amortized doubling, so merging k
  // programs copies their rows O(1) times each, not O(k).
  TALLY_RETURN_IF_ERROR(FoldIn(incoming, exec::FoldOf::kStates));
  Unsync();
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Program>> Program::To(const ir::Device& device) const {
  if (recompiler_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(metric_names_, ": this program was not made by the compiler and cannot move"));
  }
  return recompiler_(*this, device);
}

absl::StatusOr<std::string> Program::SaveState() const {
  return runtime::internal::EncodeStates(module_->states, store_.states(), metric_names_);
}

absl::StatusOr<std::string> Program::SaveComputedState() const {
  return runtime::internal::EncodeStates(module_->states, synced() ? synced_states() : states(), metric_names_);
}

absl::Status Program::LoadState(absl::string_view bytes) {
  TALLY_ASSIGN_OR_RETURN(std::vector<at::Tensor> loaded,
                         runtime::internal::DecodeStates(module_->states, bytes, options_.device, metric_names_));
  store_.Replace(std::move(loaded));
  CountRows();
  Unsync();
  return absl::OkStatus();
}

}  // namespace tally
