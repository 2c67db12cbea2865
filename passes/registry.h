// The pass registry: every pass by its stable name (`--passes=cse,fuse` in
// tally_opt, `--dump-after` in inspect), made from one set of options, and
// the compiler's pipelines built from it.
#ifndef TALLY_PASSES_REGISTRY_H_
#define TALLY_PASSES_REGISTRY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/ir/types.h"
#include "passes/fuse.h"
#include "passes/pass.h"
#include "passes/pipeline.h"

namespace tally::passes {

// PassOptions are what a pass may be made with.
struct PassOptions {
  ir::Device device{"cpu"};  // the target of place, fuse, insert-transfers, prove-single-device
  FusePolicy fuse_policy = FusePolicy::kFused;
  bool transfer_inputs = false;  // the default pipeline runs insert-transfers
};

// PassNames lists every registered pass, in the default pipeline's order.
const std::vector<std::string>& PassNames();

// CreatePass makes the pass `name`; an unknown name is InvalidArgument
// listing the known ones.
absl::StatusOr<std::unique_ptr<Pass>> CreatePass(absl::string_view name, const PassOptions& options = {});

// DefaultPipeline is the compiler's: canonicalize, cse,
// eliminate-dead-states, narrow-states, remove-host-syncs, place, fuse,
// [insert-transfers,] prove-single-device.
std::unique_ptr<PassPipeline> DefaultPipeline(const PassOptions& options);

// PlacementPipeline re-targets a compiled module (Program::MoveTo): place,
// fuse, [insert-transfers,] prove-single-device.
std::unique_ptr<PassPipeline> PlacementPipeline(const PassOptions& options);

}  // namespace tally::passes

#endif  // TALLY_PASSES_REGISTRY_H_
