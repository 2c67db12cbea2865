// Evaluate: metric specs over arrays in memory, the path behind `tally eval`:
// parse the specs, build them for the inputs' signature, compile them
// together, feed the rows in batches and compute.
#ifndef TALLY_API_EVALUATE_H_
#define TALLY_API_EVALUATE_H_

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/dsl/builder.h"
#include "engine/runtime/compiler.h"
#include "engine/runtime/program.h"
#include "engine/runtime/result_text.h"
#include "engine/runtime/results.h"
#include "metrics/collection.h"

namespace tally {

// EvalOptions mirror the command line.
struct EvalOptions {
  int64_t batch_size = 0;  // 0: one update with all rows
  ir::Device device;
  bool checked = false;
  bool transfer_inputs = false;
  exec::Backend backend = exec::Backend::kEager;  // what runs the plans
  int64_t max_state_bytes = 0;                    // the state budget (0: half the physical memory)
};

// EvalResult is one metric's value.
struct EvalResult {
  std::string spec;
  at::Tensor value;   // the result when it is one tensor; undefined for a tuple
  ResultTree result;  // the whole result: a leaf holding `value`, or a tuple (with keys: a dict)
};

// SignatureOf describes named tensors for metric builders.
absl::StatusOr<dsl::Signature> SignatureOf(const NamedTensors& inputs);

// BuildEntries parses and builds every spec for `sig`, with unique labels
// (metrics/collection.h).
using metrics::BuildEntries;

// Evaluate computes every metric over all rows of `inputs`: PrepareEval,
// FeedRows over every row, CollectResults.
absl::StatusOr<std::vector<EvalResult>> Evaluate(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                                 const EvalOptions& options);

// CheckInputNamesAndRows checks what eval checks before building anything:
// known input names and one row count (leading dim) for all inputs.
absl::Status CheckInputNamesAndRows(const NamedTensors& inputs);

// PreparedEval is a compiled program and the inputs it takes.
struct PreparedEval {
  std::vector<std::string> specs;
  dsl::Signature signature;  // of the inputs
  std::vector<dsl::CollectionEntry> entries;
  std::unique_ptr<Program> program;
  NamedTensors used;  // the inputs the program takes, on its device
  int64_t rows = 0;   // rows of the inputs (0 when none has a leading dim)
};

// PrepareProgram checks the input names and row counts and builds and
// compiles `specs` for the inputs' signature, without reading or placing
// the inputs (meta tensors describe them); `used` stays empty. An input no
// metric reads is an InvalidArgument.
absl::StatusOr<PreparedEval> PrepareProgram(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                            const EvalOptions& options);

// PrepareEval checks the input names and row counts, builds and compiles
// `specs` for the inputs' signature, and places the inputs the program takes
// on options.device (unless options.transfer_inputs).
absl::StatusOr<PreparedEval> PrepareEval(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                         const EvalOptions& options);

// FeedRows updates `program` with rows [begin, end) of `used` in consecutive
// batches of `batch_size` rows (0: one update). An empty range is one empty
// update, as for inputs without rows.
absl::Status FeedRows(Program& program, const NamedTensors& used, int64_t begin, int64_t end, int64_t batch_size);

// CollectResults computes `program` and returns one result per spec.
absl::StatusOr<std::vector<EvalResult>> CollectResults(const Program& program,
                                                       const std::vector<dsl::CollectionEntry>& entries,
                                                       const std::vector<std::string>& specs);

// ValueToJson prints one result (engine/runtime/result_text.h).
using ::tally::ValueToJson;
// ResultsToJson prints `{"results": [{"metric": ..., "value": ...}, ...]}`.
std::string ResultsToJson(const std::vector<EvalResult>& results);
// ResultsToTable prints an aligned two-column table (nan, inf, -inf as such).
std::string ResultsToTable(const std::vector<EvalResult>& results);

}  // namespace tally

#endif  // TALLY_API_EVALUATE_H_
