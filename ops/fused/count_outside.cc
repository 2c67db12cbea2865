#include "ops/fused/count_outside.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <atomic>

namespace tally::ops::fused {

at::Tensor CountOutsideCpu(const at::Tensor& x_in, double low, double high) {
  TORCH_CHECK(x_in.scalar_type() != at::kBool, "count_outside: x must be numbers");
  const at::Tensor x = x_in.contiguous();
  std::atomic<int64_t> outside{0};
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
