// Tests of the embedded demo data (`tally eval` without --input): every
// registered metric, with the arguments it requires, evaluates on the data
// set MakeDemoData picks for it.
#include "tools/tally/demo_data.h"

#include <string>

#include "api/tally.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "tests/testlib/random_inputs.h"

namespace tally::tools {
namespace {

TEST(DemoData, EveryMetricEvaluatesOnItsDemoData) {
  int checked = 0;
  for (const metrics::MetricInfo& m : metrics::AllMetrics()) {
    for (const std::string& spec : testing::SpecsFor(m)) {
      DemoData d = MakeDemoData({spec});
      auto r = Evaluate({spec}, d.inputs, EvalOptions{});
      EXPECT_TRUE(r.ok()) << spec << " on " << d.description << ": " << r.status();
      ++checked;
    }
  }
  EXPECT_GE(checked, static_cast<int>(metrics::AllMetrics().size()));
}

TEST(DemoData, SizesFollowTheSpecs) {
  // Verifies that num_classes / num_labels size the classification data.
  DemoData mc = MakeDemoData({"multiclass_recall(num_classes=7)"});
  ASSERT_EQ(mc.inputs.size(), 2u);
  EXPECT_EQ(mc.inputs[0].second.size(1), 7);
  DemoData ml = MakeDemoData({"f1_score(task=multilabel, num_labels=5)"});
  EXPECT_EQ(ml.inputs[0].second.size(1), 5);
  DemoData ret = MakeDemoData({"retrieval_auroc"});
  EXPECT_EQ(ret.inputs.size(), 3u);
  DemoData def = MakeDemoData({});
  EXPECT_EQ(def.inputs[0].second.size(1), 3);
  EXPECT_EQ(def.specs.size(), 3u);
}

}  // namespace
}  // namespace tally::tools
