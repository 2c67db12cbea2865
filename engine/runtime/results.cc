#include "engine/runtime/results.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/metric.h"
#include "support/status_macros.h"

namespace tally {
namespace {

// Insert places `t` at `path` under `node`; leaves arrive in depth-first
// order, so every new item is the next index of its tuple.
absl::Status Insert(ResultTree& node, const std::vector<int>& path, size_t depth, const at::Tensor& t) {
  if (depth == path.size()) {
    if (node.tensor.defined() || !node.parts.empty()) return absl::InternalError("a result part is given twice");
    node.tensor = t;
    return absl::OkStatus();
  }
  if (node.tensor.defined()) return absl::InternalError("a result part is both a tensor and a tuple");
  const size_t i = static_cast<size_t>(path[depth]);
  if (i == node.parts.size()) node.parts.emplace_back();
  if (i + 1 != node.parts.size()) return absl::InternalError("result parts are out of order or have a gap");
  return Insert(node.parts[i], path, depth + 1, t);
}

}  // namespace

absl::StatusOr<ResultTree> CollectResult(const NamedTensors& values, absl::string_view label) {
  ResultTree root;
  bool found = false;
  for (const auto& [name, t] : values) {
    std::string base;
    std::vector<int> path;
    if (!dsl::ParsePartLabel(name, &base, &path) || base != label) continue;
    found = true;
    absl::Status st = Insert(root, path, 0, t);
    if (!st.ok()) return absl::InternalError(absl::StrCat(label, ": ", st.message(), " ('", name, "')"));
  }
  if (!found) return absl::NotFoundError(absl::StrCat("no result for ", label));
  return root;
}

absl::StatusOr<ResultTree> CollectMetricResult(const NamedTensors& values, absl::string_view label,
                                               std::vector<std::string> keys) {
  absl::StatusOr<ResultTree> tree = CollectResult(values, label);
  if (!tree.ok()) return absl::InternalError(tree.status().message());
  tree->keys = std::move(keys);
  return tree;
}

}  // namespace tally
