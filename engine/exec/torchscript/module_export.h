// Export of a compiled module as a self-contained TorchScript module: a
// `torch::jit::Module` whose buffers are the states and whose methods are
// built from the lowered plans (IR-level graph construction, no generated
// source), loadable with `torch::jit::load` in C++ and `torch.jit.load` in
// Python without Tally.
//
// Methods of the exported module:
//   update(<inputs>)   the update plan after the program's boundary checks
//                      (dtype, rank, fixed sizes, consistent row counts,
//                      device — each a raised error naming the metrics and the
//                      input), then every state folded with its reducer
//                      (custom merge graphs inlined); all or nothing.
//   compute()          Dict[str, Tensor]: metric label -> value, with the
//                      labels of Program::Compute: a multi-part result
//                      (e.g. roc's (fpr, tpr, thresholds)) has one entry
//                      per tensor, "<label>/<i>/<j>..." (engine/dsl/metric.h);
//                      a deferred check counter above zero raises
//                      "<metric>: <input>: <n> <message>".
//   reset()            every state back to its initial value, on the device
//                      the buffers are on.
//   merge_state(other) folds another exported module of the same metrics
//                      (any module with `states()` and `fingerprint()`, e.g.
//                      one loaded separately) in with the states' reducers.
//   states()           Dict[str, Tensor]: state name -> buffer.
//   fingerprint()      identifies the state layout (names, types, reducers).
// Creation ops take their device from the buffers at run time, so
// `module.to(device)` moves the whole program.
//
// The module must be compiled with passes::FusePolicy::kReference (no
// composite ops: those need Tally's operators). This header is free of
// TorchScript's headers; module_builder.h has the in-memory form.
#ifndef TALLY_ENGINE_EXEC_TORCHSCRIPT_MODULE_EXPORT_H_
#define TALLY_ENGINE_EXEC_TORCHSCRIPT_MODULE_EXPORT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/ir/module.h"

namespace tally::exec::torchscript {

// ExportModule builds the TorchScript module of `m` with its states on
// `device` and saves it to `path`.
absl::Status ExportModule(const ir::Module& m, const ir::Device& device, const std::string& path);

// ExportedGraphs prints the TorchScript IR of every method of the module
// `ExportModule` would write.
absl::StatusOr<std::string> ExportedGraphs(const ir::Module& m, const ir::Device& device);

}  // namespace tally::exec::torchscript

#endif  // TALLY_ENGINE_EXEC_TORCHSCRIPT_MODULE_EXPORT_H_
