#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "engine/ir/types.h"
#include "metrics/registry.h"
#include "metrics/spec.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/targets.h"

namespace tally::fuzz {
namespace {

// Binary and retrieval, multiclass, and regression inputs: between them every
// registered metric has a signature it accepts.
const std::vector<dsl::Signature>& Signatures() {
  static const auto* sigs = new std::vector<dsl::Signature>{
      {{"preds", ir::DType::kFloat32, {8}}, {"target", ir::DType::kInt64, {8}}, {"indexes", ir::DType::kInt64, {8}}},
      {{"preds", ir::DType::kFloat32, {8, 3}}, {"target", ir::DType::kInt64, {8}}},
      {{"preds", ir::DType::kFloat32, {8}}, {"target", ir::DType::kFloat32, {8}}},
  };
  return *sigs;
}

}  // namespace

void FuzzMetricSpec(absl::string_view data) {
  absl::StatusOr<metrics::MetricSpec> spec = metrics::ParseMetricSpec(data);
  if (!spec.ok()) return;
  // ArgValueToString promises that the parser reads every value back.
  for (const auto& [key, value] : spec->args) {
    const std::string printed = metrics::ArgValueToString(value);
    const std::string text = absl::StrCat("m(", key, "=", printed, ")");
    absl::StatusOr<metrics::MetricSpec> back = metrics::ParseMetricSpec(text);
    FuzzCheck(back.ok(), absl::StrCat("printed argument does not parse: ", text, ": ", back.status().message()));
    FuzzCheck(back->args.size() == 1 && back->args[0].second.index() == value.index() &&
                  metrics::ArgValueToString(back->args[0].second) == printed,
              absl::StrCat("printed argument parses to another value: ", text));
  }
  for (const dsl::Signature& sig : Signatures()) {
    (void)metrics::BuildMetric(*spec, sig, ir::Device{});
  }
}

}  // namespace tally::fuzz
