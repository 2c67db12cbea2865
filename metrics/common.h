// What the metric library's files share: the classification task, the
// float64 cast most finalizers compute in, and Bound (BuildFns from one
// builder function).
#ifndef TALLY_METRICS_COMMON_H_
#define TALLY_METRICS_COMMON_H_

#include <utility>

#include "engine/ir/types.h"
#include "metrics/registry.h"
#include "ops/graph_builder.h"

namespace tally::metrics {

// Task is TorchMetrics' classification task: which input form a
// binary_/multiclass_/multilabel_ metric takes.
enum class Task { kBinary, kMulticlass, kMultilabel };

// F64 casts to float64, the dtype finalizers compute in.
inline ops::Expr F64(ops::Expr x) { return ops::Cast(x, ir::DType::kFloat64); }

// Bound is the BuildFn that builds with `build(lead..., args, sig, device)`:
// one builder function serves every task and kind it takes as leading
// arguments, without a wrapper function per (task, kind).
template <typename F, typename... Lead>
BuildFn Bound(F build, Lead... lead) {
  return [build, lead...](SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
    return build(lead..., args, sig, device);
  };
}

}  // namespace tally::metrics

#endif  // TALLY_METRICS_COMMON_H_
