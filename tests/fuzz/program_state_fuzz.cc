#include <memory>

#include "tests/fuzz/fuzz_fixtures.h"
#include "tests/fuzz/targets.h"

namespace tally::fuzz {

// Each program's state names differ, so an input matches at most one; both
// are tried. LoadState replaces every state, so reusing the programs keeps
// inputs independent.
void FuzzProgramState(absl::string_view data) {
  for (const std::unique_ptr<Program>& p : StatePrograms()) {
    if (!p->LoadState(data).ok()) continue;
    (void)p->Compute();
  }
}

}  // namespace tally::fuzz
