// FoldState: the one definition of how two values of a state combine by its
// reducer, shared by Program's fold (Merge, and through it Session reads)
// and the distributed sync.
#ifndef TALLY_ENGINE_EXEC_FOLD_STATE_H_
#define TALLY_ENGINE_EXEC_FOLD_STATE_H_

#include <ATen/core/Tensor.h>

#include "engine/ir/module.h"

namespace tally::exec {

// FoldState returns `a` folded with `b`: sum, elementwise max or min (NaN
// propagates), or `b`'s rows after `a`'s (cat, along dim 0). kCustom states
// fold through their group's merge plan, not here: an undefined tensor.
// ATen errors throw (callers run it under support::CatchTorch).
at::Tensor FoldState(ir::Reducer reducer, const at::Tensor& a, const at::Tensor& b);

}  // namespace tally::exec

#endif  // TALLY_ENGINE_EXEC_FOLD_STATE_H_
