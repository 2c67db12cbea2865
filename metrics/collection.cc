#include "metrics/collection.h"

#include <optional>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "metrics/registry.h"
#include "metrics/spec.h"
#include "metrics/weights.h"
#include "support/status_macros.h"

namespace tally::metrics {

namespace {

// CheckEveryMetricIsWeighted refuses a collection where `weight` weights some
// metrics and not others: the unweighted ones would look weighted. (When no
// metric reads it, the caller says that the input is read by no metric.)
absl::Status CheckEveryMetricIsWeighted(const std::vector<std::string>& specs,
                                        const std::vector<dsl::CollectionEntry>& entries) {
  const dsl::CollectionEntry* weighted = nullptr;
  std::optional<size_t> unweighted;  // its index
  for (size_t i = 0; i < entries.size(); ++i) {
    const bool reads = entries[i].metric.module->update->FindParam(kWeightInput) != nullptr;
    const MetricInfo* info = FindMetric(entries[i].metric.name);
    if (!reads && info != nullptr && info->weight_agnostic) continue;
    if (reads && weighted == nullptr) weighted = &entries[i];
    if (!reads && !unweighted) unweighted = i;
  }
  if (weighted == nullptr || !unweighted) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(specs[*unweighted], ": input '", kWeightInput,
                                                 "': this metric has no weighted form, and ", weighted->label,
                                                 " in the same collection is weighted (evaluate it apart)"));
}

}  // namespace

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
  TALLY_RETURN_IF_ERROR(CheckEveryMetricIsWeighted(specs, entries));
  return entries;
}

}  // namespace tally::metrics
