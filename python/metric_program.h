// MetricProgram: what one Python `tally.Metric` or `tally.Collection` holds,
// free of Python so that it reads as the C++ front door it is built on.
//
// TorchMetrics constructs a metric before it has seen an input; a Tally
// program is compiled for its inputs' signature (dtypes, dims past the
// leading one). So the program is compiled at the first update (or at an
// explicit Prepare), for that batch's signature, and every later batch must
// match it, as any Program's must. Everything else is the front door's:
// Program::Update / Compute / Reset / Merge / To, the state files of
// api/state_files.h and dist::Sync. Calls are serialized by a mutex, so
// Python threads that released the GIL may share one object.
#ifndef TALLY_PYTHON_METRIC_PROGRAM_H_
#define TALLY_PYTHON_METRIC_PROGRAM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "api/evaluate.h"
#include "api/state_files.h"
#include "engine/dist/sync.h"

namespace tally::python {

class MetricProgram {
 public:
  // `specs` are metric spec strings; `device` a device name ("cpu",
  // "cuda:1", "meta"); max_state_bytes the state budget (0: the default).
  static absl::StatusOr<std::unique_ptr<MetricProgram>> Create(std::vector<std::string> specs,
                                                               const std::string& device, int64_t max_state_bytes);
  // FromStateFiles folds state files (api/state_files.h: MergeStates) into
  // a compiled program on `device`: `tally.merge` and unpickling.
  static absl::StatusOr<std::unique_ptr<MetricProgram>> FromStateFiles(const std::vector<StateSource>& sources,
                                                                       const std::string& device,
                                                                       int64_t max_state_bytes);

  // Prepare compiles the program for the signature of `inputs` (their
  // values are not read: meta tensors do), unless it is compiled already.
  absl::Status Prepare(const NamedTensors& inputs);
  // Update folds one batch in; the first one compiles the program.
  absl::Status Update(const NamedTensors& inputs);
  // Compute returns one result per spec. Before any update it is the
  // value over no rows, from a program of the default signature that is
  // not kept.
  absl::StatusOr<std::vector<ResultTree>> Compute() const;
  // Forward is TorchMetrics' forward: the results of this batch alone,
  // then the batch folded into the states. On any error (also a bad value
  // that only the batch's compute finds) the states are unchanged.
  absl::StatusOr<std::vector<ResultTree>> Forward(const NamedTensors& inputs);
  absl::Status Reset();
  // Merge folds `other`'s states in (the same specs and signature).
  absl::Status Merge(const MetricProgram& other);
  // To moves the program and its states to `device`.
  absl::Status To(const std::string& device);

  // SaveState returns the state file of what Compute reads (after Sync,
  // every rank's rows). FailedPrecondition before the program is compiled.
  absl::StatusOr<std::string> SaveState() const;
  // LoadState replaces the states with a state file's (its specs and
  // inputs must be this program's; before any update it compiles for the
  // file's signature).
  absl::Status LoadState(const std::string& bytes);

  // Sync folds every rank's states (dist::Sync); Compute reads them until
  // the next Update, Reset, LoadState or Unsync. The program must be
  // compiled (Prepare) on every rank.
  absl::StatusOr<dist::SyncStats> Sync(c10d::ProcessGroup& group, absl::Duration timeout);
  void Unsync();

  // Inspect prints the compiled program ("text", "dot", "json",
  // "torchscript"); before any update, for the default signature.
  absl::StatusOr<std::string> Inspect(const std::string& format) const;

  bool compiled() const;
  const std::vector<std::string>& specs() const { return specs_; }
  // labels are the unique result labels of the specs ("mean", "mean_2").
  std::vector<std::string> labels() const;
  std::string device() const;
  // signature is the compiled inputs' (name, dtype, shape; leading dim -1).
  dsl::Signature signature() const;
  // last_input_data_ptrs are the data pointers of the tensors the last
  // Update handed to the Program, by name: a test checks that the binding
  // passed the caller's tensors through without a copy.
  std::vector<std::pair<std::string, int64_t>> last_input_data_ptrs() const;

 private:
  MetricProgram(std::vector<std::string> specs, EvalOptions options)
      : specs_(std::move(specs)), options_(std::move(options)) {}
  absl::Status PrepareLocked(const NamedTensors& inputs) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // CompileEntries compiles `entries` on this program's device and budget
  // (Forward's scratch; Compute's program before any update).
  absl::StatusOr<std::unique_ptr<Program>> CompileEntries(const std::vector<dsl::CollectionEntry>& entries) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const std::vector<std::string> specs_;
  mutable absl::Mutex mu_;
  EvalOptions options_ ABSL_GUARDED_BY(mu_);
  // The compiled program with its specs, signature and entries (program
  // null until the first update); `used` and `rows` are not kept.
  PreparedEval prepared_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Program> scratch_ ABSL_GUARDED_BY(mu_);  // Forward's batch program
  std::vector<std::pair<std::string, int64_t>> last_ptrs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tally::python

#endif  // TALLY_PYTHON_METRIC_PROGRAM_H_
