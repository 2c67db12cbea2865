// Task wrappers: TorchMetrics 1.5's task-dispatch functions (`accuracy`,
// `precision`, ..., `auroc`, `roc`, `calibration_error`), which take `task`
// (binary, multiclass or multilabel) and call binary_<name>,
// multiclass_<name> or multilabel_<name> with some of their own arguments:
//
//   accuracy(task=multiclass, num_classes=5)
//     == multiclass_accuracy(num_classes=5, average=micro)
//
// Each wrapper is one row of kWrappers, read off its function in
// torchmetrics/functional/classification/*.py: the tasks it takes, the
// arguments it passes to each task's function, and its own defaults where
// they differ from that function's. Only two do: the stat-score family
// (accuracy, precision, recall, f1_score, fbeta_score, specificity,
// stat_scores, hamming_distance) averages "micro" where the multiclass_ and
// multilabel_ functions average "macro", and fbeta_score's beta defaults to
// 1.0 where the task functions require it. (hinge_loss's validate_args
// defaults to True where the task functions default to False; validation is
// always on in Tally, so that one needs no row entry.)
//
// As in TorchMetrics:
//   * `task` is required and matched case-insensitively; a task the wrapper
//     does not take (exact_match(task=binary), cohen_kappa(task=multilabel))
//     is an argument error.
//   * Every argument of the wrapper's signature is accepted. Only those the
//     wrapper passes to the chosen task are read, and the task metric's
//     builder validates them; the others are ignored, whatever their value
//     (accuracy(task=binary, num_classes=3) is binary_accuracy()).
//   * An argument outside the signature is an unknown-argument error, checked
//     before anything else (Python's TypeError at the call).
//   * num_classes (multiclass) and num_labels (multilabel) are required.
//
// The task metric is built under the wrapper's name, so every message —
// argument errors, input errors, deferred value checks — starts with the name
// the user wrote ("accuracy: num_classes must be an integer >= 2, got 1").
//
// A row whose task metrics are not all registered is skipped, so a wrapper
// appears as soon as its binary_/multiclass_/multilabel_ metrics do.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "metrics/registry.h"
#include "metrics/replicas.h"
#include "metrics/spec.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

// The tasks, in the order of Wrapper::passes. The task metric of wrapper W
// for task T is "<T>_<W>".
constexpr std::array<absl::string_view, 3> kTaskNames = {"binary", "multiclass", "multilabel"};

// Task sets, as bits of kTaskNames' indices: TorchMetrics' ClassificationTask,
// ClassificationTaskNoBinary and ClassificationTaskNoMultilabel.
constexpr uint8_t kAllTasks = 0b111;
constexpr uint8_t kNoBinary = 0b110;
constexpr uint8_t kNoMultilabel = 0b011;

// Wrapper is one TorchMetrics task wrapper. Argument lists are
// space-separated names.
struct Wrapper {
  absl::string_view name;
  uint8_t tasks;
  // The arguments the wrapper passes to binary_<name>, multiclass_<name> and
  // multilabel_<name> (besides `every_task`); empty for a task it rejects.
  std::array<absl::string_view, 3> passes;
  // The arguments it passes to every task it takes, besides kAlwaysPassed.
  absl::string_view every_task;
  // Its defaults that differ from the task functions', in spec syntax
  // ("average=micro, beta=1.0"); passed when the user gives none.
  absl::string_view defaults;
};

// The stat-score family's per-task arguments.
constexpr std::array<absl::string_view, 3> kStatScores = {"threshold multidim_average",
                                                          "num_classes average top_k multidim_average",
                                                          "num_labels threshold average multidim_average"};
// The confusion-matrix metrics' per-task arguments, and jaccard_index's.
constexpr std::array<absl::string_view, 3> kConfmat = {"threshold", "num_classes", "num_labels threshold"};
constexpr std::array<absl::string_view, 3> kConfmatAverage = {"threshold", "num_classes average",
                                                              "num_labels threshold average"};
// The curves' per-task arguments: average_precision (auroc adds max_fpr),
// roc and precision_recall_curve, and the metrics at a fixed point of a curve.
constexpr std::array<absl::string_view, 3> kCurveScores = {"", "num_classes average", "num_labels average"};
constexpr std::array<absl::string_view, 3> kCurveOutputs = {"", "num_classes average", "num_labels"};
constexpr std::array<absl::string_view, 3> kFixedPoint = {"", "num_classes", "num_labels"};
// Every wrapper passes these to every task it takes.
constexpr std::array<absl::string_view, 2> kAlwaysPassed = {"ignore_index", "validate_args"};

constexpr Wrapper kWrappers[] = {
    {"accuracy", kAllTasks, kStatScores, "", "average=micro"},
    {"precision", kAllTasks, kStatScores, "zero_division", "average=micro"},
    {"recall", kAllTasks, kStatScores, "zero_division", "average=micro"},
    {"f1_score", kAllTasks, kStatScores, "zero_division", "average=micro"},
    {"fbeta_score", kAllTasks, kStatScores, "beta zero_division", "beta=1.0, average=micro"},
    {"specificity", kAllTasks, kStatScores, "", "average=micro"},
    {"negative_predictive_value", kAllTasks, kStatScores, "zero_division", "average=micro"},
    {"stat_scores", kAllTasks, kStatScores, "", "average=micro"},
    {"hamming_distance", kAllTasks, kStatScores, "", "average=micro"},
    {"confusion_matrix", kAllTasks, kConfmat, "normalize", ""},
    {"jaccard_index", kAllTasks, kConfmatAverage, "zero_division", ""},
    {"matthews_corrcoef", kAllTasks, kConfmat, "", ""},
    {"cohen_kappa", kNoMultilabel, {"threshold", "num_classes", ""}, "weights", ""},
    {"exact_match", kNoBinary, {"", "num_classes", "num_labels threshold"}, "multidim_average", ""},
    {"auroc", kAllTasks, {"max_fpr", "num_classes average", "num_labels average"}, "thresholds", ""},
    {"average_precision", kAllTasks, kCurveScores, "thresholds", ""},
    {"roc", kAllTasks, kCurveOutputs, "thresholds", ""},
    {"eer", kAllTasks, kCurveOutputs, "thresholds", ""},
    {"logauc",
     kAllTasks,
     {"fpr_range", "num_classes average fpr_range", "num_labels average fpr_range"},
     "thresholds",
     "average=none"},
    {"precision_recall_curve", kAllTasks, kCurveOutputs, "thresholds", ""},
    {"calibration_error", kNoMultilabel, {"", "num_classes", ""}, "n_bins norm", ""},
    {"hinge_loss", kNoMultilabel, {"", "num_classes multiclass_mode", ""}, "squared", ""},
    {"recall_at_fixed_precision", kAllTasks, kFixedPoint, "min_precision thresholds", ""},
    {"precision_at_fixed_recall", kAllTasks, kFixedPoint, "min_recall thresholds", ""},
    {"sensitivity_at_specificity", kAllTasks, kFixedPoint, "min_specificity thresholds", ""},
    {"specificity_at_sensitivity", kAllTasks, kFixedPoint, "min_sensitivity thresholds", ""},
};

bool Takes(const Wrapper& w, size_t task) { return (w.tasks >> task) & 1; }

std::string TaskMetricName(const Wrapper& w, size_t task) { return absl::StrCat(kTaskNames[task], "_", w.name); }

std::vector<absl::string_view> Words(absl::string_view list) { return absl::StrSplit(list, ' ', absl::SkipEmpty()); }

// Passed lists the arguments the wrapper passes to `task`.
std::vector<absl::string_view> Passed(const Wrapper& w, size_t task) {
  std::vector<absl::string_view> out = Words(w.passes[task]);
  for (absl::string_view a : Words(w.every_task)) out.push_back(a);
  out.insert(out.end(), kAlwaysPassed.begin(), kAlwaysPassed.end());
  return out;
}

const Wrapper* FindWrapper(absl::string_view name) {
  for (const Wrapper& w : kWrappers) {
    if (w.name == name) return &w;
  }
  return nullptr;
}

absl::StatusOr<dsl::Metric> BuildTaskWrapper(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  const Wrapper* w = FindWrapper(args.metric_name());
  if (w == nullptr) return absl::InternalError(absl::StrCat(args.metric_name(), ": not a task wrapper"));
  // The whole signature is read (accepted) first, so that an argument outside
  // it is reported before anything else.
  std::vector<absl::string_view> allowed;
  for (size_t t = 0; t < kTaskNames.size(); ++t) {
    if (Takes(*w, t)) allowed.push_back(kTaskNames[t]);
  }
  args.Find("task", absl::StrCat("one of ", absl::StrJoin(allowed, ", ")));
  for (size_t t = 0; t < kTaskNames.size(); ++t) {
    if (!Takes(*w, t)) continue;
    for (absl::string_view a : Passed(*w, t)) args.Find(a, "passed to the task metric");
  }
  // Slices and bootstrap intervals apply to the task metric as to any:
  // BuildMetric reads them after this build, so they stay unread here.
  SpecArgs check = args;
  for (absl::string_view a : kReplicaArgs) {
    if (check.Has(a)) check.Find(a);
  }
  TALLY_RETURN_IF_ERROR(check.CheckAllUsed());

  TALLY_ASSIGN_OR_RETURN(std::string given, args.GetString("task"));
  const std::string lower = absl::AsciiStrToLower(given);
  size_t task = kTaskNames.size();
  for (size_t t = 0; t < kTaskNames.size(); ++t) {
    if (Takes(*w, t) && kTaskNames[t] == lower) task = t;
  }
  if (task == kTaskNames.size()) {
    return args.InvalidArgument(
        absl::StrCat("argument 'task' must be one of '", absl::StrJoin(allowed, "', '"), "', got '", given, "'"));
  }

  TALLY_ASSIGN_OR_RETURN(MetricSpec defaults, ParseMetricSpec(absl::StrCat(w->name, "(", w->defaults, ")")));
  auto default_of = [&](absl::string_view name) -> const ArgValue* {
    for (const auto& [key, value] : defaults.args) {
      if (key == name) return &value;
    }
    return nullptr;
  };
  // The task metric's spec: what the wrapper passes, under the wrapper's name.
  MetricSpec passed{args.spec().text, args.metric_name(), {}};
  for (absl::string_view name : Passed(*w, task)) {
    const ArgValue* v = args.Find(name);
    if (v == nullptr) v = default_of(name);
    if (name == "num_classes" || name == "num_labels") {
      if (v == nullptr) {
        return args.InvalidArgument(
            absl::StrCat("missing required argument '", name, "' for task '", kTaskNames[task], "'"));
      }
      if (std::holds_alternative<std::monostate>(*v)) {
        return args.InvalidArgument(
            absl::StrCat("argument '", name, "' must be an integer for task '", kTaskNames[task], "', got none"));
      }
    }
    if (v != nullptr) passed.args.emplace_back(std::string(name), *v);
  }

  const std::string task_metric = TaskMetricName(*w, task);
  const MetricInfo* info = FindMetric(task_metric);
  if (info == nullptr) {
    return absl::InternalError(absl::StrCat(args.metric_name(), ": task metric '", task_metric, "' is not registered"));
  }
  SpecArgs task_args(std::move(passed));
  TALLY_ASSIGN_OR_RETURN(dsl::Metric metric, info->build(task_args, sig, device));
  if (absl::Status unread = task_args.CheckAllUsed(); !unread.ok()) {
    // The row passes an argument the task metric does not take: a table bug.
    return absl::InternalError(absl::StrCat("task wrapper -> ", task_metric, ": ", unread.message()));
  }
  return metric;
}

}  // namespace

void RegisterTaskWrappers(std::vector<MetricInfo>& out) {
  auto find = [&](const std::string& name) -> const MetricInfo* {
    for (const MetricInfo& m : out) {
      if (m.name == name) return &m;
    }
    return nullptr;
  };
  std::vector<MetricInfo> wrappers;
  for (const Wrapper& w : kWrappers) {
    const MetricInfo* first = nullptr;
    bool complete = true;
    for (size_t t = 0; t < kTaskNames.size(); ++t) {
      if (!Takes(w, t)) continue;
      const MetricInfo* m = find(TaskMetricName(w, t));
      complete &= m != nullptr;
      if (first == nullptr) first = m;
    }
    if (!complete || first == nullptr) continue;
    // Not `groups`: a wrapper passes on TorchMetrics' arguments only, never
    // num_groups; its slices are the generic ones (metrics/replicas.h).
    std::vector<std::string> inputs = first->inputs;
    inputs.erase(std::remove(inputs.begin(), inputs.end(), "groups"), inputs.end());
    wrappers.push_back({std::string(w.name), "task_wrapper", std::move(inputs), BuildTaskWrapper});
  }
  for (MetricInfo& m : wrappers) out.push_back(std::move(m));
}

}  // namespace tally::metrics
