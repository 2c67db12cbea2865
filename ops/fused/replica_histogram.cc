#include "ops/fused/replica_histogram.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

namespace tally::ops::fused {
namespace {

constexpr double kTwoToMinus53 = 1.0 / 9007199254740992.0;

// Mix is splitmix64's finalizer.
uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * kMixMul1;
  z = (z ^ (z >> 27)) * kMixMul2;
  return z ^ (z >> 31);
}

int64_t DrawFromHash(uint64_t h, int64_t b) {
  const double u = static_cast<double>(Mix(h + static_cast<uint64_t>(b + 1) * kGolden) >> 11) * kTwoToMinus53;
  const auto& cdf = PoissonCdf();
  return std::upper_bound(cdf.begin(), cdf.end(), u) - cdf.begin();
}

// FastDraws is DrawFromHash for the hot loop, bit for bit: u = k * 2^-53
// with k = Mix(...) >> 11 an exact integer, so u >= cdf[j] exactly when k >=
// ceil(cdf[j] * 2^53) (scaling by 2^53 is exact). The draw counts the first
// six integer thresholds without branches (half the draws are 0 or 1, so a
// search mispredicts); a draw past 5 (P < 6e-4) searches.
class FastDraws {
 public:
  FastDraws() {
    const auto& cdf = PoissonCdf();
    for (int j = 0; j < 6; ++j) limit_[j] = static_cast<uint64_t>(std::ceil(cdf[j] * 9007199254740992.0));
  }
  int64_t operator()(uint64_t h, int64_t b) const {
    const uint64_t k = Mix(h + static_cast<uint64_t>(b + 1) * kGolden) >> 11;
    const int64_t m = static_cast<int64_t>(k >= limit_[0]) + static_cast<int64_t>(k >= limit_[1]) +
                      static_cast<int64_t>(k >= limit_[2]) + static_cast<int64_t>(k >= limit_[3]) +
                      static_cast<int64_t>(k >= limit_[4]) + static_cast<int64_t>(k >= limit_[5]);
    return m < 6 ? m : DrawFromHash(h, b);
  }

 private:
  uint64_t limit_[6];
};

// The same arithmetic on int64 tensors: ATen's integer ops wrap, and a
// logical shift is the arithmetic one with the sign bits masked off.
at::Tensor Srl(const at::Tensor& z, int s) {
  return at::bitwise_and(at::bitwise_right_shift(z, s), static_cast<int64_t>(~uint64_t{0} >> s));
}
at::Tensor MixTensor(at::Tensor z) {
  z = at::mul(at::bitwise_xor(z, Srl(z, 30)), static_cast<int64_t>(kMixMul1));
  z = at::mul(at::bitwise_xor(z, Srl(z, 27)), static_cast<int64_t>(kMixMul2));
  return at::bitwise_xor(z, Srl(z, 31));
}

// Rows per chunk of the ATen path: its temporaries are [rows * block, K].
int64_t ChunkRows(int64_t replicas, int64_t block) {
  return std::max<int64_t>(1, (int64_t{1} << 22) / std::max<int64_t>(1, replicas * block));
}

// OutShape is [replicas * size], with the group axis in front when grouped.
std::vector<int64_t> OutShape(int64_t replicas, int64_t size, int64_t num_groups) {
  if (num_groups > 0) return {num_groups, replicas * size};
  return {replicas * size};
}

at::Tensor AtenReplicaHistogram(const at::Tensor& idx, const at::Tensor& key, const c10::optional<at::Tensor>& weights,
                                int64_t size, int64_t replicas, bool poisson, int64_t seed, int64_t block,
                                at::ScalarType out_type, const at::Tensor& groups, int64_t num_groups) {
  at::Tensor shaped = at::zeros(OutShape(replicas, size, num_groups), idx.options().dtype(out_type));
  if (idx.device().is_meta() || idx.numel() == 0) return shaped;
  at::Tensor out = shaped.view({-1});
  const int64_t n = key.numel();
  at::Tensor k = key.to(at::kLong).reshape({n});
  at::Tensor ix = idx.to(at::kLong).reshape({n * block});
  at::Tensor w = weights.has_value() ? weights->to(out_type).reshape({n * block}) : at::Tensor();
  if (!poisson) {
    at::Tensor g = k.unsqueeze(1).expand({n, block}).reshape({n * block});
    at::Tensor valid = (ix >= 0).logical_and_(ix < size).logical_and_(g >= 0).logical_and_(g < replicas);
    at::Tensor flat = at::where(valid, g * size + ix, 0);
    at::Tensor one = at::ones({}, out.options());
    at::Tensor wv = at::where(valid, w.defined() ? w : one, at::zeros({}, out.options()));
    return out.index_add_(0, flat, wv);
  }
  at::Tensor offsets = at::arange(replicas, k.options()) * size;
  const int64_t step = ChunkRows(replicas, block);
  for (int64_t r0 = 0; r0 < n; r0 += step) {
    const int64_t rows = std::min(step, n - r0);
    at::Tensor m = PoissonWeights(k.narrow(0, r0, rows), seed, replicas);  // [rows, K]
    m = m.unsqueeze(1).expand({rows, block, replicas}).reshape({rows * block, replicas}).to(out_type);
    at::Tensor ic = ix.narrow(0, r0 * block, rows * block).unsqueeze(1);
    if (w.defined()) m = m * w.narrow(0, r0 * block, rows * block).unsqueeze(1);
    at::Tensor valid = (ic >= 0).logical_and_(ic < size);
    at::Tensor flat = ic + offsets;
    if (groups.defined()) {
      // Each element's row's group: its slab of replicas * size cells.
      at::Tensor g = groups.narrow(0, r0, rows).unsqueeze(1).expand({rows, block}).reshape({rows * block, 1});
      valid = valid.logical_and(g >= 0).logical_and_(g < num_groups);
      flat = flat + g * (replicas * size);
    }
    flat = at::where(valid, flat, 0).reshape({-1});
    out.index_add_(0, flat, at::where(valid, m, at::zeros({}, m.options())).reshape({-1}));
  }
  return shaped;
}

// The CPU pass. Poisson: threads own replicas (no shared cells), and each
// replica's slab of `size` cells stays in cache while every row adds to it.
// Groups: threads own rows with private histograms where those are small.
template <typename T>
void CpuReplicaHistogram(const int64_t* ix, const int64_t* key, const T* w, int64_t n, int64_t size, int64_t replicas,
                         bool poisson, uint64_t seed_hash, int64_t block, const int64_t* groups, int64_t num_groups,
                         T* out) {
  auto add_row = [&](T* h, int64_t r, T mult) {
    const int64_t* rix = ix + r * block;
    const T* rw = w != nullptr ? w + r * block : nullptr;
    for (int64_t j = 0; j < block; ++j) {
      const int64_t i = rix[j];
      if (i >= 0 && i < size) h[i] += rw != nullptr ? mult * rw[j] : mult;
    }
  };
  if (poisson) {
    std::vector<uint64_t> hashes(n);
    for (int64_t r = 0; r < n; ++r) hashes[r] = Mix(seed_hash ^ static_cast<uint64_t>(key[r]));
    const bool single = block == 1 && w == nullptr;
    const FastDraws draw;
    at::parallel_for(0, replicas, 1, [&](int64_t b0, int64_t b1) {
      for (int64_t b = b0; b < b1; ++b) {
        T* h = out + b * size;
        // The output is uninitialised: each replica's slabs are zeroed by the
        // thread that fills them, while they are in its cache.
        for (int64_t g = 0; g < std::max<int64_t>(num_groups, 1); ++g) std::fill_n(h + g * replicas * size, size, T(0));
        for (int64_t r = 0; r < n; ++r) {
          T* into = h;
          if (groups != nullptr) {
            const int64_t g = groups[r];
            if (g < 0 || g >= num_groups) continue;
            into += g * replicas * size;
          }
          const int64_t m = draw(hashes[r], b);
          if (single) {
            // One cell per row: add even a zero draw (no branch to mispredict).
            const int64_t i = ix[r];
            if (i >= 0 && i < size) into[i] += static_cast<T>(m);
          } else if (m != 0) {
            add_row(into, r, static_cast<T>(m));
          }
        }
      }
    });
    return;
  }
  const int64_t cells = replicas * size;
  const int64_t threads = cells * static_cast<int64_t>(sizeof(T)) <= (int64_t{8} << 20)
                              ? std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), n / 4096))
                              : 1;
  std::vector<std::vector<T>> partial(threads - 1, std::vector<T>(cells));
  const int64_t per = (n + threads - 1) / threads;
  at::parallel_for(0, threads, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      T* h = t == 0 ? out : partial[t - 1].data();
      for (int64_t r = std::min(n, t * per); r < std::min(n, (t + 1) * per); ++r) {
        const int64_t g = key[r];
        if (g >= 0 && g < replicas) add_row(h + g * size, r, T(1));
      }
    }
  });
  for (const auto& p : partial) {
    for (int64_t c = 0; c < cells; ++c) out[c] += p[c];
  }
}

}  // namespace

const std::array<double, kMaxPoissonDraw>& PoissonCdf() {
  static const std::array<double, kMaxPoissonDraw> cdf = [] {
    std::array<double, kMaxPoissonDraw> c{};
    double term = std::exp(-1.0), sum = 0;
    for (int j = 0; j < kMaxPoissonDraw; ++j) {
      sum += term;
      c[j] = sum;
      term /= (j + 1);
    }
    return c;
  }();
  return cdf;
}

uint64_t SeedHash(uint64_t seed) { return Mix(seed * kGolden + kGolden); }

uint64_t KeyHash(uint64_t seed, uint64_t key) { return Mix(SeedHash(seed) ^ key); }

int64_t PoissonDraw(uint64_t seed, uint64_t key, int64_t b) { return DrawFromHash(KeyHash(seed, key), b); }

at::Tensor PoissonWeights(const at::Tensor& key, int64_t seed, int64_t replicas) {
  const auto seed_hash = static_cast<int64_t>(SeedHash(static_cast<uint64_t>(seed)));
  at::Tensor h = MixTensor(at::bitwise_xor(key.to(at::kLong), seed_hash));
  at::Tensor steps = (at::arange(replicas, h.options()) + 1) * static_cast<int64_t>(kGolden);
  at::Tensor z = MixTensor(h.unsqueeze(-1) + steps);
  at::Tensor u = Srl(z, 11).to(at::kDouble) * kTwoToMinus53;
  const auto& cdf = PoissonCdf();
  at::Tensor table = at::tensor(std::vector<double>(cdf.begin(), cdf.end()), u.options());
  return at::bucketize(u, table, /*out_int32=*/false, /*right=*/true);
}

namespace {
void CheckArgs(const at::Tensor& idx, const at::Tensor& key, const std::string& mode, int64_t block,
               const c10::optional<at::Tensor>& groups, int64_t num_groups) {
  TORCH_CHECK(mode == "groups" || mode == "poisson", "replica_histogram: mode must be groups or poisson");
  TORCH_CHECK(block >= 1 && idx.numel() == key.numel() * block, "replica_histogram: idx must hold block per key");
  if (groups.has_value()) {
    TORCH_CHECK(mode == "poisson" && num_groups >= 1 && groups->numel() == key.numel(),
                "replica_histogram: groups needs mode poisson, num_groups >= 1 and one id per key");
  }
}
// Groups is the group ids as contiguous int64, or undefined.
at::Tensor Groups(const c10::optional<at::Tensor>& groups) {
  return groups.has_value() ? groups->to(at::kLong).reshape({-1}).contiguous() : at::Tensor();
}
at::ScalarType OutType(const c10::optional<at::Tensor>& weights) {
  return weights.has_value() && at::isFloatingType(weights->scalar_type()) ? at::kDouble : at::kLong;
}
// LargeEmpty is at::empty, but a buffer of many megabytes (a bootstrap's
// [B * size] partial, allocated anew by every update) is backed by huge pages
// where the kernel grants them (transparent huge pages in madvise mode): one
// fault per 2 MB instead of one per 4 KB.
at::Tensor LargeEmpty(const std::vector<int64_t>& shape, const at::TensorOptions& options) {
  constexpr size_t kHuge = size_t{2} << 20;
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  const size_t bytes = static_cast<size_t>(numel) * options.dtype().itemsize();
  if (bytes < 4 * kHuge) return at::empty(shape, options);
  void* p = nullptr;
  const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
  if (posix_memalign(&p, kHuge, rounded) != 0) return at::empty(shape, options);
  madvise(p, rounded, MADV_HUGEPAGE);  // advice only: a refusal keeps small pages
  return at::from_blob(
      p, shape, [](void* q) { std::free(q); }, options);
}

}  // namespace

at::Tensor ReplicaHistogramAten(const at::Tensor& idx, const at::Tensor& key, const c10::optional<at::Tensor>& weights,
                                int64_t size, int64_t replicas, const std::string& mode, int64_t seed, int64_t block,
                                const c10::optional<at::Tensor>& groups, int64_t num_groups) {
  CheckArgs(idx, key, mode, block, groups, num_groups);
  return AtenReplicaHistogram(idx, key, weights, size, replicas, mode == "poisson", seed, block, OutType(weights),
                              Groups(groups), groups.has_value() ? num_groups : 0);
}

at::Tensor ReplicaHistogram(const at::Tensor& idx, const at::Tensor& key, const c10::optional<at::Tensor>& weights,
                            int64_t size, int64_t replicas, const std::string& mode, int64_t seed, int64_t block,
                            const c10::optional<at::Tensor>& groups, int64_t num_groups) {
  if (!idx.is_cpu()) {
    return ReplicaHistogramAten(idx, key, weights, size, replicas, mode, seed, block, groups, num_groups);
  }
  CheckArgs(idx, key, mode, block, groups, num_groups);
  const at::Tensor g = Groups(groups);
  const int64_t* gp = g.defined() ? g.data_ptr<int64_t>() : nullptr;
  if (!g.defined()) num_groups = 0;
  const at::ScalarType out_type = OutType(weights);
  const bool floating = out_type == at::kDouble;
  const bool poisson = mode == "poisson";
  at::Tensor ix = idx.to(at::kLong).contiguous();
  at::Tensor k = key.to(at::kLong).contiguous();
  at::Tensor w = weights.has_value() ? weights->to(out_type).contiguous() : at::Tensor();
  // A Poisson pass zeroes each slab itself (CpuReplicaHistogram).
  const std::vector<int64_t> shape = OutShape(replicas, size, num_groups);
  at::Tensor out =
      poisson ? LargeEmpty(shape, idx.options().dtype(out_type)) : at::zeros(shape, idx.options().dtype(out_type));
  const uint64_t seed_hash = SeedHash(static_cast<uint64_t>(seed));
  if (floating) {
    CpuReplicaHistogram<double>(ix.data_ptr<int64_t>(), k.data_ptr<int64_t>(), w.data_ptr<double>(), k.numel(), size,
                                replicas, poisson, seed_hash, block, gp, num_groups, out.data_ptr<double>());
  } else {
    CpuReplicaHistogram<int64_t>(ix.data_ptr<int64_t>(), k.data_ptr<int64_t>(),
                                 w.defined() ? w.data_ptr<int64_t>() : nullptr, k.numel(), size, replicas, poisson,
                                 seed_hash, block, gp, num_groups, out.data_ptr<int64_t>());
  }
  return out;
}

}  // namespace tally::ops::fused
