#include "ops/fused/score_code.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tally::ops::fused {
namespace {

template <typename Narrow>
void Codes(const float* x, int64_t* out, int64_t n) {
  at::parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      float v = x[i];
      if (std::isnan(v)) {
        out[i] = 0xFFFF;
        continue;
      }
      if (v == 0.0f) v = 0.0f;  // -0 as +0
      const Narrow h(v);        // round to nearest even, as the tensor conversion does
      uint16_t bits;
      std::memcpy(&bits, &h, sizeof(bits));
      out[i] = (bits & 0x8000) ? 0xFFFF - bits : bits + 0x8000;
    }
  });
}

}  // namespace

at::Tensor ScoreCode16Cpu(const at::Tensor& x_in, c10::string_view format) {
  TORCH_CHECK(at::isFloatingType(x_in.scalar_type()), "score_code16: expects floats");
  TORCH_CHECK(format == "fp16" || format == "bf16", "score_code16: format must be fp16 or bf16");
  // Values that are not float32 round through float32 first: exact for
  // float16/bfloat16 inputs; float64 values are probabilities of 16-bit models.
  at::Tensor x = x_in.to(at::kFloat).contiguous();
  at::Tensor out = at::empty(x.sizes(), x.options().dtype(at::kLong));
  if (format == "bf16") {
    Codes<c10::BFloat16>(x.data_ptr<float>(), out.data_ptr<int64_t>(), x.numel());
  } else {
    Codes<c10::Half>(x.data_ptr<float>(), out.data_ptr<int64_t>(), x.numel());
  }
  return out;
}

at::Tensor ScoreCode16Meta(const at::Tensor& x, c10::string_view) {
  return at::empty(x.sizes(), x.options().dtype(at::kLong));
}

}  // namespace tally::ops::fused
