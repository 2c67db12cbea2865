// The inputs every regression metric reads: `preds` and `target` of one
// shape, checked from metadata (TorchMetrics' _check_same_shape plus numeric
// dtypes) before any state exists.
#ifndef TALLY_METRICS_REGRESSION_OPERANDS_H_
#define TALLY_METRICS_REGRESSION_OPERANDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "engine/dsl/builder.h"

namespace tally::metrics {

// ShapeText prints a shape as "[N, d]" for error messages.
std::string ShapeText(const std::vector<int64_t>& shape);

// Operands are preds and target after the metadata checks, as declared.
struct Operands {
  ops::Expr preds, target;
  std::vector<int64_t> shape;  // the caller's shape of both
  ir::DType preds_dtype = ir::DType::kFloat32, target_dtype = ir::DType::kFloat32;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
};

// ReadOperands declares preds and target and checks the same shape, numeric
// (non-bool) dtypes and at least one dim; `max_rank` > 0 bounds the rank and
// `exact_rank` > 0 fixes it. On failure the builder is poisoned, with an
// error naming the input, and false is returned.
bool ReadOperands(dsl::MetricBuilder& b, Operands& out, int64_t max_rank = 0, int64_t exact_rank = 0);

}  // namespace tally::metrics

#endif  // TALLY_METRICS_REGRESSION_OPERANDS_H_
