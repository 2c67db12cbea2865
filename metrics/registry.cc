#include "metrics/registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "metrics/replicas.h"
#include "support/status_macros.h"

namespace tally::metrics {

// The clustering, nominal and text domains (metrics/clustering,
// metrics/nominal, metrics/text).
void RegisterClusteringLabelMetrics(std::vector<MetricInfo>& out);
void RegisterClusteringPointMetrics(std::vector<MetricInfo>& out);
void RegisterNominalMetrics(std::vector<MetricInfo>& out);
void RegisterTextErrorRateMetrics(std::vector<MetricInfo>& out);
void RegisterBleuMetrics(std::vector<MetricInfo>& out);
void RegisterPerplexity(std::vector<MetricInfo>& out);
void RegisterRougeMetrics(std::vector<MetricInfo>& out);
void RegisterChrfMetrics(std::vector<MetricInfo>& out);
void RegisterSquad(std::vector<MetricInfo>& out);
void RegisterTerMetrics(std::vector<MetricInfo>& out);
void RegisterSeparationMetrics(std::vector<MetricInfo>& out);
void RegisterSegmentationMetrics(std::vector<MetricInfo>& out);
void RegisterPixelScoreMetrics(std::vector<MetricInfo>& out);
void RegisterWindowedImageMetrics(std::vector<MetricInfo>& out);
void RegisterFrechetMetrics(std::vector<MetricInfo>& out);
void RegisterDetectionMetrics(std::vector<MetricInfo>& out);
void RegisterBoxIouMetrics(std::vector<MetricInfo>& out);
void RegisterPanopticMetrics(std::vector<MetricInfo>& out);
void RegisterFleissKappa(std::vector<MetricInfo>& out);

const std::vector<MetricInfo>& AllMetrics() {
  static const std::vector<MetricInfo>* all = [] {
    auto* v = new std::vector<MetricInfo>();
    RegisterAggregationMetrics(*v);
    RegisterRegressionMetrics(*v);
    RegisterRegressionErrorMetrics(*v);
    RegisterRegressionKendallMetrics(*v);
    RegisterClassificationMetrics(*v);
    RegisterRetrievalMetrics(*v);
    RegisterRetrievalCurveMetrics(*v);
    RegisterCurveMetrics(*v);
    RegisterPerClassCurveAreaMetrics(*v);
    RegisterRocAndPrCurveMetrics(*v);
    RegisterCalibrationMetrics(*v);
    RegisterGroupFairnessMetrics(*v);
    RegisterHingeAndRankingMetrics(*v);
    RegisterOperatingPointMetrics(*v);
    RegisterClusteringLabelMetrics(*v);
    RegisterClusteringPointMetrics(*v);
    RegisterNominalMetrics(*v);
    RegisterTextErrorRateMetrics(*v);
    RegisterBleuMetrics(*v);
    RegisterPerplexity(*v);
    RegisterRougeMetrics(*v);
    RegisterChrfMetrics(*v);
    RegisterSquad(*v);
    RegisterTerMetrics(*v);
    RegisterSeparationMetrics(*v);
    RegisterSegmentationMetrics(*v);
    RegisterPixelScoreMetrics(*v);
    RegisterWindowedImageMetrics(*v);
    RegisterFrechetMetrics(*v);
    RegisterDetectionMetrics(*v);
    RegisterBoxIouMetrics(*v);
    RegisterPanopticMetrics(*v);
    RegisterFleissKappa(*v);
    RegisterTaskWrappers(*v);  // last: it looks up the task metrics
    std::sort(v->begin(), v->end(), [](const MetricInfo& a, const MetricInfo& b) { return a.name < b.name; });
    return v;
  }();
  return *all;
}

const MetricInfo* FindMetric(absl::string_view name) {
  for (const auto& m : AllMetrics())
    if (m.name == name) return &m;
  return nullptr;
}

absl::StatusOr<dsl::Metric> BuildMetric(const MetricSpec& spec, const dsl::Signature& sig, const ir::Device& device) {
  const MetricInfo* info = FindMetric(spec.name);
  if (info == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown metric '", spec.name, "'"));
  }
  SpecArgs args(spec);
  TALLY_ASSIGN_OR_RETURN(dsl::Metric m, info->build(args, sig, device));
  TALLY_ASSIGN_OR_RETURN(std::vector<dsl::ReplicaSpec> replicas, ReadReplicaArgs(args));
  TALLY_RETURN_IF_ERROR(args.CheckAllUsed());
  for (const dsl::ReplicaSpec& r : replicas) {
    TALLY_ASSIGN_OR_RETURN(m, dsl::Replicate(std::move(m), r, sig, device));
  }
  return m;
}

}  // namespace tally::metrics
