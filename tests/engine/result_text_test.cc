// Unit tests of how results print (engine/runtime/result_text.h): JSON and text for
// scalars, vectors, matrices and tuples; integers vs floats; NaN and the
// infinities; round-trip precision of doubles; empty tensors; JSON strings.
#include "engine/runtime/result_text.h"

#include <ATen/ATen.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <limits>
#include <string>

#include "engine/runtime/results.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tally {
namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

at::Tensor F64(double v) { return at::scalar_tensor(v, at::kDouble); }

std::string Text(const at::Tensor& t) { return ValueToText(ResultTree::Leaf(t)); }

// Verifies floating scalars print in their shortest round-trip form, integral ones with ".0".
TEST(ResultTextTest, FloatScalars) {
  EXPECT_EQ(ValueToJson(F64(0.5)), "0.5");
  EXPECT_EQ(ValueToJson(F64(0.1)), "0.1");
  EXPECT_EQ(ValueToJson(F64(1.0)), "1.0");
  EXPECT_EQ(ValueToJson(F64(-2.0)), "-2.0");
  EXPECT_EQ(ValueToJson(F64(0.0)), "0.0");
  EXPECT_EQ(ValueToJson(F64(-0.0)), "-0.0");
  EXPECT_EQ(ValueToJson(F64(1.0 / 3.0)), "0.3333333333333333");
  EXPECT_EQ(ValueToJson(F64(2.0 / 3.0)), "0.6666666666666666");
  EXPECT_EQ(ValueToJson(F64(123456.789)), "123456.789");
  EXPECT_EQ(ValueToJson(F64(1e-300)), "1e-300");
  // The shortest form of 100 is %g's exponent form, still a JSON number.
  EXPECT_EQ(ValueToJson(F64(100.0)), "1e+02");
}

// Verifies every double prints as text that parses back to the same bits.
TEST(ResultTextTest, DoublesRoundTrip) {
  for (double v : {0.1, 0.2 + 0.1, 1.0 / 7.0, 3.141592653589793, 6.02214076e23, 5e-324, 1.7976931348623157e308,
                   -123.456, 0.9999999999999999}) {
    const std::string s = ValueToJson(F64(v));
    EXPECT_EQ(std::strtod(s.c_str(), nullptr), v) << s;
  }
  // 0.1 + 0.2 is not 0.3 and must not print as it.
  EXPECT_EQ(ValueToJson(F64(0.1 + 0.2)), "0.30000000000000004");
}

// Verifies a float32 result prints its exact value as a double, as tolist() gives.
TEST(ResultTextTest, Float32Widened) {
  EXPECT_EQ(ValueToJson(at::scalar_tensor(0.1, at::kFloat)), "0.10000000149011612");
  EXPECT_EQ(ValueToJson(at::scalar_tensor(0.5, at::kFloat)), "0.5");
  EXPECT_EQ(ValueToJson(at::tensor({0.5, 0.25}).to(at::kHalf)), "[0.5, 0.25]");
}

// Verifies integer and bool results print as integers, exactly beyond 2^53.
TEST(ResultTextTest, Integers) {
  EXPECT_EQ(ValueToJson(at::scalar_tensor(7, at::kLong)), "7");
  EXPECT_EQ(ValueToJson(at::scalar_tensor(-7, at::kInt)), "-7");
  EXPECT_EQ(ValueToJson(at::tensor({3, 0, -2}, at::kLong)), "[3, 0, -2]");
  EXPECT_EQ(ValueToJson(at::tensor({int64_t{9007199254740993}}, at::kLong)), "[9007199254740993]");  // 2^53 + 1
  // A bool tensor (LibTorch builds none from a list).
  EXPECT_EQ(ValueToJson(at::tensor({2, 0}, at::kLong) > 1), "[1, 0]");
  // The same count as a float is a float.
  EXPECT_EQ(ValueToJson(at::tensor({3.0, 0.0}, at::kDouble)), "[3.0, 0.0]");
}

// Verifies NaN and the infinities are null in JSON and nan/inf/-inf in text.
TEST(ResultTextTest, NonFinite) {
  at::Tensor t = at::tensor({kNaN, kInf, -kInf, 1.5}, at::kDouble);
  EXPECT_EQ(ValueToJson(t), "[null, null, null, 1.5]");
  EXPECT_EQ(Text(t), "[nan, inf, -inf, 1.5]");
  EXPECT_EQ(ValueToJson(F64(kNaN)), "null");
  EXPECT_EQ(Text(F64(-kInf)), "-inf");
}

// Verifies matrices print as nested lists, row by row, whatever the memory layout.
TEST(ResultTextTest, Matrices) {
  at::Tensor m = at::tensor({1, 2, 3, 4, 5, 6}, at::kLong).reshape({2, 3});
  EXPECT_EQ(ValueToJson(m), "[[1, 2, 3], [4, 5, 6]]");
  EXPECT_EQ(ValueToJson(m.t()), "[[1, 4], [2, 5], [3, 6]]");
  at::Tensor f = at::tensor({1.0, 0.5, kNaN, 2.0}, at::kDouble).reshape({2, 2});
  EXPECT_EQ(ValueToJson(f), "[[1.0, 0.5], [null, 2.0]]");
  EXPECT_EQ(Text(f), "[[1.0, 0.5], [nan, 2.0]]");
  EXPECT_EQ(ValueToJson(at::zeros({1, 1, 2}, at::kLong)), "[[[0, 0]]]");
}

// Verifies empty tensors print as empty lists, keeping their outer dims.
TEST(ResultTextTest, EmptyTensors) {
  EXPECT_EQ(ValueToJson(at::empty({0}, at::kFloat)), "[]");
  EXPECT_EQ(ValueToJson(at::empty({0, 3}, at::kDouble)), "[]");
  EXPECT_EQ(ValueToJson(at::empty({2, 0}, at::kLong)), "[[], []]");
  EXPECT_EQ(Text(at::empty({0}, at::kLong)), "[]");
}

// Verifies a tuple prints as the list of its parts, nested as the tree is.
TEST(ResultTextTest, Tuples) {
  ResultTree roc;
  roc.parts.push_back(ResultTree::Leaf(at::tensor({0.0, 0.5, 1.0}, at::kDouble)));
  roc.parts.push_back(ResultTree::Leaf(at::tensor({0.0, 1.0, 1.0}, at::kDouble)));
  roc.parts.push_back(ResultTree::Leaf(at::tensor({kInf, 0.75, 0.25}, at::kDouble)));
  EXPECT_EQ(ValueToJson(roc), "[[0.0, 0.5, 1.0], [0.0, 1.0, 1.0], [null, 0.75, 0.25]]");
  EXPECT_EQ(ValueToText(roc), "[[0.0, 0.5, 1.0], [0.0, 1.0, 1.0], [inf, 0.75, 0.25]]");

  ResultTree nested;
  nested.parts.push_back(ResultTree::Leaf(F64(0.5)));
  ResultTree inner;
  inner.parts.push_back(ResultTree::Leaf(at::tensor({1, 2}, at::kLong)));
  inner.parts.push_back(ResultTree::Leaf(at::empty({0}, at::kFloat)));
  nested.parts.push_back(inner);
  EXPECT_EQ(ValueToJson(nested), "[0.5, [[1, 2], []]]");
  // A leaf tree prints as its tensor.
  EXPECT_EQ(ValueToJson(ResultTree::Leaf(F64(0.25))), "0.25");
}

// Verifies JsonString quotes and escapes quotes, backslashes and control
// characters only (nlohmann-json's spelling: \b \t \n \f \r short, the others
// \u00xx).
TEST(ResultTextTest, JsonString) {
  EXPECT_EQ(JsonString(""), "\"\"");
  EXPECT_EQ(JsonString("multiclass_accuracy(num_classes=3)"), "\"multiclass_accuracy(num_classes=3)\"");
  EXPECT_EQ(JsonString("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(JsonString("l1\nl2\tx"), "\"l1\\nl2\\tx\"");
  EXPECT_EQ(JsonString(std::string("\x01\x1f\r", 3)), "\"\\u0001\\u001f\\r\"");
  EXPECT_EQ(JsonString(std::string("\0", 1)), "\"\\u0000\"");
  // UTF-8 passes through unchanged.
  EXPECT_EQ(JsonString("caf\xc3\xa9"), "\"caf\xc3\xa9\"");
}

// Verifies that every string reads back from JSON as itself: each byte
// below 0x80, quotes and backslashes included; bytes that are not UTF-8
// become U+FFFD instead of breaking the document.
TEST(ResultTextTest, JsonStringParsesBack) {
  std::string all;
  for (int c = 0; c < 0x80; ++c) all.push_back(static_cast<char>(c));
  for (const std::string& s : {all, std::string("say \"hi\" \\ C:\\path\\"), std::string("caf\xc3\xa9 \xe2\x82\xac")}) {
    const std::string doc = "{\"s\": " + JsonString(s) + "}";
    nlohmann::json j = nlohmann::json::parse(doc, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded()) << doc;
    EXPECT_EQ(j["s"].get<std::string>(), s);
  }
  const std::string bad = JsonString(std::string("a\xff\xc3") + "b");
  nlohmann::json j = nlohmann::json::parse(bad, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << bad;
  const std::string back = j.get<std::string>();
  EXPECT_EQ(back.front(), 'a');
  EXPECT_EQ(back.back(), 'b');
  EXPECT_NE(back.find("\xef\xbf\xbd"), std::string::npos) << back;  // U+FFFD
}

}  // namespace
}  // namespace tally
