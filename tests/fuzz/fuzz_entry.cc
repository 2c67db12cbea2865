// libFuzzer entry point of one fuzz target: BUILD.bazel compiles this file
// once per target with TALLY_FUZZ_TARGET naming its function in targets.h.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "tests/fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tally::fuzz::TALLY_FUZZ_TARGET(absl::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
