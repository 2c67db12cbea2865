// Tests of sample weights (metrics/weights.h): for every metric that takes
// `weight`, integer weights give exactly the value of the unweighted metric
// on rows repeated that many times (what a weight means), in one update and
// in batches; programs without `weight` keep their int64 states and fused
// kernels; a collection that would weight some metrics and not others, a
// weight of the wrong shape, and a configuration without a weighted form are
// refused naming the metric and the input. The values against scikit-learn's
// sample_weight are golden fixtures (tests/golden/gen_weighted.py).
#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tally {
namespace {

using ::testing::HasSubstr;

constexpr int64_t kRows = 37;

// Form is one input form: the metrics that take it and its rows.
struct Form {
  std::vector<std::string> specs;
  NamedTensors inputs;  // without weight
};

std::vector<Form> Forms() {
  at::Generator gen = at::detail::createCPUGenerator(29);
  at::Tensor bin_t = at::randint(0, 2, {kRows}, gen, at::kLong);
  at::Tensor bin_p = at::rand({kRows}, gen, at::kFloat);
  at::Tensor bin_t2 = at::randint(0, 2, {kRows, 2}, gen, at::kLong);
  at::Tensor bin_p2 = at::rand({kRows, 2}, gen, at::kFloat);
  at::Tensor mc_t = at::randint(0, 4, {kRows}, gen, at::kLong);
  at::Tensor mc_p = at::randn({kRows, 4}, gen, at::kFloat);
  at::Tensor mc_t2 = at::randint(0, 3, {kRows, 2}, gen, at::kLong);
  at::Tensor mc_p2 = at::where(at::rand({kRows, 2}, gen) < 0.7, mc_t2, at::randint(0, 3, {kRows, 2}, gen, at::kLong));
  at::Tensor ml_t = at::randint(0, 2, {kRows, 3}, gen, at::kLong);
  at::Tensor ml_p = at::rand({kRows, 3}, gen, at::kFloat);
  at::Tensor reg_t = at::randn({kRows}, gen, at::kDouble) + 3.0;
  at::Tensor reg_p = reg_t + at::randn({kRows}, gen, at::kDouble);
  at::Tensor reg_t2 = at::randn({kRows, 2}, gen, at::kFloat);
  at::Tensor reg_p2 = reg_t2 + at::randn({kRows, 2}, gen, at::kFloat);
  const std::string stat[] = {"accuracy",         "precision",        "recall",      "f1_score",
                              "specificity",      "hamming_distance", "stat_scores", "jaccard_index",
                              "confusion_matrix", "matthews_corrcoef"};
  std::vector<std::string> binary, multiclass, multilabel;
  for (const std::string& s : stat) {
    binary.push_back("binary_" + s);
    multiclass.push_back(absl::StrCat("multiclass_", s, "(num_classes=4)"));
    multilabel.push_back(absl::StrCat("multilabel_", s, "(num_labels=3)"));
  }
  binary.push_back("binary_fbeta_score(beta=0.5)");
  binary.push_back("binary_cohen_kappa");
  binary.push_back("binary_accuracy(ignore_index=0)");
  binary.push_back("binary_hinge_loss");
  binary.push_back("binary_hinge_loss(squared=true)");
  binary.push_back("binary_calibration_error(n_bins=5)");
  binary.push_back("binary_calibration_error(n_bins=7, norm=max)");
  for (const char* thresholds : {"11", "[0.1, 0.4, 0.5, 0.9]", "exact16"}) {
    binary.push_back(absl::StrCat("binary_auroc(thresholds=", thresholds, ")"));
    binary.push_back(absl::StrCat("binary_average_precision(thresholds=", thresholds, ")"));
  }
  binary.push_back("binary_auroc");
  binary.push_back("binary_average_precision");
  binary.push_back("binary_roc(thresholds=11)");
  binary.push_back("binary_roc(thresholds=exact16)");
  binary.push_back("binary_precision_recall_curve(thresholds=[0.1, 0.4, 0.5, 0.9])");
  binary.push_back("binary_recall_at_fixed_precision(min_precision=0.5, thresholds=11)");
  binary.push_back("binary_specificity_at_sensitivity(min_sensitivity=0.5, thresholds=11)");
  multiclass.push_back("multiclass_auroc(num_classes=4, thresholds=11)");
  multiclass.push_back("multiclass_average_precision(num_classes=4, thresholds=exact16, average=weighted)");
  multiclass.push_back("multiclass_roc(num_classes=4, thresholds=5)");
  multiclass.push_back("multiclass_precision_recall_curve(num_classes=4, thresholds=exact16, average=none)");
  multiclass.push_back("multiclass_precision_at_fixed_recall(num_classes=4, min_recall=0.5, thresholds=11)");
  multilabel.push_back("multilabel_auroc(num_labels=3, thresholds=11, average=micro)");
  multilabel.push_back("multilabel_average_precision(num_labels=3, thresholds=exact16)");
  multilabel.push_back("multilabel_roc(num_labels=3, thresholds=7)");
  // The exact (cat) forms keep each row's weight beside it.
  for (const char* exact : {"binary_auroc", "binary_average_precision", "binary_roc", "binary_precision_recall_curve",
                            "binary_recall_at_fixed_precision(min_precision=0.5)",
                            "binary_sensitivity_at_specificity(min_specificity=0.5)"}) {
    binary.push_back(exact);
  }
  multiclass.push_back("multiclass_auroc(num_classes=4)");
  multiclass.push_back("multiclass_average_precision(num_classes=4, average=weighted)");
  multiclass.push_back("multiclass_roc(num_classes=4, average=macro)");
  multiclass.push_back("multiclass_precision_at_fixed_recall(num_classes=4, min_recall=0.5)");
  multilabel.push_back("multilabel_auroc(num_labels=3, average=micro)");
  multilabel.push_back("multilabel_average_precision(num_labels=3, average=none)");
  multilabel.push_back("multilabel_precision_recall_curve(num_labels=3)");
  multilabel.push_back("multilabel_specificity_at_sensitivity(num_labels=3, min_sensitivity=0.5)");
  multiclass.push_back("multiclass_cohen_kappa(num_classes=4, weights=quadratic)");
  multiclass.push_back("multiclass_precision(num_classes=4, average=weighted)");
  multiclass.push_back("multiclass_recall(num_classes=4, average=none)");
  multiclass.push_back("multiclass_accuracy(num_classes=4, average=micro)");
  multiclass.push_back("multiclass_f1_score(num_classes=4, ignore_index=2)");
  multiclass.push_back("multiclass_hinge_loss(num_classes=4)");
  multiclass.push_back("multiclass_hinge_loss(num_classes=4, multiclass_mode=one-vs-all, squared=true)");
  multiclass.push_back("multiclass_calibration_error(num_classes=4, n_bins=6, norm=l2)");
  multilabel.push_back("multilabel_exact_match(num_labels=3)");
  multilabel.push_back("multilabel_f1_score(num_labels=3, average=micro)");
  return {
      {binary, {{"preds", bin_p}, {"target", bin_t}}},
      {{"binary_accuracy", "binary_auroc(thresholds=9)", "binary_average_precision(thresholds=exact16)",
        "binary_hinge_loss", "binary_calibration_error", "binary_f1_score"},
       {{"preds", bin_p2}, {"target", bin_t2}}},
      {multiclass, {{"preds", mc_p}, {"target", mc_t}}},
      {{"multiclass_accuracy(num_classes=4)", "multiclass_f1_score(num_classes=4, average=weighted)",
        "multiclass_confusion_matrix(num_classes=4, ignore_index=1)"},
       {{"preds", mc_t.flip(0)}, {"target", mc_t}}},
      {{"multiclass_accuracy(num_classes=40)", "multiclass_recall(num_classes=40, average=micro)"},
       {{"preds", at::randn({kRows, 40}, gen, at::kFloat)}, {"target", at::randint(0, 40, {kRows}, gen, at::kLong)}}},
      {{"multiclass_exact_match(num_classes=3)", "multiclass_accuracy(num_classes=3)"},
       {{"preds", mc_p2}, {"target", mc_t2}}},
      {multilabel, {{"preds", ml_p}, {"target", ml_t}}},
      {{"mean_squared_error", "mean_squared_error(squared=false)", "mean_absolute_error",
        "mean_absolute_percentage_error", "r2_score", "explained_variance"},
       {{"preds", reg_p}, {"target", reg_t}}},
      {{"mean_squared_error(num_outputs=2)", "mean_absolute_error", "mean_absolute_error(num_outputs=2)",
        "r2_score(multioutput=raw_values)", "explained_variance(multioutput=variance_weighted)"},
       {{"preds", reg_p2}, {"target", reg_t2}}},
      {{"sum", "mean"}, {{"value", reg_t}}},
  };
}

absl::StatusOr<std::vector<EvalResult>> Eval(const std::vector<std::string>& specs, const NamedTensors& in) {
  return Evaluate(specs, in, EvalOptions{});
}

// Repeated repeats row i of every input w[i] times.
NamedTensors Repeated(const NamedTensors& inputs, const at::Tensor& w) {
  NamedTensors out;
  for (const auto& [name, t] : inputs) out.emplace_back(name, t.repeat_interleave(w, 0));
  return out;
}

void ExpectSameTree(const ResultTree& got, const ResultTree& want, const std::string& what) {
  ASSERT_EQ(got.parts.size(), want.parts.size()) << what;
  if (!got.is_leaf()) {
    for (size_t i = 0; i < got.parts.size(); ++i) ExpectSameTree(got.parts[i], want.parts[i], what);
    return;
  }
  at::Tensor g = got.tensor.to(at::kDouble), e = want.tensor.to(at::kDouble);
  ASSERT_EQ(g.sizes(), e.sizes()) << what;
  EXPECT_TRUE(at::allclose(g, e, 1e-9, 1e-12, /*equal_nan=*/true)) << what << "\n got " << g << "\n want " << e;
}

// Verifies that integer weights are repeated rows: the weighted value (in one
// update and in batches of 5) equals the unweighted value on each row
// repeated w times, weights 0 (a dropped row) to 3.
TEST(WeightsTest, IntegerWeightsAreRepeatedRows) {
  at::Generator gen = at::detail::createCPUGenerator(31);
  at::Tensor w = at::randint(0, 4, {kRows}, gen, at::kLong);
  w[0] = 0;
  w[1] = 3;
  for (const Form& form : Forms()) {
    NamedTensors weighted = form.inputs;
    weighted.emplace_back("weight", w.to(at::kFloat));
    auto repeated = Eval(form.specs, Repeated(form.inputs, w));
    ASSERT_TRUE(repeated.ok()) << repeated.status();
    for (int64_t batch : {0, 5}) {
      EvalOptions opts;
      opts.batch_size = batch;
      auto got = Evaluate(form.specs, weighted, opts);
      ASSERT_TRUE(got.ok()) << form.specs[0] << ": " << got.status();
      ASSERT_EQ(got->size(), repeated->size());
      for (size_t i = 0; i < got->size(); ++i) {
        ExpectSameTree((*got)[i].result, (*repeated)[i].result, absl::StrCat((*got)[i].spec, " batch ", batch));
      }
    }
  }
}

// Verifies that fractional weights scale: weights times 4 give the same
// value (every metric is a ratio of weighted counts), and that a weight of
// float64 or float32 (or an integer dtype) is read alike.
TEST(WeightsTest, ScaledWeightsGiveTheSameValue) {
  at::Generator gen = at::detail::createCPUGenerator(37);
  // float32 values, so that the float32 copy below is the same weights.
  at::Tensor w = (at::rand({kRows}, gen, at::kDouble) * 3.0).to(at::kFloat).to(at::kDouble);
  for (const Form& form : Forms()) {
    if (form.specs[0] == "sum") continue;  // a weighted sum scales
    NamedTensors a = form.inputs, b = form.inputs;
    a.emplace_back("weight", w);
    b.emplace_back("weight", (w * 4.0).to(at::kFloat));
    auto ra = Eval(form.specs, a);
    auto rb = Eval(form.specs, b);
    ASSERT_TRUE(ra.ok() && rb.ok()) << form.specs[0];
    for (size_t i = 0; i < ra->size(); ++i) {
      const std::string& spec = (*ra)[i].spec;
      if (spec.find("confusion_matrix") != std::string::npos || spec.find("stat_scores") != std::string::npos) {
        continue;  // counts, which scale
      }
      ExpectSameTree((*ra)[i].result, (*rb)[i].result, spec);
    }
  }
}

// Verifies that a program without `weight` is the one it always was (int64
// counts from the fused kernels) and that `weight` makes float64 sums in the
// same fused kernel, narrowed to the same marginals.
TEST(WeightsTest, UnweightedProgramsKeepTheirStates) {
  const std::string spec = "multiclass_accuracy(num_classes=4)";
  NamedTensors in = {{"preds", at::randn({8, 4})}, {"target", at::randint(0, 4, {8}, at::kLong)}};
  InspectOptions opts;
  auto plain = Inspect({spec}, in, opts);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_THAT(*plain, HasSubstr("confmat : i64[3,4]"));
  EXPECT_THAT(*plain, HasSubstr("mc_marginals(%preds, %target)"));
  EXPECT_THAT(*plain, ::testing::Not(HasSubstr("weight")));
  in.emplace_back("weight", at::ones({8}));
  auto weighted = Inspect({spec}, in, opts);
  ASSERT_TRUE(weighted.ok()) << weighted.status();
  // The same fused kernel, narrowed alike, summing weights.
  EXPECT_THAT(*weighted, HasSubstr("confmat : f64[3,4]"));
  EXPECT_THAT(*weighted, HasSubstr("mc_marginals(%preds, %target, %"));
}

// Verifies the refusals: a collection weighting some metrics but not others,
// a metric with no weighted form alone, a weight that is not one per row,
// configurations without a weighted form, and bad weight values (deferred:
// Compute fails naming the input).
TEST(WeightsTest, RefusalsNameTheMetricAndTheInput) {
  NamedTensors in = {
      {"preds", at::rand({6})}, {"target", at::randint(0, 2, {6}, at::kLong)}, {"weight", at::ones({6})}};
  auto mixed = Eval({"binary_accuracy", "pearson_corrcoef"}, in);
  ASSERT_FALSE(mixed.ok());
  EXPECT_THAT(mixed.status().message(), HasSubstr("pearson_corrcoef"));
  EXPECT_THAT(mixed.status().message(), HasSubstr("'weight'"));
  EXPECT_THAT(mixed.status().message(), HasSubstr("binary_accuracy"));

  // max and min have no weighted meaning: a weighted collection may hold them.
  auto extrema = Eval({"mean", "max", "min"}, {{"value", at::rand({6})}, {"weight", at::rand({6})}});
  EXPECT_TRUE(extrema.ok()) << extrema.status();

  auto alone = Eval({"pearson_corrcoef"}, in);
  ASSERT_FALSE(alone.ok());
  EXPECT_THAT(alone.status().message(), HasSubstr("input 'weight' is read by no metric"));

  NamedTensors rows2 = in;
  rows2[2].second = at::ones({6, 2});
  auto shape = Eval({"binary_accuracy"}, rows2);
  ASSERT_FALSE(shape.ok());
  EXPECT_THAT(shape.status().message(), HasSubstr("binary_accuracy: weight: expected one weight per row"));

  NamedTensors mc = {
      {"preds", at::randn({6, 3, 2})}, {"target", at::randint(0, 3, {6, 2}, at::kLong)}, {"weight", at::ones({6})}};
  auto samplewise = Eval({"multiclass_accuracy(num_classes=3, multidim_average=samplewise)"}, mc);
  ASSERT_FALSE(samplewise.ok());
  EXPECT_THAT(samplewise.status().message(), HasSubstr("weight: weights are not supported with multidim_average"));
  auto topk = Eval({"multiclass_accuracy(num_classes=3, top_k=2)"}, mc);
  ASSERT_FALSE(topk.ok());
  EXPECT_THAT(topk.status().message(), HasSubstr("top_k > 1"));
  auto partial = Eval({"binary_auroc(max_fpr=0.5)"}, in);
  ASSERT_FALSE(partial.ok());
  EXPECT_THAT(partial.status().message(),
              HasSubstr("binary_auroc: weight: the partial AUC (max_fpr) has no weighted form"));

  for (double bad : {-1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    NamedTensors b = in;
    b[2].second = at::ones({6}, at::kDouble);
    b[2].second[4] = bad;
    auto r = Eval({"binary_f1_score"}, b);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_THAT(r.status().message(), HasSubstr("weight"));
    EXPECT_THAT(r.status().message(), HasSubstr("1 negative, NaN or infinite weights"));
  }
  // Zero weights are allowed; all-zero weights give what no rows give.
  NamedTensors zero = in;
  zero[2].second = at::zeros({6});
  auto zacc = Eval({"binary_accuracy"}, zero);
  ASSERT_TRUE(zacc.ok()) << zacc.status();
  auto none = Eval({"binary_accuracy"}, {{"preds", at::rand({0})}, {"target", at::zeros({0}, at::kLong)}});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(at::equal((*zacc)[0].value, (*none)[0].value) ||
              (at::isnan((*zacc)[0].value).item<bool>() && at::isnan((*none)[0].value).item<bool>()));
}

// Verifies the retrieval metrics' query weights: a query weighing k (every
// row of it carries k) counts as k copies of the query under new ids, in one
// update and in batches; weight 0 drops the query; the rows of a query may
// lie anywhere in the input.
TEST(WeightsTest, RetrievalQueryWeightsAreRepeatedQueries) {
  at::Generator gen = at::detail::createCPUGenerator(41);
  const int64_t queries = 9, rows = 60;
  at::Tensor idx = at::randint(0, queries, {rows}, gen, at::kLong);
  at::Tensor preds = at::round(at::rand({rows}, gen, at::kFloat) * 10) / 10;  // ties
  at::Tensor target = at::randint(0, 2, {rows}, gen, at::kLong);
  at::Tensor per_query = at::randint(0, 4, {queries}, gen, at::kLong);
  per_query[0] = 0;
  per_query[1] = 3;
  // The repeated input: copy c of query q under id q + queries * c.
  std::vector<at::Tensor> ri, rp, rt;
  for (int64_t c = 0; c < 3; ++c) {
    at::Tensor keep = per_query.index_select(0, idx) > c;
    ri.push_back(idx.masked_select(keep) + queries * c);
    rp.push_back(preds.masked_select(keep));
    rt.push_back(target.masked_select(keep));
  }
  NamedTensors repeated = {{"preds", at::cat(rp)}, {"target", at::cat(rt)}, {"indexes", at::cat(ri)}};
  NamedTensors weighted = {{"preds", preds},
                           {"target", target},
                           {"indexes", idx},
                           {"weight", per_query.index_select(0, idx).to(at::kDouble)}};
  std::vector<std::string> specs;
  for (const char* m : {"recall", "precision", "reciprocal_rank", "hit_rate", "average_precision", "r_precision",
                        "fall_out", "normalized_dcg", "auroc"}) {
    specs.push_back(absl::StrCat("retrieval_", m));
  }
  specs.push_back("retrieval_precision(top_k=2, adaptive_k=true)");
  specs.push_back("retrieval_recall(top_k=3, empty_target_action=skip)");
  auto want = Eval(specs, repeated);
  ASSERT_TRUE(want.ok()) << want.status();
  for (int64_t batch : {0, 7}) {
    EvalOptions opts;
    opts.batch_size = batch;
    auto got = Evaluate(specs, weighted, opts);
    ASSERT_TRUE(got.ok()) << got.status();
    for (size_t i = 0; i < specs.size(); ++i) {
      ExpectSameTree((*got)[i].result, (*want)[i].result, absl::StrCat(specs[i], " batch ", batch));
    }
  }
  auto median = Eval({"retrieval_recall(aggregation=median)"}, weighted);
  ASSERT_FALSE(median.ok());
  EXPECT_THAT(median.status().message(), HasSubstr("retrieval_recall: weight: weights need aggregation=mean"));
}

}  // namespace
}  // namespace tally
