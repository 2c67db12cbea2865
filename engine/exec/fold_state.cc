#include "engine/exec/fold_state.h"

#include <ATen/ATen.h>

namespace tally::exec {

at::Tensor FoldState(ir::Reducer reducer, const at::Tensor& a, const at::Tensor& b) {
  switch (reducer) {
    case ir::Reducer::kSum:
      return a + b;
    case ir::Reducer::kMax:
      return at::maximum(a, b);
    case ir::Reducer::kMin:
      return at::minimum(a, b);
    case ir::Reducer::kCat:
      return at::cat({a, b}, 0);
    case ir::Reducer::kCustom:
      break;
  }
  return at::Tensor();
}

void AddRows(const at::Tensor& state, const at::Tensor& rows) {
  // No rows add nothing (index_add_'s meta check reads a first row).
  if (rows.numel() == 0) return;
  const at::Tensor r = rows.reshape({-1, 2});
  state.view({-1}).index_add_(0, r.select(1, 0), r.select(1, 1));
}

}  // namespace tally::exec
