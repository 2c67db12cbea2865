// Ranking ops: searchsorted.
//
// searchsorted(sorted[K], values[...]) gives, for every value, the number of
// elements of the ascending 1-D `sorted` that are < value (right=false) or
// <= value (right=true), as i64 of values' shape. With it a finalize counts
// "rows scored below this one" for every row in O(N log N) without gathers,
// cumulative sums or data-dependent shapes (the exact AUROC / AP forms).
#include "absl/strings/str_cat.h"
#include "engine/status_macros.h"
#include "ops/op_registry.h"

namespace tally::ops {

void RegisterSortOps(OpTable& t) {
  OpDef d;
  d.name = "searchsorted";
  d.min_inputs = 2;
  d.max_inputs = 2;
  d.attrs = {{"right", AttrKind::kBool, false}};
  d.infer = [](const std::vector<ir::TensorType>& in, const ir::AttrMap&,
               const ir::Device&) -> absl::StatusOr<std::vector<ir::TensorType>> {
    if (in[0].rank() != 1) return absl::InvalidArgumentError("expects a rank-1 sorted sequence");
    if (in[0].dtype != in[1].dtype) {
      return absl::InvalidArgumentError(absl::StrCat("sorted sequence and values differ in dtype (",
                                                     ir::DTypeName(in[0].dtype), " vs ",
                                                     ir::DTypeName(in[1].dtype), ")"));
    }
    ir::TensorType out = in[1];
    out.dtype = ir::DType::kInt64;
    return std::vector<ir::TensorType>{out};
  };
  t.emplace(d.name, std::move(d));
}

}  // namespace tally::ops
