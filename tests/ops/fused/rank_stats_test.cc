// Tests of the fused binary_rank_stats kernel (the exact binary AUROC/AP
// finalize): its statistics equal a brute-force count over all pairs and
// the precision at every positive, and the programs of binary_auroc and
// binary_average_precision give the same values with the kernel and with
// its decomposition — over ties, NaN scores (as +inf, all tied), -0 and
// +0, dropped rows (score -1), float32 and float64, and empty inputs.
#include <ATen/ATen.h>

#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "engine/runtime/compiler.h"
#include "gtest/gtest.h"
#include "ops/fused/rank_stats.h"

namespace tally {
namespace {

// Key orders as the kernel does: NaN as +inf, -0 == +0.
double Key(double s) { return std::isnan(s) ? INFINITY : s; }
bool Greater(double a, double b) { return Key(a) > Key(b); }
bool Tied(double a, double b) { return Key(a) == Key(b); }

struct Brute {
  int64_t n_pos = 0, n_neg = 0;
  double u = 0, precision_sum = 0;
};

Brute BruteForce(const at::Tensor& s_in, const at::Tensor& p_in) {
  at::Tensor s = s_in.to(at::kDouble).contiguous();
  at::Tensor p = p_in.contiguous();
  const double* sv = s.data_ptr<double>();
  const bool* pv = p.data_ptr<bool>();
  Brute b;
  const int64_t n = s.size(0);
  for (int64_t i = 0; i < n; ++i) {
    if (sv[i] < 0) continue;
    pv[i] ? ++b.n_pos : ++b.n_neg;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (sv[i] < 0 || !pv[i]) continue;
    double ge = 0, tp = 0;
    for (int64_t j = 0; j < n; ++j) {
      if (sv[j] < 0) continue;
      if (!pv[j]) b.u += Greater(sv[i], sv[j]) ? 1.0 : Tied(sv[i], sv[j]) ? 0.5 : 0.0;
      if (Greater(sv[j], sv[i]) || Tied(sv[i], sv[j])) {
        ge += 1;
        tp += pv[j];
      }
    }
    b.precision_sum += tp / ge;
  }
  return b;
}

at::Tensor Scores(int64_t n, at::ScalarType dtype, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  at::Tensor s = (at::rand({n}, gen, at::kDouble) * 20).round() / 20;  // many ties
  if (n > 10) {
    s[0] = NAN;
    s[3] = NAN;
    s[4] = -1;  // dropped
    s[5] = 0.0;
    s[6] = -0.0;
    s[7] = INFINITY;
    s[8] = 1.0;
  }
  return s.to(dtype);
}

TEST(RankStatsKernel, EqualsBruteForce) {
  // Verifies every statistic against pairs counted one by one.
  for (at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{17}, int64_t{400}}) {
      at::Generator gen = at::detail::createCPUGenerator(n + 1);
      at::Tensor s = Scores(n, dtype, n + 7);
      at::Tensor p = at::rand({n}, gen, at::kFloat) < 0.4;
      auto [n_pos, n_neg, u, prec] = ops::fused::BinaryRankStatsCpu(s, p);
      Brute b = BruteForce(s, p);
      std::string where = absl::StrCat(c10::toString(dtype), " n=", n);
      EXPECT_EQ(n_pos.item<int64_t>(), b.n_pos) << where;
      EXPECT_EQ(n_neg.item<int64_t>(), b.n_neg) << where;
      EXPECT_EQ(u.item<double>(), b.u) << where;
      EXPECT_NEAR(prec.item<double>(), b.precision_sum, 1e-12 * std::max(1.0, b.precision_sum)) << where;
    }
  }
}

std::vector<double> Values(const NamedTensors& in, passes::FusePolicy policy) {
  auto sig = tally::SignatureOf(in);
  auto entries = tally::BuildEntries({"binary_auroc", "binary_average_precision"}, *sig, ir::Device{});
  EXPECT_TRUE(entries.ok()) << entries.status();
  CompileOptions co;
  co.fuse_policy = policy;
  auto prog = Compile(*entries, co);
  EXPECT_TRUE(prog.ok()) << prog.status();
  EXPECT_TRUE((*prog)->Update(in).ok());
  auto out = (*prog)->Compute();
  EXPECT_TRUE(out.ok()) << out.status();
  std::vector<double> v;
  for (const auto& [label, t] : *out) v.push_back(t.item<double>());
  return v;
}

TEST(RankStatsKernel, ProgramsAgreeWithTheDecomposition) {
  // Verifies binary_auroc and binary_average_precision (one shared
  // binary_rank_stats node) fused and decomposed. The metrics refuse NaN
  // scores (tests/metrics/nan_scores_test.cc), so the kernel's own NaN
  // order is checked against brute force above, not here.
  for (at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    at::Generator gen = at::detail::createCPUGenerator(3);
    at::Tensor s = at::nan_to_num(Scores(500, dtype, 9).abs(), /*nan=*/0.75);
    s[4] = 0.25;
    at::Tensor t = (at::rand({500}, gen, at::kFloat) < 0.3).to(at::kLong);
    NamedTensors in = {{"preds", s}, {"target", t}};
    std::vector<double> fused = Values(in, passes::FusePolicy::kFused);
    std::vector<double> ref = Values(in, passes::FusePolicy::kReference);
    ASSERT_EQ(fused.size(), 2u);
    ASSERT_EQ(ref.size(), 2u);
    EXPECT_EQ(fused[0], ref[0]);
    EXPECT_EQ(fused[1], ref[1]);
    EXPECT_GE(fused[0], 0.0);
    EXPECT_LE(fused[0], 1.0);
  }
}

}  // namespace
}  // namespace tally
