#include "tests/testlib/test_device.h"

#include <cstdlib>
#include <iostream>
#include <optional>

#include "absl/strings/str_cat.h"

namespace tally::testing {
namespace {

std::optional<ir::Device>& Chosen() {
  static std::optional<ir::Device> device;
  return device;
}

}  // namespace

absl::Status SetTestDevice(const std::string& name) {
  auto d = ir::ParseDevice(name);
  if (!d.ok()) return absl::InvalidArgumentError(absl::StrCat("--device ", name, ": ", d.status().message()));
  Chosen() = *d;
  return absl::OkStatus();
}

const ir::Device& TestDevice() {
  if (!Chosen()) {
    const char* env = std::getenv("TALLY_TEST_DEVICE");
    absl::Status st = SetTestDevice(env != nullptr && *env != '\0' ? env : "cpu");
    if (!st.ok()) {
      std::cerr << "TALLY_TEST_DEVICE: " << st.message() << "\n";
      std::abort();
    }
  }
  return *Chosen();
}

bool OnAccelerator() { return TestDevice().name != "cpu" && TestDevice().name != "meta"; }

}  // namespace tally::testing
