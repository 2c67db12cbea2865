#include "api/session_factory.h"

#include <utility>

#include "metrics/collection.h"
#include "support/status_macros.h"

namespace tally {

absl::StatusOr<std::unique_ptr<Session>> CreateSession(const std::vector<MetricSetSpec>& sets,
                                                       const dsl::Signature& sig, SessionOptions options) {
  std::vector<BuiltMetricSet> built;
  built.reserve(sets.size());
  for (const MetricSetSpec& spec : sets) {
    TALLY_ASSIGN_OR_RETURN(std::vector<dsl::CollectionEntry> entries,
                           metrics::BuildEntries(spec.metrics, sig, options.device));
    built.push_back({spec.name, spec.metrics, std::move(entries)});
  }
  return Session::Create(std::move(built), sig, std::move(options));
}

absl::StatusOr<std::unique_ptr<Session>> CreateDefaultSession(const std::vector<std::string>& metrics,
                                                              const dsl::Signature& sig, SessionOptions options) {
  return CreateSession({MetricSetSpec{"default", metrics}}, sig, std::move(options));
}

}  // namespace tally
