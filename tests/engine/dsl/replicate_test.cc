// Unit tests of dsl::Replicate's refusals on metrics written here: a row
// reduction whose values mix rows (each row gathering its cluster's batch
// mean with `take`) has no per-replica form, and slices and bootstraps of it
// are refused with the argument named, never computed from the whole
// batch's statistics.
#include <string>

#include "absl/status/statusor.h"
#include "engine/dsl/builder.h"
#include "engine/dsl/metric.h"
#include "engine/dsl/replicate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testlib/status_matchers.h"

namespace tally {
namespace {

using ::tally::dsl::DType;
using ::tally::dsl::MetricBuilder;
using ::tally::dsl::ReplicaSpec;
using ::tally::dsl::Signature;
using ::tally::ops::Expr;
using ::tally::testing::StatusIs;
using ::testing::HasSubstr;

constexpr int64_t kClusters = 3;
const Signature kSig = {{"labels", DType::kInt64, {8}}, {"x", DType::kFloat64, {8}}, {"groups", DType::kInt64, {8}}};

// Within-cluster squared deviations, centred on each cluster's batch mean
// gathered per row (take: the rows mix).
absl::StatusOr<dsl::Metric> CentredByTake(bool by_weight) {
  MetricBuilder b("centred", kSig, ir::Device{});
  Expr labels = b.Input("labels");
  Expr x = b.Input("x");
  Expr mean = ops::Histogram(labels, x, kClusters) / ops::Cast(ops::Histogram(labels, kClusters), DType::kFloat64);
  Expr dev = x - ops::Take(mean, labels);
  auto ss = b.AddState("ss", DType::kFloat64, {by_weight ? kClusters : 1}, ir::Reducer::kSum);
  b.Accumulate(ss, by_weight ? ops::Histogram(labels, dev * dev, kClusters) : ops::Reshape(ops::Sum(dev * dev), {1}));
  b.Output(ops::Sum(b.Read(ss)));
  return b.Finish();
}

ReplicaSpec Spec(ReplicaSpec::Kind kind) {
  ReplicaSpec s;
  s.kind = kind;
  s.replicas = 4;
  s.key_input = kind == ReplicaSpec::Kind::kGroups ? "groups" : "row_id";
  s.arg_name = kind == ReplicaSpec::Kind::kGroups ? "num_groups" : "num_bootstraps";
  return s;
}

// Verifies the refusal for a histogram weighted by such values and for a
// sum of them, as slices and as a bootstrap.
TEST(ReplicateTest, RefusesRowReductionsOfValuesThatMixRows) {
  for (bool by_weight : {true, false}) {
    for (ReplicaSpec::Kind kind : {ReplicaSpec::Kind::kGroups, ReplicaSpec::Kind::kBootstrap}) {
      SCOPED_TRACE(by_weight ? "histogram" : "sum");
      auto m = CentredByTake(by_weight);
      ASSERT_TRUE(m.ok()) << m.status();
      ReplicaSpec spec = Spec(kind);
      EXPECT_THAT(
          dsl::Replicate(std::move(*m), spec, kSig, ir::Device{}).status(),
          StatusIs(absl::StatusCode::kUnimplemented, HasSubstr(absl::StrCat(spec.arg_name, " is not supported here"))));
    }
  }
}

// Verifies that the same metric centred on the batch's one mean (a batch
// statistic every row reads alike) still slices.
TEST(ReplicateTest, SlicesValuesCentredOnABatchStatistic) {
  MetricBuilder b("centred", kSig, ir::Device{});
  Expr labels = b.Input("labels");
  Expr x = b.Input("x");
  Expr dev = x - ops::Sum(x) / ops::Cast(ops::Size(x, 0), DType::kFloat64);
  auto ss = b.AddState("ss", DType::kFloat64, {kClusters}, ir::Reducer::kSum);
  b.Accumulate(ss, ops::Histogram(labels, dev * dev, kClusters));
  b.Output(ops::Sum(b.Read(ss)));
  auto m = b.Finish();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(dsl::Replicate(std::move(*m), Spec(ReplicaSpec::Kind::kGroups), kSig, ir::Device{}).ok());
}

}  // namespace
}  // namespace tally
