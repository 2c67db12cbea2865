// Tests of the aggregation metrics (metrics/aggregation/aggregation.cc) against
// TorchMetrics 1.5.2's MeanMetric/SumMetric/MaxMetric/MinMetric rules.
#include <ATen/ATen.h>

#include <string>

#include "api/tally.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tally {
namespace {

using ::testing::HasSubstr;

absl::StatusOr<double> Eval(const std::string& spec, const at::Tensor& value) {
  auto r = tally::Evaluate({spec}, {{"value", value}}, tally::EvalOptions{});
  if (!r.ok()) return r.status();
  return (*r)[0].value.to(at::kDouble).item<double>();
}

TEST(AggregationTest, IntegerNanStrategyIsRejected) {
  // Verifies that nan_strategy=0 (an int) is an argument error, as
  // TorchMetrics' isinstance(nan_strategy, float) check raises, while 0.0
  // replaces NaNs (fuzz case: mean(nan_strategy=3) gave a value).
  at::Tensor v = at::tensor({1.0, NAN, 4.0}, at::kDouble);
  for (const char* spec :
       {"mean(nan_strategy=0)", "sum(nan_strategy=3)", "max(nan_strategy=-1)", "min(nan_strategy=2)"}) {
    auto r = Eval(spec, v);
    ASSERT_FALSE(r.ok()) << spec;
    EXPECT_THAT(r.status().message(), HasSubstr("nan_strategy")) << spec;
  }
  auto sum = Eval("sum(nan_strategy=3.0)", v);
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_DOUBLE_EQ(*sum, 8.0);
  auto mean = Eval("mean(nan_strategy=2.0)", v);
  ASSERT_TRUE(mean.ok()) << mean.status();
  EXPECT_DOUBLE_EQ(*mean, 7.0 / 3.0);
}

}  // namespace
}  // namespace tally
