// The names of the data inputs metrics read, in the order requests and
// results list them: what a caller may pass (`tally eval --input`, the JSON
// of `tally serve`, tally::Evaluate). metric_catalogue_test checks
// that every registered metric reads only these.
#ifndef TALLY_METRICS_INPUTS_H_
#define TALLY_METRICS_INPUTS_H_

#include <algorithm>
#include <array>

#include "absl/strings/string_view.h"

namespace tally::metrics {

// `data` and `labels` are the clustering scores' points [N, D] and cluster
// ids; `ratings` is Fleiss' kappa's counts per category (TorchMetrics'
// names); `preds_words` and `target_words` chrF++'s word ids beside its
// character ids in preds and target; `img` total variation's images;
// `real_features` and `fake_features` (or `features` with a bool `real`)
// the Fréchet distance's features; `boxes`, `scores`, `labels`
// (with `indexes`, the image of each row) and `target_boxes`,
// `target_labels`, `target_indexes`, `target_iscrowd`, `target_area` the
// detections and ground truth of the detection metrics.
inline constexpr std::array<absl::string_view, 24> kInputNames = {
    "preds",  "target",        "indexes",       "value",          "weight",         "groups",
    "row_id", "data",          "labels",        "ratings",        "preds_words",    "target_words",
    "img",    "real_features", "fake_features", "features",       "real",           "boxes",
    "scores", "target_boxes",  "target_labels", "target_indexes", "target_iscrowd", "target_area"};

// The list as an error message shows it.
inline constexpr char kInputNamesText[] =
    "preds, target, indexes, value, weight, groups, row_id, data, labels, ratings, preds_words, target_words, img, "
    "real_features, fake_features, features, real, boxes, scores, target_boxes, target_labels, target_indexes, "
    "target_iscrowd or target_area";

// kGroupsInput names the optional group id of each row (the fairness
// metrics' `groups`, TorchMetrics' name).
inline constexpr char kGroupsInput[] = "groups";

// kRowIdInput names the optional identity of each row (int64) that a
// bootstrap keys its resampling draws by; without it the runtime numbers
// the rows in the order they arrive.
inline constexpr char kRowIdInput[] = "row_id";

inline bool IsInputName(absl::string_view name) {
  return std::find(kInputNames.begin(), kInputNames.end(), name) != kInputNames.end();
}

}  // namespace tally::metrics

#endif  // TALLY_METRICS_INPUTS_H_
