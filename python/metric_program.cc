#include "python/metric_program.h"

#include <ATen/ATen.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/inspect.h"
#include "engine/ir/aten_types.h"
#include "metrics/inputs.h"
#include "metrics/registry.h"
#include "metrics/spec.h"
#include "support/status_macros.h"

namespace tally::python {
namespace {

// Collect gathers one result per entry. A result that shares memory with a
// state (a confusion matrix is its state) is copied: Python keeps results,
// and the next update would change them under it.
absl::StatusOr<std::vector<ResultTree>> Collect(const Program& program,
                                                const std::vector<dsl::CollectionEntry>& entries) {
  TALLY_ASSIGN_OR_RETURN(NamedTensors values, program.Compute());
  auto aliases_state = [&](const at::Tensor& t) {
    for (const auto* states : {&program.states(), &program.synced_states()}) {
      for (const at::Tensor& s : *states) {
        if (s.defined() && t.is_alias_of(s)) return true;
      }
    }
    return false;
  };
  std::vector<ResultTree> results;
  for (const dsl::CollectionEntry& entry : entries) {
    absl::StatusOr<ResultTree> tree = CollectMetricResult(values, entry.label, entry.metric.result_keys);
    if (!tree.ok()) return tree.status();
    std::vector<ResultTree*> pending = {&*tree};
    while (!pending.empty()) {
      ResultTree* node = pending.back();
      pending.pop_back();
      if (node->is_leaf()) {
        if (node->tensor.defined() && aliases_state(node->tensor)) node->tensor = node->tensor.clone();
      } else {
        for (ResultTree& part : node->parts) pending.push_back(&part);
      }
    }
    results.push_back(*std::move(tree));
  }
  return results;
}

absl::StatusOr<EvalOptions> OptionsFor(const std::string& device, int64_t max_state_bytes) {
  EvalOptions options;
  TALLY_ASSIGN_OR_RETURN(options.device, ir::ParseDevice(device));
  if (max_state_bytes < 0) return absl::InvalidArgumentError("max_state_bytes must not be negative");
  options.max_state_bytes = max_state_bytes;
  return options;
}

// MetaInputs are empty meta tensors of `sig`'s dtypes and shapes (one row):
// enough for what builds and compiles a program, which reads no value.
NamedTensors MetaInputs(const dsl::Signature& sig) {
  NamedTensors inputs;
  for (const dsl::InputSpec& in : sig) {
    std::vector<int64_t> shape = in.shape;
    if (!shape.empty()) shape[0] = 1;
    inputs.emplace_back(in.name,
                        at::empty(shape, at::TensorOptions().dtype(ir::ToScalarType(in.dtype)).device(at::kMeta)));
  }
  return inputs;
}

// AboutInputs tells a builder's error about the inputs ("<metric>: preds:
// ...", "... needs the input 'groups'") from one about the spec.
bool AboutInputs(absl::string_view message) {
  size_t colon = message.find(": ");
  absl::string_view rest = colon == absl::string_view::npos ? message : message.substr(colon + 2);
  for (absl::string_view input : metrics::kInputNames) {
    if (absl::StartsWith(rest, absl::StrCat(input, ":"))) return true;
  }
  return absl::StrContains(message, "input '");
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricProgram>> MetricProgram::Create(std::vector<std::string> specs,
                                                                     const std::string& device,
                                                                     int64_t max_state_bytes) {
  if (specs.empty()) return absl::InvalidArgumentError("no metric given");
  TALLY_ASSIGN_OR_RETURN(EvalOptions options, OptionsFor(device, max_state_bytes));
  // A bad spec, an unknown metric and an unknown or out-of-range argument
  // are refused here, as TorchMetrics refuses them when a metric is
  // constructed: parse every spec and build it for the default signature.
  // What is about the inputs (a metric the default signature does not fit:
  // samplewise, several outputs, groups) and the state budget report at the
  // first update, which compiles for the real inputs.
  for (const std::string& s : specs) {
    TALLY_RETURN_IF_ERROR(metrics::ParseMetricSpec(s).status());
    absl::Status built = BuildEntriesFor({s}, {}, options.device).status();
    if (!built.ok() && !AboutInputs(built.message())) return built;
  }
  return std::unique_ptr<MetricProgram>(new MetricProgram(std::move(specs), std::move(options)));
}

absl::StatusOr<std::unique_ptr<MetricProgram>> MetricProgram::FromStateFiles(const std::vector<StateSource>& sources,
                                                                             const std::string& device,
                                                                             int64_t max_state_bytes) {
  TALLY_ASSIGN_OR_RETURN(EvalOptions options, OptionsFor(device, max_state_bytes));
  TALLY_ASSIGN_OR_RETURN(MergedStates merged, MergeStates(sources, options));
  auto holder = std::unique_ptr<MetricProgram>(new MetricProgram(merged.specs, std::move(options)));
  absl::MutexLock lock(&holder->mu_);
  holder->prepared_.specs = std::move(merged.specs);
  holder->prepared_.signature = std::move(merged.signature);
  holder->prepared_.entries = std::move(merged.entries);
  holder->prepared_.program = std::move(merged.program);
  return holder;
}

bool MetricProgram::compiled() const {
  absl::ReaderMutexLock lock(&mu_);
  return prepared_.program != nullptr;
}

std::string MetricProgram::device() const {
  absl::ReaderMutexLock lock(&mu_);
  return options_.device.name;
}

dsl::Signature MetricProgram::signature() const {
  absl::ReaderMutexLock lock(&mu_);
  dsl::Signature sig = prepared_.signature;
  for (dsl::InputSpec& in : sig) {
    if (!in.shape.empty()) in.shape[0] = -1;
  }
  return sig;
}

std::vector<std::string> MetricProgram::labels() const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<dsl::CollectionEntry> built;
  const std::vector<dsl::CollectionEntry>* entries = &prepared_.entries;
  if (prepared_.program == nullptr) {
    absl::StatusOr<std::vector<dsl::CollectionEntry>> e = BuildEntriesFor(specs_, {}, options_.device);
    if (!e.ok()) return {};
    built = *std::move(e);
    entries = &built;
  }
  std::vector<std::string> labels;
  for (const dsl::CollectionEntry& entry : *entries) labels.push_back(entry.label);
  return labels;
}

std::vector<std::pair<std::string, int64_t>> MetricProgram::last_input_data_ptrs() const {
  absl::ReaderMutexLock lock(&mu_);
  return last_ptrs_;
}

absl::Status MetricProgram::PrepareLocked(const NamedTensors& inputs) {
  if (prepared_.program != nullptr) return absl::OkStatus();
  TALLY_ASSIGN_OR_RETURN(PreparedEval prepared, PrepareProgram(specs_, inputs, options_));
  prepared_ = std::move(prepared);
  return absl::OkStatus();
}

absl::Status MetricProgram::Prepare(const NamedTensors& inputs) {
  absl::MutexLock lock(&mu_);
  return PrepareLocked(inputs);
}

absl::Status MetricProgram::Update(const NamedTensors& inputs) {
  absl::MutexLock lock(&mu_);
  TALLY_RETURN_IF_ERROR(PrepareLocked(inputs));
  last_ptrs_.clear();
  for (const auto& [name, t] : inputs) {
    last_ptrs_.emplace_back(name, reinterpret_cast<int64_t>(t.defined() ? t.data_ptr() : nullptr));
  }
  return prepared_.program->Update(inputs);
}

absl::StatusOr<std::vector<ResultTree>> MetricProgram::Compute() const {
  absl::ReaderMutexLock lock(&mu_);
  if (prepared_.program != nullptr) return Collect(*prepared_.program, prepared_.entries);
  // No update yet: the value over no rows (TorchMetrics warns and computes
  // its initial states).
  TALLY_ASSIGN_OR_RETURN(std::vector<dsl::CollectionEntry> entries, BuildEntriesFor(specs_, {}, options_.device));
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Program> empty, CompileEntries(entries));
  return Collect(*empty, entries);
}

absl::StatusOr<std::unique_ptr<Program>> MetricProgram::CompileEntries(
    const std::vector<dsl::CollectionEntry>& entries) const {
  CompileOptions co;
  co.device = options_.device;
  co.max_state_bytes = options_.max_state_bytes;
  return tally::Compile(entries, co);
}

absl::StatusOr<std::vector<ResultTree>> MetricProgram::Forward(const NamedTensors& inputs) {
  absl::MutexLock lock(&mu_);
  TALLY_RETURN_IF_ERROR(PrepareLocked(inputs));
  if (scratch_ == nullptr) {
    TALLY_ASSIGN_OR_RETURN(scratch_, CompileEntries(prepared_.entries));
  }
  TALLY_RETURN_IF_ERROR(scratch_->Reset());
  TALLY_RETURN_IF_ERROR(scratch_->Update(inputs));
  // Copies: the scratch's states are overwritten by the next forward.
  absl::StatusOr<std::vector<ResultTree>> batch = Collect(*scratch_, prepared_.entries);
  if (!batch.ok()) return batch.status();
  TALLY_RETURN_IF_ERROR(prepared_.program->Update(inputs));
  return batch;
}

absl::Status MetricProgram::Reset() {
  absl::MutexLock lock(&mu_);
  if (prepared_.program == nullptr) return absl::OkStatus();
  return prepared_.program->Reset();
}

absl::Status MetricProgram::Merge(const MetricProgram& other) {
  if (&other == this) return absl::InvalidArgumentError("merge: a metric cannot merge itself");
  // Locks in address order, so two merges of a pair in opposite
  // directions cannot deadlock.
  absl::Mutex* first = this < &other ? &mu_ : &other.mu_;
  absl::Mutex* second = this < &other ? &other.mu_ : &mu_;
  absl::MutexLock l1(first);
  absl::MutexLock l2(second);
  if (other.prepared_.program == nullptr) return absl::OkStatus();  // no rows to fold
  if (specs_ != other.specs_) {
    return absl::InvalidArgumentError(absl::StrCat("merge: the metrics differ (", absl::StrJoin(specs_, ", "), " vs ",
                                                   absl::StrJoin(other.specs_, ", "), ")"));
  }
  if (prepared_.program == nullptr) {
    TALLY_RETURN_IF_ERROR(PrepareLocked(MetaInputs(other.prepared_.signature)));
  }
  Program& mine = *prepared_.program;
  if (mine.fingerprint() != other.prepared_.program->fingerprint()) {
    return absl::InvalidArgumentError("merge: the metrics were compiled for different inputs");
  }
  if (mine.options().device != other.prepared_.program->options().device) {
    return absl::InvalidArgumentError(absl::StrCat("merge: the metrics are on ", mine.options().device.name, " and ",
                                                   other.prepared_.program->options().device.name));
  }
  TALLY_RETURN_IF_ERROR(mine.CheckMerge(*other.prepared_.program));
  return mine.Merge(*other.prepared_.program);
}

absl::Status MetricProgram::To(const std::string& device) {
  TALLY_ASSIGN_OR_RETURN(ir::Device dev, ir::ParseDevice(device));
  absl::MutexLock lock(&mu_);
  if (prepared_.program != nullptr && prepared_.program->options().device != dev) {
    TALLY_ASSIGN_OR_RETURN(prepared_.program, prepared_.program->To(dev));
    scratch_.reset();
  }
  options_.device = dev;
  return absl::OkStatus();
}

absl::StatusOr<std::string> MetricProgram::SaveState() const {
  absl::ReaderMutexLock lock(&mu_);
  if (prepared_.program == nullptr) {
    return absl::FailedPreconditionError("save_state: no update yet, so no inputs to save the states of");
  }
  return tally::SaveState(prepared_);
}

absl::Status MetricProgram::LoadState(const std::string& bytes) {
  absl::MutexLock lock(&mu_);
  TALLY_ASSIGN_OR_RETURN(MergedStates merged, MergeStates({StateSource{"state", bytes}}, options_));
  if (merged.specs != specs_) {
    return absl::InvalidArgumentError(absl::StrCat("load_state: the state holds ", absl::StrJoin(merged.specs, ", "),
                                                   ", not ", absl::StrJoin(specs_, ", ")));
  }
  if (prepared_.program != nullptr && prepared_.program->fingerprint() != merged.program->fingerprint()) {
    return absl::InvalidArgumentError("load_state: the state was saved for other inputs (dtypes or dims)");
  }
  prepared_.signature = std::move(merged.signature);
  prepared_.entries = std::move(merged.entries);
  prepared_.program = std::move(merged.program);
  scratch_.reset();
  return absl::OkStatus();
}

absl::StatusOr<dist::SyncStats> MetricProgram::Sync(c10d::ProcessGroup& group, absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  if (prepared_.program == nullptr) {
    return absl::FailedPreconditionError("sync: the program is not compiled (no update and no signature given)");
  }
  dist::SyncOptions options;
  options.timeout = timeout;
  return dist::Sync(*prepared_.program, group, options);
}

void MetricProgram::Unsync() {
  absl::MutexLock lock(&mu_);
  if (prepared_.program != nullptr) prepared_.program->Unsync();
}

absl::StatusOr<std::string> MetricProgram::Inspect(const std::string& format) const {
  absl::ReaderMutexLock lock(&mu_);
  InspectOptions options;
  options.device = options_.device;
  options.format = format;
  NamedTensors like;
  if (prepared_.program != nullptr) {
    like = MetaInputs(prepared_.signature);
  }
  return tally::Inspect(specs_, like, options);
}

}  // namespace tally::python
