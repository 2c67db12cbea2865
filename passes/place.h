// place: put every value of a module on the program's device.
//
// Parameters, node results, states and merge/finalize values all get the
// device; ops that create tensors (constants, full, arange) therefore
// materialize on it. Planning needs no hardware: `cuda:1` can be planned on a
// CPU-only machine. Counter: values_moved.
#ifndef TALLY_PASSES_PLACE_H_
#define TALLY_PASSES_PLACE_H_

#include "passes/pass.h"

namespace tally::passes {

class Place : public Pass {
 public:
  explicit Place(ir::Device device) : device_(std::move(device)) {}
  absl::string_view name() const override { return "place"; }
  absl::StatusOr<bool> Run(ir::Module& m) override;

 private:
  ir::Device device_;
};

}  // namespace tally::passes

#endif  // TALLY_PASSES_PLACE_H_
