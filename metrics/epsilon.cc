#include "metrics/epsilon.h"

#include <cmath>
#include <limits>

namespace tally::metrics {

double EpsilonOf(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::kFloat64:
      return std::numeric_limits<double>::epsilon();
    case ir::DType::kFloat16:
      return std::ldexp(1.0, -10);
    case ir::DType::kBFloat16:
      return std::ldexp(1.0, -7);
    default:
      return std::numeric_limits<float>::epsilon();
  }
}

}  // namespace tally::metrics
