// The C++ guide's code (docs/api.md) compiled as written — a genrule copies
// its BuildMyMae and RunProgram blocks into api_guide_snippets.inc — and run:
// a metric declared in the DSL gives the mean absolute error, its deferred
// NaN check names the metric and input, and the collection it joins
// compiles and computes beside library metrics.
#include <ATen/ATen.h>

#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "api/tally.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace guide {
#include "tests/engine/api_guide_snippets.inc"
}  // namespace guide

namespace tally {
namespace {

using ::testing::HasSubstr;

dsl::Signature FloatPair() { return {{"preds", ir::DType::kFloat32, {8}}, {"target", ir::DType::kFloat32, {8}}}; }

TEST(ApiGuide, DslMetricIsTheMeanAbsoluteError) {
  absl::StatusOr<dsl::Metric> mine = guide::BuildMyMae(FloatPair(), ir::Device{});
  ASSERT_TRUE(mine.ok()) << mine.status();
  std::vector<dsl::CollectionEntry> entries;
  entries.push_back({"my_mae", std::move(*mine)});
  absl::StatusOr<std::unique_ptr<Program>> program = Compile(entries, CompileOptions{});
  ASSERT_TRUE(program.ok()) << program.status();
  at::Tensor p1 = at::rand({8}, at::kFloat), t1 = at::rand({8}, at::kFloat);
  at::Tensor p2 = at::rand({5}, at::kFloat) * 100 + 1e6, t2 = at::rand({5}, at::kFloat);
  ASSERT_TRUE((*program)->Update({{"preds", p1}, {"target", t1}}).ok());
  ASSERT_TRUE((*program)->Update({{"preds", p2}, {"target", t2}}).ok());
  absl::StatusOr<NamedTensors> values = (*program)->Compute();
  ASSERT_TRUE(values.ok()) << values.status();
  ASSERT_EQ(values->size(), 1u);
  const double expected =
      at::cat({(p1.to(at::kDouble) - t1.to(at::kDouble)).abs(), (p2.to(at::kDouble) - t2.to(at::kDouble)).abs()})
          .mean()
          .item<double>();
  EXPECT_DOUBLE_EQ(values->front().second.item<double>(), expected);
  EXPECT_EQ(values->front().second.scalar_type(), at::kDouble);
}

TEST(ApiGuide, DeferredNanCheckNamesMetricAndInput) {
  absl::StatusOr<dsl::Metric> mine = guide::BuildMyMae(FloatPair(), ir::Device{});
  ASSERT_TRUE(mine.ok()) << mine.status();
  std::vector<dsl::CollectionEntry> entries;
  entries.push_back({"my_mae", std::move(*mine)});
  auto program = Compile(entries, CompileOptions{});
  ASSERT_TRUE(program.ok()) << program.status();
  at::Tensor p = at::zeros({4}, at::kFloat);
  p[2] = std::numeric_limits<float>::quiet_NaN();
  ASSERT_TRUE((*program)->Update({{"preds", p}, {"target", at::zeros({4}, at::kFloat)}}).ok());
  absl::StatusOr<NamedTensors> values = (*program)->Compute();
  ASSERT_FALSE(values.ok());
  EXPECT_THAT(std::string(values.status().message()), HasSubstr("my_mae"));
  EXPECT_THAT(std::string(values.status().message()), HasSubstr("preds: 1 NaN differences"));
}

TEST(ApiGuide, MissingInputIsAnError) {
  absl::StatusOr<dsl::Metric> mine = guide::BuildMyMae({{"preds", ir::DType::kFloat32, {8}}}, ir::Device{});
  ASSERT_FALSE(mine.ok());
  EXPECT_THAT(std::string(mine.status().message()), HasSubstr("target"));
}

TEST(ApiGuide, RunProgramComputesTheCollection) {
  ::testing::internal::CaptureStdout();
  absl::Status st = guide::RunProgram();
  const std::string out = ::testing::internal::GetCapturedStdout();
  ASSERT_TRUE(st.ok()) << st;
  EXPECT_THAT(out, HasSubstr("mean_squared_error = "));
  EXPECT_THAT(out, HasSubstr("r2_score = "));
  EXPECT_THAT(out, HasSubstr("my_mae = "));
}

}  // namespace
}  // namespace tally
