#include "ops/fused/expected_mutual_info.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace tally::ops::fused {
namespace {

std::vector<double> Positive(const at::Tensor& t) {
  at::Tensor c = t.to(at::kCPU, at::kDouble).contiguous();
  const double* p = c.data_ptr<double>();
  std::vector<double> out;
  for (int64_t i = 0; i < c.numel(); ++i) {
    if (p[i] > 0.0) out.push_back(p[i]);
  }
  return out;
}

// Terms is P(k; a, b, n) for k = lo, lo + 1, ..., with lo returned. From
// the mode, each neighbour follows by the ratio of hypergeometric
// probabilities, P(k+1)/P(k) = (a-k)(b-k) / ((k+1)(n-a-b+k+1)), out to where
// a term underflows to 0 (P is log-concave: every further one is smaller);
// dividing by their sum makes them sum to 1, as the whole range does.
// Rounding grows with the steps from the mode, not with n (log-gamma
// differences of numbers near n log n lose ~n eps of each term).
double Terms(double a, double b, double n, std::vector<double>& p) {
  const double start = std::max(0.0, a - n + b);  // k = 0 is in the sum to 1
  const double end = std::min(a, b);
  const double mode = std::min(std::max(std::floor((a + 1.0) * (b + 1.0) / (n + 2.0)), start), end);
  p.clear();
  double lo = mode;
  for (double q = 1.0; lo > start;) {
    q *= lo * (n - a - b + lo) / ((a - lo + 1.0) * (b - lo + 1.0));
    if (!(q > 0.0)) break;
    p.push_back(q);
    lo -= 1.0;
  }
  std::reverse(p.begin(), p.end());
  p.push_back(1.0);
  for (double k = mode, q = 1.0; k < end; k += 1.0) {
    q *= (a - k) * (b - k) / ((k + 1.0) * (n - a - b + k + 1.0));
    if (!(q > 0.0)) break;
    p.push_back(q);
  }
  double sum = 0.0;
  for (double q : p) sum += q;
  for (double& q : p) q /= sum;
  return lo;
}

double Emi(const std::vector<double>& a, const std::vector<double>& b) {
  double emi = 0.0;
  if (a.size() <= 1 || b.size() <= 1) return emi;
  double n = 0.0;
  for (double x : a) n += x;
  std::vector<double> p;
  for (double ai : a) {
    for (double bj : b) {
      const double lo = Terms(ai, bj, n, p);
      // sklearn's order: k ascending, from 1 (k = 0 adds 0).
      for (size_t i = lo == 0.0 ? 1 : 0; i < p.size(); ++i) {
        const double k = lo + static_cast<double>(i);
        // log(n k / (a b)) as log1p of an exact integer difference:
        // scikit-learn's log n + log k - log a - log b cancels to ~1e-15
        // absolute where n k is near a b, which the signed sum amplifies.
        const double term2 = std::log1p((n * k - ai * bj) / (ai * bj));
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
        for ai in a:
            for bj in b:
                start = max(0.0, ai - n + bj)
                end = min(ai, bj)
                mode = min(max(float(torch.floor((ai + 1.0) * (bj + 1.0) / (n + 2.0))), start), end)
                below: List[float] = []
                lo = mode
                q = 1.0
                while lo > start:
                    q *= lo * (n - ai - bj + lo) / ((ai - lo + 1.0) * (bj - lo + 1.0))
                    if not q > 0.0:
                        break
                    below.append(q)
                    lo -= 1.0
                p: List[float] = []
                for i in range(len(below)):
                    p.append(below[len(below) - 1 - i])
                p.append(1.0)
                k = mode
                q = 1.0
                while k < end:
                    q *= (ai - k) * (bj - k) / ((k + 1.0) * (n - ai - bj + k + 1.0))
                    if not q > 0.0:
                        break
                    p.append(q)
                    k += 1.0
                total = 0.0
                for x in p:
                    total += x
                for i in range(len(p)):
                    p[i] = p[i] / total
                for i in range(1 if lo == 0.0 else 0, len(p)):
                    k = lo + float(i)
                    term2 = torch.log1p((n * k - ai * bj) / (ai * bj))
                    emi += k / n * term2 * p[i]
    return torch.scalar_tensor(emi, dtype=7, device=rows.device)
)TS";

}  // namespace tally::ops::fused
