// Reductions: sum, max, min, any, all over a set of dims; argmax; softmax.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ops/op_registry.h"
#include "support/status_macros.h"

namespace tally::ops {
namespace {

using ir::DType;
using ir::TensorType;

// ReducedShape drops (or keeps as 1) the reduced dims; empty dims = all.
absl::StatusOr<ir::Shape> ReducedShape(const ir::Shape& s, std::vector<int64_t> dims, bool keepdim) {
  int64_t rank = static_cast<int64_t>(s.size());
  std::vector<bool> reduce(rank, dims.empty());
  for (int64_t d : dims) {
    TALLY_ASSIGN_OR_RETURN(int64_t nd, NormalizeDim(d, rank));
    reduce[nd] = true;
  }
  ir::Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduce[i])
      out.push_back(s[i]);
    else if (keepdim)
      out.push_back(ir::Dim::Fixed(1));
  }
  return out;
}

OpDef Reduction(OpId id, std::function<DType(DType)> result) {
  OpDef d;
  d.id = id;
  d.min_inputs = d.max_inputs = 1;
  d.attrs = SpecsOf<ReduceAttrs>();
  d.infer = [result](const std::vector<TensorType>& in, const ir::AttrMap& attrs,
                     const ir::Device&) -> absl::StatusOr<std::vector<TensorType>> {
    const auto a = AttrsOf<ReduceAttrs>(attrs);
    TALLY_ASSIGN_OR_RETURN(ir::Shape s, ReducedShape(in[0].shape, a.dims.get(), a.keepdim.get()));
    return std::vector<TensorType>{{result(in[0].dtype), s, in[0].device}};
  };
  return d;
}

}  // namespace

void RegisterReduceOps(OpTable& t) {
  auto add = [&t](OpDef d) { AddOp(t, std::move(d)); };
  // Sums of bools and integers accumulate in int64, as torch.sum does.
  add(Reduction(OpId::kReduceSum, [](DType d) { return ir::IsFloating(d) ? d : DType::kInt64; }));
  // max/min of an empty reduction give -inf/+inf (int: the type's limits)
  // instead of failing, so an empty batch needs no host check.
  add(Reduction(OpId::kReduceMax, [](DType d) { return d; }));
  add(Reduction(OpId::kReduceMin, [](DType d) { return d; }));
  add(Reduction(OpId::kReduceAny, [](DType) { return DType::kBool; }));
  add(Reduction(OpId::kReduceAll, [](DType) { return DType::kBool; }));
  {
    OpDef d;
    d.id = OpId::kArgmax;
    d.min_inputs = d.max_inputs = 1;
    d.attrs = SpecsOf<ArgmaxAttrs>();
    d.infer = [](const std::vector<TensorType>& in, const ir::AttrMap& attrs,
                 const ir::Device&) -> absl::StatusOr<std::vector<TensorType>> {
      const auto a = AttrsOf<ArgmaxAttrs>(attrs);
      TALLY_ASSIGN_OR_RETURN(ir::Shape s, ReducedShape(in[0].shape, {a.dim}, a.keepdim.get()));
      return std::vector<TensorType>{{DType::kInt64, s, in[0].device}};
    };
    add(std::move(d));
  }
  {
    OpDef d;
    d.id = OpId::kSoftmax;
    d.min_inputs = d.max_inputs = 1;
    d.attrs = SpecsOf<DimAttrs>();
    d.infer = [](const std::vector<TensorType>& in, const ir::AttrMap& attrs,
                 const ir::Device&) -> absl::StatusOr<std::vector<TensorType>> {
      TALLY_RETURN_IF_ERROR(NormalizeDim(AttrsOf<DimAttrs>(attrs).dim, in[0].rank()).status());
      DType dt = ir::IsFloating(in[0].dtype) ? in[0].dtype : DType::kFloat32;
      return std::vector<TensorType>{{dt, in[0].shape, in[0].device}};
    };
    add(std::move(d));
  }
}

}  // namespace tally::ops
