// replica_histogram: the one row reduction of sliced and bootstrapped
// metrics (engine/dsl/replicate.h). Element e of `idx` belongs to row
// e / block; its row's `key` says in which replicas it counts and how often:
//   * mode "groups": once, in replica key (a group id; outside [0, K): nowhere);
//   * mode "poisson": in every replica b, PoissonDraw(seed, key, b) times
//     (the bootstrap's Poisson(1) resampling weight; key is the row's id).
// out[b * size + idx[e]] += multiplicity * (weights[e], or 1); an idx outside
// [0, size) counts nowhere. Poisson per group (`groups`, num_groups = G):
// out[g][b * size + idx[e]] for the row's group g, nowhere for a g outside
// [0, G) — a bootstrap of every slice, each with the draws it would have
// alone. The draw depends only on (seed, key, b), so a
// row weighs the same in any batch, shard or merge order.
//
// The CPU kernel is one pass with no temporaries; every other device runs
// the same arithmetic as ATen ops in row chunks (bit-identical draws: the
// generator is integer arithmetic and one comparison of doubles).
#ifndef TALLY_OPS_FUSED_REPLICA_HISTOGRAM_H_
#define TALLY_OPS_FUSED_REPLICA_HISTOGRAM_H_

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <array>
#include <cstdint>
#include <string>

namespace tally::ops::fused {

// kMaxPoissonDraw bounds a Poisson(1) draw: P(X > 19) < 1e-18, below the
// generator's resolution of 2^-53, so the table below is exact.
inline constexpr int kMaxPoissonDraw = 19;

// PoissonCdf is P(X <= j) of Poisson(1) for j = 0..kMaxPoissonDraw-1, in
// double; a draw is the number of entries its uniform is >= to.
const std::array<double, kMaxPoissonDraw>& PoissonCdf();

// The generator's constants (splitmix64): a row's hash is
// Mix(SeedHash(seed) ^ key); its uniform in replica b is
// (Mix(hash + (b + 1) * kGolden) >> 11) * 2^-53.
inline constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;
inline constexpr uint64_t kMixMul1 = 0xbf58476d1ce4e5b9ULL;
inline constexpr uint64_t kMixMul2 = 0x94d049bb133111ebULL;
uint64_t SeedHash(uint64_t seed);
// KeyHash mixes the seed into a row's key.
uint64_t KeyHash(uint64_t seed, uint64_t key);
// PoissonDraw is row `key`'s resampling count in replica b.
int64_t PoissonDraw(uint64_t seed, uint64_t key, int64_t b);

// PoissonWeights is PoissonDraw for every row of `key` (i64 [N]) and
// replica: i64 [N, replicas], as ATen ops on key's device.
at::Tensor PoissonWeights(const at::Tensor& key, int64_t seed, int64_t replicas);

// ReplicaHistogram: out i64 [replicas * size] (f64 when `weights` is float;
// [G, replicas * size] with groups). ReplicaHistogramAten is the ATen form
// it runs off the CPU (chunks of rows with bounded temporaries), on any
// device.
at::Tensor ReplicaHistogram(const at::Tensor& idx, const at::Tensor& key, const c10::optional<at::Tensor>& weights,
                            int64_t size, int64_t replicas, const std::string& mode, int64_t seed, int64_t block,
                            const c10::optional<at::Tensor>& groups = c10::nullopt, int64_t num_groups = 0);
at::Tensor ReplicaHistogramAten(const at::Tensor& idx, const at::Tensor& key, const c10::optional<at::Tensor>& weights,
                                int64_t size, int64_t replicas, const std::string& mode, int64_t seed, int64_t block,
                                const c10::optional<at::Tensor>& groups = c10::nullopt, int64_t num_groups = 0);

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_REPLICA_HISTOGRAM_H_
