// Regression tests for the field failures in the field-bug table of docs/design.md, each named
// after the bug it ends.
#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "engine/exec/torchscript/plan.h"
#include "engine/ir/parser.h"
#include "engine/runtime/compiler.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "ops/op_registry.h"

namespace tally {
namespace {

absl::StatusOr<std::unique_ptr<Program>> Make(const std::vector<std::string>& specs, const NamedTensors& like,
                                              CompileOptions co) {
  NamedTensors cpu;
  for (const auto& [k, t] : like) cpu.emplace_back(k, at::empty(t.sizes(), t.options().device(at::kCPU)));
  auto sig = tally::SignatureOf(cpu);
  if (!sig.ok()) return sig.status();
  auto entries = tally::BuildEntries(specs, *sig, co.device);
  if (!entries.ok()) return entries.status();
  return Compile(*entries, co);
}

TEST(FieldBugs, ConcordanceAndPearsonStatesNeverLeaveTheProgramDevice) {
  // Verifies the "Encountered different devices" failure cannot happen: a
  // concordance/pearson program placed on meta creates every state and every
  // intermediate there, and keeps them there through updates and merges.
  CompileOptions co;
  co.device = ir::Device{"meta"};
  co.checked = true;
  auto meta = at::TensorOptions().device(at::kMeta);
  NamedTensors in{{"preds", at::empty({16}, meta)}, {"target", at::empty({16}, meta)}};
  auto a = Make({"concordance_corrcoef", "pearson_corrcoef"}, in, co);
  auto b = Make({"concordance_corrcoef", "pearson_corrcoef"}, in, co);
  ASSERT_TRUE(a.ok() && b.ok());
  for (const auto& s : (*a)->module().states) EXPECT_EQ(s.type.device.name, "meta") << s.name;
  ASSERT_TRUE((*a)->Update(in).ok());
  ASSERT_TRUE((*b)->Update(in).ok());
  ASSERT_TRUE((*a)->Merge(**b).ok());
  for (const auto& t : (*a)->states()) EXPECT_TRUE(t.is_meta());
}

TEST(FieldBugs, CheckedExecutionKeepsEveryOpOnItsPlannedDevice) {
  // Verifies, for every registered metric on real CPU data, that the checked
  // executor finds every produced tensor on its planned device with its
  // planned dtype and rank (the _cumsum-lands-on-cuda:0 class of bug).
  at::Generator gen = at::detail::createCPUGenerator(5);
  const int64_t n = 12;
  at::Tensor probs = at::rand({n}, gen), labels = at::randint(0, 2, {n}, gen, at::kLong);
  at::Tensor scores = at::randn({n, 3}, gen), classes = at::randint(0, 3, {n}, gen, at::kLong);
  at::Tensor ml_target = at::randint(0, 2, {n, 3}, gen, at::kLong);
  at::Tensor x = at::randn({n}, gen), y = x + at::randn({n}, gen), xm = at::randn({n, 3}, gen);
  int checked = 0;
  for (const auto& m : metrics::AllMetrics()) {
    if (m.domain == "task_wrapper") {  // accuracy(task=...) & co.: each task it has, on that task's inputs
      // The arguments TorchMetrics' wrappers require besides num_classes/num_labels.
      std::string extra = absl::StrContains(m.name, "fbeta") ? ", beta=2.0" : "";
      if (absl::StrContains(m.name, "_at_")) {  // recall_at_fixed_precision: min_precision
        extra = absl::StrCat(", min_", m.name.substr(m.name.rfind('_') + 1), "=0.5");
      }
      struct TaskCase {
        const char* task;
        const char* args;
        NamedTensors in;
      };
      const TaskCase tasks[] = {{"binary", "", {{"preds", probs}, {"target", labels}}},
                                {"multiclass", ", num_classes=3", {{"preds", scores}, {"target", classes}}},
                                {"multilabel", ", num_labels=3", {{"preds", scores.sigmoid()}, {"target", ml_target}}}};
      for (const TaskCase& t : tasks) {
        if (metrics::FindMetric(absl::StrCat(t.task, "_", m.name)) == nullptr) continue;  // a task it does not take
        const std::string s = absl::StrCat(m.name, "(task=", t.task, t.args, extra, ")");
        SCOPED_TRACE(s);
        tally::EvalOptions opts;
        opts.checked = true;
        opts.batch_size = 5;
        auto r = tally::Evaluate({s}, t.in, opts);
        EXPECT_TRUE(r.ok()) << r.status();
      }
      ++checked;
      continue;
    }
    std::string spec = m.name;
    NamedTensors in;
    if (m.domain == "aggregation") {
      in = {{"value", x}};
    } else if (m.domain == "regression") {
      in = m.name == "cosine_similarity" ? NamedTensors{{"preds", xm}, {"target", xm + 1}}
                                         : NamedTensors{{"preds", x}, {"target", y}};
      if (m.name == "kl_divergence" || m.name == "jensen_shannon_divergence") {
        in = {{"preds", xm.abs() + 0.1}, {"target", xm.abs() + 0.2}};
      }
      if (m.name == "continuous_ranked_probability_score") in = {{"preds", xm}, {"target", x}};
      if (m.name == "minkowski_distance") spec += "(p=3.0)";
      if (m.name == "critical_success_index") spec += "(threshold=0.5)";
    } else if (m.domain == "retrieval") {
      in = {{"preds", probs}, {"target", labels}, {"indexes", classes}};
    } else if (m.domain == "fairness") {
      in = {{"preds", probs}, {"target", labels}, {"groups", classes}};
      if (m.name == "demographic_parity") in.erase(in.begin() + 1);
      spec += "(num_groups=3)";
    } else if (m.name == "fleiss_kappa") {
      in = {{"ratings", at::one_hot(classes.view({3, 4}), 3).sum(1)}};
    } else if (m.domain == "clustering" && m.inputs[0] == "data") {
      in = {{"data", xm}, {"labels", classes}};
      spec += "(num_clusters=3)";
    } else if (m.name == "perplexity") {  // logits [3, 4, 3] over the classes
      in = {{"preds", scores.view({3, 4, 3})}, {"target", classes.view({3, 4})}};
    } else if (m.domain == "text") {
      in = {{"preds", classes.view({3, 4})}, {"target", (classes.view({3, 4}) + 1).remainder(3) - 1}};
      if (m.name == "chrf_score") spec += "(n_word_order=0)";
    } else if (m.domain == "audio") {  // two speakers' signals (or spectrogram pairs) a row
      const std::vector<int64_t> shape =
          absl::StartsWith(m.name, "complex_") ? std::vector<int64_t>{12, 2, 4, 2} : std::vector<int64_t>{12, 2, 8};
      at::Tensor t = at::linspace(-1, 1, 12 * 16, at::kFloat).sin().view(shape);
      in = {{"preds", t.flip({1}) + 0.1}, {"target", t}};
      if (m.name == "permutation_invariant_training") spec += "(metric=scale_invariant_signal_distortion_ratio)";
    } else if (m.domain == "segmentation") {  // three 2 x 2 index masks
      in = {{"preds", scores.argmax(1).view({3, 2, 2})}, {"target", classes.view({3, 2, 2})}};
      spec += "(num_classes=3, input_format=index)";
    } else if (m.name == "frechet_inception_distance") {
      in = {{"real_features", xm}, {"fake_features", xm * 1.5 + 0.2}};
    } else if (m.domain == "image") {  // two RGB images of 12 x 12
      at::Tensor t = at::linspace(-1, 1, 2 * 3 * 144, at::kFloat).sin().view({2, 3, 12, 12});
      in = m.name == "total_variation" ? NamedTensors{{"img", t}}
                                       : NamedTensors{{"preds", t.flip({3}) * 0.9}, {"target", t}};
      if (absl::StartsWith(m.name, "multiscale_")) spec += "(betas=[0.5, 0.5], kernel_size=3, sigma=0.5)";
    } else if (m.name == "panoptic_quality") {  // three 2 x 2 images of (category, instance)
      at::Tensor t = at::stack({classes.view({3, 2, 2}), labels.view({3, 2, 2})}, 3);
      in = {{"preds", at::stack({scores.argmax(1).view({3, 2, 2}), labels.view({3, 2, 2})}, 3)}, {"target", t}};
      spec += "(things=[0, 1], stuffs=[2])";
    } else if (m.domain == "detection") {  // per image (row) 2 detections, 1 ground-truth box; or box pairs
      at::Tensor corner = xm.abs().narrow(1, 0, 2) * 10;
      at::Tensor box = at::cat({corner, corner + 5}, 1);
      in = m.name == "mean_average_precision" ? NamedTensors{{"boxes", at::stack({box, box + 1}, 1)},
                                                             {"scores", at::stack({probs, 1 - probs}, 1)},
                                                             {"labels", at::stack({classes, labels}, 1)},
                                                             {"target_boxes", box.unsqueeze(1)},
                                                             {"target_labels", classes.view({-1, 1})}}
                                              : NamedTensors{{"preds", box + 0.5}, {"target", box}};
    } else if (m.domain == "clustering" || m.domain == "nominal") {
      in = {{"preds", scores.argmax(1)}, {"target", classes}};
      spec += "(num_classes=3)";
    } else if (absl::StartsWith(m.name, "binary_")) {
      in = {{"preds", probs}, {"target", labels}};
      if (absl::StrContains(m.name, "fbeta")) spec += "(beta=2.0)";
    } else if (absl::StartsWith(m.name, "multiclass_")) {
      in = {{"preds", scores}, {"target", classes}};
      spec += absl::StrContains(m.name, "fbeta") ? "(num_classes=3, beta=2.0)" : "(num_classes=3)";
    } else {
      in = {{"preds", scores.sigmoid()}, {"target", ml_target}};
      spec += absl::StrContains(m.name, "fbeta") ? "(num_labels=3, beta=2.0)" : "(num_labels=3)";
    }
    if (absl::StrContains(m.name, "_at_")) {  // recall_at_fixed_precision & co.: min_precision & co.
      std::string min = absl::StrCat("min_", m.name.substr(m.name.rfind('_') + 1), "=0.5");
      spec = spec.back() == ')' ? absl::StrCat(spec.substr(0, spec.size() - 1), ", ", min, ")")
                                : absl::StrCat(spec, "(", min, ")");
    }
    std::vector<std::string> specs = {spec};
    if (m.domain == "curves") {  // the binned forms too
      std::string head = spec.back() == ')' ? spec.substr(0, spec.size() - 1) + ", " : spec + "(";
      specs.push_back(head + "thresholds=5)");
      specs.push_back(head + "thresholds=[0.2, 0.5, 0.7])");
    }
    for (const std::string& s : specs) {
      SCOPED_TRACE(s);
      tally::EvalOptions opts;
      opts.checked = true;
      opts.batch_size = 5;
      auto r = tally::Evaluate({s}, in, opts);
      EXPECT_TRUE(r.ok()) << r.status();
    }
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(metrics::AllMetrics().size()));
}

TEST(FieldBugs, RankingOpsKeepTheDataDevice) {
  // Verifies the _cumsum bug cannot happen here (TorchMetrics moved cumsum
  // to the CPU under deterministic mode and came back with `.cuda()`, on
  // cuda:0 for data on cuda:1): the ranking ops (sort, argsort, topk,
  // cumsum, bucketize, searchsorted, linspace) preserve their device in the
  // op table; metrics using them (max_fpr AUROC's exact finalize sorts and
  // cumsums; calibration bins by bucketize over a linspace) run checked on
  // CPU data with both backends, every produced tensor on its planned
  // device; planned for cuda:1, their lowered TorchScript never names
  // another device.
  for (const char* op : {"sort", "argsort", "topk", "cumsum", "bucketize", "searchsorted", "linspace"}) {
    const ops::OpDef* d = ops::FindOp(op);
    ASSERT_NE(d, nullptr) << op;
    EXPECT_TRUE(d->traits.preserves_device) << op;
    EXPECT_FALSE(d->traits.syncs_host) << op;
  }
  at::Generator gen = at::detail::createCPUGenerator(8);
  at::Tensor probs = at::rand({30}, gen), labels = at::randint(0, 2, {30}, gen, at::kLong);
  at::Tensor scores = at::randn({30, 4}, gen), classes = at::randint(0, 4, {30}, gen, at::kLong);
  const std::vector<std::string> binary = {"binary_auroc(max_fpr=0.3)", "binary_auroc(max_fpr=0.3, thresholds=9)",
                                           "binary_calibration_error(n_bins=10, norm=l2)"};
  const std::vector<std::string> multiclass = {"multiclass_calibration_error(num_classes=4, norm=max)"};
  for (exec::Backend backend : {exec::Backend::kEager, exec::Backend::kTorchScript}) {
    tally::EvalOptions opts;
    opts.checked = true;
    opts.batch_size = 7;
    opts.backend = backend;
    auto r = tally::Evaluate(binary, {{"preds", probs}, {"target", labels}}, opts);
    EXPECT_TRUE(r.ok()) << r.status();
    r = tally::Evaluate(multiclass, {{"preds", scores}, {"target", classes}}, opts);
    EXPECT_TRUE(r.ok()) << r.status();
  }
  CompileOptions co;
  co.device = ir::Device{"cuda:1"};
  for (const auto& [specs, like] : std::vector<std::pair<std::vector<std::string>, NamedTensors>>{
           {binary, {{"preds", probs}, {"target", labels}}}, {multiclass, {{"preds", scores}, {"target", classes}}}}) {
    auto sig = tally::SignatureOf(like);
    ASSERT_TRUE(sig.ok());
    auto entries = tally::BuildEntries(specs, *sig, co.device);
    ASSERT_TRUE(entries.ok()) << entries.status();
    auto compiled = CompileModule(*entries, co);
    ASSERT_TRUE(compiled.ok()) << compiled.status();
    for (const ir::Graph* g : {compiled->module->update.get(), compiled->module->finalize.get()}) {
      for (const auto& n : g->nodes()) {
        for (const ir::Value* v : n->outputs()) EXPECT_EQ(v->type().device.name, "cuda:1") << n->op();
      }
    }
    auto text = exec::torchscript::LoweredModuleText(*compiled->module);
    ASSERT_TRUE(text.ok()) << text.status();
    EXPECT_TRUE(absl::StrContains(*text, "aten::cumsum") || specs != binary) << *text;
    EXPECT_TRUE(absl::StrContains(*text, "prim::Constant[value=\"cuda:1\"]")) << *text;
    for (const char* other : {"value=\"cpu\"", "value=\"cuda:0\"", "value=\"cuda\"", "aten::cpu", "aten::cuda"}) {
      EXPECT_FALSE(absl::StrContains(*text, other)) << other << " in\n" << *text;
    }
  }
}

TEST(FieldBugs, SafeDivisionNeverSyncs) {
  // Verifies that TorchMetrics' _safe_divide (a host sync per update there)
  // is a sync-free op here: no syncs_host trait, and it runs on meta.
  const ops::OpDef* d = ops::FindOp("safe_div");
  ASSERT_NE(d, nullptr);
  EXPECT_FALSE(d->traits.syncs_host);
  auto m = ir::ParseModule(R"(module {
  state @m.q : f64[]@meta init=0.0 reducer=sum metric="m"
  graph @update(%a: f64[N]@meta, %b: f64[N]@meta) {
    %0 = safe_div(%a, %b) {zero_division=0.0} : f64[N]@meta
    %1 = reduce_sum(%0) : f64[]@meta
    return (m.q: %1)
  }
  graph @finalize(%m.q: f64[]@meta) {
    return (m: %m.q)
  }
}
)");
  ASSERT_TRUE(m.ok()) << m.status();
  ProgramOptions po;
  po.device = ir::Device{"meta"};
  po.checked = true;
  auto p = Program::Create(std::move(*m), po);
  ASSERT_TRUE(p.ok()) << p.status();
  auto meta = at::TensorOptions().device(at::kMeta).dtype(at::kDouble);
  EXPECT_TRUE((*p)->Update({{"a", at::empty({7}, meta)}, {"b", at::empty({7}, meta)}}).ok());
}

TEST(FieldBugs, MixedDeviceInputsAreABoundaryErrorOrOneVisibleTransfer) {
  // Verifies the Composer failure (outputs moved to CPU, targets left on
  // MPS): preds on meta with target on cpu is rejected before any state
  // changes with an error naming the input, its device and the program's;
  // with transfer_inputs each input gets exactly one explicit transfer node.
  at::Tensor preds_meta = at::empty({4, 3}, at::TensorOptions().device(at::kMeta));
  at::Tensor target_cpu = at::tensor({0, 1, 2, 1}, at::kLong);
  CompileOptions co;
  co.device = ir::Device{"meta"};
  auto strict =
      Make({"multiclass_accuracy(num_classes=3)"}, {{"preds", at::empty({4, 3})}, {"target", target_cpu}}, co);
  ASSERT_TRUE(strict.ok()) << strict.status();
  absl::Status st = (*strict)->Update({{"preds", preds_meta}, {"target", target_cpu}});
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(absl::StrContains(st.message(), "target")) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "cpu")) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), "meta")) << st;
  co.transfer_inputs = true;
  auto lenient =
      Make({"multiclass_accuracy(num_classes=3)"}, {{"preds", at::empty({4, 3})}, {"target", target_cpu}}, co);
  ASSERT_TRUE(lenient.ok()) << lenient.status();
  int transfers = 0;
  for (const auto& n : (*lenient)->module().update->nodes()) transfers += n->op() == "transfer";
  EXPECT_EQ(transfers, 2);
  EXPECT_TRUE((*lenient)->Update({{"preds", preds_meta}, {"target", target_cpu}}).ok());
  for (const auto& t : (*lenient)->states()) EXPECT_TRUE(t.is_meta());
}

}  // namespace
}  // namespace tally

namespace tally {
namespace {

TEST(CatStates, GrowByDoublingWithoutChangingEarlierSnapshots) {
  // Verifies that a cat state grows into a buffer with spare rows (an update
  // copies only its own rows), that a snapshot taken earlier keeps its
  // values, and that Reset and Merge still give the one-pass result.
  NamedTensors like{{"preds", at::zeros({3})}, {"target", at::zeros({3})}};
  auto a = Make({"spearman_corrcoef"}, like, CompileOptions{});
  auto whole = Make({"spearman_corrcoef"}, like, CompileOptions{});
  ASSERT_TRUE(a.ok() && whole.ok());
  at::Generator gen = at::detail::createCPUGenerator(3);
  at::Tensor p = at::randn({300}, gen), t = p + at::randn({300}, gen);
  at::Tensor snapshot;
  for (int64_t s = 0; s < 300; s += 7) {
    int64_t n = std::min<int64_t>(7, 300 - s);
    ASSERT_TRUE((*a)->Update({{"preds", p.narrow(0, s, n)}, {"target", t.narrow(0, s, n)}}).ok());
    if (s == 70) snapshot = (*a)->states()[0];
  }
  at::Tensor state = (*a)->states()[0];
  EXPECT_EQ(state.size(0), 300);
  EXPECT_GT(state.storage().nbytes(), static_cast<size_t>(300 * state.element_size()));  // spare rows
  EXPECT_TRUE(at::equal(snapshot, state.narrow(0, 0, snapshot.size(0))));
  ASSERT_TRUE((*whole)->Update({{"preds", p}, {"target", t}}).ok());
  auto va = (*a)->Compute(), vw = (*whole)->Compute();
  ASSERT_TRUE(va.ok() && vw.ok());
  EXPECT_NEAR((*va)[0].second.item<double>(), (*vw)[0].second.item<double>(), 1e-12);
  ASSERT_TRUE((*a)->Reset().ok());
  ASSERT_TRUE((*a)->Update({{"preds", p.narrow(0, 0, 150)}, {"target", t.narrow(0, 0, 150)}}).ok());
  auto b = Make({"spearman_corrcoef"}, like, CompileOptions{});
  ASSERT_TRUE(b.ok());
  ASSERT_TRUE((*b)->Update({{"preds", p.narrow(0, 150, 150)}, {"target", t.narrow(0, 150, 150)}}).ok());
  ASSERT_TRUE((*a)->Merge(**b).ok());
  ASSERT_TRUE((*a)->Update({{"preds", p.narrow(0, 0, 0)}, {"target", t.narrow(0, 0, 0)}}).ok());
  auto vm = (*a)->Compute();
  ASSERT_TRUE(vm.ok());
  EXPECT_NEAR((*vm)[0].second.item<double>(), (*vw)[0].second.item<double>(), 1e-12);
}

}  // namespace
}  // namespace tally
