// The op-level graph builder: `Expr` handles over the values of an IR
// graph, with operator overloading and one function per op, each node typed
// by the op table (ops::Build) and tagged with the source line that made it.
// Metrics are written with it through engine/dsl/builder.h (MetricBuilder
// extends GraphBuilder); op decompositions (ops/decompositions.h) use it
// directly on a graph, which is why it lives here, below the DSL. Its names
// are the DSL's (namespace dsl), so that metric code reads one vocabulary.
#ifndef TALLY_OPS_GRAPH_BUILDER_H_
#define TALLY_OPS_GRAPH_BUILDER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/ir/graph.h"
#include "ops/op_list.h"

namespace tally::ops {

using ir::DType;

// Loc is the DSL source line that created a node.
struct Loc {
  const char* file;
  int line;
  static Loc Current(const char* file = __builtin_FILE(), int line = __builtin_LINE()) { return Loc{file, line}; }
  std::string ToString() const;
};

class GraphBuilder;

// Expr is a value under construction in one of the builder's graphs. A
// default-constructed or failed Expr is invalid; ops on it stay invalid.
class Expr {
 public:
  Expr() = default;
  Expr(GraphBuilder* b, ir::Graph* g, ir::Value* v) : b_(b), g_(g), v_(v) {}
  bool valid() const { return v_ != nullptr; }
  GraphBuilder* builder() const { return b_; }
  ir::Graph* graph() const { return g_; }
  ir::Value* value() const { return v_; }
  const ir::TensorType& type() const;
  DType dtype() const { return type().dtype; }
  int64_t rank() const { return type().rank(); }

 private:
  GraphBuilder* b_ = nullptr;
  ir::Graph* g_ = nullptr;
  ir::Value* v_ = nullptr;
};

// GraphBuilder appends typed nodes to graphs and keeps the first error. It is
// what Expr operators build with; MetricBuilder extends it with inputs,
// states and outputs, and op decompositions use it directly on a graph.
class GraphBuilder {
 public:
  GraphBuilder(std::string context, ir::Device device) : name_(std::move(context)), device_(std::move(device)) {}
  virtual ~GraphBuilder() = default;
  GraphBuilder(const GraphBuilder&) = delete;
  GraphBuilder& operator=(const GraphBuilder&) = delete;

  const ir::Device& device() const { return device_; }
  // Wrap returns an Expr for an existing value of `g`.
  Expr Wrap(ir::Graph* g, ir::Value* v) { return Expr(this, g, v); }

  // Constant makes a scalar constant of `dtype` in `g`.
  Expr Constant(ir::Graph* g, double value, DType dtype, Loc loc = Loc::Current());
  // Op appends a node to the graph of its operands (or `g` when none).
  Expr Op(ops::OpId op, std::vector<Expr> inputs, ir::AttrMap attrs = {}, Loc loc = Loc::Current(),
          ir::Graph* g = nullptr);
  // OpN is Op for multi-result ops.
  std::vector<Expr> OpN(ops::OpId op, std::vector<Expr> inputs, ir::AttrMap attrs, Loc loc = Loc::Current(),
                        ir::Graph* g = nullptr);

  // Fail poisons the builder with `status` (the first failure wins); the
  // message is prefixed with the context (the metric name).
  void Fail(const absl::Status& status);
  bool ok() const { return status_.ok(); }
  const absl::Status& status() const { return status_; }

 protected:
  std::string name_;
  ir::Device device_;
  absl::Status status_;
};

// Operators and functions over Expr. Scalars take the dtype of the other
// operand when it can hold them (floats, or integers for integral values),
// else f32 — the result then follows the IR's promotion.
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator+(Expr a, double b);
Expr operator-(Expr a, double b);
Expr operator*(Expr a, double b);
Expr operator/(Expr a, double b);
Expr operator+(double a, Expr b);
Expr operator-(double a, Expr b);
Expr operator*(double a, Expr b);
Expr operator/(double a, Expr b);
Expr operator-(Expr a);
Expr operator==(Expr a, Expr b);
Expr operator!=(Expr a, Expr b);
Expr operator<(Expr a, Expr b);
Expr operator<=(Expr a, Expr b);
Expr operator>(Expr a, Expr b);
Expr operator>=(Expr a, Expr b);
Expr operator==(Expr a, double b);
Expr operator!=(Expr a, double b);
Expr operator<(Expr a, double b);
Expr operator<=(Expr a, double b);
Expr operator>(Expr a, double b);
Expr operator>=(Expr a, double b);
Expr operator&&(Expr a, Expr b);
Expr operator||(Expr a, Expr b);
Expr operator!(Expr a);

// Scalar returns a constant in the graph of `like`, typed as described above.
Expr Scalar(Expr like, double v, Loc loc = Loc::Current());
// ScalarOf returns a constant of an explicit dtype in the graph of `like`.
Expr ScalarOf(Expr like, double v, DType dtype, Loc loc = Loc::Current());
// Dense returns a 1-D constant of `values` (cast to `dtype`) in the graph of
// `like`: one node, whatever the length.
Expr Dense(Expr like, std::vector<double> values, DType dtype, Loc loc = Loc::Current());

Expr Cast(Expr x, DType dtype, Loc loc = Loc::Current());
Expr Sum(Expr x, std::vector<int64_t> dims = {}, bool keepdim = false, Loc loc = Loc::Current());
Expr Max(Expr x, std::vector<int64_t> dims = {}, bool keepdim = false, Loc loc = Loc::Current());
Expr Min(Expr x, std::vector<int64_t> dims = {}, bool keepdim = false, Loc loc = Loc::Current());
Expr Any(Expr x, std::vector<int64_t> dims = {}, bool keepdim = false, Loc loc = Loc::Current());
Expr All(Expr x, std::vector<int64_t> dims = {}, bool keepdim = false, Loc loc = Loc::Current());
Expr Argmax(Expr x, int64_t dim, bool keepdim = false, Loc loc = Loc::Current());
Expr Softmax(Expr x, int64_t dim, Loc loc = Loc::Current());
Expr Where(Expr cond, Expr a, Expr b, Loc loc = Loc::Current());
Expr Where(Expr cond, Expr a, double b, Loc loc = Loc::Current());
Expr Where(Expr cond, double a, Expr b, Loc loc = Loc::Current());
Expr SafeDiv(Expr num, Expr den, double zero_division = 0.0, Loc loc = Loc::Current());
Expr Maximum(Expr a, Expr b, Loc loc = Loc::Current());
Expr Minimum(Expr a, Expr b, Loc loc = Loc::Current());
Expr Pow(Expr a, Expr b, Loc loc = Loc::Current());
Expr Abs(Expr x, Loc loc = Loc::Current());
Expr Exp(Expr x, Loc loc = Loc::Current());
Expr Log(Expr x, Loc loc = Loc::Current());
Expr Sqrt(Expr x, Loc loc = Loc::Current());
Expr Acos(Expr x, Loc loc = Loc::Current());
Expr Atan(Expr x, Loc loc = Loc::Current());
Expr Sigmoid(Expr x, Loc loc = Loc::Current());
Expr LogCosh(Expr x, Loc loc = Loc::Current());
Expr IsNan(Expr x, Loc loc = Loc::Current());
// ScoreCode16 is each value rounded to float16 ("fp16") or bfloat16
// ("bf16") as an i64 code in [0, 65536) ordered as the values (-0 as +0,
// NaN largest).
Expr ScoreCode16(Expr x, const std::string& format, Loc loc = Loc::Current());
Expr Clamp(Expr x, std::optional<double> lo, std::optional<double> hi, Loc loc = Loc::Current());
Expr OneHot(Expr labels, int64_t num_classes, Loc loc = Loc::Current());
Expr TopkMask(Expr x, int64_t k, Loc loc = Loc::Current());
Expr Histogram(Expr idx, int64_t size, Loc loc = Loc::Current());
Expr Histogram(Expr idx, Expr weights, int64_t size, Loc loc = Loc::Current());
// CountOutside is the i64[] count of x's elements outside [low, high), NaN
// included (a range check in one read; ops/fused/count_outside.h).
Expr CountOutside(Expr x, double low, double high, Loc loc = Loc::Current());
// ConfmatPartOf reads one per-class statistic ("tp", "target", "pred",
// "abs_err", "sq_err"; ops/confmat_parts.h) of a [C, C] confusion matrix.
// Finalize graphs read a matrix state this way so that the compiler can keep
// only the statistics read (narrow-states).
Expr ConfmatPartOf(Expr cm, absl::string_view part, Loc loc = Loc::Current());
Expr Reshape(Expr x, std::vector<int64_t> shape, Loc loc = Loc::Current());
Expr Flatten(Expr x, Loc loc = Loc::Current());
Expr Unsqueeze(Expr x, int64_t dim, Loc loc = Loc::Current());
Expr Squeeze(Expr x, int64_t dim, Loc loc = Loc::Current());
Expr Select(Expr x, int64_t dim, int64_t index, Loc loc = Loc::Current());
Expr Transpose(Expr x, int64_t dim0, int64_t dim1, Loc loc = Loc::Current());
Expr Size(Expr x, int64_t dim, Loc loc = Loc::Current());
Expr RankAverage(Expr x, Loc loc = Loc::Current());
// SearchSorted counts, for every element of `values`, the elements of the
// ascending 1-D `sorted` that are < it (or <= it with `right`); i64.
Expr SearchSorted(Expr sorted, Expr values, bool right = false, Loc loc = Loc::Current());
// SortValues is the ascending (or descending) stable sort of `x` along `dim`.
Expr SortValues(Expr x, int64_t dim, bool descending = false, Loc loc = Loc::Current());
// Bucketize is torch.bucketize: for every element of `x`, the number of
// elements of the ascending 1-D `boundaries` that are < it (<= it with
// `right`), compared in the promoted dtype; i64 of x's shape.
Expr Bucketize(Expr x, Expr boundaries, bool right = false, Loc loc = Loc::Current());
// Cumsum is the inclusive prefix sum of `x` along `dim` (bools and integers
// accumulate in i64): deterministic, and on x's device.
Expr Cumsum(Expr x, int64_t dim, Loc loc = Loc::Current());
// TopKResult holds topk's two results.
struct TopKResult {
  Expr values;
  Expr indices;  // i64
};
// TopK is the `k` largest (or smallest) elements of `x` along `dim`, sorted
// by value when `sorted`, and their indices.
TopKResult TopK(Expr x, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true, Loc loc = Loc::Current());
// Argsort is the permutation (i64) that sorts `x` along `dim`; ties keep
// their order when `stable`.
Expr Argsort(Expr x, int64_t dim = -1, bool descending = false, bool stable = true, Loc loc = Loc::Current());
// Concat joins tensors of one dtype along dim 0 (torch.cat(xs, 0)).
Expr Concat(std::vector<Expr> xs, Loc loc = Loc::Current());
// Take is x[idx] for a 1-D `x` (idx's shape), indices clamped into range.
Expr Take(Expr x, Expr idx, Loc loc = Loc::Current());
// Full makes a tensor of fixed `shape` filled with `value` in the graph of `like`.
Expr Full(Expr like, std::vector<int64_t> shape, double value, DType dtype, Loc loc = Loc::Current());
// FullLike makes a tensor of x's shape filled with `value`.
Expr FullLike(Expr x, double value, DType dtype, Loc loc = Loc::Current());
// Arange makes [0, n) in the graph of `like`.
Expr Arange(Expr like, int64_t n, DType dtype = DType::kInt64, Loc loc = Loc::Current());
// Linspace makes torch.linspace(start, end, steps) (float `dtype`, ATen's
// own rounding) in the graph of `like`.
Expr Linspace(Expr like, double start, double end, int64_t steps, DType dtype, Loc loc = Loc::Current());
// DepthwiseConv2d correlates every channel of floating `x` [N, C, H, W]
// with one window `weight` [kh, kw] (x's dtype), over the windows inside
// the image every `stride` pixels, after `pad_h` rows and `pad_w` columns
// of reflection padding on each side: [N, C, (H+2pad_h-kh)/stride+1,
// (W+2pad_w-kw)/stride+1] (F.pad(mode="reflect"), then F.conv2d with
// groups=C). A one-hot window crops; a 2x2 window of 1/4 with stride 2 is
// avg_pool2d.
Expr DepthwiseConv2d(Expr x, Expr weight, int64_t stride = 1, int64_t pad_h = 0, int64_t pad_w = 0,
                     Loc loc = Loc::Current());
// ClassOverlap counts, per mask pair and class, the pixels both masks give
// the class, preds gives it and target gives it: i64 [N, 3, C'] (C' drops
// class 0 without include_background). Index masks are [N, ...] class ids
// in [0, num_classes); one-hot masks are [N, num_classes, ...] of 0 and 1.
Expr ClassOverlap(Expr preds, Expr target, int64_t num_classes, bool index, bool include_background,
                  Loc loc = Loc::Current());
// Matmul is the matrix product of `a` [M, K] and `b` [K, P] (one floating dtype).
Expr Matmul(Expr a, Expr b, Loc loc = Loc::Current());
// TraceSqrt is the sum of the square roots of the eigenvalues of the
// square `m`, its real part in f64: tr(sqrtm(m)) for a product of two
// covariance matrices, as torch.linalg.eigvals(m).sqrt().real.sum().
Expr TraceSqrt(Expr m, Loc loc = Loc::Current());

}  // namespace tally::ops

#endif  // TALLY_OPS_GRAPH_BUILDER_H_
