#include "tools/tally/demo_data.h"

#include <ATen/ATen.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "metrics/registry.h"
#include "metrics/spec.h"

namespace tally::tools {

DemoData MakeDemoData(const std::vector<std::string>& specs) {
  // A fixed generator keeps the demo's numbers stable across runs.
  at::Generator gen = at::detail::createCPUGenerator(20261122);
  const int64_t n = 64;
  std::string domain = "multiclass";
  for (const std::string& s : specs) {
    auto spec = metrics::ParseMetricSpec(s);
    if (!spec.ok()) continue;
    const metrics::MetricInfo* info = metrics::FindMetric(spec->name);
    // Curves (auroc, roc, ...) take the classification inputs of their prefix.
    if (info && info->domain != "classification" && info->domain != "curves") domain = info->domain;
    else if (absl::StartsWith(spec->name, "binary_")) domain = "binary";
    else if (absl::StartsWith(spec->name, "multilabel_")) domain = "multilabel";
    // A task wrapper (accuracy(task=binary), ...) takes its task's inputs.
    for (const auto& [k, v] : spec->args) {
      if (k == "task" && std::holds_alternative<std::string>(v)) {
        domain = absl::AsciiStrToLower(std::get<std::string>(v));
      }
    }
  }
  DemoData d;
  if (domain == "regression") {
    at::Tensor target = at::randn({n}, gen, at::kFloat) * 2 + 10;
    at::Tensor preds = target + at::randn({n}, gen, at::kFloat) * 0.5;
    d.inputs = {{"preds", preds}, {"target", target}};
    d.specs = {"mean_squared_error", "mean_absolute_error", "r2_score", "pearson_corrcoef"};
    d.description = "64 regression pairs";
  } else if (domain == "aggregation") {
    d.inputs = {{"value", at::randn({n}, gen, at::kFloat)}};
    d.specs = {"mean", "sum", "max", "min"};
    d.description = "64 values";
  } else if (domain == "binary") {
    at::Tensor target = at::randint(0, 2, {n}, gen, at::kLong);
    at::Tensor preds = (target.to(at::kFloat) * 0.6 + at::rand({n}, gen, at::kFloat) * 0.4);
    d.inputs = {{"preds", preds}, {"target", target}};
    d.specs = {"binary_accuracy", "binary_f1_score"};
    d.description = "64 binary probabilities and labels";
  } else if (domain == "multilabel") {
    at::Tensor target = at::randint(0, 2, {n, 4}, gen, at::kLong);
    at::Tensor preds = (target.to(at::kFloat) * 0.6 + at::rand({n, 4}, gen, at::kFloat) * 0.4);
    d.inputs = {{"preds", preds}, {"target", target}};
    d.specs = {"multilabel_accuracy(num_labels=4)", "multilabel_f1_score(num_labels=4)"};
    d.description = "64 rows of 4 labels";
  } else {
    at::Tensor target = at::randint(0, 3, {n}, gen, at::kLong);
    at::Tensor logits = at::randn({n, 3}, gen, at::kFloat);
    logits.scatter_add_(1, target.unsqueeze(1), at::full({n, 1}, 1.5, at::kFloat));
    d.inputs = {{"preds", logits}, {"target", target}};
    d.specs = {"multiclass_accuracy(num_classes=3)", "multiclass_f1_score(num_classes=3, average=macro)",
               "multiclass_confusion_matrix(num_classes=3)"};
    d.description = "64 rows of 3-class logits and labels";
  }
  return d;
}

}  // namespace tally::tools
