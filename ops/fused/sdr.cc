#include "ops/fused/sdr.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

// On CPU Levinson's recursion solves each signal's system in O(L^2)
// (Coherence); elsewhere, and in the TorchScript form, a batched solve.
namespace tally::ops::fused {
namespace {

// Unit scales x [..., time] to unit norm (at least 1e-6), in float64.
at::Tensor Unit(const at::Tensor& x, bool zero_mean) {
  at::Tensor y = x.to(at::kDouble);
  if (zero_mean) y = y - y.mean({-1}, /*keepdim=*/true);
  return y / at::clamp_min(at::linalg_vector_norm(y, 2, {-1}, /*keepdim=*/true), 1e-6);
}

// Coherence is b . x for the symmetric Toeplitz system R x = b, R[i][j] =
// r[|i - j|] (n unknowns), by Levinson's recursion (Golub & Van Loan,
// Algorithm 4.7.3): O(n^2) where a factorization takes O(n^3). R is an
// autocorrelation, positive definite unless singular; a singular one
// (a silent target without load_diag) gives NaN or infinity.
double Coherence(const double* r, const double* b, int64_t n, std::vector<double>& x, std::vector<double>& y) {
  // The recursion runs on R / r[0] (a unit diagonal); b . x is the same.
  const double scale = r[0];
  const auto rr = [&](int64_t k) { return r[k] / scale; };
  x.assign(n, 0.0);
  y.assign(n, 0.0);
  x[0] = b[0] / scale;
  double alpha = n > 1 ? -rr(1) : 0.0, beta = 1.0;
  y[0] = alpha;
  for (int64_t k = 1; k < n; ++k) {
    beta *= 1.0 - alpha * alpha;
    double dot = 0.0;
    for (int64_t i = 0; i < k; ++i) dot += rr(i + 1) * x[k - 1 - i];
    const double mu = (b[k] / scale - dot) / beta;
    for (int64_t i = 0; i < k; ++i) x[i] += mu * y[k - 1 - i];
    x[k] = mu;
    if (k + 1 < n) {
      dot = 0.0;
      for (int64_t i = 0; i < k; ++i) dot += rr(i + 1) * y[k - 1 - i];
      alpha = -(rr(k + 1) + dot) / beta;
      // y <- y + alpha * reversed(y), in place from both ends.
      for (int64_t i = 0, j = k - 1; i <= j; ++i, --j) {
        const double yi = y[i], yj = y[j];
        y[i] = yi + alpha * yj;
        if (i != j) y[j] = yj + alpha * yi;
      }
      y[k] = alpha;
    }
  }
  double coh = 0.0;
  for (int64_t i = 0; i < n; ++i) coh += b[i] * x[i];
  return coh;
}

}  // namespace

at::Tensor Sdr(const at::Tensor& preds, const at::Tensor& target, int64_t filter_length, bool zero_mean,
               double load_diag) {
  std::vector<int64_t> signals(preds.sizes().begin(), preds.sizes().end() - 1);
  if (preds.is_meta() || target.is_meta() || preds.numel() == 0) {
    return at::empty(signals, preds.options().dtype(at::kDouble));
  }
  const at::Tensor p = Unit(preds, zero_mean);
  const at::Tensor t = Unit(target, zero_mean);
  const int64_t time = p.size(-1);
  // Correlations without wrap-around: an FFT of at least 2 time - 1 points.
  int64_t n_fft = 1;
  while (n_fft < 2 * time - 1) n_fft *= 2;
  const int64_t lags = std::min(filter_length, n_fft);
  const at::Tensor tf = at::fft_rfft(t, n_fft, -1);
  at::Tensor r0 = at::fft_irfft(at::real(tf).square() + at::imag(tf).square(), n_fft, -1).narrow(-1, 0, lags);
  const at::Tensor b = at::fft_irfft(tf.conj() * at::fft_rfft(p, n_fft, -1), n_fft, -1).narrow(-1, 0, lags);
  if (load_diag != 0.0) {
    r0 = r0.clone();
    r0.select(-1, 0).add_(load_diag);
  }
  if (r0.is_cpu()) {
    // One Levinson recursion a signal, the signals spread over the threads.
    const at::Tensor r = r0.contiguous().reshape({-1, lags});
    const at::Tensor bb = b.contiguous().reshape({-1, lags});
    at::Tensor coh = at::empty({r.size(0)}, r.options());
    const double* rd = r.data_ptr<double>();
    const double* bd = bb.data_ptr<double>();
    double* cd = coh.data_ptr<double>();
    at::parallel_for(0, r.size(0), 1, [&](int64_t begin, int64_t end) {
      std::vector<double> x, y;
      for (int64_t i = begin; i < end; ++i) cd[i] = Coherence(rd + i * lags, bd + i * lags, lags, x, y);
    });
    coh = coh.reshape(signals);
    return 10.0 * at::log10(coh / (1.0 - coh));
  }
  // Elsewhere a batched solve. The symmetric Toeplitz matrix R[i][j] = r0[|i - j|].
  const at::Tensor k = at::arange(lags, r0.options().dtype(at::kLong));
  const at::Tensor lag = (k.unsqueeze(1) - k.unsqueeze(0)).abs().reshape({-1});
  std::vector<int64_t> square(signals);
  square.push_back(lags);
  square.push_back(lags);
  const at::Tensor r = r0.index_select(-1, lag).reshape(square);
  // solve_ex: no check of `info` on the host (a sync); a singular system
  // (a silent target without load_diag) gives NaN for its signal.
  const auto [sol, info] = at::linalg_solve_ex(r, b.unsqueeze(-1));
  const at::Tensor coh = (b * sol.squeeze(-1)).sum(-1);
  return at::where(info == 0, 10.0 * at::log10(coh / (1.0 - coh)), std::numeric_limits<double>::quiet_NaN());
}

const char* SdrScript() {
  static const std::string* source = new std::string(R"TS(
def _sdr_unit(x: Tensor, zero_mean: bool) -> Tensor:
    y = x.to(7)
    if zero_mean:
        y = y - y.mean([-1], True)
    return y / torch.clamp_min(torch.linalg_vector_norm(y, 2.0, [-1], True), 1e-6)


def sdr(preds: Tensor, target: Tensor, filter_length: int, zero_mean: bool, load_diag: float) -> Tensor:
    signals = preds.size()[:-1]
    if preds.is_meta or target.is_meta or preds.numel() == 0:
        return torch.empty(signals, dtype=7, device=preds.device)
    p = _sdr_unit(preds, zero_mean)
    t = _sdr_unit(target, zero_mean)
    time = p.size(-1)
    n_fft = 1
    while n_fft < 2 * time - 1:
        n_fft *= 2
    lags = min(filter_length, n_fft)
    tf = torch.fft_rfft(t, n_fft, -1)
    r0 = torch.fft_irfft(torch.real(tf).square() + torch.imag(tf).square(), n_fft, -1).narrow(-1, 0, lags)
    b = torch.fft_irfft(tf.conj() * torch.fft_rfft(p, n_fft, -1), n_fft, -1).narrow(-1, 0, lags)
    if load_diag != 0.0:
        r0 = r0.clone()
        r0.select(-1, 0).add_(load_diag)
    k = torch.arange(lags, device=r0.device)
    lag = (k.unsqueeze(1) - k.unsqueeze(0)).abs().reshape([-1])
    square = signals + [lags, lags]
    r = r0.index_select(-1, lag).reshape(square)
    sol, info = torch.linalg_solve_ex(r, b.unsqueeze(-1))
    coh = (b * sol.squeeze(-1)).sum(-1)
    return torch.where(info == 0, 10.0 * torch.log10(coh / (1.0 - coh)), float("nan"))
)TS");
  return source->c_str();
}

}  // namespace tally::ops::fused
