// The compiler entry points: link metrics into one module, run the pass
// pipeline, and instantiate a Program.
#ifndef TALLY_ENGINE_RUNTIME_COMPILER_H_
#define TALLY_ENGINE_RUNTIME_COMPILER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/dsl/metric.h"
#include "engine/runtime/program.h"
#include "passes/fuse.h"
#include "passes/pipeline.h"
#include "passes/prove_single_device.h"
#include "passes/registry.h"

namespace tally {

// CompileOptions select the device and what the pipeline records.
struct CompileOptions {
  ir::Device device;
  std::string dump_after;  // a pass name, "all", or ""
  bool checked = false;    // checked executor mode
  // transfer_inputs accepts inputs on any device and copies them with one
  // explicit, visible transfer node each; otherwise they are rejected.
  bool transfer_inputs = false;
  // fuse_policy kReference decomposes every fusion group into ATen ops (the
  // reference path the fused kernels are tested against).
  passes::FusePolicy fuse_policy = passes::FusePolicy::kFused;
  // backend runs the compiled plans (ProgramOptions::backend).
  exec::Backend backend = exec::Backend::kEager;
  // max_state_bytes bounds the fixed-size states Compile may allocate
  // (engine/runtime/state_budget.h); 0: half the physical memory.
  int64_t max_state_bytes = 0;
};

// Compiled is a module after the pipeline, with the pass log.
struct Compiled {
  std::unique_ptr<ir::Module> linked;  // before any pass
  std::unique_ptr<ir::Module> module;
  std::vector<passes::PassRecord> log;
  passes::DeviceProof proof;               // from prove-single-device
  std::vector<std::string> fusion_groups;  // from fuse
};

// PassOptionsOf is what the compiler's options say to the passes.
passes::PassOptions PassOptionsOf(const CompileOptions& options);

// CompileModule links `entries` and runs the default pipeline.
absl::StatusOr<Compiled> CompileModule(const std::vector<dsl::CollectionEntry>& entries, const CompileOptions& options);

// Recompile runs placement, transfers and the proof again on an already
// compiled module for another device (what Program::To does).
absl::StatusOr<Compiled> Recompile(const ir::Module& m, const CompileOptions& options);

// MoveProgram returns `p` recompiled and re-proved for `device`, with its
// states copied there.
absl::StatusOr<std::unique_ptr<Program>> MoveProgram(const Program& p, const ir::Device& device);

// Compile links, runs the pipeline and instantiates the program.
absl::StatusOr<std::unique_ptr<Program>> Compile(const std::vector<dsl::CollectionEntry>& entries,
                                                 const CompileOptions& options);

}  // namespace tally

#endif  // TALLY_ENGINE_RUNTIME_COMPILER_H_
