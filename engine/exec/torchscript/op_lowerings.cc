// The lowering table: one entry per op kind, each mirroring the op's eager
// kernel in ops/kernels.cc operation for operation, so that both backends
// run the same ATen kernels in the same order and agree bit for bit.
#include <torch/csrc/jit/runtime/operator.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/algorithm/container.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/exec/torchscript/lowering.h"
#include "engine/ir/aten_types.h"
#include "ops/attrs.h"
#include "ops/fused/class_overlap.h"
#include "ops/fused/coco_eval.h"
#include "ops/fused/depthwise_conv.h"
#include "ops/fused/edit_distance.h"
#include "ops/fused/expected_mutual_info.h"
#include "ops/fused/lcs_length.h"
#include "ops/fused/max_assignment.h"
#include "ops/fused/ngram_matches.h"
#include "ops/fused/panoptic_match.h"
#include "ops/fused/replica_histogram.h"
#include "ops/fused/script.h"
#include "ops/fused/sdr.h"
#include "ops/fused/signal_ratio.h"
#include "ops/fused/ter_edits.h"
#include "ops/fused/token_nll.h"
#include "ops/fused/trace_sqrt.h"
#include "ops/op_registry.h"
#include "support/torch_status.h"

namespace tally::exec::torchscript {
namespace {

namespace jit = torch::jit;
using jit::NamedValue;
using jit::Value;
using ops::AttrsOf;
using Values = std::vector<Value*>;
using Result = absl::StatusOr<Values>;

c10::Symbol A(const char* name) { return c10::Symbol::aten(name); }

c10::ScalarType OutType(const ir::Node& n, int i = 0) { return ir::ToScalarType(n.output(i)->type().dtype); }
ir::DType InDType(const ir::Node& n, int i) { return n.input(i)->type().dtype; }
c10::ScalarType InType(const ir::Node& n, int i) { return ir::ToScalarType(InDType(n, i)); }
int64_t InRank(const ir::Node& n, int i) { return n.input(i)->type().rank(); }

Value* DeviceOfValue(LowerCtx& c, Value* x) { return c.Call(c10::prim::device, {x}); }
Value* Size(LowerCtx& c, Value* x, int64_t d) { return c.Call(A("size"), {x, d}); }
Value* IntList(LowerCtx& c, const Values& items) {
  return c.graph().insertNode(c.graph().createList(c10::IntType::get(), items))->output();
}
// Sizes of `x` as an int[] value.
Value* Sizes(LowerCtx& c, Value* x) { return c.Call(A("size"), {x}); }
// Zeros/full with an explicit dtype on `device`.
Value* Full(LowerCtx& c, Value* sizes, const c10::IValue& fill, c10::ScalarType dtype, Value* device) {
  return c.Call(A("full"), {sizes, NamedValue(fill)}, {{"dtype", dtype}, {"device", device}});
}
Value* Zeros(LowerCtx& c, Value* sizes, c10::ScalarType dtype, Value* device) {
  return c.Call(A("zeros"), {sizes}, {{"dtype", dtype}, {"device", device}});
}
Value* ScalarTensor(LowerCtx& c, const NamedValue& v, c10::ScalarType dtype, Value* device) {
  return c.Call(A("scalar_tensor"), {v}, {{"dtype", dtype}, {"device", device}});
}
Value* Or(LowerCtx& c, Value* a, Value* b) { return a == nullptr ? b : c.Call(A("__or__"), {a, b}); }

// ---- Elementwise -----------------------------------------------------------

// Operands of arithmetic are brought to the result dtype first (kernels.cc As).
Result Arith(LowerCtx& c, const ir::Node& n, const Values& in, const char* op) {
  c10::ScalarType s = OutType(n);
  return Values{c.Call(A(op), {c.As(in[0], InDType(n, 0), s), c.As(in[1], InDType(n, 1), s)})};
}
Result Add(LowerCtx& c, const ir::Node& n, const Values& in) { return Arith(c, n, in, "add"); }
Result Sub(LowerCtx& c, const ir::Node& n, const Values& in) { return Arith(c, n, in, "sub"); }
Result Mul(LowerCtx& c, const ir::Node& n, const Values& in) { return Arith(c, n, in, "mul"); }
Result Div(LowerCtx& c, const ir::Node& n, const Values& in) { return Arith(c, n, in, "div"); }
Result Pow(LowerCtx& c, const ir::Node& n, const Values& in) { return Arith(c, n, in, "pow"); }
Result Maximum(LowerCtx& c, const ir::Node& n, const Values& in) { return Arith(c, n, in, "maximum"); }
Result Minimum(LowerCtx& c, const ir::Node& n, const Values& in) { return Arith(c, n, in, "minimum"); }

Result SafeDiv(LowerCtx& c, const ir::Node& n, const Values& in) {
  c10::ScalarType s = OutType(n);
  Value* a = c.As(in[0], InDType(n, 0), s);
  Value* b = c.As(in[1], InDType(n, 1), s);
  Value* nonzero = c.Call(A("ne"), {b, 0});
  Value* q = c.Call(A("div"), {a, b});
  Value* zd = ScalarTensor(c, AttrsOf<ops::SafeDivAttrs>(n).zero_division.get(), s, DeviceOfValue(c, a));
  return Values{c.Call(A("where"), {nonzero, q, zd})};
}

// Comparisons compare in the promoted dtype of their operands.
Result Compare(LowerCtx& c, const ir::Node& n, const Values& in, const char* op) {
  c10::ScalarType s = c10::promoteTypes(InType(n, 0), InType(n, 1));
  return Values{c.Call(A(op), {c.As(in[0], InDType(n, 0), s), c.As(in[1], InDType(n, 1), s)})};
}
Result Eq(LowerCtx& c, const ir::Node& n, const Values& in) { return Compare(c, n, in, "eq"); }
Result Ne(LowerCtx& c, const ir::Node& n, const Values& in) { return Compare(c, n, in, "ne"); }
Result Lt(LowerCtx& c, const ir::Node& n, const Values& in) { return Compare(c, n, in, "lt"); }
Result Le(LowerCtx& c, const ir::Node& n, const Values& in) { return Compare(c, n, in, "le"); }
Result Gt(LowerCtx& c, const ir::Node& n, const Values& in) { return Compare(c, n, in, "gt"); }
Result Ge(LowerCtx& c, const ir::Node& n, const Values& in) { return Compare(c, n, in, "ge"); }

Result Direct(LowerCtx& c, const Values& in, const char* op) {
  std::vector<NamedValue> args(in.begin(), in.end());
  return Values{c.Call(A(op), std::move(args))};
}
Result LogicalAnd(LowerCtx& c, const ir::Node&, const Values& in) { return Direct(c, in, "logical_and"); }
Result LogicalOr(LowerCtx& c, const ir::Node&, const Values& in) { return Direct(c, in, "logical_or"); }
Result LogicalXor(LowerCtx& c, const ir::Node&, const Values& in) { return Direct(c, in, "logical_xor"); }
Result LogicalNot(LowerCtx& c, const ir::Node&, const Values& in) { return Direct(c, in, "logical_not"); }
Result IsNan(LowerCtx& c, const ir::Node&, const Values& in) { return Direct(c, in, "isnan"); }
Result Neg(LowerCtx& c, const ir::Node&, const Values& in) { return Direct(c, in, "neg"); }
Result Abs(LowerCtx& c, const ir::Node&, const Values& in) { return Direct(c, in, "abs"); }

Result FloatUnary(LowerCtx& c, const ir::Node& n, const Values& in, const char* op) {
  return Values{c.Call(A(op), {c.As(in[0], InDType(n, 0), OutType(n))})};
}
Result Exp(LowerCtx& c, const ir::Node& n, const Values& in) { return FloatUnary(c, n, in, "exp"); }
Result Log(LowerCtx& c, const ir::Node& n, const Values& in) { return FloatUnary(c, n, in, "log"); }
Result Sqrt(LowerCtx& c, const ir::Node& n, const Values& in) { return FloatUnary(c, n, in, "sqrt"); }
Result Acos(LowerCtx& c, const ir::Node& n, const Values& in) { return FloatUnary(c, n, in, "acos"); }
Result Atan(LowerCtx& c, const ir::Node& n, const Values& in) { return FloatUnary(c, n, in, "atan"); }
Result Sigmoid(LowerCtx& c, const ir::Node& n, const Values& in) { return FloatUnary(c, n, in, "sigmoid"); }
// log(cosh(x)) = |x| + log1p(exp(-2|x|)) - log(2), as the kernel spells it:
// `-2 * abs(x)` is abs(x).mul(-2) and `- log(2)` a Scalar subtraction.
Result LogCosh(LowerCtx& c, const ir::Node& n, const Values& in) {
  Value* x = c.As(in[0], InDType(n, 0), OutType(n));
  Value* abs1 = c.Call(A("abs"), {x});
  Value* abs2 = c.Call(A("abs"), {x});
  Value* e = c.Call(A("exp"), {c.Call(A("mul"), {abs2, -2})});
  Value* sum = c.Call(A("add"), {abs1, c.Call(A("log1p"), {e})});
  return Values{c.Call(A("sub"), {sum, std::log(2.0)})};
}

Result Clamp(LowerCtx& c, const ir::Node& n, const Values& in) {
  // Integer inputs keep their dtype: their bounds are the integers inside
  // [min, max] (kernels.cc Clamp).
  const bool integral = !c10::isFloatingType(InType(n, 0));
  const auto attrs = AttrsOf<ops::ClampAttrs>(n);
  auto bound = [&](const ops::Opt<double>& b, bool upper) -> c10::IValue {
    if (!b.has_value()) return c10::IValue();
    double v = b.get();
    if (!integral) return c10::IValue(v);
    if (std::isinf(v) && (v > 0) == upper) return c10::IValue();
    v = upper ? std::floor(v) : std::ceil(v);
    v = std::min(std::max(v, -9.2e18), 9.2e18);
    return c10::IValue(static_cast<int64_t>(v));
  };
  c10::IValue lo = bound(attrs.min, false), hi = bound(attrs.max, true);
  Value* r = c.Call(A("clamp"), {in[0], c.Const(lo), c.Const(hi)});
  return Values{c.As(r, InDType(n, 0), OutType(n))};
}

Result Cast(LowerCtx& c, const ir::Node& n, const Values& in) { return Values{c.As(in[0], InDType(n, 0), OutType(n))}; }

Result Where(LowerCtx& c, const ir::Node& n, const Values& in) {
  c10::ScalarType s = OutType(n);
  return Values{c.Call(A("where"), {in[0], c.As(in[1], InDType(n, 1), s), c.As(in[2], InDType(n, 2), s)})};
}

// ---- Reductions ------------------------------------------------------------

std::vector<int64_t> ReduceDims(const ir::Node& n, int64_t rank) {
  std::vector<int64_t> dims = AttrsOf<ops::ReduceAttrs>(n).dims.get();
  if (dims.empty())
    for (int64_t i = 0; i < rank; ++i) dims.push_back(i);
  for (auto& d : dims)
    if (d < 0) d += rank;
  return dims;
}

Result ReduceSum(LowerCtx& c, const ir::Node& n, const Values& in) {
  return Values{c.Call(A("sum"), {in[0], ReduceDims(n, InRank(n, 0)), AttrsOf<ops::ReduceAttrs>(n).keepdim.get()},
                       {{"dtype", OutType(n)}})};
}

// max/min of an empty reduction is the reducer's identity (kernels.cc
// ReduceExtreme); whether the reduced dims are empty is a size question, so
// a symbolic dim becomes a prim::If on sizes.
Result ReduceExtreme(LowerCtx& c, const ir::Node& n, const Values& in, bool max) {
  Value* x = in[0];
  const ir::TensorType& t = n.input(0)->type();
  if (t.rank() == 0) return Values{c.Call(A("clone"), {x})};
  std::vector<int64_t> dims = ReduceDims(n, t.rank());
  const bool keepdim = AttrsOf<ops::ReduceAttrs>(n).keepdim.get();
  bool surely_empty = false;
  std::vector<int64_t> symbolic;
  for (int64_t d : dims) {
    if (t.shape[d].is_symbolic())
      symbolic.push_back(d);
    else if (t.shape[d].size == 0)
      surely_empty = true;
  }
  c10::ScalarType s = ir::ToScalarType(t.dtype);
  c10::IValue fill;
  if (c10::isFloatingType(s))
    fill = max ? -INFINITY : INFINITY;
  else
    fill = max ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
  if (s == c10::kInt) {
    fill = static_cast<int64_t>(max ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max());
  }
  auto identity = [&]() -> Value* {
    Values sizes;
    for (int64_t i = 0; i < t.rank(); ++i) {
      bool reduced = std::find(dims.begin(), dims.end(), i) != dims.end();
      if (!reduced)
        sizes.push_back(Size(c, x, i));
      else if (keepdim)
        sizes.push_back(c.Const(int64_t{1}));
    }
    return Full(c, IntList(c, sizes), fill, s, DeviceOfValue(c, x));
  };
  auto reduce = [&]() -> Value* { return c.Call(A(max ? "amax" : "amin"), {x, dims, keepdim}); };
  if (surely_empty) return Values{identity()};
  if (symbolic.empty()) return Values{reduce()};
  Value* empty = nullptr;
  for (int64_t d : symbolic) empty = Or(c, empty, c.Call(A("eq"), {Size(c, x, d), 0}));
  return Values{c.If(empty, identity, reduce)};
}
Result ReduceMax(LowerCtx& c, const ir::Node& n, const Values& in) { return ReduceExtreme(c, n, in, true); }
Result ReduceMin(LowerCtx& c, const ir::Node& n, const Values& in) { return ReduceExtreme(c, n, in, false); }

Result ReduceBool(LowerCtx& c, const ir::Node& n, const Values& in, bool any) {
  Value* x = c.As(in[0], InDType(n, 0), c10::kBool);
  int64_t rank = InRank(n, 0);
  if (rank == 0) return Values{c.Call(A("clone"), {x})};
  std::vector<int64_t> dims = ReduceDims(n, rank);
  std::sort(dims.rbegin(), dims.rend());
  const bool keepdim = AttrsOf<ops::ReduceAttrs>(n).keepdim.get();
  for (int64_t d : dims) x = c.Call(A(any ? "any" : "all"), {x, d, keepdim});
  return Values{x};
}
Result ReduceAny(LowerCtx& c, const ir::Node& n, const Values& in) { return ReduceBool(c, n, in, true); }
Result ReduceAll(LowerCtx& c, const ir::Node& n, const Values& in) { return ReduceBool(c, n, in, false); }

Result Argmax(LowerCtx& c, const ir::Node& n, const Values& in) {
  const auto a = AttrsOf<ops::ArgmaxAttrs>(n);
  return Values{c.Call(A("argmax"), {in[0], a.dim, a.keepdim.get()})};
}
Result Softmax(LowerCtx& c, const ir::Node& n, const Values& in) {
  return Values{c.Call(A("softmax"), {in[0], AttrsOf<ops::DimAttrs>(n).dim, OutType(n)})};
}

// ---- Creation and shape ----------------------------------------------------

// DenseFloat64 is a float64 tensor of `values`, exactly. aten::tensor fills
// a float list in the default dtype (float32) before casting, which rounds:
// each finite value goes as m 2^e1 2^e2 (m its 53-bit integer significand,
// the exponent halved so that subnormals round once, as a literal does),
// infinities and NaN as a float list added to it.
Value* DenseFloat64(LowerCtx& c, const std::vector<double>& values, Value* device) {
  std::vector<int64_t> significand, e1, e2;
  std::vector<double> special;
  for (double v : values) {
    int e = 0;
    const double f = std::isfinite(v) ? std::frexp(v, &e) : 0.0;
    significand.push_back(static_cast<int64_t>(std::ldexp(f, 53)));
    e1.push_back((e - 53) / 2);
    e2.push_back((e - 53) - (e - 53) / 2);
    special.push_back(std::isfinite(v) ? 0.0 : v);
  }
  auto f64 = [&](const c10::IValue& list, c10::ScalarType from) {
    return c.Call(A("to"), {c.Call(A("tensor"), {c.Const(list)}, {{"dtype", from}, {"device", device}}), c10::kDouble});
  };
  auto pow2 = [&](const std::vector<int64_t>& e) { return c.Call(A("pow"), {2.0, f64(e, c10::kLong)}); };
  Value* t = c.Call(A("mul"), {c.Call(A("mul"), {f64(significand, c10::kLong), pow2(e1)}), pow2(e2)});
  if (absl::c_any_of(values, [](double v) { return !std::isfinite(v); })) {
    t = c.Call(A("add"), {t, f64(special, c10::kDouble)});
  }
  return t;
}

Result Constant(LowerCtx& c, const ir::Node& n, const Values&) {
  const auto a = AttrsOf<ops::ConstantAttrs>(n);
  if (!a.dense()) return Values{ScalarTensor(c, a.value.get(), OutType(n), c.DeviceOf(n))};
  const std::vector<double>& values = a.values.get();
  const bool exact_in_f32 = absl::c_all_of(values, [](double v) { return !std::isfinite(v) || double(float(v)) == v; });
  Value* t = nullptr;
  if (!ir::IsFloating(n.output(0)->type().dtype) || exact_in_f32) {
    t = c.Call(A("tensor"), {c.Const(values)}, {{"dtype", OutType(n)}, {"device", c.DeviceOf(n)}});
  } else {
    t = DenseFloat64(c, values, c.DeviceOf(n));
    t = c.As(t, ir::DType::kFloat64, OutType(n));
  }
  return Values{c.Call(A("reshape"), {t, a.Sizes()})};
}
Result FullOp(LowerCtx& c, const ir::Node& n, const Values&) {
  const auto a = AttrsOf<ops::FullAttrs>(n);
  return Values{Full(c, c.Const(a.shape), a.value, OutType(n), c.DeviceOf(n))};
}
Result FullLike(LowerCtx& c, const ir::Node& n, const Values& in) {
  return Values{Full(c, Sizes(c, in[0]), AttrsOf<ops::FullLikeAttrs>(n).value, OutType(n), DeviceOfValue(c, in[0]))};
}
Result Arange(LowerCtx& c, const ir::Node& n, const Values&) {
  return Values{
      c.Call(A("arange"), {AttrsOf<ops::ArangeAttrs>(n).n}, {{"dtype", OutType(n)}, {"device", c.DeviceOf(n)}})};
}
Result Linspace(LowerCtx& c, const ir::Node& n, const Values&) {
  const auto a = AttrsOf<ops::LinspaceAttrs>(n);
  return Values{c.Call(A("linspace"), {a.start, a.end, a.steps}, {{"dtype", OutType(n)}, {"device", c.DeviceOf(n)}})};
}
Result SizeOp(LowerCtx& c, const ir::Node& n, const Values& in) {
  return Values{ScalarTensor(c, Size(c, in[0], AttrsOf<ops::DimAttrs>(n).dim), c10::kLong, DeviceOfValue(c, in[0]))};
}
Result Transfer(LowerCtx& c, const ir::Node& n, const Values& in) {
  return Values{c.Call(A("to"), {in[0], c.DeviceOf(n)})};
}
Result Reshape(LowerCtx& c, const ir::Node& n, const Values& in) {
  return Values{c.Call(A("reshape"), {in[0], AttrsOf<ops::ReshapeAttrs>(n).shape})};
}
Result Flatten(LowerCtx& c, const ir::Node&, const Values& in) {
  return Values{c.Call(A("reshape"), {in[0], std::vector<int64_t>{-1}})};
}
Result Unsqueeze(LowerCtx& c, const ir::Node& n, const Values& in) {
  return Values{c.Call(A("unsqueeze"), {in[0], AttrsOf<ops::DimAttrs>(n).dim})};
}
Result Squeeze(LowerCtx& c, const ir::Node& n, const Values& in) {
  return Values{c.Call(A("squeeze"), {in[0], AttrsOf<ops::DimAttrs>(n).dim})};
}
Result Select(LowerCtx& c, const ir::Node& n, const Values& in) {
  const auto a = AttrsOf<ops::SelectAttrs>(n);
  return Values{c.Call(A("select"), {in[0], a.dim, a.index})};
}
Result Transpose(LowerCtx& c, const ir::Node& n, const Values& in) {
  const auto a = AttrsOf<ops::TransposeAttrs>(n);
  return Values{c.Call(A("transpose"), {in[0], a.dim0, a.dim1})};
}

// Out-of-range values give an all-false row.
Result OneHot(LowerCtx& c, const ir::Node& n, const Values& in) {
  Value* classes = c.Call(A("arange"), {AttrsOf<ops::OneHotAttrs>(n).num_classes},
                          {{"dtype", InType(n, 0)}, {"device", DeviceOfValue(c, in[0])}});
  return Values{c.Call(A("eq"), {c.Call(A("unsqueeze"), {in[0], -1}), classes})};
}

Result TopkMask(LowerCtx& c, const ir::Node& n, const Values& in) {
  Value* topk = c.Call(A("topk"), {in[0], AttrsOf<ops::TopkMaskAttrs>(n).k, -1, true, false});
  Value* idx = c.Unpack(topk, 2)[1];
  Value* zeros = Zeros(c, Sizes(c, in[0]), c10::kBool, DeviceOfValue(c, in[0]));
  return Values{c.Call(A("scatter"), {zeros, -1, idx, 1})};  // 1 == true in a bool tensor
}

// Indices outside [0, size) are dropped; an empty batch adds nothing (and
// meta's index_add rejects it, hence the size branch).
Result Histogram(LowerCtx& c, const ir::Node& n, const Values& in) {
  const int64_t size = AttrsOf<ops::HistogramAttrs>(n).size;
  const ir::TensorType& t = n.input(0)->type();
  c10::ScalarType s = OutType(n);
  Value* idx = c.As(in[0], t.dtype, c10::kLong);
  Value* device = DeviceOfValue(c, idx);
  Value* valid = c.Call(A("logical_and"), {c.Call(A("ge"), {idx, 0}), c.Call(A("lt"), {idx, size})});
  Value* w = n.inputs().size() > 1 ? c.As(in[1], InDType(n, 1), s) : c.Call(A("ones_like"), {idx}, {{"dtype", s}});
  auto empty_result = [&]() -> Value* { return Zeros(c, c.Const(std::vector<int64_t>{size}), s, device); };
  auto counted = [&]() -> Value* {
    Value* wz = c.Call(A("where"), {valid, w, Zeros(c, c.Const(std::vector<int64_t>{}), s, device)});
    Value* iz = c.Call(A("where"), {valid, idx, Zeros(c, c.Const(std::vector<int64_t>{}), c10::kLong, device)});
    return c.Call(A("index_add"), {empty_result(), 0, iz, wz});
  };
  bool symbolic = false, fixed_empty = false;
  for (const auto& d : t.shape) {
    symbolic |= d.is_symbolic();
    fixed_empty |= !d.is_symbolic() && d.size == 0;
  }
  if (fixed_empty) return Values{empty_result()};
  if (!symbolic) return Values{counted()};
  Value* is_empty = c.Call(A("eq"), {c.Call(A("numel"), {idx}), 0});
  return Values{c.If(is_empty, empty_result, counted)};
}

// replica_histogram (ops/fused/replica_histogram.h), unchunked: the same
// splitmix64 arithmetic on int64 tensors (wrapping; a logical shift is the
// arithmetic one masked), so the draws equal the eager kernels'.
Value* Srl(LowerCtx& c, Value* z, int s) {
  return c.Call(A("bitwise_and"),
                {c.Call(A("bitwise_right_shift"), {z, int64_t{s}}), static_cast<int64_t>(~uint64_t{0} >> s)});
}
Value* Mix(LowerCtx& c, Value* z) {
  z = c.Call(A("mul"), {c.Call(A("bitwise_xor"), {z, Srl(c, z, 30)}), static_cast<int64_t>(ops::fused::kMixMul1)});
  z = c.Call(A("mul"), {c.Call(A("bitwise_xor"), {z, Srl(c, z, 27)}), static_cast<int64_t>(ops::fused::kMixMul2)});
  return c.Call(A("bitwise_xor"), {z, Srl(c, z, 31)});
}
Result ReplicaHistogram(LowerCtx& c, const ir::Node& n, const Values& in) {
  const auto a = AttrsOf<ops::ReplicaHistogramAttrs>(n);
  const int64_t size = a.size, reps = a.replicas, block = a.block;
  c10::ScalarType s = OutType(n);
  Value* idx = c.As(in[0], InDType(n, 0), c10::kLong);
  Value* key = c.As(in[1], InDType(n, 1), c10::kLong);
  Value* device = DeviceOfValue(c, idx);
  Value* zero_s = Zeros(c, c.Const(std::vector<int64_t>{}), s, device);
  Value* zero_l = Zeros(c, c.Const(std::vector<int64_t>{}), c10::kLong, device);
  const bool grouped = a.num_groups.has_value();
  const int64_t num_groups = a.num_groups.get();
  const size_t operands = n.inputs().size() - (grouped ? 1 : 0);
  Value* out = Zeros(c, c.Const(std::vector<int64_t>{(grouped ? num_groups : 1) * reps * size}), s, device);
  Value* w = operands > 2 ? c.As(in[2], InDType(n, 2), s) : nullptr;
  // Each element's row: key repeated `block` times.
  auto per_element = [&](Value* x, std::vector<int64_t> tail) {
    if (block == 1) return x;
    std::vector<int64_t> expanded = {-1, block}, flat = {-1};
    expanded.insert(expanded.end(), tail.begin(), tail.end());
    flat.insert(flat.end(), tail.begin(), tail.end());
    return c.Call(A("reshape"), {c.Call(A("expand"), {c.Call(A("unsqueeze"), {x, 1}), expanded}), flat});
  };
  Value* in_range = c.Call(A("logical_and"), {c.Call(A("ge"), {idx, 0}), c.Call(A("lt"), {idx, size})});
  if (a.mode == "groups") {
    Value* g = per_element(key, {});
    Value* valid = c.Call(A("logical_and"),
                          {in_range, c.Call(A("logical_and"), {c.Call(A("ge"), {g, 0}), c.Call(A("lt"), {g, reps})})});
    Value* flat = c.Call(A("where"), {valid, c.Call(A("add"), {c.Call(A("mul"), {g, size}), idx}), zero_l});
    Value* ones = c.Call(A("ones_like"), {idx}, {{"dtype", s}});
    return Values{c.Call(A("index_add"), {out, 0, flat, c.Call(A("where"), {valid, w ? w : ones, zero_s})})};
  }
  const auto seed_hash = static_cast<int64_t>(ops::fused::SeedHash(static_cast<uint64_t>(a.seed)));
  Value* h = Mix(c, c.Call(A("bitwise_xor"), {key, seed_hash}));
  Value* steps =
      c.Call(A("mul"), {c.Call(A("add"), {c.Call(A("arange"), {reps}, {{"dtype", c10::kLong}, {"device", device}}), 1}),
                        static_cast<int64_t>(ops::fused::kGolden)});
  Value* z = Mix(c, c.Call(A("add"), {c.Call(A("unsqueeze"), {h, -1}), steps}));
  Value* u = c.Call(A("mul"), {c.Call(A("to"), {Srl(c, z, 11), c10::kDouble}), 1.0 / 9007199254740992.0});
  const auto& cdf = ops::fused::PoissonCdf();
  Value* table = c.Call(A("tensor"), {c.Const(std::vector<double>(cdf.begin(), cdf.end()))},
                        {{"dtype", c10::kDouble}, {"device", device}});
  Value* m = c.Call(A("bucketize"), {u, table}, {{"out_int32", false}, {"right", true}});
  m = c.Call(A("to"), {per_element(m, {reps}), s});
  if (w) m = c.Call(A("mul"), {m, c.Call(A("unsqueeze"), {w, 1})});
  Value* offsets = c.Call(A("mul"), {c.Call(A("arange"), {reps}, {{"dtype", c10::kLong}, {"device", device}}), size});
  Value* cell = c.Call(A("add"), {c.Call(A("unsqueeze"), {idx, 1}), offsets});
  if (grouped) {
    // Each element's row's group: its slab of reps * size cells.
    Value* g = per_element(c.As(in[n.inputs().size() - 1], InDType(n, n.inputs().size() - 1), c10::kLong), {});
    in_range =
        c.Call(A("logical_and"),
               {in_range, c.Call(A("logical_and"), {c.Call(A("ge"), {g, 0}), c.Call(A("lt"), {g, num_groups})})});
    cell = c.Call(A("add"), {cell, c.Call(A("unsqueeze"), {c.Call(A("mul"), {g, reps * size}), 1})});
  }
  Value* valid = c.Call(A("unsqueeze"), {in_range, 1});
  Value* flat = c.Call(A("where"), {valid, cell, zero_l});
  Value* wz = c.Call(A("where"), {valid, m, zero_s});
  Value* r = c.Call(A("index_add"), {out, 0, c.Call(A("reshape"), {flat, std::vector<int64_t>{-1}}),
                                     c.Call(A("reshape"), {wz, std::vector<int64_t>{-1}})});
  if (grouped) r = c.Call(A("reshape"), {r, std::vector<int64_t>{num_groups, reps * size}});
  return Values{r};
}

Result SearchSorted(LowerCtx& c, const ir::Node& n, const Values& in) {
  return Values{c.Call(A("searchsorted"), {in[0], in[1]},
                       {{"out_int32", false}, {"right", AttrsOf<ops::SideAttrs>(n).right.get()}})};
}

// Gather ops (kernels.cc Concat / Take).
Result Concat(LowerCtx& c, const ir::Node&, const Values& in) {
  Value* list = c.graph().insertNode(c.graph().createList(c10::TensorType::get(), in))->output();
  return Values{c.Call(A("cat"), {list, 0})};
}
Result Take(LowerCtx& c, const ir::Node& n, const Values& in) {
  Value* last = c.Call(c10::prim::max, {c.Call(A("sub"), {Size(c, in[0], 0), 1}), 0});
  Value* idx = c.Call(A("clamp"), {c.As(in[1], InDType(n, 1), c10::kLong), 0, last});
  Value* picked = c.Call(A("index_select"), {in[0], 0, c.Call(A("flatten"), {idx})});
  return Values{c.Call(A("reshape"), {picked, Sizes(c, idx)})};
}

// Ranking ops (kernels.cc Bucketize / Cumsum / Topk / Argsort).
Result Bucketize(LowerCtx& c, const ir::Node& n, const Values& in) {
  c10::ScalarType s = c10::promoteTypes(InType(n, 0), InType(n, 1));
  return Values{c.Call(A("bucketize"), {c.As(in[0], InDType(n, 0), s), c.As(in[1], InDType(n, 1), s)},
                       {{"out_int32", false}, {"right", AttrsOf<ops::SideAttrs>(n).right.get()}})};
}

// The fixed-order scan of kernels.cc CumsumScan as a prim::Loop over shifts
// 1, 2, 4, ... while shift < size(dim).
Value* CumsumScan(LowerCtx& c, Value* x, int64_t dim) {
  jit::Graph& g = c.graph();
  Value* n = Size(c, x, dim);
  Value* one = c.Const(int64_t{1});
  Value* trips = c.Const(std::numeric_limits<int64_t>::max());
  jit::Node* loop = g.insertNode(g.create(c10::prim::Loop, {trips, c.Call(A("lt"), {one, n}), x, one}, 2));
  loop->output(0)->setType(c10::TensorType::get());
  loop->output(1)->setType(c10::IntType::get());
  jit::Block* body = loop->addBlock();
  body->addInput()->setType(c10::IntType::get());  // the trip count
  Value* y = body->addInput()->setType(c10::TensorType::get());
  Value* shift = body->addInput()->setType(c10::IntType::get());
  jit::WithInsertPoint guard(body);
  Value* zeros = c.Call(A("zeros_like"), {c.Call(A("narrow"), {y, dim, 0, shift})});
  Value* rest = c.Call(A("narrow"), {y, dim, 0, c.Call(A("sub"), {n, shift})});
  Value* list = g.insertNode(g.createList(c10::TensorType::get(), {zeros, rest}))->output();
  Value* next = c.Call(A("add"), {y, c.Call(A("cat"), {list, dim})});
  Value* next_shift = c.Call(A("mul"), {shift, 2});
  body->registerOutput(c.Call(A("lt"), {next_shift, n}));
  body->registerOutput(next);
  body->registerOutput(next_shift);
  return loop->output(0);
}

Result Cumsum(LowerCtx& c, const ir::Node& n, const Values& in) {
  c10::ScalarType s = OutType(n);
  Value* x = c.As(in[0], InDType(n, 0), s);
  int64_t dim = AttrsOf<ops::DimAttrs>(n).dim;
  if (dim < 0) dim += InRank(n, 0);
  auto plain = [&c, x, dim]() -> Value* { return c.Call(A("cumsum"), {x, dim}); };
  if (!c10::isFloatingType(s)) return Values{plain()};
  // The device is a run-time fact (exported modules move with `.to()`).
  Value* host =
      c.Call(A("__or__"), {c.Call(c10::Symbol::prim("is_cpu"), {x}), c.Call(c10::Symbol::prim("is_meta"), {x})});
  return Values{c.If(host, plain, [&c, x, dim]() -> Value* { return CumsumScan(c, x, dim); })};
}

Result Topk(LowerCtx& c, const ir::Node& n, const Values& in) {
  const auto a = AttrsOf<ops::TopkAttrs>(n);
  Value* r = c.Call(A("topk"), {in[0], a.k, a.dim.get(), a.largest.get(), a.sorted.get()});
  return c.Unpack(r, 2);
}

Result Argsort(LowerCtx& c, const ir::Node& n, const Values& in) {
  const auto a = AttrsOf<ops::ArgsortAttrs>(n);
  std::vector<NamedValue> kwargs = {{"dim", a.dim.get()}, {"descending", a.descending.get()}};
  if (a.stable.get()) kwargs.insert(kwargs.begin(), NamedValue("stable", true));
  return Values{c.Unpack(c.Call(A("sort"), {in[0]}, std::move(kwargs)), 2)[1]};
}

Result Sort(LowerCtx& c, const ir::Node& n, const Values& in) {
  const auto a = AttrsOf<ops::SortAttrs>(n);
  Value* r = c.Call(A("sort"), {in[0]}, {{"stable", true}, {"dim", a.dim}, {"descending", a.descending.get()}});
  return c.Unpack(r, 2);
}

// Average ranks of a 1-D tensor (kernels.cc RankAverage1D). `len` is fixed
// (>= 0) or -1 when only known at run time.
Value* RankAverage1D(LowerCtx& c, Value* v, int64_t fixed_len) {
  Value* device = DeviceOfValue(c, v);
  auto empty = [&]() -> Value* { return Zeros(c, c.Const(std::vector<int64_t>{0}), c10::kDouble, device); };
  auto ranks = [&]() -> Value* {
    Value* len = fixed_len >= 0 ? c.Const(fixed_len) : Size(c, v, 0);
    Value* sorted_perm = c.Call(A("sort"), {v}, {{"stable", true}, {"dim", 0}, {"descending", false}});
    Values sp = c.Unpack(sorted_perm, 2);
    Value* first = c.Call(A("ones"), {std::vector<int64_t>{1}}, {{"dtype", c10::kBool}, {"device", device}});
    Value* tail = c.Call(A("slice"), {sp[0], 0, 1, std::numeric_limits<int64_t>::max(), 1});
    Value* len_m1 = c.Call(A("sub"), {len, 1});
    Value* head = c.Call(A("slice"), {sp[0], 0, 0, len_m1, 1});
    Value* list = c.graph()
                      .insertNode(c.graph().createList(c10::TensorType::get(), {first, c.Call(A("ne"), {tail, head})}))
                      ->output();
    Value* starts = c.Call(A("cat"), {list, 0});
    Value* gid = c.Call(A("sub"), {c.Call(A("cumsum"), {c.As(starts, ir::DType::kBool, c10::kLong), 0}), 1});
    Value* len_p1 = c.Call(A("add"), {len, 1});
    Value* pos = c.Call(A("arange"), {1, len_p1}, {{"dtype", c10::kDouble}, {"device", device}});
    Value* len_list = IntList(c, {len});
    Value* sum = c.Call(A("index_add"), {Zeros(c, len_list, c10::kDouble, device), 0, gid, pos});
    Value* ones = c.Call(A("ones"), {len_list}, {{"dtype", c10::kDouble}, {"device", device}});
    Value* cnt = c.Call(A("index_add"), {Zeros(c, len_list, c10::kDouble, device), 0, gid, ones});
    Value* avg = c.Call(A("index_select"), {c.Call(A("div"), {sum, c.Call(A("clamp_min"), {cnt, 1})}), 0, gid});
    Value* out = c.Call(A("empty"), {len_list}, {{"dtype", c10::kDouble}, {"device", device}});
    return c.Call(A("scatter"), {out, 0, sp[1], avg});
  };
  if (fixed_len == 0) return empty();
  if (fixed_len > 0) return ranks();
  return c.If(c.Call(A("eq"), {Size(c, v, 0), 0}), empty, ranks);
}

Result RankAverage(LowerCtx& c, const ir::Node& n, const Values& in) {
  const ir::TensorType& t = n.input(0)->type();
  const ir::Dim& rows = t.shape[0];
  const int64_t fixed_len = rows.is_symbolic() ? -1 : rows.size;
  if (t.rank() == 1) return Values{RankAverage1D(c, in[0], fixed_len)};
  int64_t columns = 1;
  for (int64_t d = 1; d < t.rank(); ++d) {
    if (t.shape[d].is_symbolic()) {
      return absl::UnimplementedError("rank_average: only the leading dim may be symbolic");
    }
    columns *= t.shape[d].size;
  }
  Value* device = DeviceOfValue(c, in[0]);
  if (columns == 0) return Values{Zeros(c, Sizes(c, in[0]), c10::kDouble, device)};
  Value* flat = c.Call(A("reshape"), {in[0], IntList(c, {Size(c, in[0], 0), c.Const(columns)})});
  Values cols;
  for (int64_t j = 0; j < columns; ++j) {
    cols.push_back(RankAverage1D(c, c.Call(A("select"), {flat, 1, j}), fixed_len));
  }
  Value* list = c.graph().insertNode(c.graph().createList(c10::TensorType::get(), cols))->output();
  return Values{c.Call(A("reshape"), {c.Call(A("stack"), {list, 1}), Sizes(c, in[0])})};
}

// ---- Syncing ops (only ever in finalize plans) -------------------------------

// InlineScript inserts function `fn` of TorchScript `source`
// (ops/fused/script.h) with inputs `in`.
Result InlineScript(LowerCtx& c, const char* source, const char* fn, const Values& in) {
  return jit::insertGraph(c.graph(), *ops::fused::ScriptGraph(source, fn), in);
}

Result ExpectedMutualInfo(LowerCtx& c, const ir::Node&, const Values& in) {
  return InlineScript(c, ops::fused::kExpectedMutualInfoScript, "expected_mutual_info", in);
}
Result MaxAssignment(LowerCtx& c, const ir::Node&, const Values& in) {
  return InlineScript(c, ops::fused::kMaxAssignmentScript, "max_assignment", in);
}
Result EditDistance(LowerCtx& c, const ir::Node& n, const Values& in) {
  return InlineScript(c, ops::fused::EditDistanceScript(), "edit_distance",
                      {in[0], in[1], c.Const(AttrsOf<ops::EditDistanceAttrs>(n).substitution_cost),
                       c.Const(AttrsOf<ops::EditDistanceAttrs>(n).substitutions.get())});
}
Result NgramMatches(LowerCtx& c, const ir::Node& n, const Values& in) {
  return InlineScript(c, ops::fused::NgramMatchesScript(), "ngram_matches",
                      {in[0], in[1], c.Const(AttrsOf<ops::NgramMatchesAttrs>(n).n_gram)});
}
Result NgramOverlap(LowerCtx& c, const ir::Node& n, const Values& in) {
  return InlineScript(c, ops::fused::NgramMatchesScript(), "ngram_overlap",
                      {in[0], in[1], c.Const(AttrsOf<ops::NgramMatchesAttrs>(n).n_gram)});
}
Result LcsLength(LowerCtx& c, const ir::Node&, const Values& in) {
  return InlineScript(c, ops::fused::LcsLengthScript(), "lcs_length", {in[0], in[1]});
}
Result TerEdits(LowerCtx& c, const ir::Node&, const Values& in) {
  return InlineScript(c, ops::fused::TerEditsScript(), "ter_edits", {in[0], in[1]});
}
Result Sdr(LowerCtx& c, const ir::Node& n, const Values& in) {
  const auto attrs = AttrsOf<ops::SdrAttrs>(n);
  return InlineScript(
      c, ops::fused::SdrScript(), "sdr",
      {in[0], in[1], c.Const(attrs.filter_length), c.Const(attrs.zero_mean.get()), c.Const(attrs.load_diag.get())});
}
Result SignalRatio(LowerCtx& c, const ir::Node& n, const Values& in) {
  const auto a = AttrsOf<ops::SignalRatioAttrs>(n);
  return InlineScript(c, ops::fused::kSignalRatioScript, "signal_ratio",
                      {in[0], in[1], c.Const(a.signal_dims.get()), c.Const(a.scale_invariant.get()),
                       c.Const(a.zero_mean.get()), c.Const(a.eps)});
}
Result TokenNll(LowerCtx& c, const ir::Node&, const Values& in) {
  return InlineScript(c, ops::fused::kTokenNllScript, "token_nll", in);
}
Result DepthwiseConv2d(LowerCtx& c, const ir::Node& n, const Values& in) {
  const auto a = AttrsOf<ops::Conv2dAttrs>(n);
  return InlineScript(c, ops::fused::DepthwiseConv2dScript(), "depthwise_conv2d",
                      {in[0], in[1], c.Const(a.stride.get()), c.Const(a.pad_h.get()), c.Const(a.pad_w.get())});
}
Result ClassOverlap(LowerCtx& c, const ir::Node& n, const Values& in) {
  const auto a = AttrsOf<ops::ClassOverlapAttrs>(n);
  return InlineScript(
      c, ops::fused::ClassOverlapScript(), "class_overlap",
      {in[0], in[1], c.Const(a.num_classes), c.Const(a.index.get()), c.Const(a.include_background.get())});
}
// The COCO and panoptic scripts return tuples: their items are the node's results.
Result InlineTupleScript(LowerCtx& c, const char* source, const char* fn, const Values& in) {
  Values tuple = jit::insertGraph(c.graph(), *ops::fused::ScriptGraph(source, fn), in);
  auto items = c.graph().insertNode(c.graph().createTupleUnpack(tuple.at(0)))->outputs();
  return Values(items.begin(), items.end());
}
Result CocoMatch(LowerCtx& c, const ir::Node& n, const Values& in) {
  const auto a = AttrsOf<ops::CocoMatchAttrs>(n);
  Values args(in.begin(), in.end());
  args.insert(args.end(), {c.Const(a.iou_thresholds), c.Const(a.max_det), c.Const(a.micro.get())});
  return InlineTupleScript(c, ops::fused::CocoMatchScript(), "coco_match", args);
}
Result CocoBins(LowerCtx& c, const ir::Node& n, const Values& in) {
  const auto a = AttrsOf<ops::CocoBinsAttrs>(n);
  Values args(in.begin(), in.end());
  args.insert(args.end(), {c.Const(a.num_classes), c.Const(a.score_bins), c.Const(a.max_dets), c.Const(a.thresholds)});
  return InlineTupleScript(c, ops::fused::CocoBinsScript(), "coco_bins", args);
}
Result CocoBinsSummary(LowerCtx& c, const ir::Node& n, const Values& in) {
  const auto a = AttrsOf<ops::CocoSummaryAttrs>(n);
  return InlineTupleScript(c, ops::fused::CocoBinsSummaryScript(), "coco_bins_summary",
                           {in[0], in[1], c.Const(a.iou_thresholds), c.Const(a.rec_thresholds), c.Const(a.max_dets),
                            c.Const(a.micro.get()), c.Const(a.class_metrics.get())});
}
Result PanopticMatch(LowerCtx& c, const ir::Node& n, const Values& in) {
  const auto a = AttrsOf<ops::PanopticMatchAttrs>(n);
  return InlineTupleScript(c, ops::fused::PanopticMatchScript(), "panoptic_match",
                           {in[0], in[1], c.Const(a.things), c.Const(a.stuffs)});
}
Result CocoSummary(LowerCtx& c, const ir::Node& n, const Values& in) {
  const auto a = AttrsOf<ops::CocoSummaryAttrs>(n);
  Values args(in.begin(), in.begin() + 7);
  Values extra(in.begin() + 7, in.end());
  args.push_back(c.graph().insertNode(c.graph().createList(c10::TensorType::get(), extra))->output());
  args.insert(args.end(), {c.Const(a.iou_thresholds), c.Const(a.rec_thresholds), c.Const(a.max_dets),
                           c.Const(a.micro.get()), c.Const(a.class_metrics.get())});
  return InlineTupleScript(c, ops::fused::CocoSummaryScript(), "coco_summary", args);
}
Result Matmul(LowerCtx& c, const ir::Node&, const Values& in) { return Direct(c, in, "matmul"); }
Result TraceSqrt(LowerCtx& c, const ir::Node&, const Values& in) {
  return InlineScript(c, ops::fused::TraceSqrtScript(), "trace_sqrt", in);
}

Result Bincount(LowerCtx& c, const ir::Node& n, const Values& in) {
  return Values{c.Call(A("bincount"), {in[0], c.Const(c10::IValue()), AttrsOf<ops::BincountAttrs>(n).minlength})};
}
Result MaskedSelect(LowerCtx& c, const ir::Node&, const Values& in) { return Direct(c, in, "masked_select"); }
Result Nonzero(LowerCtx& c, const ir::Node&, const Values& in) { return Direct(c, in, "nonzero"); }

// assert_zero (kernels.cc AssertZero): raise when the count is not zero. On
// `meta` the count has no value, so the check is skipped as in the kernel.
Result AssertZero(LowerCtx& c, const ir::Node& n, const Values& in) {
  Value* on_meta = c.Call(c10::Symbol::fromQualString("prim::is_meta"), {in[0]});
  Value* nonzero = c.Call(A("is_nonzero"), {c.Call(A("gt"), {in[0], 0})});
  Value* cond = c.Call(A("__and__"), {c.Call(A("__not__"), {on_meta}), nonzero});
  std::string message = absl::StrCat(support::kCheckFailed,
                                     absl::StrReplaceAll(AttrsOf<ops::AssertZeroAttrs>(n).message, {{"{n}", "{}"}}));
  Value* value = in[1];
  return Values{c.If(
      cond,
      [&]() -> Value* {
        Value* text = c.Call(A("format"), {c.Const(message), c.Call(A("Int"), {in[0]})});
        c.Call(c10::prim::RaiseException, {text, c.Const(c10::IValue())});
        return value;
      },
      [value]() -> Value* { return value; })};
}

// ---- Composite ops -----------------------------------------------------------

// A composite op calls Tally's operator `tally::<op>`: tensor inputs first,
// then every other schema argument from the node attribute of the same name
// (absent optional ones are None).
Result Composite(LowerCtx& c, const ir::Node& n, const Values& in) {
  if (!c.options().allow_tally_ops) {
    return absl::UnimplementedError(
        absl::StrCat("composite op '", n.op(), "' would need Tally's operator tally::", n.op(),
                     "; compile with FusePolicy::kReference to decompose it into ATen ops"));
  }
  c10::Symbol sym = c10::Symbol::fromQualString(absl::StrCat("tally::", n.op()));
  const auto& candidates = jit::getAllOperatorsFor(sym);
  if (candidates.empty()) {
    return absl::UnimplementedError(absl::StrCat("no registered operator tally::", n.op()));
  }
  const c10::FunctionSchema& schema = candidates.front()->schema();
  // Tensor arguments take the node's inputs in order (a Tensor[] argument
  // takes all that remain); every other argument is the attribute of its name.
  std::vector<NamedValue> args;
  size_t next = 0;
  for (const c10::Argument& arg : schema.arguments()) {
    c10::TypePtr type = arg.type();
    if (type->kind() == c10::TypeKind::TensorType) {
      if (next >= in.size()) return absl::InternalError(absl::StrCat(n.op(), ": too few inputs for its schema"));
      args.emplace_back(arg.name(), in[next++]);
      continue;
    }
    if (type->kind() == c10::TypeKind::ListType &&
        type->expectRef<c10::ListType>().getElementType()->kind() == c10::TypeKind::TensorType) {
      Values rest(in.begin() + next, in.end());
      next = in.size();
      args.emplace_back(arg.name(), c.graph().insertNode(c.graph().createList(c10::TensorType::get(), rest))->output());
      continue;
    }
    bool optional = false;
    if (auto opt = type->cast<c10::OptionalType>()) {
      optional = true;
      type = opt->getElementType();
    }
    // An optional tensor (mc_confmat's weight) takes the next input, if any;
    // `groups` is the last input, there when the node has num_groups.
    if (optional && type->kind() == c10::TypeKind::TensorType) {
      const bool grouped = n.attrs().count("num_groups") > 0;
      const size_t end = in.size() - (grouped && arg.name() != "groups" ? 1 : 0);
      if (arg.name() == "groups" ? grouped && next < in.size() : next < end) {
        args.emplace_back(arg.name(), in[next++]);
      } else {
        args.emplace_back(arg.name(), c10::IValue());
      }
      continue;
    }
    // The fused op's schema names the node's attributes (ops/attrs.h):
    // they are read by those names, whatever op it is.
    auto attr = n.attrs().find(arg.name());
    if (attr == n.attrs().end()) {
      // As the eager kernels read them: absent optionals are None, absent
      // lists empty.
      if (optional)
        args.emplace_back(arg.name(), c10::IValue());
      else if (type->kind() == c10::TypeKind::ListType)
        args.emplace_back(arg.name(), std::vector<int64_t>{});
      else if (!arg.default_value()) {
        return absl::InternalError(absl::StrCat(n.op(), ": no attribute for argument '", arg.name(), "'"));
      }
      continue;
    }
    c10::IValue v;
    switch (type->kind()) {
      case c10::TypeKind::IntType:
        if (const auto* x = std::get_if<int64_t>(&attr->second)) v = *x;
        break;
      case c10::TypeKind::FloatType:
        if (const auto* x = std::get_if<double>(&attr->second)) v = *x;
        if (const auto* x = std::get_if<int64_t>(&attr->second)) v = static_cast<double>(*x);
        break;
      case c10::TypeKind::BoolType:
        if (const auto* x = std::get_if<bool>(&attr->second)) v = *x;
        break;
      case c10::TypeKind::StringType:
        if (const auto* x = std::get_if<std::string>(&attr->second)) v = *x;
        break;
      case c10::TypeKind::ListType:
        if (const auto* x = std::get_if<std::vector<int64_t>>(&attr->second)) v = *x;
        break;
      default:
        return absl::UnimplementedError(absl::StrCat(n.op(), ": argument '", arg.name(), "' of type ", type->str()));
    }
    if (v.isNone()) {
      return absl::InternalError(absl::StrCat(n.op(), ": attribute '", arg.name(), "' is not a ", type->str()));
    }
    args.emplace_back(arg.name(), v);
  }
  if (next != in.size()) return absl::InternalError(absl::StrCat(n.op(), ": more inputs than its schema takes"));
  Value* r = c.Call(sym, {}, std::move(args));  // every argument by name
  if (n.outputs().size() == 1 && schema.returns().size() == 1 &&
      schema.returns()[0].type()->kind() == c10::TypeKind::TensorType) {
    return Values{r};
  }
  return c.Unpack(r, n.outputs().size());
}

// Segment ops (kernels.cc SegmentSort / SegmentScan).
Value* SegmentStarts(LowerCtx& c, Value* keys) {
  Value* first = c.Call(A("slice"), {keys, 0, 0, 1, 1});
  Value* tail = c.Call(A("slice"), {keys, 0, 1, std::numeric_limits<int64_t>::max(), 1});
  Value* head = c.Call(A("slice"), {keys, 0, 0, -1, 1});
  Value* list = c.graph()
                    .insertNode(c.graph().createList(c10::TensorType::get(),
                                                     {c.Call(A("eq"), {first, first}), c.Call(A("ne"), {tail, head})}))
                    ->output();
  return c.Call(A("cat"), {list, 0});
}
Result SegmentSort(LowerCtx& c, const ir::Node& n, const Values& in) {
  auto perm_of = [&](Value* v, bool descending) {
    Value* r = c.Call(A("sort"), {v}, {{"stable", true}, {"dim", 0}, {"descending", descending}});
    return c.Unpack(r, 2)[1];
  };
  Value* p1 = perm_of(in[1], true);
  Value* p2 = perm_of(c.Call(A("index_select"), {in[0], 0, p1}), false);
  Value* perm = c.Call(A("index_select"), {p1, 0, p2});
  Values out;
  for (Value* v : in) out.push_back(c.Call(A("index_select"), {v, 0, perm}));
  return out;
}
Result SegmentScan(LowerCtx& c, const ir::Node& n, const Values& in) {
  Value* x = ir::IsFloating(n.inputs()[0]->type().dtype) ? in[0] : c.As(in[0], n.inputs()[0]->type().dtype, c10::kLong);
  const int64_t rank = n.inputs()[0]->type().rank();
  auto scan = [&](bool total_result) {
    return [&c, &in, x, total_result, rank]() -> Value* {
      Value* starts = SegmentStarts(c, in[1]);
      for (size_t i = 2; i < in.size(); ++i) starts = c.Call(A("logical_or"), {starts, SegmentStarts(c, in[i])});
      // Rows along dim 0: a [N] mask selects whole rows of an [N, ...] x.
      Value* row_starts = starts;
      for (int64_t d = 1; d < rank; ++d) row_starts = c.Call(A("unsqueeze"), {row_starts, d});
      Value* gid = c.Call(A("sub"), {c.Call(A("cumsum"), {c.As(starts, ir::DType::kBool, c10::kLong), 0}), 1});
      Value* zero = c.Call(A("zeros_like"), {x});
      if (total_result) return c.Call(A("index_select"), {c.Call(A("index_add"), {zero, 0, gid, x}), 0, gid});
      Value* cum = c.Call(A("cumsum"), {x, 0});
      Value* before = c.Call(A("where"), {row_starts, c.Call(A("sub"), {cum, x}), zero});
      Value* base = c.Call(A("index_add"), {zero, 0, gid, before});
      return c.Call(A("sub"), {cum, c.Call(A("index_select"), {base, 0, gid})});
    };
  };
  // index_add_ on an empty meta tensor throws, so an empty batch skips it.
  Value* is_empty = c.Call(A("eq"), {Size(c, x, 0), 0});
  auto copy = [&c, x]() -> Value* { return c.Call(A("clone"), {x}); };
  return Values{c.If(is_empty, copy, scan(false)), c.If(is_empty, copy, scan(true))};
}

// The lowering of every primitive op of ops/op_list.h; composite ops share
// one generic lowering onto their registered `tally::` operators. Checked
// when this file compiles.
constexpr ops::OpTableOf<OpLowering> kLowerings = {
    {ops::OpId::kAdd, Add},
    {ops::OpId::kSub, Sub},
    {ops::OpId::kMul, Mul},
    {ops::OpId::kDiv, Div},
    {ops::OpId::kPow, Pow},
    {ops::OpId::kMaximum, Maximum},
    {ops::OpId::kMinimum, Minimum},
    {ops::OpId::kSafeDiv, SafeDiv},
    {ops::OpId::kEq, Eq},
    {ops::OpId::kNe, Ne},
    {ops::OpId::kLt, Lt},
    {ops::OpId::kLe, Le},
    {ops::OpId::kGt, Gt},
    {ops::OpId::kGe, Ge},
    {ops::OpId::kLogicalAnd, LogicalAnd},
    {ops::OpId::kLogicalOr, LogicalOr},
    {ops::OpId::kLogicalXor, LogicalXor},
    {ops::OpId::kLogicalNot, LogicalNot},
    {ops::OpId::kIsnan, IsNan},
    {ops::OpId::kNeg, Neg},
    {ops::OpId::kAbs, Abs},
    {ops::OpId::kExp, Exp},
    {ops::OpId::kLog, Log},
    {ops::OpId::kSqrt, Sqrt},
    {ops::OpId::kAcos, Acos},
    {ops::OpId::kAtan, Atan},
    {ops::OpId::kSigmoid, Sigmoid},
    {ops::OpId::kLogCosh, LogCosh},
    {ops::OpId::kClamp, Clamp},
    {ops::OpId::kCast, Cast},
    {ops::OpId::kWhere, Where},
    {ops::OpId::kReduceSum, ReduceSum},
    {ops::OpId::kReduceMax, ReduceMax},
    {ops::OpId::kReduceMin, ReduceMin},
    {ops::OpId::kReduceAny, ReduceAny},
    {ops::OpId::kReduceAll, ReduceAll},
    {ops::OpId::kArgmax, Argmax},
    {ops::OpId::kSoftmax, Softmax},
    {ops::OpId::kConstant, Constant},
    {ops::OpId::kFull, FullOp},
    {ops::OpId::kArange, Arange},
    {ops::OpId::kLinspace, Linspace},
    {ops::OpId::kFullLike, FullLike},
    {ops::OpId::kSize, SizeOp},
    {ops::OpId::kTransfer, Transfer},
    {ops::OpId::kReshape, Reshape},
    {ops::OpId::kFlatten, Flatten},
    {ops::OpId::kUnsqueeze, Unsqueeze},
    {ops::OpId::kSqueeze, Squeeze},
    {ops::OpId::kSelect, Select},
    {ops::OpId::kTranspose, Transpose},
    {ops::OpId::kOneHot, OneHot},
    {ops::OpId::kTopkMask, TopkMask},
    {ops::OpId::kHistogram, Histogram},
    {ops::OpId::kSort, Sort},
    {ops::OpId::kRankAverage, RankAverage},
    {ops::OpId::kSearchsorted, SearchSorted},
    {ops::OpId::kBucketize, Bucketize},
    {ops::OpId::kCumsum, Cumsum},
    {ops::OpId::kTopk, Topk},
    {ops::OpId::kArgsort, Argsort},
    {ops::OpId::kConcat, Concat},
    {ops::OpId::kTake, Take},
    {ops::OpId::kSegmentSort, SegmentSort},
    {ops::OpId::kSegmentScan, SegmentScan},
    {ops::OpId::kBincount, Bincount},
    {ops::OpId::kReplicaHistogram, ReplicaHistogram},
    {ops::OpId::kMaskedSelect, MaskedSelect},
    {ops::OpId::kNonzero, Nonzero},
    {ops::OpId::kAssertZero, AssertZero},
    {ops::OpId::kExpectedMutualInfo, ExpectedMutualInfo},
    {ops::OpId::kMaxAssignment, MaxAssignment},
    {ops::OpId::kEditDistance, EditDistance},
    {ops::OpId::kNgramMatches, NgramMatches},
    {ops::OpId::kNgramOverlap, NgramOverlap},
    {ops::OpId::kLcsLength, LcsLength},
    {ops::OpId::kTerEdits, TerEdits},
    {ops::OpId::kSdr, Sdr},
    {ops::OpId::kSignalRatio, SignalRatio},
    {ops::OpId::kDepthwiseConv2d, DepthwiseConv2d},
    {ops::OpId::kClassOverlap, ClassOverlap},
    {ops::OpId::kCocoMatch, CocoMatch},
    {ops::OpId::kPanopticMatch, PanopticMatch},
    {ops::OpId::kCocoBins, CocoBins},
    {ops::OpId::kCocoBinsSummary, CocoBinsSummary},
    {ops::OpId::kCocoSummary, CocoSummary},
    {ops::OpId::kMatmul, Matmul},
    {ops::OpId::kTraceSqrt, TraceSqrt},
    {ops::OpId::kTokenNll, TokenNll},
};
static_assert(kLowerings.Complete(ops::OpKind::kPrimitive), "a primitive op has no TorchScript lowering");
static_assert(kLowerings.CoversOnly(ops::OpKind::kPrimitive), "a composite op has its own lowering");

}  // namespace

OpLowering FindOpLowering(absl::string_view op) {
  std::optional<ops::OpId> id = ops::OpIdNamed(op);
  if (!id) return nullptr;
  return ops::KindOf(*id) == ops::OpKind::kComposite ? Composite : kLowerings[*id];
}

std::vector<std::string> LoweredOps() {
  std::vector<std::string> out;
  for (size_t i = 0; i < ops::kNumOps; ++i) {
    if (kLowerings.entries[i] != nullptr) out.emplace_back(ops::kOpNames[i]);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tally::exec::torchscript
