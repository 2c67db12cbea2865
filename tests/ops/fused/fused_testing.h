// Helpers shared by the fused-kernel tests: a program's states after
// feeding inputs in batches, with either fuse policy.
#ifndef TALLY_TESTS_OPS_FUSED_FUSED_TESTING_H_
#define TALLY_TESTS_OPS_FUSED_FUSED_TESTING_H_

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "api/tally.h"
#include "engine/runtime/compiler.h"

namespace tally::testing {

// StatesOf compiles `specs` for `inputs` with `policy`, feeds every row in
// batches of `batch`, and returns the program's states; `ir`, if given,
// receives the compiled module's text. Failures are gtest failures (and an
// empty result).
std::vector<at::Tensor> StatesOf(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                 passes::FusePolicy policy, int64_t batch, std::string* ir = nullptr);

}  // namespace tally::testing

#endif  // TALLY_TESTS_OPS_FUSED_FUSED_TESTING_H_
