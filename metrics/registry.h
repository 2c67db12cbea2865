// The metric registry: TorchMetrics functional names -> DSL builders.
//
// A builder reads its arguments from SpecArgs (TorchMetrics' argument names
// and defaults), looks at the caller's input signature (dtype and shape of
// preds/target/...) to pick the input form exactly as TorchMetrics does, and
// returns a Metric written in the DSL. Unknown names and unused arguments are
// InvalidArgument errors that name the metric.
#ifndef TALLY_METRICS_REGISTRY_H_
#define TALLY_METRICS_REGISTRY_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/dsl/builder.h"
#include "engine/dsl/metric.h"
#include "metrics/spec.h"

namespace tally::metrics {

// BuildFn builds one metric from its arguments and the input signature (a
// function, or a callable that carries e.g. the task it builds for).
using BuildFn =
    std::function<absl::StatusOr<dsl::Metric>(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device)>;

// MetricInfo is one registry entry.
struct MetricInfo {
  std::string name;                 // TorchMetrics functional name
  std::string domain;               // "aggregation", "regression", "classification", "curves", ...
  std::vector<std::string> inputs;  // e.g. {"preds", "target"}
  BuildFn build;
  // weight_agnostic: a row weight has no meaning here (max, min), so a
  // collection that weights its other metrics may hold it; any other metric
  // that does not read `weight` is refused in a weighted collection.
  bool weight_agnostic = false;
};

// AllMetrics lists every registered metric, sorted by name.
const std::vector<MetricInfo>& AllMetrics();
// FindMetric returns the entry for `name`, or nullptr.
const MetricInfo* FindMetric(absl::string_view name);
// BuildMetric parses nothing: it builds `spec` for `sig`, and fails on unknown
// names or arguments the builder did not read.
absl::StatusOr<dsl::Metric> BuildMetric(const MetricSpec& spec, const dsl::Signature& sig, const ir::Device& device);

// Per-domain registration, one file per domain.
void RegisterAggregationMetrics(std::vector<MetricInfo>& out);
void RegisterRegressionMetrics(std::vector<MetricInfo>& out);
void RegisterRegressionErrorMetrics(std::vector<MetricInfo>& out);
void RegisterRegressionKendallMetrics(std::vector<MetricInfo>& out);
void RegisterClassificationMetrics(std::vector<MetricInfo>& out);
void RegisterRetrievalMetrics(std::vector<MetricInfo>& out);
void RegisterRetrievalCurveMetrics(std::vector<MetricInfo>& out);
void RegisterCurveMetrics(std::vector<MetricInfo>& out);
void RegisterPerClassCurveAreaMetrics(std::vector<MetricInfo>& out);
void RegisterRocAndPrCurveMetrics(std::vector<MetricInfo>& out);
void RegisterCalibrationMetrics(std::vector<MetricInfo>& out);
void RegisterGroupFairnessMetrics(std::vector<MetricInfo>& out);
void RegisterHingeAndRankingMetrics(std::vector<MetricInfo>& out);
void RegisterOperatingPointMetrics(std::vector<MetricInfo>& out);
// RegisterTaskWrappers adds TorchMetrics' task wrappers (accuracy(task=...),
// auroc(task=...), ...; domain "task_wrapper"), each only once every task
// metric it dispatches to is in `out`: it runs after all other domains.
void RegisterTaskWrappers(std::vector<MetricInfo>& out);

}  // namespace tally::metrics

#endif  // TALLY_METRICS_REGISTRY_H_
