// The TorchScript backend's plan runner: a compiled plan (update, finalize
// or merge graph) lowered to a `torch::jit::Graph` (lowering.h) and run by
// TorchScript's GraphExecutor.
//
// Program selects it with exec::Backend::kTorchScript and keeps everything
// else — boundary checks, state folding, deferred checks, all-or-nothing
// updates — exactly as with the eager executor. This header is free of
// TorchScript's headers so that Program and the tools include it cheaply.
#ifndef TALLY_ENGINE_EXEC_TORCHSCRIPT_PLAN_H_
#define TALLY_ENGINE_EXEC_TORCHSCRIPT_PLAN_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/exec/plan_runner.h"
#include "engine/ir/graph.h"
#include "engine/ir/module.h"

namespace tally::exec::torchscript {

// CreatePlan lowers `g` (creation ops on the devices the compiler planned)
// and prepares a GraphExecutor for it (simple mode: TorchScript's CPU fuser
// cannot generate code on this LibTorch; on the CPU constant creation ops
// are folded once, like the eager executor's hoisting). The graph need not
// outlive the plan. Unimplemented when an op has no lowering. In checked
// mode Run compares every result (the interpreter hides intermediate
// values) with its planned dtype, rank and device.
absl::StatusOr<std::unique_ptr<PlanRunner>> CreatePlan(const ir::Graph& g);

// LoweredModuleText prints the lowered TorchScript graphs of every plan of
// `m` (update, merge graphs, finalize), as `tally inspect --format
// torchscript` shows them. Planning for a device this machine lacks works.
absl::StatusOr<std::string> LoweredModuleText(const ir::Module& m);

// JitErrorMessage keeps the useful line of a TorchScript interpreter error
// (the message of the exception raised inside, not the traceback banner).
std::string JitErrorMessage(const char* what);

}  // namespace tally::exec::torchscript

#endif  // TALLY_ENGINE_EXEC_TORCHSCRIPT_PLAN_H_
