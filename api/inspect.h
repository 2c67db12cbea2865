// `tally inspect`: what the compiler made of a set of metrics — inputs,
// states and reducers, the plans as text IR with every value's device, the
// passes run and what each changed, and the kernels per update.
#ifndef TALLY_API_INSPECT_H_
#define TALLY_API_INSPECT_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/dsl/builder.h"
#include "engine/dsl/metric.h"
#include "engine/runtime/program.h"

namespace tally {

struct InspectOptions {
  ir::Device device;
  std::string dump_after;
  bool proof = false;
  bool transfer_inputs = false;
  std::string format = "text";
};

// DefaultSignature guesses the inputs a metric takes when none are given:
// classification preds as f32 [N, C] (or [N] for binary), targets as i64;
// regression and aggregation as f32 [N].
dsl::Signature DefaultSignature(const std::vector<std::string>& specs);

// BuildEntriesFor builds `specs` for the signature of `inputs`, or for
// DefaultSignature(specs) when no inputs are given (inspect and export).
absl::StatusOr<std::vector<dsl::CollectionEntry>> BuildEntriesFor(const std::vector<std::string>& specs,
                                                                  const NamedTensors& inputs, const ir::Device& device);

// Inspect compiles `specs` for `inputs` (or the default signature) on
// `options.device` without running anything, and prints the program.
absl::StatusOr<std::string> Inspect(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                    const InspectOptions& options);

// ListMetrics prints every registered metric with its inputs ("text"), or
// the metric catalogue with arguments and defaults ("markdown").
absl::Status ListMetrics(std::ostream& out, absl::string_view format = "text");

}  // namespace tally

#endif  // TALLY_API_INSPECT_H_
