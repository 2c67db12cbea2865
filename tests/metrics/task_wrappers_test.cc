// Tests of the task wrappers (metrics/task_wrappers.cc): TorchMetrics 1.5's
// accuracy(task=...), auroc(task=...), ... against the task metrics they
// dispatch to, called as TorchMetrics' wrappers call them (every argument
// spelled out with the wrapper's default), on logits, probabilities and
// labels, with ignore_index; the arguments each wrapper passes on, those it
// accepts and ignores, and those it rejects; the default-average difference
// (micro in the wrapper, macro in multiclass_accuracy & co.); errors naming
// the wrapper.
#include <ATen/ATen.h>
#include <algorithm>

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "api/tally.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "metrics/spec.h"

namespace tally {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// --- what TorchMetrics' wrappers pass ---------------------------------------------

// WrapperCall is one wrapper as torchmetrics/functional/classification/*.py
// writes it: the arguments it passes to binary_<name>, multiclass_<name> and
// multilabel_<name>, each with the wrapper's default ("" = the wrapper
// rejects the task), for num_classes=3 / num_labels=3 and `required` (what
// the wrapper requires besides task, num_classes and num_labels).
struct WrapperCall {
  std::string name;
  bool optional;  // registered only once its task metrics are
  std::string required;
  std::string binary, multiclass, multilabel;
};

const char kTail[] = "ignore_index=none, validate_args=true";

std::vector<WrapperCall> Calls() {
  const std::string tail = kTail;
  auto stat = [&](const std::string& name, const std::string& pre, const std::string& post) {
    return WrapperCall{
        name,
        false,
        "",
        absl::StrCat(pre, "threshold=0.5, multidim_average=global, ", tail, post),
        absl::StrCat(pre, "num_classes=3, average=micro, top_k=1, multidim_average=global, ", tail, post),
        absl::StrCat(pre, "num_labels=3, threshold=0.5, average=micro, multidim_average=global, ", tail, post)};
  };
  auto fixed = [&](const std::string& name, const std::string& min) {
    const std::string m = absl::StrCat(min, "=0.5, thresholds=none, ", tail);
    return WrapperCall{name,
                       true,
                       absl::StrCat(min, "=0.5"),
                       m,
                       absl::StrCat("num_classes=3, ", m),
                       absl::StrCat("num_labels=3, ", m)};
  };
  return {
      stat("accuracy", "", ""),
      stat("precision", "", ", zero_division=0"),
      stat("recall", "", ", zero_division=0"),
      stat("f1_score", "", ", zero_division=0"),
      stat("fbeta_score", "beta=1.0, ", ", zero_division=0"),
      stat("specificity", "", ""),
      stat("negative_predictive_value", "", ", zero_division=0"),
      stat("stat_scores", "", ""),
      stat("hamming_distance", "", ""),
      {"confusion_matrix", false, "", absl::StrCat("threshold=0.5, normalize=none, ", tail),
       absl::StrCat("num_classes=3, normalize=none, ", tail),
       absl::StrCat("num_labels=3, threshold=0.5, normalize=none, ", tail)},
      {"jaccard_index", false, "", absl::StrCat("threshold=0.5, ", tail, ", zero_division=0.0"),
       absl::StrCat("num_classes=3, average=macro, ", tail, ", zero_division=0.0"),
       absl::StrCat("num_labels=3, threshold=0.5, average=macro, ", tail, ", zero_division=0.0")},
      {"matthews_corrcoef", false, "", absl::StrCat("threshold=0.5, ", tail), absl::StrCat("num_classes=3, ", tail),
       absl::StrCat("num_labels=3, threshold=0.5, ", tail)},
      {"cohen_kappa", false, "", absl::StrCat("threshold=0.5, weights=none, ", tail),
       absl::StrCat("num_classes=3, weights=none, ", tail), ""},
      {"exact_match", false, "", "", absl::StrCat("num_classes=3, multidim_average=global, ", tail),
       absl::StrCat("num_labels=3, threshold=0.5, multidim_average=global, ", tail)},
      {"auroc", false, "", absl::StrCat("max_fpr=none, thresholds=none, ", tail),
       absl::StrCat("num_classes=3, average=macro, thresholds=none, ", tail),
       absl::StrCat("num_labels=3, average=macro, thresholds=none, ", tail)},
      {"average_precision", false, "", absl::StrCat("thresholds=none, ", tail),
       absl::StrCat("num_classes=3, average=macro, thresholds=none, ", tail),
       absl::StrCat("num_labels=3, average=macro, thresholds=none, ", tail)},
      {"roc", false, "", absl::StrCat("thresholds=none, ", tail),
       absl::StrCat("num_classes=3, thresholds=none, average=none, ", tail),
       absl::StrCat("num_labels=3, thresholds=none, ", tail)},
      {"eer", false, "", absl::StrCat("thresholds=none, ", tail),
       absl::StrCat("num_classes=3, thresholds=none, average=none, ", tail),
       absl::StrCat("num_labels=3, thresholds=none, ", tail)},
      {"logauc", false, "", absl::StrCat("fpr_range=[0.001,0.1], thresholds=none, ", tail),
       absl::StrCat("num_classes=3, average=none, fpr_range=[0.001,0.1], thresholds=none, ", tail),
       absl::StrCat("num_labels=3, average=none, fpr_range=[0.001,0.1], thresholds=none, ", tail)},
      {"precision_recall_curve", false, "", absl::StrCat("thresholds=none, ", tail),
       absl::StrCat("num_classes=3, thresholds=none, average=none, ", tail),
       absl::StrCat("num_labels=3, thresholds=none, ", tail)},
      {"calibration_error", false, "", absl::StrCat("n_bins=15, norm=l1, ", tail),
       absl::StrCat("num_classes=3, n_bins=15, norm=l1, ", tail), ""},
      // validate_args: the wrapper passes its True where the task functions default to False.
      {"hinge_loss", true, "", absl::StrCat("squared=false, ", tail),
       absl::StrCat("num_classes=3, squared=false, multiclass_mode=crammer-singer, ", tail), ""},
      fixed("recall_at_fixed_precision", "min_precision"),
      fixed("precision_at_fixed_recall", "min_recall"),
      fixed("sensitivity_at_specificity", "min_specificity"),
      fixed("specificity_at_sensitivity", "min_sensitivity"),
  };
}

const char* const kTasks[] = {"binary", "multiclass", "multilabel"};

const std::string& CallFor(const WrapperCall& w, int task) {
  return task == 0 ? w.binary : task == 1 ? w.multiclass : w.multilabel;
}

// Args parses "k=v, ..." into (key, value text) pairs.
std::vector<std::pair<std::string, std::string>> Args(const std::string& args) {
  std::vector<std::pair<std::string, std::string>> out;
  for (absl::string_view kv : absl::StrSplit(args, ", ", absl::SkipEmpty())) {
    std::pair<std::string, std::string> p = absl::StrSplit(kv, absl::MaxSplits('=', 1));
    out.push_back(p);
  }
  return out;
}

std::string Join(const std::vector<std::pair<std::string, std::string>>& args) {
  std::string out;
  for (const auto& [k, v] : args) absl::StrAppend(&out, out.empty() ? "" : ", ", k, "=", v);
  return out;
}

std::string Spec(const std::string& name, const std::string& args) {
  return args.empty() ? name : absl::StrCat(name, "(", args, ")");
}

// WrapperSpec is what a user writes: the task and what the wrapper requires.
std::string WrapperSpec(const WrapperCall& w, int task, const std::string& extra = "") {
  std::string args = absl::StrCat("task=", kTasks[task]);
  if (task == 1) absl::StrAppend(&args, ", num_classes=3");
  if (task == 2) absl::StrAppend(&args, ", num_labels=3");
  if (!w.required.empty()) absl::StrAppend(&args, ", ", w.required);
  if (!extra.empty()) absl::StrAppend(&args, ", ", extra);
  return Spec(w.name, args);
}

bool Registered(const WrapperCall& w) { return metrics::FindMetric(w.name) != nullptr; }

// --- data -----------------------------------------------------------------------

struct Form {
  std::string name;
  NamedTensors inputs;
};

// Forms are random inputs of one task: logits, probabilities and labels
// (23 rows, 3 classes or labels), and probabilities with targets of -1 (for
// ignore_index=-1; without it those targets are out of range).
std::vector<Form> Forms(int task) {
  at::Generator gen = at::detail::createCPUGenerator(4200 + task);
  const int64_t n = 23, c = 3;
  auto f = at::TensorOptions().dtype(at::kFloat);
  auto l = at::TensorOptions().dtype(at::kLong);
  std::vector<int64_t> shape = task == 0 ? std::vector<int64_t>{n} : std::vector<int64_t>{n, c};
  std::vector<int64_t> tshape = task == 2 ? std::vector<int64_t>{n, c} : std::vector<int64_t>{n};
  at::Tensor target = at::randint(0, task == 1 ? c : 2, tshape, gen, l);
  at::Tensor logits = at::randn(shape, gen, f) * 2;
  at::Tensor probs = task == 1 ? logits.softmax(1) : at::rand(shape, gen, f);
  at::Tensor labels = task == 1 ? at::randint(0, c, {n}, gen, l) : at::randint(0, 2, shape, gen, l);
  at::Tensor ignored = at::where(at::rand(tshape, gen, f) < 0.2, at::full({}, -1, l), target);
  return {{"logits", {{"preds", logits}, {"target", target}}},
          {"probs", {{"preds", probs}, {"target", target}}},
          {"labels", {{"preds", labels}, {"target", target}}},
          {"ignored", {{"preds", probs}, {"target", ignored}}}};
}

// --- evaluation and comparison ----------------------------------------------------

absl::StatusOr<ResultTree> Eval(const std::string& spec, const NamedTensors& in, int64_t batch = 0) {
  tally::EvalOptions o;
  o.batch_size = batch;
  auto r = tally::Evaluate({spec}, in, o);
  if (!r.ok()) return r.status();
  return (*r)[0].result;
}

::testing::AssertionResult Identical(const ResultTree& a, const ResultTree& b) {
  if (a.parts.size() != b.parts.size()) return ::testing::AssertionFailure() << "different tuple shapes";
  for (size_t i = 0; i < a.parts.size(); ++i) {
    if (auto r = Identical(a.parts[i], b.parts[i]); !r) return r << " (part " << i << ")";
  }
  if (!a.is_leaf()) return ::testing::AssertionSuccess();
  const at::Tensor &x = a.tensor, &y = b.tensor;
  if (x.scalar_type() != y.scalar_type() || x.sizes() != y.sizes()) {
    return ::testing::AssertionFailure() << c10::toString(x.scalar_type()) << x.sizes() << " vs "
                                         << c10::toString(y.scalar_type()) << y.sizes();
  }
  bool same = at::isFloatingType(x.scalar_type())
                  ? at::equal(x.isnan(), y.isnan()) && at::equal(at::where(x.isnan(), 0, x), at::where(y.isnan(), 0, y))
                  : at::equal(x, y);
  if (!same) return ::testing::AssertionFailure() << "values differ:\n" << x << "\nvs\n" << y;
  return ::testing::AssertionSuccess();
}

// SameOutcome evaluates the wrapper spec and the task spec separately (one
// update and batches of 5): both give bit-identical results, or both fail with
// the same message but for the metric's name. Counts the results compared
// in `*results`.
::testing::AssertionResult SameOutcome(const std::string& wrapper, const std::string& task, const NamedTensors& in,
                                       int* results = nullptr) {
  const std::string wrapper_name = wrapper.substr(0, wrapper.find('('));
  const std::string task_name = task.substr(0, task.find('('));
  for (int64_t batch : {0, 5}) {
    auto a = Eval(wrapper, in, batch);
    auto b = Eval(task, in, batch);
    if (a.ok() != b.ok()) {
      return ::testing::AssertionFailure() << wrapper << ": " << (a.ok() ? "ok" : a.status().ToString()) << "\n"
                                           << task << ": " << (b.ok() ? "ok" : b.status().ToString());
    }
    if (!a.ok()) {
      std::string want = absl::StrReplaceAll(b.status().message(), {{task_name, wrapper_name}});
      if (a.status().code() != b.status().code() || a.status().message() != want) {
        return ::testing::AssertionFailure() << "errors differ:\n" << a.status() << "\n" << b.status();
      }
      continue;
    }
    if (auto r = Identical(*a, *b); !r) return r << "\n" << wrapper << " vs " << task << " (batch " << batch << ")";
    if (results != nullptr) ++*results;
  }
  return ::testing::AssertionSuccess();
}

// --- registry ---------------------------------------------------------------------

TEST(TaskWrappersRegistryTest, EveryWrapperIsRegisteredWithItsTasks) {
  // Verifies that the 18 wrappers of the task metrics Tally has are
  // registered in their own domain with inputs (preds, target); that the
  // others (hinge_loss, the metrics at a fixed point of a curve) are
  // registered exactly when all their task metrics are; and that nothing else
  // is in the domain.
  std::set<std::string> names;
  for (const WrapperCall& w : Calls()) {
    names.insert(w.name);
    bool tasks_registered = true;
    for (int t = 0; t < 3; ++t) {
      if (CallFor(w, t).empty()) continue;
      tasks_registered &= metrics::FindMetric(absl::StrCat(kTasks[t], "_", w.name)) != nullptr;
    }
    EXPECT_TRUE(w.optional || tasks_registered) << w.name;
    const metrics::MetricInfo* info = metrics::FindMetric(w.name);
    EXPECT_EQ(info != nullptr, tasks_registered) << w.name;
    if (info == nullptr) continue;
    EXPECT_EQ(info->domain, "task_wrapper");
    // The task metrics' inputs: with the optional weight where they take it,
    // never `groups` (num_groups is not an argument a wrapper passes on).
    const metrics::MetricInfo* task = metrics::FindMetric(absl::StrCat(kTasks[0], "_", w.name));
    if (task == nullptr) task = metrics::FindMetric(absl::StrCat(kTasks[1], "_", w.name));
    ASSERT_NE(task, nullptr) << w.name;
    std::vector<std::string> want = task->inputs;
    want.erase(std::remove(want.begin(), want.end(), "groups"), want.end());
    EXPECT_EQ(info->inputs, want) << w.name;
    EXPECT_EQ(std::vector<std::string>(info->inputs.begin(), info->inputs.begin() + 2),
              (std::vector<std::string>{"preds", "target"}))
        << w.name;
  }
  for (const auto& m : metrics::AllMetrics()) {
    EXPECT_TRUE(m.domain != "task_wrapper" || names.count(m.name)) << m.name;
  }
}

// --- defaults and arguments --------------------------------------------------------

TEST(TaskWrappersTest, DefaultsAreTorchMetricsWrapperDefaults) {
  // Verifies, for every wrapper and task, that the wrapper with only what it
  // requires is bit-identical to the task metric called as TorchMetrics'
  // wrapper calls it (every argument spelled out with the wrapper's
  // default), on logits, probabilities, labels and out-of-range targets,
  // batched and not.
  int compared = 0;
  for (const WrapperCall& w : Calls()) {
    if (!Registered(w)) continue;
    for (int t = 0; t < 3; ++t) {
      if (CallFor(w, t).empty()) continue;
      const std::string wrapper = WrapperSpec(w, t);
      const std::string task = Spec(absl::StrCat(kTasks[t], "_", w.name), CallFor(w, t));
      for (const Form& form : Forms(t)) {
        SCOPED_TRACE(absl::StrCat(wrapper, " on ", kTasks[t], " ", form.name));
        EXPECT_TRUE(SameOutcome(wrapper, task, form.inputs, &compared));
      }
    }
  }
  EXPECT_GE(compared, 250);  // results (x2 batchings) that both computed, not errors
}

TEST(TaskWrappersTest, PassedArgumentsReachTheTaskMetric) {
  // Verifies that each argument the wrapper passes to a task reaches the task
  // metric: the wrapper with it equals the TorchMetrics call with it (on
  // probabilities, and ignore_index on targets holding -1). Values a task
  // metric rejects (top_k=2 for a curve never applies: top_k is passed only
  // where TorchMetrics passes it) fail alike, naming the wrapper.
  // clang-format off
  const std::vector<std::pair<std::string, std::string>> variants = {
      {"ignore_index", "-1"}, {"threshold", "0.3"}, {"top_k", "2"}, {"average", "macro"}, {"average", "none"},
      {"average", "weighted"}, {"zero_division", "1.0"}, {"beta", "2.0"}, {"thresholds", "5"},
      {"normalize", "true"}, {"weights", "quadratic"}, {"max_fpr", "0.5"}, {"n_bins", "4"}, {"norm", "max"},
      {"squared", "true"}, {"multiclass_mode", "one-vs-all"}, {"multidim_average", "samplewise"},
      {"validate_args", "false"}};
  // clang-format on
  int compared = 0;
  for (const WrapperCall& w : Calls()) {
    if (!Registered(w)) continue;
    for (int t = 0; t < 3; ++t) {
      if (CallFor(w, t).empty()) continue;
      const std::vector<Form> forms = Forms(t);
      for (const auto& [key, value] : variants) {
        std::vector<std::pair<std::string, std::string>> call = Args(CallFor(w, t));
        bool passed = false;
        for (auto& [k, v] : call) {
          if (k == key) v = value, passed = true;
        }
        if (!passed) continue;
        const std::string wrapper = WrapperSpec(w, t, absl::StrCat(key, "=", value));
        const std::string task = Spec(absl::StrCat(kTasks[t], "_", w.name), Join(call));
        const Form& form = forms[key == "ignore_index" ? 3 : 1];
        SCOPED_TRACE(wrapper);
        EXPECT_TRUE(SameOutcome(wrapper, task, form.inputs, &compared));
      }
    }
  }
  EXPECT_GE(compared, 400);
}

TEST(TaskWrappersTest, ArgumentsForOtherTasksAreAcceptedAndIgnored) {
  // Verifies that an argument of the wrapper's signature that it does not
  // pass to the chosen task is accepted whatever its value, as in
  // TorchMetrics: accuracy(task=binary, num_classes=1, average=bogus, top_k=0)
  // is binary_accuracy. The values are ones the task metric would reject.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"num_classes", "1"}, {"num_labels", "none"}, {"threshold", "7"},      {"top_k", "0"},
      {"average", "bogus"}, {"max_fpr", "5.0"},     {"multiclass_mode", "x"}};
  int checked = 0;
  for (const WrapperCall& w : Calls()) {
    if (!Registered(w)) continue;
    std::set<std::string> signature;
    for (int t = 0; t < 3; ++t) {
      for (const auto& [k, v] : Args(CallFor(w, t))) signature.insert(k);
    }
    for (int t = 0; t < 3; ++t) {
      if (CallFor(w, t).empty()) continue;
      std::set<std::string> passed;
      for (const auto& [k, v] : Args(CallFor(w, t))) passed.insert(k);
      std::string ignored;
      for (const auto& [key, value] : bad) {
        if (!signature.count(key) || passed.count(key)) continue;
        absl::StrAppend(&ignored, ignored.empty() ? "" : ", ", key, "=", value);
      }
      if (ignored.empty()) continue;
      const std::string wrapper = WrapperSpec(w, t, ignored);
      SCOPED_TRACE(wrapper);
      EXPECT_TRUE(SameOutcome(wrapper, WrapperSpec(w, t), Forms(t)[1].inputs, &checked));
    }
  }
  EXPECT_GE(checked, 90);
}

TEST(TaskWrappersTest, DefaultAverageIsMicroUnlikeTheTaskMetrics) {
  // Verifies the documented difference: the stat-score wrappers average
  // "micro" where multiclass_accuracy & co. average "macro". On labels
  // [0, 0, 0, 1] for targets [0, 0, 1, 2] micro accuracy is 2/4 and macro
  // accuracy (1 + 0 + 0) / 3.
  const NamedTensors mc = {{"preds", at::tensor({0, 0, 0, 1}, at::kLong)},
                           {"target", at::tensor({0, 0, 1, 2}, at::kLong)}};
  auto acc = Eval("accuracy(task=multiclass, num_classes=3)", mc);
  ASSERT_TRUE(acc.ok()) << acc.status();
  EXPECT_DOUBLE_EQ(acc->tensor.item<double>(), 0.5);
  auto macro = Eval("multiclass_accuracy(num_classes=3)", mc);
  ASSERT_TRUE(macro.ok()) << macro.status();
  EXPECT_DOUBLE_EQ(macro->tensor.item<double>(), 1.0 / 3.0);
  for (const char* name : {"accuracy", "precision", "recall", "f1_score", "fbeta_score", "specificity",
                           "negative_predictive_value", "stat_scores", "hamming_distance"}) {
    SCOPED_TRACE(name);
    const std::string wrapper = absl::StrCat(name, "(task=multiclass, num_classes=3)");
    const std::string task =
        absl::StrCat("multiclass_", name, std::string(name) == "fbeta_score" ? "(beta=1.0, " : "(", "num_classes=3");
    EXPECT_TRUE(SameOutcome(wrapper, absl::StrCat(task, ", average=micro)"), mc));
    auto w = Eval(wrapper, mc), t = Eval(absl::StrCat(task, ")"), mc);
    ASSERT_TRUE(w.ok() && t.ok());
    EXPECT_FALSE(Identical(*w, *t)) << "micro == macro on this data";
  }
  // Multilabel precision: label 0 has tp 1, fp 2, label 1 tp 2, fp 0: micro
  // 3/5, macro (1/3 + 1) / 2.
  const NamedTensors ml = {{"preds", at::tensor({1, 0, 1, 1, 1, 1}, at::kLong).reshape({3, 2})},
                           {"target", at::tensor({1, 1, 0, 1, 0, 1}, at::kLong).reshape({3, 2})}};
  auto micro = Eval("precision(task=multilabel, num_labels=2)", ml);
  ASSERT_TRUE(micro.ok()) << micro.status();
  EXPECT_DOUBLE_EQ(micro->tensor.item<double>(), 0.6);
  EXPECT_TRUE(
      SameOutcome("precision(task=multilabel, num_labels=2)", "multilabel_precision(num_labels=2, average=micro)", ml));
  auto ml_macro = Eval("multilabel_precision(num_labels=2)", ml);
  ASSERT_TRUE(ml_macro.ok());
  EXPECT_DOUBLE_EQ(ml_macro->tensor.item<double>(), (1.0 / 3.0 + 1.0) / 2.0);
  // The averages the wrappers share with the task metrics stay macro.
  EXPECT_TRUE(
      SameOutcome("jaccard_index(task=multiclass, num_classes=3)", "multiclass_jaccard_index(num_classes=3)", mc));
}

TEST(TaskWrappersTest, FbetaScoreBetaDefaultsToOne) {
  // Verifies that fbeta_score's beta defaults to 1.0 in the wrapper (the task
  // functions require it): fbeta_score(task=binary) is binary_f1_score.
  for (const Form& form : Forms(0)) {
    SCOPED_TRACE(form.name);
    EXPECT_TRUE(SameOutcome("fbeta_score(task=binary)", "binary_fbeta_score(beta=1.0)", form.inputs));
    auto f = Eval("fbeta_score(task=binary)", form.inputs), f1 = Eval("binary_f1_score", form.inputs);
    ASSERT_EQ(f.ok(), f1.ok());
    if (f.ok()) {
      EXPECT_TRUE(Identical(*f, *f1));
    }
  }
  EXPECT_TRUE(SameOutcome("fbeta_score(task=multiclass, num_classes=3, beta=0.5)",
                          "multiclass_fbeta_score(num_classes=3, beta=0.5, average=micro)", Forms(1)[0].inputs));
}

TEST(TaskWrappersTest, TaskIsCaseInsensitive) {
  // Verifies that `task` matches as TorchMetrics' ClassificationTask.from_str
  // does, ignoring case.
  const Form form = Forms(1)[0];
  EXPECT_TRUE(
      SameOutcome("accuracy(task=MultiClass, num_classes=3)", "accuracy(task=multiclass, num_classes=3)", form.inputs));
  EXPECT_TRUE(SameOutcome("auroc(task='BINARY')", "binary_auroc", Forms(0)[1].inputs));
}

// --- errors -------------------------------------------------------------------------

// BuildError builds `spec` for a multiclass signature and returns the error.
absl::Status BuildError(const std::string& spec) {
  auto parsed = metrics::ParseMetricSpec(spec);
  if (!parsed.ok()) return parsed.status();
  dsl::Signature sig = {{"preds", ir::DType::kFloat32, {8, 3}}, {"target", ir::DType::kInt64, {8}}};
  auto m = metrics::BuildMetric(*parsed, sig, ir::Device{});
  return m.ok() ? absl::OkStatus() : m.status();
}

void ExpectArgumentError(const std::string& spec, const std::vector<std::string>& parts) {
  SCOPED_TRACE(spec);
  absl::Status s = BuildError(spec);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  const std::string name = spec.substr(0, spec.find('('));
  EXPECT_THAT(std::string(s.message()), StartsWith(absl::StrCat(name, ": ")));
  for (const std::string& p : parts) EXPECT_THAT(std::string(s.message()), HasSubstr(p));
}

TEST(TaskWrappersTest, ArgumentErrorsNameTheWrapperAndTheArgument) {
  // Verifies the argument errors TorchMetrics raises (TypeError or
  // ValueError), each naming the wrapper and the argument.
  ExpectArgumentError("accuracy", {"missing required argument 'task'"});
  ExpectArgumentError("accuracy(num_classes=3)", {"missing required argument 'task'"});
  ExpectArgumentError("accuracy(task=multi)",
                      {"argument 'task' must be one of 'binary', 'multiclass', 'multilabel', got 'multi'"});
  ExpectArgumentError("auroc(task=3)", {"argument 'task'", "integer 3"});
  ExpectArgumentError("accuracy(task=multiclass)", {"missing required argument 'num_classes'", "multiclass"});
  ExpectArgumentError("confusion_matrix(task=multiclass, num_classes=none)", {"'num_classes'", "got none"});
  ExpectArgumentError("f1_score(task=multilabel)", {"missing required argument 'num_labels'", "multilabel"});
  ExpectArgumentError("auroc(task=multilabel, num_classes=3)", {"missing required argument 'num_labels'"});
  ExpectArgumentError("exact_match(task=binary)",
                      {"argument 'task' must be one of 'multiclass', 'multilabel', got 'binary'"});
  ExpectArgumentError("cohen_kappa(task=multilabel, num_classes=3)",
                      {"argument 'task' must be one of 'binary', 'multiclass', got 'multilabel'"});
  ExpectArgumentError("calibration_error(task=multilabel)", {"'task'", "'binary', 'multiclass'"});
  // Outside the wrapper's signature: unknown, before anything else (a TypeError in Python).
  ExpectArgumentError("accuracy(task=binary, num_clases=3)", {"unknown argument 'num_clases'", "'num_classes'?"});
  ExpectArgumentError("accuracy(foo=1)", {"unknown argument 'foo'"});
  ExpectArgumentError("accuracy(task=binary, zero_division=1.0)", {"unknown argument 'zero_division'"});
  ExpectArgumentError("cohen_kappa(task=binary, num_labels=3)", {"unknown argument 'num_labels'"});
  ExpectArgumentError("roc(task=binary, max_fpr=0.5)", {"unknown argument 'max_fpr'"});
  ExpectArgumentError("calibration_error(task=binary, threshold=0.5)", {"unknown argument 'threshold'"});
  // The task metric's own checks, under the wrapper's name.
  ExpectArgumentError("accuracy(task=multiclass, num_classes=1)", {"num_classes must be an integer >= 2"});
  ExpectArgumentError("accuracy(task=multiclass, num_classes=3, top_k=none)", {"'top_k'"});
  ExpectArgumentError("precision(task=binary, threshold=1)", {"threshold"});
  ExpectArgumentError("f1_score(task=multiclass, num_classes=3, average=mean)", {"'average'"});
  ExpectArgumentError("auroc(task=binary, max_fpr=2.0)", {"max_fpr"});
  ExpectArgumentError("jaccard_index(task=multilabel, num_labels=3, num_classes=3.5, zero_division=x)",
                      {"zero_division"});
}

TEST(TaskWrappersTest, InputAndValueErrorsNameTheWrapper) {
  // Verifies that errors found on the inputs — a shape at build time, a label
  // out of range counted in update and reported by compute — name the
  // wrapper as the user wrote it.
  NamedTensors mc = {{"preds", at::rand({4, 3})}, {"target", at::tensor({0, 1, 5, 2}, at::kLong)}};
  auto r = Eval("accuracy(task=multiclass, num_classes=3)", mc);
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), StartsWith("accuracy: "));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("target"));
  r = Eval("accuracy(task=multiclass, num_classes=4)",
           {{"preds", at::rand({4, 3})}, {"target", at::zeros({4}, at::kLong)}});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), StartsWith("accuracy: "));
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("preds"));
}

TEST(TaskWrappersTest, CollectionsShareStatesWithTheTaskMetrics) {
  // Verifies that a wrapper and its task metric in one collection give the
  // same results as alone (they share the confusion matrix by structure).
  const Form form = Forms(1)[0];
  tally::EvalOptions o;
  auto both =
      tally::Evaluate({"accuracy(task=multiclass, num_classes=3)", "multiclass_accuracy(num_classes=3, average=micro)",
                       "f1_score(task=multiclass, num_classes=3, average=macro)"},
                      form.inputs, o);
  ASSERT_TRUE(both.ok()) << both.status();
  EXPECT_TRUE(Identical((*both)[0].result, (*both)[1].result));
  auto f1 = Eval("multiclass_f1_score(num_classes=3)", form.inputs);
  ASSERT_TRUE(f1.ok());
  EXPECT_TRUE(Identical((*both)[2].result, *f1));
}

}  // namespace
}  // namespace tally
