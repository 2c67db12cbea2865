#include "metrics/collection.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "metrics/registry.h"
#include "metrics/spec.h"
#include "support/status_macros.h"

namespace tally::metrics {

absl::StatusOr<std::vector<dsl::CollectionEntry>> BuildEntries(const std::vector<std::string>& specs,
                                                               const dsl::Signature& sig, const ir::Device& device) {
  std::vector<dsl::CollectionEntry> entries;
  absl::flat_hash_set<std::string> labels;
  for (const std::string& text : specs) {
    TALLY_ASSIGN_OR_RETURN(MetricSpec spec, ParseMetricSpec(text));
    TALLY_ASSIGN_OR_RETURN(dsl::Metric m, BuildMetric(spec, sig, device));
    std::string label = spec.name;
    for (int k = 2; labels.contains(label); ++k) label = absl::StrCat(spec.name, "_", k);
    labels.insert(label);
    dsl::CollectionEntry e{label, std::move(m), {}};
    for (const auto& [key, value] : spec.args) {
      if (const int64_t* v = std::get_if<int64_t>(&value)) e.size_args.emplace_back(key, *v);
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

}  // namespace tally::metrics
