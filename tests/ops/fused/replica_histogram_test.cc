// Tests of replica_histogram (ops/fused/replica_histogram.h): the Poisson(1)
// draws are a fixed function of (seed, key, replica) with Poisson(1)'s
// moments; the one-pass CPU kernel equals the ATen form (which other devices
// run) and a plain loop over rows, for groups and Poisson modes, weights,
// blocks of several elements per row, out-of-range indices and keys, and an
// empty batch.
#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "ops/fused/replica_histogram.h"

namespace tally::ops::fused {
namespace {

// Verifies the draw table is Poisson(1)'s CDF and the tensor form of the
// generator gives the scalar form's draws.
TEST(ReplicaHistogramTest, DrawsArePoissonOneAndAgreeAcrossForms) {
  const auto& cdf = PoissonCdf();
  EXPECT_NEAR(cdf[0], std::exp(-1.0), 1e-15);
  EXPECT_NEAR(cdf[1], 2 * std::exp(-1.0), 1e-15);
  EXPECT_EQ(cdf[kMaxPoissonDraw - 1], 1.0);
  at::Tensor keys = at::arange(-5, 4000, at::kLong);
  keys.index_put_({0}, INT64_MIN);
  keys.index_put_({1}, INT64_MAX);
  at::Tensor w = PoissonWeights(keys, 7, 50);
  ASSERT_EQ(w.sizes(), (std::vector<int64_t>{keys.size(0), 50}));
  auto wa = w.accessor<int64_t, 2>();
  auto ka = keys.accessor<int64_t, 1>();
  for (int64_t i = 0; i < keys.size(0); i += 37) {
    for (int64_t b = 0; b < 50; ++b)
      ASSERT_EQ(wa[i][b], PoissonDraw(7, static_cast<uint64_t>(ka[i]), b)) << i << " " << b;
  }
  // Mean 1 and variance 1 (200,000 draws: 5 standard errors is 0.011 and 0.03).
  at::Tensor d = w.to(at::kDouble);
  EXPECT_NEAR(d.mean().item<double>(), 1.0, 0.011);
  EXPECT_NEAR(d.var().item<double>(), 1.0, 0.03);
  EXPECT_NEAR((w == 0).to(at::kDouble).mean().item<double>(), std::exp(-1.0), 0.006);
  // Another seed draws differently; the same seed again the same.
  EXPECT_FALSE(at::equal(w, PoissonWeights(keys, 8, 50)));
  EXPECT_TRUE(at::equal(w, PoissonWeights(keys, 7, 50)));
}

// The reference: a loop over rows and replicas.
at::Tensor Loop(const at::Tensor& idx, const at::Tensor& key, const at::Tensor& weights, int64_t size, int64_t reps,
                bool poisson, int64_t seed, int64_t block) {
  const bool fl = weights.defined() && weights.is_floating_point();
  std::vector<double> out(reps * size, 0.0);
  for (int64_t e = 0; e < idx.size(0); ++e) {
    const int64_t i = idx[e].item<int64_t>(), k = key[e / block].item<int64_t>();
    if (i < 0 || i >= size) continue;
    const double w = weights.defined() ? weights[e].item<double>() : 1.0;
    for (int64_t b = 0; b < reps; ++b) {
      const int64_t m = poisson ? PoissonDraw(seed, static_cast<uint64_t>(k), b) : (k == b ? 1 : 0);
      out[b * size + i] += m * w;
    }
  }
  return at::tensor(out, at::kDouble).to(fl ? at::kDouble : at::kLong);
}

// Verifies the CPU kernel and the ATen form other devices run against the
// loop.
TEST(ReplicaHistogramTest, KernelsMatchTheLoop) {
  at::manual_seed(3);
  for (int64_t block : {1, 3}) {
    for (bool poisson : {false, true}) {
      for (int weighted = 0; weighted < 3; ++weighted) {
        const int64_t n = 300, size = 5, reps = poisson ? 20 : 4;
        at::Tensor idx = at::randint(-1, size + 1, {n * block}, at::kLong);
        at::Tensor key = poisson ? at::randint(0, 1000, {n}, at::kLong) : at::randint(-1, reps + 1, {n}, at::kLong);
        at::Tensor w;
        if (weighted == 1) w = at::rand({n * block}, at::kDouble);
        if (weighted == 2) w = at::randint(0, 3, {n * block}, at::kLong);
        c10::optional<at::Tensor> ow = w.defined() ? c10::optional<at::Tensor>(w) : c10::nullopt;
        at::Tensor got =
            ReplicaHistogram(idx, key.to(at::kInt), ow, size, reps, poisson ? "poisson" : "groups", 11, block);
        at::Tensor want = Loop(idx, key, w, size, reps, poisson, 11, block);
        at::Tensor aten = ReplicaHistogramAten(idx, key, ow, size, reps, poisson ? "poisson" : "groups", 11, block);
        ASSERT_EQ(got.scalar_type(), want.scalar_type());
        ASSERT_EQ(aten.scalar_type(), want.scalar_type());
        EXPECT_TRUE(at::allclose(got, want, 1e-12, 1e-12))
            << "block " << block << " poisson " << poisson << " w " << weighted;
        EXPECT_TRUE(at::allclose(aten, want, 1e-12, 1e-12))
            << "block " << block << " poisson " << poisson << " w " << weighted;
      }
    }
  }
  // An empty batch adds nothing.
  at::Tensor e = at::empty({0}, at::kLong);
  EXPECT_TRUE(at::equal(ReplicaHistogram(e, e, c10::nullopt, 3, 2, "poisson", 0, 1), at::zeros({6}, at::kLong)));
  // On meta: the planned shape, nothing read.
  at::Tensor m = at::empty({4}, at::TensorOptions().dtype(at::kLong).device(at::kMeta));
  at::Tensor r = ReplicaHistogram(m, m, c10::nullopt, 3, 2, "poisson", 0, 1);
  EXPECT_TRUE(r.is_meta());
  EXPECT_EQ(r.sizes(), (std::vector<int64_t>{6}));
}

}  // namespace
}  // namespace tally::ops::fused
