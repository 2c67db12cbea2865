// Tests of the fused mc_confmat kernel against its ATen decomposition (the
// reference path), on the inputs that stress it: NaN rows, ties, labels and
// targets out of range, ignore_index, int32 targets, integer label preds,
// class counts on both sides of the AVX2 path's limit, and empty batches.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/InferenceMode.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "engine/runtime/compiler.h"
#include "gtest/gtest.h"
#include "ops/fused/count_outside.h"
#include "ops/fused/mc_confmat.h"
#include "tests/ops/fused/fused_testing.h"

namespace tally {
namespace {

struct Case {
  int64_t classes;
  bool labels;  // integer label preds instead of scores
  bool int32_target;
  bool with_ignore;
  bool dirty;  // NaNs, ties and out-of-range values
};

NamedTensors MakeInputs(const Case& c, int64_t n, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  at::Tensor target = at::randint(-1, c.classes + 1, {n}, gen, at::kLong);
  if (!c.dirty) target = target.clamp(0, c.classes - 1);
  at::Tensor preds;
  if (c.labels) {
    preds = at::randint(c.dirty ? -1 : 0, c.dirty ? c.classes + 1 : c.classes, {n}, gen, at::kLong);
  } else {
    // Rounded scores make ties common; a few NaNs, including in first place.
    preds = (at::randn({n, c.classes}, gen, at::kFloat) * 2).round();
    if (c.dirty && n > 4) {
      preds[1][c.classes - 1] = NAN;
      preds[2][0] = NAN;
      preds[3].fill_(NAN);
    }
  }
  if (c.int32_target) target = target.to(at::kInt);
  return {{"preds", preds}, {"target", target}};
}

using ::tally::testing::StatesOf;

class McConfmatTest : public ::testing::TestWithParam<Case> {};

TEST_P(McConfmatTest, FusedEqualsReference) {
  // Verifies that the fused kernel's states equal the decomposed ATen path's
  // exactly, for whole batches and for batches of 7 rows.
  const Case& c = GetParam();
  std::string spec =
      absl::StrCat("multiclass_confusion_matrix(num_classes=", c.classes, c.with_ignore ? ", ignore_index=1" : "", ")");
  NamedTensors in = MakeInputs(c, 3001, 11);
  for (int64_t batch : {int64_t{3001}, int64_t{7}}) {
    auto fused = StatesOf({spec}, in, passes::FusePolicy::kFused, batch);
    auto ref = StatesOf({spec}, in, passes::FusePolicy::kReference, batch);
    ASSERT_EQ(fused.size(), ref.size());
    for (size_t i = 0; i < fused.size(); ++i) {
      EXPECT_TRUE(at::equal(fused[i], ref[i])) << spec << " state " << i << " batch " << batch << "\n"
                                               << fused[i] << "\nvs\n"
                                               << ref[i];
    }
  }
}

std::vector<Case> Cases() {
  std::vector<Case> out;
  for (int64_t k : {2, 3, 8, 10, 16, 17, 40}) {
    for (bool labels : {false, true}) {
      for (bool dirty : {false, true}) {
        out.push_back({k, labels, false, false, dirty});
        out.push_back({k, labels, true, true, dirty});
      }
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fused, McConfmatTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           const Case& c = i.param;
                           return absl::StrCat("C", c.classes, c.labels ? "_labels" : "_scores",
                                               c.int32_target ? "_i32" : "", c.with_ignore ? "_ignore" : "",
                                               c.dirty ? "_dirty" : "");
                         });

TEST(McConfmatKernel, EmptyBatchGivesZeros) {
  // Verifies that an empty batch gives a zero matrix and zero counts.
  auto r = ops::fused::McConfmatCpu(at::zeros({0, 5}), at::zeros({0}, at::kLong), 5, c10::nullopt);
  EXPECT_EQ(std::get<0>(r).sum().item<int64_t>(), 0);
  EXPECT_EQ(std::get<0>(r).sizes(), (std::vector<int64_t>{5, 5}));
  EXPECT_EQ(std::get<1>(r).item<int64_t>(), 0);
}

TEST(McConfmatKernel, RunsOnMetaThroughTheDispatcher) {
  // Verifies that the registered tally::mc_confmat operator has a Meta kernel
  // (so the meta-execution proof of sync-freedom covers it).
  auto op = c10::Dispatcher::singleton()
                .findSchemaOrThrow("tally::mc_confmat", "")
                .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(
                    const at::Tensor&, const at::Tensor&, int64_t, c10::optional<int64_t>,
                    const c10::optional<at::Tensor>&, const c10::optional<at::Tensor>&, int64_t)>();
  c10::InferenceMode guard;
  auto meta = at::TensorOptions().device(at::kMeta);
  auto r = op.call(at::empty({9, 4}, meta), at::empty({9}, meta.dtype(at::kLong)), 4, c10::optional<int64_t>(2),
                   c10::nullopt, c10::nullopt, 0);
  EXPECT_TRUE(std::get<0>(r).is_meta());
  EXPECT_EQ(std::get<0>(r).sizes(), (std::vector<int64_t>{4, 4}));
  EXPECT_EQ(std::get<0>(r).scalar_type(), at::kLong);
  // Weighted (float32 weights): float64 sums; grouped: a leading [G].
  auto w = op.call(at::empty({9, 4}, meta), at::empty({9}, meta.dtype(at::kLong)), 4, c10::nullopt,
                   c10::optional<at::Tensor>(at::empty({9}, meta.dtype(at::kFloat))),
                   c10::optional<at::Tensor>(at::empty({9}, meta.dtype(at::kLong))), 6);
  EXPECT_EQ(std::get<0>(w).scalar_type(), at::kDouble);
  EXPECT_EQ(std::get<0>(w).sizes(), (std::vector<int64_t>{6, 4, 4}));
}

// Verifies that the fused kernels' group axis and raw weights (float32 and
// bfloat16, with negative, NaN and infinite weights and group ids outside
// [0, G)) give the states of the decomposed ATen path: integer counts
// exactly, float64 weight sums to rounding (they add in another order).
TEST(McConfmatKernel, GroupsAndRawWeightsEqualTheReference) {
  const int64_t n = 70001, c = 6;
  at::Generator gen = at::detail::createCPUGenerator(5);
  at::Tensor target = at::randint(-1, c + 1, {n}, gen, at::kLong);
  at::Tensor scores = (at::randn({n, c}, gen, at::kFloat) * 2).round();
  at::Tensor groups = at::randint(-1, 6, {n}, gen, at::kLong);
  at::Tensor weight = at::rand({n}, gen, at::kFloat) * 3;
  weight.index_put_({at::arange(0, n, 97)}, -1.0);
  weight.index_put_({at::arange(1, n, 101)}, NAN);
  weight.index_put_({at::arange(2, n, 103)}, INFINITY);
  const std::vector<std::string> specs = {"multiclass_confusion_matrix(num_classes=6, num_groups=5)",
                                          "multiclass_f1_score(num_classes=6, average=macro, num_groups=5)",
                                          "multiclass_accuracy(num_classes=6, average=micro, num_groups=5)"};
  for (at::ScalarType wt : {at::kFloat, at::kBFloat16}) {
    for (bool weighted : {false, true}) {
      NamedTensors in = {{"preds", scores}, {"target", target}, {"groups", groups}};
      if (weighted) in.push_back({"weight", weight.to(wt)});
      for (int64_t batch : {n, int64_t{4096}}) {
        std::string ir;
        auto fused = StatesOf(specs, in, passes::FusePolicy::kFused, batch, &ir);
        auto ref = StatesOf(specs, in, passes::FusePolicy::kReference, batch);
        EXPECT_TRUE(absl::StrContains(ir, "num_groups=5")) << ir;
        ASSERT_EQ(fused.size(), ref.size());
        for (size_t i = 0; i < fused.size(); ++i) {
          ASSERT_EQ(fused[i].scalar_type(), ref[i].scalar_type());
          EXPECT_TRUE(fused[i].is_floating_point() ? at::allclose(fused[i], ref[i], 1e-12, 1e-9)
                                                   : at::equal(fused[i], ref[i]))
              << "state " << i << " weighted " << weighted << " batch " << batch << "\n"
              << fused[i] << "\nvs\n"
              << ref[i];
        }
      }
    }
  }
}

// Verifies count_outside counts what falls outside [low, high), NaN
// included, in every dtype: the weights' check [0, inf) (0 and the largest
// finite values are in, negative, NaN and infinite ones out) and an integer
// id range.
TEST(CountOutsideKernel, CountsNegativeNanAndInfiniteWeightsAndIdsOutOfRange) {
  at::Tensor w = at::tensor({0.0, 1.0, -0.5, NAN, INFINITY, -INFINITY, 3e38, -0.0}, at::kDouble);
  for (at::ScalarType dt : {at::kDouble, at::kFloat, at::kHalf, at::kBFloat16}) {
    // 3e38 is finite in float32 and bfloat16, infinite in float16.
    const int64_t want = dt == at::kHalf ? 5 : 4;
    EXPECT_EQ(ops::fused::CountOutsideCpu(w.to(dt), 0.0, INFINITY).item<int64_t>(), want) << dt;
  }
  EXPECT_EQ(ops::fused::CountOutsideCpu(at::rand({200000}, at::kFloat), 0.0, INFINITY).item<int64_t>(), 0);
  EXPECT_EQ(ops::fused::CountOutsideCpu(-at::ones({200000}, at::kFloat), 0.0, INFINITY).item<int64_t>(), 200000);
  at::Tensor ids = at::tensor(std::vector<int64_t>{-1, 0, 63, 64, int64_t{1} << 62}, at::kLong);
  EXPECT_EQ(ops::fused::CountOutsideCpu(ids, 0.0, 64.0).item<int64_t>(), 3);
  EXPECT_EQ(ops::fused::CountOutsideCpu(ids.to(at::kInt).narrow(0, 0, 4), 0.0, 64.0).item<int64_t>(), 2);
}

TEST(McConfmatKernel, BadTargetsAreCountedAndSkipped) {
  // Verifies the range checks: targets outside [0, C) and label preds outside
  // it are counted and their rows not counted; ignored rows are neither.
  at::Tensor preds = at::tensor({0, 1, 5, 2, -1}, at::kLong);
  at::Tensor target = at::tensor({0, 3, 1, 2, 2}, at::kLong);
  auto r = ops::fused::McConfmatCpu(preds, target, 3, c10::optional<int64_t>(2));
  // Row 0 counts; row 1 bad target; row 2 bad pred; rows 3-4 ignored.
  EXPECT_EQ(std::get<0>(r).sum().item<int64_t>(), 1);
  EXPECT_EQ(std::get<0>(r)[0][0].item<int64_t>(), 1);
  EXPECT_EQ(std::get<1>(r).item<int64_t>(), 1);
  EXPECT_EQ(std::get<2>(r).item<int64_t>(), 1);
}

}  // namespace
}  // namespace tally
