// Ranking ops: searchsorted, bucketize, cumsum, topk, argsort.
//
// searchsorted(sorted[K], values[...]) gives, for every value, the number of
// elements of the ascending 1-D `sorted` that are < value (right=false) or
// <= value (right=true), as i64 of values' shape. With it a finalize counts
// "rows scored below this one" for every row in O(N log N) without gathers,
// cumulative sums or data-dependent shapes (the exact AUROC / AP forms).
//
// bucketize(x[...], boundaries[K]) {right} is torch.bucketize: the same
// count with the operands the other way round (i64 of x's shape; right=false
// counts boundaries < x, right=true boundaries <= x), comparing in the
// promoted dtype of the two; NaN sorts above every boundary.
//
// cumsum(x) {dim} is the inclusive prefix sum along `dim`; bools and integers
// accumulate in i64, floats in their own dtype. It is deterministic on every
// device and never leaves the device of x (TorchMetrics' `_cumsum` went to
// the CPU under deterministic mode and came back on the default device).
//
// topk(x) {k, dim=-1, largest=true, sorted=true} -> (values, indices): the k
// largest (smallest) along `dim`. A symbolic `dim` is checked against k when
// the kernel runs.
//
// argsort(x) {dim=-1, descending=false, stable=true} is the permutation that
// sorts x along `dim` (ties keep their order when stable), i64.
#include "absl/strings/str_cat.h"
#include "ops/op_registry.h"
#include "support/status_macros.h"

namespace tally::ops {
namespace {

using ir::DType;
using ir::TensorType;
using Types = absl::StatusOr<std::vector<TensorType>>;

}  // namespace

void RegisterSortOps(OpTable& t) {
  auto add = [&t](OpDef d) { AddOp(t, std::move(d)); };
  add(MakeOp(OpId::kSearchsorted, 2, 2, SpecsOf<SideAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
               if (in[0].rank() != 1) return absl::InvalidArgumentError("expects a rank-1 sorted sequence");
               if (in[0].dtype != in[1].dtype) {
                 return absl::InvalidArgumentError(absl::StrCat("sorted sequence and values differ in dtype (",
                                                                ir::DTypeName(in[0].dtype), " vs ",
                                                                ir::DTypeName(in[1].dtype), ")"));
               }
               TensorType out = in[1];
               out.dtype = DType::kInt64;
               return std::vector<TensorType>{out};
             }));
  add(MakeOp(OpId::kBucketize, 2, 2, SpecsOf<SideAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
               if (in[1].rank() != 1) return absl::InvalidArgumentError("expects rank-1 boundaries");
               if (in[0].dtype == DType::kBool || in[1].dtype == DType::kBool) {
                 return absl::InvalidArgumentError("expects numeric operands, got i1");
               }
               TensorType out = in[0];
               out.dtype = DType::kInt64;
               return std::vector<TensorType>{out};
             }));
  add(MakeOp(OpId::kCumsum, 1, 1, SpecsOf<DimAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
               if (in[0].rank() < 1) return absl::InvalidArgumentError("expects rank >= 1");
               TALLY_RETURN_IF_ERROR(NormalizeDim(AttrsOf<DimAttrs>(a).dim, in[0].rank()).status());
               TensorType out = in[0];
               if (!ir::IsFloating(out.dtype)) out.dtype = DType::kInt64;
               return std::vector<TensorType>{out};
             }));
  add(MakeOp(OpId::kTopk, 1, 1, SpecsOf<TopkAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
               if (in[0].rank() < 1) return absl::InvalidArgumentError("expects rank >= 1");
               if (in[0].dtype == DType::kBool) return absl::InvalidArgumentError("expects a numeric input, got i1");
               const auto attrs = AttrsOf<TopkAttrs>(a);
               TALLY_ASSIGN_OR_RETURN(int64_t d, NormalizeDim(attrs.dim.get(), in[0].rank()));
               const ir::Dim& dim = in[0].shape[d];
               const int64_t k = attrs.k;
               if (k < 0 || (!dim.is_symbolic() && k > dim.size)) {
                 return absl::InvalidArgumentError(
                     absl::StrCat("k=", k, " out of range of dim ", d, " (size ", dim.ToString(), ")"));
               }
               TensorType values = in[0];
               values.shape[d] = ir::Dim::Fixed(k);
               TensorType indices = values;
               indices.dtype = DType::kInt64;
               return std::vector<TensorType>{values, indices};
             }));
  add(MakeOp(OpId::kArgsort, 1, 1, SpecsOf<ArgsortAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
               if (in[0].rank() < 1) return absl::InvalidArgumentError("expects rank >= 1");
               TALLY_RETURN_IF_ERROR(NormalizeDim(AttrsOf<ArgsortAttrs>(a).dim.get(), in[0].rank()).status());
               TensorType out = in[0];
               out.dtype = DType::kInt64;
               return std::vector<TensorType>{out};
             }));
}

}  // namespace tally::ops
