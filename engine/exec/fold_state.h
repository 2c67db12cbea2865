// FoldState: the one definition of how two values of a state combine by its
// reducer, shared by Program's fold (Merge, and through it Session reads)
// and the distributed sync; AddRows, how a scatter state takes an update.
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

// FoldOf says what a fold takes: an update's partials (a scatter state's is
// rows of (index, count): ir::StateDecl::scatter) or another program's
// whole states (a merge, a sync).
enum class FoldOf { kPartials, kStates };

// AddRows adds a scatter state's partial, int64 rows [..., 2] of (flat
// element index, count), into the contiguous int64 `state` in place. ATen
// errors throw (an index out of range: the op that makes the rows keeps
// them in range, as AccumulateAt requires).
void AddRows(const at::Tensor& state, const at::Tensor& rows);

}  // namespace tally::exec

#endif  // TALLY_ENGINE_EXEC_FOLD_STATE_H_
