#include "api/coco_json.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "engine/io/regular_file.h"
#include "support/status_macros.h"

namespace tally {
namespace {

using json = nlohmann::json;

absl::StatusOr<json> ReadJson(const std::string& path, const char* input) {
  TALLY_ASSIGN_OR_RETURN(const std::string body, io::ReadRegularFile(path));
  json doc = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(input, ": ", path, " is not JSON"));
  return doc;
}

// Boxes collects one side's annotations.
struct Boxes {
  std::vector<double> xywh, scores, areas;
  std::vector<int64_t> labels, images, crowd;
};

// Annotation reads one entry: bbox, category_id, image_id, and the side's
// own fields (score; area and iscrowd).
absl::Status Annotation(const json& a, bool detection, const std::string& where, Boxes& out) {
  auto fail = [&where](const std::string& what) { return absl::InvalidArgumentError(absl::StrCat(where, ": ", what)); };
  if (!a.is_object()) return fail("expected an object");
  const json* bbox = a.contains("bbox") ? &a["bbox"] : nullptr;
  if (bbox == nullptr || !bbox->is_array() || bbox->size() != 4) return fail("bbox must be [x, y, width, height]");
  for (const json& v : *bbox) {
    if (!v.is_number()) return fail("bbox must hold numbers");
    out.xywh.push_back(v.get<double>());
  }
  for (const char* key : {"category_id", "image_id"}) {
    if (!a.contains(key) || !a[key].is_number_integer()) return fail(absl::StrCat(key, " must be an integer"));
  }
  out.labels.push_back(a["category_id"].get<int64_t>());
  out.images.push_back(a["image_id"].get<int64_t>());
  if (detection) {
    if (!a.contains("score") || !a["score"].is_number()) return fail("score must be a number");
    out.scores.push_back(a["score"].get<double>());
    return absl::OkStatus();
  }
  // COCO ranges ground truth by `area` (a mask's area); without one, the
  // box's (TorchMetrics' rule for an area of 0).
  out.areas.push_back(a.contains("area") && a["area"].is_number() ? a["area"].get<double>() : 0.0);
  out.crowd.push_back(a.contains("iscrowd") && a["iscrowd"].is_number_integer() ? a["iscrowd"].get<int64_t>() : 0);
  return absl::OkStatus();
}

at::Tensor F64(const std::vector<double>& v, int64_t cols = 0) {
  at::Tensor t = at::tensor(v, at::kDouble);
  return cols ? t.view({-1, cols}) : t;
}

}  // namespace

absl::StatusOr<NamedTensors> ReadCocoDetections(const std::string& gt_path, const std::string& dt_path) {
  TALLY_ASSIGN_OR_RETURN(const json gt, ReadJson(gt_path, kCocoGroundTruth));
  TALLY_ASSIGN_OR_RETURN(const json dt, ReadJson(dt_path, kCocoDetections));
  if (!gt.is_object() || !gt.contains("annotations") || !gt["annotations"].is_array()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kCocoGroundTruth, ": ", gt_path, " is not a COCO dataset (no \"annotations\" list)"));
  }
  // A results file is a list; a dataset-shaped file's annotations are taken too.
  const json& results = dt.is_object() && dt.contains("annotations") ? dt["annotations"] : dt;
  if (!results.is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(kCocoDetections, ": ", dt_path, " is not a list of COCO results"));
  }
  absl::flat_hash_set<int64_t> image_ids;
  if (gt.contains("images") && gt["images"].is_array()) {
    for (const json& im : gt["images"]) {
      if (im.is_object() && im.contains("id") && im["id"].is_number_integer())
        image_ids.insert(im["id"].get<int64_t>());
    }
  }
  Boxes truth, dets;
  for (size_t i = 0; i < gt["annotations"].size(); ++i) {
    TALLY_RETURN_IF_ERROR(
        Annotation(gt["annotations"][i], false, absl::StrCat(kCocoGroundTruth, ": annotations[", i, "]"), truth));
    image_ids.insert(truth.images.back());
  }
  for (size_t i = 0; i < results.size(); ++i) {
    TALLY_RETURN_IF_ERROR(Annotation(results[i], true, absl::StrCat(kCocoDetections, ": [", i, "]"), dets));
    if (!image_ids.contains(dets.images.back())) {
      return absl::InvalidArgumentError(absl::StrCat(kCocoDetections, ": [", i, "]: image_id ", dets.images.back(),
                                                     " is not an image of the ground truth"));
    }
  }
  return NamedTensors{{"boxes", F64(dets.xywh, 4)},
                      {"scores", F64(dets.scores)},
                      {"labels", at::tensor(dets.labels, at::kLong)},
                      {"indexes", at::tensor(dets.images, at::kLong)},
                      {"target_boxes", F64(truth.xywh, 4)},
                      {"target_labels", at::tensor(truth.labels, at::kLong)},
                      {"target_indexes", at::tensor(truth.images, at::kLong)},
                      {"target_iscrowd", at::tensor(truth.crowd, at::kLong)},
                      {"target_area", F64(truth.areas)}};
}

}  // namespace tally
