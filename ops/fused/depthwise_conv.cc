#include "ops/fused/depthwise_conv.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <string>
#include <vector>

namespace tally::ops::fused {
namespace {

// Plane correlates one [h, w] plane with the window, row by row: each tap
// adds w[a][b] times a shifted row (a loop the compiler vectorizes).
template <typename T>
void Plane(const T* x, int64_t h, int64_t w, const T* k, int64_t kh, int64_t kw, int64_t s, T* out, int64_t oh,
           int64_t ow, std::vector<T>& row) {
  for (int64_t i = 0; i < oh; ++i) {
    T* o = out + i * ow;
    for (int64_t j = 0; j < ow; ++j) o[j] = T(0);
    for (int64_t a = 0; a < kh; ++a) {
      const T* src = x + (i * s + a) * w;
      for (int64_t b = 0; b < kw; ++b) {
        const T tap = k[a * kw + b];
        if (s == 1) {
          for (int64_t j = 0; j < ow; ++j) o[j] += tap * src[j + b];
        } else {
          for (int64_t j = 0; j < ow; ++j) row[j] = src[j * s + b];
          for (int64_t j = 0; j < ow; ++j) o[j] += tap * row[j];
        }
      }
    }
  }
}

// Reflect is the source index of padded index i of a size-n dim (torch's
// "reflect": -1 reads 1, n reads n - 2).
int64_t Reflect(int64_t i, int64_t n) { return i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i); }

template <typename T>
void Planes(const at::Tensor& x, const at::Tensor& k, int64_t s, int64_t ph, int64_t pw, at::Tensor& out) {
  const int64_t planes = x.size(0) * x.size(1), h = x.size(2), w = x.size(3);
  const int64_t hp = h + 2 * ph, wp = w + 2 * pw;
  const int64_t kh = k.size(0), kw = k.size(1), oh = out.size(2), ow = out.size(3);
  const T* xp = x.data_ptr<T>();
  const T* kp = k.data_ptr<T>();
  T* op = out.data_ptr<T>();
  const bool padded = ph > 0 || pw > 0;
  at::parallel_for(0, planes, 1, [&](int64_t begin, int64_t end) {
    std::vector<T> row(ow);
    std::vector<T> pad(padded ? hp * wp : 0);
    for (int64_t p = begin; p < end; ++p) {
      const T* src = xp + p * h * w;
      if (padded) {
        for (int64_t i = 0; i < hp; ++i) {
          const T* from = src + Reflect(i - ph, h) * w;
          for (int64_t j = 0; j < wp; ++j) pad[i * wp + j] = from[Reflect(j - pw, w)];
        }
        src = pad.data();
      }
      Plane(src, hp, wp, kp, kh, kw, s, op + p * oh * ow, oh, ow, row);
    }
  });
}

}  // namespace

at::Tensor DepthwiseConv2d(const at::Tensor& x, const at::Tensor& w, int64_t stride, int64_t pad_h, int64_t pad_w) {
  const int64_t oh = (x.size(2) + 2 * pad_h - w.size(0)) / stride + 1;
  const int64_t ow = (x.size(3) + 2 * pad_w - w.size(1)) / stride + 1;
  if (x.is_meta()) return at::empty({x.size(0), x.size(1), oh, ow}, x.options());
  const at::ScalarType s = x.scalar_type();
  if (x.is_cpu() && (s == at::kDouble || s == at::kFloat)) {
    at::Tensor out = at::empty({x.size(0), x.size(1), oh, ow}, x.options());
    if (out.numel() == 0) return out;
    const at::Tensor xc = x.contiguous(), wc = w.to(s).contiguous();
    if (s == at::kDouble) {
      Planes<double>(xc, wc, stride, pad_h, pad_w, out);
    } else {
      Planes<float>(xc, wc, stride, pad_h, pad_w, out);
    }
    return out;
  }
  const int64_t c = x.size(1);
  if (x.numel() == 0 || oh * ow == 0) return at::zeros({x.size(0), c, oh, ow}, x.options());
  const at::Tensor padded = pad_h > 0 || pad_w > 0 ? at::reflection_pad2d(x, {pad_w, pad_w, pad_h, pad_h}) : x;
  const at::Tensor window = w.to(s).expand({c, 1, w.size(0), w.size(1)});
  return at::conv2d(padded, window, /*bias=*/c10::nullopt, at::IntArrayRef{stride, stride}, at::IntArrayRef{0, 0},
                    at::IntArrayRef{1, 1}, c);
}

const char* DepthwiseConv2dScript() {
  static const std::string* source = new std::string(R"TS(
def depthwise_conv2d(x: Tensor, w: Tensor, stride: int, pad_h: int, pad_w: int) -> Tensor:
    n = x.size(0)
    c = x.size(1)
    kh = w.size(0)
    kw = w.size(1)
    oh = (x.size(2) + 2 * pad_h - kh) // stride + 1
    ow = (x.size(3) + 2 * pad_w - kw) // stride + 1
    if x.is_meta:
        return torch.empty([n, c, oh, ow], dtype=x.dtype, device=x.device)
    if x.numel() == 0 or oh * ow == 0:
        return torch.zeros([n, c, oh, ow], dtype=x.dtype, device=x.device)
    k = w.to(x.dtype)
    if pad_h > 0 or pad_w > 0:
        x = torch.reflection_pad2d(x, [pad_w, pad_w, pad_h, pad_h])
    if not x.is_cpu or (x.dtype != 6 and x.dtype != 7):
        return torch.conv2d(x, k.expand([c, 1, kh, kw]), None, [stride, stride], [0, 0], [1, 1], c)
    out = torch.zeros([n, c, oh, ow], dtype=x.dtype, device=x.device)
    for a in range(kh):
        for b in range(kw):
            rows = x.narrow(2, a, (oh - 1) * stride + 1).narrow(3, b, (ow - 1) * stride + 1)
            out = out + k[a, b] * rows[:, :, ::stride, ::stride]
    return out
)TS");
  return source->c_str();
}

}  // namespace tally::ops::fused
