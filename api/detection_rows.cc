#include "api/detection_rows.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/status_macros.h"

namespace tally {
namespace {

const at::Tensor* Find(const NamedTensors& inputs, const std::string& name) {
  for (const auto& [n, t] : inputs) {
    if (n == name) return &t;
  }
  return nullptr;
}

// Side is one side's ragged inputs: its names, and the images its rows
// belong to.
struct Side {
  std::vector<std::string> names;  // boxes first
  std::string index_name;
  at::Tensor image;  // i64 [rows] (filled once the images are known: the row of each)
};

absl::Status CheckSide(const NamedTensors& inputs, Side& side) {
  const at::Tensor* index = Find(inputs, side.index_name);
  if (index == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("input '", side.names[0], "' is ragged (one row per box) but '",
                                                   side.index_name, "' is missing: it names each box's image"));
  }
  if (index->dim() != 1 || !at::isIntegralType(index->scalar_type(), /*includeBool=*/false)) {
    return absl::InvalidArgumentError(absl::StrCat("input '", side.index_name, "': expected integer image ids [",
                                                   side.names[0] == "boxes" ? "D" : "G", "]"));
  }
  const int64_t rows = index->size(0);
  for (const std::string& name : side.names) {
    const at::Tensor* t = Find(inputs, name);
    if (t == nullptr) continue;
    const int64_t want_rank = name == side.names[0] ? 2 : 1;
    if (t->dim() != want_rank || t->size(0) != rows) {
      return absl::InvalidArgumentError(absl::StrCat("input '", name, "': expected ", rows, " rows (as '",
                                                     side.index_name, "') of rank ", want_rank, ", got [",
                                                     absl::StrJoin(t->sizes(), ", "), "]"));
    }
  }
  side.image = index->to(at::kCPU, at::kLong).contiguous();
  return absl::OkStatus();
}

// Pad lays `side`'s inputs out per image: rows[i] is row i's image and
// slot its place among that image's rows.
void Pad(NamedTensors& inputs, const Side& side, int64_t images, const at::Tensor& rows) {
  const int64_t n = rows.size(0);
  std::vector<int64_t> count(images, 0), slot(n);
  const int64_t* r = rows.data_ptr<int64_t>();
  for (int64_t i = 0; i < n; ++i) slot[i] = count[r[i]]++;
  // At least one slot: an image without boxes is all padding.
  const int64_t width = std::max<int64_t>(1, n ? *std::max_element(count.begin(), count.end()) : 0);
  const at::Tensor where = at::tensor(slot, at::kLong);
  for (auto& [name, t] : inputs) {
    if (std::find(side.names.begin(), side.names.end(), name) == side.names.end()) continue;
    std::vector<int64_t> shape = {images, width};
    for (int64_t d = 1; d < t.dim(); ++d) shape.push_back(t.size(d));
    const bool labels = name == "labels" || name == "target_labels";
    at::Tensor out = at::full(shape, labels ? -1 : 0, t.options().device(at::kCPU));
    out.index_put_({rows, where}, t.to(at::kCPU));
    t = out;
  }
}

}  // namespace

absl::StatusOr<bool> PadDetectionRows(NamedTensors& inputs) {
  const at::Tensor* boxes = Find(inputs, "boxes");
  if (boxes == nullptr || boxes->dim() != 2 || Find(inputs, "indexes") == nullptr) return false;
  Side dets{{"boxes", "scores", "labels"}, "indexes", {}};
  Side gts{{"target_boxes", "target_labels", "target_iscrowd", "target_area"}, "target_indexes", {}};
  TALLY_RETURN_IF_ERROR(CheckSide(inputs, dets));
  TALLY_RETURN_IF_ERROR(CheckSide(inputs, gts));
  // The images, in ascending id order.
  const at::Tensor ids = std::get<0>(at::_unique(at::cat({dets.image, gts.image}), /*sorted=*/true));
  const int64_t images = ids.size(0);
  Pad(inputs, dets, images, at::searchsorted(ids, dets.image));
  Pad(inputs, gts, images, at::searchsorted(ids, gts.image));
  NamedTensors kept;
  for (auto& [name, t] : inputs) {
    if (name != "indexes" && name != "target_indexes") kept.emplace_back(name, t);
  }
  inputs = std::move(kept);
  return true;
}

}  // namespace tally
