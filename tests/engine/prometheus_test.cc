// Unit tests of the Prometheus text exposition (engine/serving/internal/prometheus.h): name
// checks, label escaping, value spelling, families and their samples, result
// trees, and the Session layout with its counters.
#include "engine/serving/internal/prometheus.h"

#include <ATen/ATen.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "engine/runtime/results.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testlib/status_matchers.h"

namespace tally::serving::internal {
namespace {

using ::tally::testing::IsOk;
using ::tally::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

// Verifies metric names follow [a-zA-Z_:][a-zA-Z0-9_:]*.
TEST(PrometheusNamesTest, MetricNames) {
  EXPECT_TRUE(IsValidMetricName("tally"));
  EXPECT_TRUE(IsValidMetricName("_x:y_9"));
  EXPECT_TRUE(IsValidMetricName(":a"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_FALSE(IsValidMetricName("9tally"));
  EXPECT_FALSE(IsValidMetricName("tally-metrics"));
  EXPECT_FALSE(IsValidMetricName("tally metric"));
  EXPECT_FALSE(IsValidMetricName("tally.metric"));
  EXPECT_FALSE(IsValidMetricName("caf\xc3\xa9"));
}

// Verifies label names follow [a-zA-Z_][a-zA-Z0-9_]* and refuse the reserved "__" prefix and colons.
TEST(PrometheusNamesTest, LabelNames) {
  EXPECT_TRUE(IsValidLabelName("set"));
  EXPECT_TRUE(IsValidLabelName("_class2"));
  EXPECT_FALSE(IsValidLabelName(""));
  EXPECT_FALSE(IsValidLabelName("__name__"));
  EXPECT_FALSE(IsValidLabelName("2class"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
  EXPECT_FALSE(IsValidLabelName("a-b"));
}

// Verifies label values escape backslash, double quote and newline, and nothing else.
TEST(PrometheusEscapeTest, LabelValues) {
  EXPECT_EQ(EscapeLabelValue("plain (x=1, y=2)"), "plain (x=1, y=2)");
  EXPECT_EQ(EscapeLabelValue("a\"b"), "a\\\"b");
  EXPECT_EQ(EscapeLabelValue("a\\b"), "a\\\\b");
  EXPECT_EQ(EscapeLabelValue("a\nb"), "a\\nb");
  EXPECT_EQ(EscapeLabelValue("\\\"\n"), "\\\\\\\"\\n");
  // A tab is legal in a label value and stays as it is.
  EXPECT_EQ(EscapeLabelValue("a\tb"), "a\tb");
}

// Verifies sample values: NaN, +Inf, -Inf, integers without a fraction, other doubles round-tripping.
TEST(PrometheusValueTest, FormatValue) {
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(0), "0");
  EXPECT_EQ(FormatValue(3), "3");
  EXPECT_EQ(FormatValue(-42), "-42");
  EXPECT_EQ(FormatValue(9007199254740991.0), "9007199254740991");  // 2^53 - 1
  EXPECT_EQ(FormatValue(0.5), "0.5");
  EXPECT_EQ(FormatValue(-0.25), "-0.25");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(1.0 / 3.0), "0.3333333333333333");
  // Shortest text that parses back to the same double.
  for (double v : {0.1, 2.0 / 3.0, 1e-300, 123456.789, 6.02214076e23}) {
    EXPECT_EQ(std::strtod(FormatValue(v).c_str(), nullptr), v) << FormatValue(v);
  }
}

// Verifies HELP/TYPE lines come per family in declaration order, each followed by its samples.
TEST(ExpositionTest, FamiliesAndSamples) {
  Exposition e("tally");
  e.Family("b_total", "counter", "Bees.");
  e.Family("a", "gauge", "Line one\nback\\slash \"quoted\"");
  e.Family("b_total", "gauge", "ignored: declared once");
  e.AddSample("a", {{"k", "v"}}, 1.5);
  e.AddSample("b_total", {}, 7);
  e.AddSample("a", {{"k", "w"}, {"j", "x"}}, 2);
  e.AddSample("unknown", {}, 1);  // no such family: dropped
  // HELP escapes backslash and newline but not quotes.
  EXPECT_EQ(e.Render(),
            "# HELP b_total Bees.\n"
            "# TYPE b_total counter\n"
            "b_total 7\n"
            "# HELP a Line one\\nback\\\\slash \"quoted\"\n"
            "# TYPE a gauge\n"
            "a{k=\"v\"} 1.5\n"
            "a{k=\"w\",j=\"x\"} 2\n");
}

// Verifies label values are escaped inside sample lines.
TEST(ExpositionTest, SampleLabelsEscaped) {
  Exposition e("tally");
  e.Family("m", "gauge", "h");
  e.AddSample("m", {{"metric", "f(a=\"x\\y\")\nz"}}, 0.25);
  EXPECT_EQ(e.Render(), "# HELP m h\n# TYPE m gauge\nm{metric=\"f(a=\\\"x\\\\y\\\")\\nz\"} 0.25\n");
}

// Verifies a scalar result is one sample, a vector one per class, a matrix one per index.
TEST(ExpositionTest, ResultShapes) {
  Exposition e("t");
  e.Family("m", "gauge", "h");
  const Labels base = {{"metric", "x"}};
  ASSERT_THAT(e.AddResult("m", base, ResultTree::Leaf(at::scalar_tensor(0.5, at::kDouble))), IsOk());
  ASSERT_THAT(e.AddResult("m", base, ResultTree::Leaf(at::tensor({1.f, 0.25f, 0.f}))), IsOk());
  ASSERT_THAT(e.AddResult("m", base, ResultTree::Leaf(at::tensor({3, 1, 0, 2}, at::kLong).reshape({2, 2}))), IsOk());
  EXPECT_EQ(e.Render(),
            "# HELP m h\n# TYPE m gauge\n"
            "m{metric=\"x\"} 0.5\n"
            "m{metric=\"x\",class=\"0\"} 1\n"
            "m{metric=\"x\",class=\"1\"} 0.25\n"
            "m{metric=\"x\",class=\"2\"} 0\n"
            "m{metric=\"x\",index=\"0,0\"} 3\n"
            "m{metric=\"x\",index=\"0,1\"} 1\n"
            "m{metric=\"x\",index=\"1,0\"} 0\n"
            "m{metric=\"x\",index=\"1,1\"} 2\n");
}

// Verifies a sliced metric's per-group values carry a `group` label (its
// leading axis, when it has num_groups elements), with the rest of the index
// after it; a part of another size (the overall value) keeps its labels.
TEST(ExpositionTest, GroupLabels) {
  EXPECT_EQ(GroupsOf("binary_accuracy(num_groups=3)"), 3);
  EXPECT_EQ(GroupsOf("binary_fairness(task=all, num_groups = 12, threshold=0.5)"), 12);
  EXPECT_EQ(GroupsOf("binary_accuracy"), 0);
  EXPECT_EQ(GroupsOf("binary_accuracy(num_groups_x=3)"), 0);
  Exposition e("t");
  e.Family("m", "gauge", "h");
  ResultTree tree;
  tree.parts.push_back(ResultTree::Leaf(at::tensor({0.5, 0.25, 1.0}, at::kDouble)));
  tree.parts.push_back(ResultTree::Leaf(at::scalar_tensor(0.6, at::kDouble)));
  ASSERT_THAT(e.AddResult("m", {{"metric", "a"}}, tree, 3), IsOk());
  ASSERT_THAT(
      e.AddResult("m", {{"metric", "r"}}, ResultTree::Leaf(at::tensor({1.0, 0.0, 0.5, 0.5}).reshape({2, 2})), 2),
      IsOk());
  EXPECT_EQ(e.Render(),
            "# HELP m h\n# TYPE m gauge\n"
            "m{metric=\"a\",part=\"0\",group=\"0\"} 0.5\n"
            "m{metric=\"a\",part=\"0\",group=\"1\"} 0.25\n"
            "m{metric=\"a\",part=\"0\",group=\"2\"} 1\n"
            "m{metric=\"a\",part=\"1\"} 0.6\n"
            "m{metric=\"r\",group=\"0\",class=\"0\"} 1\n"
            "m{metric=\"r\",group=\"0\",class=\"1\"} 0\n"
            "m{metric=\"r\",group=\"1\",class=\"0\"} 0.5\n"
            "m{metric=\"r\",group=\"1\",class=\"1\"} 0.5\n");
}

// Verifies non-finite tensor elements print as NaN, +Inf and -Inf.
TEST(ExpositionTest, NonFiniteElements) {
  Exposition e("t");
  e.Family("m", "gauge", "h");
  const float inf = std::numeric_limits<float>::infinity();
  ASSERT_THAT(e.AddResult("m", {}, ResultTree::Leaf(at::tensor({std::nanf(""), inf, -inf}))), IsOk());
  EXPECT_EQ(e.Render(),
            "# HELP m h\n# TYPE m gauge\n"
            "m{class=\"0\"} NaN\nm{class=\"1\"} +Inf\nm{class=\"2\"} -Inf\n");
}

// Verifies a tuple's parts get a `part` label with their path, and an empty part adds nothing.
TEST(ExpositionTest, TupleParts) {
  Exposition e("t");
  e.Family("m", "gauge", "h");
  ResultTree tree;
  tree.parts.push_back(ResultTree::Leaf(at::scalar_tensor(2.5, at::kDouble)));
  ResultTree inner;
  inner.parts.push_back(ResultTree::Leaf(at::tensor({4.f})));
  inner.parts.push_back(ResultTree::Leaf(at::empty({0}, at::kFloat)));
  tree.parts.push_back(inner);
  ASSERT_THAT(e.AddResult("m", {{"set", "s"}}, tree), IsOk());
  EXPECT_EQ(e.Render(),
            "# HELP m h\n# TYPE m gauge\n"
            "m{set=\"s\",part=\"0\"} 2.5\n"
            "m{set=\"s\",part=\"1/0\",class=\"0\"} 4\n");
}

// Verifies AddResult refuses an undeclared family and adds nothing.
TEST(ExpositionTest, UnknownFamily) {
  Exposition e("t");
  e.Family("m", "gauge", "h");
  EXPECT_THAT(e.AddResult("other", {}, ResultTree::Leaf(at::scalar_tensor(1.0))),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("no family other")));
  EXPECT_EQ(e.Render(), "# HELP m h\n# TYPE m gauge\n");
}

// Verifies the Session layout: gauges, optional window gauges and four counters per set.
TEST(SessionExpositionTest, Layout) {
  SessionExposition s("tally", /*windows=*/true);
  ASSERT_THAT(s.AddMetric("default", "mean", ResultTree::Leaf(at::scalar_tensor(0.75, at::kDouble))), IsOk());
  ASSERT_THAT(s.AddWindowMetric("default", "last_10", "mean", ResultTree::Leaf(at::scalar_tensor(1.0, at::kDouble))),
              IsOk());
  s.AddCounters("default", 3, 120, 1, 0);
  s.AddCounters("eval", 9007199254740991, 0, 0, 2);
  EXPECT_EQ(s.Render(),
            "# HELP tally_metric Metric value over every update (one sample per output element).\n"
            "# TYPE tally_metric gauge\n"
            "tally_metric{set=\"default\",metric=\"mean\"} 0.75\n"
            "# HELP tally_window_metric Metric value over a window of recent updates.\n"
            "# TYPE tally_window_metric gauge\n"
            "tally_window_metric{set=\"default\",window=\"last_10\",metric=\"mean\"} 1\n"
            "# HELP tally_updates_total Accepted updates.\n"
            "# TYPE tally_updates_total counter\n"
            "tally_updates_total{set=\"default\"} 3\n"
            "tally_updates_total{set=\"eval\"} 9007199254740991\n"
            "# HELP tally_rows_total Rows of accepted updates.\n"
            "# TYPE tally_rows_total counter\n"
            "tally_rows_total{set=\"default\"} 120\n"
            "tally_rows_total{set=\"eval\"} 0\n"
            "# HELP tally_rejected_updates_total Rejected updates (bad input).\n"
            "# TYPE tally_rejected_updates_total counter\n"
            "tally_rejected_updates_total{set=\"default\"} 1\n"
            "tally_rejected_updates_total{set=\"eval\"} 0\n"
            "# HELP tally_compute_errors_total Computes that failed (e.g. a deferred value check).\n"
            "# TYPE tally_compute_errors_total counter\n"
            "tally_compute_errors_total{set=\"default\"} 0\n"
            "tally_compute_errors_total{set=\"eval\"} 2\n");
}

// Verifies a session without windows has no window family, and AddWindowMetric then fails.
TEST(SessionExpositionTest, NoWindows) {
  SessionExposition s("p", /*windows=*/false);
  EXPECT_THAT(s.AddWindowMetric("default", "w", "mean", ResultTree::Leaf(at::scalar_tensor(1.0))), Not(IsOk()));
  ASSERT_THAT(s.AddMetric("a\"b", "acc(num_classes=3)", ResultTree::Leaf(at::tensor({0.5, 1.0}, at::kDouble))), IsOk());
  const std::string text = s.Render();
  EXPECT_THAT(text, Not(HasSubstr("window")));
  EXPECT_THAT(text, HasSubstr("p_metric{set=\"a\\\"b\",metric=\"acc(num_classes=3)\",class=\"0\"} 0.5\n"
                              "p_metric{set=\"a\\\"b\",metric=\"acc(num_classes=3)\",class=\"1\"} 1\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE p_updates_total counter\n"));
}

}  // namespace
}  // namespace tally::serving::internal
