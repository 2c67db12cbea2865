// Tests that every metric that ranks or bins scores (the curves, their areas
// and operating points, exact and binned, the multilabel rankings, the
// calibration errors and the retrieval metrics) refuses NaN scores with a
// deferred check naming `preds` (metrics/curves/common.h, NanScores), instead
// of printing a number that depends on where NaN happened to sort: exact
// binary_auroc over a handful of rows with one NaN once printed 1.0119.
#include <ATen/ATen.h>

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tally {
namespace {

using ::testing::HasSubstr;

enum class Form { kBinary, kMulticlass, kMultilabel, kRetrieval };

NamedTensors InputsFor(Form form, bool with_nan) {
  const double nan = with_nan ? NAN : 0.25;
  switch (form) {
    case Form::kBinary:
      return {{"preds", at::tensor({0.1, 0.9, nan, 0.4, 0.6, 0.3, 0.8}, at::kFloat)},
              {"target", at::tensor({0, 1, 0, 1, 1, 0, 0}, at::kLong)}};
    case Form::kMulticlass:
      return {{"preds",
               at::tensor({0.2, 0.5, 0.3, nan, 0.1, 0.2, 0.3, 0.3, 0.4, 0.6, 0.2, 0.2}, at::kFloat).reshape({4, 3})},
              {"target", at::tensor({1, 0, 2, 0}, at::kLong)}};
    case Form::kMultilabel:
      return {{"preds",
               at::tensor({0.2, 0.5, 0.3, nan, 0.1, 0.2, 0.3, 0.3, 0.4, 0.6, 0.2, 0.2}, at::kFloat).reshape({4, 3})},
              {"target", at::tensor({1, 0, 1, 0, 1, 1, 0, 0, 1, 1, 1, 0}, at::kLong).reshape({4, 3})}};
    case Form::kRetrieval:
      return {{"indexes", at::tensor({0, 0, 0, 1, 1, 1}, at::kLong)},
              {"preds", at::tensor({0.1, nan, 0.7, 0.4, 0.5, 0.2}, at::kFloat)},
              {"target", at::tensor({0, 1, 1, 0, 1, 0}, at::kLong)}};
  }
  return {};
}

struct Case {
  std::string spec;
  Form form;
};

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (const char* thresholds : {"", "thresholds=5", "thresholds=[0.0, 0.5, 1.0]"}) {
    const std::string t = thresholds;
    const std::string bin_args = t.empty() ? "" : absl::StrCat("(", t, ")");
    const std::string sep = t.empty() ? "" : absl::StrCat(", ", t);
    for (const char* name :
         {"binary_auroc", "binary_average_precision", "binary_roc", "binary_precision_recall_curve"}) {
      cases.push_back({absl::StrCat(name, bin_args), Form::kBinary});
    }
    cases.push_back({absl::StrCat("binary_recall_at_fixed_precision(min_precision=0.5", sep, ")"), Form::kBinary});
    cases.push_back({absl::StrCat("binary_precision_at_fixed_recall(min_recall=0.5", sep, ")"), Form::kBinary});
    for (const char* name :
         {"multiclass_auroc", "multiclass_average_precision", "multiclass_roc", "multiclass_precision_recall_curve"}) {
      cases.push_back({absl::StrCat(name, "(num_classes=3", sep, ")"), Form::kMulticlass});
    }
    for (const char* name :
         {"multilabel_auroc", "multilabel_average_precision", "multilabel_roc", "multilabel_precision_recall_curve"}) {
      cases.push_back({absl::StrCat(name, "(num_labels=3", sep, ")"), Form::kMultilabel});
    }
    cases.push_back({absl::StrCat("multiclass_recall_at_fixed_precision(num_classes=3, min_precision=0.5", sep, ")"),
                     Form::kMulticlass});
    cases.push_back({absl::StrCat("multilabel_precision_at_fixed_recall(num_labels=3, min_recall=0.5", sep, ")"),
                     Form::kMultilabel});
  }
  cases.push_back({"binary_auroc(max_fpr=0.5)", Form::kBinary});
  cases.push_back({"binary_auroc(thresholds=exact16)", Form::kBinary});
  cases.push_back({"auroc(task=binary)", Form::kBinary});
  cases.push_back({"binary_calibration_error", Form::kBinary});
  cases.push_back({"multiclass_calibration_error(num_classes=3)", Form::kMulticlass});
  for (const char* name :
       {"multilabel_coverage_error", "multilabel_ranking_average_precision", "multilabel_ranking_loss"}) {
    cases.push_back({absl::StrCat(name, "(num_labels=3)"), Form::kMultilabel});
  }
  for (const char* name : {"retrieval_auroc", "retrieval_average_precision", "retrieval_reciprocal_rank",
                           "retrieval_precision_recall_curve", "retrieval_normalized_dcg", "retrieval_hit_rate"}) {
    cases.push_back({name, Form::kRetrieval});
  }
  return cases;
}

std::string NameOf(const std::string& spec) { return spec.substr(0, spec.find('(')); }

TEST(NanScoresTest, EveryRankingMetricRefusesNanScoresNamingPreds) {
  for (const Case& c : Cases()) {
    for (int64_t batch : {0, 2}) {
      tally::EvalOptions o;
      o.batch_size = batch;
      auto clean = tally::Evaluate({c.spec}, InputsFor(c.form, /*with_nan=*/false), o);
      ASSERT_TRUE(clean.ok()) << c.spec << ": " << clean.status();
      auto r = tally::Evaluate({c.spec}, InputsFor(c.form, /*with_nan=*/true), o);
      ASSERT_FALSE(r.ok()) << c.spec << " printed " << (*r)[0].value;
      EXPECT_THAT(std::string(r.status().message()), HasSubstr(absl::StrCat(NameOf(c.spec), ": preds: 1 NaN scores")))
          << c.spec;
    }
  }
}

TEST(NanScoresTest, NanOnAnIgnoredSampleIsNotCounted) {
  // TorchMetrics drops an ignored sample before it looks at its score.
  NamedTensors bin = {{"preds", at::tensor({0.1, 0.9, NAN, 0.4}, at::kFloat)},
                      {"target", at::tensor({0, 1, -1, 1}, at::kLong)}};
  for (const char* spec :
       {"binary_auroc(ignore_index=-1)", "binary_average_precision(ignore_index=-1, thresholds=4)"}) {
    auto r = tally::Evaluate({spec}, bin, {});
    ASSERT_TRUE(r.ok()) << spec << ": " << r.status();
    EXPECT_FALSE(std::isnan((*r)[0].value.item<double>())) << spec;
  }
  NamedTensors mc = {{"preds", at::tensor({0.2, 0.5, 0.3, NAN, 0.1, 0.2, 0.3, 0.3, 0.4}, at::kFloat).reshape({3, 3})},
                     {"target", at::tensor({1, -1, 2}, at::kLong)}};
  auto r = tally::Evaluate({"multiclass_auroc(num_classes=3, ignore_index=-1, average=none)"}, mc, {});
  ASSERT_TRUE(r.ok()) << r.status();
}

TEST(NanScoresTest, MeanAveragePrecisionRefusesNanScoresOfDetectionsOnly) {
  // Two detection slots of one image; the second is padding (label -1),
  // whose score is never read.
  const auto inputs = [](double first, double second) {
    return NamedTensors{{"boxes", at::tensor({258.0, 41.0, 606.0, 285.0, 0.0, 0.0, 10.0, 10.0}).view({1, 2, 4})},
                        {"scores", at::tensor({first, second}).view({1, 2})},
                        {"labels", at::tensor({0, -1}, at::kLong).view({1, 2})},
                        {"target_boxes", at::tensor({214.0, 41.0, 562.0, 285.0}).view({1, 1, 4})},
                        {"target_labels", at::tensor({0}, at::kLong).view({1, 1})}};
  };
  auto r = tally::Evaluate({"mean_average_precision"}, inputs(NAN, 0.5), {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("mean_average_precision: scores: 1 NaN scores"));
  auto padded = tally::Evaluate({"mean_average_precision"}, inputs(0.536, NAN), {});
  ASSERT_TRUE(padded.ok()) << padded.status();
  EXPECT_NEAR((*padded)[0].result.parts[0].tensor.item<double>(), 0.6, 1e-12);  // map
}

TEST(NanScoresTest, HingeLossPropagatesNan) {
  // A hinge loss over a NaN score is NaN, an honest value (TorchMetrics').
  auto r = tally::Evaluate({"binary_hinge_loss"}, InputsFor(Form::kBinary, /*with_nan=*/true), {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(std::isnan((*r)[0].value.item<double>()));
}

}  // namespace
}  // namespace tally
