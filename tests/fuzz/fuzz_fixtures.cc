#include "tests/fuzz/fuzz_fixtures.h"

#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "engine/ir/types.h"
#include "engine/runtime/compiler.h"
#include "metrics/registry.h"
#include "metrics/spec.h"

namespace tally::fuzz {
namespace {

// A fixture that cannot be built is a broken target, not a finding.
template <typename T>
T OrDie(absl::StatusOr<T> v) {
  if (!v.ok()) {
    std::fprintf(stderr, "fuzz fixture: %s\n", std::string(v.status().message()).c_str());
    std::abort();
  }
  return *std::move(v);
}

}  // namespace

std::unique_ptr<Program> CompileForFuzz(const std::vector<std::string>& specs, const dsl::Signature& sig) {
  std::vector<dsl::CollectionEntry> entries;
  for (const std::string& text : specs) {
    metrics::MetricSpec spec = OrDie(metrics::ParseMetricSpec(text));
    entries.push_back({spec.name, OrDie(metrics::BuildMetric(spec, sig, ir::Device{}))});
  }
  return OrDie(Compile(entries, CompileOptions{}));
}

const std::vector<std::unique_ptr<Program>>& StatePrograms() {
  static const auto* programs = [] {
    auto* out = new std::vector<std::unique_ptr<Program>>;
    out->push_back(CompileForFuzz({"binary_accuracy", "binary_auroc"},
                                  {{"preds", ir::DType::kFloat32, {4}}, {"target", ir::DType::kInt64, {4}}}));
    out->push_back(CompileForFuzz({"multiclass_accuracy(num_classes=3)", "multiclass_auroc(num_classes=3)"},
                                  {{"preds", ir::DType::kFloat32, {4, 3}}, {"target", ir::DType::kInt64, {4}}}));
    return out;
  }();
  return *programs;
}

std::vector<NamedTensors> StateProgramRows() {
  return {
      {{"preds", at::tensor({0.1f, 0.8f, 0.4f, 0.6f})}, {"target", at::tensor({0, 1, 1, 0}, at::kLong)}},
      {{"preds", at::tensor({0.7f, 0.2f, 0.1f, 0.1f, 0.3f, 0.6f, 0.2f, 0.5f, 0.3f, 0.3f, 0.3f, 0.4f}).reshape({4, 3})},
       {"target", at::tensor({0, 2, 1, 2}, at::kLong)}},
  };
}

std::unique_ptr<Session> NewCheckpointSession() {
  SessionOptions o;
  o.windows.push_back({"last4", WindowSpec::Kind::kUpdates, 4, 2});
  o.windows.push_back({"last10s", WindowSpec::Kind::kSeconds, 10, 2});
  const dsl::Signature sig = {
      {"preds", ir::DType::kInt64, {4}}, {"target", ir::DType::kInt64, {4}}, {"value", ir::DType::kFloat64, {4}}};
  return OrDie(tally::CreateSession({{"cls", {"multiclass_accuracy(num_classes=3)"}}, {"agg", {"sum"}}}, sig, o));
}

NamedTensors CheckpointSessionRows() {
  return {{"preds", at::tensor({0, 1, 2, 2}, at::kLong)},
          {"target", at::tensor({0, 1, 1, 2}, at::kLong)},
          {"value", at::tensor({1.0, 2.0, 3.0, 4.0}, at::kDouble)}};
}

}  // namespace tally::fuzz
