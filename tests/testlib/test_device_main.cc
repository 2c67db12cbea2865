// main() of the device-aware suites: gtest's flags, then `--device DEV` (or
// --device=DEV), the device of tests/testlib/test_device.h. Anything else is
// refused, so that a misspelt flag never runs the suite on cpu unnoticed.
#include <iostream>
#include <string>

#include "gtest/gtest.h"
#include "tests/testlib/test_device.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);  // removes gtest's own flags
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string value;
    if (arg == "--device" && i + 1 < argc) {
      value = argv[++i];
    } else if (arg.rfind("--device=", 0) == 0) {
      value = arg.substr(9);
    } else {
      std::cerr << argv[0] << ": unknown argument '" << arg << "' (gtest's flags, or --device DEV)\n";
      return 2;
    }
    absl::Status st = tally::testing::SetTestDevice(value);
    if (!st.ok()) {
      std::cerr << argv[0] << ": " << st.message() << "\n";
      return 2;
    }
  }
  std::cout << "test device: " << tally::testing::TestDevice().name << "\n";
  return RUN_ALL_TESTS();
}
