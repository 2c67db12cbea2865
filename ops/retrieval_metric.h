// RetrievalMetric: the per-query scores of the retrieval_score op, one enum
// and one name table shared by the metric library (which writes the op's
// `metric` attribute), the op's type check and the fused kernel (which
// reads it). No ATen, no IR.
#ifndef TALLY_OPS_RETRIEVAL_METRIC_H_
#define TALLY_OPS_RETRIEVAL_METRIC_H_

#include <array>
#include <optional>
#include <utility>

#include "absl/strings/string_view.h"

namespace tally::ops {

enum class RetrievalMetric {
  kRecall,
  kPrecision,
  kReciprocalRank,
  kHitRate,
  kAveragePrecision,
  kRPrecision,
  kFallOut,
  kNdcg,
  kAuroc,
};

// The `metric` attribute's text for each metric (TorchMetrics' names).
inline constexpr std::array<std::pair<RetrievalMetric, absl::string_view>, 9> kRetrievalMetricNames = {{
    {RetrievalMetric::kRecall, "recall"},
    {RetrievalMetric::kPrecision, "precision"},
    {RetrievalMetric::kReciprocalRank, "reciprocal_rank"},
    {RetrievalMetric::kHitRate, "hit_rate"},
    {RetrievalMetric::kAveragePrecision, "average_precision"},
    {RetrievalMetric::kRPrecision, "r_precision"},
    {RetrievalMetric::kFallOut, "fall_out"},
    {RetrievalMetric::kNdcg, "normalized_dcg"},
    {RetrievalMetric::kAuroc, "auroc"},
}};

constexpr absl::string_view RetrievalMetricName(RetrievalMetric m) {
  for (const auto& [metric, name] : kRetrievalMetricNames) {
    if (metric == m) return name;
  }
  return "";
}

inline std::optional<RetrievalMetric> RetrievalMetricNamed(absl::string_view name) {
  for (const auto& [metric, text] : kRetrievalMetricNames) {
    if (text == name) return metric;
  }
  return std::nullopt;
}

}  // namespace tally::ops

#endif  // TALLY_OPS_RETRIEVAL_METRIC_H_
