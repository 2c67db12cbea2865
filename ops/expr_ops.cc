// Operators and functions over Expr (declared in graph_builder.h).
#include <cmath>

#include "ops/attrs.h"
#include "ops/graph_builder.h"

namespace tally::ops {
namespace {

using ops::ToAttrMap;

Expr Call(ops::OpId op, std::vector<Expr> in, ir::AttrMap attrs, Loc loc) {
  for (const Expr& e : in)
    if (!e.valid()) return Expr();
  return in[0].builder()->Op(op, std::move(in), std::move(attrs), loc);
}

// Reduce: absent dims reduce every dim; keepdim is written only when set.
ir::AttrMap Reduce(std::vector<int64_t> dims, bool keepdim) {
  ops::ReduceAttrs a;
  if (!dims.empty()) a.dims = std::move(dims);
  if (keepdim) a.keepdim = true;
  return ToAttrMap(a);
}

DType ScalarDType(DType like, double v) {
  bool integral = std::isfinite(v) && std::floor(v) == v;
  if (ir::IsFloating(like)) return like;
  if (integral) return like == DType::kBool ? DType::kInt64 : like;
  return DType::kFloat32;
}

}  // namespace

Expr Scalar(Expr like, double v, Loc loc) {
  if (!like.valid()) return Expr();
  return like.builder()->Constant(like.graph(), v, ScalarDType(like.dtype(), v), loc);
}
Expr ScalarOf(Expr like, double v, DType dtype, Loc loc) {
  if (!like.valid()) return Expr();
  return like.builder()->Constant(like.graph(), v, dtype, loc);
}

#define DSL_BINARY(OP, NAME)                                                           \
  Expr operator OP(Expr a, Expr b) { return Call(NAME, {a, b}, {}, Loc{nullptr, 0}); } \
  Expr operator OP(Expr a, double b) { return Call(NAME, {a, Scalar(a, b, Loc{nullptr, 0})}, {}, Loc{nullptr, 0}); }
DSL_BINARY(+, ops::OpId::kAdd)
DSL_BINARY(-, ops::OpId::kSub)
DSL_BINARY(*, ops::OpId::kMul)
DSL_BINARY(/, ops::OpId::kDiv)
DSL_BINARY(==, ops::OpId::kEq)
DSL_BINARY(!=, ops::OpId::kNe)
DSL_BINARY(<, ops::OpId::kLt)
DSL_BINARY(<=, ops::OpId::kLe)
DSL_BINARY(>, ops::OpId::kGt)
DSL_BINARY(>=, ops::OpId::kGe)
#undef DSL_BINARY

Expr operator+(double a, Expr b) { return Scalar(b, a, Loc{nullptr, 0}) + b; }
Expr operator-(double a, Expr b) { return Scalar(b, a, Loc{nullptr, 0}) - b; }
Expr operator*(double a, Expr b) { return Scalar(b, a, Loc{nullptr, 0}) * b; }
Expr operator/(double a, Expr b) { return Scalar(b, a, Loc{nullptr, 0}) / b; }
Expr operator-(Expr a) { return Call(ops::OpId::kNeg, {a}, {}, Loc{nullptr, 0}); }
Expr operator&&(Expr a, Expr b) { return Call(ops::OpId::kLogicalAnd, {a, b}, {}, Loc{nullptr, 0}); }
Expr operator||(Expr a, Expr b) { return Call(ops::OpId::kLogicalOr, {a, b}, {}, Loc{nullptr, 0}); }
Expr operator!(Expr a) { return Call(ops::OpId::kLogicalNot, {a}, {}, Loc{nullptr, 0}); }

Expr Cast(Expr x, DType dtype, Loc loc) {
  if (!x.valid()) return x;
  if (x.dtype() == dtype) return x;
  return Call(ops::OpId::kCast, {x}, ToAttrMap(ops::CastAttrs{std::string(ir::DTypeName(dtype))}), loc);
}
Expr Sum(Expr x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return Call(ops::OpId::kReduceSum, {x}, Reduce(std::move(dims), keepdim), loc);
}
Expr Max(Expr x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return Call(ops::OpId::kReduceMax, {x}, Reduce(std::move(dims), keepdim), loc);
}
Expr Min(Expr x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return Call(ops::OpId::kReduceMin, {x}, Reduce(std::move(dims), keepdim), loc);
}
Expr Any(Expr x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return Call(ops::OpId::kReduceAny, {x}, Reduce(std::move(dims), keepdim), loc);
}
Expr All(Expr x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return Call(ops::OpId::kReduceAll, {x}, Reduce(std::move(dims), keepdim), loc);
}
Expr Argmax(Expr x, int64_t dim, bool keepdim, Loc loc) {
  ops::ArgmaxAttrs a{dim};
  if (keepdim) a.keepdim = true;
  return Call(ops::OpId::kArgmax, {x}, ToAttrMap(a), loc);
}
Expr Softmax(Expr x, int64_t dim, Loc loc) {
  return Call(ops::OpId::kSoftmax, {x}, ToAttrMap(ops::DimAttrs{dim}), loc);
}
Expr Where(Expr c, Expr a, Expr b, Loc loc) { return Call(ops::OpId::kWhere, {c, a, b}, {}, loc); }
Expr Where(Expr c, Expr a, double b, Loc loc) { return Where(c, a, Scalar(a, b, loc), loc); }
Expr Where(Expr c, double a, Expr b, Loc loc) { return Where(c, Scalar(b, a, loc), b, loc); }
Expr SafeDiv(Expr num, Expr den, double zero_division, Loc loc) {
  ops::SafeDivAttrs a;
  a.zero_division = zero_division;
  return Call(ops::OpId::kSafeDiv, {num, den}, ToAttrMap(a), loc);
}
Expr Maximum(Expr a, Expr b, Loc loc) { return Call(ops::OpId::kMaximum, {a, b}, {}, loc); }
Expr Minimum(Expr a, Expr b, Loc loc) { return Call(ops::OpId::kMinimum, {a, b}, {}, loc); }
Expr Pow(Expr a, Expr b, Loc loc) { return Call(ops::OpId::kPow, {a, b}, {}, loc); }
Expr Abs(Expr x, Loc loc) { return Call(ops::OpId::kAbs, {x}, {}, loc); }
Expr Exp(Expr x, Loc loc) { return Call(ops::OpId::kExp, {x}, {}, loc); }
Expr Log(Expr x, Loc loc) { return Call(ops::OpId::kLog, {x}, {}, loc); }
Expr Sqrt(Expr x, Loc loc) { return Call(ops::OpId::kSqrt, {x}, {}, loc); }
Expr Acos(Expr x, Loc loc) { return Call(ops::OpId::kAcos, {x}, {}, loc); }
Expr Atan(Expr x, Loc loc) { return Call(ops::OpId::kAtan, {x}, {}, loc); }
Expr Sigmoid(Expr x, Loc loc) { return Call(ops::OpId::kSigmoid, {x}, {}, loc); }
Expr LogCosh(Expr x, Loc loc) { return Call(ops::OpId::kLogCosh, {x}, {}, loc); }
Expr IsNan(Expr x, Loc loc) { return Call(ops::OpId::kIsnan, {x}, {}, loc); }
Expr Clamp(Expr x, std::optional<double> lo, std::optional<double> hi, Loc loc) {
  ops::ClampAttrs a;
  if (lo) a.min = *lo;
  if (hi) a.max = *hi;
  return Call(ops::OpId::kClamp, {x}, ToAttrMap(a), loc);
}
Expr OneHot(Expr labels, int64_t num_classes, Loc loc) {
  return Call(ops::OpId::kOneHot, {labels}, ToAttrMap(ops::OneHotAttrs{num_classes}), loc);
}
Expr TopkMask(Expr x, int64_t k, Loc loc) {
  return Call(ops::OpId::kTopkMask, {x}, ToAttrMap(ops::TopkMaskAttrs{k}), loc);
}
Expr Histogram(Expr idx, int64_t size, Loc loc) {
  return Call(ops::OpId::kHistogram, {idx}, ToAttrMap(ops::HistogramAttrs{size}), loc);
}
Expr Histogram(Expr idx, Expr w, int64_t size, Loc loc) {
  return Call(ops::OpId::kHistogram, {idx, w}, ToAttrMap(ops::HistogramAttrs{size}), loc);
}
Expr ScoreCode16(Expr x, const std::string& format, Loc loc) {
  return Call(ops::OpId::kScoreCode16, {x}, ToAttrMap(ops::ScoreCode16Attrs{format}), loc);
}
Expr CountOutside(Expr x, double low, double high, Loc loc) {
  return Call(ops::OpId::kCountOutside, {x}, ToAttrMap(ops::CountOutsideAttrs{low, high}), loc);
}
Expr ConfmatPartOf(Expr cm, absl::string_view part, Loc loc) {
  return Call(ops::OpId::kConfmatPart, {cm}, ToAttrMap(ops::ConfmatPartAttrs{std::string(part)}), loc);
}
Expr Reshape(Expr x, std::vector<int64_t> shape, Loc loc) {
  return Call(ops::OpId::kReshape, {x}, ToAttrMap(ops::ReshapeAttrs{std::move(shape)}), loc);
}
Expr Flatten(Expr x, Loc loc) { return Call(ops::OpId::kFlatten, {x}, {}, loc); }
Expr Unsqueeze(Expr x, int64_t dim, Loc loc) {
  return Call(ops::OpId::kUnsqueeze, {x}, ToAttrMap(ops::DimAttrs{dim}), loc);
}
Expr Squeeze(Expr x, int64_t dim, Loc loc) {
  return Call(ops::OpId::kSqueeze, {x}, ToAttrMap(ops::DimAttrs{dim}), loc);
}
Expr Select(Expr x, int64_t dim, int64_t index, Loc loc) {
  return Call(ops::OpId::kSelect, {x}, ToAttrMap(ops::SelectAttrs{dim, index}), loc);
}
Expr Transpose(Expr x, int64_t d0, int64_t d1, Loc loc) {
  return Call(ops::OpId::kTranspose, {x}, ToAttrMap(ops::TransposeAttrs{d0, d1}), loc);
}
Expr Size(Expr x, int64_t dim, Loc loc) { return Call(ops::OpId::kSize, {x}, ToAttrMap(ops::DimAttrs{dim}), loc); }
Expr RankAverage(Expr x, Loc loc) { return Call(ops::OpId::kRankAverage, {x}, {}, loc); }
Expr SearchSorted(Expr sorted, Expr values, bool right, Loc loc) {
  ops::SideAttrs a;
  a.right = right;
  return Call(ops::OpId::kSearchsorted, {sorted, values}, ToAttrMap(a), loc);
}
Expr SortValues(Expr x, int64_t dim, bool descending, Loc loc) {
  if (!x.valid()) return x;
  ops::SortAttrs a{dim};
  a.descending = descending;
  std::vector<Expr> r = x.builder()->OpN(ops::OpId::kSort, {x}, ToAttrMap(a), loc);
  return r.empty() ? Expr() : r[0];
}
Expr Bucketize(Expr x, Expr boundaries, bool right, Loc loc) {
  ops::SideAttrs a;
  a.right = right;
  return Call(ops::OpId::kBucketize, {x, boundaries}, ToAttrMap(a), loc);
}
Expr Cumsum(Expr x, int64_t dim, Loc loc) { return Call(ops::OpId::kCumsum, {x}, ToAttrMap(ops::DimAttrs{dim}), loc); }
TopKResult TopK(Expr x, int64_t k, int64_t dim, bool largest, bool sorted, Loc loc) {
  if (!x.valid()) return {};
  ops::TopkAttrs a{k};
  a.dim = dim;
  a.largest = largest;
  a.sorted = sorted;
  std::vector<Expr> r = x.builder()->OpN(ops::OpId::kTopk, {x}, ToAttrMap(a), loc);
  if (r.size() != 2) return {};
  return {r[0], r[1]};
}
Expr Argsort(Expr x, int64_t dim, bool descending, bool stable, Loc loc) {
  ops::ArgsortAttrs a;
  a.dim = dim;
  a.descending = descending;
  a.stable = stable;
  return Call(ops::OpId::kArgsort, {x}, ToAttrMap(a), loc);
}
Expr Concat(std::vector<Expr> xs, Loc loc) {
  if (xs.empty() || !xs[0].valid()) return Expr();
  return xs[0].builder()->Op(ops::OpId::kConcat, std::move(xs), {}, loc);
}
Expr Take(Expr x, Expr idx, Loc loc) { return Call(ops::OpId::kTake, {x, idx}, {}, loc); }
Expr Full(Expr like, std::vector<int64_t> shape, double value, DType dtype, Loc loc) {
  if (!like.valid()) return like;
  return like.builder()->Op(ops::OpId::kFull, {},
                            ToAttrMap(ops::FullAttrs{std::move(shape), value, std::string(ir::DTypeName(dtype))}), loc,
                            like.graph());
}
Expr FullLike(Expr x, double value, DType dtype, Loc loc) {
  return Call(ops::OpId::kFullLike, {x}, ToAttrMap(ops::FullLikeAttrs{value, std::string(ir::DTypeName(dtype))}), loc);
}
Expr DepthwiseConv2d(Expr x, Expr weight, int64_t stride, int64_t pad_h, int64_t pad_w, Loc loc) {
  ops::Conv2dAttrs a;
  a.stride = stride;
  a.pad_h = pad_h;
  a.pad_w = pad_w;
  return Call(ops::OpId::kDepthwiseConv2d, {x, weight}, ToAttrMap(a), loc);
}
Expr ClassOverlap(Expr preds, Expr target, int64_t num_classes, bool index, bool include_background, Loc loc) {
  ops::ClassOverlapAttrs a;
  a.num_classes = num_classes;
  a.index = index;
  a.include_background = include_background;
  return Call(ops::OpId::kClassOverlap, {preds, target}, ToAttrMap(a), loc);
}
Expr Matmul(Expr a, Expr b, Loc loc) { return Call(ops::OpId::kMatmul, {a, b}, {}, loc); }
Expr TraceSqrt(Expr m, Loc loc) { return Call(ops::OpId::kTraceSqrt, {m}, {}, loc); }
Expr Linspace(Expr like, double start, double end, int64_t steps, DType dtype, Loc loc) {
  if (!like.valid()) return like;
  return like.builder()->Op(ops::OpId::kLinspace, {},
                            ToAttrMap(ops::LinspaceAttrs{start, end, steps, std::string(ir::DTypeName(dtype))}), loc,
                            like.graph());
}
Expr Dense(Expr like, std::vector<double> values, DType dtype, Loc loc) {
  if (!like.valid()) return like;
  return like.builder()->Op(ops::OpId::kConstant, {},
                            ToAttrMap(ops::ConstantAttrs::Dense(std::move(values), std::string(ir::DTypeName(dtype)))),
                            loc, like.graph());
}
Expr Arange(Expr like, int64_t n, DType dtype, Loc loc) {
  if (!like.valid()) return like;
  return like.builder()->Op(ops::OpId::kArange, {}, ToAttrMap(ops::ArangeAttrs{n, std::string(ir::DTypeName(dtype))}),
                            loc, like.graph());
}

}  // namespace tally::ops
