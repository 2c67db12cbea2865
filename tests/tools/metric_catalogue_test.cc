// docs/metrics.md is what `tally list-metrics --format markdown` prints, and
// the catalogue describes the registry's metrics with TorchMetrics' defaults.
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/inputs.h"
#include "metrics/registry.h"
#include "tests/tools/cli_testing.h"

namespace tally {
namespace {

using ::testing::HasSubstr;

using ::tally::testing::ReadFile;

const metrics::MetricDoc* Find(const std::vector<metrics::MetricDoc>& docs, const std::string& name) {
  for (const auto& d : docs) {
    if (d.name == name) return &d;
  }
  return nullptr;
}

const metrics::ArgumentDoc* Arg(const metrics::MetricDoc& doc, const std::string& name) {
  for (const auto& a : doc.arguments) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

TEST(MetricCatalogue, CheckedInFileIsFresh) {
  testing::Invocation r = testing::RunTally({"list-metrics", "--format", "markdown"});
  ASSERT_EQ(r.exit_code, 0) << r;
  const std::string checked_in = ReadFile("docs/metrics.md");
  ASSERT_FALSE(checked_in.empty()) << "docs/metrics.md is missing from the runfiles";
  EXPECT_EQ(r.out, checked_in)
      << "docs/metrics.md is stale: run bazel-bin/tools/tally/tally list-metrics --format markdown > docs/metrics.md";
}

TEST(MetricCatalogue, EveryMetricHasARow) {
  const std::string md = metrics::CatalogueMarkdown(metrics::DescribeMetrics());
  for (const auto& m : metrics::AllMetrics()) {
    EXPECT_THAT(md, HasSubstr(absl::StrCat("| `", m.name, "` |"))) << m.name;
  }
}

TEST(MetricCatalogue, EveryInputIsOneACallerMayPass) {
  // Verifies that metrics/inputs.h lists every input a registered metric
  // reads: a name missing there would be refused before any metric saw it.
  for (const metrics::MetricInfo& m : metrics::AllMetrics()) {
    for (const std::string& input : m.inputs) EXPECT_TRUE(metrics::IsInputName(input)) << m.name << ": " << input;
  }
}

TEST(MetricCatalogue, RequiredArgumentsAndDefaults) {
  const auto docs = metrics::DescribeMetrics();
  const metrics::MetricDoc* acc = Find(docs, "multiclass_accuracy");
  ASSERT_NE(acc, nullptr);
  ASSERT_NE(Arg(*acc, "num_classes"), nullptr);
  EXPECT_TRUE(Arg(*acc, "num_classes")->required);
  EXPECT_EQ(Arg(*acc, "num_classes")->type, "int");
  // Read after the required argument: found only because the catalogue
  // fills num_classes in and builds again.
  ASSERT_NE(Arg(*acc, "average"), nullptr);
  EXPECT_EQ(Arg(*acc, "average")->default_text, "macro");
  EXPECT_THAT(Arg(*acc, "average")->type, HasSubstr("weighted"));
  ASSERT_NE(Arg(*acc, "top_k"), nullptr);
  EXPECT_EQ(Arg(*acc, "top_k")->default_text, "1");

  const metrics::MetricDoc* f = Find(docs, "binary_fbeta_score");
  ASSERT_NE(f, nullptr);
  ASSERT_NE(Arg(*f, "beta"), nullptr);
  EXPECT_TRUE(Arg(*f, "beta")->required);
  ASSERT_NE(Arg(*f, "threshold"), nullptr);
  EXPECT_EQ(Arg(*f, "threshold")->default_text, "0.5");
  EXPECT_FALSE(Arg(*f, "threshold")->required);

  const metrics::MetricDoc* rec = Find(docs, "retrieval_precision");
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ(rec->inputs, (std::vector<std::string>{"preds", "target", "indexes", "weight"}));
  ASSERT_NE(Arg(*rec, "empty_target_action"), nullptr);
  EXPECT_EQ(Arg(*rec, "empty_target_action")->default_text, "neg");

  const metrics::MetricDoc* wrapper = Find(docs, "accuracy");
  ASSERT_NE(wrapper, nullptr);
  ASSERT_NE(Arg(*wrapper, "task"), nullptr);
  EXPECT_TRUE(Arg(*wrapper, "task")->required);
  EXPECT_NE(Arg(*wrapper, "num_classes"), nullptr);
}

TEST(MetricCatalogue, SpecArgsRecordsWhatBuildersAsk) {
  auto spec = metrics::ParseMetricSpec("m(a=3)");
  ASSERT_TRUE(spec.ok());
  metrics::SpecArgs args(*spec);
  ASSERT_TRUE(args.GetInt("a", 7).ok());
  EXPECT_FALSE(args.GetDouble("b").ok());
  ASSERT_TRUE(args.GetEnum("c", {"x", "y"}, "y").ok());
  ASSERT_TRUE(args.GetOptionalInt("d").ok());
  ASSERT_TRUE(args.GetInt("a", 9).ok());  // asked again: recorded once
  const auto& r = args.requests();
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r[0].name, "a");
  EXPECT_EQ(r[0].type, "int");
  EXPECT_EQ(r[0].default_text, "7");
  EXPECT_FALSE(r[0].required);
  EXPECT_EQ(r[1].name, "b");
  EXPECT_EQ(r[1].type, "float");
  EXPECT_TRUE(r[1].required);
  EXPECT_EQ(r[2].type, "one of x, y");
  EXPECT_EQ(r[2].default_text, "y");
  EXPECT_EQ(r[3].default_text, "none");
}

TEST(MetricCatalogue, UnknownFormatIsOneLine) {
  testing::Invocation r = testing::RunTally({"list-metrics", "--format", "html"});
  EXPECT_TRUE(testing::OneCleanErrorLine(r, {"--format", "markdown"}));
}

}  // namespace
}  // namespace tally
