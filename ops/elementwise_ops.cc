// Elementwise ops: arithmetic, comparisons, logic, unary math, cast, where.
#include "absl/strings/str_cat.h"
#include "support/status_macros.h"
#include "ops/op_registry.h"

namespace tally::ops {
namespace {

using ir::DType;
using ir::TensorType;

// Dtype of true division / float math on `d`: integers and bools become f32.
DType FloatOf(DType d) { return ir::IsFloating(d) ? d : DType::kFloat32; }

OpDef Binary(std::string name, bool commutative,
             std::function<DType(DType, DType)> result) {
  OpDef d;
  d.name = std::move(name);
  d.min_inputs = d.max_inputs = 2;
  d.traits.elementwise = true;
  d.traits.commutative = commutative;
  d.infer = [result](const std::vector<TensorType>& in, const ir::AttrMap&,
                     const ir::Device&) -> absl::StatusOr<std::vector<TensorType>> {
    TALLY_ASSIGN_OR_RETURN(ir::Shape s, BroadcastShapes(in[0].shape, in[1].shape));
    return std::vector<TensorType>{{result(in[0].dtype, in[1].dtype), s, in[0].device}};
  };
  return d;
}

OpDef Unary(std::string name, std::function<absl::StatusOr<DType>(DType)> result,
            std::vector<AttrSpec> attrs = {}) {
  OpDef d;
  d.name = std::move(name);
  d.min_inputs = d.max_inputs = 1;
  d.attrs = std::move(attrs);
  d.traits.elementwise = true;
  d.infer = [result](const std::vector<TensorType>& in, const ir::AttrMap&,
                     const ir::Device&) -> absl::StatusOr<std::vector<TensorType>> {
    TALLY_ASSIGN_OR_RETURN(DType dt, result(in[0].dtype));
    return std::vector<TensorType>{{dt, in[0].shape, in[0].device}};
  };
  return d;
}

}  // namespace

void RegisterElementwiseOps(OpTable& t) {
  auto add = [&t](OpDef d) { AddOp(t, std::move(d)); };
  auto promote = [](DType a, DType b) {
    // Bool arithmetic is not meaningful; it promotes to i64 like torch.sum.
    DType r = ir::PromoteTypes(a, b);
    return r == DType::kBool ? DType::kInt64 : r;
  };
  auto to_bool = [](DType, DType) { return DType::kBool; };
  add(Binary("add", true, promote));
  add(Binary("sub", false, promote));
  add(Binary("mul", true, promote));
  add(Binary("maximum", true, ir::PromoteTypes));
  add(Binary("minimum", true, ir::PromoteTypes));
  add(Binary("div", false, [](DType a, DType b) { return FloatOf(ir::PromoteTypes(a, b)); }));
  add(Binary("pow", false, [](DType a, DType b) { return FloatOf(ir::PromoteTypes(a, b)); }));
  {
    // safe_div: num / den, and `zero_division` where den == 0 (TorchMetrics'
    // _safe_divide). Always floating.
    OpDef d = Binary("safe_div", false,
                     [](DType a, DType b) { return FloatOf(ir::PromoteTypes(a, b)); });
    d.attrs = {{"zero_division", AttrKind::kDouble, false}};
    add(std::move(d));
  }
  for (const char* n : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    add(Binary(n, std::string(n) == "eq" || std::string(n) == "ne", to_bool));
  }
  for (const char* n : {"logical_and", "logical_or", "logical_xor"}) {
    add(Binary(n, true, to_bool));
  }
  auto same = [](DType d) -> absl::StatusOr<DType> { return d; };
  auto numeric = [](DType d) -> absl::StatusOr<DType> {
    if (d == DType::kBool) return absl::InvalidArgumentError("expects a numeric input, got i1");
    return d;
  };
  auto floating = [](DType d) -> absl::StatusOr<DType> { return FloatOf(d); };
  auto boolean = [](DType) -> absl::StatusOr<DType> { return DType::kBool; };
  add(Unary("neg", numeric));
  add(Unary("abs", numeric));
  for (const char* n : {"exp", "log", "sqrt", "sigmoid", "log_cosh"}) {
    add(Unary(n, floating));
  }
  add(Unary("isnan", boolean));
  add(Unary("logical_not", boolean));
  add(Unary("clamp", same, {{"min", AttrKind::kDouble, false}, {"max", AttrKind::kDouble, false}}));
  {
    OpDef d;
    d.name = "cast";
    d.min_inputs = d.max_inputs = 1;
    d.attrs = {{"dtype", AttrKind::kString}};
    d.traits.elementwise = true;
    d.infer = [](const std::vector<TensorType>& in, const ir::AttrMap& attrs,
                 const ir::Device&) -> absl::StatusOr<std::vector<TensorType>> {
      TALLY_ASSIGN_OR_RETURN(DType dt, ir::ParseDType(std::get<std::string>(attrs.at("dtype"))));
      return std::vector<TensorType>{{dt, in[0].shape, in[0].device}};
    };
    add(std::move(d));
  }
  {
    OpDef d;
    d.name = "where";
    d.min_inputs = d.max_inputs = 3;
    d.traits.elementwise = true;
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
