// Elementwise ops: arithmetic, comparisons, logic, unary math, cast, where.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "ops/op_registry.h"
#include "support/status_macros.h"

namespace tally::ops {
namespace {

using ir::DType;
using ir::TensorType;

// Dtype of true division / float math on `d`: integers and bools become f32.
DType FloatOf(DType d) { return ir::IsFloating(d) ? d : DType::kFloat32; }

OpDef Binary(OpId id, bool commutative, std::function<DType(DType, DType)> result) {
  OpDef d;
  d.id = id;
  d.min_inputs = d.max_inputs = 2;
  d.traits.commutative = commutative;
  d.infer = [result](const std::vector<TensorType>& in, const ir::AttrMap&,
                     const ir::Device&) -> absl::StatusOr<std::vector<TensorType>> {
    TALLY_ASSIGN_OR_RETURN(ir::Shape s, BroadcastShapes(in[0].shape, in[1].shape));
    return std::vector<TensorType>{{result(in[0].dtype, in[1].dtype), s, in[0].device}};
  };
  return d;
}

OpDef Unary(OpId id, std::function<absl::StatusOr<DType>(DType)> result, std::vector<AttrSpec> attrs = {}) {
  OpDef d;
  d.id = id;
  d.min_inputs = d.max_inputs = 1;
  d.attrs = std::move(attrs);
  d.infer = [result](const std::vector<TensorType>& in, const ir::AttrMap&,
                     const ir::Device&) -> absl::StatusOr<std::vector<TensorType>> {
    TALLY_ASSIGN_OR_RETURN(DType dt, result(in[0].dtype));
    return std::vector<TensorType>{{dt, in[0].shape, in[0].device}};
  };
  return d;
}

// Folding(d, f) gives `d` the scalar fold `f` (canonicalize's constant
// folding), so an op's algebra is written beside its definition.
OpDef Folding(OpDef d, std::function<double(const std::vector<double>&)> f) {
  d.fold = [f = std::move(f)](const ir::Node&, const std::vector<double>& x) -> std::optional<double> { return f(x); };
  return d;
}

double Truth(bool b) { return b ? 1 : 0; }

}  // namespace

void RegisterElementwiseOps(OpTable& t) {
  auto add = [&t](OpDef d) { AddOp(t, std::move(d)); };
  auto promote = [](DType a, DType b) {
    // Bool arithmetic is not meaningful; it promotes to i64 like torch.sum.
    DType r = ir::PromoteTypes(a, b);
    return r == DType::kBool ? DType::kInt64 : r;
  };
  auto to_bool = [](DType, DType) { return DType::kBool; };
  using X = const std::vector<double>&;
  add(Folding(Binary(OpId::kAdd, true, promote), [](X x) { return x[0] + x[1]; }));
  add(Folding(Binary(OpId::kSub, false, promote), [](X x) { return x[0] - x[1]; }));
  add(Folding(Binary(OpId::kMul, true, promote), [](X x) { return x[0] * x[1]; }));
  add(Folding(Binary(OpId::kMaximum, true, ir::PromoteTypes), [](X x) { return std::max(x[0], x[1]); }));
  add(Folding(Binary(OpId::kMinimum, true, ir::PromoteTypes), [](X x) { return std::min(x[0], x[1]); }));
  add(Folding(Binary(OpId::kDiv, false, [](DType a, DType b) { return FloatOf(ir::PromoteTypes(a, b)); }),
              [](X x) { return x[0] / x[1]; }));
  add(Binary(OpId::kPow, false, [](DType a, DType b) { return FloatOf(ir::PromoteTypes(a, b)); }));
  {
    // safe_div: num / den, and `zero_division` where den == 0 (TorchMetrics'
    // _safe_divide). Always floating.
    OpDef d = Binary(OpId::kSafeDiv, false, [](DType a, DType b) { return FloatOf(ir::PromoteTypes(a, b)); });
    d.attrs = SpecsOf<SafeDivAttrs>();
    d.fold = [](const ir::Node& n, X x) -> std::optional<double> {
      return x[1] != 0 ? x[0] / x[1] : AttrsOf<SafeDivAttrs>(n).zero_division.get();
    };
    add(std::move(d));
  }
  add(Folding(Binary(OpId::kEq, true, to_bool), [](X x) { return Truth(x[0] == x[1]); }));
  add(Folding(Binary(OpId::kNe, true, to_bool), [](X x) { return Truth(x[0] != x[1]); }));
  add(Folding(Binary(OpId::kLt, false, to_bool), [](X x) { return Truth(x[0] < x[1]); }));
  add(Folding(Binary(OpId::kLe, false, to_bool), [](X x) { return Truth(x[0] <= x[1]); }));
  add(Folding(Binary(OpId::kGt, false, to_bool), [](X x) { return Truth(x[0] > x[1]); }));
  add(Folding(Binary(OpId::kGe, false, to_bool), [](X x) { return Truth(x[0] >= x[1]); }));
  add(Folding(Binary(OpId::kLogicalAnd, true, to_bool), [](X x) { return Truth(x[0] != 0 && x[1] != 0); }));
  add(Folding(Binary(OpId::kLogicalOr, true, to_bool), [](X x) { return Truth(x[0] != 0 || x[1] != 0); }));
  add(Binary(OpId::kLogicalXor, true, to_bool));
  auto same = [](DType d) -> absl::StatusOr<DType> { return d; };
  auto numeric = [](DType d) -> absl::StatusOr<DType> {
    if (d == DType::kBool) return absl::InvalidArgumentError("expects a numeric input, got i1");
    return d;
  };
  auto floating = [](DType d) -> absl::StatusOr<DType> { return FloatOf(d); };
  auto boolean = [](DType) -> absl::StatusOr<DType> { return DType::kBool; };
  add(Folding(Unary(OpId::kNeg, numeric), [](X x) { return -x[0]; }));
  add(Folding(Unary(OpId::kAbs, numeric), [](X x) { return std::abs(x[0]); }));
  add(Folding(Unary(OpId::kExp, floating), [](X x) { return std::exp(x[0]); }));
  add(Folding(Unary(OpId::kLog, floating), [](X x) { return std::log(x[0]); }));
  add(Folding(Unary(OpId::kSqrt, floating), [](X x) { return std::sqrt(x[0]); }));
  add(Folding(Unary(OpId::kAcos, floating), [](X x) { return std::acos(x[0]); }));
  add(Folding(Unary(OpId::kAtan, floating), [](X x) { return std::atan(x[0]); }));
  add(Unary(OpId::kSigmoid, floating));
  add(Unary(OpId::kLogCosh, floating));
  add(Unary(OpId::kIsnan, boolean));
  add(Folding(Unary(OpId::kLogicalNot, boolean), [](X x) { return Truth(x[0] == 0); }));
  add(Unary(OpId::kClamp, same, SpecsOf<ClampAttrs>()));
  {
    OpDef d;
    d.id = OpId::kCast;
    d.min_inputs = d.max_inputs = 1;
    d.attrs = SpecsOf<CastAttrs>();
    d.infer = [](const std::vector<TensorType>& in, const ir::AttrMap& attrs,
                 const ir::Device&) -> absl::StatusOr<std::vector<TensorType>> {
      TALLY_ASSIGN_OR_RETURN(DType dt, ir::ParseDType(AttrsOf<CastAttrs>(attrs).dtype));
      return std::vector<TensorType>{{dt, in[0].shape, in[0].device}};
    };
    add(Folding(std::move(d), [](X x) { return x[0]; }));
  }
  {
    OpDef d;
    d.id = OpId::kWhere;
    d.min_inputs = d.max_inputs = 3;
    d.infer = [](const std::vector<TensorType>& in, const ir::AttrMap&,
                 const ir::Device&) -> absl::StatusOr<std::vector<TensorType>> {
      if (in[0].dtype != DType::kBool) {
        return absl::InvalidArgumentError("condition must be i1");
      }
      TALLY_ASSIGN_OR_RETURN(ir::Shape s, BroadcastShapes(in[0].shape, in[1].shape));
      TALLY_ASSIGN_OR_RETURN(s, BroadcastShapes(s, in[2].shape));
      return std::vector<TensorType>{{ir::PromoteTypes(in[1].dtype, in[2].dtype), s, in[0].device}};
    };
    add(std::move(d));
  }
}

}  // namespace tally::ops
