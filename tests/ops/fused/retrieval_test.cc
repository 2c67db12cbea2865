// Tests of the fused retrieval kernels (ops/fused/retrieval.h) against their
// ATen paths: segment_sort's counting/radix permutation against two stable
// ATen sorts (dense, sparse, negative and sorted keys; ties; NaN scores),
// count_invalid against a loop for every target dtype, and every retrieval
// metric, argument and empty_target_action compiled fused and decomposed
// (FusePolicy::kReference) on data with ties, NaN scores, graded relevance,
// ignored rows, queries without positives or negatives, and one-row queries.
#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/tally.h"
#include "engine/runtime/compiler.h"
#include "gtest/gtest.h"
#include "ops/fused/retrieval.h"

namespace tally {
namespace {

// ReferencePermutation is segment_sort's ATen order: scores descending, then
// keys ascending, both stable.
at::Tensor ReferencePermutation(const at::Tensor& keys, const at::Tensor& scores) {
  at::Tensor p1 = std::get<1>(at::sort(scores, /*stable=*/true, 0, /*descending=*/true));
  at::Tensor p2 = std::get<1>(at::sort(keys.index_select(0, p1), /*stable=*/true, 0, false));
  return p1.index_select(0, p2);
}

// Verifies the permutation on keys of every shape the kernel branches on.
TEST(RetrievalKernelTest, SegmentSortMatchesStableSorts) {
  at::manual_seed(3);
  const int64_t n = 5000;
  std::vector<std::pair<std::string, at::Tensor>> keys = {
      {"dense", at::randint(0, 300, {n}, at::kLong)},
      {"sorted", std::get<0>(at::sort(at::randint(0, 300, {n}, at::kLong)))},
      {"negative", at::randint(-50, 50, {n}, at::kLong)},
      {"sparse", at::randint(0, 400, {n}, at::kLong) * int64_t{1000003} - int64_t{7000000000}},
      {"extremes", at::where(at::rand({n}) < 0.5, at::full({n}, std::numeric_limits<int64_t>::min(), at::kLong),
                             at::full({n}, std::numeric_limits<int64_t>::max(), at::kLong))},
      {"one_key", at::full({n}, 42, at::kLong)},
      {"empty", at::empty({0}, at::kLong)},
      {"one_row", at::full({1}, 5, at::kLong)},
  };
  for (const auto& [name, k] : keys) {
    for (at::ScalarType dtype : {at::kFloat, at::kDouble}) {
      const int64_t rows = k.size(0);
      // Scores with many ties, and a few NaN.
      at::Tensor s = at::round(at::rand({rows}, at::kDouble) * 10) / 10;
      if (rows > 10) s.index_put_({at::randint(0, rows, {rows / 50 + 1}, at::kLong)}, NAN);
      s = s.to(dtype);
      at::Tensor got = ops::fused::SegmentSortPermutationCpu(k, s);
      at::Tensor want = ReferencePermutation(k, s);
      EXPECT_TRUE(at::equal(got, want)) << name << " " << dtype;
    }
  }
}

// Verifies count_invalid against a loop for every target dtype.
TEST(RetrievalKernelTest, CountInvalidMatchesLoop) {
  at::Tensor x = at::tensor({0.0, 1.0, 2.0, -1.0, 0.5, NAN, 1.0, -3.0, 7.0}, at::kDouble);
  for (at::ScalarType dtype : {at::kBool, at::kInt, at::kLong, at::kFloat, at::kDouble}) {
    at::Tensor t = dtype == at::kBool ? x.ne(0) : x.to(dtype);
    at::Tensor v = t.to(at::kDouble);
    for (c10::optional<int64_t> ignore : {c10::optional<int64_t>(), c10::optional<int64_t>(-1)}) {
      int64_t not_binary = 0, negative = 0;
      for (int64_t i = 0; i < v.size(0); ++i) {
        double e = v[i].item<double>();
        bool kept = !(ignore.has_value() && e == static_cast<double>(*ignore));
        not_binary += !(e == 0 || e == 1) && kept;
        negative += !(e >= 0) && kept;
      }
      auto [got_not_binary, got_negative] = ops::fused::CountInvalidCpu(t, ignore);
      EXPECT_EQ(got_not_binary.item<int64_t>(), not_binary) << dtype << " ignore=" << ignore.has_value();
      EXPECT_EQ(got_negative.item<int64_t>(), negative) << dtype << " ignore=" << ignore.has_value();
    }
  }
}

// Data holds retrieval inputs with every case the scores branch on.
NamedTensors Data(bool graded, bool with_ignored) {
  at::manual_seed(11);
  const int64_t n = 700;
  at::Tensor idx = at::randint(0, 60, {n}, at::kLong);
  at::Tensor preds = (at::round(at::rand({n}) * 8) / 8).to(at::kFloat);  // ties
  // NaN scores are refused by the metrics (tests/metrics/nan_scores_test.cc).
  at::Tensor target = graded ? at::randint(0, 4, {n}, at::kLong) : (at::rand({n}) < 0.3).to(at::kLong);
  // Query 60: no positives; 61: only positives; 62: one row; 63: one ignored
  // row only (not a query).
  at::Tensor extra_idx = at::tensor({60, 60, 60, 61, 61, 62, 63}, at::kLong);
  at::Tensor extra_preds = at::tensor({0.5f, 0.5f, 0.1f, 0.9f, 0.2f, 0.3f, 0.4f}, at::kFloat);
  at::Tensor extra_target = at::tensor({0, 0, 0, 1, 1, 1, with_ignored ? -1 : 0}, at::kLong);
  if (with_ignored) target = at::where(at::rand({n}) < 0.1, at::full({}, -1, at::kLong), target);
  return {{"preds", at::cat({preds, extra_preds})},
          {"target", at::cat({target, extra_target})},
          {"indexes", at::cat({idx, extra_idx})}};
}

double Value(const std::string& spec, const NamedTensors& inputs, passes::FusePolicy policy, int64_t batch) {
  auto sig = tally::SignatureOf(inputs);
  EXPECT_TRUE(sig.ok()) << sig.status();
  auto entries = tally::BuildEntries({spec}, *sig, ir::Device{});
  EXPECT_TRUE(entries.ok()) << spec << ": " << entries.status();
  if (!entries.ok()) return NAN;
  CompileOptions co;
  co.fuse_policy = policy;
  auto prog = Compile(*entries, co);
  EXPECT_TRUE(prog.ok()) << prog.status();
  if (!prog.ok()) return NAN;
  const int64_t n = inputs[0].second.size(0);
  for (int64_t s = 0; s < n; s += batch) {
    NamedTensors part;
    for (const auto& [k, t] : inputs) part.emplace_back(k, t.narrow(0, s, std::min(batch, n - s)));
    auto st = (*prog)->Update(part);
    EXPECT_TRUE(st.ok()) << st;
  }
  auto out = (*prog)->Compute();
  EXPECT_TRUE(out.ok()) << spec << ": " << out.status();
  return out.ok() ? (*out)[0].second.item<double>() : NAN;
}

// Verifies every metric and argument fused against decomposed.
TEST(RetrievalKernelTest, ScoresMatchDecomposition) {
  const std::vector<std::string> metrics = {
      "retrieval_recall",   "retrieval_precision",         "retrieval_reciprocal_rank",
      "retrieval_hit_rate", "retrieval_average_precision", "retrieval_r_precision",
      "retrieval_fall_out", "retrieval_normalized_dcg",    "retrieval_auroc"};
  int checked = 0;
  for (bool with_ignored : {false, true}) {
    for (const std::string& m : metrics) {
      const bool graded = m == "retrieval_normalized_dcg";
      NamedTensors data = Data(graded, with_ignored);
      std::vector<std::string> arg_sets = {""};
      if (m != "retrieval_r_precision") arg_sets = {"", "top_k=1", "top_k=3", "top_k=1000"};
      for (std::string args : arg_sets) {
        for (const char* action : {"neg", "pos", "skip"}) {
          std::vector<std::string> extras = {"", "aggregation=median", "aggregation=min", "aggregation=max"};
          if (m == "retrieval_precision") extras.push_back("adaptive_k=true");
          for (const std::string& extra : extras) {
            std::vector<std::string> parts = {absl::StrCat("empty_target_action=", action)};
            if (!args.empty()) parts.push_back(args);
            if (!extra.empty()) parts.push_back(extra);
            if (with_ignored) parts.push_back("ignore_index=-1");
            std::string spec = absl::StrCat(m, "(", absl::StrJoin(parts, ", "), ")");
            double fused = Value(spec, data, passes::FusePolicy::kFused, 97);
            double reference = Value(spec, data, passes::FusePolicy::kReference, 1000);
            EXPECT_NEAR(fused, reference, 1e-12) << spec;
            EXPECT_TRUE(std::isfinite(fused)) << spec;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 150);
}

}  // namespace
}  // namespace tally
