// The device that the device-aware suites (golden_test,
// device_scenarios_test) place their programs on: `--device DEV` on the test
// binary's command line (test_device_main.cc), else $TALLY_TEST_DEVICE, else
// cpu. scripts/gpu-check runs them with --device cuda:0; Bazel runs them on
// cpu, where they check the same things against the same references.
#ifndef TALLY_TESTS_TESTLIB_TEST_DEVICE_H_
#define TALLY_TESTS_TESTLIB_TEST_DEVICE_H_

#include <string>

#include "absl/status/status.h"
#include "engine/ir/types.h"

namespace tally::testing {

// TestDevice is the chosen device (parsed once; an unparsable choice was
// refused by SetTestDevice or at the first call, which then aborts the run
// with the reason on stderr: a typo must never fall back to cpu).
const ir::Device& TestDevice();

// SetTestDevice makes `name` (cpu, meta, cuda:N, ...) the test device.
absl::Status SetTestDevice(const std::string& name);

// OnAccelerator: the test device is neither cpu nor meta.
bool OnAccelerator();

}  // namespace tally::testing

#endif  // TALLY_TESTS_TESTLIB_TEST_DEVICE_H_
