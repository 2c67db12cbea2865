// Tests of the multiclass and multilabel threshold-free metrics
// (metrics/curves/areas_per_class.cc): per-class values equal the binary metrics on
// one-vs-rest columns, batching and merged halves equal one pass, the
// binned update and finalize run on `meta`, the graphs do not grow with the
// number of classes, degenerate classes and averaging follow TorchMetrics,
// and bad arguments and inputs give errors naming the metric and argument.
#include <ATen/ATen.h>

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "engine/exec/eager_executor.h"
#include "engine/runtime/compiler.h"
#include "engine/runtime/program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"

namespace tally {
namespace {

using ::testing::HasSubstr;

NamedTensors Inputs(const at::Tensor& p, const at::Tensor& t) { return {{"preds", p}, {"target", t}}; }

absl::StatusOr<at::Tensor> Eval(const std::string& spec, const at::Tensor& p, const at::Tensor& t, int64_t batch = 0) {
  tally::EvalOptions o;
  o.batch_size = batch;
  auto r = tally::Evaluate({spec}, Inputs(p, t), o);
  if (!r.ok()) return r.status();
  return (*r)[0].value.to(at::kDouble);
}

double Scalar(const absl::StatusOr<at::Tensor>& r) {
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->item<double>() : NAN;
}

absl::StatusOr<std::unique_ptr<Program>> Make(const std::string& spec, const NamedTensors& like,
                                              const ir::Device& device = {}) {
  NamedTensors cpu;
  for (const auto& [k, t] : like) cpu.emplace_back(k, at::empty(t.sizes(), t.options().device(at::kCPU)));
  auto sig = tally::SignatureOf(cpu);
  if (!sig.ok()) return sig.status();
  auto entries = tally::BuildEntries({spec}, *sig, device);
  if (!entries.ok()) return entries.status();
  CompileOptions o;
  o.device = device;
  return Compile(*entries, o);
}

::testing::AssertionResult SameValues(const at::Tensor& a, const at::Tensor& b, double tol = 1e-6) {
  if (a.sizes() != b.sizes()) return ::testing::AssertionFailure() << a.sizes() << " vs " << b.sizes();
  at::Tensor x = a.to(at::kDouble).reshape({-1}), y = b.to(at::kDouble).reshape({-1});
  for (int64_t i = 0; i < x.numel(); ++i) {
    double u = x[i].item<double>(), v = y[i].item<double>();
    if (std::isnan(u) && std::isnan(v)) continue;
    if (!(std::abs(u - v) <= tol)) return ::testing::AssertionFailure() << "element " << i << ": " << u << " vs " << v;
  }
  return ::testing::AssertionSuccess();
}

// Random multiclass scores with ties (one decimal) and labels of C classes.
void MulticlassData(int64_t n, int64_t c, at::Tensor* p, at::Tensor* t, uint64_t seed = 7) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  *p = (at::round(at::rand({n, c}, gen) * 10) / 10).to(at::kFloat);
  *t = at::randint(0, c, {n}, gen, at::kLong);
}

TEST(CurvesMultiTest, PerClassEqualsBinaryOneVsRest) {
  // Verifies that average=none gives, for each class (label), the binary
  // metric of its column against "target is this class", exact and binned.
  at::Tensor p, t;
  MulticlassData(203, 6, &p, &t);
  for (std::string thr : {"", ", thresholds=7", ", thresholds=[0.0, 0.35, 0.5, 0.9]"}) {
    auto auroc = Eval("multiclass_auroc(num_classes=6, average=none" + thr + ")", p, t);
    auto ap = Eval("multiclass_average_precision(num_classes=6, average=none" + thr + ")", p, t);
    ASSERT_TRUE(auroc.ok() && ap.ok()) << auroc.status() << ap.status();
    std::string bthr = thr.empty() ? "" : "(" + thr.substr(2) + ")";
    for (int64_t c = 0; c < 6; ++c) {
      at::Tensor col = p.select(1, c).contiguous(), y = (t == c).to(at::kLong);
      EXPECT_NEAR((*auroc)[c].item<double>(), Scalar(Eval("binary_auroc" + bthr, col, y)), 1e-6) << thr << c;
      EXPECT_NEAR((*ap)[c].item<double>(), Scalar(Eval("binary_average_precision" + bthr, col, y)), 1e-6) << thr << c;
    }
  }
  at::Generator gen = at::detail::createCPUGenerator(11);
  at::Tensor mp = (at::round(at::rand({97, 5}, gen) * 20) / 20).to(at::kFloat);
  at::Tensor mt = at::randint(0, 2, {97, 5}, gen, at::kLong);
  for (std::string thr : {"", ", thresholds=5"}) {
    auto auroc = Eval("multilabel_auroc(num_labels=5, average=none" + thr + ")", mp, mt);
    auto ap = Eval("multilabel_average_precision(num_labels=5, average=none" + thr + ")", mp, mt);
    ASSERT_TRUE(auroc.ok() && ap.ok()) << auroc.status() << ap.status();
    std::string bthr = thr.empty() ? "" : "(" + thr.substr(2) + ")";
    for (int64_t l = 0; l < 5; ++l) {
      at::Tensor col = mp.select(1, l).contiguous(), y = mt.select(1, l).contiguous();
      EXPECT_NEAR((*auroc)[l].item<double>(), Scalar(Eval("binary_auroc" + bthr, col, y)), 1e-6) << thr << l;
      EXPECT_NEAR((*ap)[l].item<double>(), Scalar(Eval("binary_average_precision" + bthr, col, y)), 1e-6) << thr << l;
    }
    // micro is the binary metric of every element.
    auto micro = Eval("multilabel_auroc(num_labels=5, average=micro" + thr + ")", mp, mt);
    EXPECT_NEAR(Scalar(micro), Scalar(Eval("binary_auroc" + bthr, mp.reshape({-1}), mt.reshape({-1}))), 1e-6);
  }
}

TEST(CurvesMultiTest, BatchesAndMergedHalvesEqualOnePass) {
  // Verifies that batches of 1 and 13 rows, and two programs updated with
  // one half each and merged, give the one-pass values.
  at::Tensor p, t;
  MulticlassData(120, 4, &p, &t, 3);
  at::Tensor lp = p * 6 - 3;  // logits: every row has a score outside [0, 1], so every batch is softmaxed
  lp.select(1, 0).sub_(5);
  for (std::string spec :
       {"multiclass_auroc(num_classes=4, average=none)", "multiclass_average_precision(num_classes=4)",
        "multiclass_auroc(num_classes=4, average=weighted, thresholds=9)",
        "multiclass_average_precision(num_classes=4, average=none, thresholds=[0.1, 0.2, 0.7])"}) {
    for (const at::Tensor& x : {p, lp}) {
      auto one = Eval(spec, x, t);
      ASSERT_TRUE(one.ok()) << spec << ": " << one.status();
      for (int64_t batch : {1, 13}) {
        auto r = Eval(spec, x, t, batch);
        ASSERT_TRUE(r.ok()) << r.status();
        EXPECT_TRUE(SameValues(*r, *one)) << spec << " batch " << batch;
      }
      auto a = Make(spec, Inputs(x, t)), b = Make(spec, Inputs(x, t));
      ASSERT_TRUE(a.ok() && b.ok());
      ASSERT_TRUE((*a)->Update(Inputs(x.narrow(0, 0, 50), t.narrow(0, 0, 50))).ok());
      ASSERT_TRUE((*b)->Update(Inputs(x.narrow(0, 50, 70), t.narrow(0, 50, 70))).ok());
      ASSERT_TRUE((*a)->Merge(**b).ok());
      auto merged = (*a)->Compute();
      ASSERT_TRUE(merged.ok()) << merged.status();
      EXPECT_TRUE(SameValues((*merged)[0].second.to(at::kDouble), *one)) << spec << " merged halves";
    }
  }
}

TEST(CurvesMultiTest, DegenerateClassesAndAveraging) {
  // Verifies TorchMetrics' values for a class without positives (AUROC 0,
  // counted in macro; exact multiclass AP NaN, left out of macro and
  // weighted), the all-class-0 rule (AP 0), and multilabel labels without
  // positives (AP 0) or negatives (AUROC 0).
  at::Tensor p = at::tensor({0.7, 0.2, 0.1, 0.2, 0.6, 0.2, 0.6, 0.3, 0.1, 0.1, 0.8, 0.1}, at::kFloat).reshape({4, 3});
  at::Tensor t = at::tensor({0, 1, 1, 0}, at::kLong);
  auto auroc = Eval("multiclass_auroc(num_classes=3, average=none)", p, t);
  ASSERT_TRUE(auroc.ok()) << auroc.status();
  EXPECT_EQ((*auroc)[2].item<double>(), 0.0);
  double a0 = (*auroc)[0].item<double>(), a1 = (*auroc)[1].item<double>();
  EXPECT_NEAR(Scalar(Eval("multiclass_auroc(num_classes=3)", p, t)), (a0 + a1) / 3, 1e-6);
  auto ap = Eval("multiclass_average_precision(num_classes=3, average=none)", p, t);
  ASSERT_TRUE(ap.ok());
  EXPECT_TRUE(std::isnan((*ap)[2].item<double>()));
  double p0 = (*ap)[0].item<double>(), p1 = (*ap)[1].item<double>();
  EXPECT_NEAR(Scalar(Eval("multiclass_average_precision(num_classes=3)", p, t)), (p0 + p1) / 2, 1e-6);
  EXPECT_NEAR(Scalar(Eval("multiclass_average_precision(num_classes=3, average=weighted)", p, t)), (p0 + p1) / 2, 1e-6);
  // Binned AP of a class without positives is 0 (and counts in macro).
  auto bap = Eval("multiclass_average_precision(num_classes=3, average=none, thresholds=5)", p, t);
  ASSERT_TRUE(bap.ok());
  EXPECT_EQ((*bap)[2].item<double>(), 0.0);
  // Every target is class 0: the other classes' exact AP is 0, not NaN.
  auto zero = Eval("multiclass_average_precision(num_classes=3, average=none)", p, at::zeros({4}, at::kLong));
  ASSERT_TRUE(zero.ok());
  EXPECT_TRUE(SameValues(*zero, at::tensor({1.0, 0.0, 0.0}, at::kDouble)));
  // Multilabel: label 1 has no positives, label 2 no negatives.
  at::Tensor mt = at::tensor({1, 0, 1, 0, 0, 1, 1, 0, 1, 0, 0, 1}, at::kLong).reshape({4, 3});
  auto ml_ap = Eval("multilabel_average_precision(num_labels=3, average=none)", p, mt);
  auto ml_auroc = Eval("multilabel_auroc(num_labels=3, average=none)", p, mt);
  ASSERT_TRUE(ml_ap.ok() && ml_auroc.ok());
  EXPECT_EQ((*ml_ap)[1].item<double>(), 0.0);
  EXPECT_EQ((*ml_auroc)[1].item<double>(), 0.0);
  EXPECT_EQ((*ml_auroc)[2].item<double>(), 0.0);
  EXPECT_NEAR((*ml_ap)[2].item<double>(), 1.0, 1e-7);
}

TEST(CurvesMultiTest, IgnoreIndexAndExtraDims) {
  // Verifies that ignored samples (elements) are dropped and that extra dims
  // are flattened into samples, exact and binned.
  at::Tensor p, t;
  MulticlassData(40, 3, &p, &t, 5);
  at::Tensor ign = t.clone();
  ign.index_put_({at::arange(0, 40, 3)}, -1);
  at::Tensor keep = ign != -1;
  for (std::string args : {"num_classes=3, average=none", "num_classes=3, average=none, thresholds=6"}) {
    auto with = Eval("multiclass_auroc(" + args + ", ignore_index=-1)", p, ign);
    auto kept = Eval("multiclass_auroc(" + args + ")", p.index({keep}), t.index({keep}));
    ASSERT_TRUE(with.ok() && kept.ok()) << with.status() << kept.status();
    EXPECT_TRUE(SameValues(*with, *kept)) << args;
    // (N, C, 2) preds / (N, 2) target equal the (2N, C) / (2N) form.
    at::Tensor p3 = p.reshape({20, 2, 3}).transpose(1, 2).contiguous(), t3 = t.reshape({20, 2});
    auto multi = Eval("multiclass_average_precision(" + args + ")", p3, t3);
    auto flat = Eval("multiclass_average_precision(" + args + ")", p, t);
    ASSERT_TRUE(multi.ok() && flat.ok()) << multi.status();
    EXPECT_TRUE(SameValues(*multi, *flat)) << args;
  }
}

TEST(CurvesMultiTest, BinnedUpdateAndFinalizeRunOnMeta) {
  // Verifies that the binned forms run update, merge and the finalize plan
  // on meta tensors, which cannot be read on the host (Compute itself reads
  // the deferred-check counters first, so the plan runs directly, checked);
  // their states keep a constant size. The exact forms' updates run on meta
  // too.
  auto meta = at::TensorOptions().device(at::kMeta);
  NamedTensors mc = Inputs(at::empty({64, 5, 2}, meta.dtype(at::kFloat)), at::empty({64, 2}, meta.dtype(at::kLong)));
  NamedTensors ml = Inputs(at::empty({64, 5}, meta.dtype(at::kDouble)), at::empty({64, 5}, meta.dtype(at::kLong)));
  for (std::string spec : {"multiclass_auroc(num_classes=5, thresholds=50)",
                           "multiclass_average_precision(num_classes=5, thresholds=[0.1, 0.3])",
                           "multilabel_auroc(num_labels=5, average=micro, thresholds=10)",
                           "multilabel_average_precision(num_labels=5, average=weighted, thresholds=[0.2, 0.5, 0.9])",
                           "multiclass_auroc(num_classes=5)", "multilabel_average_precision(num_labels=5)"}) {
    const NamedTensors& in = spec.rfind("multiclass", 0) == 0 ? mc : ml;
    auto a = Make(spec, in, ir::Device{"meta"});
    auto b = Make(spec, in, ir::Device{"meta"});
    ASSERT_TRUE(a.ok() && b.ok()) << spec << ": " << a.status();
    ASSERT_TRUE((*a)->Update(in).ok()) << spec;
    NamedTensors empty;
    for (const auto& [k, x] : in) empty.emplace_back(k, x.narrow(0, 0, 0));
    ASSERT_TRUE((*a)->Update(empty).ok()) << spec;
    for (const at::Tensor& st : (*a)->states()) EXPECT_TRUE(st.is_meta()) << spec;
    if (spec.find("thresholds") == std::string::npos) continue;
    const auto& decls = (*a)->module().states;
    for (size_t i = 0; i < decls.size(); ++i) {
      if (decls[i].name.find("threshold_counts") == std::string::npos) continue;
      EXPECT_EQ((*a)->states()[i].dim(), 3) << spec;
      EXPECT_EQ((*a)->states()[i].size(0), 5) << spec;
    }
    ASSERT_TRUE((*b)->Update(in).ok()) << spec;
    ASSERT_TRUE((*a)->Merge(**b).ok()) << spec;
    auto plan = exec::EagerPlan::Create(*(*a)->module().finalize);
    ASSERT_TRUE(plan.ok()) << plan.status();
    auto r = (*plan)->Run((*a)->states(), /*checked=*/true);
    ASSERT_TRUE(r.ok()) << spec << ": " << r.status();
    for (const at::Tensor& x : *r) EXPECT_TRUE(x.is_meta()) << spec;
  }
}

TEST(CurvesMultiTest, GraphsDoNotGrowWithClasses) {
  // Verifies that the update and finalize graphs are vectorized over
  // classes: the same node counts for 3 and 40 classes (labels).
  for (std::string base : {"multiclass_auroc(num_classes=", "multiclass_average_precision(num_classes=",
                           "multilabel_auroc(num_labels=", "multilabel_average_precision(num_labels="}) {
    for (std::string thr : {"", ", thresholds=20"}) {
      size_t nodes[2][2];
      int i = 0;
      for (int64_t c : {3, 40}) {
        bool mc = base.rfind("multiclass", 0) == 0;
        NamedTensors in = Inputs(at::empty({8, c}), mc ? at::empty({8}, at::kLong) : at::empty({8, c}, at::kLong));
        auto sig = tally::SignatureOf(in);
        ASSERT_TRUE(sig.ok());
        auto entries = tally::BuildEntries({absl::StrCat(base, c, ", average=weighted", thr, ")")}, *sig, ir::Device{});
        ASSERT_TRUE(entries.ok()) << entries.status();
        auto compiled = CompileModule(*entries, CompileOptions{});
        ASSERT_TRUE(compiled.ok()) << compiled.status();
        nodes[i][0] = compiled->module->update->nodes().size();
        nodes[i][1] = compiled->module->finalize->nodes().size();
        ++i;
      }
      EXPECT_EQ(nodes[0][0], nodes[1][0]) << base << thr << " update";
      EXPECT_EQ(nodes[0][1], nodes[1][1]) << base << thr << " finalize";
    }
  }
}

TEST(CurvesMultiTest, BadArgumentsAndInputs) {
  // Verifies errors that name the metric and the argument or input, and the
  // deferred count of out-of-range targets.
  at::Tensor p = at::rand({6, 3}), t = at::tensor({0, 1, 2, 0, 1, 2}, at::kLong);
  auto msg = [&](const std::string& spec, const at::Tensor& pp, const at::Tensor& tt) {
    auto r = Eval(spec, pp, tt);
    EXPECT_FALSE(r.ok()) << spec;
    return r.ok() ? std::string() : std::string(r.status().message());
  };
  EXPECT_THAT(msg("multiclass_auroc", p, t), HasSubstr("num_classes"));
  EXPECT_THAT(msg("multiclass_auroc(num_classes=1)", p, t),
              HasSubstr("multiclass_auroc: num_classes must be an integer >= 2, got 1"));
  EXPECT_THAT(msg("multiclass_average_precision(num_classes=3, average=micro)", p, t),
              HasSubstr("multiclass_average_precision"));
  EXPECT_THAT(msg("multiclass_average_precision(num_classes=3, average=micro)", p, t), HasSubstr("average"));
  EXPECT_THAT(msg("multilabel_auroc(num_labels=3, average=samples)", p, t.reshape({6, 1}).repeat({1, 3})),
              HasSubstr("average"));
  EXPECT_THAT(msg("multiclass_auroc(num_classes=3, thresholds=1)", p, t),
              HasSubstr("multiclass_auroc: thresholds must be an int >= 2, got 1"));
  EXPECT_THAT(msg("multilabel_average_precision(num_labels=3, thresholds=[0.2, 1.5])", p, (p > 0.5).to(at::kLong)),
              HasSubstr("multilabel_average_precision: thresholds must lie in [0, 1]"));
  EXPECT_THAT(msg("multiclass_auroc(num_classes=3, max_fpr=0.5)", p, t), HasSubstr("unknown argument 'max_fpr'"));
  EXPECT_THAT(msg("multiclass_auroc(num_classes=4)", p, t),
              HasSubstr("multiclass_auroc: preds: expected scores of shape (N, 4, ...)"));
  EXPECT_THAT(msg("multiclass_auroc(num_classes=3)", t, t),
              HasSubstr("multiclass_auroc: preds: expected floating point"));
  EXPECT_THAT(msg("multiclass_auroc(num_classes=3)", p, t.to(at::kFloat)), HasSubstr("target: expected integer"));
  EXPECT_THAT(msg("multilabel_auroc(num_labels=3)", p, t), HasSubstr("multilabel_auroc: preds: shape"));
  EXPECT_THAT(msg("multilabel_auroc(num_labels=4)", p, (p > 0.5).to(at::kLong)), HasSubstr("num_labels=4"));
  // Out-of-range values are counted on device and reported by Compute.
  EXPECT_THAT(msg("multiclass_auroc(num_classes=3)", p, at::tensor({0, 1, 5, 0, -1, 2}, at::kLong)),
              HasSubstr("multiclass_auroc: target: 2 values outside [0, 3)"));
  EXPECT_THAT(msg("multilabel_average_precision(num_labels=3, thresholds=4)", p, at::full({6, 3}, 2, at::kLong)),
              HasSubstr("multilabel_average_precision: target: 18 values outside {0, 1}"));
  // ...but not the ignored ones.
  EXPECT_TRUE(
      Eval("multiclass_auroc(num_classes=3, ignore_index=-1)", p, at::tensor({0, 1, -1, 0, -1, 2}, at::kLong)).ok());
}

TEST(CurvesMultiTest, ExactClassWithNoKeptElementIsNan) {
  // Verifies that the exact forms are NaN as a whole when a label has no
  // kept element (TorchMetrics raises an IndexError for the call), in every
  // average, while the binned forms still score (fuzz case:
  // multilabel_auroc(num_labels=3, ignore_index=1) with all-one targets gave 0).
  at::Tensor p = at::tensor({0.1f, 0.9f, 0.4f, 0.6f, 0.3f, 0.2f}).reshape({3, 2});
  at::Tensor t = at::tensor({0, -1, 1, -1, 0, -1}, at::kLong).reshape({3, 2});  // label 1: all ignored
  for (const char* avg : {"macro", "weighted", "none"}) {
    for (const char* name : {"multilabel_auroc", "multilabel_average_precision"}) {
      std::string spec = std::string(name) + "(num_labels=2, ignore_index=-1, average=" + avg + ")";
      auto r = Eval(spec, p, t);
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_TRUE(at::isnan(*r).all().item<bool>()) << spec << ": " << *r;
      auto binned =
          Eval(std::string(name) + "(num_labels=2, ignore_index=-1, thresholds=5, average=" + avg + ")", p, t);
      ASSERT_TRUE(binned.ok()) << binned.status();
      EXPECT_FALSE(at::isnan(*binned).all().item<bool>()) << spec;
    }
  }
  // Multiclass: every sample ignored.
  at::Tensor pm = at::tensor({0.2f, 0.8f, 0.6f, 0.4f}).reshape({2, 2});
  EXPECT_TRUE(std::isnan(
      Scalar(Eval("multiclass_auroc(num_classes=2, ignore_index=-1)", pm, at::tensor({-1, -1}, at::kLong)))));
}

}  // namespace
}  // namespace tally
