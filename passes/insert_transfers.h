// insert-transfers: the opt-in boundary transfer (--transfer-inputs).
//
// Every update parameter is retyped to ir::Device::Any() ("*": it may arrive on any
// device) and feeds exactly one explicit `transfer` node to the program's
// device, which `inspect` shows and the single-device proof accounts for as
// the only edges allowed to change device. Without this pass an input on
// another device is rejected at the boundary. Counter: transfers_inserted.
#ifndef TALLY_PASSES_INSERT_TRANSFERS_H_
#define TALLY_PASSES_INSERT_TRANSFERS_H_

#include "passes/pass.h"

namespace tally::passes {

class InsertTransfers : public Pass {
 public:
  explicit InsertTransfers(ir::Device device) : device_(std::move(device)) {}
  absl::string_view name() const override { return "insert-transfers"; }
  absl::StatusOr<bool> Run(ir::Module& m) override;

 private:
  ir::Device device_;
};

}  // namespace tally::passes

#endif  // TALLY_PASSES_INSERT_TRANSFERS_H_
