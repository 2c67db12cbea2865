// The state codec (engine-internal): a Program's states as device-independent
// bytes, for Program::SaveState / LoadState (and so checkpoints).
//
// Format: "tally-state 1\n", then per state
// "<name> <dtype> <rank> <dims...> <nbytes>\n" and its <nbytes> raw bytes
// (host byte order, C order).
#ifndef TALLY_ENGINE_RUNTIME_INTERNAL_STATE_CODEC_H_
#define TALLY_ENGINE_RUNTIME_INTERNAL_STATE_CODEC_H_

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/ir/module.h"
#include "engine/ir/types.h"

namespace tally::runtime::internal {

// EncodeStates writes `states`, declared by `decls`; `what` (the program's
// metrics) starts errors.
absl::StatusOr<std::string> EncodeStates(const std::vector<ir::StateDecl>& decls, const std::vector<at::Tensor>& states,
                                         absl::string_view what);

// DecodeStates reads bytes that EncodeStates wrote for the same `decls`
// onto `device`: every name, dtype, rank and fixed dim must match, sizes
// are checked before anything is allocated, and trailing bytes are an error
// (InvalidArgument "<what>: load state: ...").
absl::StatusOr<std::vector<at::Tensor>> DecodeStates(const std::vector<ir::StateDecl>& decls, absl::string_view bytes,
                                                     const ir::Device& device, absl::string_view what);

}  // namespace tally::runtime::internal

#endif  // TALLY_ENGINE_RUNTIME_INTERNAL_STATE_CODEC_H_
