// StateStore: the state tensors of a Program (engine-internal) and their
// bookkeeping: the live states, the buffers that cat states grow in, and
// the synced copy that Compute reads while synced (Program::SetSynced).
#ifndef TALLY_ENGINE_RUNTIME_INTERNAL_STATE_STORE_H_
#define TALLY_ENGINE_RUNTIME_INTERNAL_STATE_STORE_H_

#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/exec/fold_state.h"
#include "engine/ir/module.h"
#include "engine/ir/types.h"

namespace tally::runtime::internal {

class StateStore {
 public:
  // Init creates the initial states of `decls` (which must outlive the
  // store) on `device`; `what` (the program's metrics) starts errors.
  absl::Status Init(const std::vector<ir::StateDecl>* decls, ir::Device device, std::string what);

  // states are the live states; values what Compute reads: the synced copy
  // while synced, the live states otherwise.
  const std::vector<at::Tensor>& states() const { return states_; }
  const std::vector<at::Tensor>& values() const { return synced_ ? synced_states_ : states_; }
  // Replace installs states computed elsewhere (a fold, a merge, a load).
  void Replace(std::vector<at::Tensor> states) { states_ = std::move(states); }

  // SumsFoldInPlace reports whether every sum state can take its partial in
  // place (same sizes, dtype and device, or a scatter state's rows on its
  // device; a contiguous state).
  bool SumsFoldInPlace(const std::vector<at::Tensor>& partials, exec::FoldOf of) const;
  // FoldInPlace commits an update: sum states add their partial in place
  // (a scatter state's rows at the elements they name), cat states append
  // theirs, and every other state takes `folded`'s entry.
  // Everything that may fail runs before anything is committed. A cat
  // buffer too small for its rows is replaced by one of up to twice their
  // length (amortized doubling), but never so large that the buffers held,
  // with the new ones while the rows are copied, pass `max_cat_bytes`; the
  // exact length is always taken (the budget check is the caller's).
  absl::Status FoldInPlace(const std::vector<at::Tensor>& partials, std::vector<at::Tensor> folded,
                           int64_t max_cat_bytes, exec::FoldOf of);
  // CatAllocatedBytes: the bytes the cat states hold allocated — their
  // buffers' capacity, not only their rows.
  int64_t CatAllocatedBytes() const;
  // Reset drops the synced copy and restores the initial states. Cat
  // buffers are released: capacity kept for rows no longer held would count
  // against the budget (a read moves a shard's rows to the total).
  absl::Status Reset();

  // SetSynced installs the synced copy (checked against the declarations);
  // Unsync drops it.
  absl::Status SetSynced(std::vector<at::Tensor> states);
  void Unsync() {
    synced_ = false;
    synced_states_.clear();
  }
  bool synced() const { return synced_; }
  const std::vector<at::Tensor>& synced_states() const { return synced_states_; }

 private:
  absl::StatusOr<std::vector<at::Tensor>> InitialStates() const;

  const std::vector<ir::StateDecl>* decls_ = nullptr;
  ir::Device device_;
  std::string what_;
  std::vector<at::Tensor> states_;
  bool synced_ = false;
  std::vector<at::Tensor> synced_states_;
  // Per cat state, the buffer its state is a prefix view of (grown by
  // doubling); ignored when the state is no longer a view of it.
  bool IsViewOfBuffer(size_t i) const;
  std::vector<at::Tensor> cat_buffers_;
};

}  // namespace tally::runtime::internal

#endif  // TALLY_ENGINE_RUNTIME_INTERNAL_STATE_STORE_H_
