// Tests of the classification metrics (metrics/classification/classification.cc and
// classification_stats.cc): TorchMetrics' own documented examples, values
// against references computed here with plain loops over the data, every
// average, top_k, ignore_index, logits/probabilities/labels, absent classes,
// one row, empty inputs, batching and merge invariance, bad inputs and
// arguments, state sharing across a collection, and sync-freedom (every
// update runs on `meta`).
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "engine/runtime/compiler.h"
#include "engine/runtime/program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"

namespace tally {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// --- tensors and evaluation ---------------------------------------------------

at::Tensor F32(const std::vector<double>& v, std::vector<int64_t> shape) {
  return at::tensor(v, at::kDouble).reshape(shape).to(at::kFloat);
}
at::Tensor I64(const std::vector<int64_t>& v, std::vector<int64_t> shape) {
  return at::tensor(v, at::kLong).reshape(shape);
}
at::Tensor I64(const std::vector<int64_t>& v) { return I64(v, {static_cast<int64_t>(v.size())}); }

NamedTensors Inputs(const at::Tensor& p, const at::Tensor& t) { return {{"preds", p}, {"target", t}}; }

absl::StatusOr<at::Tensor> Eval(const std::string& spec, const at::Tensor& p, const at::Tensor& t, int64_t batch = 0) {
  tally::EvalOptions o;
  o.batch_size = batch;
  auto r = tally::Evaluate({spec}, Inputs(p, t), o);
  if (!r.ok()) return r.status();
  return (*r)[0].value;
}

std::vector<double> Values(const at::Tensor& t) {
  at::Tensor d = t.to(at::kCPU).to(at::kDouble).contiguous().reshape({-1});
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

::testing::AssertionResult Near(const at::Tensor& got, const std::vector<double>& want, double tol,
                                std::vector<int64_t> shape = {}) {
  if (!shape.empty() && got.sizes().vec() != shape) {
    return ::testing::AssertionFailure() << "shape " << got.sizes() << ", expected " << at::IntArrayRef(shape);
  }
  std::vector<double> g = Values(got);
  if (g.size() != want.size()) {
    return ::testing::AssertionFailure() << g.size() << " values, expected " << want.size();
  }
  for (size_t i = 0; i < g.size(); ++i) {
    bool ok =
        (std::isnan(want[i]) && std::isnan(g[i])) || std::abs(g[i] - want[i]) <= tol * std::max(1.0, std::abs(want[i]));
    if (!ok) {
      return ::testing::AssertionFailure() << "element " << i << ": got " << g[i] << ", expected " << want[i];
    }
  }
  return ::testing::AssertionSuccess();
}

absl::StatusOr<std::unique_ptr<Program>> MakeProgram(const std::vector<std::string>& specs, const NamedTensors& like,
                                                     ir::Device device = ir::Device{}) {
  auto sig = tally::SignatureOf(like);
  if (!sig.ok()) return sig.status();
  auto entries = tally::BuildEntries(specs, *sig, device);
  if (!entries.ok()) return entries.status();
  CompileOptions o;
  o.device = device;
  return Compile(*entries, o);
}

// --- references: plain loops over the data --------------------------------------

// Counts are one-vs-rest counts per class (or label).
struct Counts {
  std::vector<double> tp, fp, tn, fn;
  explicit Counts(int64_t k = 0) : tp(k), fp(k), tn(k), fn(k) {}
  void Add(int64_t c, bool pred, bool truth) { (pred ? (truth ? tp : fp) : (truth ? fn : tn))[c] += 1; }
};

// TopK returns the k classes with the highest scores of one row.
std::set<int64_t> TopK(const float* row, int64_t c, int64_t k) {
  std::vector<int64_t> idx(c);
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return row[a] > row[b]; });
  return std::set<int64_t>(idx.begin(), idx.begin() + k);
}

Counts MulticlassCounts(const at::Tensor& scores, const std::vector<int64_t>& target, int64_t k,
                        std::optional<int64_t> ii) {
  at::Tensor s = scores.contiguous();
  int64_t n = s.size(0), c = s.size(1);
  Counts out(c);
  for (int64_t i = 0; i < n; ++i) {
    if (ii && target[i] == *ii) continue;
    std::set<int64_t> pred = TopK(s.data_ptr<float>() + i * c, c, k);
    for (int64_t j = 0; j < c; ++j) out.Add(j, pred.count(j) > 0, target[i] == j);
  }
  return out;
}

// ThresholdLabels applies TorchMetrics' binary/multilabel rule: sigmoid when any
// value is outside [0, 1], then `> threshold`, compared in float32.
std::vector<bool> ThresholdLabels(const std::vector<float>& p, float threshold) {
  bool logits = std::any_of(p.begin(), p.end(), [](float x) { return !(x >= 0 && x <= 1); });
  std::vector<bool> out;
  for (float x : p) {
    float q = logits ? static_cast<float>(1 / (1 + std::exp(-static_cast<double>(x)))) : x;
    out.push_back(q > threshold);
  }
  return out;
}

std::vector<float> FloatData(const at::Tensor& t) {
  at::Tensor f = t.contiguous().to(at::kFloat).reshape({-1});
  return std::vector<float>(f.data_ptr<float>(), f.data_ptr<float>() + f.numel());
}
std::vector<int64_t> IntData(const at::Tensor& t) {
  at::Tensor f = t.contiguous().to(at::kLong).reshape({-1});
  return std::vector<int64_t>(f.data_ptr<int64_t>(), f.data_ptr<int64_t>() + f.numel());
}

// MultilabelCounts: elements of label l are those at flat index i with i % L == l
// for (N, L) inputs.
Counts MultilabelCounts(const std::vector<bool>& pred, const std::vector<int64_t>& target, int64_t labels,
                        std::optional<int64_t> ii) {
  Counts out(labels);
  for (size_t i = 0; i < target.size(); ++i) {
    if (ii && target[i] == *ii) continue;
    out.Add(static_cast<int64_t>(i) % labels, pred[i], target[i] == 1);
  }
  return out;
}

enum class Stat { kAccuracy, kPrecision, kRecall, kFBeta, kSpecificity, kHamming };

double Div(double a, double b, double z) { return b == 0 ? z : a / b; }

double ClassScore(Stat s, bool multiclass, double tp, double fp, double tn, double fn, double zd, double beta) {
  switch (s) {
    case Stat::kAccuracy:
      return multiclass ? Div(tp, tp + fn, 0) : Div(tp + tn, tp + tn + fp + fn, 0);
    case Stat::kHamming:
      return 1 - (multiclass ? Div(tp, tp + fn, 0) : Div(tp + tn, tp + tn + fp + fn, 0));
    case Stat::kPrecision:
      return Div(tp, tp + fp, zd);
    case Stat::kRecall:
      return Div(tp, tp + fn, zd);
    case Stat::kFBeta: {
      double b2 = beta * beta;
      return Div((1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp, zd);
    }
    case Stat::kSpecificity:
      return Div(tn, tn + fp, 0);
  }
  return kNaN;
}

// Averaged follows TorchMetrics' averaging rules as documented in
// tests/golden/SEMANTICS.md §1.7.
std::vector<double> Averaged(Stat s, bool multiclass, const Counts& c, const std::string& average, int64_t top_k,
                             double zd, double beta) {
  size_t k = c.tp.size();
  if (average == "micro") {
    double tp = 0, fp = 0, tn = 0, fn = 0;
    for (size_t j = 0; j < k; ++j) tp += c.tp[j], fp += c.fp[j], tn += c.tn[j], fn += c.fn[j];
    return {ClassScore(s, multiclass, tp, fp, tn, fn, zd, beta)};
  }
  std::vector<double> scores;
  for (size_t j = 0; j < k; ++j)
    scores.push_back(ClassScore(s, multiclass, c.tp[j], c.fp[j], c.tn[j], c.fn[j], zd, beta));
  if (average == "none") return scores;
  double num = 0, den = 0;
  for (size_t j = 0; j < k; ++j) {
    double w = 1;
    if (average == "weighted") {
      w = c.tp[j] + c.fn[j];
    } else if (multiclass) {
      bool topk_rule = top_k > 1 && (s == Stat::kAccuracy || s == Stat::kPrecision || s == Stat::kRecall);
      bool absent = topk_rule ? c.tp[j] + c.fn[j] == 0 : c.tp[j] + c.fp[j] + c.fn[j] == 0;
      if (absent) w = 0;
    }
    num += w * scores[j];
    den += w;
  }
  return {den == 0 ? 0 : num / den};
}

struct StatName {
  const char* name;
  Stat stat;
  double beta;
  bool zero_division;
};
const StatName kStats[] = {
    {"accuracy", Stat::kAccuracy, 1, false},
    {"precision", Stat::kPrecision, 1, true},
    {"recall", Stat::kRecall, 1, true},
    {"f1_score", Stat::kFBeta, 1, true},
    {"fbeta_score", Stat::kFBeta, 0.5, true},
    {"specificity", Stat::kSpecificity, 1, false},
    {"hamming_distance", Stat::kHamming, 1, false},
};

std::string OptArgs(const StatName& m, std::optional<int64_t> ii, double zd) {
  std::string s;
  if (m.beta != 1) absl::StrAppend(&s, ", beta=", m.beta);
  if (ii) absl::StrAppend(&s, ", ignore_index=", *ii);
  if (m.zero_division && zd != 0) absl::StrAppend(&s, ", zero_division=", zd);
  return s;
}

// --- data ----------------------------------------------------------------------

// MulticlassData: N=29 rows, C=5 float32 logits. Targets are in {0, 1, 2}, so
// class 3 is only ever predicted and class 4 (always the lowest score) is
// absent everywhere; with_ignored sets rows 3, 10, 17 to -1.
struct MulticlassData {
  at::Tensor scores, target;
  std::vector<int64_t> t;
};
MulticlassData MakeMulticlass(bool with_ignored, uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0, 1.5);
  std::uniform_int_distribution<int64_t> cls(0, 2);
  int64_t n = 29, c = 5;
  std::vector<double> s;
  std::vector<int64_t> t;
  for (int64_t i = 0; i < n; ++i) {
    t.push_back(cls(rng));
    for (int64_t j = 0; j < c; ++j) s.push_back(j == 4 ? -10.0 - 0.01 * i : g(rng) + (j == t.back() ? 1.0 : 0.0));
  }
  if (with_ignored)
    for (int64_t i : {3, 10, 17}) t[i] = -1;
  return {F32(s, {n, c}), I64(t), t};
}

// MultilabelData: N=19 rows, L=4 float32 probabilities; label 3 is absent
// everywhere (target 0, probability < 0.2); with_ignored sets 5 targets to -1.
struct MultilabelData {
  at::Tensor probs, target;
};
MultilabelData MakeMultilabel(bool with_ignored, uint64_t seed = 11) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  int64_t n = 19, l = 4;
  std::vector<double> p;
  std::vector<int64_t> t;
  for (int64_t i = 0; i < n * l; ++i) {
    bool last = i % l == 3;
    double x = last ? 0.19 * u(rng) : u(rng);
    // Keep clear of the thresholds 0.3 and 0.5.
    if (std::abs(x - 0.3) < 1e-3 || std::abs(x - 0.5) < 1e-3) x += 0.01;
    p.push_back(x);
    t.push_back(last ? 0 : (u(rng) < 0.5 ? 1 : 0));
  }
  if (with_ignored)
    for (int64_t i : {1, 6, 13, 40, 57}) t[i] = -1;
  return {F32(p, {n, l}), I64(t, {n, l})};
}

// BinaryData: 31 float32 probabilities (or logits) and {0, 1} targets; with_ignored
// sets 4 targets to -1.
struct BinaryData {
  at::Tensor preds, target;
};
BinaryData MakeBinary(bool logits, bool with_ignored, uint64_t seed = 3) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> g(0, 2);
  std::vector<double> p;
  std::vector<int64_t> t;
  for (int i = 0; i < 31; ++i) {
    double x = logits ? g(rng) : u(rng);
    if (!logits && (std::abs(x - 0.3) < 1e-3 || std::abs(x - 0.5) < 1e-3)) x += 0.01;
    p.push_back(x);
    t.push_back(u(rng) < 0.45 ? 1 : 0);
  }
  if (with_ignored)
    for (int i : {2, 9, 20, 30}) t[i] = -1;
  return {F32(p, {31}), I64(t)};
}

// --- registry --------------------------------------------------------------------

TEST(ClassificationRegistryTest, RegistersEveryTaskSpecificName) {
  // Verifies that every binary_*, multiclass_* and multilabel_* name is
  // registered with inputs (preds, target, weight), the binary stat family
  // also with groups, and nothing else of the families.
  std::vector<std::string> want;
  for (const char* task : {"binary_", "multiclass_", "multilabel_"}) {
    for (const char* m :
         {"accuracy", "precision", "recall", "f1_score", "fbeta_score", "specificity", "negative_predictive_value",
          "stat_scores", "confusion_matrix", "hamming_distance", "jaccard_index", "matthews_corrcoef"}) {
      want.push_back(absl::StrCat(task, m));
    }
  }
  want.push_back("binary_cohen_kappa");
  want.push_back("multiclass_cohen_kappa");
  want.push_back("multiclass_exact_match");
  want.push_back("multilabel_exact_match");
  for (const std::string& name : want) {
    const metrics::MetricInfo* info = metrics::FindMetric(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->domain, "classification");
    std::vector<std::string> inputs = {"preds", "target", "weight"};
    const bool sliced = absl::StartsWith(name, "binary_") && !absl::StrContains(name, "confusion") &&
                        !absl::StrContains(name, "jaccard") && !absl::StrContains(name, "matthews") &&
                        !absl::StrContains(name, "kappa");
    if (sliced) inputs.push_back("groups");
    EXPECT_EQ(info->inputs, inputs) << name;
  }
  int n = 0;
  for (const auto& m : metrics::AllMetrics()) n += m.domain == "classification";
  EXPECT_EQ(n, static_cast<int>(want.size()));
  EXPECT_EQ(metrics::FindMetric("multilabel_cohen_kappa"), nullptr);
  EXPECT_EQ(metrics::FindMetric("binary_exact_match"), nullptr);
}

// --- TorchMetrics' documented examples ----------------------------------------------

struct DocCase {
  std::string spec;
  at::Tensor preds, target;
  std::vector<double> want;
  std::vector<int64_t> shape;
};

TEST(ClassificationDocTest, MatchesTorchMetricsDocumentedExamples) {
  // Verifies the values printed in TorchMetrics 1.5's docstrings (4 decimals).
  at::Tensor bt = I64({0, 1, 0, 1, 0, 1});
  at::Tensor bl = I64({0, 0, 1, 1, 0, 1});
  at::Tensor bp = F32({0.11, 0.22, 0.84, 0.73, 0.33, 0.92}, {6});
  at::Tensor mt = I64({2, 1, 0, 0});
  at::Tensor ml = I64({2, 1, 0, 1});
  at::Tensor mp = F32({0.16, 0.26, 0.58, 0.22, 0.61, 0.17, 0.71, 0.09, 0.20, 0.05, 0.82, 0.13}, {4, 3});
  at::Tensor lt = I64({0, 1, 0, 1, 0, 1}, {2, 3});
  at::Tensor ll = I64({0, 0, 1, 1, 0, 1}, {2, 3});
  at::Tensor lp = F32({0.11, 0.22, 0.84, 0.73, 0.33, 0.92}, {2, 3});
  at::Tensor jt = I64({1, 1, 0, 0});
  at::Tensor jl = I64({0, 1, 0, 0});
  at::Tensor jp = F32({0.35, 0.85, 0.48, 0.01}, {4});
  at::Tensor mdt = I64({0, 1, 2, 1, 0, 2, 1, 1, 2, 0, 1, 2}, {2, 3, 2});
  at::Tensor mdp = I64({0, 1, 2, 1, 0, 2, 2, 2, 2, 1, 1, 0}, {2, 3, 2});
  std::vector<DocCase> cases = {
      {"binary_accuracy", bl, bt, {0.6667}},
      {"binary_accuracy", bp, bt, {0.6667}},
      {"binary_precision", bp, bt, {0.6667}},
      {"binary_recall", bl, bt, {0.6667}},
      {"binary_fbeta_score(beta=2.0)", bp, bt, {0.6667}},
      {"binary_f1_score", bl, bt, {0.6667}},
      {"binary_specificity", bp, bt, {0.6667}},
      {"binary_hamming_distance", bp, bt, {0.3333}},
      {"binary_stat_scores", bl, bt, {2, 1, 2, 1, 3}, {5}},
      {"binary_stat_scores", bp, bt, {2, 1, 2, 1, 3}, {5}},
      {"binary_jaccard_index", jp, jt, {0.5}},
      {"binary_matthews_corrcoef", jl, jt, {0.5774}},
      {"binary_cohen_kappa", jp, jt, {0.5}},
      {"binary_confusion_matrix", jp, jt, {2, 0, 1, 1}, {2, 2}},
      {"binary_hamming_distance", I64({0, 1, 0, 1}, {2, 2}), I64({0, 1, 1, 1}, {2, 2}), {0.25}},
      {"multiclass_accuracy(num_classes=3)", ml, mt, {0.8333}},
      {"multiclass_accuracy(num_classes=3, average=none)", mp, mt, {0.5, 1, 1}, {3}},
      {"multiclass_precision(num_classes=3)", mp, mt, {0.8333}},
      {"multiclass_precision(num_classes=3, average=none)", ml, mt, {1, 0.5, 1}, {3}},
      {"multiclass_recall(num_classes=3, average=none)", mp, mt, {0.5, 1, 1}, {3}},
      {"multiclass_fbeta_score(beta=2.0, num_classes=3)", ml, mt, {0.7963}},
      {"multiclass_fbeta_score(beta=2.0, num_classes=3, average=none)", mp, mt, {0.5556, 0.8333, 1}, {3}},
      {"multiclass_f1_score(num_classes=3)", mp, mt, {0.7778}},
      {"multiclass_f1_score(num_classes=3, average=none)", ml, mt, {0.6667, 0.6667, 1}, {3}},
      {"multiclass_specificity(num_classes=3)", mp, mt, {0.8889}},
      {"multiclass_specificity(num_classes=3, average=none)", ml, mt, {1, 0.6667, 1}, {3}},
      {"multiclass_hamming_distance(num_classes=3)", mp, mt, {0.1667}},
      {"multiclass_hamming_distance(num_classes=3, average=none)", ml, mt, {0.5, 0, 0}, {3}},
      {"multiclass_stat_scores(num_classes=3, average=micro)", ml, mt, {3, 1, 7, 1, 4}, {5}},
      {"multiclass_stat_scores(num_classes=3, average=none)",
       mp,
       mt,
       {1, 0, 2, 1, 2, 1, 1, 2, 0, 1, 1, 0, 3, 0, 1},
       {3, 5}},
      {"multiclass_jaccard_index(num_classes=3)", mp, mt, {0.6667}},
      {"multiclass_matthews_corrcoef(num_classes=3)", ml, mt, {0.7}},
      {"multiclass_cohen_kappa(num_classes=3)", mp, mt, {0.6364}},
      {"multiclass_confusion_matrix(num_classes=3)", mp, mt, {1, 1, 0, 0, 1, 0, 0, 0, 1}, {3, 3}},
      {"multiclass_exact_match(num_classes=3)", mdp, mdt, {0.5}},
      {"multiclass_accuracy(num_classes=4)", I64({0, 2, 1, 3}), I64({0, 1, 2, 3}), {0.5}},
      {"multiclass_accuracy(num_classes=3, top_k=2, average=micro)",
       F32({0.1, 0.9, 0, 0.3, 0.1, 0.6, 0.2, 0.5, 0.3}, {3, 3}),
       I64({0, 1, 2}),
       {0.6667}},
      {"multiclass_precision(num_classes=3, average=macro)", I64({2, 0, 2, 1}), I64({1, 1, 2, 0}), {0.1667}},
      {"multiclass_precision(num_classes=3, average=micro)", I64({2, 0, 2, 1}), I64({1, 1, 2, 0}), {0.25}},
      {"multiclass_recall(num_classes=3, average=macro)", I64({2, 0, 2, 1}), I64({1, 1, 2, 0}), {0.3333}},
      {"multiclass_specificity(num_classes=3, average=macro)", I64({2, 0, 2, 1}), I64({1, 1, 2, 0}), {0.6111}},
      {"multiclass_specificity(num_classes=3, average=micro)", I64({2, 0, 2, 1}), I64({1, 1, 2, 0}), {0.625}},
      {"multiclass_fbeta_score(num_classes=3, beta=0.5, average=micro)",
       I64({0, 2, 1, 0, 0, 1}),
       I64({0, 1, 2, 0, 1, 2}),
       {0.3333}},
      {"multiclass_matthews_corrcoef(num_classes=2)", jl, jt, {0.5774}},
      {"multiclass_cohen_kappa(num_classes=2)", jl, jt, {0.5}},
      {"multilabel_accuracy(num_labels=3)", ll, lt, {0.6667}},
      {"multilabel_accuracy(num_labels=3, average=none)", lp, lt, {1, 0.5, 0.5}, {3}},
      {"multilabel_precision(num_labels=3)", lp, lt, {0.5}},
      {"multilabel_precision(num_labels=3, average=none)", ll, lt, {1, 0, 0.5}, {3}},
      {"multilabel_recall(num_labels=3)", ll, lt, {0.6667}},
      {"multilabel_recall(num_labels=3, average=none)", lp, lt, {1, 0, 1}, {3}},
      {"multilabel_fbeta_score(beta=2.0, num_labels=3)", lp, lt, {0.6111}},
      {"multilabel_fbeta_score(beta=2.0, num_labels=3, average=none)", ll, lt, {1, 0, 0.8333}, {3}},
      {"multilabel_f1_score(num_labels=3)", ll, lt, {0.5556}},
      {"multilabel_f1_score(num_labels=3, average=none)", lp, lt, {1, 0, 0.6667}, {3}},
      {"multilabel_specificity(num_labels=3)", lp, lt, {0.6667}},
      {"multilabel_specificity(num_labels=3, average=none)", ll, lt, {1, 1, 0}, {3}},
      {"multilabel_hamming_distance(num_labels=3)", lp, lt, {0.3333}},
      {"multilabel_hamming_distance(num_labels=3, average=none)", ll, lt, {0, 0.5, 0.5}, {3}},
      {"multilabel_jaccard_index(num_labels=3)", lp, lt, {0.5}},
      {"multilabel_matthews_corrcoef(num_labels=3)", ll, lt, {0.3333}},
      {"multilabel_confusion_matrix(num_labels=3)", lp, lt, {1, 0, 0, 1, 1, 0, 1, 0, 0, 1, 0, 1}, {3, 2, 2}},
      {"multilabel_exact_match(num_labels=3)", lp, lt, {0.5}},
      {"multilabel_exact_match(num_labels=3)", ll, lt, {0.5}},
  };
  for (const DocCase& c : cases) {
    auto got = Eval(c.spec, c.preds, c.target);
    ASSERT_TRUE(got.ok()) << c.spec << ": " << got.status();
    EXPECT_TRUE(Near(*got, c.want, 6e-5, c.shape)) << c.spec;
  }
}

// --- stat family against loop references ---------------------------------------------

struct StatCase {
  std::string spec;
  std::string task;  // binary, multiclass, multilabel
  StatName metric;
  std::string average;
  int64_t top_k = 1;
  std::optional<int64_t> ii;
  double zd = 0;
  double threshold = 0.5;
  std::string form;  // probs, logits, labels
};

std::vector<StatCase> StatCases() {
  std::vector<StatCase> out;
  for (const StatName& m : kStats) {
    for (double zd : {0.0, 1.0}) {
      if (zd != 0 && !m.zero_division) continue;
      // multiclass
      for (const char* avg : {"micro", "macro", "weighted", "none"}) {
        for (int64_t k : {1, 2}) {
          for (std::optional<int64_t> ii :
               {std::optional<int64_t>(), std::optional<int64_t>(-1), std::optional<int64_t>(2)}) {
            StatCase c{absl::StrCat("multiclass_", m.name, "(num_classes=5, average=", avg, ", top_k=", k,
                                    OptArgs(m, ii, zd), ")"),
                       "multiclass",
                       m,
                       avg,
                       k,
                       ii,
                       zd};
            c.form = "logits";
            out.push_back(c);
          }
        }
        // multilabel
        for (std::optional<int64_t> ii :
             {std::optional<int64_t>(), std::optional<int64_t>(-1), std::optional<int64_t>(0)}) {
          for (double thr : {0.5, 0.3}) {
            StatCase c{absl::StrCat("multilabel_", m.name, "(num_labels=4, average=", avg, ", threshold=", thr,
                                    OptArgs(m, ii, zd), ")"),
                       "multilabel",
                       m,
                       avg,
                       1,
                       ii,
                       zd,
                       thr};
            c.form = "probs";
            out.push_back(c);
          }
        }
      }
      // binary
      for (const char* form : {"probs", "logits", "labels"}) {
        for (std::optional<int64_t> ii :
             {std::optional<int64_t>(), std::optional<int64_t>(-1), std::optional<int64_t>(1)}) {
          for (double thr : {0.5, 0.3}) {
            StatCase c{absl::StrCat("binary_", m.name, "(threshold=", thr, OptArgs(m, ii, zd), ")"),
                       "binary",
                       m,
                       "",
                       1,
                       ii,
                       zd,
                       thr};
            c.form = form;
            out.push_back(c);
          }
        }
      }
    }
  }
  return out;
}

class StatFamilyTest : public ::testing::TestWithParam<StatCase> {};

TEST_P(StatFamilyTest, MatchesLoopReference) {
  // Verifies one stat-family metric (accuracy, precision, recall, f-scores,
  // specificity, hamming) for one average/top_k/ignore_index/zero_division/
  // threshold/input form against counts and formulas computed here by loops.
  const StatCase& c = GetParam();
  at::Tensor preds, target;
  std::vector<double> want;
  if (c.task == "multiclass") {
    MulticlassData d = MakeMulticlass(c.ii == -1);
    preds = d.scores;
    target = d.target;
    Counts counts = MulticlassCounts(d.scores, d.t, c.top_k, c.ii);
    want = Averaged(c.metric.stat, true, counts, c.average, c.top_k, c.zd, c.metric.beta);
  } else if (c.task == "multilabel") {
    MultilabelData d = MakeMultilabel(c.ii == -1);
    preds = d.probs;
    target = d.target;
    Counts counts = MultilabelCounts(ThresholdLabels(FloatData(preds), c.threshold), IntData(target), 4, c.ii);
    want = Averaged(c.metric.stat, false, counts, c.average, 1, c.zd, c.metric.beta);
  } else {
    BinaryData d = MakeBinary(c.form == "logits", c.ii == -1);
    preds = d.preds;
    target = d.target;
    std::vector<bool> labels = ThresholdLabels(FloatData(preds), c.threshold);
    if (c.form == "labels") {
      std::vector<int64_t> l(labels.begin(), labels.end());
      preds = I64(l);
    }
    Counts counts = MultilabelCounts(labels, IntData(target), 1, c.ii);
    want = Averaged(c.metric.stat, false, counts, "micro", 1, c.zd, c.metric.beta);
  }
  auto got = Eval(c.spec, preds, target);
  ASSERT_TRUE(got.ok()) << got.status();
  std::vector<int64_t> shape;
  if (c.average == "none") shape = {static_cast<int64_t>(want.size())};
  EXPECT_TRUE(Near(*got, want, 1e-12, shape));
  EXPECT_EQ(got->scalar_type(), at::kDouble);
}

std::string CaseName(const std::string& spec, size_t index) {
  std::string name = absl::StrCat(spec, "_", index);
  for (char& ch : name)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Classification, StatFamilyTest, ::testing::ValuesIn(StatCases()),
                         [](const ::testing::TestParamInfo<StatCase>& info) {
                           return CaseName(info.param.spec, info.index);
                         });

// --- stat_scores and confusion matrices ---------------------------------------------

TEST(ClassificationTest, StatScoresHaveTorchMetricsLayoutForEveryAverage) {
  // Verifies stat_scores' [tp, fp, tn, fn, support] rows per class, their
  // micro sums, macro means and support-weighted means, against loop counts.
  MulticlassData d = MakeMulticlass(false);
  Counts c = MulticlassCounts(d.scores, d.t, 1, std::nullopt);
  std::vector<double> none, micro(5), macro(5), weighted(5);
  double support = 0;
  for (int j = 0; j < 5; ++j) support += c.tp[j] + c.fn[j];
  for (int j = 0; j < 5; ++j) {
    double row[5] = {c.tp[j], c.fp[j], c.tn[j], c.fn[j], c.tp[j] + c.fn[j]};
    for (int k = 0; k < 5; ++k) {
      none.push_back(row[k]);
      micro[k] += row[k];
      macro[k] += row[k] / 5;
      weighted[k] += row[k] * (c.tp[j] + c.fn[j]) / support;
    }
  }
  std::string base = "multiclass_stat_scores(num_classes=5";
  auto n = Eval(base + ", average=none)", d.scores, d.target);
  auto mi = Eval(base + ", average=micro)", d.scores, d.target);
  auto ma = Eval(base + ")", d.scores, d.target);
  auto we = Eval(base + ", average=weighted)", d.scores, d.target);
  ASSERT_TRUE(n.ok() && mi.ok() && ma.ok() && we.ok()) << n.status() << mi.status() << ma.status() << we.status();
  EXPECT_TRUE(Near(*n, none, 0, {5, 5}));
  EXPECT_EQ(n->scalar_type(), at::kLong);
  EXPECT_TRUE(Near(*mi, micro, 0, {5}));
  EXPECT_EQ(mi->scalar_type(), at::kLong);
  EXPECT_TRUE(Near(*ma, macro, 1e-12, {5}));
  EXPECT_TRUE(Near(*we, weighted, 1e-12, {5}));
  // top_k = 2 and multilabel use the same layout.
  Counts c2 = MulticlassCounts(d.scores, d.t, 2, std::nullopt);
  std::vector<double> none2;
  for (int j = 0; j < 5; ++j)
    for (double v : {c2.tp[j], c2.fp[j], c2.tn[j], c2.fn[j], c2.tp[j] + c2.fn[j]}) none2.push_back(v);
  auto k2 = Eval(base + ", top_k=2, average=none)", d.scores, d.target);
  ASSERT_TRUE(k2.ok()) << k2.status();
  EXPECT_TRUE(Near(*k2, none2, 0, {5, 5}));
  MultilabelData ml = MakeMultilabel(true);
  Counts cl = MultilabelCounts(ThresholdLabels(FloatData(ml.probs), 0.5), IntData(ml.target), 4, -1);
  std::vector<double> nonel;
  for (int j = 0; j < 4; ++j)
    for (double v : {cl.tp[j], cl.fp[j], cl.tn[j], cl.fn[j], cl.tp[j] + cl.fn[j]}) nonel.push_back(v);
  auto l = Eval("multilabel_stat_scores(num_labels=4, average=none, ignore_index=-1)", ml.probs, ml.target);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_TRUE(Near(*l, nonel, 0, {4, 5}));
}

TEST(ClassificationTest, ConfusionMatricesCountAndNormalizeLikeTorchMetrics) {
  // Verifies binary/multiclass/multilabel confusion matrices (rows = target)
  // against loop counts, each normalization (0/0 -> 0), and that ignored
  // targets are dropped.
  MulticlassData d = MakeMulticlass(true);
  std::vector<double> cm(25, 0);
  for (int64_t i = 0; i < 29; ++i) {
    if (d.t[i] == -1) continue;
    cm[d.t[i] * 5 + *TopK(d.scores.data_ptr<float>() + i * 5, 5, 1).begin()] += 1;
  }
  auto norm = [&](const std::string& mode) {
    std::vector<double> out(25);
    double all = std::accumulate(cm.begin(), cm.end(), 0.0);
    for (int r = 0; r < 5; ++r) {
      for (int col = 0; col < 5; ++col) {
        double den = 0;
        for (int k = 0; k < 5; ++k) den += mode == "true" ? cm[r * 5 + k] : cm[k * 5 + col];
        if (mode == "all") den = all;
        out[r * 5 + col] = den == 0 ? 0 : cm[r * 5 + col] / den;
      }
    }
    return out;
  };
  std::string base = "multiclass_confusion_matrix(num_classes=5, ignore_index=-1";
  auto none = Eval(base + ")", d.scores, d.target);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(Near(*none, cm, 0, {5, 5}));
  EXPECT_EQ(none->scalar_type(), at::kLong);
  for (const char* mode : {"true", "pred", "all"}) {
    auto got = Eval(absl::StrCat(base, ", normalize=", mode, ")"), d.scores, d.target);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(Near(*got, norm(mode), 1e-12, {5, 5})) << mode;
  }
  auto quoted = Eval(base + ", normalize='true')", d.scores, d.target);
  ASSERT_TRUE(quoted.ok());
  EXPECT_TRUE(Near(*quoted, norm("true"), 1e-12));
  auto explicit_none = Eval(base + ", normalize=none)", d.scores, d.target);
  ASSERT_TRUE(explicit_none.ok());
  EXPECT_TRUE(Near(*explicit_none, cm, 0));

  // Binary: [[tn, fp], [fn, tp]]; multilabel: one such matrix per label.
  BinaryData b = MakeBinary(false, true);
  std::vector<bool> bl = ThresholdLabels(FloatData(b.preds), 0.5);
  std::vector<int64_t> bt = IntData(b.target);
  std::vector<double> bcm(4, 0);
  for (size_t i = 0; i < bt.size(); ++i)
    if (bt[i] != -1) bcm[bt[i] * 2 + bl[i]] += 1;
  auto bgot = Eval("binary_confusion_matrix(ignore_index=-1)", b.preds, b.target);
  ASSERT_TRUE(bgot.ok()) << bgot.status();
  EXPECT_TRUE(Near(*bgot, bcm, 0, {2, 2}));
  auto bnorm = Eval("binary_confusion_matrix(ignore_index=-1, normalize=true)", b.preds, b.target);
  ASSERT_TRUE(bnorm.ok());
  EXPECT_TRUE(Near(
      *bnorm,
      {bcm[0] / (bcm[0] + bcm[1]), bcm[1] / (bcm[0] + bcm[1]), bcm[2] / (bcm[2] + bcm[3]), bcm[3] / (bcm[2] + bcm[3])},
      1e-12));

  MultilabelData ml = MakeMultilabel(true);
  std::vector<bool> ll = ThresholdLabels(FloatData(ml.probs), 0.5);
  std::vector<int64_t> lt = IntData(ml.target);
  std::vector<double> lcm(16, 0);
  for (size_t i = 0; i < lt.size(); ++i)
    if (lt[i] != -1) lcm[(i % 4) * 4 + lt[i] * 2 + ll[i]] += 1;
  auto lgot = Eval("multilabel_confusion_matrix(num_labels=4, ignore_index=-1)", ml.probs, ml.target);
  ASSERT_TRUE(lgot.ok()) << lgot.status();
  EXPECT_TRUE(Near(*lgot, lcm, 0, {4, 2, 2}));
  // Label 3 is absent everywhere: its normalized "pred" column sums are 0/0 -> 0 where empty.
  auto lall = Eval("multilabel_confusion_matrix(num_labels=4, ignore_index=-1, normalize=all)", ml.probs, ml.target);
  ASSERT_TRUE(lall.ok());
  std::vector<double> want(16);
  for (int l = 0; l < 4; ++l) {
    double s = lcm[l * 4] + lcm[l * 4 + 1] + lcm[l * 4 + 2] + lcm[l * 4 + 3];
    for (int k = 0; k < 4; ++k) want[l * 4 + k] = s == 0 ? 0 : lcm[l * 4 + k] / s;
  }
  EXPECT_TRUE(Near(*lall, want, 1e-12, {4, 2, 2}));
}

// --- jaccard, MCC, kappa, exact match --------------------------------------------------

TEST(ClassificationTest, JaccardIndexAveragesLikeTorchMetrics) {
  // Verifies multiclass and multilabel jaccard for every average against
  // |pred ∩ target| / |pred ∪ target| counted per class by loops, including
  // TorchMetrics' treatment of an in-range ignore_index as a class index
  // (weight 0 in macro, its denominator removed in micro).
  for (std::optional<int64_t> ii : {std::optional<int64_t>(), std::optional<int64_t>(-1), std::optional<int64_t>(1)}) {
    MulticlassData d = MakeMulticlass(ii == -1);
    std::vector<double> inter(5), uni(5), support(5), present(5);
    for (int64_t i = 0; i < 29; ++i) {
      if (ii && d.t[i] == *ii) continue;
      int64_t p = *TopK(d.scores.data_ptr<float>() + i * 5, 5, 1).begin();
      for (int j = 0; j < 5; ++j) {
        bool in_p = p == j, in_t = d.t[i] == j;
        inter[j] += in_p && in_t;
        uni[j] += in_p || in_t;
        support[j] += in_t;
        present[j] += in_p || in_t;
      }
    }
    bool ii_class = ii && *ii >= 0 && *ii < 5;
    std::vector<double> per(5);
    double num = 0, den = 0, macro_n = 0, macro_d = 0, w_n = 0, w_d = 0;
    for (int j = 0; j < 5; ++j) {
      per[j] = Div(inter[j], uni[j], 0);
      num += inter[j];
      if (!(ii_class && j == *ii)) den += uni[j];
      double w = (ii_class && j == *ii) || present[j] == 0 ? 0 : 1;
      macro_n += w * per[j];
      macro_d += w;
      w_n += support[j] * per[j];
      w_d += support[j];
    }
    std::string args = ii ? absl::StrCat(", ignore_index=", *ii) : "";
    auto run = [&](const std::string& avg) {
      auto r =
          Eval(absl::StrCat("multiclass_jaccard_index(num_classes=5, average=", avg, args, ")"), d.scores, d.target);
      EXPECT_TRUE(r.ok()) << r.status();
      return r.ok() ? *r : at::Tensor();
    };
    EXPECT_TRUE(Near(run("none"), per, 1e-12, {5}));
    EXPECT_TRUE(Near(run("micro"), {num / den}, 1e-12));
    EXPECT_TRUE(Near(run("macro"), {macro_n / macro_d}, 1e-12));
    EXPECT_TRUE(Near(run("weighted"), {w_n / w_d}, 1e-12));
  }
  // Multilabel: label 3 is absent everywhere and scores zero_division.
  MultilabelData ml = MakeMultilabel(false);
  std::vector<bool> lab = ThresholdLabels(FloatData(ml.probs), 0.5);
  Counts c = MultilabelCounts(lab, IntData(ml.target), 4, std::nullopt);
  std::vector<double> per;
  double tp = 0, all = 0, wn = 0, wd = 0;
  for (int j = 0; j < 4; ++j) {
    per.push_back(Div(c.tp[j], c.tp[j] + c.fp[j] + c.fn[j], 1));
    tp += c.tp[j];
    all += c.tp[j] + c.fp[j] + c.fn[j];
    wn += (c.tp[j] + c.fn[j]) * per[j];
    wd += c.tp[j] + c.fn[j];
  }
  EXPECT_EQ(per[3], 1);
  std::string base = "multilabel_jaccard_index(num_labels=4, zero_division=1.0";
  auto none = Eval(base + ", average=none)", ml.probs, ml.target);
  auto micro = Eval(base + ", average=micro)", ml.probs, ml.target);
  auto macro = Eval(base + ")", ml.probs, ml.target);
  auto weighted = Eval(base + ", average=weighted)", ml.probs, ml.target);
  ASSERT_TRUE(none.ok() && micro.ok() && macro.ok() && weighted.ok());
  EXPECT_TRUE(Near(*none, per, 1e-12, {4}));
  EXPECT_TRUE(Near(*micro, {tp / all}, 1e-12));
  EXPECT_TRUE(Near(*macro, {(per[0] + per[1] + per[2] + per[3]) / 4}, 1e-12));
  EXPECT_TRUE(Near(*weighted, {wn / wd}, 1e-12));
  // QUIRK: ignore_index=2 with 4 labels also drops label 2 from macro.
  auto quirk = Eval("multilabel_jaccard_index(num_labels=4, zero_division=1.0, ignore_index=2)", ml.probs, ml.target);
  ASSERT_TRUE(quirk.ok());
  EXPECT_TRUE(Near(*quirk, {(per[0] + per[1] + per[3]) / 3}, 1e-12));
}

// PearsonOfOneHots is the multiclass MCC as the correlation of the one-hot
// matrices of target and preds (Gorodkin), by loops over samples.
double PearsonOfOneHots(const std::vector<int64_t>& t, const std::vector<int64_t>& p, int64_t c) {
  double n = static_cast<double>(t.size());
  std::vector<double> mt(c), mp(c);
  for (size_t i = 0; i < t.size(); ++i) mt[t[i]] += 1 / n, mp[p[i]] += 1 / n;
  double xy = 0, xx = 0, yy = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    for (int64_t k = 0; k < c; ++k) {
      double x = (t[i] == k) - mt[k], y = (p[i] == k) - mp[k];
      xy += x * y, xx += x * x, yy += y * y;
    }
  }
  return xx * yy == 0 ? 0 : xy / std::sqrt(xx * yy);
}

TEST(ClassificationTest, MatthewsCorrcoefFollowsTorchMetricsIncludingSpecialCases) {
  // Verifies multiclass MCC against the correlation of one-hot matrices, the
  // binary formula, and TorchMetrics' 2x2 special cases (±1 shortcuts and the
  // epsilon formula when a margin is empty).
  MulticlassData d = MakeMulticlass(false);
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < 29; ++i) labels.push_back(*TopK(d.scores.data_ptr<float>() + i * 5, 5, 1).begin());
  auto mc = Eval("multiclass_matthews_corrcoef(num_classes=5)", d.scores, d.target);
  ASSERT_TRUE(mc.ok()) << mc.status();
  EXPECT_TRUE(Near(*mc, {PearsonOfOneHots(d.t, labels, 5)}, 1e-12));
  // Constant target, C > 2: denominator 0 -> 0.
  auto constant = Eval("multiclass_matthews_corrcoef(num_classes=3)", I64({0, 1, 2}), I64({1, 1, 1}));
  ASSERT_TRUE(constant.ok());
  EXPECT_TRUE(Near(*constant, {0}, 0));

  auto binary = [](std::vector<int64_t> p, std::vector<int64_t> t) {
    auto r = Eval("binary_matthews_corrcoef", I64(p), I64(t));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? Values(*r)[0] : kNaN;
  };
  // tp=2 tn=2 fp=1 fn=1: (4 - 1) / sqrt(3^4).
  EXPECT_NEAR(binary({1, 1, 0, 0, 1, 0}, {1, 1, 0, 0, 0, 1}), 3.0 / 9.0, 1e-12);
  EXPECT_EQ(binary({0, 0, 0}, {0, 0, 0}), 1.0);   // all correct, one class
  EXPECT_EQ(binary({1, 0, 1}, {0, 1, 0}), -1.0);  // all wrong
  // tp=3 fp=2 tn=fn=0: sqrt(eps)(3-2) / sqrt((5+eps)(3+eps)(2+eps)eps) ≈ 1/sqrt(30).
  double eps = 1.1920928955078125e-07;
  double want = std::sqrt(eps) / std::sqrt((5 + eps) * (3 + eps) * (2 + eps) * eps);
  EXPECT_NEAR(binary({1, 1, 1, 1, 1}, {1, 1, 1, 0, 0}), want, 1e-12);
  EXPECT_NEAR(want, 1 / std::sqrt(30.0), 1e-6);
  // Multilabel adds the label matrices: MCC of the flattened elements.
  MultilabelData ml = MakeMultilabel(false);
  std::vector<bool> lab = ThresholdLabels(FloatData(ml.probs), 0.5);
  std::vector<int64_t> lt = IntData(ml.target), lp(lab.begin(), lab.end());
  auto mlr = Eval("multilabel_matthews_corrcoef(num_labels=4)", ml.probs, ml.target);
  ASSERT_TRUE(mlr.ok());
  EXPECT_TRUE(Near(*mlr, {PearsonOfOneHots(lt, lp, 2)}, 1e-12));
}

TEST(ClassificationTest, CohenKappaWithEveryWeighting) {
  // Verifies multiclass kappa with no/linear/quadratic weights against
  // 1 - Σ w·O / Σ w·E computed from loop counts, binary kappa against
  // (po - pe) / (1 - pe), and NaN when everything falls in one class.
  MulticlassData d = MakeMulticlass(false);
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < 29; ++i) labels.push_back(*TopK(d.scores.data_ptr<float>() + i * 5, 5, 1).begin());
  double o[5][5] = {}, rows[5] = {}, cols[5] = {};
  for (int64_t i = 0; i < 29; ++i) o[d.t[i]][labels[i]] += 1, rows[d.t[i]] += 1, cols[labels[i]] += 1;
  for (const char* w : {"none", "linear", "quadratic"}) {
    double num = 0, den = 0;
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 5; ++j) {
        double wt = std::string(w) == "none"     ? (i != j)
                    : std::string(w) == "linear" ? std::abs(i - j)
                                                 : (i - j) * (i - j);
        num += wt * o[i][j];
        den += wt * rows[i] * cols[j] / 29.0;
      }
    }
    auto got = Eval(absl::StrCat("multiclass_cohen_kappa(num_classes=5, weights=", w, ")"), d.scores, d.target);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(Near(*got, {1 - num / den}, 1e-12)) << w;
  }
  BinaryData b = MakeBinary(false, false);
  std::vector<bool> bl = ThresholdLabels(FloatData(b.preds), 0.5);
  std::vector<int64_t> bt = IntData(b.target);
  double agree = 0, pt = 0, pp = 0, n = static_cast<double>(bt.size());
  for (size_t i = 0; i < bt.size(); ++i) agree += bt[i] == bl[i], pt += bt[i], pp += bl[i];
  double po = agree / n, pe = (pt / n) * (pp / n) + (1 - pt / n) * (1 - pp / n);
  for (const char* w : {"none", "linear", "quadratic"}) {
    auto got = Eval(absl::StrCat("binary_cohen_kappa(weights=", w, ")"), b.preds, b.target);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(Near(*got, {(po - pe) / (1 - pe)}, 1e-12)) << w;
  }
  auto one_class = Eval("binary_cohen_kappa", I64({1, 1, 1}), I64({1, 1, 1}));
  ASSERT_TRUE(one_class.ok());
  EXPECT_TRUE(std::isnan(Values(*one_class)[0]));
}

TEST(ClassificationTest, ExactMatchHandlesIgnoreIndexLikeTorchMetrics) {
  // Verifies multiclass exact match (ignored positions count as matches and
  // samples are not dropped) and multilabel exact match (an ignored element
  // makes its sample a non-match), for (N, ...) and extra dims.
  // Multiclass (N, 3): sample 1 matches only if position 2 is ignored.
  at::Tensor p = I64({0, 1, 2, 1, 1, 0, 2, 2, 2, 0, 0, 0}, {4, 3});
  at::Tensor t = I64({0, 1, 2, 1, 1, 2, 2, 0, 2, -1, -1, -1}, {4, 3});
  auto with_ii = Eval("multiclass_exact_match(num_classes=3, ignore_index=-1)", p, t);
  ASSERT_TRUE(with_ii.ok()) << with_ii.status();
  EXPECT_TRUE(Near(*with_ii, {2.0 / 4}, 1e-12));  // samples 0 and 3 (all ignored)
  auto ii2 = Eval("multiclass_exact_match(num_classes=3, ignore_index=2)", p,
                  I64({0, 1, 2, 1, 1, 2, 2, 0, 2, 0, 0, 0}, {4, 3}));
  ASSERT_TRUE(ii2.ok()) << ii2.status();
  EXPECT_TRUE(Near(*ii2, {3.0 / 4}, 1e-12));  // sample 2 still mismatches at position 1
  // Float scores (N, C, X): argmax over dim 1.
  at::Tensor scores = F32({0.9, 0.1, 0.1, 0.8, 0.0, 0.1,   // sample 0: labels [0, 1]
                           0.2, 0.3, 0.7, 0.6, 0.1, 0.1},  // sample 1: labels [1, 1]
                          {2, 3, 2});
  auto md = Eval("multiclass_exact_match(num_classes=3)", scores, I64({0, 1, 1, 0}, {2, 2}));
  ASSERT_TRUE(md.ok()) << md.status();
  EXPECT_TRUE(Near(*md, {0.5}, 1e-12));
  // 1-D with ignore_index: accuracy over all rows with ignored rows correct.
  auto flat = Eval("multiclass_exact_match(num_classes=3, ignore_index=-1)", I64({0, 1, 2, 0}), I64({0, 2, -1, -1}));
  ASSERT_TRUE(flat.ok());
  EXPECT_TRUE(Near(*flat, {3.0 / 4}, 1e-12));

  at::Tensor lp = I64({1, 0, 1, 0, 0, 0, 1, 1, 0}, {3, 3});
  auto ml = Eval("multilabel_exact_match(num_labels=3)", lp, I64({1, 0, 1, 0, 0, 0, 1, 1, 1}, {3, 3}));
  ASSERT_TRUE(ml.ok()) << ml.status();
  EXPECT_TRUE(Near(*ml, {2.0 / 3}, 1e-12));
  auto mli =
      Eval("multilabel_exact_match(num_labels=3, ignore_index=-1)", lp, I64({1, 0, -1, 0, 0, 0, 1, 1, 0}, {3, 3}));
  ASSERT_TRUE(mli.ok()) << mli.status();
  EXPECT_TRUE(Near(*mli, {2.0 / 3}, 1e-12));  // sample 0 has an ignored element: no match
  // (N, L, X): every (sample, position) pair is one sample.
  at::Tensor mdp = F32({0.59, 0.91, 0.91, 0.99, 0.63, 0.04, 0.38, 0.04, 0.86, 0.78, 0.45, 0.37}, {2, 3, 2});
  at::Tensor mdt = I64({1, 1, 1, 1, 1, 0, 0, 0, 1, 1, 0, 1}, {2, 3, 2});  // sample 1, position 1 differs
  auto mlmd = Eval("multilabel_exact_match(num_labels=3)", mdp, mdt);
  ASSERT_TRUE(mlmd.ok()) << mlmd.status();
  EXPECT_TRUE(Near(*mlmd, {3.0 / 4}, 1e-12));
}

// --- input forms ---------------------------------------------------------------------

TEST(ClassificationTest, LogitsProbabilitiesAndLabelsAgree) {
  // Verifies that multiclass logits, their softmax probabilities and their
  // argmax labels give the same results, and that binary/multilabel logits
  // give what their sigmoid probabilities give (sigmoid applied on device).
  MulticlassData d = MakeMulticlass(false);
  at::Tensor probs = at::softmax(d.scores, 1);
  at::Tensor labels = d.scores.argmax(1);
  for (const char* m : {"accuracy", "precision", "recall", "f1_score", "specificity", "jaccard_index",
                        "matthews_corrcoef", "cohen_kappa", "confusion_matrix", "exact_match"}) {
    std::string spec = absl::StrCat("multiclass_", m, "(num_classes=5)");
    auto a = Eval(spec, d.scores, d.target), b = Eval(spec, probs, d.target), c = Eval(spec, labels, d.target);
    ASSERT_TRUE(a.ok() && b.ok() && c.ok()) << spec << a.status() << b.status() << c.status();
    EXPECT_TRUE(Near(*b, Values(*a), 0)) << spec;
    EXPECT_TRUE(Near(*c, Values(*a), 0)) << spec;
  }
  BinaryData bl = MakeBinary(true, false);
  at::Tensor bprobs = at::sigmoid(bl.preds);
  at::Tensor blabels = (bprobs > 0.5).to(at::kLong);
  at::Tensor bbool = bprobs > 0.5;
  for (const char* m : {"accuracy", "f1_score", "jaccard_index", "matthews_corrcoef", "cohen_kappa"}) {
    std::string spec = absl::StrCat("binary_", m);
    auto a = Eval(spec, bl.preds, bl.target), b = Eval(spec, bprobs, bl.target);
    auto c = Eval(spec, blabels, bl.target), e = Eval(spec, bbool, bl.target.to(at::kBool));
    ASSERT_TRUE(a.ok() && b.ok() && c.ok() && e.ok()) << spec << a.status() << b.status() << c.status() << e.status();
    EXPECT_TRUE(Near(*b, Values(*a), 0)) << spec;
    EXPECT_TRUE(Near(*c, Values(*a), 0)) << spec;
    EXPECT_TRUE(Near(*e, Values(*a), 0)) << spec;
  }
  MultilabelData ml = MakeMultilabel(false);
  at::Tensor logits = at::log(ml.probs / (1 - ml.probs));
  auto a = Eval("multilabel_confusion_matrix(num_labels=4)", logits, ml.target);
  auto b = Eval("multilabel_confusion_matrix(num_labels=4)", ml.probs, ml.target);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(Near(*a, Values(*b), 0));
}

TEST(ClassificationTest, BinaryThresholdIsStrictAndComparedInPredsDtype) {
  // Verifies `p > threshold` (a probability equal to the threshold is
  // negative), the comparison in float32 for float32 preds (float32(0.3) is
  // not above 0.3 in float32), in float64 for float64 preds, and that values
  // within [0, 1] are never sigmoided.
  at::Tensor t = I64({1, 1, 1});
  auto at_half = Eval("binary_recall", F32({0.5, 0.5, 0.75}, {3}), t);
  ASSERT_TRUE(at_half.ok());
  EXPECT_TRUE(Near(*at_half, {1.0 / 3}, 1e-12));
  auto f32 = Eval("binary_recall(threshold=0.3)", F32({0.3, 0.3, 0.31}, {3}), t);
  ASSERT_TRUE(f32.ok());
  EXPECT_TRUE(Near(*f32, {1.0 / 3}, 1e-12));
  // float64 0.3f32 = 0.30000001192..., which is above 0.3 in float64.
  auto f64 = Eval("binary_recall(threshold=0.3)", F32({0.3, 0.3, 0.31}, {3}).to(at::kDouble), t);
  ASSERT_TRUE(f64.ok());
  EXPECT_TRUE(Near(*f64, {1.0}, 1e-12));
  // A logit of 0 is sigmoid 0.5: negative at the default threshold.
  auto logit0 = Eval("binary_recall", F32({0.0, -3.0, 2.0}, {3}), t);
  ASSERT_TRUE(logit0.ok());
  EXPECT_TRUE(Near(*logit0, {1.0 / 3}, 1e-12));
}

TEST(ClassificationTest, BinaryIgnoredElementsStillDecideLogitsOnlyForTheStatFamily) {
  // Verifies TorchMetrics' quirk: the stat-score family looks at every element
  // (ignored ones too) to decide that preds are logits, the binary
  // confusion-matrix family only at the kept ones.
  at::Tensor p = F32({0.6, 0.4, 0.7, 5.0}, {4});  // 5.0 is ignored
  at::Tensor t = I64({1, 0, 0, -1});
  // Sigmoided: sigmoid(0.4) > 0.5, so all three kept are predicted positive.
  auto acc = Eval("binary_accuracy(ignore_index=-1)", p, t);
  ASSERT_TRUE(acc.ok());
  EXPECT_TRUE(Near(*acc, {1.0 / 3}, 1e-12));
  // Not sigmoided: predictions 1, 0, 1.
  auto cm = Eval("binary_confusion_matrix(ignore_index=-1)", p, t);
  ASSERT_TRUE(cm.ok());
  EXPECT_TRUE(Near(*cm, {1, 1, 0, 1}, 0, {2, 2}));
}

TEST(ClassificationTest, ExtraDimsAreFlattenedIntoSamples) {
  // Verifies multidim_average=global: multiclass (N, C, X, Y) scores with
  // (N, X, Y) targets equal the flattened (N·X·Y, C) problem (top_k 1 and 2),
  // multilabel (N, L, X) equals (N·X, L), and binary (N, X) equals (N·X).
  std::mt19937_64 rng(5);
  std::normal_distribution<double> g(0, 1);
  std::uniform_int_distribution<int64_t> cls(0, 3);
  int64_t n = 6, c = 4, x = 3, y = 2;
  std::vector<double> s;
  std::vector<int64_t> t;
  for (int64_t i = 0; i < n * c * x * y; ++i) s.push_back(g(rng));
  for (int64_t i = 0; i < n * x * y; ++i) t.push_back(cls(rng));
  at::Tensor scores = F32(s, {n, c, x, y}), target = I64(t, {n, x, y});
  at::Tensor flat_scores = scores.permute({0, 2, 3, 1}).reshape({-1, c}).contiguous();
  at::Tensor flat_target = target.reshape({-1});
  for (const char* spec :
       {"multiclass_accuracy(num_classes=4, average=none)", "multiclass_recall(num_classes=4, top_k=2, average=none)",
        "multiclass_precision(num_classes=4, top_k=3)", "multiclass_stat_scores(num_classes=4, top_k=2, average=none)",
        "multiclass_confusion_matrix(num_classes=4)", "multiclass_cohen_kappa(num_classes=4)"}) {
    auto a = Eval(spec, scores, target), b = Eval(spec, flat_scores, flat_target);
    ASSERT_TRUE(a.ok() && b.ok()) << spec << a.status() << b.status();
    EXPECT_TRUE(Near(*a, Values(*b), 1e-15)) << spec;
  }
  // A sample is a row of positions for exact match.
  auto em = Eval("multiclass_exact_match(num_classes=4)", scores, target);
  ASSERT_TRUE(em.ok());
  at::Tensor lab = scores.argmax(1);
  double matches = 0;
  for (int64_t i = 0; i < n; ++i) matches += lab[i].eq(target[i]).all().item<bool>();
  EXPECT_TRUE(Near(*em, {matches / n}, 1e-12));

  MultilabelData ml = MakeMultilabel(false);  // (19, 4): view as (19, 4, 1) and as (1, 4, 19)
  at::Tensor p3 = ml.probs.unsqueeze(-1), t3 = ml.target.unsqueeze(-1);
  at::Tensor pt = ml.probs.t().unsqueeze(0).contiguous(), tt = ml.target.t().unsqueeze(0).contiguous();
  for (const char* spec :
       {"multilabel_f1_score(num_labels=4, average=none)", "multilabel_confusion_matrix(num_labels=4)",
        "multilabel_exact_match(num_labels=4)", "multilabel_accuracy(num_labels=4, average=micro)"}) {
    auto a = Eval(spec, ml.probs, ml.target), b = Eval(spec, p3, t3), e = Eval(spec, pt, tt);
    ASSERT_TRUE(a.ok() && b.ok() && e.ok()) << spec << a.status() << b.status() << e.status();
    EXPECT_TRUE(Near(*b, Values(*a), 0)) << spec;
    EXPECT_TRUE(Near(*e, Values(*a), 0)) << spec;
  }
  BinaryData b = MakeBinary(false, false);
  at::Tensor bp = b.preds.narrow(0, 0, 30).reshape({10, 3}), bt = b.target.narrow(0, 0, 30).reshape({10, 3});
  auto a2 = Eval("binary_f1_score", bp, bt), a1 = Eval("binary_f1_score", bp.reshape({-1}), bt.reshape({-1}));
  ASSERT_TRUE(a1.ok() && a2.ok()) << a2.status();
  EXPECT_TRUE(Near(*a2, Values(*a1), 0));
}

// --- edge cases ------------------------------------------------------------------------

TEST(ClassificationTest, AbsentClassIsLeftOutOfMulticlassMacroOnly) {
  // Verifies that a class absent from target and preds gets zero_division in
  // average=none, is left out of the multiclass macro mean, and is kept in the
  // multilabel macro mean.
  at::Tensor p = I64({0, 1, 1, 0}), t = I64({0, 1, 0, 0});
  auto none = Eval("multiclass_precision(num_classes=3, average=none, zero_division=1.0)", p, t);
  auto macro = Eval("multiclass_precision(num_classes=3)", p, t);
  ASSERT_TRUE(none.ok() && macro.ok());
  EXPECT_TRUE(Near(*none, {1.0, 0.5, 1.0}, 1e-12, {3}));
  EXPECT_TRUE(Near(*macro, {0.75}, 1e-12));
  at::Tensor lp = I64({1, 0, 0, 0, 1, 0}, {2, 3}), lt = I64({1, 0, 0, 1, 1, 0}, {2, 3});
  auto lmacro = Eval("multilabel_recall(num_labels=3)", lp, lt);
  ASSERT_TRUE(lmacro.ok());
  EXPECT_TRUE(Near(*lmacro, {(0.5 + 1.0 + 0.0) / 3}, 1e-12));
}

TEST(ClassificationTest, OneRowFollowsTorchMetrics) {
  // Verifies every task on a single row.
  auto acc = Eval("multiclass_accuracy(num_classes=3)", F32({0.1, 0.7, 0.2}, {1, 3}), I64({1}));
  ASSERT_TRUE(acc.ok());
  EXPECT_TRUE(Near(*acc, {1.0}, 0));
  auto f1 = Eval("multiclass_f1_score(num_classes=3, average=none)", F32({0.1, 0.7, 0.2}, {1, 3}), I64({2}));
  ASSERT_TRUE(f1.ok());
  EXPECT_TRUE(Near(*f1, {0, 0, 0}, 0, {3}));
  auto mcc = Eval("binary_matthews_corrcoef", F32({0.9}, {1}), I64({1}));
  ASSERT_TRUE(mcc.ok());
  EXPECT_TRUE(Near(*mcc, {1.0}, 0));
  auto kappa = Eval("binary_cohen_kappa", F32({0.9}, {1}), I64({1}));
  ASSERT_TRUE(kappa.ok());
  EXPECT_TRUE(std::isnan(Values(*kappa)[0]));
  auto ml =
      Eval("multilabel_hamming_distance(num_labels=2, average=micro)", F32({0.9, 0.1}, {1, 2}), I64({1, 1}, {1, 2}));
  ASSERT_TRUE(ml.ok());
  EXPECT_TRUE(Near(*ml, {0.5}, 1e-12));
}

struct EmptyCase {
  std::string spec;
  std::vector<double> want;
};

TEST(ClassificationTest, EmptyInputGivesTorchMetricsZeroDivisionValues) {
  // Verifies the result of every family when no row was seen (N = 0):
  // zero_division for scores, zeros for counts, NaN where TorchMetrics
  // divides without a guard (kappa, jaccard macro, weighted stat_scores).
  at::Tensor mp = at::zeros({0, 3}, at::kFloat), mt = at::zeros({0}, at::kLong);
  std::vector<EmptyCase> mc = {
      {"multiclass_accuracy(num_classes=3)", {0}},
      {"multiclass_precision(num_classes=3, zero_division=1.0, average=none)", {1, 1, 1}},
      {"multiclass_recall(num_classes=3, average=micro, zero_division=1.0)", {1}},
      {"multiclass_f1_score(num_classes=3, top_k=2)", {0}},
      {"multiclass_specificity(num_classes=3, average=weighted)", {0}},
      {"multiclass_hamming_distance(num_classes=3, average=micro)", {1}},
      {"multiclass_stat_scores(num_classes=3, average=micro)", {0, 0, 0, 0, 0}},
      {"multiclass_stat_scores(num_classes=3, average=weighted)", {kNaN, kNaN, kNaN, kNaN, kNaN}},
      {"multiclass_confusion_matrix(num_classes=3, normalize=true)", std::vector<double>(9, 0)},
      {"multiclass_jaccard_index(num_classes=3)", {kNaN}},
      {"multiclass_jaccard_index(num_classes=3, average=micro)", {0}},
      {"multiclass_matthews_corrcoef(num_classes=3)", {0}},
      {"multiclass_cohen_kappa(num_classes=3)", {kNaN}},
      {"multiclass_exact_match(num_classes=3)", {0}},
  };
  for (const EmptyCase& c : mc) {
    auto got = Eval(c.spec, mp, mt);
    ASSERT_TRUE(got.ok()) << c.spec << ": " << got.status();
    EXPECT_TRUE(Near(*got, c.want, 0)) << c.spec;
  }
  at::Tensor bp = at::zeros({0}, at::kFloat), bt = at::zeros({0}, at::kLong);
  std::vector<EmptyCase> bc = {
      {"binary_accuracy", {0}},
      {"binary_precision(zero_division=1.0)", {1}},
      {"binary_stat_scores", {0, 0, 0, 0, 0}},
      {"binary_confusion_matrix", {0, 0, 0, 0}},
      {"binary_jaccard_index", {0}},
      {"binary_matthews_corrcoef", {0}},
      {"binary_cohen_kappa", {kNaN}},
  };
  for (const EmptyCase& c : bc) {
    auto got = Eval(c.spec, bp, bt);
    ASSERT_TRUE(got.ok()) << c.spec << ": " << got.status();
    EXPECT_TRUE(Near(*got, c.want, 0)) << c.spec;
  }
  at::Tensor lp = at::zeros({0, 2}, at::kFloat), lt = at::zeros({0, 2}, at::kLong);
  for (const EmptyCase& c : std::vector<EmptyCase>{{"multilabel_accuracy(num_labels=2)", {0}},
                                                   {"multilabel_exact_match(num_labels=2)", {0}},
                                                   {"multilabel_matthews_corrcoef(num_labels=2)", {0}}}) {
    auto got = Eval(c.spec, lp, lt);
    ASSERT_TRUE(got.ok()) << c.spec << ": " << got.status();
    EXPECT_TRUE(Near(*got, c.want, 0)) << c.spec;
  }
}

// AllSpecs is a collection over (N, 5) logits and (N,) targets, with every
// multiclass metric and several argument sets.
std::vector<std::string> AllMulticlassSpecs() {
  std::vector<std::string> out;
  for (const char* m :
       {"accuracy", "precision", "recall", "f1_score", "specificity", "hamming_distance", "stat_scores"}) {
    for (const char* args :
         {"", ", average=none", ", average=micro", ", average=weighted", ", top_k=2", ", ignore_index=1"}) {
      out.push_back(absl::StrCat("multiclass_", m, "(num_classes=5", args, ")"));
    }
  }
  for (const char* s :
       {"multiclass_fbeta_score(num_classes=5, beta=2.0)", "multiclass_confusion_matrix(num_classes=5)",
        "multiclass_jaccard_index(num_classes=5, ignore_index=2)", "multiclass_matthews_corrcoef(num_classes=5)",
        "multiclass_cohen_kappa(num_classes=5, weights=quadratic)",
        "multiclass_exact_match(num_classes=5, ignore_index=1)"}) {
    out.push_back(s);
  }
  return out;
}

TEST(ClassificationTest, BatchingEmptyBatchesAndMergeDoNotChangeResults) {
  // Verifies that one collection of all multiclass metrics gives identical
  // results with batch sizes 1, 7 and all rows, with empty batches in
  // between, and as the merge of two programs fed uneven parts.
  MulticlassData d = MakeMulticlass(false);
  std::vector<std::string> specs = AllMulticlassSpecs();
  tally::EvalOptions all;
  auto want = tally::Evaluate(specs, Inputs(d.scores, d.target), all);
  ASSERT_TRUE(want.ok()) << want.status();
  for (int64_t batch : {1, 7}) {
    tally::EvalOptions o;
    o.batch_size = batch;
    auto got = tally::Evaluate(specs, Inputs(d.scores, d.target), o);
    ASSERT_TRUE(got.ok()) << got.status();
    for (size_t i = 0; i < specs.size(); ++i) {
      EXPECT_TRUE(Near((*got)[i].value, Values((*want)[i].value), 0)) << specs[i] << " batch " << batch;
    }
  }
  auto one = MakeProgram(specs, Inputs(d.scores, d.target));
  auto other = MakeProgram(specs, Inputs(d.scores, d.target));
  ASSERT_TRUE(one.ok() && other.ok()) << one.status();
  at::Tensor empty_s = d.scores.narrow(0, 0, 0), empty_t = d.target.narrow(0, 0, 0);
  ASSERT_TRUE((*one)->Update(Inputs(empty_s, empty_t)).ok());
  ASSERT_TRUE((*one)->Update(Inputs(d.scores.narrow(0, 0, 10), d.target.narrow(0, 0, 10))).ok());
  ASSERT_TRUE((*one)->Update(Inputs(empty_s, empty_t)).ok());
  ASSERT_TRUE((*other)->Update(Inputs(d.scores.narrow(0, 10, 19), d.target.narrow(0, 10, 19))).ok());
  ASSERT_TRUE((*one)->Merge(**other).ok());
  auto merged = (*one)->Compute();
  ASSERT_TRUE(merged.ok()) << merged.status();
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_TRUE(Near((*merged)[i].second, Values((*want)[i].value), 0)) << specs[i];
  }
}

// --- bad inputs and arguments ----------------------------------------------------------

TEST(ClassificationTest, BadShapesAndDtypesAreBuildErrorsNamingMetricAndInput) {
  // Verifies host-side metadata errors: the message names the metric and the
  // input that is wrong.
  struct Bad {
    std::string spec;
    at::Tensor p, t;
    std::string input, what;
  };
  std::vector<Bad> bad = {
      {"multiclass_accuracy(num_classes=3)", at::zeros({4, 4}), I64({0, 1, 2, 0}), "preds", "num_classes=3"},
      {"multiclass_confusion_matrix(num_classes=5)", at::zeros({4, 4}), I64({0, 1, 2, 0}), "preds", "(N, 5, ...)"},
      {"multiclass_accuracy(num_classes=3)", I64({0, 1, 2, 0, 1, 2, 0, 1}, {4, 2}), I64({0, 1, 2, 0}), "preds",
       "float scores"},
      {"multiclass_accuracy(num_classes=3)", at::zeros({4, 3, 2}), I64({0, 1, 2, 0}), "preds", "expected scores"},
      {"multiclass_accuracy(num_classes=3, top_k=2)", I64({0, 1, 2, 0}), I64({0, 1, 2, 0}), "preds", "top_k=2"},
      {"multiclass_accuracy(num_classes=3)", at::zeros({4, 3}), at::zeros({4}), "target", "integer or bool"},
      {"binary_accuracy", at::zeros({4}), I64({0, 1, 1, 0, 1, 1, 0, 0}, {4, 2}), "preds", "does not match"},
      {"multilabel_f1_score(num_labels=3)", at::zeros({4, 2}), at::zeros({4, 2}, at::kLong), "preds", "num_labels=3"},
      {"multilabel_f1_score(num_labels=3)", at::zeros({4}), at::zeros({4}, at::kLong), "preds", "(N, 3, ...)"},
  };
  for (const Bad& b : bad) {
    auto got = Eval(b.spec, b.p, b.t);
    ASSERT_FALSE(got.ok()) << b.spec;
    std::string msg(got.status().message());
    std::string name = b.spec.substr(0, b.spec.find('('));
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << msg;
    EXPECT_THAT(msg, HasSubstr(absl::StrCat(name, ": ", b.input, ": "))) << b.spec;
    EXPECT_THAT(msg, HasSubstr(b.what)) << b.spec;
  }
}

TEST(ClassificationTest, OutOfRangeValuesFailComputeWithACountAndDoNotTouchStates) {
  // Verifies the deferred value checks: an out-of-range target (or int
  // prediction) makes Compute fail with the metric, the input and the count,
  // the offending rows leave the states untouched, and Update itself succeeds.
  at::Tensor p = F32({0.9, 0.05, 0.05, 0.1, 0.8, 0.1, 0.2, 0.2, 0.6, 0.7, 0.2, 0.1}, {4, 3});
  at::Tensor t = I64({0, 3, 2, -2});
  auto prog = MakeProgram({"multiclass_accuracy(num_classes=3)"}, Inputs(p, t));
  ASSERT_TRUE(prog.ok()) << prog.status();
  ASSERT_TRUE((*prog)->Update(Inputs(p, t)).ok());
  auto r = (*prog)->Compute();
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("multiclass_accuracy: target: 2 values outside [0, 3)"));
  // Only rows 0 and 2 reached the (narrowed) confusion matrix: its rows are
  // the diagonal, the target counts and the prediction counts.
  const auto& states = (*prog)->module().states;
  bool found = false;
  for (size_t i = 0; i < states.size(); ++i) {
    if (states[i].check.empty()) {
      found = true;
      EXPECT_TRUE(Near((*prog)->states()[i], {1, 0, 1, 1, 0, 1, 1, 0, 1}, 0)) << states[i].name;
    }
  }
  EXPECT_TRUE(found);

  auto labels = Eval("multiclass_recall(num_classes=3)", I64({0, 5, 2}), I64({0, 1, 2}));
  ASSERT_FALSE(labels.ok());
  EXPECT_THAT(std::string(labels.status().message()), HasSubstr("multiclass_recall: preds: 1 values outside [0, 3)"));
  // An ignored target is not out of range.
  auto ignored = Eval("multiclass_recall(num_classes=3, ignore_index=-2)", p, I64({0, 1, 2, -2}));
  EXPECT_TRUE(ignored.ok()) << ignored.status();
  auto binary = Eval("binary_f1_score", F32({0.2, 0.7, 0.1}, {3}), I64({0, 2, 1}));
  ASSERT_FALSE(binary.ok());
  EXPECT_THAT(std::string(binary.status().message()), HasSubstr("binary_f1_score: target: 1 values outside {0, 1}"));
  auto blabels = Eval("binary_accuracy", I64({0, 2, 1}), I64({0, 1, 1}));
  ASSERT_FALSE(blabels.ok());
  EXPECT_THAT(std::string(blabels.status().message()),
              HasSubstr("binary_accuracy: preds: 1 label values outside {0, 1}"));
  auto ml = Eval("multilabel_precision(num_labels=2)", F32({0.2, 0.7, 0.1, 0.3}, {2, 2}), I64({0, 7, 1, 9}, {2, 2}));
  ASSERT_FALSE(ml.ok());
  EXPECT_THAT(std::string(ml.status().message()), HasSubstr("multilabel_precision: target: 2 values outside {0, 1}"));
}

TEST(ClassificationTest, BadIntPredsAtIgnoredPositionsStillFailLikeTorchMetrics) {
  // Regression (differential fuzz against TorchMetrics 1.5.2): binary and
  // multilabel int preds outside {0, 1} where the target is ignore_index.
  // TorchMetrics validates every element of label preds before it masks
  // ignored ones, so binary_accuracy(ignore_index=-1) on preds [0, 2, 1],
  // target [0, -1, 1] raises; Tally computed 1.0. Covers the fused kernel
  // ([N] and [N, L]) and the primitive path (extra dims).
  struct Case {
    std::string spec;
    at::Tensor p, t;
  };
  std::vector<Case> cases = {
      {"binary_accuracy(ignore_index=-1)", I64({0, 2, 1}), I64({0, -1, 1})},
      {"binary_confusion_matrix(ignore_index=-1)", I64({0, 2, 1}), I64({0, -1, 1})},
      {"binary_cohen_kappa(ignore_index=255)", I64({0, 1, 2, 0}, {2, 2}), I64({0, 1, 255, 0}, {2, 2})},
      {"multilabel_f1_score(num_labels=2, ignore_index=-1)", I64({0, 2, 1, 1}, {2, 2}), I64({0, -1, 1, 1}, {2, 2})},
      {"multilabel_exact_match(num_labels=2, ignore_index=-1)", I64({0, 2, 1, 1, 0, 0, 1, 1}, {2, 2, 2}),
       I64({0, -1, 1, 1, 0, 0, 1, 1}, {2, 2, 2})},
  };
  for (const Case& c : cases) {
    for (int64_t batch : {0, 1}) {
      auto got = Eval(c.spec, c.p, c.t, batch);
      ASSERT_FALSE(got.ok()) << c.spec << " batch " << batch;
      EXPECT_THAT(std::string(got.status().message()), HasSubstr("preds: 1 label values outside {0, 1}")) << c.spec;
    }
  }
  // Multiclass label preds are counted after ignored positions are dropped
  // (TorchMetrics' bincount never sees them), so they stay unchecked there.
  auto mc = Eval("multiclass_accuracy(num_classes=3, ignore_index=-1)", I64({0, 7, 2}), I64({0, -1, 2}));
  ASSERT_TRUE(mc.ok()) << mc.status();
  EXPECT_TRUE(Near(*mc, {1.0}, 1e-12));
}

TEST(ClassificationTest, BadArgumentsAreErrorsNamingTheMetric) {
  // Verifies argument validation: required arguments, ranges, enums, a
  // samplewise average without position dims, and arguments a metric does
  // not take.
  at::Tensor p = at::rand({4, 3}), t = I64({0, 1, 2, 0});
  at::Tensor bp = at::rand({4}), bt = I64({0, 1, 1, 0});
  struct Bad {
    std::string spec;
    bool binary;
    std::string what;
  };
  std::vector<Bad> bad = {
      {"multiclass_accuracy", false, "missing required argument 'num_classes'"},
      {"multiclass_accuracy(num_classes=1)", false, "num_classes must be an integer >= 2"},
      {"multiclass_accuracy(num_classes=3, top_k=4)", false, "top_k must be in [1, num_classes=3]"},
      {"multiclass_accuracy(num_classes=3, average=samples)", false, "average"},
      {"multiclass_accuracy(num_classes=3, multidim_average=samplewise)", false, "at least 3 dims (N, 3, ...)"},
      {"multiclass_accuracy(num_classes=3, multidim_average=sample)", false, "multidim_average"},
      {"multiclass_jaccard_index(num_classes=3, top_k=2)", false, "unknown argument 'top_k'"},
      {"multiclass_accuracy(num_classes=3, zero_division=1)", false, "unknown argument 'zero_division'"},
      {"multiclass_confusion_matrix(num_classes=3, normalize=rows)", false, "normalize must be one of"},
      {"multiclass_cohen_kappa(num_classes=3, weights=cubic)", false, "weights"},
      {"multiclass_fbeta_score(num_classes=3)", false, "missing required argument 'beta'"},
      {"multiclass_fbeta_score(num_classes=3, beta=-1.0)", false, "beta must be > 0"},
      {"multiclass_f1_score(num_classes=3, zero_division=0.5)", false, "zero_division must be 0 or 1"},
      {"binary_accuracy(threshold=1.5)", true, "threshold must be in [0, 1]"},
      // Regression (differential fuzz): TorchMetrics raises for a non-float threshold.
      {"binary_accuracy(threshold=1)", true, "threshold must be a float"},
      {"multilabel_f1_score(num_labels=3, threshold=0)", false, "threshold must be a float"},
      {"binary_accuracy(num_classes=2)", true, "unknown argument 'num_classes'"},
      {"binary_jaccard_index(multidim_average=global)", true, "unknown argument 'multidim_average'"},
      {"multilabel_accuracy(num_classes=3)", false, "missing required argument 'num_labels'"},
  };
  for (const Bad& b : bad) {
    auto got = b.binary ? Eval(b.spec, bp, bt) : Eval(b.spec, p, t);
    ASSERT_FALSE(got.ok()) << b.spec;
    std::string name = b.spec.substr(0, b.spec.find('('));
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << got.status();
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(name + ": ")) << b.spec;
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(b.what)) << b.spec;
  }
  // validate_args is accepted and changes nothing; average=None spelled in any way.
  auto v = Eval("multiclass_accuracy(num_classes=3, validate_args=false, average=None)", p, t);
  auto w = Eval("multiclass_accuracy(num_classes=3, average='none')", p, t);
  ASSERT_TRUE(v.ok() && w.ok()) << v.status() << w.status();
  EXPECT_TRUE(Near(*v, Values(*w), 0, {3}));
}

// --- sharing and sync-freedom ------------------------------------------------------------

int CountStates(const std::vector<std::string>& specs, const NamedTensors& like, bool checks) {
  auto prog = MakeProgram(specs, like);
  EXPECT_TRUE(prog.ok()) << prog.status();
  if (!prog.ok()) return -1;
  int n = 0;
  for (const auto& s : (*prog)->module().states) n += checks || s.check.empty();
  return n;
}

TEST(ClassificationTest, MetricsOverTheSameStatisticsShareStates) {
  // Verifies that CSE merges the states of metrics that need the same
  // statistics: one confusion matrix (and one check counter) for a whole
  // multiclass family, shared top-k counts, shared binary matrices unless
  // ignore_index makes the logit decision differ, and no sharing across
  // different num_classes.
  MulticlassData d = MakeMulticlass(false);
  NamedTensors mc = Inputs(d.scores, d.target);
  std::vector<std::string> family;
  for (const char* m : {"accuracy", "precision", "recall", "f1_score", "specificity", "hamming_distance", "stat_scores",
                        "confusion_matrix", "jaccard_index", "matthews_corrcoef", "cohen_kappa"}) {
    family.push_back(absl::StrCat("multiclass_", m, "(num_classes=5, ignore_index=1)"));
  }
  family.push_back("multiclass_precision(num_classes=5, ignore_index=1, average=micro)");
  EXPECT_EQ(CountStates(family, mc, true), 2);  // confmat + target check
  EXPECT_EQ(CountStates({"multiclass_accuracy(num_classes=5, top_k=2)", "multiclass_precision(num_classes=5, top_k=2)",
                         "multiclass_recall(num_classes=5, top_k=2, average=none)"},
                        mc, false),
            3);  // tp, fp, fn (tn is not needed and is eliminated)
  EXPECT_EQ(
      CountStates({"multiclass_accuracy(num_classes=5)", "multiclass_accuracy(num_classes=5, top_k=2)"}, mc, true),
      5);  // confmat, top-k tp and fn, and a target check each: top_k=1 counts
           // bad targets inside the fused mc_confmat group, top_k=2 with ATen ops
  BinaryData b = MakeBinary(false, true);
  NamedTensors bin = Inputs(b.preds, b.target);
  EXPECT_EQ(CountStates({"binary_accuracy", "binary_f1_score", "binary_jaccard_index", "binary_matthews_corrcoef",
                         "binary_confusion_matrix"},
                        Inputs(b.preds, b.target.clamp_min(0)), false),
            1);
  EXPECT_EQ(CountStates({"binary_accuracy(ignore_index=-1)", "binary_f1_score(ignore_index=-1)",
                         "binary_jaccard_index(ignore_index=-1)", "binary_cohen_kappa(ignore_index=-1)"},
                        bin, false),
            2);
  MultilabelData ml = MakeMultilabel(false);
  EXPECT_EQ(CountStates({"multilabel_accuracy(num_labels=4)", "multilabel_confusion_matrix(num_labels=4)",
                         "multilabel_jaccard_index(num_labels=4, average=micro)"},
                        Inputs(ml.probs, ml.target), true),
            2);
  // Different ignore_index: different statistics.
  EXPECT_EQ(CountStates({"multiclass_accuracy(num_classes=5)", "multiclass_accuracy(num_classes=5, ignore_index=1)"},
                        mc, false),
            2);
}

struct MetaCase {
  std::string spec;
  std::vector<int64_t> pshape, tshape;
  at::ScalarType pdtype;
};

// --- multidim_average="samplewise" -----------------------------------------

// The multidim examples of TorchMetrics' docstrings (stat_scores.py,
// accuracy.py, exact_match.py): two samples of 3 x 2 positions.
at::Tensor DocBinaryTarget() { return I64({0, 1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 0}, {2, 3, 2}); }
at::Tensor DocBinaryPreds() {
  return F32({0.59, 0.91, 0.91, 0.99, 0.63, 0.04, 0.38, 0.04, 0.86, 0.780, 0.45, 0.37}, {2, 3, 2});
}
at::Tensor DocMulticlassTarget() { return I64({0, 1, 2, 1, 0, 2, 1, 1, 2, 0, 1, 2}, {2, 3, 2}); }
at::Tensor DocMulticlassPreds() { return I64({0, 2, 2, 0, 0, 1, 2, 2, 2, 1, 1, 0}, {2, 3, 2}); }

TEST(ClassificationTest, SamplewiseMatchesTorchMetricsDocExamples) {
  // Verifies each sample's statistics and scores against the documented
  // outputs, for every task.
  struct Case {
    std::string spec;
    at::Tensor p, t;
    std::vector<double> want;
    std::vector<int64_t> shape;
  };
  const at::Tensor bp = DocBinaryPreds(), bt = DocBinaryTarget();
  const at::Tensor mp = DocMulticlassPreds(), mt = DocMulticlassTarget();
  const at::Tensor em_p = I64({0, 1, 2, 1, 0, 2, 2, 2, 2, 1, 1, 0}, {2, 3, 2});
  const std::vector<Case> cases = {
      {"binary_stat_scores(multidim_average=samplewise)", bp, bt, {2, 3, 0, 1, 3, 0, 2, 1, 3, 3}, {2, 5}},
      {"binary_accuracy(multidim_average=samplewise)", bp, bt, {1.0 / 3, 1.0 / 6}, {2}},
      {"multiclass_stat_scores(num_classes=3, multidim_average=samplewise, average=micro)",
       mp,
       mt,
       {3, 3, 9, 3, 6, 2, 4, 8, 4, 6},
       {2, 5}},
      {"multiclass_stat_scores(num_classes=3, multidim_average=samplewise, average=none)",
       mp,
       mt,
       {2, 1, 3, 0, 2, 0, 1, 3, 2, 2, 1, 1, 3, 1, 2, 0, 1, 4, 1, 1, 1, 1, 2, 2, 3, 1, 2, 2, 1, 2},
       {2, 3, 5}},
      {"multiclass_accuracy(num_classes=3, multidim_average=samplewise)", mp, mt, {0.5, 0.2777777777777778}, {2}},
      {"multiclass_accuracy(num_classes=3, multidim_average=samplewise, average=none)",
       mp,
       mt,
       {1, 0, 0.5, 0, 1.0 / 3, 0.5},
       {2, 3}},
      {"multilabel_stat_scores(num_labels=3, multidim_average=samplewise, average=micro)",
       bp,
       bt,
       {2, 3, 0, 1, 3, 0, 2, 1, 3, 3},
       {2, 5}},
      {"multilabel_stat_scores(num_labels=3, multidim_average=samplewise, average=none)",
       bp,
       bt,
       {1, 1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 0, 0, 2, 2, 0, 2, 0, 0, 0, 0, 0, 1, 1, 1},
       {2, 3, 5}},
      {"multilabel_accuracy(num_labels=3, multidim_average=samplewise)", bp, bt, {1.0 / 3, 1.0 / 6}, {2}},
      {"multilabel_accuracy(num_labels=3, multidim_average=samplewise, average=none)",
       bp,
       bt,
       {0.5, 0.5, 0, 0, 0, 0.5},
       {2, 3}},
      {"multiclass_exact_match(num_classes=3, multidim_average=samplewise)", em_p, mt, {1, 0}, {2}},
      {"multilabel_exact_match(num_labels=3, multidim_average=samplewise)", bp, bt, {0, 0}, {2}},
  };
  for (const Case& c : cases) {
    for (int64_t batch : {0, 1}) {
      auto got = Eval(c.spec, c.p, c.t, batch);
      ASSERT_TRUE(got.ok()) << c.spec << ": " << got.status();
      EXPECT_TRUE(Near(*got, c.want, 1e-12, c.shape)) << c.spec << " batch " << batch;
    }
  }
}

TEST(ClassificationTest, SamplewiseScoresEachSampleLikeAGlobalCallOnIt) {
  // Verifies, on random data with ignore_index and a class absent from some
  // samples, that sample i's samplewise score equals the global score of
  // sample i alone — for every stat metric, average and top_k — and that
  // batches of 3 give the same rows in the same order.
  at::Generator gen = at::detail::createCPUGenerator(7);
  const int64_t n = 9;
  at::Tensor scores = at::randn({n, 4, 5}, gen);
  at::Tensor target = at::randint(0, 3, {n, 5}, gen, at::kLong);  // class 3 never a target
  target.index_put_({at::rand({n, 5}, gen) < 0.2}, -1);
  target.select(0, 0).fill_(-1);  // a sample with every position ignored
  std::vector<std::string> specs;
  for (const char* metric : {"accuracy", "precision", "recall", "f1_score", "specificity", "hamming_distance"}) {
    for (const char* avg : {"micro", "macro", "weighted", "none"}) {
      for (int top_k : {1, 2}) {
        specs.push_back(absl::StrCat("multiclass_", metric, "(num_classes=4, ignore_index=-1, average=", avg,
                                     ", top_k=", top_k, ")"));
      }
    }
  }
  for (const std::string& global : specs) {
    std::string sw = global.substr(0, global.size() - 1) + ", multidim_average=samplewise)";
    auto all = Eval(sw, scores, target);
    auto batched = Eval(sw, scores, target, 3);
    ASSERT_TRUE(all.ok() && batched.ok()) << sw << ": " << all.status() << batched.status();
    EXPECT_EQ(all->size(0), n) << sw;
    EXPECT_TRUE(Near(*batched, Values(*all), 1e-12, all->sizes().vec())) << sw;
    for (int64_t i = 0; i < n; ++i) {
      auto one = Eval(global, scores.narrow(0, i, 1), target.narrow(0, i, 1));
      ASSERT_TRUE(one.ok()) << global << ": " << one.status();
      EXPECT_TRUE(Near((*all)[i], Values(*one), 1e-12)) << sw << " sample " << i;
    }
  }
}

TEST(ClassificationTest, SamplewiseEdgeCasesAndErrors) {
  // Verifies one sample ([1], not TorchMetrics' squeezed scalar), an empty
  // batch ([0]), errors for inputs without position dims, and a deferred
  // label check that leaves the other samples' rows unchanged.
  auto one = Eval("binary_accuracy(multidim_average=samplewise)", DocBinaryPreds().narrow(0, 1, 1),
                  DocBinaryTarget().narrow(0, 1, 1));
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_TRUE(Near(*one, {1.0 / 6}, 1e-12, {1}));
  auto empty = Eval("multiclass_f1_score(num_classes=3, multidim_average=samplewise)", at::empty({0, 3, 2}, at::kFloat),
                    at::empty({0, 2}, at::kLong));
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->sizes().vec(), std::vector<int64_t>({0}));
  struct Bad {
    std::string spec;
    at::Tensor p, t;
    std::string what;
  };
  const std::vector<Bad> bad = {
      {"binary_accuracy(multidim_average=samplewise)", F32({0.2, 0.8}, {2}), I64({0, 1}),
       "preds: expected at least 2 dims (N, ...)"},
      {"multiclass_recall(num_classes=3, multidim_average=samplewise)", I64({0, 2}), I64({0, 1}),
       "preds: expected at least 2 dims (N, ...)"},
      {"multilabel_precision(num_labels=2, multidim_average=samplewise)", F32({0.2, 0.8}, {1, 2}), I64({0, 1}, {1, 2}),
       "preds: expected at least 3 dims (N, 2, ...)"},
      {"multilabel_exact_match(num_labels=2, multidim_average=samplewise)", F32({0.2, 0.8}, {1, 2}),
       I64({0, 1}, {1, 2}), "preds: expected at least 3 dims (N, 2, ...)"},
  };
  for (const Bad& b : bad) {
    auto got = Eval(b.spec, b.p, b.t);
    ASSERT_FALSE(got.ok()) << b.spec;
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(b.what)) << b.spec;
    EXPECT_THAT(std::string(got.status().message()), HasSubstr(b.spec.substr(0, b.spec.find('(')))) << b.spec;
  }
  // An out-of-range label fails Compute naming the count; the update leaves
  // zero counts for that sample and the others' rows as they are.
  at::Tensor t = DocMulticlassTarget().clone();
  t.index_put_({1, 0, 0}, 5);
  const std::string spec = "multiclass_stat_scores(num_classes=3, multidim_average=samplewise, average=micro)";
  auto checked = Eval(spec, DocMulticlassPreds(), t);
  ASSERT_FALSE(checked.ok());
  EXPECT_THAT(std::string(checked.status().message()), HasSubstr("1 values outside [0, 3)"));
  auto prog = MakeProgram({spec}, Inputs(DocMulticlassPreds(), t), ir::Device{"cpu"});
  ASSERT_TRUE(prog.ok()) << prog.status();
  ASSERT_TRUE((*prog)->Update(Inputs(DocMulticlassPreds(), t)).ok());
  std::vector<double> rows;
  for (const at::Tensor& st : (*prog)->states()) {
    if (st.dim() == 3) rows = Values(st.narrow(0, 0, 2));
  }
  // Sample 0 as documented (tp, fp, tn, fn per class); sample 1 all zero.
  EXPECT_EQ(rows, std::vector<double>({2, 0, 1, 1, 1, 1, 3, 3, 3, 0, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}));
}

TEST(ClassificationTest, SamplewiseUpdatesRunOnMeta) {
  // Verifies that samplewise updates never sync: they run on meta tensors,
  // with full and empty batches, and every state stays on meta.
  const std::vector<MetaCase> cases = {
      {"binary_f1_score(multidim_average=samplewise, ignore_index=-1)", {8, 3}, {8, 3}, at::kFloat},
      {"binary_stat_scores(multidim_average=samplewise)", {8, 2, 2}, {8, 2, 2}, at::kLong},
      {"multiclass_precision(num_classes=4, multidim_average=samplewise)", {8, 4, 3}, {8, 3}, at::kFloat},
      {"multiclass_recall(num_classes=4, top_k=2, multidim_average=samplewise)", {8, 4, 3}, {8, 3}, at::kFloat},
      {"multiclass_accuracy(num_classes=4, ignore_index=1, multidim_average=samplewise)", {8, 3}, {8, 3}, at::kLong},
      {"multiclass_exact_match(num_classes=4, multidim_average=samplewise)", {8, 4, 3}, {8, 3}, at::kFloat},
      {"multilabel_specificity(num_labels=3, multidim_average=samplewise, average=weighted)",
       {8, 3, 2},
       {8, 3, 2},
       at::kFloat},
      {"multilabel_exact_match(num_labels=3, ignore_index=-1, multidim_average=samplewise)",
       {8, 3, 2},
       {8, 3, 2},
       at::kLong},
  };
  for (const MetaCase& c : cases) {
    at::Tensor p = at::empty(c.pshape, at::TensorOptions().dtype(c.pdtype).device(at::kMeta));
    at::Tensor t = at::empty(c.tshape, at::TensorOptions().dtype(at::kLong).device(at::kMeta));
    auto prog = MakeProgram({c.spec}, Inputs(p, t), ir::Device{"meta"});
    ASSERT_TRUE(prog.ok()) << c.spec << ": " << prog.status();
    EXPECT_TRUE((*prog)->Update(Inputs(p, t)).ok()) << c.spec;
    EXPECT_TRUE((*prog)->Update(Inputs(p.narrow(0, 0, 0), t.narrow(0, 0, 0))).ok()) << c.spec;
    for (const at::Tensor& st : (*prog)->states()) EXPECT_TRUE(st.is_meta()) << c.spec;
  }
}

TEST(ClassificationTest, EveryUpdateRunsOnMeta) {
  // Verifies that every classification metric's update runs on meta tensors,
  // which cannot be read on the host: no update syncs.
  std::vector<MetaCase> cases;
  for (const auto& m : metrics::AllMetrics()) {
    if (m.domain != "classification") continue;
    std::string extra = m.name.find("fbeta") != std::string::npos ? "beta=2.0" : "";
    auto spec = [&](std::string args) {
      if (!extra.empty()) args = args.empty() ? extra : extra + ", " + args;
      return args.empty() ? m.name : absl::StrCat(m.name, "(", args, ")");
    };
    if (m.name.rfind("binary_", 0) == 0) {
      cases.push_back({spec(""), {8}, {8}, at::kFloat});
      cases.push_back({spec("ignore_index=-1"), {8, 3}, {8, 3}, at::kDouble});
      cases.push_back({spec(""), {8}, {8}, at::kLong});
    } else if (m.name.rfind("multiclass_", 0) == 0) {
      cases.push_back({spec("num_classes=4"), {8, 4}, {8}, at::kFloat});
      cases.push_back({spec("num_classes=4, ignore_index=1"), {8}, {8}, at::kLong});
      cases.push_back({spec("num_classes=4"), {8, 4, 3}, {8, 3}, at::kFloat});
      bool topk = m.name.find("confusion") == std::string::npos && m.name.find("jaccard") == std::string::npos &&
                  m.name.find("matthews") == std::string::npos && m.name.find("kappa") == std::string::npos &&
                  m.name.find("exact") == std::string::npos;
      if (topk) cases.push_back({spec("num_classes=4, top_k=2, ignore_index=-1"), {8, 4, 3}, {8, 3}, at::kFloat});
    } else {
      cases.push_back({spec("num_labels=3"), {8, 3}, {8, 3}, at::kFloat});
      cases.push_back({spec("num_labels=3, ignore_index=-1"), {8, 3, 2}, {8, 3, 2}, at::kLong});
    }
  }
  EXPECT_GE(cases.size(), 100u);
  for (const MetaCase& c : cases) {
    at::Tensor p = at::empty(c.pshape, at::TensorOptions().dtype(c.pdtype).device(at::kMeta));
    at::Tensor t = at::empty(c.tshape, at::TensorOptions().dtype(at::kLong).device(at::kMeta));
    auto prog = MakeProgram({c.spec}, Inputs(p, t), ir::Device{"meta"});
    ASSERT_TRUE(prog.ok()) << c.spec << ": " << prog.status();
    absl::Status s = (*prog)->Update(Inputs(p, t));
    EXPECT_TRUE(s.ok()) << c.spec << ": " << s;
    s = (*prog)->Update(Inputs(p.narrow(0, 0, 0), t.narrow(0, 0, 0)));
    EXPECT_TRUE(s.ok()) << c.spec << " (empty batch): " << s;
    for (const at::Tensor& st : (*prog)->states()) EXPECT_TRUE(st.is_meta()) << c.spec;
  }
}

}  // namespace
}  // namespace tally
