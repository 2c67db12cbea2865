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
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/dsl/metric.h"
#include "engine/ir/module.h"
#include "ops/graph_builder.h"

namespace tally::dsl {

using ir::DType;
using ir::Reducer;

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

// Parts is a result made of several tensors: a tuple (or list) whose items
// are tensors or nested Parts, like TorchMetrics' roc (fpr, tpr, thresholds)
// or its exact multiclass form, a tuple of per-class lists of tensors of
// different lengths: Parts{Parts(fprs), Parts(tprs), Parts(thresholds)}.
// Every tuple has at least one item (see engine/dsl/metric.h for the labels).
class Parts {
 public:
  Parts(ops::Expr leaf) : leaf_(leaf) {}  // NOLINT: a tensor is a leaf
  Parts(std::initializer_list<Parts> items) : items_(items) {}
  explicit Parts(std::vector<Parts> items) : items_(std::move(items)) {}
  explicit Parts(const std::vector<ops::Expr>& items) : items_(items.begin(), items.end()) {}

  bool is_leaf() const { return items_.empty() && leaf_.valid(); }
  const ops::Expr& leaf() const { return leaf_; }
  const std::vector<Parts>& items() const { return items_; }

 private:
  ops::Expr leaf_;
  std::vector<Parts> items_;
};

// MetricBuilder builds one Metric.
class MetricBuilder : public ops::GraphBuilder {
 public:
  MetricBuilder(std::string metric_name, Signature sig, ir::Device device = {});

  const std::string& metric_name() const { return name_; }
  const Signature& signature() const { return sig_; }
  // FindInput returns the caller's spec of an input, or nullptr.
  const InputSpec* FindInput(absl::string_view name) const;

  // Input declares a data input (from the signature) and returns it in the
  // update graph; a float16/bfloat16 input is widened to float32 (exactly),
  // so metrics compute as for float32. A missing input poisons the builder.
  ops::Expr Input(const std::string& name);
  // RawInput is Input without the widening: the parameter as declared.
  ops::Expr RawInput(const std::string& name);
  // RaggedInput is RawInput whose dim `dim` (besides the rows) varies from
  // batch to batch, as transcripts' widths do: the program's symbol `symbol`
  // instead of the first batch's size.
  ops::Expr RaggedInput(const std::string& name, int64_t dim, const std::string& symbol);
  // AddState declares a state of fixed `shape` (a cat state: the trailing dims
  // of each row; its leading dim is the symbolic `R`).
  State AddState(const std::string& name, DType dtype, std::vector<int64_t> shape, Reducer reducer, double init = 0,
                 const std::string& group = "");
  // Accumulate sets the update's partial for `s` (cast to the state dtype).
  void Accumulate(const State& s, ops::Expr partial, ops::Loc loc = ops::Loc::Current());
  // AccumulateAt sets the update's partial for the int64 sum state `s` as
  // int64 rows [..., 2] of (flat element index, count), and makes `s` a
  // scatter state (ir::StateDecl::scatter): an update adds only at those
  // elements. Indices must lie in [0, numel) (the op that makes them
  // ensures it; a count of 0 adds nothing).
  void AccumulateAt(const State& s, ops::Expr rows, ops::Loc loc = ops::Loc::Current());
  // Check declares a deferred validation counter: `count` (an integer scalar
  // computed in the update) is summed on device and `Compute` fails with
  // "<metric>: <input>: <n> <message>" when it is non-zero.
  void Check(const std::string& input, const std::string& message, ops::Expr count, ops::Loc loc = ops::Loc::Current());
  // Read returns a state as a finalize-graph value.
  ops::Expr Read(const State& s);
  // MergeA/MergeB return a custom-merge state's two operands in its group's
  // merge graph; SetMerged sets the merged result.
  ops::Expr MergeA(const State& s);
  ops::Expr MergeB(const State& s);
  void SetMerged(const State& s, ops::Expr merged, ops::Loc loc = ops::Loc::Current());
  // Output sets the metric's result: one tensor (labelled "value"), or
  // several (one return per tensor, labelled "value/<i>/<j>..." by its path).
  void Output(ops::Expr value, ops::Loc loc = ops::Loc::Current());
  void Output(const Parts& value, ops::Loc loc = ops::Loc::Current());
  // SetResultKeys names the items of a tuple result (Metric::result_keys).
  void SetResultKeys(std::vector<std::string> keys) { result_keys_ = std::move(keys); }

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
  std::vector<std::string> result_keys_;
};

}  // namespace tally::dsl

#endif  // TALLY_ENGINE_DSL_BUILDER_H_
