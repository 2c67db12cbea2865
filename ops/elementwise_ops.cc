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

OpDef Binary(std::string name, bool commutative, std::function<DType(DType, DType)> result) {
  OpDef d;
  d.name = std::move(name);
  d.min_inputs = d.max_inputs = 2;
  d.traits.commutative = commutative;
  d.infer = [result](const std::vector<TensorType>& in, const ir::AttrMap&,
                     const ir::Device&) -> absl::StatusOr<std::vector<TensorType>> {
    TALLY_ASSIGN_OR_RETURN(ir::Shape s, BroadcastShapes(in[0].shape, in[1].shape));
    return std::vector<TensorType>{{result(in[0].dtype, in[1].dtype), s, in[0].device}};
  };
  return d;
}

OpDef Unary(std::string name, std::function<absl::StatusOr<DType>(DType)> result, std::vector<AttrSpec> attrs = {}) {
  OpDef d;
  d.name = std::move(name);
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
  add(Folding(Binary("add", true, promote), [](X x) { return x[0] + x[1]; }));
  add(Folding(Binary("sub", false, promote), [](X x) { return x[0] - x[1]; }));
  add(Folding(Binary("mul", true, promote), [](X x) { return x[0] * x[1]; }));
  add(Folding(Binary("maximum", true, ir::PromoteTypes), [](X x) { return std::max(x[0], x[1]); }));
  add(Folding(Binary("minimum", true, ir::PromoteTypes), [](X x) { return std::min(x[0], x[1]); }));
  add(Folding(Binary("div", false, [](DType a, DType b) { return FloatOf(ir::PromoteTypes(a, b)); }),
              [](X x) { return x[0] / x[1]; }));
  add(Binary("pow", false, [](DType a, DType b) { return FloatOf(ir::PromoteTypes(a, b)); }));
  {
    // safe_div: num / den, and `zero_division` where den == 0 (TorchMetrics'
    // _safe_divide). Always floating.
    OpDef d = Binary("safe_div", false, [](DType a, DType b) { return FloatOf(ir::PromoteTypes(a, b)); });
    d.attrs = SpecsOf<SafeDivAttrs>();
    d.fold = [](const ir::Node& n, X x) -> std::optional<double> {
      return x[1] != 0 ? x[0] / x[1] : AttrsOf<SafeDivAttrs>(n).zero_division.get();
    };
    add(std::move(d));
  }
  add(Folding(Binary("eq", true, to_bool), [](X x) { return Truth(x[0] == x[1]); }));
  add(Folding(Binary("ne", true, to_bool), [](X x) { return Truth(x[0] != x[1]); }));
  add(Folding(Binary("lt", false, to_bool), [](X x) { return Truth(x[0] < x[1]); }));
  add(Folding(Binary("le", false, to_bool), [](X x) { return Truth(x[0] <= x[1]); }));
  add(Folding(Binary("gt", false, to_bool), [](X x) { return Truth(x[0] > x[1]); }));
  add(Folding(Binary("ge", false, to_bool), [](X x) { return Truth(x[0] >= x[1]); }));
  add(Folding(Binary("logical_and", true, to_bool), [](X x) { return Truth(x[0] != 0 && x[1] != 0); }));
  add(Folding(Binary("logical_or", true, to_bool), [](X x) { return Truth(x[0] != 0 || x[1] != 0); }));
  add(Binary("logical_xor", true, to_bool));
  auto same = [](DType d) -> absl::StatusOr<DType> { return d; };
  auto numeric = [](DType d) -> absl::StatusOr<DType> {
    if (d == DType::kBool) return absl::InvalidArgumentError("expects a numeric input, got i1");
    return d;
  };
  auto floating = [](DType d) -> absl::StatusOr<DType> { return FloatOf(d); };
  auto boolean = [](DType) -> absl::StatusOr<DType> { return DType::kBool; };
  add(Folding(Unary("neg", numeric), [](X x) { return -x[0]; }));
  add(Folding(Unary("abs", numeric), [](X x) { return std::abs(x[0]); }));
  add(Folding(Unary("exp", floating), [](X x) { return std::exp(x[0]); }));
  add(Folding(Unary("log", floating), [](X x) { return std::log(x[0]); }));
  add(Folding(Unary("sqrt", floating), [](X x) { return std::sqrt(x[0]); }));
  add(Unary("sigmoid", floating));
  add(Unary("log_cosh", floating));
  add(Unary("isnan", boolean));
  add(Folding(Unary("logical_not", boolean), [](X x) { return Truth(x[0] == 0); }));
  add(Unary("clamp", same, SpecsOf<ClampAttrs>()));
  {
    OpDef d;
    d.name = "cast";
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
    d.name = "where";
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
