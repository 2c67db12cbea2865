#include "ops/fused/expected_mutual_info.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tally::ops::fused {
namespace {

// LogGamma is lgamma without the global sign it writes (two finalizes may
// run at once); glibc's lgamma returns the same value.
double LogGamma(double x) {
  int sign = 0;
  return ::lgamma_r(x, &sign);
}

std::vector<double> Positive(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU, at::kDouble).contiguous();
  const double* p = c.data_ptr<double>();
  std::vector<double> out;
  for (int64_t i = 0; i < c.numel(); ++i) {
    if (p[i] > 0.0) out.push_back(p[i]);
  }
  return out;
}

// LogP is log P(k; a, b, n) with gab = lgamma(a+1) + lgamma(n-a+1) +
// lgamma(b+1) + lgamma(n-b+1) and lg_n1 = lgamma(n+1).
double LogP(double k, double a, double b, double n, double gab, double lg_n1) {
  return gab - (LogGamma(k + 1.0) + lg_n1) - LogGamma(a - k + 1.0) - LogGamma(b - k + 1.0) -
         LogGamma(n - a - b + k + 1.0);
}

double Emi(const std::vector<double>& a, const std::vector<double>& b) {
  double emi = 0.0;
  if (a.size() <= 1 || b.size() <= 1) return emi;
  double n = 0.0;
  for (double x : a) n += x;
  const double log_n = std::log(n);
  const double lg_n1 = LogGamma(n + 1.0);
  for (double ai : a) {
    const double log_a = std::log(ai);
    const double ga = LogGamma(ai + 1.0) + LogGamma(n - ai + 1.0);
    for (double bj : b) {
      const double log_b = std::log(bj);
      const double gab = ga + (LogGamma(bj + 1.0) + LogGamma(n - bj + 1.0));
      const double start = std::max(1.0, ai - n + bj);
      const double end = std::min(ai, bj);
      const double mode = std::min(std::max(std::floor((ai + 1.0) * (bj + 1.0) / (n + 2.0)), start), end);
      double lo = mode;
      while (lo > start && std::exp(LogP(lo - 1.0, ai, bj, n, gab, lg_n1)) > 0.0) lo -= 1.0;
      double hi = mode;
      while (hi < end && std::exp(LogP(hi + 1.0, ai, bj, n, gab, lg_n1)) > 0.0) hi += 1.0;
      for (double k = lo; k <= hi; k += 1.0) {
        const double term2 = (log_n + std::log(k)) - log_a - log_b;
        emi += k / n * term2 * std::exp(LogP(k, ai, bj, n, gab, lg_n1));
      }
    }
  }
  return emi;
}

}  // namespace

at::Tensor ExpectedMutualInfo(const at::Tensor& rows, const at::Tensor& cols) {
  const auto opts = rows.options().dtype(at::kDouble);
  if (rows.is_meta() || cols.is_meta()) return at::empty({}, opts);
  return at::scalar_tensor(Emi(Positive(rows), Positive(cols)), opts);
}

// Mirrors Emi above expression for expression (TorchScript's float ops are
// the same C library calls).
const char kExpectedMutualInfoScript[] = R"TS(
# dtype=4 is int64 and 7 float64 (ScalarType codes: the C++ compiler resolves no torch.int64).
def _log_p(k: float, a: float, b: float, n: float, gab: float, lg_n1: float) -> float:
    return gab - (torch.lgamma(k + 1.0) + lg_n1) - torch.lgamma(a - k + 1.0) - torch.lgamma(b - k + 1.0) - torch.lgamma(n - a - b + k + 1.0)

def _positive(t: Tensor) -> List[float]:
    values: List[float] = t.to(7).reshape([-1]).tolist()
    out: List[float] = []
    for x in values:
        if x > 0.0:
            out.append(x)
    return out

def expected_mutual_info(rows: Tensor, cols: Tensor) -> Tensor:
    if rows.is_meta or cols.is_meta:
        return torch.empty([], dtype=7, device=rows.device)
    a = _positive(rows)
    b = _positive(cols)
    emi = 0.0
    if len(a) > 1 and len(b) > 1:
        n = 0.0
        for x in a:
            n += x
        log_n = torch.log(n)
        lg_n1 = torch.lgamma(n + 1.0)
        for ai in a:
            log_a = torch.log(ai)
            ga = torch.lgamma(ai + 1.0) + torch.lgamma(n - ai + 1.0)
            for bj in b:
                log_b = torch.log(bj)
                gab = ga + (torch.lgamma(bj + 1.0) + torch.lgamma(n - bj + 1.0))
                start = max(1.0, ai - n + bj)
                end = min(ai, bj)
                mode = min(max(float(torch.floor((ai + 1.0) * (bj + 1.0) / (n + 2.0))), start), end)
                lo = mode
                while lo > start and torch.exp(_log_p(lo - 1.0, ai, bj, n, gab, lg_n1)) > 0.0:
                    lo -= 1.0
                hi = mode
                while hi < end and torch.exp(_log_p(hi + 1.0, ai, bj, n, gab, lg_n1)) > 0.0:
                    hi += 1.0
                k = lo
                while k <= hi:
                    term2 = (log_n + torch.log(k)) - log_a - log_b
                    emi += k / n * term2 * torch.exp(_log_p(k, ai, bj, n, gab, lg_n1))
                    k += 1.0
    return torch.scalar_tensor(emi, dtype=7, device=rows.device)
)TS";

}  // namespace tally::ops::fused
