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

// Terms is P(k; a, b, n) for k = lo, lo + 1, ..., with lo returned: P at
// the mode from lgamma, its neighbours by the ratios of hypergeometric
// probabilities, P(k+1)/P(k) = (a-k)(b-k) / ((k+1)(n-a-b+k+1)), out to where
// a term underflows to 0 (P is log-concave: every further one is smaller,
// and adding 0 changes no bit).
double Terms(double a, double b, double n, double gab, double lg_n1, std::vector<double>& p) {
  const double start = std::max(1.0, a - n + b);
  const double end = std::min(a, b);
  const double mode = std::min(std::max(std::floor((a + 1.0) * (b + 1.0) / (n + 2.0)), start), end);
  const double at_mode = std::exp(LogP(mode, a, b, n, gab, lg_n1));
  p.clear();
  double lo = mode;
  for (double q = at_mode; lo > start;) {
    q *= lo * (n - a - b + lo) / ((a - lo + 1.0) * (b - lo + 1.0));
    if (!(q > 0.0)) break;
    p.push_back(q);
    lo -= 1.0;
  }
  std::reverse(p.begin(), p.end());
  p.push_back(at_mode);
  for (double k = mode, q = at_mode; k < end; k += 1.0) {
    q *= (a - k) * (b - k) / ((k + 1.0) * (n - a - b + k + 1.0));
    if (!(q > 0.0)) break;
    p.push_back(q);
  }
  return lo;
}

double Emi(const std::vector<double>& a, const std::vector<double>& b) {
  double emi = 0.0;
  if (a.size() <= 1 || b.size() <= 1) return emi;
  double n = 0.0;
  for (double x : a) n += x;
  const double log_n = std::log(n);
  const double lg_n1 = LogGamma(n + 1.0);
  std::vector<double> log_k = {0.0};  // log_k[k] = log(k), grown as needed
  std::vector<double> p;
  for (double ai : a) {
    const double log_a = std::log(ai);
    const double ga = LogGamma(ai + 1.0) + LogGamma(n - ai + 1.0);
    for (double bj : b) {
      const double log_b = std::log(bj);
      const double gab = ga + (LogGamma(bj + 1.0) + LogGamma(n - bj + 1.0));
      const double lo = Terms(ai, bj, n, gab, lg_n1, p);
      while (static_cast<double>(log_k.size()) < lo + static_cast<double>(p.size())) {
        log_k.push_back(std::log(static_cast<double>(log_k.size())));
      }
      // sklearn's order: k ascending.
      for (size_t i = 0; i < p.size(); ++i) {
        const double k = lo + static_cast<double>(i);
        const double term2 = (log_n + log_k[static_cast<size_t>(k)]) - log_a - log_b;
        emi += k / n * term2 * p[i];
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
                at_mode = float(torch.exp(_log_p(mode, ai, bj, n, gab, lg_n1)))
                below: List[float] = []
                lo = mode
                q = at_mode
                while lo > start:
                    q *= lo * (n - ai - bj + lo) / ((ai - lo + 1.0) * (bj - lo + 1.0))
                    if not q > 0.0:
                        break
                    below.append(q)
                    lo -= 1.0
                p: List[float] = []
                for i in range(len(below)):
                    p.append(below[len(below) - 1 - i])
                p.append(at_mode)
                k = mode
                q = at_mode
                while k < end:
                    q *= (ai - k) * (bj - k) / ((k + 1.0) * (n - ai - bj + k + 1.0))
                    if not q > 0.0:
                        break
                    p.append(q)
                    k += 1.0
                for i in range(len(p)):
                    k = lo + float(i)
                    term2 = (log_n + torch.log(k)) - log_a - log_b
                    emi += k / n * term2 * p[i]
    return torch.scalar_tensor(emi, dtype=7, device=rows.device)
)TS";

}  // namespace tally::ops::fused
