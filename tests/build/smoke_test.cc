// Build smoke test: ATen, Abseil and nlohmann/json from Debian packages
// compile, link and run under the offline Bazel setup.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"

namespace {

absl::StatusOr<int> ParsePositive(int v) {
  if (v <= 0) return absl::InvalidArgumentError(absl::StrCat("not positive: ", v));
  return v;
}

TEST(BuildSmoke, AtenTensorSum) {
  at::Tensor t = at::arange(1, 11, at::kDouble);  // 1..10
  EXPECT_DOUBLE_EQ(t.sum().item<double>(), 55.0);
  at::Tensor ones = at::ones({4, 5}, at::kFloat);
  EXPECT_FLOAT_EQ(ones.sum().item<float>(), 20.0f);
}

TEST(BuildSmoke, AbslStatusOrAndStrings) {
  absl::StatusOr<int> ok = ParsePositive(3);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 3);
  absl::StatusOr<int> bad = ParsePositive(-1);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "not positive: -1");

  EXPECT_EQ(absl::StrFormat("%d/%s/%.2f", 7, "x", 0.5), "7/x/0.50");
  std::vector<std::string> parts = absl::StrSplit("a,b,c", ',');
  EXPECT_EQ(absl::StrJoin(parts, "+"), "a+b+c");

  absl::Cord cord("hello ");
  cord.Append("world");
  EXPECT_EQ(std::string(cord), "hello world");
}

TEST(BuildSmoke, AbslContainersSyncTime) {
  absl::flat_hash_map<std::string, int> counts;
  absl::Mutex mu;
  {
    absl::MutexLock lock(&mu);
    counts["a"] += 2;
    counts["b"] += 1;
  }
  EXPECT_EQ(counts.size(), 2u);
  EXPECT_EQ(counts["a"], 2);
  const absl::Time t0 = absl::Now();
  EXPECT_GE(absl::Now() - t0, absl::ZeroDuration());
  EXPECT_EQ(absl::FormatDuration(absl::Milliseconds(1500)), "1.5s");
}

TEST(BuildSmoke, NlohmannJson) {
  nlohmann::json j = nlohmann::json::parse(R"({"metric": "accuracy", "value": 0.75})");
  EXPECT_EQ(j["metric"].get<std::string>(), "accuracy");
  EXPECT_DOUBLE_EQ(j["value"].get<double>(), 0.75);
  j["n"] = 3;
  EXPECT_EQ(nlohmann::json::parse(j.dump())["n"].get<int>(), 3);
}

}  // namespace
