#include "tests/engine/session_testing.h"

#include <ATen/ATen.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "gtest/gtest.h"
#include "tests/testlib/status_matchers.h"

namespace tally::testing {

NamedTensors Rows(int64_t n, int64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return {{"preds", at::randint(0, 3, {n}, gen, at::kLong)},
          {"target", at::randint(0, 3, {n}, gen, at::kLong)},
          {"value", at::randint(-50, 50, {n}, gen, at::kDouble)}};
}

NamedTensors Slice(const NamedTensors& rows, int64_t start, int64_t len) {
  NamedTensors out;
  for (const auto& [name, t] : rows) out.emplace_back(name, t.narrow(0, start, len));
  return out;
}

NamedTensors Only(const NamedTensors& rows, const std::vector<std::string>& names) {
  NamedTensors out;
  for (const auto& [name, t] : rows)
    if (std::find(names.begin(), names.end(), name) != names.end()) out.emplace_back(name, t);
  return out;
}

NamedTensors CatRows(const std::vector<NamedTensors>& parts) {
  NamedTensors all;
  if (parts.empty()) return all;
  for (const auto& input : parts[0]) {
    std::vector<at::Tensor> pieces;
    for (const NamedTensors& part : parts)
      for (const auto& [name, t] : part)
        if (name == input.first) pieces.push_back(t);
    all.emplace_back(input.first, at::cat(pieces));
  }
  return all;
}

dsl::Signature Sig() { return *tally::SignatureOf(Rows(4, 0)); }

std::vector<MetricSetSpec> TwoSets() { return {{"cls", {kAcc, kConfmat, kF1}}, {"agg", {"sum", "mean"}}}; }

std::vector<MetricValue> Reference(const std::vector<std::string>& specs, const NamedTensors& rows) {
  auto s = tally::CreateDefaultSession(specs, Sig());
  EXPECT_THAT(s, IsOk());
  if (!s.ok()) return {};
  std::vector<std::string> names = {"preds", "target"};
  if (specs[0] == "sum") names = {"value"};
  EXPECT_THAT((*s)->Update(Only(rows, names)), IsOk());
  auto v = (*s)->Compute();
  EXPECT_THAT(v, IsOk());
  return v.ok() ? *v : std::vector<MetricValue>();
}

void ExpectSameValues(const std::vector<MetricValue>& a, const std::vector<MetricValue>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].spec);
    ASSERT_TRUE(a[i].value.is_leaf() && b[i].value.is_leaf());
    EXPECT_TRUE(at::equal(a[i].value.tensor, b[i].value.tensor)) << a[i].value.tensor << " vs " << b[i].value.tensor;
  }
}

at::Tensor ValueOf(const std::vector<MetricValue>& values, absl::string_view spec) {
  for (const auto& v : values)
    if (v.spec == spec) return v.value.tensor;
  ADD_FAILURE() << "no " << spec;
  return at::Tensor();
}

double Sum(const std::vector<MetricValue>& values) { return values[0].value.tensor.item<double>(); }

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir ? dir : "/tmp", "/", name, ".", getpid());
}

}  // namespace tally::testing
