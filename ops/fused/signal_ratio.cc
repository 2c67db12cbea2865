#include "ops/fused/signal_ratio.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "ops/fused/script.h"

// Each signal takes two or three passes (the means, the energy and the
// projection, the noise), the first from memory and the others from the
// cache: a signal of 64,000 float32 samples is 256 KB, a core's cache
// holds preds' and target's.
namespace tally::ops::fused {
namespace {

// Sums2 accumulates f(i) and g(i) over i in [0, n) in float64, eight
// partial sums each for short dependency chains.
template <typename F, typename G>
std::pair<double, double> Sums2(int64_t n, F f, G g) {
  double s[8] = {0, 0, 0, 0, 0, 0, 0, 0}, t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int u = 0; u < 8; ++u) {
      s[u] += f(i + u);
      t[u] += g(i + u);
    }
  }
  for (; i < n; ++i) {
    s[0] += f(i);
    t[0] += g(i);
  }
  const auto total = [](const double* x) { return ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7])); };
  return {total(s), total(t)};
}

// Sums is Sums2 of one function.
template <typename F>
double Sums(int64_t n, F f) {
  return Sums2(n, f, [](int64_t) { return 0.0; }).first;
}

// Ratio is one signal's value in dB (preds p, target t, n samples).
template <typename T>
double Ratio(const T* p, const T* t, int64_t n, bool scale_invariant, bool zero_mean, double eps) {
  const auto pv = [&](int64_t i) { return static_cast<double>(p[i]); };
  const auto tv = [&](int64_t i) { return static_cast<double>(t[i]); };
  double mp = 0.0, mt = 0.0;
  if (zero_mean) {  // an empty signal's mean is NaN, as torch's, and no sample reads it
    const auto [sp, st] = Sums2(n, pv, tv);
    mp = sp / static_cast<double>(n);
    mt = st / static_cast<double>(n);
  }
  const auto pc = [&](int64_t i) { return pv(i) - mp; };
  const auto tc = [&](int64_t i) { return tv(i) - mt; };
  const auto energy_of = [&](int64_t i) { return tc(i) * tc(i); };
  const auto decibels = [&](double num, double den) {
    return std::log((num + eps) / (den + eps)) * (10.0 / std::log(10.0));
  };
  if (!scale_invariant) {
    const auto [energy, noise] = Sums2(n, energy_of, [&](int64_t i) {
      const double e = tc(i) - pc(i);
      return e * e;
    });
    return decibels(energy, noise);
  }
  const auto [energy, projection] = Sums2(n, energy_of, [&](int64_t i) { return pc(i) * tc(i); });
  const double alpha = (projection + eps) / (energy + eps);
  const double noise = Sums(n, [&](int64_t i) {
    const double e = alpha * tc(i) - pc(i);
    return e * e;
  });
  return decibels(alpha * alpha * energy, noise);
}

}  // namespace

at::Tensor SignalRatio(const at::Tensor& preds, const at::Tensor& target, int64_t signal_dims, bool scale_invariant,
                       bool zero_mean, double eps) {
  const int64_t lead = preds.dim() - signal_dims;
  const std::vector<int64_t> signals(preds.sizes().begin(), preds.sizes().begin() + lead);
  const auto opts = preds.options().dtype(at::kDouble);
  if (preds.is_meta() || target.is_meta()) return at::empty(signals, opts);
  if (!preds.is_cpu() || !target.is_cpu()) {
    return RunScript(kSignalRatioScript, "signal_ratio", {preds, target, signal_dims, scale_invariant, zero_mean, eps})
        .toTensor();
  }
  // 16-bit samples are read as float64 (a copy): the loops take float32
  // and float64.
  const bool wide = preds.scalar_type() == at::kFloat || preds.scalar_type() == at::kDouble;
  const at::Tensor p = (wide ? preds : preds.to(at::kDouble)).contiguous();
  const at::Tensor t = (wide ? target : target.to(at::kDouble)).contiguous();
  at::Tensor out = at::empty(signals, opts);
  const int64_t rows = out.numel();
  const int64_t n = rows == 0 ? 0 : p.numel() / rows;
  double* od = out.data_ptr<double>();
  AT_DISPATCH_FLOATING_TYPES(p.scalar_type(), "signal_ratio", [&] {
    const scalar_t* pd = p.data_ptr<scalar_t>();
    const scalar_t* td = t.data_ptr<scalar_t>();
    // A grain of about 64K samples: short signals share a thread.
    const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(n, 1));
    at::parallel_for(0, rows, grain, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        od[r] = Ratio(pd + r * n, td + r * n, n, scale_invariant, zero_mean, eps);
      }
    });
  });
  return out;
}

const char kSignalRatioScript[] = R"TS(
# dtype=7 is float64 (ScalarType codes: the C++ compiler resolves no torch.float64).
def signal_ratio(preds: Tensor, target: Tensor, signal_dims: int, scale_invariant: bool, zero_mean: bool,
                 eps: float) -> Tensor:
    lead = preds.dim() - signal_dims
    shape = preds.shape[:lead]
    if preds.is_meta or target.is_meta:
        return torch.empty(shape, dtype=7, device=preds.device)
    n = 1
    for d in preds.shape[lead:]:
        n = n * d
    rows = 1
    for d in shape:
        rows = rows * d
    p = preds.to(7).reshape([rows, n])
    t = target.to(7).reshape([rows, n])
    if zero_mean:
        p = p - p.sum(1, keepdim=True) / n
        t = t - t.sum(1, keepdim=True) / n
    energy = (t * t).sum(1, keepdim=True)
    if scale_invariant:
        alpha = ((p * t).sum(1, keepdim=True) + eps) / (energy + eps)
        noise = alpha * t - p
        num = (alpha * alpha * energy).squeeze(1)
    else:
        noise = t - p
        num = energy.squeeze(1)
    den = (noise * noise).sum(1)
    return (torch.log((num + eps) / (den + eps)) * (10.0 / 2.302585092994046)).reshape(shape)
)TS";

}  // namespace tally::ops::fused
