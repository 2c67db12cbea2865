// Tests of the fused mc_marginals kernel (what narrow-states makes of
// mc_confmat): its states equal its ATen decomposition's exactly and equal
// the per-class statistics of the full confusion matrix of the same data,
// on the inputs that stress it — NaN rows, ties, -inf rows, labels and
// targets out of range, ignore_index, int32 targets, integer label preds,
// float64 scores, and class counts on both sides of the AVX2 paths' limits
// (16, and 32 for the wide argmax) up to 131,072.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/InferenceMode.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "engine/runtime/compiler.h"
#include "gtest/gtest.h"
#include "ops/fused/mc_confmat.h"
#include "tests/ops/fused/fused_testing.h"

namespace tally {
namespace {

struct Case {
  int64_t classes;
  bool labels;  // integer label preds instead of scores
  bool int32_target;
  bool with_ignore;
  bool dirty;  // NaNs, ties, -inf and out-of-range values
  bool f64 = false;
};

NamedTensors MakeInputs(const Case& c, int64_t n, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  at::Tensor target = at::randint(-1, c.classes + 1, {n}, gen, at::kLong);
  if (!c.dirty) target = target.clamp(0, c.classes - 1);
  at::Tensor preds;
  if (c.labels) {
    preds = at::randint(c.dirty ? -1 : 0, c.dirty ? c.classes + 1 : c.classes, {n}, gen, at::kLong);
  } else {
    // Rounded scores make ties common; NaNs in first, last and every place; a -inf row.
    preds = (at::randn({n, c.classes}, gen, c.f64 ? at::kDouble : at::kFloat) * 2).round();
    if (c.dirty && n > 5) {
      preds[1][c.classes - 1] = NAN;
      preds[2][0] = NAN;
      preds[3].fill_(NAN);
      preds[4].fill_(-INFINITY);
      preds[5][c.classes / 2] = INFINITY;
    }
  }
  if (c.int32_target) target = target.to(at::kInt);
  return {{"preds", preds}, {"target", target}};
}

using ::tally::testing::StatesOf;

// Collection reads every part: tp, target, pred (f1), abs_err and sq_err (kappa).
std::vector<std::string> Collection(const Case& c) {
  std::string k = absl::StrCat("num_classes=", c.classes, c.with_ignore ? ", ignore_index=1" : "");
  return {absl::StrCat("multiclass_f1_score(", k, ")"), absl::StrCat("multiclass_cohen_kappa(", k, ", weights=linear)"),
          absl::StrCat("multiclass_cohen_kappa(", k, ", weights=quadratic)")};
}

class McMarginalsTest : public ::testing::TestWithParam<Case> {};

TEST_P(McMarginalsTest, FusedEqualsReferenceAndTheMatrixMarginals) {
  // Verifies that the narrowed program's states are the same with the fused
  // kernel and the decomposition, whole and in batches of 7, and that its
  // marginals are exactly the diagonal, row sums, column sums and weighted
  // error sums of the full matrix of the same rows.
  const Case& c = GetParam();
  NamedTensors in = MakeInputs(c, 1501, 11);
  std::string dump;
  auto fused = StatesOf(Collection(c), in, passes::FusePolicy::kFused, 1501, &dump);
  ASSERT_NE(dump.find("mc_marginals"), std::string::npos) << dump;
  for (int64_t batch : {int64_t{1501}, int64_t{7}}) {
    auto ref = StatesOf(Collection(c), in, passes::FusePolicy::kReference, batch);
    ASSERT_EQ(fused.size(), ref.size());
    for (size_t i = 0; i < fused.size(); ++i) {
      EXPECT_TRUE(at::equal(fused[i], ref[i])) << "state " << i << " batch " << batch << "\n"
                                               << fused[i] << "\nvs\n"
                                               << ref[i];
    }
  }
  std::string k = absl::StrCat("num_classes=", c.classes, c.with_ignore ? ", ignore_index=1" : "");
  auto matrix = StatesOf({absl::StrCat("multiclass_confusion_matrix(", k, ")")}, in, passes::FusePolicy::kFused, 1501);
  at::Tensor cm = matrix.back();
  ASSERT_EQ(cm.dim(), 2);
  at::Tensor idx = at::arange(c.classes, at::kLong);
  at::Tensor diff = idx.unsqueeze(1) - idx.unsqueeze(0);
  at::Tensor expected =
      at::stack({cm.diagonal(), cm.sum(1), cm.sum(0), (cm * diff.abs()).sum(1), (cm * diff * diff).sum(1)});
  EXPECT_TRUE(at::equal(fused.back(), expected)) << fused.back() << "\nvs\n" << expected;
}

std::vector<Case> Cases() {
  std::vector<Case> out;
  for (int64_t k : {2, 3, 10, 16, 17, 31, 32, 40, 100}) {
    for (bool labels : {false, true}) {
      for (bool dirty : {false, true}) {
        out.push_back({k, labels, false, false, dirty});
        out.push_back({k, labels, true, true, dirty});
      }
    }
  }
  out.push_back({40, false, false, true, true, /*f64=*/true});
  out.push_back({5, false, false, false, true, /*f64=*/true});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fused, McMarginalsTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           const Case& c = i.param;
                           return absl::StrCat("C", c.classes, c.labels ? "_labels" : "_scores",
                                               c.int32_target ? "_i32" : "", c.with_ignore ? "_ignore" : "",
                                               c.dirty ? "_dirty" : "", c.f64 ? "_f64" : "");
                         });

TEST(McMarginalsKernel, WideRowsTakeTheFirstMaximumAsAtenArgmax) {
  // Verifies the label of long float32 rows (C = 131,072 and a tail that is
  // not a multiple of 8) against at::argmax, for rows with ties, a maximum in
  // the tail, NaN anywhere, all -inf, and both signs of zero.
  for (int64_t c : {int64_t{131072}, int64_t{1003}}) {
    at::Generator gen = at::detail::createCPUGenerator(3);
    at::Tensor s = (at::randn({9, c}, gen, at::kFloat) * 3).round();
    s[0].fill_(1.0f);
    s[1][c - 1] = 100.0f;
    s[2][c / 3] = NAN;
    s[3].fill_(-INFINITY);
    s[4].fill_(-0.0f);
    s[4][7] = 0.0f;
    s[5][c - 2] = NAN;
    s[6][0] = 50.0f;
    s[6][c - 1] = 50.0f;
    at::Tensor labels = s.argmax(1);
    auto r = ops::fused::McMarginalsCpu(s, labels, c, c10::nullopt, "tp,target", false);
    // Every row's argmax is its target, so tp == target counts per class.
    EXPECT_TRUE(at::equal(std::get<0>(r)[0], std::get<0>(r)[1])) << "C=" << c;
    EXPECT_EQ(std::get<0>(r)[0].sum().item<int64_t>(), 9);
  }
}

TEST(McMarginalsKernel, EmptyBatchGivesZerosAndBadPartsAreErrors) {
  // Verifies that an empty batch gives zero rows of the requested parts, and
  // that an unknown or repeated part name is an error, not a crash.
  auto r = ops::fused::McMarginalsCpu(at::zeros({0, 5}), at::zeros({0}, at::kLong), 5, c10::nullopt, "pred,tp", false);
  EXPECT_EQ(std::get<0>(r).sizes(), (std::vector<int64_t>{2, 5}));
  EXPECT_EQ(std::get<0>(r).sum().item<int64_t>(), 0);
  EXPECT_THROW(ops::fused::McMarginalsCpu(at::zeros({1, 5}), at::zeros({1}, at::kLong), 5, c10::nullopt, "diag", false),
               c10::Error);
  EXPECT_THROW(
      ops::fused::McMarginalsCpu(at::zeros({1, 5}), at::zeros({1}, at::kLong), 5, c10::nullopt, "tp,tp", false),
      c10::Error);
}

TEST(McMarginalsKernel, RunsOnMetaThroughTheDispatcher) {
  // Verifies that the registered tally::mc_marginals operator has a Meta
  // kernel (so the meta-execution proof of sync-freedom covers it).
  auto op = c10::Dispatcher::singleton()
                .findSchemaOrThrow("tally::mc_marginals", "")
                .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(
                    const at::Tensor&, const at::Tensor&, int64_t, c10::optional<int64_t>, c10::string_view, bool,
                    const c10::optional<at::Tensor>&, const c10::optional<at::Tensor>&, int64_t)>();
  c10::InferenceMode guard;
  auto meta = at::TensorOptions().device(at::kMeta);
  auto r = op.call(at::empty({9, 4}, meta), at::empty({9}, meta.dtype(at::kLong)), 4, c10::optional<int64_t>(2),
                   "tp,target,pred", false, c10::nullopt, c10::nullopt, 0);
  EXPECT_TRUE(std::get<0>(r).is_meta());
  EXPECT_EQ(std::get<0>(r).sizes(), (std::vector<int64_t>{3, 4}));
  // Grouped totals: [G, P].
  auto g = op.call(at::empty({9, 4}, meta), at::empty({9}, meta.dtype(at::kLong)), 4, c10::nullopt, "tp,target", true,
                   c10::nullopt, c10::optional<at::Tensor>(at::empty({9}, meta.dtype(at::kLong))), 7);
  EXPECT_EQ(std::get<0>(g).sizes(), (std::vector<int64_t>{7, 2}));
}

}  // namespace
}  // namespace tally
