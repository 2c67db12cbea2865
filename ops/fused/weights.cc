#include "ops/fused/weights.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <atomic>
#include <cmath>

namespace tally::ops::fused {

at::Tensor BadWeightsCpu(const at::Tensor& weight_in) {
  TORCH_CHECK(at::isFloatingType(weight_in.scalar_type()), "bad_weights: weight must be floats");
  const at::Tensor w = weight_in.contiguous();
  std::atomic<int64_t> bad{0};
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, w.scalar_type(), "bad_weights", [&] {
    const scalar_t* x = w.data_ptr<scalar_t>();
    at::parallel_for(0, w.numel(), 1 << 16, [&](int64_t begin, int64_t end) {
      int64_t n = 0;
      for (int64_t i = begin; i < end; ++i) {
        const double v = static_cast<double>(x[i]);
        n += !(v >= 0.0 && v < INFINITY);  // NaN fails both
      }
      bad += n;
    });
  });
  return at::scalar_tensor(bad.load(), w.options().dtype(at::kLong));
}

at::Tensor BadWeightsMeta(const at::Tensor& weight) { return at::empty({}, weight.options().dtype(at::kLong)); }

}  // namespace tally::ops::fused
