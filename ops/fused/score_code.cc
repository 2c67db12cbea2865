#include "ops/fused/score_code.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <cstdint>
#include <cstring>

namespace tally::ops::fused {
namespace {

template <typename Narrow>
inline int64_t Code(float v) {
  if (std::isnan(v)) return 0xFFFF;
  if (v == 0.0f) v = 0.0f;  // -0 as +0
  const Narrow h(v);        // round to nearest even, as the tensor conversion does
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof(bits));
  return (bits & 0x8000) ? 0xFFFF - bits : bits + 0x8000;
}

template <typename Narrow>
void Codes(const float* x, int64_t* out, int64_t n) {
  at::parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = Code<Narrow>(x[i]);
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

namespace {

template <typename Narrow>
void Count(const float* p, const int64_t* y, int64_t n, int64_t classes, int64_t inner, int64_t* out) {
  constexpr int64_t kCodes = 65536;
  const int64_t size = classes * 2 * kCodes;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t t = y[i];
    if (t < 0) continue;  // dropped
    const int64_t cls = classes > 1 ? (i / inner) % classes : 0;
    // As the decomposition's histogram: an index past the counts is dropped
    // (labels are 0 or 1 where the curves make them).
    const int64_t at = (t + cls * 2) * kCodes + Code<Narrow>(p[i]);
    if (at < size) ++out[at];
  }
}

}  // namespace

at::Tensor Code16CountsCpu(const at::Tensor& probs_in, const at::Tensor& label_in, c10::string_view format,
                           int64_t classes) {
  TORCH_CHECK(at::isFloatingType(probs_in.scalar_type()), "code16_counts: probs must be floats");
  TORCH_CHECK(label_in.scalar_type() == at::kLong && label_in.sizes() == probs_in.sizes(),
              "code16_counts: label must be int64 of the probs' shape");
  TORCH_CHECK(format == "fp16" || format == "bf16", "code16_counts: format must be fp16 or bf16");
  TORCH_CHECK(classes == 1 || (probs_in.dim() >= 2 && probs_in.size(1) == classes),
              "code16_counts: classes must be 1 or dim 1");
  at::Tensor probs = probs_in.to(at::kFloat).contiguous();
  at::Tensor label = label_in.contiguous();
  int64_t inner = 1;
  for (int64_t d = 2; d < probs.dim(); ++d) inner *= probs.size(d);
  at::Tensor out = at::zeros({classes, 2, 65536}, label.options());
  // One pass: the counts are 1 MiB a class, so a thread of its own buys
  // little against the conversion and the scattered increments.
  if (format == "bf16") {
    Count<c10::BFloat16>(probs.data_ptr<float>(), label.data_ptr<int64_t>(), probs.numel(), classes, inner,
                         out.data_ptr<int64_t>());
  } else {
    Count<c10::Half>(probs.data_ptr<float>(), label.data_ptr<int64_t>(), probs.numel(), classes, inner,
                     out.data_ptr<int64_t>());
  }
  return out;
}

at::Tensor Code16CountsMeta(const at::Tensor&, const at::Tensor& label, c10::string_view, int64_t classes) {
  return at::empty({classes, 2, 65536}, label.options());
}

at::Tensor ScoreCode16Meta(const at::Tensor& x, c10::string_view) {
  return at::empty(x.sizes(), x.options().dtype(at::kLong));
}

}  // namespace tally::ops::fused
