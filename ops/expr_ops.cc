// Operators and functions over Expr (declared in graph_builder.h).
#include <cmath>

#include "ops/graph_builder.h"

namespace tally::dsl {
namespace {

Expr Call(absl::string_view op, std::vector<Expr> in, ir::AttrMap attrs, Loc loc) {
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

#define DSL_BINARY(OP, NAME)                                                        \
  Expr operator OP(Expr a, Expr b) { return Call(NAME, {a, b}, {}, Loc{nullptr, 0}); } \
  Expr operator OP(Expr a, double b) {                                              \
    return Call(NAME, {a, Scalar(a, b, Loc{nullptr, 0})}, {}, Loc{nullptr, 0});     \
  }
DSL_BINARY(+, "add")
DSL_BINARY(-, "sub")
DSL_BINARY(*, "mul")
DSL_BINARY(/, "div")
DSL_BINARY(==, "eq")
DSL_BINARY(!=, "ne")
DSL_BINARY(<, "lt")
DSL_BINARY(<=, "le")
DSL_BINARY(>, "gt")
DSL_BINARY(>=, "ge")
#undef DSL_BINARY

Expr operator+(double a, Expr b) { return Scalar(b, a, Loc{nullptr, 0}) + b; }
Expr operator-(double a, Expr b) { return Scalar(b, a, Loc{nullptr, 0}) - b; }
Expr operator*(double a, Expr b) { return Scalar(b, a, Loc{nullptr, 0}) * b; }
Expr operator/(double a, Expr b) { return Scalar(b, a, Loc{nullptr, 0}) / b; }
Expr operator-(Expr a) { return Call("neg", {a}, {}, Loc{nullptr, 0}); }
Expr operator&&(Expr a, Expr b) { return Call("logical_and", {a, b}, {}, Loc{nullptr, 0}); }
Expr operator||(Expr a, Expr b) { return Call("logical_or", {a, b}, {}, Loc{nullptr, 0}); }
Expr operator!(Expr a) { return Call("logical_not", {a}, {}, Loc{nullptr, 0}); }

Expr Cast(Expr x, DType dtype, Loc loc) {
  if (!x.valid()) return x;
  if (x.dtype() == dtype) return x;
  return Call("cast", {x}, {{"dtype", std::string(ir::DTypeName(dtype))}}, loc);
}
Expr Sum(Expr x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return Call("reduce_sum", {x}, ReduceAttrs(std::move(dims), keepdim), loc);
}
Expr Max(Expr x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return Call("reduce_max", {x}, ReduceAttrs(std::move(dims), keepdim), loc);
}
Expr Min(Expr x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return Call("reduce_min", {x}, ReduceAttrs(std::move(dims), keepdim), loc);
}
Expr Any(Expr x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return Call("reduce_any", {x}, ReduceAttrs(std::move(dims), keepdim), loc);
}
Expr All(Expr x, std::vector<int64_t> dims, bool keepdim, Loc loc) {
  return Call("reduce_all", {x}, ReduceAttrs(std::move(dims), keepdim), loc);
}
Expr Argmax(Expr x, int64_t dim, bool keepdim, Loc loc) {
  ir::AttrMap a{{"dim", dim}};
  if (keepdim) a["keepdim"] = true;
  return Call("argmax", {x}, a, loc);
}
Expr Softmax(Expr x, int64_t dim, Loc loc) { return Call("softmax", {x}, {{"dim", dim}}, loc); }
Expr Where(Expr c, Expr a, Expr b, Loc loc) { return Call("where", {c, a, b}, {}, loc); }
Expr Where(Expr c, Expr a, double b, Loc loc) { return Where(c, a, Scalar(a, b, loc), loc); }
Expr Where(Expr c, double a, Expr b, Loc loc) { return Where(c, Scalar(b, a, loc), b, loc); }
Expr SafeDiv(Expr num, Expr den, double zero_division, Loc loc) {
  return Call("safe_div", {num, den}, {{"zero_division", zero_division}}, loc);
}
Expr Maximum(Expr a, Expr b, Loc loc) { return Call("maximum", {a, b}, {}, loc); }
Expr Minimum(Expr a, Expr b, Loc loc) { return Call("minimum", {a, b}, {}, loc); }
Expr Pow(Expr a, Expr b, Loc loc) { return Call("pow", {a, b}, {}, loc); }
Expr Abs(Expr x, Loc loc) { return Call("abs", {x}, {}, loc); }
Expr Exp(Expr x, Loc loc) { return Call("exp", {x}, {}, loc); }
Expr Log(Expr x, Loc loc) { return Call("log", {x}, {}, loc); }
Expr Sqrt(Expr x, Loc loc) { return Call("sqrt", {x}, {}, loc); }
Expr Sigmoid(Expr x, Loc loc) { return Call("sigmoid", {x}, {}, loc); }
Expr LogCosh(Expr x, Loc loc) { return Call("log_cosh", {x}, {}, loc); }
Expr IsNan(Expr x, Loc loc) { return Call("isnan", {x}, {}, loc); }
Expr Clamp(Expr x, std::optional<double> lo, std::optional<double> hi, Loc loc) {
  ir::AttrMap a;
  if (lo) a["min"] = *lo;
  if (hi) a["max"] = *hi;
  return Call("clamp", {x}, a, loc);
}
Expr OneHot(Expr labels, int64_t num_classes, Loc loc) {
  return Call("one_hot", {labels}, {{"num_classes", num_classes}}, loc);
}
Expr TopkMask(Expr x, int64_t k, Loc loc) { return Call("topk_mask", {x}, {{"k", k}}, loc); }
Expr Histogram(Expr idx, int64_t size, Loc loc) { return Call("histogram", {idx}, {{"size", size}}, loc); }
Expr Histogram(Expr idx, Expr w, int64_t size, Loc loc) {
  return Call("histogram", {idx, w}, {{"size", size}}, loc);
}
Expr ScoreCode16(Expr x, const std::string& format, Loc loc) {
  return Call("score_code16", {x}, {{"format", format}}, loc);
}
Expr ConfmatPart(Expr cm, absl::string_view part, Loc loc) {
  return Call("confmat_part", {cm}, {{"part", std::string(part)}}, loc);
}
Expr Reshape(Expr x, std::vector<int64_t> shape, Loc loc) {
  return Call("reshape", {x}, {{"shape", std::move(shape)}}, loc);
}
Expr Flatten(Expr x, Loc loc) { return Call("flatten", {x}, {}, loc); }
Expr Unsqueeze(Expr x, int64_t dim, Loc loc) { return Call("unsqueeze", {x}, {{"dim", dim}}, loc); }
Expr Squeeze(Expr x, int64_t dim, Loc loc) { return Call("squeeze", {x}, {{"dim", dim}}, loc); }
Expr Select(Expr x, int64_t dim, int64_t index, Loc loc) {
  return Call("select", {x}, {{"dim", dim}, {"index", index}}, loc);
}
Expr Transpose(Expr x, int64_t d0, int64_t d1, Loc loc) {
  return Call("transpose", {x}, {{"dim0", d0}, {"dim1", d1}}, loc);
}
Expr Size(Expr x, int64_t dim, Loc loc) { return Call("size", {x}, {{"dim", dim}}, loc); }
Expr RankAverage(Expr x, Loc loc) { return Call("rank_average", {x}, {}, loc); }
Expr SearchSorted(Expr sorted, Expr values, bool right, Loc loc) {
  return Call("searchsorted", {sorted, values}, {{"right", right}}, loc);
}
Expr SortValues(Expr x, int64_t dim, bool descending, Loc loc) {
  if (!x.valid()) return x;
  std::vector<Expr> r = x.builder()->OpN("sort", {x}, {{"dim", dim}, {"descending", descending}}, loc);
  return r.empty() ? Expr() : r[0];
}
Expr Bucketize(Expr x, Expr boundaries, bool right, Loc loc) {
  return Call("bucketize", {x, boundaries}, {{"right", right}}, loc);
}
Expr Cumsum(Expr x, int64_t dim, Loc loc) { return Call("cumsum", {x}, {{"dim", dim}}, loc); }
TopKResult TopK(Expr x, int64_t k, int64_t dim, bool largest, bool sorted, Loc loc) {
  if (!x.valid()) return {};
  std::vector<Expr> r =
      x.builder()->OpN("topk", {x}, {{"k", k}, {"dim", dim}, {"largest", largest}, {"sorted", sorted}}, loc);
  if (r.size() != 2) return {};
  return {r[0], r[1]};
}
Expr Argsort(Expr x, int64_t dim, bool descending, bool stable, Loc loc) {
  return Call("argsort", {x}, {{"dim", dim}, {"descending", descending}, {"stable", stable}}, loc);
}
Expr Concat(std::vector<Expr> xs, Loc loc) {
  if (xs.empty() || !xs[0].valid()) return Expr();
  return xs[0].builder()->Op("concat", std::move(xs), {}, loc);
}
Expr Take(Expr x, Expr idx, Loc loc) { return Call("take", {x, idx}, {}, loc); }
Expr Full(Expr like, std::vector<int64_t> shape, double value, DType dtype, Loc loc) {
  if (!like.valid()) return like;
  return like.builder()->Op("full", {},
                            {{"shape", std::move(shape)}, {"value", value},
                             {"dtype", std::string(ir::DTypeName(dtype))}},
                            loc, like.graph());
}
Expr FullLike(Expr x, double value, DType dtype, Loc loc) {
  return Call("full_like", {x}, {{"value", value}, {"dtype", std::string(ir::DTypeName(dtype))}}, loc);
}
Expr Linspace(Expr like, double start, double end, int64_t steps, DType dtype, Loc loc) {
  if (!like.valid()) return like;
  return like.builder()->Op("linspace", {},
                            {{"start", start}, {"end", end}, {"steps", steps},
                             {"dtype", std::string(ir::DTypeName(dtype))}},
                            loc, like.graph());
}
Expr Arange(Expr like, int64_t n, DType dtype, Loc loc) {
  if (!like.valid()) return like;
  return like.builder()->Op("arange", {}, {{"n", n}, {"dtype", std::string(ir::DTypeName(dtype))}},
                            loc, like.graph());
}

}  // namespace tally::dsl
