#include "ops/fused/trace_sqrt.h"

#include <ATen/ATen.h>

#include <cmath>
#include <string>

namespace tally::ops::fused {

at::Tensor TraceSqrt(const at::Tensor& m) {
  if (m.is_meta()) return at::empty({}, m.options().dtype(at::kDouble));
  const at::Tensor d = m.to(at::kDouble);
  // LAPACK refuses a non-finite entry (a state of fewer than two rows, NaN
  // features): NaN instead. The check reads the device at compute only.
  if (!at::isfinite(d).all().item<bool>()) return at::full({}, NAN, d.options());
  return at::real(at::sqrt(at::linalg_eigvals(d))).sum();
}

const char* TraceSqrtScript() {
  static const std::string* source = new std::string(R"TS(
def trace_sqrt(m: Tensor) -> Tensor:
    if m.is_meta:
        return torch.empty([], dtype=7, device=m.device)
    d = m.to(7)
    if not bool(torch.isfinite(d).all()):
        return torch.full([], float("nan"), dtype=7, device=m.device)
    return torch.real(torch.sqrt(torch.linalg_eigvals(d))).sum()
)TS");
  return source->c_str();
}

}  // namespace tally::ops::fused
