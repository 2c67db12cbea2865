// Operators and functions over Expr (declared in graph_builder.h).
#include <cmath>

#include "ops/graph_builder.h"

namespace tally::dsl {
namespace {

Expr Call(ops::OpId op, std::vector<Expr> in, ir::AttrMap attrs, Loc loc) {
  for (const Expr& e : in)
    if (!e.valid()) return Expr();
  return in[0].builder()->Op(op, std::move(in), std::move(attrs), loc);
}

ir::AttrMap ReduceAttrs(std::vector<int64_t> dims, bool keepdim) {
  ir::AttrMap a;
  if (!dims.empty()) a["dims"] = std::move(dims);
  if (keepdim) a["keepdim"] = true;
  return a;
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
  return Call(ops::OpId::kCast, {x}, {{"dtype", std::string(ir::DTypeName(dtype))}}, loc);
}
Expr Sum(Expr x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return Call(ops::OpId::kReduceSum, {x}, ReduceAttrs(std::move(dims), keepdim), loc);
}
Expr Max(Expr x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return Call(ops::OpId::kReduceMax, {x}, ReduceAttrs(std::move(dims), keepdim), loc);
}
Expr Min(Expr x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return Call(ops::OpId::kReduceMin, {x}, ReduceAttrs(std::move(dims), keepdim), loc);
}
Expr Any(Expr x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return Call(ops::OpId::kReduceAny, {x}, ReduceAttrs(std::move(dims), keepdim), loc);
}
Expr All(Expr x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return Call(ops::OpId::kReduceAll, {x}, ReduceAttrs(std::move(dims), keepdim), loc);
}
Expr Argmax(Expr x, int64_t dim, bool keepdim, Loc loc) {
  ir::AttrMap a{{"dim", dim}};
  if (keepdim) a["keepdim"] = true;
  return Call(ops::OpId::kArgmax, {x}, a, loc);
}
Expr Softmax(Expr x, int64_t dim, Loc loc) { return Call(ops::OpId::kSoftmax, {x}, {{"dim", dim}}, loc); }
Expr Where(Expr c, Expr a, Expr b, Loc loc) { return Call(ops::OpId::kWhere, {c, a, b}, {}, loc); }
Expr Where(Expr c, Expr a, double b, Loc loc) { return Where(c, a, Scalar(a, b, loc), loc); }
Expr Where(Expr c, double a, Expr b, Loc loc) { return Where(c, Scalar(b, a, loc), b, loc); }
Expr SafeDiv(Expr num, Expr den, double zero_division, Loc loc) {
  return Call(ops::OpId::kSafeDiv, {num, den}, {{"zero_division", zero_division}}, loc);
}
Expr Maximum(Expr a, Expr b, Loc loc) { return Call(ops::OpId::kMaximum, {a, b}, {}, loc); }
Expr Minimum(Expr a, Expr b, Loc loc) { return Call(ops::OpId::kMinimum, {a, b}, {}, loc); }
Expr Pow(Expr a, Expr b, Loc loc) { return Call(ops::OpId::kPow, {a, b}, {}, loc); }
Expr Abs(Expr x, Loc loc) { return Call(ops::OpId::kAbs, {x}, {}, loc); }
Expr Exp(Expr x, Loc loc) { return Call(ops::OpId::kExp, {x}, {}, loc); }
Expr Log(Expr x, Loc loc) { return Call(ops::OpId::kLog, {x}, {}, loc); }
Expr Sqrt(Expr x, Loc loc) { return Call(ops::OpId::kSqrt, {x}, {}, loc); }
Expr Sigmoid(Expr x, Loc loc) { return Call(ops::OpId::kSigmoid, {x}, {}, loc); }
Expr LogCosh(Expr x, Loc loc) { return Call(ops::OpId::kLogCosh, {x}, {}, loc); }
Expr IsNan(Expr x, Loc loc) { return Call(ops::OpId::kIsnan, {x}, {}, loc); }
Expr Clamp(Expr x, std::optional<double> lo, std::optional<double> hi, Loc loc) {
  ir::AttrMap a;
  if (lo) a["min"] = *lo;
  if (hi) a["max"] = *hi;
  return Call(ops::OpId::kClamp, {x}, a, loc);
}
Expr OneHot(Expr labels, int64_t num_classes, Loc loc) {
  return Call(ops::OpId::kOneHot, {labels}, {{"num_classes", num_classes}}, loc);
}
Expr TopkMask(Expr x, int64_t k, Loc loc) { return Call(ops::OpId::kTopkMask, {x}, {{"k", k}}, loc); }
Expr Histogram(Expr idx, int64_t size, Loc loc) { return Call(ops::OpId::kHistogram, {idx}, {{"size", size}}, loc); }
Expr Histogram(Expr idx, Expr w, int64_t size, Loc loc) {
  return Call(ops::OpId::kHistogram, {idx, w}, {{"size", size}}, loc);
}
Expr ScoreCode16(Expr x, const std::string& format, Loc loc) {
  return Call(ops::OpId::kScoreCode16, {x}, {{"format", format}}, loc);
}
Expr ConfmatPart(Expr cm, absl::string_view part, Loc loc) {
  return Call(ops::OpId::kConfmatPart, {cm}, {{"part", std::string(part)}}, loc);
}
Expr Reshape(Expr x, std::vector<int64_t> shape, Loc loc) {
  return Call(ops::OpId::kReshape, {x}, {{"shape", std::move(shape)}}, loc);
}
Expr Flatten(Expr x, Loc loc) { return Call(ops::OpId::kFlatten, {x}, {}, loc); }
Expr Unsqueeze(Expr x, int64_t dim, Loc loc) { return Call(ops::OpId::kUnsqueeze, {x}, {{"dim", dim}}, loc); }
Expr Squeeze(Expr x, int64_t dim, Loc loc) { return Call(ops::OpId::kSqueeze, {x}, {{"dim", dim}}, loc); }
Expr Select(Expr x, int64_t dim, int64_t index, Loc loc) {
  return Call(ops::OpId::kSelect, {x}, {{"dim", dim}, {"index", index}}, loc);
}
Expr Transpose(Expr x, int64_t d0, int64_t d1, Loc loc) {
  return Call(ops::OpId::kTranspose, {x}, {{"dim0", d0}, {"dim1", d1}}, loc);
}
Expr Size(Expr x, int64_t dim, Loc loc) { return Call(ops::OpId::kSize, {x}, {{"dim", dim}}, loc); }
Expr RankAverage(Expr x, Loc loc) { return Call(ops::OpId::kRankAverage, {x}, {}, loc); }
Expr SearchSorted(Expr sorted, Expr values, bool right, Loc loc) {
  return Call(ops::OpId::kSearchsorted, {sorted, values}, {{"right", right}}, loc);
}
Expr SortValues(Expr x, int64_t dim, bool descending, Loc loc) {
  if (!x.valid()) return x;
  std::vector<Expr> r = x.builder()->OpN(ops::OpId::kSort, {x}, {{"dim", dim}, {"descending", descending}}, loc);
  return r.empty() ? Expr() : r[0];
}
Expr Bucketize(Expr x, Expr boundaries, bool right, Loc loc) {
  return Call(ops::OpId::kBucketize, {x, boundaries}, {{"right", right}}, loc);
}
Expr Cumsum(Expr x, int64_t dim, Loc loc) { return Call(ops::OpId::kCumsum, {x}, {{"dim", dim}}, loc); }
TopKResult TopK(Expr x, int64_t k, int64_t dim, bool largest, bool sorted, Loc loc) {
  if (!x.valid()) return {};
  std::vector<Expr> r =
      x.builder()->OpN(ops::OpId::kTopk, {x}, {{"k", k}, {"dim", dim}, {"largest", largest}, {"sorted", sorted}}, loc);
  if (r.size() != 2) return {};
  return {r[0], r[1]};
}
Expr Argsort(Expr x, int64_t dim, bool descending, bool stable, Loc loc) {
  return Call(ops::OpId::kArgsort, {x}, {{"dim", dim}, {"descending", descending}, {"stable", stable}}, loc);
}
Expr Concat(std::vector<Expr> xs, Loc loc) {
  if (xs.empty() || !xs[0].valid()) return Expr();
  return xs[0].builder()->Op(ops::OpId::kConcat, std::move(xs), {}, loc);
}
Expr Take(Expr x, Expr idx, Loc loc) { return Call(ops::OpId::kTake, {x, idx}, {}, loc); }
Expr Full(Expr like, std::vector<int64_t> shape, double value, DType dtype, Loc loc) {
  if (!like.valid()) return like;
  return like.builder()->Op(
      ops::OpId::kFull, {},
      {{"shape", std::move(shape)}, {"value", value}, {"dtype", std::string(ir::DTypeName(dtype))}}, loc, like.graph());
}
Expr FullLike(Expr x, double value, DType dtype, Loc loc) {
  return Call(ops::OpId::kFullLike, {x}, {{"value", value}, {"dtype", std::string(ir::DTypeName(dtype))}}, loc);
}
Expr Linspace(Expr like, double start, double end, int64_t steps, DType dtype, Loc loc) {
  if (!like.valid()) return like;
  return like.builder()->Op(
      ops::OpId::kLinspace, {},
      {{"start", start}, {"end", end}, {"steps", steps}, {"dtype", std::string(ir::DTypeName(dtype))}}, loc,
      like.graph());
}
Expr Arange(Expr like, int64_t n, DType dtype, Loc loc) {
  if (!like.valid()) return like;
  return like.builder()->Op(ops::OpId::kArange, {}, {{"n", n}, {"dtype", std::string(ir::DTypeName(dtype))}}, loc,
                            like.graph());
}

}  // namespace tally::dsl
