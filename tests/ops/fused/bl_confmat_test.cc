// Tests of the fused bl_confmat kernel (binary and multilabel statistics)
// against its ATen decomposition (the reference path) and against the
// primitive path the metrics used before it (still taken by inputs with a
// trailing dim of size 1, which means the same thing), on the inputs that
// stress it: probabilities, logits, one logit in a batch of probabilities,
// NaN, values at the threshold in float32, logits whose sigmoid lands next to
// the threshold, int and bool labels, bad labels and targets, ignore_index
// with both logit rules, int32 and bool targets, L = 1..9, empty batches.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/InferenceMode.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "api/tally.h"
#include "engine/dsl/builder.h"
#include "engine/runtime/compiler.h"
#include "gtest/gtest.h"
#include "ops/fused/bl_confmat.h"
#include "support/status_macros.h"

namespace tally {
namespace {

// Run compiles `entries` and feeds `inputs` in batches of `batch` rows; it
// returns the states.
std::vector<at::Tensor> Run(const std::vector<dsl::CollectionEntry>& entries, const NamedTensors& inputs,
                            passes::FusePolicy policy, int64_t batch) {
  CompileOptions co;
  co.fuse_policy = policy;
  auto prog = Compile(entries, co);
  EXPECT_TRUE(prog.ok()) << prog.status();
  if (!prog.ok()) return {};
  int64_t n = inputs[0].second.size(0);
  for (int64_t s = 0; s < n || s == 0; s += batch) {
    int64_t len = std::min(batch, n - s);
    NamedTensors part;
    for (const auto& [k, t] : inputs) part.emplace_back(k, t.narrow(0, s, len));
    auto st = (*prog)->Update(part);
    EXPECT_TRUE(st.ok()) << st;
    if (n == 0) break;
  }
  return (*prog)->states();
}

// States runs one metric spec over `inputs` in batches and returns its states.
std::vector<at::Tensor> States(const std::string& spec, const NamedTensors& inputs, passes::FusePolicy policy,
                               int64_t batch) {
  auto sig = tally::SignatureOf(inputs);
  EXPECT_TRUE(sig.ok()) << sig.status();
  if (!sig.ok()) return {};
  auto entries = tally::BuildEntries({spec}, *sig, ir::Device{});
  EXPECT_TRUE(entries.ok()) << entries.status();
  if (!entries.ok()) return {};
  return Run(*entries, inputs, policy, batch);
}

// UsesFusedKernel is whether the compiled update of `spec` keeps a bl_confmat.
bool UsesFusedKernel(const std::string& spec, const NamedTensors& inputs) {
  auto sig = tally::SignatureOf(inputs);
  auto entries = tally::BuildEntries({spec}, *sig, ir::Device{});
  if (!entries.ok()) return false;
  auto prog = Compile(*entries, CompileOptions{});
  if (!prog.ok()) return false;
  for (const auto& n : (*prog)->module().update->nodes())
    if (n->op() == "bl_confmat") return true;
  return false;
}

NamedTensors WithTrailingDim(const NamedTensors& in) {
  NamedTensors out;
  for (const auto& [k, t] : in) out.emplace_back(k, t.unsqueeze(-1));
  return out;
}

struct Case {
  std::string name;
  std::string spec;  // a metric, or "" for the bare op
  NamedTensors inputs;
  double threshold = 0.5;
  std::optional<int64_t> ignore_index;
  bool logits_over_kept = false;
};

// OpEntry is a metric whose update is one bl_confmat node with every result
// accumulated: the op at forms and attributes no metric spells (L = 1,
// logits_over_kept for multilabel).
absl::StatusOr<std::vector<dsl::CollectionEntry>> OpEntry(const Case& c) {
  TALLY_ASSIGN_OR_RETURN(dsl::Signature sig, tally::SignatureOf(c.inputs));
  dsl::MetricBuilder b("bl_confmat", sig);
  ops::Expr preds = b.Input("preds"), target = b.Input("target");
  ir::AttrMap attrs{{"threshold", c.threshold}, {"logits_over_kept", c.logits_over_kept}};
  if (c.ignore_index) attrs["ignore_index"] = *c.ignore_index;
  std::vector<ops::Expr> outs = b.OpN(ops::OpId::kBlConfmat, {preds, target}, attrs);
  if (outs.size() != 3) return b.status();
  std::vector<int64_t> shape{2, 2};
  if (preds.rank() == 2) shape.insert(shape.begin(), b.FindInput("preds")->shape[1]);
  dsl::State cm = b.AddState("confmat", ir::DType::kInt64, shape, ir::Reducer::kSum);
  dsl::State bad_t = b.AddState("bad_target", ir::DType::kInt64, {}, ir::Reducer::kSum);
  dsl::State bad_p = b.AddState("bad_preds", ir::DType::kInt64, {}, ir::Reducer::kSum);
  b.Accumulate(cm, outs[0]);
  b.Accumulate(bad_t, outs[1]);
  b.Accumulate(bad_p, outs[2]);
  b.Output(b.Read(cm));
  TALLY_ASSIGN_OR_RETURN(dsl::Metric m, b.Finish());
  std::vector<dsl::CollectionEntry> entries;
  entries.push_back(dsl::CollectionEntry{"op", std::move(m)});
  return entries;
}

// ExpectAllPathsEqual checks, state by state and for the whole batch and for
// batches of 7 rows, that the fused kernel equals the decomposition and (for
// metric specs) the former primitive path.
void ExpectAllPathsEqual(const Case& c) {
  SCOPED_TRACE(absl::StrCat(c.name, ": ", c.spec.empty() ? "bl_confmat" : c.spec,
                            c.spec.empty() ? absl::StrCat(" logits_over_kept=", c.logits_over_kept) : ""));
  std::vector<dsl::CollectionEntry> op;
  if (c.spec.empty()) {
    auto entries = OpEntry(c);
    ASSERT_TRUE(entries.ok()) << entries.status();
    op = std::move(*entries);
  } else {
    ASSERT_TRUE(UsesFusedKernel(c.spec, c.inputs)) << "the composite does not cover this form";
  }
  const int64_t n = c.inputs[0].second.size(0);
  for (int64_t batch : {std::max<int64_t>(n, 1), int64_t{7}}) {
    std::vector<at::Tensor> fused, ref, legacy;
    if (c.spec.empty()) {
      fused = Run(op, c.inputs, passes::FusePolicy::kFused, batch);
      ref = Run(op, c.inputs, passes::FusePolicy::kReference, batch);
    } else {
      fused = States(c.spec, c.inputs, passes::FusePolicy::kFused, batch);
      ref = States(c.spec, c.inputs, passes::FusePolicy::kReference, batch);
      legacy = States(c.spec, WithTrailingDim(c.inputs), passes::FusePolicy::kFused, batch);
      ASSERT_EQ(fused.size(), legacy.size());
    }
    ASSERT_EQ(fused.size(), ref.size());
    ASSERT_FALSE(fused.empty());
    for (size_t i = 0; i < fused.size(); ++i) {
      EXPECT_TRUE(at::equal(fused[i], ref[i])) << "state " << i << " batch " << batch << "\n"
                                               << fused[i] << "\nvs decomposition\n"
                                               << ref[i];
      if (legacy.empty()) continue;
      EXPECT_TRUE(at::equal(fused[i], legacy[i])) << "state " << i << " batch " << batch << "\n"
                                                  << fused[i] << "\nvs primitive path\n"
                                                  << legacy[i];
    }
  }
}

// Preds kinds over a target of `shape`.
at::Tensor Probs(at::IntArrayRef shape, at::Generator& g, at::ScalarType s = at::kFloat) {
  return at::rand(shape, g, s);
}
at::Tensor Logits(at::IntArrayRef shape, at::Generator& g, at::ScalarType s = at::kFloat) {
  return at::randn(shape, g, s) * 3;
}

// NearThreshold mixes values at float32's rounding of `threshold` and a few
// ulps around it (and around the double threshold) into probabilities.
at::Tensor NearThreshold(at::IntArrayRef shape, double threshold, at::Generator& g) {
  at::Tensor p = at::rand(shape, g, at::kFloat).view(-1);
  float tf = static_cast<float>(threshold);
  std::vector<float> special{tf, std::nextafter(tf, 0.0f), std::nextafter(tf, 1.0f), 0.0f, 1.0f, -0.0f};
  float up = tf, down = tf;
  for (int k = 0; k < 4; ++k) special.push_back(up = std::nextafter(up, 2.0f));
  for (int k = 0; k < 4; ++k) special.push_back(down = std::nextafter(down, -1.0f));
  for (int64_t i = 0; i < p.numel(); i += 3) p[i] = special[(i / 3) % special.size()];
  return p.view(shape);
}

// LogitsNearThreshold are logits whose float32 sigmoid lands within a few
// ulps of the threshold (where ATen's vectorized and scalar sigmoid can
// disagree), plus saturating and tiny values.
at::Tensor LogitsNearThreshold(at::IntArrayRef shape, double threshold, at::Generator& g) {
  at::Tensor p = Logits(shape, g).view(-1);
  float x0 = threshold > 0 && threshold < 1 ? static_cast<float>(std::log(threshold / (1 - threshold))) : 0.0f;
  std::vector<float> special{0.0f,
                             -0.0f,
                             1e-8f,
                             -1e-8f,
                             1e-40f,
                             -1e-40f,
                             88.0f,
                             -88.0f,
                             104.0f,
                             -104.0f,
                             1e30f,
                             -1e30f,
                             std::numeric_limits<float>::infinity(),
                             -std::numeric_limits<float>::infinity()};
  float up = x0, down = x0;
  special.push_back(x0);
  for (int k = 0; k < 40; ++k) special.push_back(up = std::nextafter(up, 100.0f));
  for (int k = 0; k < 40; ++k) special.push_back(down = std::nextafter(down, -100.0f));
  for (int64_t i = 0; i < p.numel(); i += 2) p[i] = special[(i / 2) % special.size()];
  return p.view(shape);
}

// UlpLogit finds a float32 logit outside [0, 1] whose sigmoid ATen's
// vectorized and scalar paths compute one ulp apart, and returns it with the
// smaller of the two as threshold: elements sigmoided in a batch's vectorized
// body and in its scalar tail then fall on different sides. (Without such a
// logit, e.g. on a build whose two paths agree, it returns 2 and 0.5.)
std::pair<float, double> UlpLogit(at::Generator& g) {
  const int64_t n = 1 << 16;
  at::Tensor x = at::randn({n}, g, at::kFloat) * 4;
  at::Tensor vec = at::sigmoid(x);
  at::Tensor spread = at::zeros({2 * n}, at::kFloat);
  at::Tensor strided = spread.slice(0, 0, 2 * n, 2);
  strided.copy_(x);
  at::Tensor scalar = at::sigmoid(strided);  // non-contiguous: the scalar loop
  at::Tensor hits = at::nonzero((vec != scalar).logical_and_(x.abs() > 1)).flatten();
  if (hits.numel() == 0) return {2.0f, 0.5};
  int64_t i = hits[0].item<int64_t>();
  return {x[i].item<float>(), std::min(vec[i].item<float>(), scalar[i].item<float>())};
}

// Targets in {0, 1}; `dirty` adds -1 and 2 (bad, or -1 ignored).
at::Tensor Targets(at::IntArrayRef shape, at::Generator& g, bool dirty, at::ScalarType s = at::kLong) {
  at::Tensor t = at::randint(0, 2, shape, g, at::kLong);
  if (dirty) {
    at::Tensor r = at::rand(shape, g);
    t = at::where(r < 0.03, at::full_like(t, 2), at::where(r < 0.1, at::full_like(t, -1), t));
  }
  return t.to(s);
}

std::string Spec(const std::string& metric, int64_t labels, const std::string& args) {
  std::string a = labels > 0 ? absl::StrCat("num_labels=", labels) : "";
  if (!args.empty()) a = a.empty() ? args : absl::StrCat(a, ", ", args);
  return a.empty() ? metric : absl::StrCat(metric, "(", a, ")");
}

// Cases builds the matrix of cases for `labels` (0: binary [N]): through the
// metrics (`metrics`, needs labels != 1) or the bare op with both logit rules.
std::vector<Case> Cases(int64_t labels, int64_t n, uint64_t seed, bool metrics_level = true) {
  at::Generator g = at::detail::createCPUGenerator(seed);
  std::vector<int64_t> shape{n};
  if (labels > 0) shape.push_back(labels);
  const std::string task = labels > 0 ? "multilabel_" : "binary_";
  // Metrics: the stat-score family checks logits over all elements; the
  // binary confusion-matrix family over kept elements only.
  std::vector<std::string> metrics{task + "stat_scores", task + "confusion_matrix"};
  std::vector<Case> out;
  auto add = [&](const std::string& name, const std::string& args, at::Tensor preds, at::Tensor target) {
    NamedTensors in{{"preds", preds}, {"target", target}};
    if (metrics_level) {
      for (const std::string& m : metrics) out.push_back({name, Spec(m, labels, args), in});
      return;
    }
    // The bare op: the same arguments as attributes.
    Case c{name, "", in};
    for (absl::string_view a : absl::StrSplit(args, ", ", absl::SkipEmpty())) {
      std::pair<std::string, std::string> kv = absl::StrSplit(a, '=');
      if (kv.first == "threshold") {
        EXPECT_TRUE(absl::SimpleAtod(kv.second, &c.threshold));
      }
      int64_t ignore;
      if (kv.first == "ignore_index" && absl::SimpleAtoi(kv.second, &ignore)) c.ignore_index = ignore;
    }
    for (bool over_kept : {false, true}) {
      c.logits_over_kept = over_kept;
      out.push_back(c);
    }
  };
  at::Tensor clean = Targets(shape, g, false);
  at::Tensor dirty = Targets(shape, g, true);
  add("probs", "", Probs(shape, g), clean);
  add("logits", "", Logits(shape, g), clean);
  add("probs_f64", "threshold=0.7", Probs(shape, g, at::kDouble), clean);
  add("logits_f64", "threshold=0.7", Logits(shape, g, at::kDouble), dirty);
  {
    at::Tensor p = Probs(shape, g);
    if (n > 0) p.view(-1)[p.numel() / 2] = 1.25f;  // one logit: the batch holding it is sigmoided
    add("one_logit", "", p, clean);
  }
  {
    at::Tensor p = Probs(shape, g);
    if (n > 10) {
      p.view(-1)[0] = NAN;
      p.view(-1)[9] = NAN;
    }
    add("nan", "", p, dirty);
  }
  add("at_threshold_f32", "threshold=0.3", NearThreshold(shape, 0.3, g), clean);
  add("at_threshold_0.5", "", NearThreshold(shape, 0.5, g), dirty);
  add("logits_near_threshold", "threshold=0.3", LogitsNearThreshold(shape, 0.3, g), clean);
  add("logits_near_half", "", LogitsNearThreshold(shape, 0.5, g), clean);
  add("logits_threshold_0", "threshold=0.0", LogitsNearThreshold(shape, 0.0, g), clean);
  add("logits_threshold_1", "threshold=1.0", LogitsNearThreshold(shape, 1.0, g), clean);
  {
    // One logit everywhere, sigmoided to either side of the threshold
    // depending on where ATen's loop meets it.
    auto [x, threshold] = UlpLogit(g);
    add("sigmoid_last_bit", absl::StrFormat("threshold=%.17g", threshold), at::full(shape, x), clean);
  }
  add("int_labels", "", at::randint(0, 2, shape, g, at::kLong), clean);
  add("int_labels_bad", "", at::randint(-1, 3, shape, g, at::kLong), dirty);
  add("int32_labels_bad_ignore", "ignore_index=-1", at::randint(-1, 3, shape, g, at::kLong).to(at::kInt), dirty);
  add("bool_labels", "", at::randint(0, 2, shape, g, at::kLong).to(at::kBool), dirty);
  add("bad_targets", "", Probs(shape, g), dirty);
  add("ignore", "ignore_index=-1", Probs(shape, g), dirty);
  add("ignore_logits", "ignore_index=-1", Logits(shape, g), dirty);
  add("ignore_2", "ignore_index=2", Logits(shape, g), dirty);
  add("ignore_0", "ignore_index=0", Probs(shape, g), clean);
  {
    // Probabilities except where the target is ignored: logits only for the
    // stat-score family's rule (every element).
    at::Tensor p = Probs(shape, g);
    p = at::where(dirty == -1, at::full_like(p, 5.0), p);
    add("logits_only_at_ignored", "ignore_index=-1", p, dirty);
  }
  add("int32_target", "", Logits(shape, g), Targets(shape, g, false, at::kInt));
  add("int32_target_dirty_ignore", "ignore_index=-1", Probs(shape, g), Targets(shape, g, true, at::kInt));
  add("bool_target", "", Probs(shape, g), Targets(shape, g, false, at::kBool));
  add("bool_target_ignore_1", "ignore_index=1", Logits(shape, g), Targets(shape, g, false, at::kBool));
  add("bool_target_ignore_kept", "ignore_index=0", Probs(shape, g, at::kDouble), Targets(shape, g, false, at::kBool));
  return out;
}

TEST(BlConfmatTest, BinaryFusedEqualsReference) {
  // Verifies that the fused kernel's states equal the decomposition's and
  // the former primitive path's exactly for binary [N] inputs.
  for (const Case& c : Cases(0, 3001, 11)) ExpectAllPathsEqual(c);
}

TEST(BlConfmatTest, MultilabelFusedEqualsReference) {
  // Verifies the same for multilabel [N, L] inputs, L = 2..9 (num_labels
  // must be >= 2).
  for (int64_t labels = 2; labels <= 9; ++labels) {
    for (const Case& c : Cases(labels, 401, 100 + labels)) ExpectAllPathsEqual(c);
  }
}

TEST(BlConfmatTest, BareOpFusedEqualsReference) {
  // Verifies fused == decomposition for the op itself, binary and L = 1..9,
  // with both logit rules (metrics use logits_over_kept only for binary).
  for (int64_t labels = 0; labels <= 9; ++labels) {
    for (const Case& c : Cases(labels, 203, 300 + labels, /*metrics_level=*/false)) ExpectAllPathsEqual(c);
  }
}

TEST(BlConfmatTest, EmptyBatchesEqualReference) {
  // Verifies that empty batches give the reference's (zero) states.
  for (int64_t labels : {0, 3}) {
    for (const Case& c : Cases(labels, 0, 5)) ExpectAllPathsEqual(c);
  }
  for (int64_t labels : {0, 1, 4}) {
    for (const Case& c : Cases(labels, 0, 5, /*metrics_level=*/false)) ExpectAllPathsEqual(c);
  }
}

TEST(BlConfmatTest, LargeBatchOnSeveralThreadsEqualsReference) {
  // Verifies the chunked, multi-threaded counting (per-chunk counts merged
  // once) and the early-exit logit scan on batches larger than one chunk.
  int threads = at::get_num_threads();
  at::set_num_threads(2);
  at::Generator g = at::detail::createCPUGenerator(3);
  int64_t n = 200003;
  at::Tensor target = Targets({n}, g, true);
  at::Tensor probs = Probs({n}, g);
  at::Tensor late_logit = probs.clone();
  late_logit[n - 2] = -1.0f;
  for (const auto& [name, preds] : std::vector<std::pair<std::string, at::Tensor>>{
           {"probs", probs}, {"late_logit", late_logit}, {"logits", Logits({n}, g)}}) {
    for (const char* spec : {"binary_stat_scores(ignore_index=-1)", "binary_confusion_matrix"}) {
      SCOPED_TRACE(absl::StrCat(name, " ", spec));
      NamedTensors in{{"preds", preds}, {"target", target}};
      auto fused = States(spec, in, passes::FusePolicy::kFused, n);
      auto ref = States(spec, in, passes::FusePolicy::kReference, n);
      ASSERT_EQ(fused.size(), ref.size());
      for (size_t i = 0; i < fused.size(); ++i) EXPECT_TRUE(at::equal(fused[i], ref[i])) << fused[i] << ref[i];
    }
  }
  at::Tensor ml_target = Targets({n / 3, 3}, g, true);
  NamedTensors ml{{"preds", Logits({n / 3, 3}, g)}, {"target", ml_target}};
  auto fused = States("multilabel_stat_scores(num_labels=3, ignore_index=-1)", ml, passes::FusePolicy::kFused, n);
  auto ref = States("multilabel_stat_scores(num_labels=3, ignore_index=-1)", ml, passes::FusePolicy::kReference, n);
  ASSERT_EQ(fused.size(), ref.size());
  for (size_t i = 0; i < fused.size(); ++i) EXPECT_TRUE(at::equal(fused[i], ref[i]));
  at::set_num_threads(threads);
}

TEST(BlConfmatTest, LogitRuleFollowsTheMetricFamily) {
  // Verifies that the two logit rules really differ on a batch whose only
  // out-of-range values sit at ignored targets (so the cases above test
  // both), and that without ignore_index both families share one node.
  at::Tensor preds = at::tensor({0.2f, 0.7f, 5.0f, 0.4f});
  at::Tensor target = at::tensor({0, 1, -1, 1}, at::kLong);
  auto all = ops::fused::BlConfmatCpu(preds, target, 0.5, /*logits_over_kept=*/false, int64_t{-1});
  auto kept = ops::fused::BlConfmatCpu(preds, target, 0.5, /*logits_over_kept=*/true, int64_t{-1});
  // Every element sigmoided: 0.2 -> 0.55 (fp), 0.7 -> 0.67 (tp), 0.4 -> 0.60 (tp).
  EXPECT_TRUE(at::equal(std::get<0>(all), at::tensor({0, 1, 0, 2}, at::kLong).view({2, 2})));
  EXPECT_TRUE(at::equal(std::get<0>(kept), at::tensor({1, 0, 1, 1}, at::kLong).view({2, 2})));

  auto sig = tally::SignatureOf({{"preds", preds}, {"target", target.clamp_min(0)}});
  ASSERT_TRUE(sig.ok());
  auto entries = tally::BuildEntries({"binary_stat_scores", "binary_confusion_matrix"}, *sig, ir::Device{});
  ASSERT_TRUE(entries.ok()) << entries.status();
  auto prog = Compile(*entries, CompileOptions{});
  ASSERT_TRUE(prog.ok()) << prog.status();
  int composites = 0;
  for (const auto& n : (*prog)->module().update->nodes()) composites += n->op() == "bl_confmat";
  EXPECT_EQ(composites, 1);
}

TEST(BlConfmatKernel, CountsDropsAndSkips) {
  // Verifies a hand-checked multilabel case: a row holding one bad target or
  // bad label is dropped entirely and each bad value counted; ignored
  // elements are neither counted nor bad.
  at::Tensor preds = at::tensor({1, 0, /**/ 1, 1, /**/ 0, 7, /**/ 1, 0, /**/ 5, 1}, at::kLong).view({5, 2});
  at::Tensor target = at::tensor({1, 0, /**/ 1, 3, /**/ 0, 1, /**/ -1, 1, /**/ -1, 0}, at::kLong).view({5, 2});
  auto r = ops::fused::BlConfmatCpu(preds, target, 0.5, false, int64_t{-1});
  // Row 0 counts; row 1 bad target; row 2 bad label; row 3 counts label 1
  // only; row 4's bad label sits at an ignored target: counts label 1 only.
  at::Tensor want = at::tensor({0, 0, 0, 1, /**/ 1, 1, 1, 0}, at::kLong).view({2, 2, 2});
  EXPECT_TRUE(at::equal(std::get<0>(r), want)) << std::get<0>(r);
  EXPECT_EQ(std::get<1>(r).item<int64_t>(), 1);
  EXPECT_EQ(std::get<2>(r).item<int64_t>(), 1);
  // Binary [N] gives a [2, 2] matrix.
  auto b = ops::fused::BlConfmatCpu(at::tensor({0.9f, 0.1f, NAN}), at::tensor({1, 1, 0}, at::kInt), 0.5, false,
                                    c10::nullopt);
  // NaN is outside [0, 1]: everything is sigmoided (0.71, 0.52 -> 1; NaN -> 0).
  EXPECT_TRUE(at::equal(std::get<0>(b), at::tensor({1, 0, 0, 2}, at::kLong).view({2, 2}))) << std::get<0>(b);
  EXPECT_EQ(std::get<0>(ops::fused::BlConfmatCpu(at::zeros({0}), at::zeros({0}, at::kLong), 0.5, false, c10::nullopt))
                .sizes(),
            (std::vector<int64_t>{2, 2}));
}

TEST(BlConfmatKernel, RunsOnMetaThroughTheDispatcher) {
  // Verifies that the registered tally::bl_confmat operator has a Meta kernel
  // (so the meta-execution proof of sync-freedom covers it) with the result
  // shapes of both forms.
  auto op = c10::Dispatcher::singleton()
                .findSchemaOrThrow("tally::bl_confmat", "")
                .typed<std::tuple<at::Tensor, at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, double,
                                                                      bool, c10::optional<int64_t>)>();
  c10::InferenceMode guard;
  auto meta = at::TensorOptions().device(at::kMeta);
  auto r =
      op.call(at::empty({9, 4}, meta), at::empty({9, 4}, meta.dtype(at::kLong)), 0.5, true, c10::optional<int64_t>(-1));
  EXPECT_TRUE(std::get<0>(r).is_meta());
  EXPECT_EQ(std::get<0>(r).sizes(), (std::vector<int64_t>{4, 2, 2}));
  EXPECT_EQ(std::get<1>(r).dim(), 0);
  r = op.call(at::empty({9}, meta.dtype(at::kInt)), at::empty({9}, meta.dtype(at::kBool)), 0.5, false, c10::nullopt);
  EXPECT_EQ(std::get<0>(r).sizes(), (std::vector<int64_t>{2, 2}));
  // And the CPU kernel through the dispatcher.
  auto cpu = op.call(at::tensor({0.9f}), at::tensor({1}, at::kLong), 0.5, false, c10::nullopt);
  EXPECT_EQ(std::get<0>(cpu)[1][1].item<int64_t>(), 1);
}

}  // namespace
}  // namespace tally
