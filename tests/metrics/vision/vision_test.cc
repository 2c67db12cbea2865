// Tests of the segmentation and image metrics beyond the golden fixtures:
// exact counts past float32's 2^24, TorchMetrics' mean of batch means for
// mean_iou (an empty update counted as no batch), the Fréchet distance's two
// input forms and its refusal below two rows.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "api/tally.h"
#include "engine/runtime/compiler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tally {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

absl::StatusOr<std::vector<at::Tensor>> Eval(const std::vector<std::string>& specs, const NamedTensors& in,
                                             int64_t batch = 0) {
  EvalOptions o;
  o.batch_size = batch;
  o.checked = true;
  auto r = Evaluate(specs, in, o);
  if (!r.ok()) return r.status();
  std::vector<at::Tensor> out;
  for (const auto& e : *r) out.push_back(e.value.to(at::kDouble));
  return out;
}

TEST(SegmentationTest, CountsPastTwoTo24AreExact) {
  // Verifies mean_iou and dice_score(aggregation_level=global) on one
  // 4,100 x 4,100 index mask (16,810,000 pixels, past 2^24): class 0
  // everywhere but a 1,000 x 1,000 block of class 1 in preds and a 1,000 x
  // 1,200 block shifted by 100 rows in target. The counts are exact integers,
  // so the values are the exact rationals to the last bit; float32 counts
  // (2^24 + 1 is not a float32) would be off.
  const int64_t side = 4100;
  at::Tensor preds = at::zeros({1, side, side}, at::kInt);
  at::Tensor target = at::zeros({1, side, side}, at::kInt);
  preds.narrow(1, 0, 1000).narrow(2, 0, 1000).fill_(1);
  target.narrow(1, 100, 1000).narrow(2, 0, 1200).fill_(1);
  const double total = static_cast<double>(side * side);
  const double both1 = 900.0 * 1000.0, p1 = 1e6, t1 = 1.2e6;
  const double both0 = total - p1 - t1 + both1, p0 = total - p1, t0 = total - t1;
  auto r = Eval({"mean_iou(num_classes=2, input_format=index)",
                 "dice_score(num_classes=2, input_format=index, aggregation_level=global, average=none)"},
                {{"preds", preds}, {"target", target}});
  ASSERT_TRUE(r.ok()) << r.status();
  const double iou0 = both0 / (p0 + t0 - both0), iou1 = both1 / (p1 + t1 - both1);
  EXPECT_EQ((*r)[0].item<double>(), (iou0 + iou1) / 2.0);
  EXPECT_EQ((*r)[1][0].item<double>(), 2.0 * both0 / (p0 + t0));
  EXPECT_EQ((*r)[1][1].item<double>(), 2.0 * both1 / (p1 + t1));
  EXPECT_NE(static_cast<double>(static_cast<float>(total + 1.0)), total + 1.0);  // what float32 counts lose
}

TEST(SegmentationTest, MeanIouAveragesBatchMeans) {
  // Verifies TorchMetrics 1.5.2's rule: each update adds its mean over
  // samples and compute divides by the updates, so 3 samples in updates of
  // 2 and 1 give (mean(s0, s1) + s2) / 2, not the mean of the three.
  at::Tensor preds = at::tensor(std::vector<int64_t>{0, 1, 1, 1, 0, 0, 1, 0, 1, 1, 1, 1}, at::kLong).reshape({3, 4});
  at::Tensor target = at::tensor(std::vector<int64_t>{0, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1, 0}, at::kLong).reshape({3, 4});
  // Per sample, IoU of class 0 and 1: s0 = (1/2 + 2/3) / 2, s1 = (3/4 + 0) / 2,
  // s2 = (0 + 3/4) / 2.
  const double s0 = (0.5 + 2.0 / 3.0) / 2.0, s1 = 0.75 / 2.0, s2 = 0.75 / 2.0;
  const std::string spec = "mean_iou(num_classes=2, input_format=index)";
  auto whole = Eval({spec}, {{"preds", preds}, {"target", target}});
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_DOUBLE_EQ((*whole)[0].item<double>(), (s0 + s1 + s2) / 3.0);
  auto batched = Eval({spec}, {{"preds", preds}, {"target", target}}, /*batch=*/2);
  ASSERT_TRUE(batched.ok()) << batched.status();
  EXPECT_DOUBLE_EQ((*batched)[0].item<double>(), ((s0 + s1) / 2.0 + s2) / 2.0);
  // An empty update is no batch (TorchMetrics' mean of nothing is NaN).
  auto sig = SignatureOf({{"preds", preds}, {"target", target}});
  ASSERT_TRUE(sig.ok());
  auto entries = BuildEntries({spec}, *sig, ir::Device{"cpu"});
  ASSERT_TRUE(entries.ok()) << entries.status();
  auto program = Compile(*entries, CompileOptions{});
  ASSERT_TRUE(program.ok()) << program.status();
  ASSERT_TRUE((*program)->Update({{"preds", preds.narrow(0, 0, 0)}, {"target", target.narrow(0, 0, 0)}}).ok());
  ASSERT_TRUE((*program)->Update({{"preds", preds}, {"target", target}}).ok());
  auto values = (*program)->Compute();
  ASSERT_TRUE(values.ok()) << values.status();
  EXPECT_DOUBLE_EQ((*values)[0].second.item<double>(), (s0 + s1 + s2) / 3.0);
}

TEST(FrechetTest, FlaggedRowsEqualTwoInputs) {
  // Verifies that features with a bool `real` give the distance of the same
  // rows passed as real_features and fake_features (the states are sums, so
  // the order of rows does not matter beyond rounding), and that fewer than
  // two rows of a kind are refused at compute, naming the metric.
  at::manual_seed(3);
  at::Tensor real = at::randn({7, 5}, at::kDouble), fake = at::randn({7, 5}, at::kDouble) * 1.5 + 0.3;
  auto two = Eval({"frechet_inception_distance"}, {{"real_features", real}, {"fake_features", fake}});
  ASSERT_TRUE(two.ok()) << two.status();
  at::Tensor flag = at::arange(14, at::kLong).remainder(2) == 0;  // interleaved
  at::Tensor features = at::stack({real, fake}, 1).reshape({14, 5});
  auto flagged = Eval({"frechet_inception_distance"}, {{"features", features}, {"real", flag}}, /*batch=*/3);
  ASSERT_TRUE(flagged.ok()) << flagged.status();
  EXPECT_NEAR((*flagged)[0].item<double>(), (*two)[0].item<double>(), 1e-10 * (*two)[0].item<double>());
  EXPECT_GT((*two)[0].item<double>(), 0.1);
  auto one = Eval({"frechet_inception_distance"},
                  {{"features", features.narrow(0, 0, 3)},
                   {"real", at::tensor(std::vector<int64_t>{1, 0, 0}, at::kLong).to(at::kBool)}});
  ASSERT_FALSE(one.ok());
  EXPECT_THAT(std::string(one.status().message()),
              AllOf(HasSubstr("frechet_inception_distance"), HasSubstr("more than one sample")));
}

}  // namespace
}  // namespace tally
