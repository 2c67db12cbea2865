// Lowering of Tally IR graphs to TorchScript graphs (`torch::jit::Graph`),
// built node by node with the TorchScript IR API — never by generating
// source text.
//
// Every op kind has one entry in a lowering table keyed by op name
// (op_lowerings.cc). An entry emits the ATen (or prim) operations that
// compute exactly what the op's eager kernel (ops/kernels.cc) computes,
// including the casts of operands to the result dtype and the host-side
// shape branches (empty reductions, empty histograms), which become
// `prim::If` nodes on sizes — metadata only, so lowered plans still run on
// `meta`. Composite ops call Tally's registered operators (`tally::mc_confmat`
// ...) where allowed; exported modules forbid them and are compiled with
// their composites decomposed (passes::FusePolicy::kReference).
//
// This header includes TorchScript's IR; only the backend's own translation
// units include it (plan.h and module_export.h are free of it).
#ifndef TALLY_ENGINE_EXEC_TORCHSCRIPT_LOWERING_H_
#define TALLY_ENGINE_EXEC_TORCHSCRIPT_LOWERING_H_

#include <torch/csrc/jit/ir/ir.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/ir/graph.h"

namespace tally::exec::torchscript {

// DeviceSource is where ops that create tensors get their device.
enum class DeviceSource {
  kPlanned,  // the device the compiler planned for the node (a constant)
  kRuntime,  // a Device value computed at run time (exported modules follow
             // their buffers when moved with `module.to(device)`)
};

// LoweringOptions configure one lowering.
struct LoweringOptions {
  DeviceSource device_source = DeviceSource::kPlanned;
  // allow_tally_ops lets composite ops call Tally's `tally::` operators;
  // without it a composite op is an Unimplemented error.
  bool allow_tally_ops = true;
};

// LowerCtx is the state of lowering one IR graph: the target graph (at its
// current insertion point) and the helpers op lowerings build with.
class LowerCtx {
 public:
  LowerCtx(torch::jit::Graph& g, torch::jit::Value* runtime_device, const LoweringOptions& options)
      : g_(g), runtime_device_(runtime_device), options_(options) {}

  torch::jit::Graph& graph() { return g_; }
  const LoweringOptions& options() const { return options_; }

  // Call inserts `op` with schema matching (overloads chosen by argument types).
  torch::jit::Value* Call(c10::Symbol op, std::vector<torch::jit::NamedValue> args,
                          std::vector<torch::jit::NamedValue> kwargs = {});
  // Const inserts a constant.
  torch::jit::Value* Const(const c10::IValue& v);
  // DeviceOf is the device that creation node `n` materializes tensors on.
  torch::jit::Value* DeviceOf(const ir::Node& n);
  // As casts `v` (of IR dtype `from`) to `to` when they differ, like the
  // eager kernels' As().
  torch::jit::Value* As(torch::jit::Value* v, ir::DType from, c10::ScalarType to);
  // Unpack splits a tuple (or a list of `n` tensors) into values.
  std::vector<torch::jit::Value*> Unpack(torch::jit::Value* v, size_t n);
  // If emits `prim::If(cond)` with one Tensor result; each branch is built
  // by its function inside its block.
  torch::jit::Value* If(torch::jit::Value* cond, const std::function<torch::jit::Value*()>& then_fn,
                        const std::function<torch::jit::Value*()>& else_fn);

 private:
  torch::jit::Graph& g_;
  torch::jit::Value* runtime_device_;
  const LoweringOptions& options_;
  std::map<std::string, torch::jit::Value*> device_constants_;
};

// OpLowering emits one IR node; `in` are the lowered inputs. It returns one
// value per node output. It may throw (schema mismatches); LowerInto turns
// that into a status naming the node.
using OpLowering = absl::StatusOr<std::vector<torch::jit::Value*>> (*)(LowerCtx& ctx, const ir::Node& n,
                                                                       const std::vector<torch::jit::Value*>& in);

// FindOpLowering returns the lowering of an op kind, or nullptr.
OpLowering FindOpLowering(absl::string_view op);
// LoweredOps lists the op kinds the table covers (for tests).
std::vector<std::string> LoweredOps();

// LowerInto emits `g`'s nodes into `out` at its insertion point, with
// `params` standing for g's parameters, and returns the values of g's
// results in order. `runtime_device` is required with DeviceSource::kRuntime.
absl::StatusOr<std::vector<torch::jit::Value*>> LowerInto(torch::jit::Graph& out, const ir::Graph& g,
                                                          const std::vector<torch::jit::Value*>& params,
                                                          torch::jit::Value* runtime_device,
                                                          const LoweringOptions& options);

// LowerGraph returns a standalone graph: one Tensor input per parameter (with
// its name), one output per result. With DeviceSource::kRuntime the device
// is that of the first input.
absl::StatusOr<std::shared_ptr<torch::jit::Graph>> LowerGraph(const ir::Graph& g, const LoweringOptions& options);

// CountKernelCalls counts the nodes of `g` (in every block) that dispatch a
// tensor kernel: aten:: and tally:: operators with a Tensor result.
int CountKernelCalls(const torch::jit::Graph& g);

}  // namespace tally::exec::torchscript

#endif  // TALLY_ENGINE_EXEC_TORCHSCRIPT_LOWERING_H_
