// canonicalize: constant folding, algebraic identities and accumulator
// widening.
//
//   - folds elementwise ops whose inputs are all scalar constants;
//   - x + 0, x - 0, x * 1, x / 1 (same result type as x) -> x;
//     where(c, x, x) -> x; logical_not(logical_not(x)) -> x; cast to x's own
//     dtype -> x;
//   - cast(reduce_sum(x: f32), f64) -> reduce_sum(cast(x, f64)): a float sum
//     that ends in float64 accumulates in float64 (counts already sum in i64).
// Counters: constants_folded, identities_removed, accumulators_widened.
#ifndef TALLY_PASSES_CANONICALIZE_H_
#define TALLY_PASSES_CANONICALIZE_H_

#include "passes/pass.h"

namespace tally::passes {

class Canonicalize : public Pass {
 public:
  absl::string_view name() const override { return "canonicalize"; }
  absl::StatusOr<bool> Run(ir::Module& m) override;
};

}  // namespace tally::passes

#endif  // TALLY_PASSES_CANONICALIZE_H_
