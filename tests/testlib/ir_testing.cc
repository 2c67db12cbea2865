#include "tests/testlib/ir_testing.h"

#include <functional>
#include <string>

#include "engine/ir/printer.h"
#include "gtest/gtest.h"

namespace tally::testing {

size_t IrHash(const ir::Module& m) { return std::hash<std::string>()(ir::PrintModule(m)); }

absl::StatusOr<bool> RunPassForTest(passes::Pass& pass, ir::Module& m) {
  const std::string before = ir::PrintModule(m);
  const size_t hash_before = std::hash<std::string>()(before);
  absl::StatusOr<bool> changed = pass.Run(m);
  if (!changed.ok()) return changed;
  const std::string after = ir::PrintModule(m);
  const bool hash_differs = std::hash<std::string>()(after) != hash_before;
  if (*changed != hash_differs) {
    ADD_FAILURE() << "pass '" << pass.name() << "' says changed=" << (*changed ? "true" : "false")
                  << " but the printed IR " << (hash_differs ? "differs" : "is the same") << "\n--- before ---\n"
                  << before << "--- after ---\n"
                  << after;
  }
  return changed;
}

}  // namespace tally::testing
