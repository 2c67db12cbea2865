// Verifies that request bodies become the tensors torch.tensor would make
// of the same literals, and that ConformToSignature casts only losslessly.
#include "api/json_inputs.h"

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testlib/status_matchers.h"

namespace tally::tools {
namespace {

using ::tally::testing::StatusIs;
using ::testing::HasSubstr;

const at::Tensor& Get(const NamedTensors& in, const std::string& name) {
  for (const auto& [n, t] : in)
    if (n == name) return t;
  static const at::Tensor kNone;
  return kNone;
}

TEST(JsonInputs, TypesFollowTorchTensor) {
  TALLY_ASSERT_OK_AND_ASSIGN(
      NamedTensors in,
      TensorsFromJson(
          R"({"target": [1, 0, 2], "preds": [[0.5, 1], [2, 3], [4, 5.25]], "indexes": [true, false, true]})"));
  ASSERT_EQ(in.size(), 3u);
  // Canonical order, whatever the body's.
  EXPECT_EQ(in[0].first, "preds");
  EXPECT_EQ(in[1].first, "target");
  EXPECT_EQ(in[2].first, "indexes");
  EXPECT_EQ(in[0].second.scalar_type(), at::kFloat);
  EXPECT_EQ(in[0].second.sizes(), at::IntArrayRef({3, 2}));
  EXPECT_TRUE(at::equal(in[0].second, at::tensor({0.5f, 1.f, 2.f, 3.f, 4.f, 5.25f}).reshape({3, 2})));
  EXPECT_EQ(in[1].second.scalar_type(), at::kLong);
  EXPECT_TRUE(at::equal(in[1].second, at::tensor({1, 0, 2}, at::kLong)));
  EXPECT_EQ(in[2].second.scalar_type(), at::kBool);
  EXPECT_EQ(in[2].second.sum().item<int64_t>(), 2);
}

TEST(JsonInputs, ScalarsEmptyListsAndBigIntegers) {
  TALLY_ASSERT_OK_AND_ASSIGN(NamedTensors in,
                             TensorsFromJson(R"({"value": 2.5, "weight": [], "target": [9007199254740993]})"));
  EXPECT_EQ(Get(in, "value").dim(), 0);
  EXPECT_EQ(Get(in, "value").item<float>(), 2.5f);
  EXPECT_EQ(Get(in, "weight").sizes(), at::IntArrayRef({0}));
  TALLY_ASSERT_OK_AND_ASSIGN(NamedTensors nested_empty, TensorsFromJson(R"({"preds": [[], []]})"));
  EXPECT_EQ(Get(nested_empty, "preds").sizes(), at::IntArrayRef({2, 0}));
  // 2^53 + 1 stays exact in int64 (a double would round it).
  EXPECT_EQ(Get(in, "target").item<int64_t>(), 9007199254740993LL);
}

TEST(JsonInputs, BadBodiesNameTheProblem) {
  EXPECT_THAT(TensorsFromJson("{\"preds\": [1, 2"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not valid JSON")));
  EXPECT_THAT(TensorsFromJson("[1, 2]"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("JSON object")));
  EXPECT_THAT(TensorsFromJson("{}"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no input")));
  EXPECT_THAT(TensorsFromJson(R"({"logits": [1]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown input name 'logits'")));
  EXPECT_THAT(TensorsFromJson(R"({"preds": [[1, 2], [3]]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input 'preds': ragged")));
  EXPECT_THAT(TensorsFromJson(R"({"preds": [[1, 2], 3]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input 'preds': ragged")));
  EXPECT_THAT(TensorsFromJson(R"({"preds": [1, [2]]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input 'preds': ragged")));
  EXPECT_THAT(TensorsFromJson(R"({"preds": [[], [1]]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input 'preds': ragged")));
  EXPECT_THAT(TensorsFromJson(R"({"preds": [[[]], [1]]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input 'preds': ragged")));
  EXPECT_THAT(TensorsFromJson(R"({"target": [1, "2"]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input 'target': expected numbers")));
  EXPECT_THAT(TensorsFromJson(R"({"target": [null]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input 'target'")));
  EXPECT_THAT(TensorsFromJson(R"({"target": [18446744073709551615]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out of int64 range")));
  EXPECT_THAT(TensorsFromJson(R"({"preds": [[[[[[[[[1]]]]]]]]]})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("more than 8 dims")));
}

TEST(JsonInputs, ConformCastsOnlyWithoutLoss) {
  const dsl::Signature sig = {{"preds", ir::DType::kFloat32, {4, 3}}, {"target", ir::DType::kInt64, {4}}};
  TALLY_ASSERT_OK_AND_ASSIGN(NamedTensors in, TensorsFromJson(R"({"preds": [[1, 0, 0]], "target": [true]})"));
  TALLY_ASSERT_OK_AND_ASSIGN(NamedTensors out, ConformToSignature(in, sig));
  EXPECT_EQ(Get(out, "preds").scalar_type(), at::kFloat);
  EXPECT_EQ(Get(out, "target").scalar_type(), at::kLong);
  EXPECT_EQ(Get(out, "target").item<int64_t>(), 1);

  TALLY_ASSERT_OK_AND_ASSIGN(NamedTensors floats, TensorsFromJson(R"({"preds": [[1, 0, 0]], "target": [0.5]})"));
  EXPECT_THAT(ConformToSignature(floats, sig),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("input 'target': got f32 values where the first update fixed i64")));

  // No rows: [] is an empty batch of the signature's trailing dims.
  TALLY_ASSERT_OK_AND_ASSIGN(NamedTensors empty, TensorsFromJson(R"({"preds": [], "target": []})"));
  TALLY_ASSERT_OK_AND_ASSIGN(NamedTensors conformed, ConformToSignature(empty, sig));
  EXPECT_EQ(Get(conformed, "preds").sizes(), at::IntArrayRef({0, 3}));
  EXPECT_EQ(Get(conformed, "target").scalar_type(), at::kLong);
  EXPECT_EQ(Get(conformed, "target").numel(), 0);
}

TEST(JsonInputs, DeclaredSixteenBitScores) {
  // Verifies "dtypes": declared float16/bfloat16 preds are rounded to the
  // format; later undeclared floats are taken only when the format holds
  // them exactly; a bad declaration names the input.
  TALLY_ASSERT_OK_AND_ASSIGN(
      NamedTensors in,
      TensorsFromJson(R"({"preds": [0.1, 0.5, 1], "target": [0, 1, 1], "dtypes": {"preds": "float16"}})"));
  ASSERT_EQ(in.size(), 2u);
  EXPECT_EQ(Get(in, "preds").scalar_type(), at::kHalf);
  EXPECT_EQ(Get(in, "preds")[0].item<float>(), static_cast<float>(c10::Half(0.1f)));
  TALLY_ASSERT_OK_AND_ASSIGN(NamedTensors bf,
                             TensorsFromJson(R"({"preds": [0.1], "target": [0], "dtypes": {"preds": "bfloat16"}})"));
  EXPECT_EQ(Get(bf, "preds").scalar_type(), at::kBFloat16);

  const dsl::Signature sig = {{"preds", ir::DType::kFloat16, {3}}, {"target", ir::DType::kInt64, {3}}};
  TALLY_ASSERT_OK_AND_ASSIGN(NamedTensors exact, TensorsFromJson(R"({"preds": [0.5, 0.25, 1], "target": [0, 1, 1]})"));
  TALLY_ASSERT_OK_AND_ASSIGN(NamedTensors conformed, ConformToSignature(exact, sig));
  EXPECT_EQ(Get(conformed, "preds").scalar_type(), at::kHalf);
  TALLY_ASSERT_OK_AND_ASSIGN(NamedTensors inexact, TensorsFromJson(R"({"preds": [0.1], "target": [0]})"));
  EXPECT_THAT(ConformToSignature(inexact, sig),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input 'preds': got f32 values")));
  EXPECT_THAT(TensorsFromJson(R"({"preds": [0.1], "dtypes": {"preds": "float8"}})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input 'preds': unknown dtype 'float8'")));
  EXPECT_THAT(TensorsFromJson(R"({"preds": [0.1], "dtypes": {"logits": "float16"}})"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'logits'")));
}

}  // namespace
}  // namespace tally::tools
