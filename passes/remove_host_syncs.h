// remove-host-syncs: rewrite syncing forms into sync-free ones, then prove
// that no update or merge plan syncs.
//
// Rewrites (each keeps the value exactly):
//   reduce_sum|max|min(masked_select(x, m)) -> reduce_*(where(m, x, identity))
//   size(masked_select(x, m), 0)            -> reduce_sum(m broadcast to x)
//   size(nonzero(x), 0)                     -> reduce_sum(ne(x, 0))
//   bincount(x) {minlength=K}               -> histogram(x) {size=K}, plus a
//       deferred check counting the values outside [0, K) (TorchMetrics-style
//       code would have grown the output; Tally reports them at Compute)
// Afterwards any node of @update or a merge graph with `syncs_host` or
// `data_dependent_shape` is a compile error naming the metric, the node and
// its DSL line. Finalize plans may sync (exact `cat` metrics need it);
// `inspect` marks those nodes. Counter: syncs_removed.
#ifndef TALLY_PASSES_REMOVE_HOST_SYNCS_H_
#define TALLY_PASSES_REMOVE_HOST_SYNCS_H_

#include "passes/pass.h"

namespace tally::passes {

class RemoveHostSyncs : public Pass {
 public:
  absl::string_view name() const override { return "remove-host-syncs"; }
  absl::StatusOr<bool> Run(ir::Module& m) override;
};

}  // namespace tally::passes

#endif  // TALLY_PASSES_REMOVE_HOST_SYNCS_H_
