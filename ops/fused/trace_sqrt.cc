#include "ops/fused/trace_sqrt.h"

#include <ATen/ATen.h>

#include <string>

namespace tally::ops::fused {

at::Tensor TraceSqrt(const at::Tensor& m) {
  if (m.is_meta()) return at::empty({}, m.options().dtype(at::kDouble));
  return at::real(at::sqrt(at::linalg_eigvals(m.to(at::kDouble)))).sum();
}

const char* TraceSqrtScript() {
  static const std::string* source = new std::string(R"TS(
def trace_sqrt(m: Tensor) -> Tensor:
    if m.is_meta:
        return torch.empty([], dtype=7, device=m.device)
    return torch.real(torch.sqrt(torch.linalg_eigvals(m.to(7)))).sum()
)TS");
  return source->c_str();
}

}  // namespace tally::ops::fused
