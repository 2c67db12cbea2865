// prove-single-device: the proof that no edge of a program crosses devices.
//
// A verifier (it never changes the module): for every edge of every graph —
// parameter -> node, node -> node, value -> result — the source's device, the
// sink's device and the program's device are the same, and so are every
// state's. Every update parameter is a program input and gets a boundary
// check in Program::Update (dtype, rank, dims, device — the host metadata
// check, before any state changes). The proof is data that `tally inspect
// --proof` prints; a violation is an error naming the node and its DSL line.
#ifndef TALLY_PASSES_PROVE_SINGLE_DEVICE_H_
#define TALLY_PASSES_PROVE_SINGLE_DEVICE_H_

#include <map>
#include <string>
#include <vector>

#include "passes/pass.h"

namespace tally::passes {

// ProveSingleDevice builds the proof or fails naming the offending edge.
absl::StatusOr<DeviceProof> ProveSingleDevice(const ir::Module& m, const ir::Device& device);

// The pass form, for pipelines: runs the proof and never changes the module.
class ProveSingleDevicePass : public Pass {
 public:
  explicit ProveSingleDevicePass(ir::Device device) : device_(std::move(device)) {}
  absl::string_view name() const override { return "prove-single-device"; }
  absl::StatusOr<bool> Run(ir::Module& m) override;
  const DeviceProof& proof() const { return proof_; }
  void Report(CompileReport& report) const override { report.proof = proof_; }

 private:
  ir::Device device_;
  DeviceProof proof_;
};

}  // namespace tally::passes

#endif  // TALLY_PASSES_PROVE_SINGLE_DEVICE_H_
