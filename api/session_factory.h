// Sessions from metric spec strings: the spec text is parsed and built here,
// and kept by the session only as the metrics' identity.
#ifndef TALLY_API_SESSION_FACTORY_H_
#define TALLY_API_SESSION_FACTORY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/dsl/builder.h"
#include "engine/serving/session.h"

namespace tally {

// MetricSetSpec names a collection of metric specs
// (e.g. "multiclass_accuracy(num_classes=3, average=none)").
struct MetricSetSpec {
  std::string name;
  std::vector<std::string> metrics;
};

// CreateSession builds every set's specs for `sig` on options.device
// (BuildEntries) and creates the session over them (Session::Create).
absl::StatusOr<std::unique_ptr<Session>> CreateSession(const std::vector<MetricSetSpec>& sets,
                                                       const dsl::Signature& sig, SessionOptions options = {});
// CreateDefaultSession makes a session of one set named "default".
absl::StatusOr<std::unique_ptr<Session>> CreateDefaultSession(const std::vector<std::string>& metrics,
                                                              const dsl::Signature& sig, SessionOptions options = {});

}  // namespace tally

#endif  // TALLY_API_SESSION_FACTORY_H_
