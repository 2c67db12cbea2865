// Tests of the eager ATen kernels: each against a direct ATen computation on
// small tensors, the edge cases the op table promises (empty reductions,
// out-of-range indices, ties, overflow), planned dtypes and shapes for every
// op (also on empty batches), and every sync-free kernel running on `meta`
// tensors — the mechanical proof that it never reads a value on the host.
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/ir/aten_types.h"
#include "engine/ir/graph.h"
#include "engine/ir/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/decompositions.h"
#include "ops/fused/class_overlap.h"
#include "ops/fused/coco_eval.h"
#include "ops/fused/depthwise_conv.h"
#include "ops/fused/edit_distance.h"
#include "ops/fused/lcs_length.h"
#include "ops/fused/ngram_matches.h"
#include "ops/fused/panoptic_match.h"
#include "ops/fused/script.h"
#include "ops/fused/sdr.h"
#include "ops/fused/signal_ratio.h"
#include "ops/fused/ter_edits.h"
#include "ops/fused/token_nll.h"
#include "ops/fused/trace_sqrt.h"
#include "ops/kernels.h"
#include "ops/op_registry.h"
#include "tests/testlib/status_matchers.h"

namespace tally::ops {
namespace {

using ::tally::testing::IsOk;

// OneNode is a graph holding a single node over fresh parameters.
struct OneNode {
  std::unique_ptr<ir::Graph> graph;
  ir::Node* node = nullptr;
};

// MakeNode builds `op` over parameters of the given types (`f32[N,4]`) placed
// on `device`.
absl::StatusOr<OneNode> MakeNode(const std::string& op, const std::vector<std::string>& inputs,
                                 const ir::AttrMap& attrs, const std::string& device) {
  OneNode r;
  r.graph = std::make_unique<ir::Graph>("g");
  std::vector<ir::Value*> params;
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto t = ir::ParseTensorType(inputs[i]);
    if (!t.ok()) return t.status();
    t->device = ir::Device{device};
    params.push_back(r.graph->AddParam(absl::StrCat("in", i), *t));
  }
  auto n = Build(*r.graph, op, params, attrs, ir::Device{device});
  if (!n.ok()) return n.status();
  r.node = *n;
  return r;
}

// RunKernel runs the node's eager kernel; an exception becomes an error.
absl::StatusOr<std::vector<at::Tensor>> RunKernel(const ir::Node& n, std::vector<at::Tensor> in) {
  Kernel k = FindKernel(n.op());
  if (k == nullptr) return absl::NotFoundError(absl::StrCat("no kernel for ", n.op()));
  std::vector<at::Tensor> out(n.outputs().size());
  try {
    k(n, in.data(), out.data());
  } catch (const std::exception& e) {
    std::string what = e.what();
    return absl::InternalError(absl::StrCat(n.op(), " threw: ", what.substr(0, what.find('\n'))));
  }
  return out;
}

// Eval builds and runs `op` on concrete tensors (types must match them).
absl::StatusOr<std::vector<at::Tensor>> Eval(const std::string& op, const std::vector<std::string>& types,
                                             const ir::AttrMap& attrs, std::vector<at::Tensor> in,
                                             const std::string& device = "cpu") {
  auto n = MakeNode(op, types, attrs, device);
  if (!n.ok()) return n.status();
  return RunKernel(*n->node, std::move(in));
}

// Eval1 is Eval for single-result ops.
absl::StatusOr<at::Tensor> Eval1(const std::string& op, const std::vector<std::string>& types, const ir::AttrMap& attrs,
                                 std::vector<at::Tensor> in) {
  auto out = Eval(op, types, attrs, std::move(in));
  if (!out.ok()) return out.status();
  return (*out)[0];
}

// SameTensor compares dtype, sizes and values (NaN equals NaN; floating
// values within a tight tolerance).
::testing::AssertionResult SameTensor(const at::Tensor& got, const at::Tensor& want, double rtol = 1e-6,
                                      double atol = 1e-7) {
  std::ostringstream why;
  if (!got.defined()) return ::testing::AssertionFailure() << "result is undefined";
  if (got.scalar_type() != want.scalar_type()) {
    why << "dtype " << got.scalar_type() << ", want " << want.scalar_type();
  } else if (got.sizes() != want.sizes()) {
    why << "sizes " << got.sizes() << ", want " << want.sizes();
  } else if (at::isFloatingType(got.scalar_type()) ? !at::allclose(got, want, rtol, atol, /*equal_nan=*/true)
                                                   : !at::equal(got, want)) {
    why << "values differ";
  } else {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << why.str() << "\n got: " << got << "\nwant: " << want;
}

at::Tensor F32(std::vector<float> v) { return at::tensor(v, at::kFloat); }
at::Tensor F64(std::vector<double> v) { return at::tensor(v, at::kDouble); }
at::Tensor I64(std::vector<int64_t> v) { return at::tensor(v, at::kLong); }
at::Tensor I32(std::vector<int32_t> v) { return at::tensor(v, at::kInt); }
at::Tensor Bool(std::vector<int> v) {
  return at::tensor(std::vector<int64_t>(v.begin(), v.end()), at::kLong).to(at::kBool);
}

// ----------------------------------------------------------------------------
// Every op: a sample node, run on cpu (also with N = 0) and on meta.

struct Sample {
  std::string name;  // unique label (op, or op/variant)
  std::string op;
  std::vector<std::string> inputs;
  ir::AttrMap attrs;
};

std::vector<Sample> Samples() {
  using Ints = std::vector<int64_t>;
  std::vector<Sample> s;
  for (const char* op : {"add", "sub", "mul", "div", "pow", "maximum", "minimum", "safe_div"}) {
    s.push_back({op, op, {"f32[N,4]", "f32[4]"}, {}});
  }
  s.push_back({"add/int", "add", {"i32[N]", "i64[]"}, {}});
  s.push_back({"add/bool", "add", {"i1[N]", "i1[N]"}, {}});
  s.push_back({"div/int", "div", {"i64[N]", "i64[N]"}, {}});
  s.push_back({"maximum/bool", "maximum", {"i1[N]", "i1[N]"}, {}});
  s.push_back({"safe_div/nan", "safe_div", {"i64[N]", "f64[N]"}, {{"zero_division", NAN}}});
  for (const char* op : {"eq", "ne", "lt", "le", "gt", "ge"}) {
    s.push_back({op, op, {"f32[N,4]", "i64[N,4]"}, {}});
  }
  for (const char* op : {"logical_and", "logical_or", "logical_xor"}) s.push_back({op, op, {"i1[N]", "f32[N]"}, {}});
  s.push_back({"logical_not", "logical_not", {"i64[N]"}, {}});
  for (const char* op : {"neg", "abs", "exp", "log", "sqrt", "acos", "atan", "sigmoid", "log_cosh", "isnan"}) {
    s.push_back({op, op, {"f32[N]"}, {}});
  }
  s.push_back({"exp/int", "exp", {"i64[N]"}, {}});
  s.push_back({"abs/int", "abs", {"i32[N]"}, {}});
  s.push_back({"clamp", "clamp", {"f32[N]"}, {{"min", -0.5}, {"max", 0.5}}});
  s.push_back({"clamp/int", "clamp", {"i64[N]"}, {{"min", 0.0}, {"max", 2.0}}});
  s.push_back({"cast", "cast", {"f32[N]"}, {{"dtype", std::string("i64")}}});
  s.push_back({"cast/bool", "cast", {"f32[N]"}, {{"dtype", std::string("i1")}}});
  s.push_back({"where", "where", {"i1[N]", "i64[N]", "f32[]"}, {}});
  for (const char* op : {"reduce_sum", "reduce_max", "reduce_min", "reduce_any", "reduce_all"}) {
    s.push_back({op, op, {"f32[N,4]"}, {{"dims", Ints{1}}}});
    s.push_back({std::string(op) + "/all", op, {"i32[N,4]"}, {}});
    s.push_back({std::string(op) + "/keepdim", op, {"f64[N,4]"}, {{"dims", Ints{0}}, {"keepdim", true}}});
  }
  s.push_back({"reduce_sum/bool", "reduce_sum", {"i1[N]"}, {}});
  s.push_back({"argmax", "argmax", {"f32[N,4]"}, {{"dim", int64_t{1}}}});
  s.push_back({"argmax/keepdim", "argmax", {"f32[N,4]"}, {{"dim", int64_t{-1}}, {"keepdim", true}}});
  s.push_back({"softmax", "softmax", {"f32[N,4]"}, {{"dim", int64_t{1}}}});
  s.push_back({"softmax/int", "softmax", {"i64[N,4]"}, {{"dim", int64_t{1}}}});
  s.push_back({"constant", "constant", {}, {{"value", 2.5}, {"dtype", std::string("f32")}}});
  s.push_back({"full", "full", {}, {{"shape", Ints{2, 3}}, {"value", 1.0}, {"dtype", std::string("i64")}}});
  s.push_back({"full_like", "full_like", {"f32[N,4]"}, {{"value", 0.5}, {"dtype", std::string("f64")}}});
  s.push_back({"arange", "arange", {}, {{"n", int64_t{4}}, {"dtype", std::string("i64")}}});
  s.push_back({"linspace",
               "linspace",
               {},
               {{"start", 0.0}, {"end", 1.0}, {"steps", int64_t{16}}, {"dtype", std::string("f32")}}});
  s.push_back({"size", "size", {"f32[N,4]"}, {{"dim", int64_t{0}}}});
  // Transfers to the device the sample runs on (see RunSample).
  s.push_back({"transfer", "transfer", {"f32[N,4]"}, {{"device", std::string("cpu")}}});
  s.push_back({"reshape", "reshape", {"f32[2,6]"}, {{"shape", Ints{3, 4}}}});
  s.push_back({"flatten", "flatten", {"f32[N,4]"}, {}});
  s.push_back({"unsqueeze", "unsqueeze", {"f32[N]"}, {{"dim", int64_t{1}}}});
  s.push_back({"squeeze", "squeeze", {"f32[N,1]"}, {{"dim", int64_t{1}}}});
  s.push_back({"select", "select", {"f32[N,4]"}, {{"dim", int64_t{1}}, {"index", int64_t{2}}}});
  s.push_back({"transpose", "transpose", {"f32[N,4]"}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}}});
  s.push_back({"one_hot", "one_hot", {"i64[N]"}, {{"num_classes", int64_t{4}}}});
  s.push_back({"one_hot/int32", "one_hot", {"i32[N,2]"}, {{"num_classes", int64_t{3}}}});
  s.push_back({"topk_mask", "topk_mask", {"f32[N,4]"}, {{"k", int64_t{2}}}});
  s.push_back({"histogram", "histogram", {"i64[N]"}, {{"size", int64_t{4}}}});
  s.push_back({"histogram/weighted", "histogram", {"i32[N]", "f64[N]"}, {{"size", int64_t{4}}}});
  s.push_back({"histogram/bool_weights", "histogram", {"i64[N]", "i1[N]"}, {{"size", int64_t{4}}}});
  const ir::AttrMap groups = {{"size", int64_t{4}},
                              {"replicas", int64_t{3}},
                              {"mode", std::string("groups")},
                              {"seed", int64_t{0}},
                              {"block", int64_t{1}}};
  ir::AttrMap poisson = groups;
  poisson["mode"] = std::string("poisson");
  poisson["seed"] = int64_t{7};
  s.push_back({"replica_histogram/groups", "replica_histogram", {"i64[N]", "i64[N]"}, groups});
  s.push_back({"replica_histogram/poisson", "replica_histogram", {"i64[N]", "i32[N]"}, poisson});
  s.push_back({"replica_histogram/weighted", "replica_histogram", {"i64[N]", "i64[N]", "f64[N]"}, poisson});
  s.push_back({"sort", "sort", {"f32[N]"}, {{"dim", int64_t{0}}}});
  s.push_back({"sort/descending", "sort", {"f32[N,4]"}, {{"dim", int64_t{1}}, {"descending", true}}});
  s.push_back({"searchsorted", "searchsorted", {"f32[N]", "f32[N]"}, {}});
  s.push_back({"searchsorted/right", "searchsorted", {"f64[N]", "f64[N,2]"}, {{"right", true}}});
  s.push_back({"bucketize", "bucketize", {"f32[N,2]", "f32[5]"}, {}});
  s.push_back({"bucketize/right_mixed", "bucketize", {"i64[N]", "f64[N]"}, {{"right", true}}});
  s.push_back({"cumsum", "cumsum", {"f32[N,4]"}, {{"dim", int64_t{0}}}});
  s.push_back({"cumsum/int", "cumsum", {"i32[N,4]"}, {{"dim", int64_t{-1}}}});
  s.push_back({"cumsum/bool", "cumsum", {"i1[N]"}, {{"dim", int64_t{0}}}});
  s.push_back({"concat", "concat", {"f32[N,2]", "f32[3,2]", "f32[N,2]"}, {}});
  s.push_back({"concat/fixed", "concat", {"i64[2]", "i64[1]"}, {}});
  s.push_back({"take", "take", {"f32[8]", "i64[N,2]"}, {}});
  s.push_back({"take/int32", "take", {"i64[N]", "i32[N]"}, {}});
  s.push_back({"topk", "topk", {"f32[N,4]"}, {{"k", int64_t{2}}}});
  s.push_back({"topk/smallest_unsorted",
               "topk",
               {"i64[N,4]"},
               {{"k", int64_t{3}}, {"dim", int64_t{1}}, {"largest", false}, {"sorted", false}}});
  s.push_back({"argsort", "argsort", {"f32[N]"}, {{"dim", int64_t{0}}}});
  s.push_back({"argsort/descending_unstable",
               "argsort",
               {"f64[N,4]"},
               {{"dim", int64_t{1}}, {"descending", true}, {"stable", false}}});
  s.push_back({"mc_confmat", "mc_confmat", {"f32[N,4]", "i64[N]"}, {{"num_classes", int64_t{4}}}});
  s.push_back({"mc_confmat/labels",
               "mc_confmat",
               {"i64[N]", "i32[N]"},
               {{"num_classes", int64_t{4}}, {"ignore_index", int64_t{-1}}}});
  s.push_back({"mc_confmat/weighted_grouped",
               "mc_confmat",
               {"f32[N,4]", "i64[N]", "f32[N]", "i64[N]"},
               {{"num_classes", int64_t{4}}, {"num_groups", int64_t{3}}}});
  s.push_back({"count_outside", "count_outside", {"f32[N]"}, {{"low", 0.0}, {"high", double{INFINITY}}}});
  s.push_back({"count_outside/ids", "count_outside", {"i64[N]"}, {{"low", 0.0}, {"high", 2.0}}});
  s.push_back({"score_code16", "score_code16", {"f32[N,3]"}, {{"format", std::string("fp16")}}});
  s.push_back({"score_code16/bf16", "score_code16", {"f64[N]"}, {{"format", std::string("bf16")}}});
  s.push_back({"binary_rank_stats", "binary_rank_stats", {"f32[N]", "i1[N]"}, {}});
  s.push_back({"code16_counts",
               "code16_counts",
               {"f32[N]", "i64[N]"},
               {{"format", std::string("fp16")}, {"classes", int64_t{1}}}});
  s.push_back({"code16_counts/classes",
               "code16_counts",
               {"f64[N,3,2]", "i64[N,3,2]"},
               {{"format", std::string("bf16")}, {"classes", int64_t{3}}}});
  s.push_back({"binary_rank_stats/f64", "binary_rank_stats", {"f64[N]", "i1[N]"}, {}});
  s.push_back({"mc_marginals",
               "mc_marginals",
               {"f32[N,40]", "i64[N]"},
               {{"num_classes", int64_t{40}}, {"parts", std::string("pred,tp,sq_err")}}});
  s.push_back({"mc_marginals/labels",
               "mc_marginals",
               {"i64[N]", "i32[N]"},
               {{"num_classes", int64_t{4}},
                {"ignore_index", int64_t{-1}},
                {"parts", std::string("tp,target,pred,abs_err,sq_err")}}});
  s.push_back({"mc_marginals/totals",
               "mc_marginals",
               {"f32[N,40]", "i64[N]"},
               {{"num_classes", int64_t{40}}, {"parts", std::string("tp,target,pred")}, {"totals", true}}});
  s.push_back({"mc_marginals/grouped",
               "mc_marginals",
               {"f32[N,5]", "i64[N]", "i64[N]"},
               {{"num_classes", int64_t{5}}, {"parts", std::string("tp,sq_err")}, {"num_groups", int64_t{2}}}});
  for (const char* part : {"tp", "target", "pred", "abs_err", "sq_err"}) {
    s.push_back({absl::StrCat("confmat_part/", part), "confmat_part", {"i64[4,4]"}, {{"part", std::string(part)}}});
  }
  s.push_back({"confmat_part/f64", "confmat_part", {"f64[3,3]"}, {{"part", std::string("abs_err")}}});
  if (FindOp("bl_confmat") != nullptr) {
    s.push_back({"bl_confmat", "bl_confmat", {"f32[N]", "i64[N]"}, {{"threshold", 0.5}, {"logits_over_kept", false}}});
    s.push_back({"bl_confmat/multilabel",
                 "bl_confmat",
                 {"f64[N,3]", "i32[N,3]"},
                 {{"threshold", 0.3}, {"logits_over_kept", true}, {"ignore_index", int64_t{-1}}}});
    s.push_back(
        {"bl_confmat/labels", "bl_confmat", {"i64[N]", "i1[N]"}, {{"threshold", 0.5}, {"logits_over_kept", false}}});
  }
  if (FindOp("reg_stats") != nullptr) {
    s.push_back({"reg_stats", "reg_stats", {"f32[N]", "f32[N]"}, {}});
    s.push_back({"reg_stats/columns", "reg_stats", {"f64[N,3]", "f64[N,3]"}, {}});
  }
  if (FindOp("moments_merge") != nullptr) {
    // Pearson's group (2 variables, 1 pair, 3 columns), r2's (1 variable)
    // and weighted explained variance's (2 variables, the count an f64
    // weight sum).
    std::vector<std::string> pearson, r2, weighted;
    for (int side = 0; side < 2; ++side) {
      pearson.push_back("i64[]");
      pearson.insert(pearson.end(), 7, "f64[3]");
      r2.push_back("i64[]");
      r2.insert(r2.end(), 3, "f64[1]");
      weighted.push_back("f64[]");
      weighted.insert(weighted.end(), 6, "f64[2]");
    }
    s.push_back({"moments_merge", "moments_merge", pearson, {{"variables", int64_t{2}}, {"pairs", Ints{0, 1}}}});
    s.push_back({"moments_merge/one_variable", "moments_merge", r2, {{"variables", int64_t{1}}}});
    s.push_back({"moments_merge/weighted", "moments_merge", weighted, {{"variables", int64_t{2}}}});
  }
  s.push_back({"rank_average", "rank_average", {"f32[N]"}, {}});
  s.push_back({"rank_average/2d", "rank_average", {"i64[N,3]"}, {}});
  s.push_back({"segment_sort", "segment_sort", {"i64[N]", "f32[N]", "i1[N]"}, {}});
  s.push_back({"segment_scan", "segment_scan", {"f64[N]", "i64[N]"}, {}});
  s.push_back({"segment_scan/bool", "segment_scan", {"i1[N]", "i64[N]"}, {}});
  s.push_back({"segment_scan/ties", "segment_scan", {"f64[N]", "i64[N]", "f32[N]"}, {}});
  s.push_back({"segment_scan/rows", "segment_scan", {"f64[N,3]", "i64[N]"}, {}});  // rows along dim 0
  s.push_back({"edit_distance", "edit_distance", {"i64[N,5]", "i32[N,3]"}, {{"substitution_cost", int64_t{1}}}});
  s.push_back({"ngram_matches", "ngram_matches", {"i64[N,6]", "i32[N,2,4]"}, {{"n_gram", int64_t{2}}}});
  s.push_back({"ngram_overlap", "ngram_overlap", {"i64[N,6]", "i32[N,2,4]"}, {{"n_gram", int64_t{3}}}});
  s.push_back({"lcs_length", "lcs_length", {"i32[N,6]", "i64[N,3,5]"}, {}});
  s.push_back({"edit_distance/substitutions",
               "edit_distance",
               {"i64[N,5]", "i32[N,3]"},
               {{"substitution_cost", int64_t{1}}, {"substitutions", true}}});
  s.push_back({"ter_edits", "ter_edits", {"i64[N,6]", "i32[N,2,5]"}, {}});
  s.push_back({"sdr", "sdr", {"f32[N,2,40]", "f32[N,2,40]"}, {{"filter_length", int64_t{8}}}});
  s.push_back({"sdr/zero_mean",
               "sdr",
               {"f64[N,30]", "f64[N,30]"},
               {{"filter_length", int64_t{4}}, {"zero_mean", true}, {"load_diag", 1e-3}}});
  s.push_back({"signal_ratio", "signal_ratio", {"f32[N,50]", "f32[N,50]"}, {{"eps", 1e-7}}});
  s.push_back({"signal_ratio/snr_zero_mean",
               "signal_ratio",
               {"f64[N,2,30]", "f64[N,2,30]"},
               {{"signal_dims", int64_t{2}}, {"scale_invariant", false}, {"zero_mean", true}, {"eps", 1e-16}}});
  s.push_back({"signal_ratio/complex",
               "signal_ratio",
               {"f32[N,3,4,2]", "f32[N,3,4,2]"},
               {{"signal_dims", int64_t{3}}, {"zero_mean", true}, {"eps", 1e-7}}});
  s.push_back({"token_nll", "token_nll", {"f32[N,3,7]", "i64[N,3]"}, {}});
  s.push_back({"depthwise_conv2d", "depthwise_conv2d", {"f64[N,2,9,8]", "f64[3,2]"}, {{"stride", int64_t{1}}}});
  s.push_back({"depthwise_conv2d/stride", "depthwise_conv2d", {"f32[N,3,7,6]", "f32[2,2]"}, {{"stride", int64_t{2}}}});
  s.push_back({"depthwise_conv2d/reflect",
               "depthwise_conv2d",
               {"f64[N,1,6,5]", "f64[5,3]"},
               {{"pad_h", int64_t{2}}, {"pad_w", int64_t{1}}}});
  s.push_back(
      {"class_overlap", "class_overlap", {"i64[N,5,6]", "i64[N,5,6]"}, {{"num_classes", int64_t{4}}, {"index", true}}});
  s.push_back({"class_overlap/int32_background",
               "class_overlap",
               {"i32[N,7]", "i32[N,7]"},
               {{"num_classes", int64_t{3}}, {"index", true}, {"include_background", false}}});
  s.push_back(
      {"class_overlap/one_hot", "class_overlap", {"i1[N,3,4,4]", "i1[N,3,4,4]"}, {{"num_classes", int64_t{3}}}});
  const std::vector<std::string> coco = {"f64[N,5,4]", "f64[N,5]", "i64[N,5]", "f64[N,3,4]",
                                         "i64[N,3]",   "i64[N,3]", "f64[N,3]"};
  s.push_back(
      {"coco_match", "coco_match", coco, {{"iou_thresholds", std::vector<double>{0.1, 0.5}}, {"max_det", int64_t{3}}}});
  s.push_back({"coco_match/micro_two_words",
               "coco_match",
               coco,
               {{"iou_thresholds", std::vector<double>(17, 0.2)}, {"max_det", int64_t{9}}, {"micro", true}}});
  s.push_back({"coco_bins",
               "coco_bins",
               {"f64[N]", "i64[N]", "i64[N]", "i64[N,1]", "i64[N,1]", "i64[N]", "i64[N]"},
               {{"num_classes", int64_t{3}},
                {"score_bins", int64_t{4}},
                {"max_dets", std::vector<int64_t>{1, 2, 3}},
                {"thresholds", int64_t{2}}}});
  s.push_back({"panoptic_match",
               "panoptic_match",
               {"i64[N,4,5,2]", "i64[N,4,5,2]"},
               {{"things", std::vector<int64_t>{0, 1}}, {"stuffs", std::vector<int64_t>{6, 7}}}});
  s.push_back({"matmul", "matmul", {"f64[N,3]", "f64[3,4]"}, {}});
  s.push_back({"trace_sqrt", "trace_sqrt", {"f64[3,3]"}, {}});
  s.push_back({"token_nll/bf16", "token_nll", {"bf16[N,2,5]", "i32[N,2]"}, {}});
  s.push_back({"count_invalid", "count_invalid", {"i64[N]"}, {}});
  s.push_back({"count_invalid/f32_ignore", "count_invalid", {"f32[N]"}, {{"ignore_index", int64_t{-1}}}});
  s.push_back(
      {"retrieval_score",
       "retrieval_score",
       {"i64[N]", "f32[N]", "i64[N]"},
       {{"metric", std::string("recall")}, {"empty_target_action", std::string("neg")}, {"adaptive_k", false}}});
  s.push_back({"retrieval_score/ndcg",
               "retrieval_score",
               {"i64[N]", "f64[N]", "f64[N]"},
               {{"metric", std::string("normalized_dcg")},
                {"empty_target_action", std::string("skip")},
                {"adaptive_k", false},
                {"top_k", int64_t{2}},
                {"ignore_index", int64_t{-1}}}});
  for (Sample& x : s)
    for (std::string& t : x.inputs) t += "@cpu";
  return s;
}

// Sizes resolves a planned shape for N = n, including products such as `N*4`
// and sums such as `N+N+3`.
std::vector<int64_t> Sizes(const ir::TensorType& t, int64_t n) {
  std::vector<int64_t> out;
  for (const ir::Dim& d : t.shape) {
    if (!d.is_symbolic()) {
      out.push_back(d.size);
      continue;
    }
    int64_t sum = 0;
    for (absl::string_view term : absl::StrSplit(d.symbol, '+')) {
      int64_t v = 1;
      for (absl::string_view f : absl::StrSplit(term, '*')) {
        int64_t k;
        v *= absl::SimpleAtoi(f, &k) ? k : n;
      }
      sum += v;
    }
    out.push_back(sum);
  }
  return out;
}

// Example makes an input of planned type `t` with N = n: small random
// values (integers in [-1, 5), so some are out of range for 4 classes).
at::Tensor Example(const ir::TensorType& t, int64_t n, const std::string& device) {
  std::vector<int64_t> sizes = Sizes(t, n);
  auto opts = at::TensorOptions().dtype(ir::ToScalarType(t.dtype));
  if (device == "meta") return at::empty(sizes, opts.device(at::kMeta));
  if (ir::IsFloating(t.dtype)) return at::randn(sizes, opts);
  if (t.dtype == ir::DType::kBool) return at::randint(0, 2, sizes, opts.dtype(at::kLong)).to(at::kBool);
  return at::randint(-1, 5, sizes, opts);
}

// RunSample builds a sample on `device` and runs it with N = n, checking that
// every result has the planned dtype, rank, sizes and device.
::testing::AssertionResult RunSample(const Sample& s, int64_t n, const std::string& device,
                                     std::vector<at::Tensor>* results = nullptr) {
  ir::AttrMap attrs = s.attrs;
  if (s.op == "transfer") attrs["device"] = device;
  auto node = MakeNode(s.op, s.inputs, attrs, device);
  if (!node.ok()) return ::testing::AssertionFailure() << "build: " << node.status();
  std::vector<at::Tensor> in;
  for (ir::Value* p : node->graph->params()) in.push_back(Example(p->type(), n, device));
  auto out = RunKernel(*node->node, in);
  if (!out.ok()) return ::testing::AssertionFailure() << out.status();
  for (size_t i = 0; i < out->size(); ++i) {
    const ir::TensorType& want = node->node->output(i)->type();
    const at::Tensor& got = (*out)[i];
    if (!got.defined()) return ::testing::AssertionFailure() << "result " << i << " undefined";
    std::vector<int64_t> sizes = Sizes(want, n);
    if (got.scalar_type() != ir::ToScalarType(want.dtype) || got.sizes() != at::IntArrayRef(sizes) ||
        got.device().str() != device) {
      return ::testing::AssertionFailure()
             << "result " << i << " is " << got.scalar_type() << got.sizes() << "@" << got.device() << ", planned "
             << want.ToString() << " = " << at::IntArrayRef(sizes);
    }
  }
  if (results) *results = *out;
  return ::testing::AssertionSuccess();
}

// Verifies that every op of the table has an eager kernel, and that every
// sync-free op has a sample below (so a new op gets these tests too).
TEST(KernelsTest, EveryOpHasAKernelAndASample) {
  std::map<std::string, int> sampled;
  for (const Sample& s : Samples()) ++sampled[s.op];
  for (const auto& [name, def] : Registry()) {
    EXPECT_NE(FindKernel(name), nullptr) << name;
    if (def.traits.syncs_host) continue;
    EXPECT_GT(sampled[name], 0) << "no kernel sample for op '" << name << "'";
  }
  EXPECT_EQ(FindKernel("frobnicate"), nullptr);
}

// Verifies that every kernel produces the planned dtype, sizes and device,
// for a batch of 5 rows and for an empty batch.
TEST(KernelsTest, ResultsHaveThePlannedTypes) {
  at::manual_seed(0);
  for (const Sample& s : Samples()) {
    for (int64_t n : {5, 1, 0}) {
      EXPECT_TRUE(RunSample(s, n, "cpu")) << s.name << " with N=" << n;
    }
  }
}

// Verifies that every sync-free kernel runs on meta tensors when its inputs
// are meta (meta tensors refuse .item(), nonzero and the like), producing
// meta results of the planned types and sizes.
TEST(KernelsTest, EveryKernelRunsOnMeta) {
  for (const Sample& s : Samples()) {
    for (int64_t n : {5, 0}) {
      EXPECT_TRUE(RunSample(s, n, "meta")) << s.name << " with N=" << n;
    }
  }
}

// Verifies assert_zero: the value passes through when the count is 0, a
// count > 0 is an error with the message ("{n}" replaced), and on meta the
// check is skipped (there is no value to read).
TEST(KernelsTest, AssertZero) {
  const ir::AttrMap attrs = {{"message", std::string("m: {n} queries without a positive target")}};
  at::Tensor value = at::tensor({0.25}, at::kDouble).reshape({});
  auto ok = Eval("assert_zero", {"i64[]", "f64[]"}, attrs, {at::zeros({}, at::kLong), value});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_TRUE(at::equal((*ok)[0], value));
  auto bad = Eval("assert_zero", {"i64[]", "f64[]"}, attrs, {at::full({}, 3, at::kLong), value});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("m: 3 queries without a positive target"), std::string::npos) << bad.status();
  auto meta = at::TensorOptions().device(at::kMeta);
  auto on_meta = Eval("assert_zero", {"i64[]@meta", "f64[]@meta"}, attrs,
                      {at::empty({}, meta.dtype(at::kLong)), at::empty({}, meta.dtype(at::kDouble))}, "meta");
  ASSERT_TRUE(on_meta.ok()) << on_meta.status();
  EXPECT_TRUE((*on_meta)[0].is_meta());
}

// Verifies expected_mutual_info against scikit-learn's
// expected_mutual_information on small tables (values printed by
// sklearn.metrics.cluster._expected_mutual_info_fast), that empty rows and
// columns change nothing and one cluster gives 0, and that summing only the
// k whose probability does not underflow gives the same bits as sklearn's
// whole range, written out plainly here, at n = 10^5.
TEST(KernelsTest, ExpectedMutualInfo) {
  struct Case {
    std::vector<double> rows, cols;
    double sklearn;
  };
  for (const Case& c : std::vector<Case>{{{4, 5}, {4, 3, 2}, 0.15886781439788877},
                                         {{5, 5, 0}, {0, 5, 5}, 0.05972474175533989},
                                         {{3}, {1, 1, 1}, 0.0},
                                         {{15, 12, 14}, {12, 12, 12, 5}, 0.08344032066535974},
                                         {{0, 0}, {0, 0}, 0.0}}) {
    TALLY_ASSERT_OK_AND_ASSIGN(
        at::Tensor r, Eval1("expected_mutual_info", {"f64[R]@cpu", "f64[K]@cpu"}, {}, {F64(c.rows), F64(c.cols)}));
    EXPECT_EQ(r.scalar_type(), at::kDouble);
    EXPECT_NEAR(r.item<double>(), c.sklearn, 1e-15) << c.sklearn;
  }
  // Whole ranges at n = 1e5 (amplified: terms of both signs sum to 1e-5):
  // scikit-learn's loop, lgamma for every term, in double and in long double
  // (its log-gamma differences of numbers near n log n keep ~1e-10 of each
  // term in double, ~1e-13 in long double); and every probability from the
  // mode by the neighbour ratios in long double, the tight reference.
  const std::vector<double> a = {50000, 30000, 20000}, b = {60000, 40000};
  const double n = 100000;
  double emi = 0;
  long double emi_lgamma = 0, emi_ratio = 0;
  for (double ai : a) {
    for (double bj : b) {
      const double lo = std::max(0.0, ai - n + bj), hi = std::min(ai, bj);
      for (double k = std::max(1.0, lo); k <= hi; k += 1.0) {
        int s = 0;
        auto lg = [&s](double x) { return ::lgamma_r(x, &s); };
        const double gab = (lg(ai + 1) + lg(n - ai + 1)) + (lg(bj + 1) + lg(n - bj + 1));
        const double log_p = gab - (lg(k + 1) + lg(n + 1)) - lg(ai - k + 1) - lg(bj - k + 1) - lg(n - ai - bj + k + 1);
        emi += k / n * ((std::log(n) + std::log(k)) - std::log(ai) - std::log(bj)) * std::exp(log_p);
        auto lgl = [&s](long double x) { return ::lgammal_r(x, &s); };
        const long double lk = k, la = ai, lb = bj, ln = n;
        const long double log_pl = (lgl(la + 1) + lgl(ln - la + 1)) + (lgl(lb + 1) + lgl(ln - lb + 1)) -
                                   (lgl(lk + 1) + lgl(ln + 1)) - lgl(la - lk + 1) - lgl(lb - lk + 1) -
                                   lgl(ln - la - lb + lk + 1);
        emi_lgamma += lk / ln * std::log(ln * lk / (la * lb)) * std::exp(log_pl);
      }
      const long double la = ai, lb = bj, ln = n, mode = std::floor((la + 1) * (lb + 1) / (ln + 2));
      std::vector<long double> q(static_cast<size_t>(hi - lo) + 1, 0);
      const auto at = [&](long double k) -> long double& { return q[static_cast<size_t>(k - lo)]; };
      at(mode) = 1;
      for (long double k = mode; k > lo; k -= 1)
        at(k - 1) = at(k) * k * (ln - la - lb + k) / ((la - k + 1) * (lb - k + 1));
      for (long double k = mode; k < hi; k += 1)
        at(k + 1) = at(k) * (la - k) * (lb - k) / ((k + 1) * (ln - la - lb + k + 1));
      long double total = 0;
      for (long double v : q) total += v;
      for (long double k = std::max(1.0, lo); k <= hi; k += 1) {
        emi_ratio += k / ln * std::log(ln * k / (la * lb)) * (at(k) / total);
      }
    }
  }
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r,
                             Eval1("expected_mutual_info", {"f64[3]@cpu", "f64[2]@cpu"}, {}, {F64(a), F64(b)}));
  const double ref = static_cast<double>(emi_ratio);
  EXPECT_NEAR(r.item<double>(), ref, 1e-13 * ref);
  EXPECT_NEAR(static_cast<double>(emi_lgamma), ref, 1e-10 * ref);
  EXPECT_NEAR(emi, ref, 1e-9 * ref);  // scikit-learn's own error
  auto meta = at::TensorOptions().device(at::kMeta).dtype(at::kDouble);
  auto on_meta = Eval("expected_mutual_info", {"f64[3]@meta", "f64[2]@meta"}, {},
                      {at::empty({3}, meta), at::empty({2}, meta)}, "meta");
  ASSERT_TRUE(on_meta.ok()) << on_meta.status();
  EXPECT_TRUE((*on_meta)[0].is_meta());
}

// Verifies max_assignment against every one-to-one matching of random
// integer tables up to 6 x 6, square and not, with ties, and on an empty
// table.
TEST(KernelsTest, MaxAssignment) {
  at::manual_seed(3);
  for (int64_t r = 1; r <= 6; ++r) {
    for (int64_t c : {r, r + 1, std::max<int64_t>(1, r - 2)}) {
      at::Tensor t = at::randint(0, r == 3 ? 2 : 50, {r, c}, at::kLong);
      // Best by brute force: the larger side's permutations, the first
      // min(r, c) matched.
      const bool wide = c >= r;
      const int64_t lo = std::min(r, c), hi = std::max(r, c);
      std::vector<int64_t> perm(hi);
      std::iota(perm.begin(), perm.end(), 0);
      int64_t best = 0;
      do {
        int64_t total = 0;
        for (int64_t i = 0; i < lo; ++i) total += wide ? t[i][perm[i]].item<int64_t>() : t[perm[i]][i].item<int64_t>();
        best = std::max(best, total);
      } while (std::next_permutation(perm.begin(), perm.end()));
      TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor got,
                                 Eval1("max_assignment", {absl::StrCat("i64[", r, ",", c, "]@cpu")}, {}, {t}));
      EXPECT_EQ(got.scalar_type(), at::kLong);
      EXPECT_EQ(got.item<int64_t>(), best) << t;
    }
  }
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor empty,
                             Eval1("max_assignment", {"i64[0,3]@cpu"}, {}, {at::zeros({0, 3}, at::kLong)}));
  EXPECT_EQ(empty.item<int64_t>(), 0);
}

// RowIds is the non-negative ids of a 1-D row, in order.
std::vector<int64_t> RowIds(const at::Tensor& row) {
  std::vector<int64_t> out;
  for (int64_t k = 0; k < row.size(0); ++k) {
    if (row[k].item<int64_t>() >= 0) out.push_back(row[k].item<int64_t>());
  }
  return out;
}

// Verifies edit_distance against a plain full-table dynamic program, on
// random ids with padding anywhere in the rows, substitution costs 0, 1, 2
// and 3, and rows of every length down to empty; the CPU kernel and the
// tensor form (EditDistanceScript(), what other devices and TorchScript run)
// agree exactly.
TEST(KernelsTest, EditDistance) {
  at::manual_seed(5);
  const at::Tensor preds = at::randint(-1, 4, {200, 9}, at::kLong);
  const at::Tensor target = at::randint(-1, 4, {200, 7}, at::kInt);
  for (int64_t cost : {0, 1, 2, 3}) {
    TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor got, Eval1("edit_distance", {"i64[N,9]@cpu", "i32[N,7]@cpu"},
                                                     {{"substitution_cost", cost}}, {preds, target}));
    for (int64_t r = 0; r < preds.size(0); ++r) {
      const std::vector<int64_t> a = RowIds(preds[r]), b = RowIds(target[r]);
      std::vector<std::vector<int64_t>> d(a.size() + 1, std::vector<int64_t>(b.size() + 1));
      for (size_t i = 0; i <= a.size(); ++i) {
        for (size_t j = 0; j <= b.size(); ++j) {
          if (i == 0 || j == 0) {
            d[i][j] = static_cast<int64_t>(i + j);
          } else {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : cost)});
          }
        }
      }
      ASSERT_EQ(got[r][0].item<int64_t>(), d[a.size()][b.size()]) << "row " << r << " cost " << cost;
      ASSERT_EQ(got[r][1].item<int64_t>(), static_cast<int64_t>(a.size()));
      ASSERT_EQ(got[r][2].item<int64_t>(), static_cast<int64_t>(b.size()));
    }
    at::Tensor script =
        fused::RunScript(fused::EditDistanceScript(), "edit_distance", {preds, target, cost, false}).toTensor();
    EXPECT_TRUE(at::equal(script, got)) << "cost " << cost;
  }
}

// Verifies edit_distance's substitutions, deletions and insertions: the
// fewest substitutions over the least-cost alignments, found here by a
// second pass over the full table that follows only its optimal steps;
// the counts add up to the lengths and the distance; "a b" against "b c" is
// a deletion and an insertion; the CPU kernel and the tensor form agree.
TEST(KernelsTest, EditDistanceSubstitutions) {
  at::manual_seed(6);
  const at::Tensor preds = at::randint(-1, 4, {300, 9}, at::kLong);
  const at::Tensor target = at::randint(-1, 4, {300, 7}, at::kInt);
  for (int64_t cost : {0, 1, 2}) {
    TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor got,
                               Eval1("edit_distance", {"i64[N,9]@cpu", "i32[N,7]@cpu"},
                                     {{"substitution_cost", cost}, {"substitutions", true}}, {preds, target}));
    ASSERT_EQ(got.sizes(), (std::vector<int64_t>{300, 6}));
    for (int64_t r = 0; r < preds.size(0); ++r) {
      const std::vector<int64_t> a = RowIds(preds[r]), b = RowIds(target[r]);
      const size_t n = a.size(), m = b.size();
      std::vector<std::vector<int64_t>> d(n + 1, std::vector<int64_t>(m + 1)), subs = d;
      for (size_t i = 0; i <= n; ++i) {
        for (size_t j = 0; j <= m; ++j) {
          if (i == 0 || j == 0) {
            d[i][j] = static_cast<int64_t>(i + j);
            continue;
          }
          const int64_t step = a[i - 1] == b[j - 1] ? 0 : cost;
          d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + step});
          int64_t fewest = INT64_MAX;
          if (d[i][j] == d[i - 1][j] + 1) fewest = std::min(fewest, subs[i - 1][j]);
          if (d[i][j] == d[i][j - 1] + 1) fewest = std::min(fewest, subs[i][j - 1]);
          if (d[i][j] == d[i - 1][j - 1] + step)
            fewest = std::min(fewest, subs[i - 1][j - 1] + (a[i - 1] != b[j - 1] ? 1 : 0));
          subs[i][j] = fewest;
        }
      }
      const int64_t dist = got[r][0].item<int64_t>(), s = got[r][3].item<int64_t>();
      const int64_t del = got[r][4].item<int64_t>(), ins = got[r][5].item<int64_t>();
      ASSERT_EQ(dist, d[n][m]) << "row " << r << " cost " << cost;
      ASSERT_EQ(s, subs[n][m]) << "row " << r << " cost " << cost;
      ASSERT_GE(del, 0);
      ASSERT_GE(ins, 0);
      ASSERT_EQ(s * cost + del + ins, dist);
      ASSERT_EQ(static_cast<int64_t>(m) - s - del, static_cast<int64_t>(n) - s - ins);  // the hits
      ASSERT_GE(static_cast<int64_t>(m) - s - del, 0);
    }
    at::Tensor script =
        fused::RunScript(fused::EditDistanceScript(), "edit_distance", {preds, target, cost, true}).toTensor();
    EXPECT_TRUE(at::equal(script, got)) << "cost " << cost;
  }
  const at::Tensor ab = I64({1, 2}).reshape({1, 2});
  const at::Tensor bc = I64({2, 3}).reshape({1, 2});
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor one,
                             Eval1("edit_distance", {"i64[N,2]@cpu", "i64[N,2]@cpu"},
                                   {{"substitution_cost", int64_t{1}}, {"substitutions", true}}, {ab, bc}));
  EXPECT_TRUE(at::equal(one, I64({2, 2, 2, 0, 1, 1}).reshape({1, 6})));
}

// Verifies ter_edits against TorchMetrics 1.5.2's _translation_edit_rate
// (run on the same words: "the cat is on the mat" against six references
// up to "the cat sat on the mat and the dog is on the rug",
// shifts included, and two block moves), with padding inside the rows; and
// that the CPU kernel and the TorchScript form agree on random ids over 4
// values, where shifts and ties are common.
TEST(KernelsTest, TerEdits) {
  // the=0 cat=1 is=2 on=3 mat=4 there=5 a=6 sat=7 and=8 dog=9 rug=10
  const at::Tensor preds = I64({0, 1, -1, 2, 3, 0, 4, -1, -1, -1, -1, -1, -1}).reshape({1, 13});
  const at::Tensor target = I64({5,  2,  6,  1,  3,  0,  4,  -1, -1, -1, -1, -1, -1,   // there is a cat on the mat: 3
                                 6,  1,  2,  3,  -1, 0,  4,  -1, -1, -1, -1, -1, -1,   // a cat is on the mat: 1
                                 3,  0,  4,  0,  1,  2,  -1, -1, -1, -1, -1, -1, -1,   // on the mat the cat is: 1
                                 4,  0,  3,  2,  1,  0,  -1, -1, -1, -1, -1, -1, -1,   // mat the on is cat the: 3
                                 -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,   // empty: 6
                                 0,  1,  7,  3,  0,  4,  8,  0,  9,  2,  3,  0,  10})  // ... on the rug: 8
                                .reshape({1, 6, 13});
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor got,
                             Eval1("ter_edits", {"i64[N,13]@cpu", "i64[N,6,13]@cpu"}, {}, {preds, target}));
  EXPECT_TRUE(at::equal(got, I64({3, 1, 1, 3, 6, 8}).reshape({1, 6}))) << got;
  // Block moves: hypothesis "e f g h a b c d" against reference "a b c d
  // e f g h", and "a .. j x y z" against "x y z a .. j": one shift each.
  const at::Tensor hyp = I64({4, 5, 6, 7, 0, 1, 2, 3, -1, -1, -1, -1, -1,  //
                              0, 1, 2, 3, 4, 5, 6, 7, 8,  9,  20, 21, 22})
                             .reshape({2, 13});
  const at::Tensor ref = I64({0,  1,  2,  3, 4, 5, 6, 7, -1, -1, -1, -1, -1,  //
                              20, 21, 22, 0, 1, 2, 3, 4, 5,  6,  7,  8,  9})
                             .reshape({2, 1, 13});
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor moves,
                             Eval1("ter_edits", {"i64[N,13]@cpu", "i64[N,1,13]@cpu"}, {}, {hyp, ref}));
  EXPECT_TRUE(at::equal(moves, I64({1, 1}).reshape({2, 1}))) << moves;
  at::manual_seed(11);
  const at::Tensor rp = at::randint(-1, 4, {150, 12}, at::kLong);
  const at::Tensor rt = at::randint(-1, 4, {150, 2, 10}, at::kInt);
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor cpu, Eval1("ter_edits", {"i64[N,12]@cpu", "i32[N,2,10]@cpu"}, {}, {rp, rt}));
  EXPECT_TRUE(at::equal(fused::RunScript(fused::TerEditsScript(), "ter_edits", {rp, rt}).toTensor(), cpu));
  EXPECT_GT(cpu.sum().item<int64_t>(), 0);
}

// Verifies sdr: a 1-tap filter has the closed form 10 log10(c^2 / (1 -
// c^2)) with c the cosine of the two signals; a delayed copy of target
// plus a little noise is recovered by a 16-tap filter (above 15 dB; one
// tap gives about 0); the CPU kernel (Levinson's recursion) and the
// TorchScript form (a batched solve) agree to 1e-10.
TEST(KernelsTest, Sdr) {
  at::manual_seed(12);
  const at::Tensor target = at::randn({3, 400}, at::kDouble);
  const at::Tensor noise = at::randn({3, 400}, at::kDouble);
  const at::Tensor preds = target + 0.5 * noise;
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor one, Eval1("sdr", {"f64[N,400]@cpu", "f64[N,400]@cpu"},
                                                   {{"filter_length", int64_t{1}}}, {preds, target}));
  const at::Tensor c = (preds * target).sum(-1) / (preds.norm(2, -1) * target.norm(2, -1));
  EXPECT_TRUE(SameTensor(one, 10.0 * at::log10(c * c / (1.0 - c * c)), 1e-10, 1e-10));
  const at::Tensor delayed = at::roll(target, 3, -1) + 0.01 * noise;  // 3 samples wrap: about 21 dB
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor taps, Eval1("sdr", {"f64[N,400]@cpu", "f64[N,400]@cpu"},
                                                    {{"filter_length", int64_t{16}}}, {delayed, target}));
  EXPECT_TRUE((taps > 15.0).all().item<bool>()) << taps;
  for (bool zero_mean : {false, true}) {
    TALLY_ASSERT_OK_AND_ASSIGN(
        at::Tensor got,
        Eval1("sdr", {"f64[N,400]@cpu", "f64[N,400]@cpu"},
              {{"filter_length", int64_t{32}}, {"zero_mean", zero_mean}, {"load_diag", 1e-4}}, {preds + 3.0, target}));
    const at::Tensor script =
        fused::RunScript(fused::SdrScript(), "sdr", {preds + 3.0, target, int64_t{32}, zero_mean, 1e-4}).toTensor();
    EXPECT_TRUE(SameTensor(script, got, 1e-10, 1e-10));
  }
}

// Verifies signal_ratio against a long-double evaluation of TorchMetrics'
// formulas, for SI-SDR and SNR, with and without zero_mean, over float32
// and float64 signals of one and two dims (a length not a multiple of the
// eight partial sums), a silent target, a perfect estimate and an empty
// signal (0 dB: eps over eps); the TorchScript form agrees to 1e-12.
TEST(KernelsTest, SignalRatio) {
  at::manual_seed(5);
  for (const at::ScalarType dt : {at::kFloat, at::kDouble}) {
    at::Tensor target = at::randn({4, 2, 53}, at::kDouble) + 0.25;
    at::Tensor preds = target * 0.8 + at::randn({4, 2, 53}, at::kDouble) * 0.3;
    target[1].zero_();
    preds[2] = target[2];
    target = target.to(dt);
    preds = preds.to(dt);
    const double eps = dt == at::kFloat ? 1.1920928955078125e-07 : 2.220446049250313e-16;
    const std::string type = std::string(dt == at::kFloat ? "f32" : "f64") + "[4,2,53]@cpu";
    for (const int64_t dims : {int64_t{1}, int64_t{2}}) {
      for (const bool si : {true, false}) {
        for (const bool zm : {true, false}) {
          const ir::AttrMap attrs = {{"signal_dims", dims}, {"scale_invariant", si}, {"zero_mean", zm}, {"eps", eps}};
          TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor got, Eval1("signal_ratio", {type, type}, attrs, {preds, target}));
          const at::Tensor p = preds.to(at::kDouble).reshape({dims == 1 ? 8 : 4, -1});
          const at::Tensor t = target.to(at::kDouble).reshape({dims == 1 ? 8 : 4, -1});
          const at::Tensor flat = got.reshape({-1});
          ASSERT_EQ(flat.numel(), p.size(0));
          for (int64_t r = 0; r < p.size(0); ++r) {
            const int64_t n = p.size(1);
            long double mp = 0, mt = 0;
            for (int64_t i = 0; zm && i < n; ++i) {
              mp += p[r][i].item<double>() / static_cast<long double>(n);
              mt += t[r][i].item<double>() / static_cast<long double>(n);
            }
            long double tt = 0, pt = 0;
            for (int64_t i = 0; i < n; ++i) {
              const long double a = p[r][i].item<double>() - mp, b = t[r][i].item<double>() - mt;
              tt += b * b;
              pt += a * b;
            }
            const long double alpha = si ? (pt + eps) / (tt + eps) : 1.0L;
            long double noise = 0;
            for (int64_t i = 0; i < n; ++i) {
              const long double e = alpha * (t[r][i].item<double>() - mt) - (p[r][i].item<double>() - mp);
              noise += e * e;
            }
            const long double want = 10.0L * std::log10((alpha * alpha * tt + eps) / (noise + eps));
            EXPECT_NEAR(flat[r].item<double>(), static_cast<double>(want),
                        1e-9 * (1 + std::fabs(static_cast<double>(want))))
                << "dims " << dims << " si " << si << " zero_mean " << zm << " row " << r;
          }
          const at::Tensor script =
              fused::RunScript(fused::kSignalRatioScript, "signal_ratio", {preds, target, dims, si, zm, eps})
                  .toTensor();
          EXPECT_TRUE(SameTensor(script, got, 1e-12, 1e-12)) << "dims " << dims << " si " << si << " zero_mean " << zm;
        }
      }
    }
  }
  const at::Tensor none = at::zeros({3, 0});
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor empty, Eval1("signal_ratio", {"f32[3,0]@cpu", "f32[3,0]@cpu"},
                                                     {{"zero_mean", true}, {"eps", 1e-7}}, {none, none}));
  EXPECT_TRUE(at::equal(empty, at::zeros({3}, at::kDouble))) << empty;
}

// CocoImages draws n images of 6 detection and 4 ground-truth slots over 3
// classes on a coarse grid (ties of IoU and score happen), some slots
// padding, some crowds, areas from tiny to large.
std::vector<at::Tensor> CocoImages(int64_t n) {
  auto f64 = at::TensorOptions().dtype(at::kDouble);
  auto i64 = at::TensorOptions().dtype(at::kLong);
  auto boxes = [&](int64_t k) {
    at::Tensor xy = at::randint(0, 8, {n, k, 2}, f64) * 8,
               wh = at::randint(1, 6, {n, k, 2}, f64) * at::tensor({6.0, 20.0});
    return at::cat({xy, wh}, 2);
  };
  at::Tensor gt = boxes(4);
  // Half the detections are ground-truth boxes moved a little.
  at::Tensor det = at::cat({gt.narrow(1, 0, 3) + at::randint(-2, 3, {n, 3, 4}, f64), boxes(3)}, 1);
  at::Tensor scores = at::randint(0, 4, {n, 6}, f64) / 4;
  at::Tensor labels = at::randint(-1, 3, {n, 6}, i64), tlabels = at::randint(-1, 3, {n, 4}, i64);
  at::Tensor crowd = (at::rand({n, 4}) < 0.2).to(at::kLong);
  at::Tensor area = at::where(at::rand({n, 4}) < 0.5, gt.select(2, 2) * gt.select(2, 3), at::rand({n, 4}, f64) * 20000);
  return {det, scores, labels, gt, tlabels, crowd, area};
}

// Verifies that coco_match's CPU kernel and its tensor form (the
// TorchScript backend's and other devices') give the same rows, bit for bit,
// macro and micro, with one word and with two (17 thresholds), ranks past
// max_det ignored; and that coco_summary's kernel and script agree.
TEST(KernelsTest, CocoMatchAndSummaryKernelsAgreeWithTheirScripts) {
  at::manual_seed(5);
  for (const bool micro : {false, true}) {
    for (const std::vector<double>& thr : {std::vector<double>{0.3, 0.5, 0.75}, std::vector<double>(17, 0.4)}) {
      SCOPED_TRACE(::testing::Message() << "micro " << micro << ", " << thr.size() << " thresholds");
      const std::vector<at::Tensor> in = CocoImages(40);
      const std::vector<at::Tensor> got = fused::CocoMatch(in, thr, 4, micro);
      std::vector<c10::IValue> args(in.begin(), in.end());
      args.insert(args.end(), {thr, int64_t{4}, micro});
      auto script = fused::RunScript(fused::CocoMatchScript(), "coco_match", args).toTuple()->elements();
      ASSERT_EQ(script.size(), got.size());
      for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(at::equal(got[i], script[i].toTensor())) << "result " << i;
      // Padding and ranks past max_det: ignored everywhere, never a TP.
      const at::Tensor rank = got[0];
      const at::Tensor out = (rank < 0) | (rank >= 4);
      EXPECT_TRUE(at::equal(got[1].index({out}), at::zeros_like(got[1].index({out}))));
      const int64_t words = got[2].size(1);
      std::vector<int64_t> all(words, 0);
      for (size_t bit = 0; bit < 4 * thr.size(); ++bit) all[bit / 64] |= int64_t{1} << (bit % 64);
      EXPECT_TRUE(at::equal(got[2].index({out}), I64(all).view({1, words}).expand({out.sum().item<int64_t>(), words})));
      std::vector<at::Tensor> rows = {
          in[1].reshape({-1}), in[2].reshape({-1}), got[0], got[1], got[2], in[4].reshape({-1}), got[3]};
      const std::vector<double> rec = {0.0, 0.25, 0.5, 0.75, 1.0};
      const std::vector<int64_t> md = {1, 2, 4};
      for (const bool per_class : {false, true}) {
        if (micro && per_class) continue;  // needs the per-class rows too; the golden fixtures cover it
        const std::vector<at::Tensor> sum = fused::CocoSummary(rows, thr, rec, md, micro, per_class);
        std::vector<c10::IValue> sargs(rows.begin(), rows.end());
        sargs.insert(sargs.end(), {c10::List<at::Tensor>(), thr, rec, md, micro, per_class});
        auto ssum = fused::RunScript(fused::CocoSummaryScript(), "coco_summary", sargs).toTuple()->elements();
        for (size_t i = 0; i < sum.size(); ++i) {
          EXPECT_TRUE(at::allclose(sum[i].to(at::kDouble), ssum[i].toTensor().to(at::kDouble), 1e-12, 1e-12))
              << "summary " << i << ": " << sum[i] << " vs " << ssum[i].toTensor();
        }
      }
    }
  }
}

// Verifies coco_bins and coco_bins_summary: with every detection in a bin
// of its own (scores at distinct bin centres) the summary of the histogram
// coco_bins' rows add up to equals coco_summary over the same rows, every
// stat and per-class value bit for bit (the curve has the same points);
// with coarse bins the CPU kernels and their tensor forms agree (the rows
// slot for slot, summaries to 1e-12); a slot that does not count names no
// cell; a label past num_classes is counted nowhere.
TEST(KernelsTest, CocoBinsAgreeWithCocoSummaryAndTheirScripts) {
  at::manual_seed(9);
  const std::vector<double> thr = {0.3, 0.5, 0.75}, rec = {0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0};
  const std::vector<int64_t> md = {1, 2, 4};
  std::vector<at::Tensor> in = CocoImages(40);
  const int64_t slots = in[1].numel(), bins = 256;
  in[1] = ((at::randperm(slots, at::kLong).to(at::kDouble) + 0.5) / bins).view(in[1].sizes());
  const std::vector<at::Tensor> rows = fused::CocoMatch(in, thr, 4, false);
  const std::vector<at::Tensor> exact = fused::CocoSummary(
      {in[1].reshape({-1}), in[2].reshape({-1}), rows[0], rows[1], rows[2], in[4].reshape({-1}), rows[3]}, thr, rec, md,
      false, true);
  // coco_bins' rows added into the dense histogram, as a scatter state takes them.
  const int64_t t_n = static_cast<int64_t>(thr.size());
  const auto histogram = [&](const at::Tensor& r, int64_t k) {
    EXPECT_EQ(r.sizes(), (std::vector<int64_t>{rows[0].size(0), 4 * t_n, 2}));
    const at::Tensor flat = r.reshape({-1, 2});
    EXPECT_TRUE(at::equal(flat.select(1, 0) * (1 - flat.select(1, 1)), at::zeros_like(flat.select(1, 0))))
        << "a slot that does not count names a cell";
    return at::zeros({3 * 4 * 3 * t_n * k * 2}, at::kLong)
        .index_add_(0, flat.select(1, 0), flat.select(1, 1))
        .view({3, 4, 3, t_n, k, 2});
  };
  const auto bins_of = [&](int64_t k, const at::Tensor& labels) {
    std::vector<at::Tensor> out = fused::CocoBins(
        {in[1].reshape({-1}), labels.reshape({-1}), rows[0], rows[1], rows[2], in[4].reshape({-1}), rows[3]}, 3, k, md,
        t_n);
    out[0] = histogram(out[0], k);
    return out;
  };
  const std::vector<at::Tensor> counts = bins_of(bins, in[2]);
  EXPECT_EQ(counts[1].select(1, 4).sum().item<int64_t>(),
            (in[2] >= 0).sum().item<int64_t>() + (in[4] >= 0).sum().item<int64_t>());
  const std::vector<at::Tensor> binned = fused::CocoBinsSummary(counts[0], counts[1], thr, rec, md, true);
  ASSERT_EQ(binned.size(), exact.size());
  for (size_t i = 0; i < exact.size(); ++i) {
    EXPECT_TRUE(at::equal(binned[i], exact[i])) << "result " << i << ": " << binned[i] << " vs " << exact[i];
  }
  // Coarse bins (ties inside bins): kernels and scripts.
  for (const int64_t k : {int64_t{1}, int64_t{5}}) {
    SCOPED_TRACE(k);
    const std::vector<at::Tensor> c = bins_of(k, in[2]);
    std::vector<c10::IValue> args = {
        in[1].reshape({-1}), in[2].reshape({-1}), rows[0], rows[1], rows[2], in[4].reshape({-1}), rows[3]};
    args.insert(args.end(), {int64_t{3}, k, md, static_cast<int64_t>(thr.size())});
    auto sc = fused::RunScript(fused::CocoBinsScript(), "coco_bins", args).toTuple()->elements();
    const std::vector<at::Tensor> raw = fused::CocoBins(
        {in[1].reshape({-1}), in[2].reshape({-1}), rows[0], rows[1], rows[2], in[4].reshape({-1}), rows[3]}, 3, k, md,
        t_n);
    EXPECT_TRUE(at::equal(raw[0], sc[0].toTensor()));  // the same rows, slot for slot
    EXPECT_TRUE(at::equal(c[0], histogram(sc[0].toTensor(), k)));
    EXPECT_TRUE(at::equal(c[1], sc[1].toTensor()));
    const std::vector<at::Tensor> sum = fused::CocoBinsSummary(c[0], c[1], thr, rec, md, true);
    auto ssum =
        fused::RunScript(fused::CocoBinsSummaryScript(), "coco_bins_summary", {c[0], c[1], thr, rec, md, false, true})
            .toTuple()
            ->elements();
    for (size_t i = 0; i < sum.size(); ++i) {
      EXPECT_TRUE(at::allclose(sum[i].to(at::kDouble), ssum[i].toTensor().to(at::kDouble), 1e-12, 1e-12))
          << "summary " << i << ": " << sum[i] << " vs " << ssum[i].toTensor();
    }
  }
  // Labels past num_classes (3) are counted nowhere.
  const std::vector<at::Tensor> past = bins_of(bins, at::where(in[2] == 2, 7, in[2]));
  EXPECT_EQ(past[0].select(0, 2).sum().item<int64_t>(), 0);
  EXPECT_TRUE(at::equal(past[0].narrow(0, 0, 2), counts[0].narrow(0, 0, 2)));
}

// Verifies class_overlap against counts by hand (a loop over pixels) on
// random index masks: few classes (the joint histogram) and many (three
// histograms), int32 and int64, ids out of range counted nowhere, the
// background dropped, one sample larger than a chunk of pixels; the CPU
// kernel and the tensor form (ClassOverlapScript()) agree exactly, and
// one-hot masks give the counts of their index masks.
TEST(KernelsTest, ClassOverlap) {
  at::manual_seed(21);
  struct Case {
    int64_t classes;
    std::vector<int64_t> shape;
    at::ScalarType dtype;
  };
  for (const Case& k : {Case{4, {3, 17, 9}, at::kLong}, Case{70, {2, 40, 40}, at::kInt},
                        Case{5, {1, 1100, 1000}, at::kLong}, Case{1, {2, 6}, at::kLong}}) {
    const at::Tensor preds = at::randint(-1, k.classes + 1, k.shape, at::TensorOptions().dtype(k.dtype));
    // Target mostly agrees with preds, as masks do.
    const at::Tensor target = at::where(at::rand(k.shape) < 0.7, preds,
                                        at::randint(-1, k.classes + 1, k.shape, at::TensorOptions().dtype(k.dtype)));
    const int64_t n = k.shape[0];
    std::vector<int64_t> want(n * 3 * k.classes, 0);
    const at::Tensor p = preds.reshape({n, -1}).to(at::kLong), t = target.reshape({n, -1}).to(at::kLong);
    const int64_t pixels = p.size(1);
    const int64_t* pp = p.data_ptr<int64_t>();
    const int64_t* tp = t.data_ptr<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < pixels; ++j) {
        const int64_t a = pp[i * pixels + j], b = tp[i * pixels + j];
        const bool pa = a >= 0 && a < k.classes, tb = b >= 0 && b < k.classes;
        if (pa && a == b) ++want[(i * 3) * k.classes + a];
        if (pa) ++want[(i * 3 + 1) * k.classes + a];
        if (tb) ++want[(i * 3 + 2) * k.classes + b];
      }
    }
    const at::Tensor expected = I64(want).reshape({n, 3, k.classes});
    for (bool background : {true, false}) {
      const at::Tensor got = fused::ClassOverlap(preds, target, k.classes, true, background);
      const at::Tensor kept = background || k.classes == 1 ? expected : expected.narrow(2, 1, k.classes - 1);
      EXPECT_TRUE(at::equal(got, kept)) << "classes " << k.classes << " background " << background;
      const at::Tensor script =
          fused::RunScript(fused::ClassOverlapScript(), "class_overlap", {preds, target, k.classes, true, background})
              .toTensor();
      EXPECT_TRUE(at::equal(script, kept)) << "classes " << k.classes;
    }
    if (k.classes == 4) {
      // One-hot masks of the in-range ids count the same.
      auto onehot = [&](const at::Tensor& x) {
        return at::one_hot(at::clamp_min(x.to(at::kLong), 0), k.classes + 1)
            .narrow(-1, 0, k.classes)
            .mul((x >= 0).unsqueeze(-1))
            .movedim(-1, 1)
            .to(at::kBool);
      };
      EXPECT_TRUE(at::equal(fused::ClassOverlap(onehot(preds), onehot(target), k.classes, false, true), expected));
    }
  }
  EXPECT_EQ(
      fused::ClassOverlap(at::zeros({0, 4, 4}, at::kLong), at::zeros({0, 4, 4}, at::kLong), 3, true, true).sizes(),
      (std::vector<int64_t>{0, 3, 3}));
}

// Verifies panoptic_match on an image worked by hand (a thing matched at
// IoU 3/4 with a void point taken out of its union, a stuff matched at
// 3/5 whatever its instance ids, an unmatched thing point counted as a
// false positive, an unknown pred category counted and made void) and on a
// fully void image (nothing counts); and that the CPU kernel and the tensor
// form (PanopticMatchScript()) agree exactly on random images with several
// instances, unknown categories and void.
TEST(KernelsTest, PanopticMatch) {
  // Points 0-9 of image 0 as (category, instance); image 1 is all void in
  // the target (category 9 is in neither list).
  const at::Tensor target = I64({1, 7, 1, 7, 1, 7, 1, 7, 5, 3, 5, 3, 5, 3, 5, 3, 9, 0, 9, 0,  //
                                 9, 0, 9, 0, 9, 0, 9, 0, 9, 0, 9, 0, 9, 0, 9, 0, 9, 0, 9, 0})
                                .view({2, 10, 2});
  const at::Tensor preds = I64({1, 2, 1, 2, 1, 2, 5, 0, 5, 1, 5, 1, 5, 1, 1, 4, 1, 2, 9, 9,  //
                                1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
                               .view({2, 10, 2});
  const std::vector<at::Tensor> got = fused::PanopticMatch(preds, target, {1}, {5});
  // 0.75 and float32(0.6) = 10066330 * 2^-24, in units of 2^-24.
  EXPECT_TRUE(at::equal(got[0], I64({12582912, 10066330, 1, 1, 1, 0, 0, 0,  //
                                     0, 0, 0, 0, 0, 0, 0, 0})
                                    .view({2, 4, 2})))
      << got[0];
  EXPECT_TRUE(at::equal(got[1], I64({1, 0})));
  const auto script = [](const at::Tensor& p, const at::Tensor& t, std::vector<int64_t> things,
                         std::vector<int64_t> stuffs) {
    return fused::RunScript(fused::PanopticMatchScript(), "panoptic_match", {p, t, things, stuffs})
        .toTuple()
        ->elements();
  };
  auto s = script(preds, target, {1}, {5});
  EXPECT_TRUE(at::equal(got[0], s[0].toTensor())) << s[0].toTensor();
  EXPECT_TRUE(at::equal(got[1], s[1].toTensor()));
  at::manual_seed(11);
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE(trial);
    // Blocky random images: categories 0-6 (things 1, 4; stuffs 0, 3, 6;
    // 2 and 5 unknown), instances 0-2, in 2x2 tiles so that segments
    // overlap in part.
    const auto image = [trial](int64_t n) {
      at::Tensor cat = at::randint(0, 7, {n, 4, 4, 1}, at::kLong).repeat_interleave(2, 1).repeat_interleave(2, 2);
      at::Tensor inst = at::randint(0, 3, {n, 8, 8, 1}, at::kLong);
      return at::cat({cat, inst}, 3).to(trial % 2 ? at::kInt : at::kLong);
    };
    const at::Tensor p = image(3), t = image(3);
    const std::vector<at::Tensor> k = fused::PanopticMatch(p, t, {1, 4}, {0, 3, 6});
    auto sc = script(p, t, {1, 4}, {0, 3, 6});
    EXPECT_TRUE(at::equal(k[0], sc[0].toTensor())) << k[0] << sc[0].toTensor();
    EXPECT_TRUE(at::equal(k[1], sc[1].toTensor()));
    EXPECT_TRUE(at::equal(k[1], ((p.select(3, 0) == 2) | (p.select(3, 0) == 5)).sum({1, 2})));
  }
  const at::Tensor empty = at::zeros({0, 3, 2}, at::kLong);
  EXPECT_EQ(fused::PanopticMatch(empty, empty, {1}, {}).at(0).sizes(), (std::vector<int64_t>{0, 4, 1}));
  EXPECT_EQ(script(empty, empty, {1}, {})[0].toTensor().sizes(), (std::vector<int64_t>{0, 4, 1}));
}

// Verifies depthwise_conv2d against F.pad(mode="reflect") and F.conv2d
// with groups (1e-12), strides 1 to 3, reflection padding 0 to 4 (up to
// one less than the image) and windows of one row or column, in float64
// and float32; on CPU the kernel and the tensor form
// (DepthwiseConv2dScript()) agree exactly.
TEST(KernelsTest, DepthwiseConv2d) {
  at::manual_seed(22);
  for (at::ScalarType dt : {at::kDouble, at::kFloat}) {
    const at::Tensor x = at::randn({2, 3, 13, 5}, at::TensorOptions().dtype(dt));
    for (const std::vector<int64_t>& window : {std::vector<int64_t>{3, 4}, {11, 1}, {1, 5}, {2, 2}}) {
      const at::Tensor w = at::randn(window, at::TensorOptions().dtype(dt));
      for (const std::vector<int64_t>& step :
           {std::vector<int64_t>{1, 0, 0}, {2, 0, 0}, {3, 0, 0}, {1, 5, 4}, {2, 1, 2}}) {
        const int64_t stride = step[0], ph = step[1], pw = step[2];
        const at::Tensor got = fused::DepthwiseConv2d(x, w, stride, ph, pw);
        const at::Tensor padded = at::reflection_pad2d(x, {pw, pw, ph, ph});
        const at::Tensor want =
            at::conv2d(padded, w.expand({3, 1, window[0], window[1]}), c10::nullopt, at::IntArrayRef{stride, stride},
                       at::IntArrayRef{0, 0}, at::IntArrayRef{1, 1}, 3);
        const double tol = dt == at::kDouble ? 1e-12 : 1e-5;
        const std::string label = absl::StrCat(window[0], "x", window[1], " stride ", stride, " pad ", ph, ",", pw);
        EXPECT_TRUE(SameTensor(got, want, tol, tol)) << label;
        const at::Tensor script =
            fused::RunScript(fused::DepthwiseConv2dScript(), "depthwise_conv2d", {x, w, stride, ph, pw}).toTensor();
        EXPECT_TRUE(at::equal(script, got)) << label;
      }
    }
  }
}

// Verifies trace_sqrt: tr sqrtm of a product of diagonal matrices is the
// sum of sqrt(a_i b_i); of a product of two covariance matrices, the trace
// of the symmetric square root sqrtm(A^1/2 B A^1/2) (1e-9); the kernel and
// TraceSqrtScript() agree.
TEST(KernelsTest, TraceSqrt) {
  const at::Tensor a = F64({1.0, 4.0, 9.0}), b = F64({4.0, 1.0, 0.25});
  EXPECT_NEAR(fused::TraceSqrt(at::diag(a).matmul(at::diag(b))).item<double>(), 2.0 + 2.0 + 1.5, 1e-12);
  at::manual_seed(23);
  const at::Tensor u = at::randn({20, 5}, at::kDouble), v = at::randn({30, 5}, at::kDouble);
  const at::Tensor s1 = u.t().matmul(u) / 19.0, s2 = v.t().matmul(v) / 29.0;
  const auto [evals, evecs] = at::linalg_eigh(s1);
  const at::Tensor half = evecs.matmul(at::diag(evals.sqrt())).matmul(evecs.t());
  const double want = at::linalg_eigvalsh(half.matmul(s2).matmul(half)).sqrt().sum().item<double>();
  const at::Tensor got = fused::TraceSqrt(s1.matmul(s2));
  EXPECT_NEAR(got.item<double>(), want, 1e-9);
  EXPECT_TRUE(at::equal(fused::RunScript(fused::TraceSqrtScript(), "trace_sqrt", {s1.matmul(s2)}).toTensor(), got));
}

// Verifies ngram_matches against counts by std::map of every row's n-grams
// (clipped by the most in one reference), on random ids over 3 values (many
// repeats) with padding anywhere, references of padding only (absent unless
// all are), and orders 1-5; the CPU kernel and the tensor form
// (NgramMatchesScript()) agree exactly.
TEST(KernelsTest, NgramMatches) {
  at::manual_seed(6);
  const int64_t rows = 150, refs = 3;
  const at::Tensor preds = at::randint(-1, 3, {rows, 10}, at::kLong);
  at::Tensor target = at::randint(-1, 3, {rows, refs, 8}, at::kInt);
  target.index_put_({at::indexing::Slice(0, 40), 1}, -1);  // an absent reference
  target.index_put_({at::indexing::Slice(40, 50)}, -1);    // all absent
  using Gram = std::vector<int64_t>;
  auto grams = [](const std::vector<int64_t>& s, int64_t k) {
    std::map<Gram, int64_t> out;
    for (size_t i = 0; i + k <= s.size(); ++i) ++out[Gram(s.begin() + i, s.begin() + i + k)];
    return out;
  };
  for (int64_t n_gram : {1, 2, 5}) {
    TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor got, Eval1("ngram_matches", {"i64[N,10]@cpu", "i32[N,3,8]@cpu"},
                                                     {{"n_gram", n_gram}}, {preds, target}));
    ASSERT_EQ(got.size(1), 2 * n_gram + 2);
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<int64_t> p = RowIds(preds[r]);
      std::vector<std::vector<int64_t>> ts;
      for (int64_t q = 0; q < refs; ++q) ts.push_back(RowIds(target[r][q]));
      for (int64_t k = 1; k <= n_gram; ++k) {
        int64_t matches = 0;
        for (const auto& [g, c] : grams(p, k)) {
          int64_t best = 0;
          for (const auto& t : ts) {
            auto m = grams(t, k);
            best = std::max(best, m.count(g) ? m[g] : int64_t{0});
          }
          matches += std::min(c, best);
        }
        ASSERT_EQ(got[r][k - 1].item<int64_t>(), matches) << "row " << r << " order " << k;
        ASSERT_EQ(got[r][n_gram + k - 1].item<int64_t>(), std::max<int64_t>(0, static_cast<int64_t>(p.size()) - k + 1));
      }
      const int64_t lp = static_cast<int64_t>(p.size());
      bool any = false;
      for (const auto& t : ts) any = any || !t.empty();
      int64_t want = -1, best = -1;
      for (const auto& t : ts) {
        if (any && t.empty()) continue;
        const int64_t d = std::abs(lp - static_cast<int64_t>(t.size()));
        if (best < 0 || d < best) best = d, want = static_cast<int64_t>(t.size());
      }
      ASSERT_EQ(got[r][2 * n_gram].item<int64_t>(), lp);
      ASSERT_EQ(got[r][2 * n_gram + 1].item<int64_t>(), want) << "row " << r;
    }
    at::Tensor script =
        fused::RunScript(fused::NgramMatchesScript(), "ngram_matches", {preds, target, n_gram}).toTensor();
    EXPECT_TRUE(at::equal(script, got)) << "n_gram " << n_gram;
  }
}

// Verifies ngram_overlap (the k-grams preds shares with each reference, by
// std::map counts) and lcs_length (against a full-table dynamic program),
// on random ids over 3 values with padding anywhere and absent references;
// the CPU kernels and their tensor forms agree exactly.
TEST(KernelsTest, NgramOverlapAndLcsLength) {
  at::manual_seed(8);
  const int64_t rows = 120, refs = 3;
  const at::Tensor preds = at::randint(-1, 3, {rows, 9}, at::kInt);
  at::Tensor target = at::randint(-1, 3, {rows, refs, 11}, at::kLong);
  target.index_put_({at::indexing::Slice(0, 30), 2}, -1);  // an absent reference
  using Seq = std::vector<int64_t>;
  auto grams = [](const Seq& s, int64_t k) {
    std::map<Seq, int64_t> out;
    for (size_t i = 0; i + k <= s.size(); ++i) ++out[Seq(s.begin() + i, s.begin() + i + k)];
    return out;
  };
  auto lcs = [](const Seq& a, const Seq& b) {
    std::vector<std::vector<int64_t>> c(a.size() + 1, std::vector<int64_t>(b.size() + 1, 0));
    for (size_t i = 1; i <= a.size(); ++i)
      for (size_t j = 1; j <= b.size(); ++j)
        c[i][j] = a[i - 1] == b[j - 1] ? c[i - 1][j - 1] + 1 : std::max(c[i - 1][j], c[i][j - 1]);
    return c[a.size()][b.size()];
  };
  const int64_t n_gram = 4;
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor shared, Eval1("ngram_overlap", {"i32[N,9]@cpu", "i64[N,3,11]@cpu"},
                                                      {{"n_gram", n_gram}}, {preds, target}));
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor longest,
                             Eval1("lcs_length", {"i32[N,9]@cpu", "i64[N,3,11]@cpu"}, {}, {preds, target}));
  ASSERT_EQ(shared.sizes(), (std::vector<int64_t>{rows, refs, n_gram}));
  for (int64_t r = 0; r < rows; ++r) {
    const Seq p = RowIds(preds[r]);
    for (int64_t q = 0; q < refs; ++q) {
      const Seq t = RowIds(target[r][q]);
      ASSERT_EQ(longest[r][q].item<int64_t>(), lcs(p, t)) << "row " << r << " ref " << q;
      for (int64_t k = 1; k <= n_gram; ++k) {
        std::map<Seq, int64_t> in_t = grams(t, k);
        int64_t want = 0;
        for (const auto& [g, c] : grams(p, k)) want += std::min(c, in_t.count(g) ? in_t[g] : int64_t{0});
        ASSERT_EQ(shared[r][q][k - 1].item<int64_t>(), want) << "row " << r << " ref " << q << " order " << k;
      }
    }
  }
  EXPECT_TRUE(at::equal(
      fused::RunScript(fused::NgramMatchesScript(), "ngram_overlap", {preds, target, n_gram}).toTensor(), shared));
  EXPECT_TRUE(at::equal(fused::RunScript(fused::LcsLengthScript(), "lcs_length", {preds, target}).toTensor(), longest));
}

// Verifies token_nll against a long-double log-sum-exp, for float32,
// float64, float16 and bfloat16 logits (spreads of 40; offsets of 1e4, and
// for the 16-bit types 0, which takes their exp table, or 2000 and -1000,
// which take the exp loop), targets outside [0, V) giving 0; the CPU kernel
// and the chunked tensor form (kTokenNllScript) agree to float64 rounding.
TEST(KernelsTest, TokenNll) {
  at::manual_seed(7);
  const std::pair<at::ScalarType, double> cases[] = {{at::kFloat, 1e4},   {at::kDouble, 1e4},
                                                     {at::kHalf, 0.0},    {at::kBFloat16, 0.0},
                                                     {at::kHalf, 2000.0}, {at::kBFloat16, -1000.0}};
  for (const auto& [dt, offset] : cases) {
    const at::Tensor logits = (at::randn({3, 5, 97}, at::kDouble) * 40.0 + offset).to(dt);
    at::Tensor target = at::randint(0, 97, {3, 5}, at::kLong);
    target[0][0] = -100;
    target[2][4] = 97;
    const std::string type = std::string(ir::DTypeName(*ir::FromScalarType(dt))) + "[3,5,97]@cpu";
    TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor got, Eval1("token_nll", {type, "i64[3,5]@cpu"}, {}, {logits, target}));
    ASSERT_EQ(got.scalar_type(), at::kDouble);
    const at::Tensor x = logits.to(at::kDouble);
    for (int64_t b = 0; b < 3; ++b) {
      for (int64_t s = 0; s < 5; ++s) {
        const int64_t t = target[b][s].item<int64_t>();
        long double want = 0;
        if (t >= 0 && t < 97) {
          long double peak = -INFINITY, sum = 0;
          for (int64_t j = 0; j < 97; ++j) peak = std::max<long double>(peak, x[b][s][j].item<double>());
          for (int64_t j = 0; j < 97; ++j) sum += std::exp(static_cast<long double>(x[b][s][j].item<double>()) - peak);
          want = peak + std::log(sum) - x[b][s][t].item<double>();
        }
        EXPECT_NEAR(got[b][s].item<double>(), static_cast<double>(want),
                    1e-12 * (1 + std::fabs(static_cast<double>(want))))
            << "dtype " << dt << " at " << b << "," << s;
      }
    }
    at::Tensor script = fused::RunScript(fused::kTokenNllScript, "token_nll", {logits, target}).toTensor();
    EXPECT_TRUE(at::allclose(script, got, 1e-14, 1e-9)) << "dtype " << dt;
  }
}

// Verifies that a syncing op does not run on meta: the meta run is a real
// proof, not one that passes for everything.
TEST(KernelsTest, SyncingOpsFailOnMeta) {
  ASSERT_NE(FindOp("nonzero"), nullptr) << "no nonzero op in the table";
  auto meta = at::TensorOptions().device(at::kMeta);
  EXPECT_FALSE(Eval("nonzero", {"f32[N]@meta"}, {}, {at::empty({3}, meta)}, "meta").ok());
  EXPECT_FALSE(Eval("masked_select", {"f32[N]@meta", "i1[N]@meta"}, {},
                    {at::empty({3}, meta), at::empty({3}, meta.dtype(at::kBool))}, "meta")
                   .ok());
}

// ----------------------------------------------------------------------------
// Values against ATen.

// Verifies arithmetic in the IR's result dtype: ints with floats, true
// division of integers, bools promoted to i64, and safe_div's zero_division.
TEST(KernelsTest, Arithmetic) {
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r, Eval1("add", {"i32[N]@cpu", "f32[]@cpu"}, {},
                                                 {I32({1, 2, 3}), at::scalar_tensor(0.5, at::kFloat)}));
  EXPECT_TRUE(SameTensor(r, F32({1.5, 2.5, 3.5})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("div", {"i64[N]@cpu", "i64[N]@cpu"}, {}, {I64({7, -7, 0}), I64({2, 2, 4})}));
  EXPECT_TRUE(SameTensor(r, F32({3.5, -3.5, 0})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("add", {"i1[N]@cpu", "i1[N]@cpu"}, {}, {Bool({1, 0, 1}), Bool({1, 1, 0})}));
  EXPECT_TRUE(SameTensor(r, I64({2, 1, 1})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("sub", {"i64[N]@cpu", "i64[]@cpu"}, {},
                                      {I64({int64_t{1} << 60, 5}), at::scalar_tensor(int64_t{1}, at::kLong)}));
  EXPECT_TRUE(SameTensor(r, I64({(int64_t{1} << 60) - 1, 4})));
  at::Tensor a = at::randn({4, 3}, at::kDouble), b = at::randn({3}, at::kDouble);
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("mul", {"f64[N,3]@cpu", "f64[3]@cpu"}, {}, {a, b}));
  EXPECT_TRUE(SameTensor(r, a * b));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("pow", {"f64[N,3]@cpu", "f64[3]@cpu"}, {}, {a.abs(), b}));
  EXPECT_TRUE(SameTensor(r, at::pow(a.abs(), b)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("maximum", {"f64[N,3]@cpu", "f64[3]@cpu"}, {}, {a, b}));
  EXPECT_TRUE(SameTensor(r, at::maximum(a, b)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("minimum", {"f64[N,3]@cpu", "f64[3]@cpu"}, {}, {a, b}));
  EXPECT_TRUE(SameTensor(r, at::minimum(a, b)));

  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("safe_div", {"i64[N]@cpu", "i64[N]@cpu"}, {}, {I64({1, 2, 3}), I64({0, 4, 0})}));
  EXPECT_TRUE(SameTensor(r, F32({0, 0.5, 0})));
  TALLY_ASSERT_OK_AND_ASSIGN(
      r, Eval1("safe_div", {"f64[N]@cpu", "f64[N]@cpu"}, {{"zero_division", NAN}}, {F64({1, 2, 0}), F64({0, 4, 0})}));
  EXPECT_TRUE(SameTensor(r, F64({NAN, 0.5, NAN})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("safe_div", {"f64[N]@cpu", "f64[]@cpu"}, {{"zero_division", 1.0}},
                                      {F64({1, 2}), at::scalar_tensor(0.0, at::kDouble)}));
  EXPECT_TRUE(SameTensor(r, F64({1, 1})));
}

// Verifies comparisons in the promoted dtype, logic ops, where and cast.
TEST(KernelsTest, ComparisonsLogicWhereCast) {
  TALLY_ASSERT_OK_AND_ASSIGN(
      at::Tensor r, Eval1("lt", {"i64[N]@cpu", "f32[]@cpu"}, {}, {I64({2, 3}), at::scalar_tensor(2.5, at::kFloat)}));
  EXPECT_TRUE(SameTensor(r, Bool({1, 0})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("eq", {"i32[N]@cpu", "i64[N]@cpu"}, {}, {I32({1, 2}), I64({1, 3})}));
  EXPECT_TRUE(SameTensor(r, Bool({1, 0})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("ge", {"f32[N]@cpu", "f32[N]@cpu"}, {}, {F32({1, NAN}), F32({1, 0})}));
  EXPECT_TRUE(SameTensor(r, Bool({1, 0})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("ne", {"f32[N]@cpu", "f32[N]@cpu"}, {}, {F32({1, NAN}), F32({1, NAN})}));
  EXPECT_TRUE(SameTensor(r, Bool({0, 1})));
  TALLY_ASSERT_OK_AND_ASSIGN(
      r, Eval1("logical_xor", {"i1[N]@cpu", "f32[N]@cpu"}, {}, {Bool({1, 1, 0, 0}), F32({0, 2, 0, -1})}));
  EXPECT_TRUE(SameTensor(r, Bool({1, 0, 0, 1})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("logical_not", {"i64[N]@cpu"}, {}, {I64({0, 3})}));
  EXPECT_TRUE(SameTensor(r, Bool({1, 0})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("isnan", {"f32[N]@cpu"}, {}, {F32({1, NAN, INFINITY})}));
  EXPECT_TRUE(SameTensor(r, Bool({0, 1, 0})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("where", {"i1[N]@cpu", "i64[N]@cpu", "f32[]@cpu"}, {},
                                      {Bool({1, 0, 1}), I64({4, 5, 6}), at::scalar_tensor(-1.5, at::kFloat)}));
  EXPECT_TRUE(SameTensor(r, F32({4, -1.5, 6})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("cast", {"f32[N]@cpu"}, {{"dtype", std::string("i64")}}, {F32({1.7, -1.7, 0})}));
  EXPECT_TRUE(SameTensor(r, I64({1, -1, 0})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("cast", {"f32[N]@cpu"}, {{"dtype", std::string("i1")}}, {F32({0.5, 0, NAN})}));
  EXPECT_TRUE(SameTensor(r, Bool({1, 0, 1})));
}

// Verifies unary math against ATen, integer inputs computed in f32, and
// clamp keeping an integer dtype.
TEST(KernelsTest, UnaryMath) {
  at::Tensor x = at::rand({6}, at::kDouble) * 4 + 0.1;
  struct Case {
    const char* op;
    at::Tensor want;
  };
  for (const Case& c : {Case{"exp", at::exp(x)}, Case{"log", at::log(x)}, Case{"sqrt", at::sqrt(x)},
                        Case{"sigmoid", at::sigmoid(x)}, Case{"neg", -x}, Case{"abs", at::abs(-x)}}) {
    TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r, Eval1(c.op, {"f64[N]@cpu"}, {}, {std::string(c.op) == "abs" ? -x : x}));
    EXPECT_TRUE(SameTensor(r, c.want, 1e-12, 1e-14)) << c.op;
  }
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r, Eval1("exp", {"i64[N]@cpu"}, {}, {I64({0, 1})}));
  EXPECT_TRUE(SameTensor(r, at::exp(F32({0, 1}))));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("abs", {"i32[N]@cpu"}, {}, {I32({-3, 2})}));
  EXPECT_TRUE(SameTensor(r, I32({3, 2})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("clamp", {"i64[N]@cpu"}, {{"min", -1.0}, {"max", 2.0}}, {I64({-3, 0, 5})}));
  EXPECT_TRUE(SameTensor(r, I64({-1, 0, 2})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("clamp", {"f32[N]@cpu"}, {{"min", 0.25}}, {F32({-3, 0.5, NAN})}));
  EXPECT_TRUE(SameTensor(r, at::clamp(F32({-3, 0.5, NAN}), 0.25)));
}

// Verifies that log_cosh matches log(cosh(x)) where that is finite and does
// not overflow for large |x| (log cosh x -> |x| - log 2), in f64 and f32.
TEST(KernelsTest, LogCoshDoesNotOverflow) {
  at::Tensor small = F64({0, 1, -1, 0.5, -3, 10, -20});
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r, Eval1("log_cosh", {"f64[N]@cpu"}, {}, {small}));
  EXPECT_TRUE(SameTensor(r, at::log(at::cosh(small)), 1e-12, 1e-15));
  at::Tensor big = F64({50, -50, 1000, -1000, 1e300});
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("log_cosh", {"f64[N]@cpu"}, {}, {big}));
  EXPECT_TRUE(at::isfinite(r).all().item<bool>()) << r;
  EXPECT_TRUE(SameTensor(r, big.abs() - std::log(2.0), 1e-14, 0));
  // cosh(100) overflows float32; log_cosh must not.
  at::Tensor f = F32({100, -100, 88.8f, 0});
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("log_cosh", {"f32[N]@cpu"}, {}, {f}));
  EXPECT_TRUE(at::isfinite(r).all().item<bool>()) << r;
  EXPECT_TRUE(SameTensor(r, F32({100 - std::log(2.0f), 100 - std::log(2.0f), 88.8f - std::log(2.0f), 0}), 1e-6, 1e-6));
}

// Verifies reductions against ATen, and that an empty max/min reduction gives
// the identity (-inf/+inf, or the integer limits) instead of failing.
TEST(KernelsTest, Reductions) {
  using Ints = std::vector<int64_t>;
  at::Tensor x = at::randn({5, 3}, at::kFloat);
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r, Eval1("reduce_sum", {"f32[N,3]@cpu"}, {{"dims", Ints{1}}}, {x}));
  EXPECT_TRUE(SameTensor(r, x.sum(1)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reduce_sum", {"f32[N,3]@cpu"}, {{"dims", Ints{-1}}, {"keepdim", true}}, {x}));
  EXPECT_TRUE(SameTensor(r, x.sum(1, true)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reduce_sum", {"f32[N,3]@cpu"}, {}, {x}));
  EXPECT_TRUE(SameTensor(r, x.sum(), 1e-5, 1e-6));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reduce_sum", {"i1[N]@cpu"}, {}, {Bool({1, 0, 1, 1})}));
  EXPECT_TRUE(SameTensor(r, at::scalar_tensor(int64_t{3}, at::kLong)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reduce_max", {"f32[N,3]@cpu"}, {{"dims", Ints{0}}}, {x}));
  EXPECT_TRUE(SameTensor(r, std::get<0>(x.max(0))));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reduce_min", {"f32[N,3]@cpu"}, {{"dims", Ints{0, 1}}}, {x}));
  EXPECT_TRUE(SameTensor(r, x.min()));

  // Empty reductions.
  at::Tensor empty = at::empty({0}, at::kFloat);
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reduce_max", {"f32[N]@cpu"}, {}, {empty}));
  EXPECT_TRUE(SameTensor(r, at::scalar_tensor(-INFINITY, at::kFloat)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reduce_min", {"f32[N]@cpu"}, {}, {empty}));
  EXPECT_TRUE(SameTensor(r, at::scalar_tensor(INFINITY, at::kFloat)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reduce_max", {"f64[N,3]@cpu"}, {{"dims", Ints{0}}, {"keepdim", true}},
                                      {at::empty({0, 3}, at::kDouble)}));
  EXPECT_TRUE(SameTensor(r, at::full({1, 3}, -INFINITY, at::kDouble)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reduce_max", {"i64[N]@cpu"}, {}, {at::empty({0}, at::kLong)}));
  EXPECT_TRUE(SameTensor(r, at::scalar_tensor(std::numeric_limits<int64_t>::min(), at::kLong)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reduce_min", {"i32[N]@cpu"}, {}, {at::empty({0}, at::kInt)}));
  EXPECT_TRUE(SameTensor(r, at::scalar_tensor(std::numeric_limits<int32_t>::max(), at::kInt)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reduce_sum", {"f32[N]@cpu"}, {}, {empty}));
  EXPECT_TRUE(SameTensor(r, at::scalar_tensor(0.0, at::kFloat)));

  // any/all over dims, of non-bool inputs, and empty.
  at::Tensor b = Bool({1, 0, 0, 0}).reshape({2, 2});
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reduce_any", {"i1[N,2]@cpu"}, {{"dims", Ints{1}}}, {b}));
  EXPECT_TRUE(SameTensor(r, Bool({1, 0})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reduce_all", {"i1[N,2]@cpu"}, {{"dims", Ints{0}}}, {b}));
  EXPECT_TRUE(SameTensor(r, Bool({0, 0})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reduce_all", {"f32[N,2]@cpu"}, {}, {F32({1, 2, 3, -1}).reshape({2, 2})}));
  EXPECT_TRUE(SameTensor(r, at::scalar_tensor(true, at::kBool)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reduce_any", {"f32[N]@cpu"}, {}, {empty}));
  EXPECT_TRUE(SameTensor(r, at::scalar_tensor(false, at::kBool)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reduce_all", {"f32[N]@cpu"}, {}, {empty}));
  EXPECT_TRUE(SameTensor(r, at::scalar_tensor(true, at::kBool)));
}

// Verifies argmax (first index among ties) and softmax.
TEST(KernelsTest, ArgmaxAndSoftmax) {
  at::Tensor x = F32({1, 3, 3, 5, 0, 5}).reshape({2, 3});
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r, Eval1("argmax", {"f32[N,3]@cpu"}, {{"dim", int64_t{1}}}, {x}));
  EXPECT_TRUE(SameTensor(r, I64({1, 0})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("argmax", {"f32[N,3]@cpu"}, {{"dim", int64_t{1}}, {"keepdim", true}}, {x}));
  EXPECT_TRUE(SameTensor(r, I64({1, 0}).reshape({2, 1})));
  at::Tensor y = at::randn({4, 3}, at::kFloat);
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("softmax", {"f32[N,3]@cpu"}, {{"dim", int64_t{1}}}, {y}));
  EXPECT_TRUE(SameTensor(r, at::softmax(y, 1)));
  TALLY_ASSERT_OK_AND_ASSIGN(
      r, Eval1("softmax", {"i64[N,3]@cpu"}, {{"dim", int64_t{1}}}, {I64({0, 1, 2}).reshape({1, 3})}));
  EXPECT_TRUE(SameTensor(r, at::softmax(F32({0, 1, 2}).reshape({1, 3}), 1)));
}

// Verifies that one_hot gives an all-false row for a label outside
// [0, num_classes) instead of failing.
TEST(KernelsTest, OneHotOutOfRangeRowIsAllFalse) {
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r,
                             Eval1("one_hot", {"i64[N]@cpu"}, {{"num_classes", int64_t{4}}}, {I64({0, 3, -1, 4, 2})}));
  at::Tensor want = Bool({1, 0, 0, 0,  //
                          0, 0, 0, 1,  //
                          0, 0, 0, 0,  //
                          0, 0, 0, 0,  //
                          0, 0, 1, 0})
                        .reshape({5, 4});
  EXPECT_TRUE(SameTensor(r, want));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("one_hot", {"i32[N]@cpu"}, {{"num_classes", int64_t{2}}}, {I32({1, 7})}));
  EXPECT_TRUE(SameTensor(r, Bool({0, 1, 0, 0}).reshape({2, 2})));
}

// Verifies that histogram counts (or sums weights of) indices in [0, size)
// and drops the others.
TEST(KernelsTest, HistogramDropsOutOfRangeIndices) {
  at::Tensor idx = I64({0, 1, 1, 5, -1, 3, 4});
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r, Eval1("histogram", {"i64[N]@cpu"}, {{"size", int64_t{4}}}, {idx}));
  EXPECT_TRUE(SameTensor(r, I64({1, 2, 0, 1})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("histogram", {"i32[N]@cpu", "f64[N]@cpu"}, {{"size", int64_t{4}}},
                                      {idx.to(at::kInt), F64({0.5, 1, 2, 100, 100, 3, 100})}));
  EXPECT_TRUE(SameTensor(r, F64({0.5, 3, 0, 3})));
  TALLY_ASSERT_OK_AND_ASSIGN(
      r, Eval1("histogram", {"i64[N]@cpu", "i1[N]@cpu"}, {{"size", int64_t{4}}}, {idx, Bool({1, 1, 0, 1, 1, 1, 1})}));
  EXPECT_TRUE(SameTensor(r, I64({1, 1, 0, 1})));
  TALLY_ASSERT_OK_AND_ASSIGN(r,
                             Eval1("histogram", {"i64[N]@cpu"}, {{"size", int64_t{3}}}, {at::empty({0}, at::kLong)}));
  EXPECT_TRUE(SameTensor(r, I64({0, 0, 0})));
}

// Verifies topk_mask and a stable sort.
TEST(KernelsTest, TopkMaskAndSort) {
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r, Eval1("topk_mask", {"f32[N,4]@cpu"}, {{"k", int64_t{2}}},
                                                 {F32({1, 5, 3, 4, 9, 8, 7, 6}).reshape({2, 4})}));
  EXPECT_TRUE(SameTensor(r, Bool({0, 1, 0, 1, 1, 1, 0, 0}).reshape({2, 4})));
  TALLY_ASSERT_OK_AND_ASSIGN(std::vector<at::Tensor> s,
                             Eval("sort", {"f32[N]@cpu"}, {{"dim", int64_t{0}}}, {F32({3, 1, 2, 1})}));
  EXPECT_TRUE(SameTensor(s[0], F32({1, 1, 2, 3})));
  EXPECT_TRUE(SameTensor(s[1], I64({1, 3, 2, 0})));
  TALLY_ASSERT_OK_AND_ASSIGN(
      s, Eval("sort", {"f32[N]@cpu"}, {{"dim", int64_t{0}}, {"descending", true}}, {F32({3, 1, 2, 1})}));
  EXPECT_TRUE(SameTensor(s[0], F32({3, 2, 1, 1})));
  EXPECT_TRUE(SameTensor(s[1], I64({0, 2, 1, 3})));
}

// Verifies bucketize against counting boundaries by hand (< x, or <= x with
// right), with exact hits, repeated boundaries, NaN (above every boundary,
// as torch.bucketize places it) and integers against float boundaries.
TEST(KernelsTest, BucketizeCountsBoundaries) {
  const std::vector<double> b = {0, 0.25, 0.5, 0.5, 1};
  const std::vector<double> x = {-1, 0, 0.1, 0.25, 0.5, 0.7, 1, 2, NAN};
  for (bool right : {false, true}) {
    std::vector<int64_t> want;
    for (double v : x) {
      int64_t count = 0;
      for (double e : b) count += std::isnan(v) || (right ? e <= v : e < v);
      want.push_back(count);
    }
    TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r,
                               Eval1("bucketize", {"f64[N]@cpu", "f64[5]@cpu"}, {{"right", right}}, {F64(x), F64(b)}));
    EXPECT_TRUE(SameTensor(r, I64(want))) << "right=" << right;
  }
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r, Eval1("bucketize", {"i64[N,2]@cpu", "f32[3]@cpu"}, {},
                                                 {I64({0, 1, 2, 3}).reshape({2, 2}), F32({0.5, 1, 1.5})}));
  EXPECT_TRUE(SameTensor(r, I64({0, 1, 3, 3}).reshape({2, 2})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("bucketize", {"f32[N]@cpu", "f32[0]@cpu"}, {}, {F32({0.5, 2}), F32({})}));
  EXPECT_TRUE(SameTensor(r, I64({0, 0})));
}

// Verifies cumsum against a running sum along either dim, integer inputs
// accumulating in i64 past the int32 range, bools counted, and an empty dim.
TEST(KernelsTest, CumsumMatchesARunningSum) {
  at::manual_seed(3);
  at::Tensor x = at::randn({6, 3}, at::kDouble);
  for (int64_t dim : {0, 1}) {
    at::Tensor want = at::empty_like(x);
    for (int64_t i = 0; i < 6; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        double acc = 0;
        for (int64_t k = 0; k <= (dim == 0 ? i : j); ++k) {
          acc += dim == 0 ? x[k][j].item<double>() : x[i][k].item<double>();
        }
        want[i][j] = acc;
      }
    }
    TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r, Eval1("cumsum", {"f64[N,3]@cpu"}, {{"dim", dim - 2}}, {x}));
    EXPECT_TRUE(SameTensor(r, want, 1e-12, 1e-12)) << "dim " << dim;
  }
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r,
                             Eval1("cumsum", {"i32[N]@cpu"}, {{"dim", int64_t{0}}}, {I32({2147483647, 1, 2, -5})}));
  EXPECT_TRUE(SameTensor(r, I64({2147483647, 2147483648, 2147483650, 2147483645})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("cumsum", {"i1[N]@cpu"}, {{"dim", int64_t{0}}}, {Bool({1, 0, 1, 1, 0})}));
  EXPECT_TRUE(SameTensor(r, I64({1, 1, 2, 3, 3})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("cumsum", {"f32[N,3]@cpu"}, {{"dim", int64_t{0}}}, {at::empty({0, 3})}));
  EXPECT_TRUE(SameTensor(r, at::empty({0, 3})));
}

// Verifies the fixed-order scan cumsum runs for floats off the host (this
// machine has no accelerator, so it is called directly): a running sum up to
// rounding, exact on integer-valued floats, at every length from 0 to 40
// (powers of two and their neighbours) and along an inner dim.
TEST(KernelsTest, CumsumScanIsARunningSum) {
  at::manual_seed(4);
  for (int64_t n = 0; n <= 40; ++n) {
    at::Tensor ints = at::randint(-50, 50, {n}, at::kDouble);
    EXPECT_TRUE(SameTensor(CumsumScan(ints, 0), at::cumsum(ints, 0), 0, 0)) << "n=" << n;
    at::Tensor x = at::randn({n}, at::kDouble);
    std::vector<double> want;
    double acc = 0;
    for (int64_t i = 0; i < n; ++i) want.push_back(acc += x[i].item<double>());
    EXPECT_TRUE(SameTensor(CumsumScan(x, -1), F64(want), 1e-12, 1e-12)) << "n=" << n;
  }
  at::Tensor m = at::randn({4, 9}, at::kFloat);
  EXPECT_TRUE(SameTensor(CumsumScan(m, 1), at::cumsum(m, 1), 1e-5, 1e-5));
  at::Tensor meta = CumsumScan(at::empty({5, 3}, at::TensorOptions().device(at::kMeta)), 0);
  EXPECT_TRUE(meta.is_meta());
  EXPECT_EQ(meta.sizes(), at::IntArrayRef({5, 3}));
}

// Verifies topk against sorting each row by hand: the k largest (smallest)
// values in order and where they were; unsorted results hold the same set.
TEST(KernelsTest, TopkMatchesSortingByHand) {
  at::manual_seed(5);
  at::Tensor x = at::randperm(35, at::kLong).to(at::kFloat).reshape({5, 7});  // distinct values
  for (bool largest : {true, false}) {
    TALLY_ASSERT_OK_AND_ASSIGN(std::vector<at::Tensor> r,
                               Eval("topk", {"f32[N,7]@cpu"}, {{"k", int64_t{3}}, {"largest", largest}}, {x}));
    for (int64_t i = 0; i < 5; ++i) {
      std::vector<std::pair<float, int64_t>> row;
      for (int64_t j = 0; j < 7; ++j) row.push_back({x[i][j].item<float>(), j});
      std::sort(row.begin(), row.end());
      if (largest) std::reverse(row.begin(), row.end());
      for (int64_t j = 0; j < 3; ++j) {
        EXPECT_EQ(r[0][i][j].item<float>(), row[j].first) << "row " << i << " largest=" << largest;
        EXPECT_EQ(r[1][i][j].item<int64_t>(), row[j].second) << "row " << i << " largest=" << largest;
      }
    }
  }
  TALLY_ASSERT_OK_AND_ASSIGN(
      std::vector<at::Tensor> r,
      Eval("topk", {"f32[N,7]@cpu"}, {{"k", int64_t{2}}, {"dim", int64_t{0}}, {"sorted", false}}, {x}));
  EXPECT_EQ(r[0].sizes(), at::IntArrayRef({2, 7}));
  EXPECT_TRUE(SameTensor(std::get<0>(at::sort(r[0], 0, true)), std::get<0>(at::topk(x, 2, 0))));
  EXPECT_TRUE(SameTensor(at::gather(x, 0, r[1]), r[0]));
}

// Verifies argsort against std::stable_sort: ties keep their order, in both
// directions, along dim 0 of a 2-D input; an unstable sort still sorts.
TEST(KernelsTest, ArgsortIsAStableSort) {
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r, Eval1("argsort", {"f32[N]@cpu"}, {}, {F32({3, 1, 2, 1, 3, 0})}));
  EXPECT_TRUE(SameTensor(r, I64({5, 1, 3, 2, 0, 4})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("argsort", {"f32[N]@cpu"}, {{"descending", true}}, {F32({3, 1, 2, 1, 3, 0})}));
  EXPECT_TRUE(SameTensor(r, I64({0, 4, 2, 1, 3, 5})));
  at::manual_seed(6);
  at::Tensor x = at::randint(0, 4, {30, 3}, at::kLong);
  for (bool descending : {false, true}) {
    TALLY_ASSERT_OK_AND_ASSIGN(
        r, Eval1("argsort", {"i64[N,3]@cpu"}, {{"dim", int64_t{0}}, {"descending", descending}}, {x}));
    for (int64_t j = 0; j < 3; ++j) {
      std::vector<int64_t> idx(30);
      for (int64_t i = 0; i < 30; ++i) idx[i] = i;
      std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
        int64_t va = x[a][j].item<int64_t>(), vb = x[b][j].item<int64_t>();
        return descending ? va > vb : va < vb;
      });
      EXPECT_TRUE(SameTensor(r.select(1, j).contiguous(), I64(idx))) << "column " << j << " descending=" << descending;
    }
  }
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("argsort", {"i64[N,3]@cpu"}, {{"dim", int64_t{0}}, {"stable", false}}, {x}));
  EXPECT_TRUE(SameTensor(at::gather(x, 0, r), std::get<0>(at::sort(x, 0))));
}

// Verifies concat (torch.cat along dim 0, empty operands included) and take
// (x[idx] of idx's shape, indices clamped into range).
TEST(KernelsTest, ConcatAndTake) {
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r, Eval1("concat", {"f32[1]@cpu", "f32[N]@cpu", "f32[N]@cpu"}, {},
                                                 {F32({1}), F32({}), F32({0.5, 0.25})}));
  EXPECT_TRUE(SameTensor(r, F32({1, 0.5, 0.25})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("concat", {"i64[N,2]@cpu", "i64[1,2]@cpu"}, {},
                                      {at::zeros({2, 2}, at::kLong), at::ones({1, 2}, at::kLong)}));
  EXPECT_TRUE(SameTensor(r, I64({0, 0, 0, 0, 1, 1}).reshape({3, 2})));
  TALLY_ASSERT_OK_AND_ASSIGN(
      r, Eval1("take", {"f64[N]@cpu", "i64[N,2]@cpu"}, {}, {F64({10, 20, 30}), I64({2, 0, -1, 7}).reshape({2, 2})}));
  EXPECT_TRUE(SameTensor(r, F64({30, 10, 10, 30}).reshape({2, 2})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("take", {"f32[N]@cpu", "i32[N]@cpu"}, {}, {F32({}), I32({})}));
  EXPECT_TRUE(SameTensor(r, F32({})));
}

// AverageRanks is scipy.stats.rankdata(method="average") by brute force.
std::vector<double> AverageRanks(const std::vector<double>& v) {
  std::vector<double> r(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    double less = 0, equal = 0;
    for (double w : v) {
      less += w < v[i];
      equal += w == v[i];
    }
    r[i] = less + (equal + 1) / 2;
  }
  return r;
}

// Verifies rank_average against scipy-style average ranks with ties, in 1-D,
// per column in 2-D, and on an empty batch.
TEST(KernelsTest, RankAverageMatchesScipyAverageRanks) {
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r,
                             Eval1("rank_average", {"f32[N]@cpu"}, {}, {F32({3, 1, 4, 1, 5, 9, 2, 6, 5, 3})}));
  EXPECT_TRUE(SameTensor(r, F64({4.5, 1.5, 6, 1.5, 7.5, 10, 3, 9, 7.5, 4.5})));

  at::manual_seed(1);
  at::Tensor x = at::randint(0, 5, {40, 3}, at::kLong);
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("rank_average", {"i64[N,3]@cpu"}, {}, {x}));
  at::Tensor xd = x.to(at::kDouble);
  for (int64_t j = 0; j < 3; ++j) {
    at::Tensor col = xd.select(1, j).contiguous();
    std::vector<double> v(col.data_ptr<double>(), col.data_ptr<double>() + col.numel());
    EXPECT_TRUE(SameTensor(r.select(1, j).contiguous(), F64(AverageRanks(v)), 0, 0)) << "column " << j;
  }
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("rank_average", {"f64[N]@cpu"}, {}, {at::empty({0}, at::kDouble)}));
  EXPECT_EQ(r.numel(), 0);
  EXPECT_EQ(r.scalar_type(), at::kDouble);
}

// Verifies creation and shape ops against ATen.
TEST(KernelsTest, CreationAndShapeOps) {
  using Ints = std::vector<int64_t>;
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r, Eval1("constant", {}, {{"value", 2.5}, {"dtype", std::string("f64")}}, {}));
  EXPECT_TRUE(SameTensor(r, at::scalar_tensor(2.5, at::kDouble)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("constant", {}, {{"value", int64_t{-3}}, {"dtype", std::string("i64")}}, {}));
  EXPECT_TRUE(SameTensor(r, at::scalar_tensor(int64_t{-3}, at::kLong)));
  TALLY_ASSERT_OK_AND_ASSIGN(
      r, Eval1("full", {}, {{"shape", Ints{2, 3}}, {"value", 7.0}, {"dtype", std::string("i32")}}, {}));
  EXPECT_TRUE(SameTensor(r, at::full({2, 3}, 7, at::kInt)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("arange", {}, {{"n", int64_t{4}}, {"dtype", std::string("f32")}}, {}));
  EXPECT_TRUE(SameTensor(r, F32({0, 1, 2, 3})));
  at::Tensor x = at::randn({3, 4}, at::kFloat);
  TALLY_ASSERT_OK_AND_ASSIGN(r,
                             Eval1("full_like", {"f32[N,4]@cpu"}, {{"value", 1.0}, {"dtype", std::string("i1")}}, {x}));
  EXPECT_TRUE(SameTensor(r, at::ones({3, 4}, at::kBool)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("size", {"f32[N,4]@cpu"}, {{"dim", int64_t{0}}}, {x}));
  EXPECT_TRUE(SameTensor(r, at::scalar_tensor(int64_t{3}, at::kLong)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("flatten", {"f32[N,4]@cpu"}, {}, {x}));
  EXPECT_TRUE(SameTensor(r, x.reshape({12})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("reshape", {"f32[3,4]@cpu"}, {{"shape", Ints{2, 6}}}, {x}));
  EXPECT_TRUE(SameTensor(r, x.reshape({2, 6})));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("unsqueeze", {"f32[N,4]@cpu"}, {{"dim", int64_t{-1}}}, {x}));
  EXPECT_TRUE(SameTensor(r, x.unsqueeze(-1)));
  TALLY_ASSERT_OK_AND_ASSIGN(r,
                             Eval1("squeeze", {"f32[N,1]@cpu"}, {{"dim", int64_t{1}}}, {x.select(1, 0).unsqueeze(1)}));
  EXPECT_TRUE(SameTensor(r, x.select(1, 0)));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("select", {"f32[N,4]@cpu"}, {{"dim", int64_t{1}}, {"index", int64_t{2}}}, {x}));
  EXPECT_TRUE(SameTensor(r, x.select(1, 2)));
  TALLY_ASSERT_OK_AND_ASSIGN(r,
                             Eval1("transpose", {"f32[N,4]@cpu"}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}}, {x}));
  EXPECT_TRUE(SameTensor(r, x.t()));
}

// Verifies that linspace is torch.linspace bit for bit (ATen's rounding of
// the points, e.g. 0.79999995 for the 13th of 16 float32 points, not 0.8),
// in float32 and float64, for every length up to 64.
TEST(KernelsTest, LinspaceIsTorchLinspace) {
  for (const char* dtype : {"f32", "f64"}) {
    for (int64_t steps = 0; steps <= 64; ++steps) {
      TALLY_ASSERT_OK_AND_ASSIGN(
          at::Tensor r,
          Eval1("linspace", {}, {{"start", 0.0}, {"end", 1.0}, {"steps", steps}, {"dtype", std::string(dtype)}}, {}));
      at::ScalarType s = std::string(dtype) == "f32" ? at::kFloat : at::kDouble;
      EXPECT_TRUE(SameTensor(r, at::linspace(0, 1, steps, at::TensorOptions().dtype(s)), 0, 0))
          << dtype << " " << steps;
    }
  }
}

// Verifies that transfer copies an input to the device of its attribute.
TEST(KernelsTest, TransferMovesToItsDevice) {
  ASSERT_NE(FindOp("transfer"), nullptr) << "no transfer op";
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor r,
                             Eval1("transfer", {"f32[N]@cpu"}, {{"device", std::string("meta")}}, {F32({1, 2, 3})}));
  EXPECT_TRUE(r.is_meta());
  EXPECT_EQ(r.sizes(), at::IntArrayRef({3}));
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval1("transfer", {"f32[N]@cpu"}, {{"device", std::string("cpu")}}, {F32({1, 2})}));
  EXPECT_TRUE(SameTensor(r, F32({1, 2})));
}

// Verifies mc_confmat on a hand-checked case: [target][pred] counts, rows
// with an out-of-range target or label counted and skipped, ignore_index rows
// skipped without counting.
// Verifies score_code16 on hand-checked float16 and bfloat16 codes: the
// order of the values, -0 coded as +0, NaN the largest, rounding to nearest.
TEST(KernelsTest, ScoreCode16OrdersAsTheValues) {
  at::Tensor x = F32({-1.0f, -0.0f, 0.0f, 1.0f, NAN, INFINITY, 0.1f, 1.0f + 1.0f / 4096});
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor h,
                             Eval1("score_code16", {"f32[N]@cpu"}, {{"format", std::string("fp16")}}, {x}));
  // fp16 bits: 1.0 = 0x3C00 (ordered 0xBC00), -1.0 = 0xBC00 (ordered 0xFFFF - 0xBC00).
  EXPECT_EQ(h[0].item<int64_t>(), 0xFFFF - 0xBC00);
  EXPECT_EQ(h[1].item<int64_t>(), 0x8000);
  EXPECT_EQ(h[2].item<int64_t>(), 0x8000);
  EXPECT_EQ(h[3].item<int64_t>(), 0xBC00);
  EXPECT_EQ(h[4].item<int64_t>(), 0xFFFF);
  EXPECT_EQ(h[5].item<int64_t>(), 0xFC00);
  EXPECT_EQ(h[7].item<int64_t>(), 0xBC00);  // 1 + 2^-12 rounds to 1 in float16
  TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor b,
                             Eval1("score_code16", {"f32[N]@cpu"}, {{"format", std::string("bf16")}}, {x}));
  EXPECT_EQ(b[3].item<int64_t>(), 0x3F80 | 0x8000);  // bfloat16 1.0 = 0x3F80
  EXPECT_EQ(b[4].item<int64_t>(), 0xFFFF);
  // Codes order as the values they round to.
  at::Tensor sorted = F32({-INFINITY, -2.5f, -1e-7f, 0.0f, 1e-7f, 0.3f, 0.30001f, 2.0f, 65504.0f});
  for (const char* f : {"fp16", "bf16"}) {
    TALLY_ASSERT_OK_AND_ASSIGN(at::Tensor c,
                               Eval1("score_code16", {"f32[N]@cpu"}, {{"format", std::string(f)}}, {sorted}));
    EXPECT_TRUE((c.slice(0, 1) >= c.slice(0, 0, -1)).all().item<bool>()) << f << ": " << c;
  }
}

TEST(KernelsTest, McConfmatCountsAndSkips) {
  ASSERT_NE(FindOp("mc_confmat"), nullptr) << "no mc_confmat op";
  TALLY_ASSERT_OK_AND_ASSIGN(std::vector<at::Tensor> r,
                             Eval("mc_confmat", {"i64[N]@cpu", "i64[N]@cpu"}, {{"num_classes", int64_t{3}}},
                                  {I64({0, 1, 2, 1, 1, 5, -1}), I64({0, 1, 1, 7, 2, 2, 2})}));
  EXPECT_TRUE(SameTensor(r[0], I64({1, 0, 0, 0, 1, 1, 0, 1, 0}).reshape({3, 3})));
  EXPECT_TRUE(SameTensor(r[1], at::scalar_tensor(int64_t{1}, at::kLong)));
  EXPECT_TRUE(SameTensor(r[2], at::scalar_tensor(int64_t{2}, at::kLong)));
  at::Tensor scores = F32({0.1f, 0.7f, 0.2f, 0.8f, 0.1f, 0.1f, 0.3f, 0.3f, 0.3f}).reshape({3, 3});
  TALLY_ASSERT_OK_AND_ASSIGN(
      r, Eval("mc_confmat", {"f32[N,3]@cpu", "i64[N]@cpu"}, {{"num_classes", int64_t{3}}, {"ignore_index", int64_t{0}}},
              {scores, I64({1, 0, 2})}));
  // Row 1 is ignored; row 2's tie picks the first maximum (class 0).
  EXPECT_TRUE(SameTensor(r[0], I64({0, 0, 0, 0, 1, 0, 1, 0, 0}).reshape({3, 3})));
  EXPECT_TRUE(SameTensor(r[1], at::scalar_tensor(int64_t{0}, at::kLong)));
}

// Verifies that every composite op's fused kernel gives exactly what its
// decomposition into primitive ops gives, on random data full of edge cases
// (out-of-range labels, ignore_index, NaN and tied scores, empty batches).
TEST(KernelsTest, FusedKernelsMatchTheirDecompositions) {
  at::manual_seed(7);
  int compared = 0;
  for (const Sample& s : Samples()) {
    const OpDef* def = FindOp(s.op);
    if (def == nullptr || !def->traits.composite) continue;
    for (int64_t n : {0, 1, 7, 300}) {
      SCOPED_TRACE(absl::StrCat(s.name, " N=", n));
      TALLY_ASSERT_OK_AND_ASSIGN(OneNode fused, MakeNode(s.op, s.inputs, s.attrs, "cpu"));
      std::vector<at::Tensor> in;
      for (ir::Value* p : fused.graph->params()) {
        at::Tensor t = Example(p->type(), n, "cpu");
        if (t.is_floating_point() && t.numel() > 0) {
          // Ties and NaNs.
          t = at::round(t);
          t.view(-1).index_put_({at::randint(0, t.numel(), {std::max<int64_t>(1, t.numel() / 10)}, at::kLong)}, NAN);
        }
        in.push_back(t);
      }
      // retrieval_score's rows come grouped by key (from segment_sort).
      if (s.op == "retrieval_score") in[0] = std::get<0>(at::sort(in[0]));
      TALLY_ASSERT_OK_AND_ASSIGN(std::vector<at::Tensor> want, RunKernel(*fused.node, in));
      // The decomposition, run node by node with the primitive kernels.
      ir::Graph& g = *fused.graph;
      for (size_t i = 0; i < fused.node->outputs().size(); ++i)
        g.AddReturn(absl::StrCat("r", i), fused.node->output(i));
      TALLY_ASSERT_OK(Decompose(g, *fused.node));
      const ir::Node* composite = fused.node;
      g.RemoveNodesIf([&](const ir::Node* x) { return x == composite; });
      std::vector<at::Tensor> env(g.num_values());
      for (size_t i = 0; i < g.params().size(); ++i) env[g.params()[i]->id()] = in[i];
      for (const auto& node : g.nodes()) {
        std::vector<at::Tensor> args;
        for (ir::Value* v : node->inputs()) args.push_back(env[v->id()]);
        TALLY_ASSERT_OK_AND_ASSIGN(std::vector<at::Tensor> outs, RunKernel(*node, args));
        for (size_t i = 0; i < outs.size(); ++i) env[node->output(i)->id()] = outs[i];
      }
      for (size_t i = 0; i < g.returns().size(); ++i) {
        // Counts must agree exactly; floating statistics up to the rounding
        // of a different summation order.
        EXPECT_TRUE(SameTensor(want[i], env[g.returns()[i].second->id()], 1e-10, 1e-12)) << "result " << i;
      }
      ++compared;
    }
  }
  EXPECT_GT(compared, 0) << "no composite op was compared";
}

// Verifies that creation ops materialize on the device of their plan.
TEST(KernelsTest, CreationOpsUseThePlannedDevice) {
  TALLY_ASSERT_OK_AND_ASSIGN(
      std::vector<at::Tensor> r,
      Eval("full", {}, {{"shape", std::vector<int64_t>{2}}, {"value", 1.0}, {"dtype", std::string("f32")}}, {},
           "meta"));
  EXPECT_TRUE(r[0].is_meta());
  TALLY_ASSERT_OK_AND_ASSIGN(r, Eval("constant", {}, {{"value", 1.0}, {"dtype", std::string("f32")}}, {}, "meta"));
  EXPECT_TRUE(r[0].is_meta());
  TALLY_ASSERT_OK_AND_ASSIGN(
      r, Eval("linspace", {}, {{"start", 0.0}, {"end", 1.0}, {"steps", int64_t{11}}, {"dtype", std::string("f64")}}, {},
              "meta"));
  EXPECT_TRUE(r[0].is_meta());
  EXPECT_EQ(r[0].sizes(), at::IntArrayRef({11}));
}

}  // namespace
}  // namespace tally::ops
