// `tally export`: a metric program as a self-contained TorchScript module
// (engine/exec/torchscript/module_export.h), loadable with torch::jit::load
// in C++ and torch.jit.load in Python without Tally.
#ifndef TALLY_API_EXPORT_H_
#define TALLY_API_EXPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/runtime/program.h"

namespace tally {

// ExportOptions mirror the command line.
struct ExportOptions {
  ir::Device device;  // where the buffers live in the written module
  std::string out;    // the .pt path
};

// Export builds `specs` for the signature of `inputs` (or, without inputs,
// DefaultSignature), compiles them with every composite op decomposed into
// ATen ops (FusePolicy::kReference: the module needs nothing of Tally), writes
// the module to `options.out` and returns a one-paragraph summary (methods,
// inputs, buffers).
absl::StatusOr<std::string> Export(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                   const ExportOptions& options);

}  // namespace tally

#endif  // TALLY_API_EXPORT_H_
