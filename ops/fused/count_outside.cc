#include "ops/fused/count_outside.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <immintrin.h>

#include <atomic>

#include "ops/fused/cpu_features.h"

namespace tally::ops::fused {
namespace {

// OutsideFloatAvx2 counts float32 values outside [low, high), eight at a
// time; the bounds are float32 values, so comparing in float32 is comparing
// in float64.
__attribute__((target("avx2,popcnt"))) int64_t OutsideFloatAvx2(const float* p, int64_t n, float low, float high) {
  const __m256 lo = _mm256_set1_ps(low), hi = _mm256_set1_ps(high);
  int64_t outside = 0, i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(p + i);
    const __m256 in = _mm256_and_ps(_mm256_cmp_ps(v, lo, _CMP_GE_OQ), _mm256_cmp_ps(v, hi, _CMP_LT_OQ));
    outside += 8 - __builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(in)));
  }
  for (; i < n; ++i) outside += !(p[i] >= low && p[i] < high);  // NaN fails both
  return outside;
}

}  // namespace

at::Tensor CountOutsideCpu(const at::Tensor& x_in, double low, double high) {
  TORCH_CHECK(x_in.scalar_type() != at::kBool, "count_outside: x must be numbers");
  const at::Tensor x = x_in.contiguous();
  std::atomic<int64_t> outside{0};
  const auto fl = static_cast<float>(low), fh = static_cast<float>(high);
  if (x.scalar_type() == at::kFloat && fl == low && fh == high && HasAvx2()) {
    const float* p = x.data_ptr<float>();
    at::parallel_for(0, x.numel(), 1 << 16,
                     [&](int64_t begin, int64_t end) { outside += OutsideFloatAvx2(p + begin, end - begin, fl, fh); });
    return at::scalar_tensor(outside.load(), x.options().dtype(at::kLong));
  }
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "count_outside", [&] {
    const scalar_t* p = x.data_ptr<scalar_t>();
    at::parallel_for(0, x.numel(), 1 << 16, [&](int64_t begin, int64_t end) {
      int64_t n = 0;
      for (int64_t i = begin; i < end; ++i) {
        const double v = static_cast<double>(p[i]);
        n += !(v >= low && v < high);  // NaN fails both
      }
      outside += n;
    });
  });
  return at::scalar_tensor(outside.load(), x.options().dtype(at::kLong));
}

at::Tensor CountOutsideMeta(const at::Tensor& x, double, double) { return at::empty({}, x.options().dtype(at::kLong)); }

}  // namespace tally::ops::fused
