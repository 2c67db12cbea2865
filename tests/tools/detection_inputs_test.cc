// Verifies the two other forms detections come in: one row per box with
// each box's image (laid out one row per image: the padded form), and
// COCO's own files; and that mean_average_precision's dict prints as one
// JSON object with TorchMetrics' keys.
#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "api/coco_json.h"
#include "api/detection_rows.h"
#include "api/evaluate.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testlib/status_matchers.h"

namespace tally {
namespace {

using ::tally::testing::StatusIs;
using ::testing::HasSubstr;

// Get is the input called `name`, or an undefined tensor.
at::Tensor Get(const NamedTensors& in, const std::string& name) {
  auto it = std::find_if(in.begin(), in.end(), [&name](const auto& named) { return named.first == name; });
  return it == in.end() ? at::Tensor() : it->second;
}

at::Tensor F(std::vector<float> v, std::vector<int64_t> shape) { return at::tensor(v, at::kFloat).view(shape); }
at::Tensor L(std::vector<int64_t> v) { return at::tensor(v, at::kLong); }

// Two images (ids 7 and 3, rows interleaved), three classes: image 3 has
// two detections and one ground-truth box, image 7 one detection and two
// ground-truth boxes, and image 9 only ground truth.
NamedTensors Ragged() {
  return {{"boxes", F({0, 0, 10, 10, 5, 5, 20, 20, 1, 1, 9, 9}, {3, 4})},
          {"scores", F({0.9f, 0.8f, 0.4f}, {3})},
          {"labels", L({1, 2, 1})},
          {"indexes", L({7, 3, 3})},
          {"target_boxes", F({0, 0, 10, 10, 6, 6, 20, 20, 1, 1, 10, 10, 30, 30, 40, 40}, {4, 4})},
          {"target_labels", L({1, 2, 1, 0})},
          {"target_indexes", L({3, 7, 7, 9})}};
}

TEST(DetectionRows, RaggedRowsBecomeOneRowPerImageInIdOrder) {
  NamedTensors in = Ragged();
  TALLY_ASSERT_OK_AND_ASSIGN(bool padded, PadDetectionRows(in));
  ASSERT_TRUE(padded);
  EXPECT_FALSE(Get(in, "indexes").defined() || Get(in, "target_indexes").defined());
  // Images 3, 7, 9; image 3's detections in their given order (rows 1, 2).
  EXPECT_TRUE(at::equal(Get(in, "labels"), L({2, 1, 1, -1, -1, -1}).view({3, 2})));
  EXPECT_TRUE(at::equal(Get(in, "scores"), F({0.8f, 0.4f, 0.9f, 0, 0, 0}, {3, 2})));
  EXPECT_TRUE(at::equal(Get(in, "boxes").select(0, 0), F({5, 5, 20, 20, 1, 1, 9, 9}, {2, 4})));
  EXPECT_TRUE(at::equal(Get(in, "target_labels"), L({1, -1, 2, 1, 0, -1}).view({3, 2})));
  EXPECT_TRUE(at::equal(Get(in, "target_boxes").select(0, 1), F({6, 6, 20, 20, 1, 1, 10, 10}, {2, 4})));
}

TEST(DetectionRows, RaggedAndPaddedFormsEvaluateAlike) {
  NamedTensors padded = Ragged();
  ASSERT_TRUE(PadDetectionRows(padded).ok());
  for (const char* spec : {"mean_average_precision(class_metrics=true)", "mean_average_precision(average=micro)"}) {
    TALLY_ASSERT_OK_AND_ASSIGN(auto a, Evaluate({spec}, Ragged(), EvalOptions{}));
    TALLY_ASSERT_OK_AND_ASSIGN(auto b, Evaluate({spec}, padded, EvalOptions{}));
    EXPECT_EQ(ResultsToJson(a), ResultsToJson(b)) << spec;
  }
}

TEST(DetectionRows, LeavesOtherInputsAlone) {
  NamedTensors in = {{"preds", at::rand({4})}, {"target", L({0, 1, 0, 1})}, {"indexes", L({0, 0, 1, 1})}};
  TALLY_ASSERT_OK_AND_ASSIGN(bool padded, PadDetectionRows(in));
  EXPECT_FALSE(padded);
  EXPECT_EQ(in.size(), 3u);
}

TEST(DetectionRows, RefusesMissingOrMismatchedImageIds) {
  NamedTensors in = Ragged();
  in.erase(in.begin() + 6);  // target_indexes
  EXPECT_THAT(PadDetectionRows(in).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'target_indexes' is missing")));
  in = Ragged();
  in[3].second = L({7, 3});  // indexes of two rows for three boxes
  EXPECT_THAT(PadDetectionRows(in).status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'boxes'")));
  in = Ragged();
  in[6].second = at::zeros({4}, at::kFloat);
  EXPECT_THAT(PadDetectionRows(in).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'target_indexes': expected integer image ids")));
}

TEST(DetectionRows, DictResultsPrintAsJsonObjects) {
  TALLY_ASSERT_OK_AND_ASSIGN(
      auto r, Evaluate({"mean_average_precision(max_detection_thresholds=[1, 5, 50])"}, Ragged(), EvalOptions{}));
  const std::string json = ResultsToJson(r);
  // pycocotools' summary takes map at maxDets=100 whatever the limits: -1.
  EXPECT_THAT(json, HasSubstr("\"value\": {\"map\": -1.0, \"map_50\": "));
  EXPECT_THAT(json, HasSubstr("\"mar_5\": "));
  EXPECT_THAT(json, HasSubstr("\"mar_50_per_class\": -1.0, \"classes\": [0, 1, 2]}"));
  EXPECT_THAT(ResultsToTable(r), HasSubstr("{\"map\": "));
}

class CocoFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) / "coco";
    std::filesystem::create_directories(dir_);
  }
  std::string Write(const std::string& name, const std::string& body) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path) << body;
    return path;
  }
  std::filesystem::path dir_;
};

TEST_F(CocoFiles, ReadsTheRaggedForm) {
  const std::string gt = Write("gt.json", R"({"images": [{"id": 3}, {"id": 7}, {"id": 12}],
      "categories": [{"id": 1}, {"id": 2}],
      "annotations": [{"id": 1, "image_id": 3, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 90.5, "iscrowd": 0},
                      {"id": 2, "image_id": 7, "category_id": 2, "bbox": [6, 6, 14, 14], "iscrowd": 1}]})");
  const std::string dt = Write("dt.json", R"([{"image_id": 7, "category_id": 2, "bbox": [5, 5, 15, 15], "score": 0.5},
      {"image_id": 12, "category_id": 1, "bbox": [1.5, 1, 9, 9], "score": 0.25}])");
  TALLY_ASSERT_OK_AND_ASSIGN(NamedTensors in, ReadCocoDetections(gt, dt));
  EXPECT_TRUE(
      at::equal(Get(in, "boxes"), at::tensor({5.0, 5.0, 15.0, 15.0, 1.5, 1.0, 9.0, 9.0}, at::kDouble).view({2, 4})));
  EXPECT_TRUE(at::equal(Get(in, "scores"), at::tensor({0.5, 0.25}, at::kDouble)));
  EXPECT_TRUE(at::equal(Get(in, "labels"), L({2, 1})));
  EXPECT_TRUE(at::equal(Get(in, "indexes"), L({7, 12})));
  EXPECT_TRUE(at::equal(Get(in, "target_indexes"), L({3, 7})));
  EXPECT_TRUE(at::equal(Get(in, "target_iscrowd"), L({0, 1})));
  // A missing area is 0: the box's own area then ranges it.
  EXPECT_TRUE(at::equal(Get(in, "target_area"), at::tensor({90.5, 0.0}, at::kDouble)));
  TALLY_ASSERT_OK_AND_ASSIGN(auto r, Evaluate({"mean_average_precision(box_format=xywh)"}, in, EvalOptions{}));
  EXPECT_THAT(ResultsToJson(r), HasSubstr("\"classes\": [1, 2]"));
}

TEST_F(CocoFiles, RefusesWhatPycocotoolsRefuses) {
  const std::string gt = Write("gt2.json", R"({"images": [{"id": 1}], "annotations": []})");
  EXPECT_THAT(ReadCocoDetections(gt, Write("d1.json", R"([{"image_id": 2, "category_id": 1, "bbox": [0, 0, 1, 1],
      "score": 0.5}])"))
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("coco_dt: [0]: image_id 2 is not an image")));
  EXPECT_THAT(ReadCocoDetections(gt, Write("d2.json", R"([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1],
      "score": 0.5}])"))
                  .status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bbox must be [x, y, width, height]")));
  EXPECT_THAT(
      ReadCocoDetections(gt, Write("d3.json", R"([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1, 1]}])")).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("coco_dt: [0]: score must be a number")));
  EXPECT_THAT(ReadCocoDetections(Write("bad.json", "{not json"), gt).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("coco_gt")));
  EXPECT_THAT(ReadCocoDetections(Write("nolist.json", R"({"images": []})"), gt).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no \"annotations\" list")));
}

}  // namespace
}  // namespace tally
