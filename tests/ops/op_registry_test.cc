// Tests of the op table: type inference (broadcasting, promotion,
// reductions, index and counting ops), attribute and arity errors, devices,
// and the traits passes rely on.
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "engine/ir/graph.h"
#include "engine/ir/types.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/op_registry.h"
#include "tests/testlib/status_matchers.h"

namespace tally::ops {
namespace {

using ::tally::testing::IsOkAndHolds;
using ::tally::testing::StatusIs;
using ::testing::HasSubstr;

// Infer parses the input types (`f32[N,3]@cpu`), runs inference and prints
// the result types joined by ", ".
absl::StatusOr<std::string> Infer(absl::string_view op, std::vector<std::string> inputs, ir::AttrMap attrs = {},
                                  const std::string& device = "cpu") {
  std::vector<ir::TensorType> types;
  for (const std::string& s : inputs) {
    auto t = ir::ParseTensorType(s);
    if (!t.ok()) return t.status();
    types.push_back(*t);
  }
  auto out = InferTypes(op, types, attrs, ir::Device{device});
  if (!out.ok()) return out.status();
  std::vector<std::string> printed;
  for (const auto& t : *out) printed.push_back(t.ToString());
  return absl::StrJoin(printed, ", ");
}

// ExpectInferError checks for an InvalidArgument naming the op and `what`.
#define EXPECT_INFER_ERROR(call, op, what)                         \
  EXPECT_THAT((call), StatusIs(absl::StatusCode::kInvalidArgument, \
                               ::testing::AllOf(HasSubstr(std::string(op) + ": "), HasSubstr(what))))

// Verifies broadcasting of fixed and symbolic dims: size-1 fixed dims stretch
// to anything, equal symbols match, and different symbols or sizes fail.
TEST(OpRegistryTest, Broadcasting) {
  EXPECT_THAT(Infer("add", {"f32[N,3]@cpu", "f32[3]@cpu"}), IsOkAndHolds("f32[N,3]@cpu"));
  EXPECT_THAT(Infer("add", {"f32[N,1]@cpu", "f32[1,4]@cpu"}), IsOkAndHolds("f32[N,4]@cpu"));
  EXPECT_THAT(Infer("add", {"f32[1]@cpu", "f32[N]@cpu"}), IsOkAndHolds("f32[N]@cpu"));
  EXPECT_THAT(Infer("add", {"f32[N]@cpu", "f32[]@cpu"}), IsOkAndHolds("f32[N]@cpu"));
  EXPECT_THAT(Infer("mul", {"f32[N,3]@cpu", "f32[N,3]@cpu"}), IsOkAndHolds("f32[N,3]@cpu"));
  EXPECT_THAT(Infer("sub", {"f32[2,1,3]@cpu", "f32[4,1]@cpu"}), IsOkAndHolds("f32[2,4,3]@cpu"));
  EXPECT_THAT(Infer("where", {"i1[N,1]@cpu", "f32[3]@cpu", "f64[]@cpu"}), IsOkAndHolds("f64[N,3]@cpu"));
  EXPECT_INFER_ERROR(Infer("add", {"f32[N]@cpu", "f32[M]@cpu"}), "add", "shapes do not broadcast: dim N vs M");
  EXPECT_INFER_ERROR(Infer("add", {"f32[N,3]@cpu", "f32[4]@cpu"}), "add", "shapes do not broadcast: dim 3 vs 4");
  // A symbolic dim is not known to be 1, so it does not stretch to 3.
  EXPECT_INFER_ERROR(Infer("eq", {"f32[N]@cpu", "f32[3]@cpu"}), "eq", "dim N vs 3");
  EXPECT_INFER_ERROR(Infer("where", {"f32[N]@cpu", "f32[N]@cpu", "f32[N]@cpu"}), "where", "condition must be i1");
}

// Verifies dtype promotion: arithmetic follows torch.result_type (bools sum
// as i64), true division and float math give floating types, comparisons
// and logic give i1.
TEST(OpRegistryTest, Promotion) {
  struct Case {
    const char* op;
    const char* a;
    const char* b;
    const char* out;
  };
  const Case cases[] = {
      {"add", "i1", "i1", "i64"},    {"add", "i1", "i32", "i32"},         {"add", "i32", "i64", "i64"},
      {"add", "i64", "f32", "f32"},  {"mul", "f32", "f64", "f64"},        {"sub", "i32", "f64", "f64"},
      {"div", "i64", "i64", "f32"},  {"div", "i1", "i1", "f32"},          {"div", "f64", "i64", "f64"},
      {"pow", "i64", "i32", "f32"},  {"safe_div", "i64", "i64", "f32"},   {"safe_div", "f64", "f32", "f64"},
      {"maximum", "i1", "i1", "i1"}, {"minimum", "i32", "f32", "f32"},    {"eq", "i64", "f32", "i1"},
      {"lt", "f64", "f64", "i1"},    {"logical_and", "f32", "i64", "i1"}, {"logical_xor", "i1", "i1", "i1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.op) + "(" + c.a + ", " + c.b + ")");
    EXPECT_THAT(Infer(c.op, {std::string(c.a) + "[N]@cpu", std::string(c.b) + "[]@cpu"}),
                IsOkAndHolds(std::string(c.out) + "[N]@cpu"));
  }
  EXPECT_THAT(Infer("exp", {"i64[N]@cpu"}), IsOkAndHolds("f32[N]@cpu"));
  EXPECT_THAT(Infer("log", {"f64[N]@cpu"}), IsOkAndHolds("f64[N]@cpu"));
  EXPECT_THAT(Infer("log_cosh", {"i1[N]@cpu"}), IsOkAndHolds("f32[N]@cpu"));
  EXPECT_THAT(Infer("abs", {"i32[N]@cpu"}), IsOkAndHolds("i32[N]@cpu"));
  EXPECT_THAT(Infer("isnan", {"f32[N]@cpu"}), IsOkAndHolds("i1[N]@cpu"));
  EXPECT_THAT(Infer("logical_not", {"i64[N]@cpu"}), IsOkAndHolds("i1[N]@cpu"));
  EXPECT_THAT(Infer("clamp", {"i64[N]@cpu"}, {{"min", 0.0}}), IsOkAndHolds("i64[N]@cpu"));
  EXPECT_THAT(Infer("cast", {"f32[N,2]@cpu"}, {{"dtype", std::string("i1")}}), IsOkAndHolds("i1[N,2]@cpu"));
  EXPECT_THAT(Infer("cast", {"f32[N]@cpu"}, {{"dtype", std::string("float64")}}), IsOkAndHolds("f64[N]@cpu"));
  EXPECT_INFER_ERROR(Infer("neg", {"i1[N]@cpu"}), "neg", "expects a numeric input, got i1");
  EXPECT_THAT(Infer("cast", {"f32[N]@cpu"}, {{"dtype", std::string("f16")}}), IsOkAndHolds("f16[N]@cpu"));
  EXPECT_THAT(Infer("cast", {"f64[N]@cpu"}, {{"dtype", std::string("bfloat16")}}), IsOkAndHolds("bf16[N]@cpu"));
  EXPECT_INFER_ERROR(Infer("cast", {"f32[N]@cpu"}, {{"dtype", std::string("f8")}}), "cast", "unknown dtype 'f8'");
}

// Verifies reductions over dims (negative, several, all), keepdim, and the
// result dtypes: sums of bools and ints are i64, max/min keep the dtype.
TEST(OpRegistryTest, Reductions) {
  using Ints = std::vector<int64_t>;
  EXPECT_THAT(Infer("reduce_sum", {"f32[N,3]@cpu"}, {{"dims", Ints{1}}}), IsOkAndHolds("f32[N]@cpu"));
  EXPECT_THAT(Infer("reduce_sum", {"f32[N,3]@cpu"}, {{"dims", Ints{-1}}, {"keepdim", true}}),
              IsOkAndHolds("f32[N,1]@cpu"));
  EXPECT_THAT(Infer("reduce_sum", {"f32[N,3]@cpu"}, {{"dims", Ints{0}}}), IsOkAndHolds("f32[3]@cpu"));
  EXPECT_THAT(Infer("reduce_sum", {"f32[N,3]@cpu"}, {{"dims", Ints{0, 1}}}), IsOkAndHolds("f32[]@cpu"));
  EXPECT_THAT(Infer("reduce_sum", {"f32[N,3]@cpu"}), IsOkAndHolds("f32[]@cpu"));
  EXPECT_THAT(Infer("reduce_sum", {"f32[N,3]@cpu"}, {{"keepdim", true}}), IsOkAndHolds("f32[1,1]@cpu"));
  EXPECT_THAT(Infer("reduce_sum", {"i1[N]@cpu"}), IsOkAndHolds("i64[]@cpu"));
  EXPECT_THAT(Infer("reduce_sum", {"i32[N]@cpu"}), IsOkAndHolds("i64[]@cpu"));
  EXPECT_THAT(Infer("reduce_sum", {"f64[N]@cpu"}), IsOkAndHolds("f64[]@cpu"));
  EXPECT_THAT(Infer("reduce_max", {"i32[N,3]@cpu"}, {{"dims", Ints{0}}}), IsOkAndHolds("i32[3]@cpu"));
  EXPECT_THAT(Infer("reduce_min", {"f32[N,3]@cpu"}, {{"dims", Ints{0}}, {"keepdim", true}}),
              IsOkAndHolds("f32[1,3]@cpu"));
  EXPECT_THAT(Infer("reduce_any", {"f32[N,3]@cpu"}, {{"dims", Ints{1}}}), IsOkAndHolds("i1[N]@cpu"));
  EXPECT_THAT(Infer("reduce_all", {"i64[N,3]@cpu"}), IsOkAndHolds("i1[]@cpu"));
  EXPECT_INFER_ERROR(Infer("reduce_sum", {"f32[N,3]@cpu"}, {{"dims", Ints{2}}}), "reduce_sum",
                     "dim 2 out of range for rank 2");
  EXPECT_INFER_ERROR(Infer("reduce_max", {"f32[N,3]@cpu"}, {{"dims", Ints{-3}}}), "reduce_max",
                     "dim -3 out of range for rank 2");
}

// Verifies argmax and softmax.
TEST(OpRegistryTest, ArgmaxAndSoftmax) {
  EXPECT_THAT(Infer("argmax", {"f32[N,3]@cpu"}, {{"dim", int64_t{1}}}), IsOkAndHolds("i64[N]@cpu"));
  EXPECT_THAT(Infer("argmax", {"f32[N,3]@cpu"}, {{"dim", int64_t{-1}}, {"keepdim", true}}),
              IsOkAndHolds("i64[N,1]@cpu"));
  EXPECT_THAT(Infer("argmax", {"i32[N,3]@cpu"}, {{"dim", int64_t{0}}}), IsOkAndHolds("i64[3]@cpu"));
  EXPECT_INFER_ERROR(Infer("argmax", {"f32[N,3]@cpu"}, {{"dim", int64_t{2}}}), "argmax", "out of range");
  EXPECT_INFER_ERROR(Infer("argmax", {"f32[N,3]@cpu"}), "argmax", "missing attribute 'dim'");
  EXPECT_THAT(Infer("softmax", {"i64[N,3]@cpu"}, {{"dim", int64_t{1}}}), IsOkAndHolds("f32[N,3]@cpu"));
  EXPECT_THAT(Infer("softmax", {"f64[N,3]@cpu"}, {{"dim", int64_t{1}}}), IsOkAndHolds("f64[N,3]@cpu"));
}

// Verifies one_hot, histogram, topk_mask, sort and rank_average.
TEST(OpRegistryTest, IndexAndCountingOps) {
  EXPECT_THAT(Infer("one_hot", {"i64[N]@cpu"}, {{"num_classes", int64_t{4}}}), IsOkAndHolds("i1[N,4]@cpu"));
  EXPECT_THAT(Infer("one_hot", {"i32[N,2]@cpu"}, {{"num_classes", int64_t{3}}}), IsOkAndHolds("i1[N,2,3]@cpu"));
  EXPECT_INFER_ERROR(Infer("one_hot", {"f32[N]@cpu"}, {{"num_classes", int64_t{4}}}), "one_hot",
                     "expects integer labels");
  EXPECT_INFER_ERROR(Infer("one_hot", {"i1[N]@cpu"}, {{"num_classes", int64_t{4}}}), "one_hot",
                     "expects integer labels");

  EXPECT_THAT(Infer("histogram", {"i64[N]@cpu"}, {{"size", int64_t{5}}}), IsOkAndHolds("i64[5]@cpu"));
  EXPECT_THAT(Infer("histogram", {"i32[N]@cpu", "f64[N]@cpu"}, {{"size", int64_t{5}}}), IsOkAndHolds("f64[5]@cpu"));
  EXPECT_THAT(Infer("histogram", {"i64[N]@cpu", "i1[N]@cpu"}, {{"size", int64_t{2}}}), IsOkAndHolds("i64[2]@cpu"));
  EXPECT_INFER_ERROR(Infer("histogram", {"i64[N,2]@cpu"}, {{"size", int64_t{5}}}), "histogram",
                     "expects a rank-1 integer index");
  EXPECT_INFER_ERROR(Infer("histogram", {"f32[N]@cpu"}, {{"size", int64_t{5}}}), "histogram",
                     "expects a rank-1 integer index");
  EXPECT_INFER_ERROR(Infer("histogram", {"i64[N]@cpu", "f32[M]@cpu"}, {{"size", int64_t{5}}}), "histogram",
                     "weights must match the index");

  EXPECT_THAT(Infer("topk_mask", {"f32[N,5]@cpu"}, {{"k", int64_t{2}}}), IsOkAndHolds("i1[N,5]@cpu"));
  EXPECT_INFER_ERROR(Infer("topk_mask", {"f32[N,5]@cpu"}, {{"k", int64_t{6}}}), "topk_mask",
                     "k=6 out of range of the last dim");
  EXPECT_INFER_ERROR(Infer("topk_mask", {"f32[N,5]@cpu"}, {{"k", int64_t{0}}}), "topk_mask", "k=0");

  EXPECT_THAT(Infer("sort", {"f32[N]@cpu"}, {{"dim", int64_t{0}}, {"descending", true}}),
              IsOkAndHolds("f32[N]@cpu, i64[N]@cpu"));
  EXPECT_THAT(Infer("rank_average", {"f32[N,2]@cpu"}), IsOkAndHolds("f64[N,2]@cpu"));
  EXPECT_INFER_ERROR(Infer("rank_average", {"f32[]@cpu"}), "rank_average", "expects rank >= 1");
}

// Verifies the gather ops: concat adds up the leading dims (symbols joined
// with '+') of operands of one dtype and trailing dims; take gives x's dtype
// in the indices' shape.
TEST(OpRegistryTest, GatherOps) {
  EXPECT_THAT(Infer("concat", {"f32[1]@cpu", "f32[M]@cpu", "f32[2]@cpu"}), IsOkAndHolds("f32[M+3]@cpu"));
  EXPECT_THAT(Infer("concat", {"i64[2,3]@meta", "i64[4,3]@meta"}), IsOkAndHolds("i64[6,3]@meta"));
  EXPECT_THAT(Infer("concat", {"f64[M]@cpu", "f64[K]@cpu"}), IsOkAndHolds("f64[M+K]@cpu"));
  EXPECT_INFER_ERROR(Infer("concat", {"f32[M]@cpu", "f64[2]@cpu"}), "concat", "differ in dtype");
  EXPECT_INFER_ERROR(Infer("concat", {"f32[M,2]@cpu", "f32[2,3]@cpu"}), "concat", "trailing dims");
  EXPECT_INFER_ERROR(Infer("concat", {"f32[]@cpu"}), "concat", "rank >= 1");
  EXPECT_THAT(Infer("take", {"f32[M]@cuda:1", "i32[N,2]@cuda:1"}), IsOkAndHolds("f32[N,2]@cuda:1"));
  EXPECT_INFER_ERROR(Infer("take", {"f32[M,2]@cpu", "i64[N]@cpu"}), "take", "rank-1 source");
  EXPECT_INFER_ERROR(Infer("take", {"f32[M]@cpu", "f32[N]@cpu"}), "take", "integer indices");
}

// Verifies the ranking ops: bucketize, cumsum, topk and argsort keep the
// input's device, give i64 positions, accumulate integer sums in i64, and
// reject bad operands and out-of-range k or dims.
TEST(OpRegistryTest, RankingOps) {
  EXPECT_THAT(Infer("bucketize", {"f32[N,3]@meta", "f32[16]@meta"}, {{"right", true}}), IsOkAndHolds("i64[N,3]@meta"));
  EXPECT_THAT(Infer("bucketize", {"i64[N]@cpu", "f64[K]@cpu"}), IsOkAndHolds("i64[N]@cpu"));
  EXPECT_INFER_ERROR(Infer("bucketize", {"f32[N]@cpu", "f32[4,2]@cpu"}), "bucketize", "expects rank-1 boundaries");
  EXPECT_INFER_ERROR(Infer("bucketize", {"i1[N]@cpu", "f32[4]@cpu"}), "bucketize", "expects numeric operands");
  EXPECT_INFER_ERROR(Infer("bucketize", {"f32[N]@cpu", "f32[4]@cuda:1"}), "bucketize", "inputs on different devices");

  EXPECT_THAT(Infer("cumsum", {"f32[N,3]@cuda:1"}, {{"dim", int64_t{0}}}), IsOkAndHolds("f32[N,3]@cuda:1"));
  EXPECT_THAT(Infer("cumsum", {"f64[N]@meta"}, {{"dim", int64_t{-1}}}), IsOkAndHolds("f64[N]@meta"));
  EXPECT_THAT(Infer("cumsum", {"i32[N,3]@cpu"}, {{"dim", int64_t{1}}}), IsOkAndHolds("i64[N,3]@cpu"));
  EXPECT_THAT(Infer("cumsum", {"i1[N]@cpu"}, {{"dim", int64_t{0}}}), IsOkAndHolds("i64[N]@cpu"));
  EXPECT_INFER_ERROR(Infer("cumsum", {"f32[N,3]@cpu"}, {{"dim", int64_t{2}}}), "cumsum", "out of range");
  EXPECT_INFER_ERROR(Infer("cumsum", {"f32[]@cpu"}, {{"dim", int64_t{0}}}), "cumsum", "expects rank >= 1");
  EXPECT_INFER_ERROR(Infer("cumsum", {"f32[N]@cpu"}), "cumsum", "missing attribute 'dim'");

  EXPECT_THAT(Infer("topk", {"f32[N,5]@meta"}, {{"k", int64_t{2}}}), IsOkAndHolds("f32[N,2]@meta, i64[N,2]@meta"));
  EXPECT_THAT(Infer("topk", {"i64[N,5]@cpu"}, {{"k", int64_t{3}}, {"dim", int64_t{0}}, {"largest", false}}),
              IsOkAndHolds("i64[3,5]@cpu, i64[3,5]@cpu"));
  EXPECT_INFER_ERROR(Infer("topk", {"f32[N,5]@cpu"}, {{"k", int64_t{6}}}), "topk", "k=6 out of range of dim 1");
  EXPECT_INFER_ERROR(Infer("topk", {"f32[N,5]@cpu"}, {{"k", int64_t{-1}}}), "topk", "k=-1");
  EXPECT_INFER_ERROR(Infer("topk", {"f32[N,5]@cpu"}, {{"k", int64_t{1}}, {"dim", int64_t{2}}}), "topk", "out of range");
  EXPECT_INFER_ERROR(Infer("topk", {"i1[N,5]@cpu"}, {{"k", int64_t{1}}}), "topk", "expects a numeric input");
  EXPECT_INFER_ERROR(Infer("topk", {"f32[N]@cpu"}), "topk", "missing attribute 'k'");

  EXPECT_THAT(Infer("argsort", {"f32[N,4]@cuda:1"}), IsOkAndHolds("i64[N,4]@cuda:1"));
  EXPECT_THAT(Infer("argsort", {"i1[N]@cpu"}, {{"dim", int64_t{0}}, {"descending", true}, {"stable", false}}),
              IsOkAndHolds("i64[N]@cpu"));
  EXPECT_INFER_ERROR(Infer("argsort", {"f32[N]@cpu"}, {{"dim", int64_t{1}}}), "argsort", "out of range");
  EXPECT_INFER_ERROR(Infer("argsort", {"f32[N]@cpu"}, {{"stable", int64_t{1}}}), "argsort",
                     "attribute 'stable' has the wrong kind");
}

// Verifies the shape ops, including symbolic products from flatten.
TEST(OpRegistryTest, ShapeOps) {
  using Ints = std::vector<int64_t>;
  EXPECT_THAT(Infer("flatten", {"f32[N,3]@cpu"}), IsOkAndHolds("f32[N*3]@cpu"));
  EXPECT_THAT(Infer("flatten", {"f32[N,1]@cpu"}), IsOkAndHolds("f32[N]@cpu"));
  EXPECT_THAT(Infer("flatten", {"f32[2,3]@cpu"}), IsOkAndHolds("f32[6]@cpu"));
  EXPECT_THAT(Infer("flatten", {"f32[N,R]@cpu"}), IsOkAndHolds("f32[N*R]@cpu"));
  EXPECT_THAT(Infer("reshape", {"f32[2,3]@cpu"}, {{"shape", Ints{3, 2}}}), IsOkAndHolds("f32[3,2]@cpu"));
  EXPECT_INFER_ERROR(Infer("reshape", {"f32[N,3]@cpu"}, {{"shape", Ints{3}}}), "reshape",
                     "reshape of a symbolic shape");
  EXPECT_INFER_ERROR(Infer("reshape", {"f32[2,3]@cpu"}, {{"shape", Ints{4}}}), "reshape", "changes the element count");
  EXPECT_THAT(Infer("unsqueeze", {"f32[N]@cpu"}, {{"dim", int64_t{1}}}), IsOkAndHolds("f32[N,1]@cpu"));
  EXPECT_THAT(Infer("unsqueeze", {"f32[N]@cpu"}, {{"dim", int64_t{-1}}}), IsOkAndHolds("f32[N,1]@cpu"));
  EXPECT_THAT(Infer("squeeze", {"f32[N,1]@cpu"}, {{"dim", int64_t{1}}}), IsOkAndHolds("f32[N]@cpu"));
  EXPECT_INFER_ERROR(Infer("squeeze", {"f32[N,1]@cpu"}, {{"dim", int64_t{0}}}), "squeeze", "not 1");
  EXPECT_THAT(Infer("select", {"f32[N,3]@cpu"}, {{"dim", int64_t{1}}, {"index", int64_t{2}}}),
              IsOkAndHolds("f32[N]@cpu"));
  EXPECT_INFER_ERROR(Infer("select", {"f32[N,3]@cpu"}, {{"dim", int64_t{1}}, {"index", int64_t{3}}}), "select",
                     "out of range");
  EXPECT_INFER_ERROR(Infer("select", {"f32[N,3]@cpu"}, {{"dim", int64_t{0}}, {"index", int64_t{0}}}), "select",
                     "out of range");
  EXPECT_THAT(Infer("transpose", {"f32[N,3]@cpu"}, {{"dim0", int64_t{0}}, {"dim1", int64_t{1}}}),
              IsOkAndHolds("f32[3,N]@cpu"));
  EXPECT_THAT(Infer("size", {"f32[N,3]@cpu"}, {{"dim", int64_t{0}}}), IsOkAndHolds("i64[]@cpu"));
  EXPECT_INFER_ERROR(Infer("size", {"f32[N,3]@cpu"}, {{"dim", int64_t{2}}}), "size", "out of range");
  EXPECT_THAT(Infer("full_like", {"f32[N,3]@meta"}, {{"value", 1.0}, {"dtype", std::string("i64")}}),
              IsOkAndHolds("i64[N,3]@meta"));
}

// Verifies that creation ops take the device they are built for, and other
// ops the device of their inputs; mixing devices is an error.
TEST(OpRegistryTest, Devices) {
  EXPECT_THAT(Infer("constant", {}, {{"value", 1.5}, {"dtype", std::string("f64")}}, "meta"),
              IsOkAndHolds("f64[]@meta"));
  EXPECT_THAT(Infer("constant", {}, {{"value", int64_t{3}}, {"dtype", std::string("i64")}}, "cuda:1"),
              IsOkAndHolds("i64[]@cuda:1"));
  EXPECT_THAT(
      Infer("full", {}, {{"shape", std::vector<int64_t>{2, 3}}, {"value", 0.0}, {"dtype", std::string("f32")}}, "cpu"),
      IsOkAndHolds("f32[2,3]@cpu"));
  EXPECT_INFER_ERROR(
      Infer("full", {}, {{"shape", std::vector<int64_t>{-1}}, {"value", 0.0}, {"dtype", std::string("f32")}}), "full",
      "negative size");
  EXPECT_THAT(Infer("arange", {}, {{"n", int64_t{4}}, {"dtype", std::string("i64")}}, "meta"),
              IsOkAndHolds("i64[4]@meta"));
  EXPECT_THAT(Infer("linspace", {},
                    {{"start", 0.0}, {"end", 1.0}, {"steps", int64_t{16}}, {"dtype", std::string("f32")}}, "cuda:1"),
              IsOkAndHolds("f32[16]@cuda:1"));
  EXPECT_INFER_ERROR(
      Infer("linspace", {}, {{"start", 0.0}, {"end", 1.0}, {"steps", int64_t{3}}, {"dtype", std::string("i64")}}),
      "linspace", "expects a float dtype");
  EXPECT_INFER_ERROR(
      Infer("linspace", {}, {{"start", 0.0}, {"end", 1.0}, {"steps", int64_t{-1}}, {"dtype", std::string("f64")}}),
      "linspace", "negative number of steps");
  EXPECT_THAT(Infer("neg", {"f32[N]@meta"}, {}, "cpu"), IsOkAndHolds("f32[N]@meta"));
  EXPECT_INFER_ERROR(Infer("add", {"f32[N]@cpu", "f32[N]@meta"}), "add", "inputs on different devices (cpu and meta)");
  if (FindOp("transfer") != nullptr) {
    EXPECT_THAT(Infer("transfer", {"f32[N,3]@cpu"}, {{"device", std::string("meta")}}), IsOkAndHolds("f32[N,3]@meta"));
    EXPECT_INFER_ERROR(Infer("transfer", {"f32[N]@cpu"}, {{"device", std::string("gpu")}}), "transfer",
                       "unknown device 'gpu'");
  }
  EXPECT_INFER_ERROR(Infer("where", {"i1[N]@cpu", "f32[N]@cpu", "f32[N]@cuda:1"}), "where",
                     "inputs on different devices (cpu and cuda:1)");
}

// Verifies errors for unknown ops, arity, and missing, unknown or mistyped
// attributes.
TEST(OpRegistryTest, ArityAndAttributeErrors) {
  EXPECT_THAT(Infer("frobnicate", {"f32[N]@cpu"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown op 'frobnicate'")));
  EXPECT_INFER_ERROR(Infer("add", {"f32[N]@cpu"}), "add", "takes 2 inputs, got 1");
  EXPECT_INFER_ERROR(Infer("add", {"f32[N]@cpu", "f32[N]@cpu", "f32[N]@cpu"}), "add", "takes 2 inputs, got 3");
  EXPECT_INFER_ERROR(Infer("histogram", {"i64[N]@cpu", "i64[N]@cpu", "i64[N]@cpu"}, {{"size", int64_t{2}}}),
                     "histogram", "takes 1 to 2 inputs, got 3");
  EXPECT_INFER_ERROR(Infer("constant", {"f32[N]@cpu"}, {{"value", 1.0}, {"dtype", std::string("f32")}}), "constant",
                     "takes 0 inputs, got 1");
  EXPECT_INFER_ERROR(Infer("one_hot", {"i64[N]@cpu"}), "one_hot", "missing attribute 'num_classes'");
  EXPECT_INFER_ERROR(Infer("one_hot", {"i64[N]@cpu"}, {{"num_classes", 4.0}}), "one_hot",
                     "attribute 'num_classes' has the wrong kind");
  EXPECT_INFER_ERROR(Infer("reduce_sum", {"f32[N]@cpu"}, {{"dims", int64_t{0}}}), "reduce_sum",
                     "attribute 'dims' has the wrong kind");
  EXPECT_INFER_ERROR(Infer("reduce_sum", {"f32[N]@cpu"}, {{"keepdim", int64_t{1}}}), "reduce_sum",
                     "attribute 'keepdim' has the wrong kind");
  EXPECT_INFER_ERROR(Infer("neg", {"f32[N]@cpu"}, {{"alpha", 1.0}}), "neg", "unknown attribute 'alpha'");
  EXPECT_INFER_ERROR(Infer("cast", {"f32[N]@cpu"}, {{"dtype", int64_t{1}}}), "cast",
                     "attribute 'dtype' has the wrong kind");
  // A double attribute accepts an integer (printed IR keeps `value=3`).
  EXPECT_THAT(Infer("constant", {}, {{"value", int64_t{3}}, {"dtype", std::string("f32")}}), IsOkAndHolds("f32[]@cpu"));
}

// Verifies that Build appends a node with the inferred types and rejects a
// bad one without touching the graph.
TEST(OpRegistryTest, BuildAndCheckNode) {
  ir::Graph g("g");
  ir::Value* x = g.AddParam("x", *ir::ParseTensorType("f32[N,3]@cpu"));
  auto node = Build(g, "reduce_sum", {x}, {{"dims", std::vector<int64_t>{1}}}, ir::Device{"cpu"}, "here.cc:1");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_EQ((*node)->output()->type().ToString(), "f32[N]@cpu");
  EXPECT_EQ((*node)->loc(), "here.cc:1");
  EXPECT_TRUE(CheckNode(**node).ok());
  EXPECT_FALSE(Build(g, "reduce_sum", {x}, {{"dims", std::vector<int64_t>{5}}}, ir::Device{"cpu"}).ok());
  EXPECT_EQ(g.nodes().size(), 1u);
  (*node)->output()->mutable_type().dtype = ir::DType::kFloat64;
  EXPECT_THAT(CheckNode(**node),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("reduce_sum: result 0 has type f64[N]@cpu but the op gives f32[N]@cpu")));
}

// The ops the design names; the table must hold at least these.
const char* const kDocumentedOps[] = {
    "add",         "sub",         "mul",     "div",          "pow",      "maximum",    "minimum",     "safe_div",
    "eq",          "ne",          "lt",      "le",           "gt",       "ge",         "logical_and", "logical_or",
    "logical_xor", "logical_not", "neg",     "abs",          "exp",      "log",        "sqrt",        "sigmoid",
    "log_cosh",    "isnan",       "clamp",   "cast",         "where",    "reduce_sum", "reduce_max",  "reduce_min",
    "reduce_any",  "reduce_all",  "argmax",  "softmax",      "constant", "full",       "full_like",   "arange",
    "size",        "reshape",     "flatten", "unsqueeze",    "squeeze",  "select",     "transpose",   "one_hot",
    "topk_mask",   "histogram",   "sort",    "rank_average",
};

// The ops that read device values on the host (or whose shape depends on
// them). They exist only for remove-host-syncs to rewrite; every other op must
// be sync-free.
const std::set<std::string> kSyncingOps = {"bincount", "masked_select", "nonzero"};
// assert_zero reads a count on the host (finalize only) but has a fixed shape.
// So do the finalize host algorithms.
const std::set<std::string> kHostCheckOps = {"assert_zero", "expected_mutual_info", "max_assignment", "coco_summary",
                                             "coco_bins_summary"};
// A finalize host algorithm whose result shape is data's: the classes seen.
const std::set<std::string> kHostShapeOps = {"coco_summary", "coco_bins_summary"};

// Verifies the traits passes rely on: every op is pure; the documented ops
// never sync the host nor have a data-dependent shape (only the known
// syncing ops do); exactly constant/full/arange/linspace create tensors. Unknown ops
// answer conservatively.
TEST(OpRegistryTest, Traits) {
  for (const char* op : kDocumentedOps) {
    ASSERT_NE(FindOp(op), nullptr) << op;
    EXPECT_FALSE(FindOp(op)->traits.syncs_host) << op;
    EXPECT_FALSE(FindOp(op)->traits.data_dependent_shape) << op;
  }
  const std::set<std::string> creation = {"constant", "full", "arange", "linspace"};
  ir::Graph g("g");
  for (const auto& [name, def] : Registry()) {
    SCOPED_TRACE(name);
    EXPECT_EQ(def.name, name);
    ir::Node* n = g.AddNode(name, {}, {}, {ir::TensorType{}});
    EXPECT_TRUE(IsPure(*n));
    const bool syncing = kSyncingOps.count(name) > 0;
    EXPECT_EQ(SyncsHost(*n), syncing || kHostCheckOps.count(name) > 0);
    EXPECT_EQ(HasDataDependentShape(*n), syncing || kHostShapeOps.count(name) > 0);
    EXPECT_EQ(IsCreation(*n), creation.count(name) > 0);
    // Only transfer, the explicit copy of an input, changes device.
    EXPECT_EQ(def.traits.preserves_device, name != "transfer");
    EXPECT_TRUE(static_cast<bool>(def.infer));
  }
  ir::Node* unknown = g.AddNode("frobnicate", {}, {}, {ir::TensorType{}});
  EXPECT_FALSE(IsPure(*unknown));
  EXPECT_TRUE(SyncsHost(*unknown));
  EXPECT_TRUE(HasDataDependentShape(*unknown));
  EXPECT_FALSE(IsCreation(*unknown));
  EXPECT_TRUE(FindOp("add")->traits.commutative);
  EXPECT_TRUE(FindOp("eq")->traits.commutative);
  EXPECT_FALSE(FindOp("sub")->traits.commutative);
  EXPECT_FALSE(FindOp("lt")->traits.commutative);
  EXPECT_FALSE(IsCommutative(*unknown));
  EXPECT_TRUE(IsCommutative(*g.AddNode("mul", {}, {}, {ir::TensorType{}})));
  EXPECT_FALSE(IsCommutative(*g.AddNode("div", {}, {}, {ir::TensorType{}})));
}

// Verifies that the family files define exactly the ops of op_list.h, each
// under its id and kind, and that ids and names map both ways.
TEST(OpRegistryTest, TableMatchesTheOpList) {
  const absl::Status table = CheckOpTable();
  EXPECT_TRUE(table.ok()) << table;
  EXPECT_EQ(Registry().size(), kNumOps);
  for (size_t i = 0; i < kNumOps; ++i) {
    const OpId id = static_cast<OpId>(i);
    EXPECT_EQ(Def(id).id, id) << OpName(id);
    EXPECT_EQ(Def(id).name, OpName(id));
    EXPECT_EQ(OpIdNamed(OpName(id)), id);
    EXPECT_EQ(Def(id).traits.composite, KindOf(id) == OpKind::kComposite) << OpName(id);
  }
  EXPECT_EQ(OpIdNamed("frobnicate"), std::nullopt);
  ir::Graph g("g");
  ir::Node* n = g.AddNode("reduce_sum", {}, {}, {ir::TensorType{}});
  EXPECT_TRUE(Is(*n, OpId::kReduceSum));
  EXPECT_FALSE(Is(*n, OpId::kReduceMax));
  EXPECT_FALSE(Is(nullptr, OpId::kReduceSum));
}

// Verifies the scalar fold hooks canonicalize uses: the ops that fold give
// the value their kernels would, and ops without one (pow, sigmoid) do not.
TEST(OpRegistryTest, FoldHooksComputeScalars) {
  ir::Graph g("g");
  ir::Node* n = g.AddNode("safe_div", {}, {{"zero_division", 0.25}}, {ir::TensorType{}});
  auto fold = [&](OpId id, std::vector<double> x) { return Def(id).fold(*n, x); };
  EXPECT_EQ(fold(OpId::kAdd, {2, 3}), 5);
  EXPECT_EQ(fold(OpId::kSub, {2, 3}), -1);
  EXPECT_EQ(fold(OpId::kDiv, {3, 2}), 1.5);
  EXPECT_EQ(fold(OpId::kSafeDiv, {3, 0}), 0.25);
  EXPECT_EQ(fold(OpId::kSafeDiv, {3, 2}), 1.5);
  EXPECT_EQ(fold(OpId::kMaximum, {-1, 4}), 4);
  EXPECT_EQ(fold(OpId::kLe, {2, 2}), 1);
  EXPECT_EQ(fold(OpId::kLogicalNot, {0}), 1);
  EXPECT_EQ(fold(OpId::kCast, {7}), 7);
  EXPECT_FALSE(static_cast<bool>(Def(OpId::kPow).fold));
  EXPECT_FALSE(static_cast<bool>(Def(OpId::kSigmoid).fold));
  EXPECT_FALSE(static_cast<bool>(Def(OpId::kMcConfmat).fold));
}

// Verifies that an op's schema is its attribute struct's field list
// (ops/attrs.h), so the table, the readers and the writers agree.
TEST(TypedAttrsTest, TheSchemaIsTheStructsFields) {
  const std::vector<AttrSpec> want = SpecsOf<TopkAttrs>();
  const std::vector<AttrSpec>& got = Def(OpId::kTopk).attrs;
  ASSERT_EQ(got.size(), 4u);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].name, want[i].name);
    EXPECT_EQ(got[i].kind, want[i].kind);
    EXPECT_EQ(got[i].required, want[i].required);
  }
  EXPECT_EQ(got[0].name, "k");
  EXPECT_TRUE(got[0].required);
  EXPECT_FALSE(got[1].required);  // dim, an Opt<int64_t>
}

// Verifies reading and writing: an absent optional attribute reads as its
// declared default and stays absent when written back, so the IR round-trips.
TEST(TypedAttrsTest, AbsentOptionalsReadAsDefaultsAndStayAbsent) {
  const ir::AttrMap m = {{"k", int64_t{3}}, {"largest", false}};
  const TopkAttrs a = AttrsOf<TopkAttrs>(m);
  EXPECT_EQ(a.k, 3);
  EXPECT_FALSE(a.dim.has_value());
  EXPECT_EQ(a.dim.get(), -1);
  EXPECT_FALSE(a.largest.get());
  EXPECT_TRUE(a.sorted.get());
  EXPECT_TRUE(ir::AttrMapEquals(ToAttrMap(a), m));
  McConfmatAttrs c{5};
  EXPECT_EQ(ToAttrMap(c).count("ignore_index"), 0u);
  c.ignore_index = -1;
  EXPECT_TRUE(ir::AttrEquals(ToAttrMap(c).at("ignore_index"), ir::Attr(int64_t{-1})));
}

// Verifies that a misspelt or mistyped attribute is an error naming it,
// never a silent default.
TEST(TypedAttrsTest, AMisspeltAttributeIsRefused) {
  EXPECT_INFER_ERROR(Infer("topk", {"f32[N]@cpu"}, {{"k", int64_t{1}}, {"larggest", true}}), "topk",
                     "unknown attribute 'larggest'");
  EXPECT_INFER_ERROR(Infer("one_hot", {"i64[N]@cpu"}, {{"num_classes", 3.0}}), "one_hot",
                     "attribute 'num_classes' has the wrong kind");
}

// Verifies dense constants: values of a shape ([len] by default), exactly
// one of value and values, and a shape that holds the values.
TEST(TypedAttrsTest, DenseConstants) {
  const std::string f32 = "f32";
  EXPECT_THAT(Infer("constant", {}, ToAttrMap(ConstantAttrs::Dense({0.1, 0.5, 0.9}, f32))), IsOkAndHolds("f32[3]@cpu"));
  ConstantAttrs grid = ConstantAttrs::Dense({1, 2, 3, 4, 5, 6}, "i64");
  grid.shape = std::vector<int64_t>{2, 3};
  EXPECT_THAT(Infer("constant", {}, ToAttrMap(grid)), IsOkAndHolds("i64[2,3]@cpu"));
  grid.shape = std::vector<int64_t>{4, 2};
  EXPECT_INFER_ERROR(Infer("constant", {}, ToAttrMap(grid)), "constant", "shape holds 8 values, got 6");
  // Sizes whose product overflows int64 are refused before multiplying.
  grid.shape = std::vector<int64_t>{int64_t{1} << 40, int64_t{1} << 40, 3};
  EXPECT_INFER_ERROR(Infer("constant", {}, ToAttrMap(grid)), "constant", "shape holds more than the 6 values given");
  ConstantAttrs both = ConstantAttrs::Dense({1.0}, f32);
  both.value = 1.0;
  EXPECT_INFER_ERROR(Infer("constant", {}, ToAttrMap(both)), "constant", "exactly one of value and values");
  EXPECT_INFER_ERROR(Infer("constant", {}, {{"dtype", f32}}), "constant", "exactly one of value and values");
  EXPECT_THAT(Infer("constant", {}, ToAttrMap(ConstantAttrs::Scalar(2.0, f32))), IsOkAndHolds("f32[]@cpu"));
}

}  // namespace
}  // namespace tally::ops
