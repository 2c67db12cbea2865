// EpsilonOf is torch.finfo(dtype).eps, the epsilon TorchMetrics adds in the
// dtype of its inputs (the separation metrics, UQI).
#ifndef TALLY_METRICS_EPSILON_H_
#define TALLY_METRICS_EPSILON_H_

#include "engine/ir/types.h"

namespace tally::metrics {

double EpsilonOf(ir::DType dtype);

}  // namespace tally::metrics

#endif  // TALLY_METRICS_EPSILON_H_
