// Eager ATen kernels, one per op of op_list.h, looked up by op id.
//
// A kernel reads its inputs and writes its outputs through raw arrays so that
// the eager executor dispatches a node without allocating. Kernels may throw
// c10::Error; the executor converts it (support/torch_status.h).
#ifndef TALLY_OPS_KERNELS_H_
#define TALLY_OPS_KERNELS_H_

#include <ATen/core/Tensor.h>

#include "absl/strings/string_view.h"
#include "engine/ir/graph.h"
#include "ops/op_list.h"

namespace tally::ops {

// Kernel computes node `n` from `in` (one per input) into `out` (one per output).
using Kernel = void (*)(const ir::Node& n, const at::Tensor* in, at::Tensor* out);

// FindKernel returns the eager kernel of an op (every op has one).
Kernel FindKernel(OpId op);
// FindKernel by name, for text IR: nullptr for a name no op has.
Kernel FindKernel(absl::string_view op);

// CumsumScan is the inclusive prefix sum of `x` along `dim` as a fixed-order
// (Hillis-Steele) scan of log2(n) shifted additions: what cumsum runs for
// floats on devices where ATen's cumsum is not deterministic. Exposed so that
// tests on a CPU-only machine can check it.
at::Tensor CumsumScan(const at::Tensor& x, int64_t dim);

}  // namespace tally::ops

#endif  // TALLY_OPS_KERNELS_H_
