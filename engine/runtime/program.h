// Program: a compiled module bound to a device, with its state tensors.
//
// `Update` checks the inputs' metadata on the host (names, dtypes, ranks,
// fixed dims, consistent symbolic dims, device) before touching anything, runs
// the update plan, and folds every partial into its state with the state's
// reducer. It applies fully or not at all: on any error every state is as it
// was. `Compute` first reads the deferred-check counters (the only host reads,
// and only here) and then runs the finalize plan. `Merge` folds another
// program's states in with the same reducers, which is also what distributed
// sync and checkpoint restore do.
#ifndef TALLY_ENGINE_RUNTIME_PROGRAM_H_
#define TALLY_ENGINE_RUNTIME_PROGRAM_H_

#include <ATen/core/Tensor.h>

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/exec/eager_executor.h"
#include "engine/exec/plan_runner.h"
#include "engine/ir/module.h"
#include "engine/runtime/internal/state_store.h"
#include "engine/runtime/state_budget.h"

namespace tally {

// NamedTensors are inputs or results by name, in order.
using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// RowLedger counts what a group of programs hold in their cat states
// together — a Session set's shards, total, windows and probes — so that the
// budget bounds their sum, not each program's own (which reads at a Session
// would otherwise reset: a shard's rows move to the total, and the shard
// takes as many again). `bytes` counts the rows held, `allocated` the
// buffers that hold them. Updated after every change of a program's states;
// read without a lock, so concurrent updates of several threads may pass the
// check together by up to one update each.
struct RowLedger {
  std::atomic<int64_t> bytes{0};
  std::atomic<int64_t> allocated{0};
};

// ProgramOptions configure execution.
struct ProgramOptions {
  ir::Device device;
  bool checked = false;          // verify each node's output against its plan
  bool transfer_inputs = false;  // the module has explicit input transfers
  // backend runs the plans: the eager interpreter or TorchScript. Everything
  // else (checks, folds, deferred checks) is the same for both.
  exec::Backend backend = exec::Backend::kEager;
  // max_bytes bounds the temporaries of one update or compute (the node
  // outputs of its graph, for the batch's rows or the accumulated rows):
  // over it, Update / Compute fail with ResourceExhausted before running
  // anything. <= 0: DefaultStateBudget(). size_args name what sizes them.
  int64_t max_bytes = 0;
  std::vector<SizeArg> size_args;
  // The ledger shared with the other programs the budget bounds together
  // (Program::ShareRowLedger); none: the program's own rows only.
  std::shared_ptr<RowLedger> row_ledger;
};

// kRowIdInput is the update input a bootstrapped metric keys its resampling
// draws by (metrics/inputs.h has the same name): when the caller leaves it
// out, Update fills it with the rows' positions in this program's stream of
// updates (0, 1, ... across batches), so the draws do not depend on how the
// rows were batched. A caller that shards rows passes their global positions.
inline constexpr char kRowIdInput[] = "row_id";

class Program {
 public:
  // Create instantiates `m` (already compiled and placed) with initial states.
  static absl::StatusOr<std::unique_ptr<Program>> Create(std::unique_ptr<ir::Module> m, ProgramOptions options);
  ~Program();

  // ShareRowLedger makes the budget bound this program's rows together with
  // those of every program sharing `ledger` — also the programs later
  // created with this one's options().
  void ShareRowLedger(std::shared_ptr<RowLedger> ledger);

  // Update folds one batch of named inputs into the states.
  absl::Status Update(const NamedTensors& inputs);
  // SeekRows sets the position of the next row in the whole input (the
  // default kRowIdInput of the next update): a caller feeding one shard of
  // the rows starts at the shard's offset.
  void SeekRows(int64_t position) { rows_fed_ = position; }
  // Validate runs Update's host-side input checks (names, dtypes, ranks,
  // fixed dims, consistent row counts, device) without touching any state:
  // OK exactly when Update would accept the inputs' metadata.
  absl::Status Validate(const NamedTensors& inputs) const;
  // CheckBatch makes, from the inputs' shapes alone, every check Update
  // makes before it appends anything (the inputs' metadata, the budget of
  // the temporaries, the growth of the accumulated rows) for these inputs
  // with `extra_rows` more rows along their leading dim: the rows a
  // micro-batch queue staged before them. When growth_is_shape_determined(),
  // OK means Update takes the staged rows and these together. Nothing runs.
  absl::Status CheckBatch(const NamedTensors& inputs, int64_t extra_rows) const;
  // growth_is_shape_determined: the rows each update appends to a cat state
  // follow from the inputs' shapes (no dim depends on the values), so
  // CheckBatch's growth check is the one Update makes after running.
  bool growth_is_shape_determined() const { return growth_exact_; }
  // Compute returns one tensor per metric, labelled with the metric's label,
  // or for a multi-part result (a tuple such as roc's (fpr, tpr,
  // thresholds)) one per part, labelled "<label>/<i>/<j>..." by its path
  // (engine/dsl/metric.h); CollectResult (engine/runtime/results.h) rebuilds the tree.
  absl::StatusOr<NamedTensors> Compute() const;
  // CheckValues reports the first failed value check of what was
  // accumulated (an out-of-range label, a non-binary retrieval target: the
  // errors Compute would give for bad input values), reading the deferred
  // check counters and, only when finalize has value checks of its own,
  // running finalize. Whole-state conditions (a query without positives)
  // are not value checks and pass (on the eager backend, whose assert_zero
  // kernel honours support::ScopedSkipStateChecks; Session probes run eager). A server runs one request through a
  // scratch program and this to reject bad values before they reach the
  // real states (Session's SessionOptions::reject_invalid_values).
  absl::Status CheckValues() const;
  // Reset restores the initial states. Cat states keep their buffers' capacity
  // (as std::vector::clear does), so a program reset between windows does not
  // allocate and fault in fresh memory again.
  absl::Status Reset();
  // Merge folds `other`'s states into this program's (same module required).
  absl::Status Merge(const Program& other);
  // CheckMerge fails with ResourceExhausted when merging `other` would grow
  // the states past the budget (ProgramOptions::max_bytes), as Update does
  // for a batch. Merge itself does not check: a Session's reads fold rows
  // that its updates have already accepted.
  absl::Status CheckMerge(const Program& other) const;

  // Synced copy. Distributed sync is `dist::Sync` (engine/dist/sync.h, which
  // keeps c10d out of this header): it gathers every rank's states, folds
  // them with the states' reducers into a new set of tensors and hands that
  // to SetSynced. The local states are never touched, so nothing has to be
  // restored: Compute reads the synced copy until the next Update, Reset,
  // Merge, LoadState or Unsync drops it, and updates keep accumulating this
  // rank's own rows (TorchMetrics' sync/unsync, without the unsync step).
  //
  // SetSynced installs `states` (one per state, the layout of states()) as
  // the synced copy; a wrong count or dtype is an Internal error.
  absl::Status SetSynced(std::vector<at::Tensor> states);
  // Unsync drops the synced copy: Compute reads the local states again.
  void Unsync();
  // synced reports whether Compute reads a synced copy.
  bool synced() const { return store_.synced(); }
  const std::vector<at::Tensor>& synced_states() const { return store_.synced_states(); }
  // FoldCustom runs the custom merge graphs only: the result holds, for every
  // custom-reducer state, `current` merged with `incoming`; other entries are
  // undefined (and may be undefined in the arguments too).
  absl::StatusOr<std::vector<at::Tensor>> FoldCustom(const std::vector<at::Tensor>& current,
                                                     const std::vector<at::Tensor>& incoming) const;
  // fingerprint identifies the compiled module (its printed text): programs
  // that Merge or sync together must have equal ones.
  const std::string& fingerprint() const { return fingerprint_; }
  // SaveState serializes the states (device-independent bytes).
  absl::StatusOr<std::string> SaveState() const;
  // SaveComputedState serializes what Compute reads: the synced copy after
  // dist::Sync (every rank's rows), else the states.
  absl::StatusOr<std::string> SaveComputedState() const;
  // LoadState replaces the states with saved ones; all or nothing.
  absl::Status LoadState(absl::string_view bytes);
  // To returns this program recompiled for `device` — placement, fusion and
  // the single-device proof run again — with the states copied there. Only
  // programs made by the compiler (engine/runtime/compiler.h) can move.
  absl::StatusOr<std::unique_ptr<Program>> To(const ir::Device& device) const;

  // Recompiler is how To reaches the compiler without depending on it.
  using Recompiler = absl::StatusOr<std::unique_ptr<Program>> (*)(const Program&, const ir::Device&);
  void set_recompiler(Recompiler r) { recompiler_ = r; }

  const ir::Module& module() const { return *module_; }
  const ProgramOptions& options() const { return options_; }
  // states are the live state tensors; sum states are updated in place and
  // cat states are views of buffers that updates after a Reset overwrite, so
  // copy them to keep a snapshot.
  const std::vector<at::Tensor>& states() const { return store_.states(); }
  // metric_names lists the metrics of the program, for error messages.
  const std::string& metric_names() const { return metric_names_; }
  // num_update_kernels is the number of kernels one Update dispatches.
  int num_update_kernels() const { return update_plan_->num_kernel_calls(); }

 private:
  Program() = default;
  // Fold returns the folded states; with `skip_sums` sum states are left
  // undefined (Update adds them in place).
  absl::StatusOr<std::vector<at::Tensor>> Fold(const std::vector<at::Tensor>& current,
                                               const std::vector<at::Tensor>& incoming, exec::FoldOf of,
                                               bool skip_sums = false, bool skip_cats = false) const;
  // FoldIn folds `incoming` (one per state: an update's partials, or another
  // program's states) into the states, in place where the store can.
  absl::Status FoldIn(const std::vector<at::Tensor>& incoming, exec::FoldOf of);
  // CheckGrowth fails with ResourceExhausted, before anything is appended,
  // when the states with `appended[i]` bytes appended to each cat state i,
  // and the rows of the other programs of its RowLedger, could need more
  // than the budget allocated: the fixed-size states plus twice the rows,
  // since a cat buffer grows by copying into a new one while the old one is
  // still held (FoldIn keeps every buffer within the budget). The rule
  // counts rows, not buffers, so where rows live (a shard or the total a
  // read moved them to) never changes what is accepted. `what` says what
  // would grow them.
  // AppendedBytes gives `appended` for partials.
  absl::Status CheckGrowth(const std::vector<double>& appended, absl::string_view what) const;
  std::vector<double> AppendedBytes(const std::vector<at::Tensor>& partials) const;
  // CountRows brings the ledger up to date after the states changed.
  void CountRows();
  // CheckInputs also binds the update graph's symbolic dims in `sizes`.
  absl::Status CheckInputs(const NamedTensors& inputs, std::vector<at::Tensor>& ordered,
                           SymbolSizes* sizes = nullptr) const;
  // CheckFinalizeBudget fails when finalize over `values` would allocate
  // past the budget.
  absl::Status CheckFinalizeBudget(const std::vector<at::Tensor>& values) const;
  // CheckCounters fails on the first non-zero deferred-check counter.
  absl::Status CheckCounters(const std::vector<at::Tensor>& values) const;
  // RunMergePlans sets `next`'s custom-reducer entries from the merge graphs.
  absl::Status RunMergePlans(const std::vector<at::Tensor>& current, const std::vector<at::Tensor>& incoming,
                             std::vector<at::Tensor>& next) const;

  std::unique_ptr<ir::Module> module_;
  ProgramOptions options_;
  std::string metric_names_;
  std::string fingerprint_;
  std::unique_ptr<exec::PlanRunner> update_plan_;
  std::unique_ptr<exec::PlanRunner> finalize_plan_;
  // finalize has value checks (assert_zero without whole_state): CheckValues
  // must run it.
  bool finalize_value_checks_ = false;
  Footprint update_footprint_, finalize_footprint_;
  // Per state, the bytes its partial appends (cat states; empty elsewhere),
  // and whether the inputs' shapes alone determine them.
  std::vector<Footprint> growth_footprints_;
  bool growth_exact_ = true;
  std::vector<std::pair<std::string, std::unique_ptr<exec::PlanRunner>>> merge_plans_;
  std::vector<int> partial_of_state_;  // update result index per state
  // The states, the cat states' buffers and the synced copy.
  runtime::internal::StateStore store_;
  Recompiler recompiler_ = nullptr;
  // Budget: options_.max_bytes, or DefaultStateBudget() when unset.
  int64_t Budget() const;
  // This program's share of options_.row_ledger: rows and buffers.
  int64_t counted_row_bytes_ = 0;
  int64_t counted_alloc_bytes_ = 0;
  // WithRowIds adds kRowIdInput when the update reads it and `inputs` lack
  // it: the next rows' positions, from rows_fed_.
  NamedTensors WithRowIds(const NamedTensors& inputs) const;
  bool reads_row_id_ = false;
  int64_t rows_fed_ = 0;  // rows of the updates so far (for kRowIdInput)
};

}  // namespace tally

#endif  // TALLY_ENGINE_RUNTIME_PROGRAM_H_
