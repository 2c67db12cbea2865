// The in-memory form of an exported module (module_export.h describes its
// methods). Includes TorchScript's module API: for the exporter and tests.
#ifndef TALLY_ENGINE_EXEC_TORCHSCRIPT_MODULE_BUILDER_H_
#define TALLY_ENGINE_EXEC_TORCHSCRIPT_MODULE_BUILDER_H_

#include <torch/csrc/jit/api/module.h>

#include "absl/status/statusor.h"
#include "engine/ir/module.h"

namespace tally::exec::torchscript {

// BuildTorchModule builds the exported module of `m` with its states as
// buffers on `device`.
absl::StatusOr<torch::jit::Module> BuildTorchModule(const ir::Module& m, const ir::Device& device);

// BufferName is the attribute name of state `index` in the module built for
// `m` (state names are sanitized into Python identifiers).
std::string BufferName(const ir::Module& m, int index);

}  // namespace tally::exec::torchscript

#endif  // TALLY_ENGINE_EXEC_TORCHSCRIPT_MODULE_BUILDER_H_
