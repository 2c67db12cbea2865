// Host and device algorithms written once as TorchScript source (loops over
// lists or tensors), for the ops whose loops read more clearly that way
// than built node by node. The TorchScript backend inlines their graphs
// (plain ATen and prim ops, so an exported module needs nothing of Tally);
// an eager kernel runs the same function where it has no loop of its own.
#ifndef TALLY_OPS_FUSED_SCRIPT_H_
#define TALLY_OPS_FUSED_SCRIPT_H_

#include <ATen/core/ivalue.h>

#include <memory>
#include <vector>

namespace torch::jit {
struct Graph;
}  // namespace torch::jit

namespace tally::ops::fused {

// ScriptGraph is function `fn` of `source` (a static string), compiled once
// per process, with the calls to its helpers inlined. Throws what the
// compiler throws.
std::shared_ptr<torch::jit::Graph> ScriptGraph(const char* source, const char* fn);

// RunScript calls function `fn` of `source` on `inputs`.
c10::IValue RunScript(const char* source, const char* fn, std::vector<c10::IValue> inputs);

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_SCRIPT_H_
