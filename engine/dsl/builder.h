// The C++ DSL that library metrics are written in.
//
// A MetricBuilder holds the metric under construction: its data inputs, its
// states, the update graph (inputs -> partial per state), the finalize graph
// (states -> output) and the merge graphs of custom-merge groups. Expressions
// are `Expr` handles with operator overloading; every node records the DSL
// source line that made it. Errors do not need checking at every line: the
// first failure poisons the builder and `Finish` reports it, like MLIR's
// builders.
//
//   MetricBuilder b("mean_absolute_error", sig, device);
//   Expr preds = b.Input("preds"), target = b.Input("target");
//   State sum = b.AddState("sum_abs_error", DType::kFloat64, {}, Reducer::kSum);
//   b.Accumulate(sum, Sum(Abs(Cast(preds - target, DType::kFloat64))));
//   ...
//   b.Output(SafeDiv(b.Read(sum), b.Read(n)));
//   return b.Finish();
#ifndef TALLY_ENGINE_DSL_BUILDER_H_
#define TALLY_ENGINE_DSL_BUILDER_H_

#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/ir/module.h"
#include "engine/dsl/metric.h"

namespace tally::dsl {

using ir::DType;
using ir::Reducer;

// Loc is the DSL source line that created a node.
struct Loc {
  const char* file;
  int line;
  static Loc Current(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
    return Loc{file, line};
  }
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

// State is a handle to a declared state.
struct State {
  int index = -1;
  std::string name;
};

// InputSpec is what the caller knows about one data input before compiling:
// its dtype and full shape (the leading dim becomes the symbolic `N`).
struct InputSpec {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
};
using Signature = std::vector<InputSpec>;

// GraphBuilder appends typed nodes to graphs and keeps the first error. It is
// what Expr operators build with; MetricBuilder extends it with inputs,
// states and outputs, and op decompositions use it directly on a graph.
class GraphBuilder {
 public:
  GraphBuilder(std::string context, ir::Device device)
      : name_(std::move(context)), device_(std::move(device)) {}
  virtual ~GraphBuilder() = default;
  GraphBuilder(const GraphBuilder&) = delete;
  GraphBuilder& operator=(const GraphBuilder&) = delete;

  const ir::Device& device() const { return device_; }
  // Wrap returns an Expr for an existing value of `g`.
  Expr Wrap(ir::Graph* g, ir::Value* v) { return Expr(this, g, v); }

  // Constant makes a scalar constant of `dtype` in `g`.
  Expr Constant(ir::Graph* g, double value, DType dtype, Loc loc = Loc::Current());
  // Op appends a node to the graph of its operands (or `g` when none).
  Expr Op(absl::string_view op, std::vector<Expr> inputs, ir::AttrMap attrs = {},
          Loc loc = Loc::Current(), ir::Graph* g = nullptr);
  // OpN is Op for multi-result ops.
  std::vector<Expr> OpN(absl::string_view op, std::vector<Expr> inputs, ir::AttrMap attrs,
                        Loc loc = Loc::Current(), ir::Graph* g = nullptr);

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

// Parts is a result made of several tensors: a tuple (or list) whose items
// are tensors or nested Parts, like TorchMetrics' roc (fpr, tpr, thresholds)
// or its exact multiclass form, a tuple of per-class lists of tensors of
// different lengths: Parts{Parts(fprs), Parts(tprs), Parts(thresholds)}.
// Every tuple has at least one item (see engine/dsl/metric.h for the labels).
class Parts {
 public:
  Parts(Expr leaf) : leaf_(leaf) {}  // NOLINT: a tensor is a leaf
  Parts(std::initializer_list<Parts> items) : items_(items) {}
  explicit Parts(std::vector<Parts> items) : items_(std::move(items)) {}
  explicit Parts(const std::vector<Expr>& items) : items_(items.begin(), items.end()) {}

  bool is_leaf() const { return items_.empty() && leaf_.valid(); }
  const Expr& leaf() const { return leaf_; }
  const std::vector<Parts>& items() const { return items_; }

 private:
  Expr leaf_;
  std::vector<Parts> items_;
};

// MetricBuilder builds one Metric.
class MetricBuilder : public GraphBuilder {
 public:
  MetricBuilder(std::string metric_name, Signature sig, ir::Device device = {});

  const std::string& metric_name() const { return name_; }
  const Signature& signature() const { return sig_; }
  // FindInput returns the caller's spec of an input, or nullptr.
  const InputSpec* FindInput(absl::string_view name) const;

  // Input declares a data input (from the signature) and returns it in the
  // update graph; a float16/bfloat16 input is widened to float32 (exactly),
  // so metrics compute as for float32. A missing input poisons the builder.
  Expr Input(const std::string& name);
  // RawInput is Input without the widening: the parameter as declared.
  Expr RawInput(const std::string& name);
  // AddState declares a state of fixed `shape` (a cat state: the trailing dims
  // of each row; its leading dim is the symbolic `R`).
  State AddState(const std::string& name, DType dtype, std::vector<int64_t> shape,
                 Reducer reducer, double init = 0, const std::string& group = "");
  // Accumulate sets the update's partial for `s` (cast to the state dtype).
  void Accumulate(const State& s, Expr partial, Loc loc = Loc::Current());
  // Check declares a deferred validation counter: `count` (an integer scalar
  // computed in the update) is summed on device and `Compute` fails with
  // "<metric>: <input>: <n> <message>" when it is non-zero.
  void Check(const std::string& input, const std::string& message, Expr count,
             Loc loc = Loc::Current());
  // Read returns a state as a finalize-graph value.
  Expr Read(const State& s);
  // MergeA/MergeB return a custom-merge state's two operands in its group's
  // merge graph; SetMerged sets the merged result.
  Expr MergeA(const State& s);
  Expr MergeB(const State& s);
  void SetMerged(const State& s, Expr merged, Loc loc = Loc::Current());
  // Output sets the metric's result: one tensor (labelled "value"), or
  // several (one return per tensor, labelled "value/<i>/<j>..." by its path).
  void Output(Expr value, Loc loc = Loc::Current());
  void Output(const Parts& value, Loc loc = Loc::Current());

  // FailInput reports a bad input: "<metric>: <input>: <what>".
  void FailInput(const std::string& input, const std::string& what);

  ir::Graph* update_graph() { return module_->update.get(); }
  ir::Graph* finalize_graph() { return module_->finalize.get(); }

  // Finish verifies the metric and returns it.
  absl::StatusOr<Metric> Finish();

 private:
  ir::Graph* MergeGraph(const std::string& group);
  void EnsureFinalizeParams();

  Signature sig_;
  std::unique_ptr<ir::Module> module_;
  std::vector<ir::Value*> state_partials_;
  std::vector<ir::Value*> merged_;
  bool output_set_ = false;
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
// ConfmatPart reads one per-class statistic ("tp", "target", "pred",
// "abs_err", "sq_err"; ops/confmat_parts.h) of a [C, C] confusion matrix.
// Finalize graphs read a matrix state this way so that the compiler can keep
// only the statistics read (narrow-states).
Expr ConfmatPart(Expr cm, absl::string_view part, Loc loc = Loc::Current());
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
TopKResult TopK(Expr x, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true,
                Loc loc = Loc::Current());
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

}  // namespace tally::dsl

#endif  // TALLY_ENGINE_DSL_BUILDER_H_
