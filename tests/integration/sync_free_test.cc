// Registry-wide compiler guarantees: every library metric, alone and in the
// benchmark collections, compiles to an update that never reads the host
// (it executes on `meta` tensors, which cannot be read), carries a
// single-device proof, and plans for a device this machine lacks.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/tally.h"
#include "engine/runtime/compiler.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "ops/op_registry.h"

namespace tally {
namespace {

// SpecFor adds the arguments a metric requires.
std::string SpecFor(const std::string& name) {
  if (absl::StrContains(name, "_at_")) {  // recall_at_fixed_precision & co. require min_precision & co.
    std::string min = absl::StrCat("min_", name.substr(name.rfind('_') + 1), "=0.5");
    if (absl::StartsWith(name, "multiclass_")) return absl::StrCat(name, "(num_classes=3, ", min, ")");
    if (absl::StartsWith(name, "multilabel_")) return absl::StrCat(name, "(num_labels=3, ", min, ")");
    return absl::StrCat(name, "(", min, ")");
  }
  if (absl::StartsWith(name, "multiclass_")) {
    return absl::StrCat(name, absl::StrContains(name, "fbeta") ? "(num_classes=3, beta=2.0)" : "(num_classes=3)");
  }
  if (absl::StartsWith(name, "multilabel_")) {
    return absl::StrCat(name, absl::StrContains(name, "fbeta") ? "(num_labels=3, beta=2.0)" : "(num_labels=3)");
  }
  if (absl::StrContains(name, "fbeta")) return absl::StrCat(name, "(beta=2.0)");
  return name;
}

// WrapperSpecs lists task wrapper `m` (accuracy, auroc, ...) once per task
// it has: SpecFor of the task metric, renamed, with `task` first
// ("fbeta_score(task=binary, beta=2.0)").
std::vector<std::string> WrapperSpecs(const metrics::MetricInfo& m) {
  std::vector<std::string> out;
  for (const std::string task : {"binary", "multiclass", "multilabel"}) {
    const std::string metric = absl::StrCat(task, "_", m.name);
    if (metrics::FindMetric(metric) == nullptr) continue;
    std::string spec = SpecFor(metric).substr(task.size() + 1);
    size_t paren = spec.find('(');
    out.push_back(paren == std::string::npos
                      ? absl::StrCat(spec, "(task=", task, ")")
                      : absl::StrCat(spec.substr(0, paren + 1), "task=", task, ", ", spec.substr(paren + 1)));
  }
  return out;
}

// Specs is SpecFor and, for the threshold-free curves, their binned forms
// (thresholds=5 and an unsorted list), whose update and finalize differ; a
// task wrapper once per task.
std::vector<std::string> Specs(const metrics::MetricInfo& m) {
  if (m.domain == "task_wrapper") return WrapperSpecs(m);
  std::string spec = SpecFor(m.name);
  if (m.domain != "curves") return {spec};
  auto with = [&](const std::string& arg) {
    return spec.back() == ')' ? absl::StrCat(spec.substr(0, spec.size() - 1), ", ", arg, ")")
                              : absl::StrCat(spec, "(", arg, ")");
  };
  std::vector<std::string> out = {spec, with("thresholds=5"), with("thresholds=[0.2, 0.5, 0.7]")};
  if (m.name == "binary_auroc") {  // max_fpr: partial AUC, exact (sort + cumsum) and binned
    out.push_back(with("max_fpr=0.3"));
    out.push_back(with("max_fpr=0.3, thresholds=5"));
  }
  return out;
}

// Signatures lists input forms to try for a metric, as (name, dtype, shape).
std::vector<NamedTensors> InputForms(const metrics::MetricInfo& m, const at::TensorOptions& o) {
  const int64_t n = 5;
  auto f = o.dtype(at::kFloat);
  auto l = o.dtype(at::kLong);
  if (m.domain == "aggregation") return {{{"value", at::empty({n}, f)}}};
  if (m.domain == "retrieval") {
    return {{{"preds", at::empty({n}, f)}, {"target", at::empty({n}, l)}, {"indexes", at::empty({n}, l)}}};
  }
  if (m.domain == "regression") {
    return {{{"preds", at::empty({n}, f)}, {"target", at::empty({n}, f)}},
            {{"preds", at::empty({n, 3}, f)}, {"target", at::empty({n, 3}, f)}}};
  }
  std::vector<NamedTensors> binary = {{{"preds", at::empty({n}, f)}, {"target", at::empty({n}, l)}},
                                      {{"preds", at::empty({n}, l)}, {"target", at::empty({n}, l)}}};
  std::vector<NamedTensors> multiclass = {{{"preds", at::empty({n, 3}, f)}, {"target", at::empty({n}, l)}},
                                          {{"preds", at::empty({n}, l)}, {"target", at::empty({n}, l)}}};
  std::vector<NamedTensors> multilabel = {{{"preds", at::empty({n, 3}, f)}, {"target", at::empty({n, 3}, l)}}};
  if (absl::StartsWith(m.name, "binary_")) return binary;
  if (absl::StartsWith(m.name, "multiclass_")) return multiclass;
  if (m.domain == "task_wrapper") {  // every task's forms; each spec builds for its own
    std::vector<NamedTensors> all = binary;
    all.insert(all.end(), multiclass.begin(), multiclass.end());
    all.insert(all.end(), multilabel.begin(), multilabel.end());
    return all;
  }
  return multilabel;
}

// CompileFor builds `specs` for `inputs` (whose shapes and dtypes are what
// matters) on `device`.
absl::StatusOr<Compiled> CompileFor(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                    const ir::Device& device) {
  NamedTensors cpu;
  for (const auto& [k, t] : inputs) cpu.emplace_back(k, at::empty(t.sizes(), t.options().device(at::kCPU)));
  auto sig = tally::SignatureOf(cpu);
  if (!sig.ok()) return sig.status();
  auto entries = tally::BuildEntries(specs, *sig, device);
  if (!entries.ok()) return entries.status();
  CompileOptions co;
  co.device = device;
  return CompileModule(*entries, co);
}

void ExpectSyncFreeOnMeta(const std::vector<std::string>& specs, const NamedTensors& meta_inputs) {
  SCOPED_TRACE(absl::StrJoin(specs, ", "));
  ir::Device meta{"meta"};
  auto c = CompileFor(specs, meta_inputs, meta);
  ASSERT_TRUE(c.ok()) << c.status();
  for (const auto& n : c->module->update->nodes()) {
    EXPECT_FALSE(ops::SyncsHost(*n)) << n->op();
    EXPECT_FALSE(ops::HasDataDependentShape(*n)) << n->op();
  }
  EXPECT_EQ(c->proof.device, "meta");
  EXPECT_FALSE(c->proof.edges.empty());
  EXPECT_EQ(c->proof.boundary_checks.size(), c->module->update->params().size());
  ProgramOptions po;
  po.device = meta;
  auto prog = Program::Create(std::move(c->module), po);
  ASSERT_TRUE(prog.ok()) << prog.status();
  // Two updates: the second folds into states that are already meta tensors.
  for (int i = 0; i < 2; ++i) {
    absl::Status st = (*prog)->Update(meta_inputs);
    ASSERT_TRUE(st.ok()) << st;
  }
  for (const auto& s : (*prog)->states()) EXPECT_TRUE(s.is_meta());
}

TEST(SyncFree, EveryMetricUpdatesOnMeta) {
  // Verifies that every registered metric, in each input form it accepts,
  // runs its update on meta tensors and carries a device proof.
  auto meta = at::TensorOptions().device(at::kMeta);
  int compiled = 0;
  for (const auto& m : metrics::AllMetrics()) {
    for (const std::string& spec : Specs(m)) {
      int forms = 0;
      for (const NamedTensors& in : InputForms(m, meta)) {
        auto c = CompileFor({spec}, in, ir::Device{"meta"});
        if (!c.ok()) continue;  // this input form is not one the metric takes
        ExpectSyncFreeOnMeta({spec}, in);
        ++compiled;
        ++forms;
      }
      // A task wrapper's spec per task builds for that task's forms.
      EXPECT_TRUE(m.domain != "task_wrapper" || forms > 0) << spec;
    }
  }
  EXPECT_GE(compiled, static_cast<int>(metrics::AllMetrics().size()));
}

TEST(SyncFree, BenchmarkCollectionsUpdateOnMeta) {
  // Verifies the same for the collections of the benchmark workloads.
  auto meta = at::TensorOptions().device(at::kMeta);
  ExpectSyncFreeOnMeta(
      {"multiclass_accuracy(num_classes=10)", "multiclass_precision(num_classes=10)",
       "multiclass_recall(num_classes=10)", "multiclass_f1_score(num_classes=10)",
       "multiclass_confusion_matrix(num_classes=10)"},
      {{"preds", at::empty({32, 10}, meta.dtype(at::kFloat))}, {"target", at::empty({32}, meta.dtype(at::kLong))}});
  ExpectSyncFreeOnMeta(
      {"mean_squared_error", "mean_absolute_error", "r2_score", "pearson_corrcoef", "concordance_corrcoef"},
      {{"preds", at::empty({32}, meta.dtype(at::kFloat))}, {"target", at::empty({32}, meta.dtype(at::kFloat))}});
}

TEST(SyncFree, SlicesAndBootstrapsUpdateOnMeta) {
  // Verifies the same for sliced and bootstrapped metrics (replica_histogram
  // draws on the program's device; the default row ids are made there too),
  // and that they plan for cuda:1 with every value there.
  auto meta = at::TensorOptions().device(at::kMeta);
  const NamedTensors bin = {{"preds", at::empty({64}, meta.dtype(at::kFloat))},
                            {"target", at::empty({64}, meta.dtype(at::kLong))},
                            {"groups", at::empty({64}, meta.dtype(at::kInt))}};
  const std::vector<std::string> specs = {
      "binary_auroc(num_groups=4)", "binary_auroc(thresholds=200, num_groups=4, overall=true)",
      "binary_f1_score(num_groups=4)", "binary_average_precision(thresholds=exact16, num_groups=3)"};
  ExpectSyncFreeOnMeta(specs, bin);
  const NamedTensors boot(bin.begin(), bin.end() - 1);
  ExpectSyncFreeOnMeta({"binary_auroc(thresholds=200, num_bootstraps=50, seed=7, quantile=[0.05, 0.95])",
                        "binary_auroc(thresholds=exact16, num_bootstraps=10)", "binary_accuracy(num_bootstraps=20)"},
                       boot);
  ExpectSyncFreeOnMeta({"multiclass_f1_score(num_classes=10, num_groups=8)",
                        "multiclass_confusion_matrix(num_classes=10, num_bootstraps=5)"},
                       {{"preds", at::empty({32, 10}, meta.dtype(at::kFloat))},
                        {"target", at::empty({32}, meta.dtype(at::kLong))},
                        {"groups", at::empty({32}, meta.dtype(at::kLong))}});
  ExpectSyncFreeOnMeta({"mean_squared_error(num_bootstraps=30)", "mean_absolute_error(num_bootstraps=30)"},
                       {{"preds", at::empty({32}, meta.dtype(at::kFloat))},
                        {"target", at::empty({32}, meta.dtype(at::kFloat))},
                        {"row_id", at::empty({32}, meta.dtype(at::kLong))}});
  NamedTensors cpu;
  for (const auto& [k, t] : bin) cpu.emplace_back(k, at::empty(t.sizes(), t.options().device(at::kCPU)));
  auto c = CompileFor({specs[1], "binary_auroc(thresholds=200, num_bootstraps=50)"}, cpu, ir::Device{"cuda:1"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->proof.device, "cuda:1");
  for (const auto& s : c->module->states) EXPECT_EQ(s.type.device.name, "cuda:1");
}

TEST(SyncFree, EveryMetricPlansForAMissingDevice) {
  // Verifies that planning for cuda:1 (absent here) puts every value and
  // state on cuda:1, proves it, and decomposes fusion groups that have no
  // kernel there.
  auto cpu = at::TensorOptions();
  for (const auto& m : metrics::AllMetrics()) {
    for (const std::string& spec : Specs(m)) {
      for (const NamedTensors& in : InputForms(m, cpu)) {
        auto c = CompileFor({spec}, in, ir::Device{"cuda:1"});
        if (!c.ok()) continue;
        SCOPED_TRACE(spec);
        EXPECT_EQ(c->proof.device, "cuda:1");
        for (const auto& s : c->module->states) EXPECT_EQ(s.type.device.name, "cuda:1");
        for (const auto& n : c->module->update->nodes()) {
          EXPECT_FALSE(ops::IsComposite(*n)) << n->op() << " has no fused kernel on cuda";
          for (ir::Value* v : n->outputs()) EXPECT_EQ(v->type().device.name, "cuda:1");
        }
      }
    }
  }
}

TEST(SyncFree, HostSearchesStayOnTheHost) {
  // Verifies that translation_edit_rate, whose shift search runs row by row
  // on the host, is refused for cuda:1 (each update would copy the ids to
  // the host, a sync) with an error naming the metric and the way out, and
  // plans on meta and cpu.
  const NamedTensors ids = {{"preds", at::empty({4, 6}, at::kLong)}, {"target", at::empty({4, 2, 5}, at::kLong)}};
  auto c = CompileFor({"translation_edit_rate"}, ids, ir::Device{"cuda:1"});
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::StrContains(c.status().message(), "translation_edit_rate")) << c.status();
  EXPECT_TRUE(absl::StrContains(c.status().message(), "place it on cpu, not cuda:1")) << c.status();
  EXPECT_TRUE(CompileFor({"translation_edit_rate"}, ids, ir::Device{"meta"}).ok());
  EXPECT_TRUE(CompileFor({"translation_edit_rate"}, ids, ir::Device{"cpu"}).ok());
}

TEST(SyncFree, SharedStatisticsRunOnce) {
  // Verifies the fusion claim of the cls_small collection: accuracy,
  // precision, recall, F1 and the confusion matrix share one state set and
  // one fused kernel per update.
  auto c = CompileFor({"multiclass_accuracy(num_classes=10)", "multiclass_precision(num_classes=10)",
                       "multiclass_recall(num_classes=10)", "multiclass_f1_score(num_classes=10)",
                       "multiclass_confusion_matrix(num_classes=10)"},
                      {{"preds", at::empty({32, 10})}, {"target", at::empty({32}, at::kLong)}}, ir::Device{});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->module->update->nodes().size(), 1u);
  EXPECT_EQ(c->fusion_groups.size(), 1u);
  int non_check = 0;
  for (const auto& s : c->module->states) non_check += s.check.empty();
  EXPECT_EQ(non_check, 1);
}

}  // namespace
}  // namespace tally

namespace tally {
namespace {

TEST(ProgramTo, MovesStatesAndReproves) {
  // Verifies that Program::To recompiles for the new device (every value of
  // the moved program on it), carries the states over, and that a device
  // this machine lacks is a clear error, not a crash.
  auto sig = tally::SignatureOf({{"preds", at::empty({4, 3})}, {"target", at::empty({4}, at::kLong)}});
  ASSERT_TRUE(sig.ok());
  auto entries = tally::BuildEntries({"multiclass_accuracy(num_classes=3)"}, *sig, ir::Device{});
  ASSERT_TRUE(entries.ok());
  auto prog = Compile(*entries, CompileOptions{});
  ASSERT_TRUE(prog.ok());
  at::Tensor preds = at::tensor({0.1f, 0.7f, 0.2f, 0.9f, 0.05f, 0.05f}).reshape({2, 3});
  ASSERT_TRUE((*prog)->Update({{"preds", preds}, {"target", at::tensor({1, 0}, at::kLong)}}).ok());
  auto meta = (*prog)->To(ir::Device{"meta"});
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ((*meta)->options().device.name, "meta");
  for (const auto& s : (*meta)->states()) EXPECT_TRUE(s.is_meta());
  for (const auto& n : (*meta)->module().update->nodes())
    for (ir::Value* v : n->outputs()) EXPECT_EQ(v->type().device.name, "meta");
  auto back = (*meta)->To(ir::Device{"cpu"});
  EXPECT_FALSE(back.ok());  // meta states hold no values to copy back
  auto cpu = (*prog)->To(ir::Device{"cpu"});
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  auto v = (*cpu)->Compute();
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_DOUBLE_EQ((*v)[0].second.item<double>(), 1.0);
  auto cuda = (*prog)->To(ir::Device{"cuda:1"});
  EXPECT_FALSE(cuda.ok());
  EXPECT_NE(std::string(cuda.status().message()).find("cuda"), std::string::npos) << cuda.status();
}

}  // namespace
}  // namespace tally
