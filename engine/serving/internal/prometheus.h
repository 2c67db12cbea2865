// Prometheus text exposition format (version 0.0.4) for Session::ExportPrometheus.
//
// An Exposition collects metric families (name, type, help) and their
// samples, then renders `# HELP`, `# TYPE` and one line per sample:
//
//   # HELP tally_metric Metric value over every update.
//   # TYPE tally_metric gauge
//   tally_metric{set="default",metric="multiclass_accuracy(num_classes=3, average=none)",class="2"} 0.5
//
// Label values escape backslash, double quote and newline; HELP text escapes
// backslash and newline; NaN and the infinities print as NaN, +Inf, -Inf.
#ifndef TALLY_ENGINE_SERVING_INTERNAL_PROMETHEUS_H_
#define TALLY_ENGINE_SERVING_INTERNAL_PROMETHEUS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/runtime/results.h"

namespace tally::serving::internal {

using Labels = std::vector<std::pair<std::string, std::string>>;

// IsValidMetricName checks [a-zA-Z_:][a-zA-Z0-9_:]*.
bool IsValidMetricName(absl::string_view name);
// IsValidLabelName checks [a-zA-Z_][a-zA-Z0-9_]* (and no leading "__").
bool IsValidLabelName(absl::string_view name);
// EscapeLabelValue escapes \ " and newline.
std::string EscapeLabelValue(absl::string_view v);
// FormatValue prints a sample value: NaN, +Inf, -Inf, integers without a
// fraction, other doubles so that they parse back to the same bits.
std::string FormatValue(double v);

class Exposition {
 public:
  explicit Exposition(std::string prefix) : prefix_(std::move(prefix)) {}
  // Family declares a family (once; rendered in declaration order).
  void Family(const std::string& name, absl::string_view type, absl::string_view help);
  // AddSample adds one sample to the family `name`.
  void AddSample(const std::string& name, Labels labels, double value);
  // AddResult adds one sample per element of a result: a tuple's parts get a
  // `part` label ("0", "1/2"), a 1-D tensor a `class` label, a tensor of
  // higher rank an `index` label ("i,j"). With `groups` > 0 (a sliced
  // metric's num_groups), a tensor whose leading dim has that size is per
  // group: its leading index is a `group` label, the rest as above. Nothing
  // is added on an error (reading a tensor failed).
  absl::Status AddResult(const std::string& name, const Labels& labels, const ResultTree& result, int64_t groups = 0);
  // Render returns the exposition text.
  std::string Render() const;

 private:
  struct Fam {
    std::string name, type, help;
    std::vector<std::string> lines;
  };
  Fam* Find(const std::string& name);
  void AddTensor(const std::string& name, Labels labels, const at::Tensor& t, int64_t groups);
  std::string prefix_;
  std::vector<Fam> families_;
};

// GroupsOf is the `num_groups=G` argument of a metric spec's text ("binary_
// accuracy(num_groups=4)" -> 4), or 0.
int64_t GroupsOf(absl::string_view spec);

// SessionExposition is the layout of Session::ExportPrometheus: gauges
// `<prefix>_metric{set,metric,...}` (a sliced metric's groups as a `group`
// label) and, when the session has windows,
// `<prefix>_window_metric{set,window,metric,...}`, and per set the counters
// `<prefix>_updates_total`, `_rows_total`, `_rejected_updates_total` and
// `_compute_errors_total`.
class SessionExposition {
 public:
  SessionExposition(const std::string& prefix, bool windows);
  // AddMetric / AddWindowMetric add one metric's result (Exposition::AddResult).
  absl::Status AddMetric(const std::string& set, const std::string& metric, const ResultTree& value);
  absl::Status AddWindowMetric(const std::string& set, const std::string& window, const std::string& metric,
                               const ResultTree& value);
  // AddCounters adds a set's counters.
  void AddCounters(const std::string& set, int64_t updates, int64_t rows, int64_t rejected, int64_t compute_errors);
  std::string Render() const { return out_.Render(); }

 private:
  std::string prefix_;
  Exposition out_;
};

}  // namespace tally::serving::internal

#endif  // TALLY_ENGINE_SERVING_INTERNAL_PROMETHEUS_H_
