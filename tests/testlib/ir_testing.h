// IR helpers for pass and engine tests.
#ifndef TALLY_TESTS_TESTLIB_IR_TESTING_H_
#define TALLY_TESTS_TESTLIB_IR_TESTING_H_

#include <cstddef>
#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/ir/module.h"
#include "passes/pass.h"

namespace tally::testing {

// IrHash hashes the printed form of `m`: equal exactly when the text is.
size_t IrHash(const ir::Module& m);

// RunPassForTest runs `pass` on `m` and checks its "changed" answer against
// the printed IR: the hash of PrintModule(m) must differ exactly when the pass
// says it changed something (a gtest failure otherwise). Returns the pass's
// answer or its error.
absl::StatusOr<bool> RunPassForTest(passes::Pass& pass, ir::Module& m);

}  // namespace tally::testing

#endif  // TALLY_TESTS_TESTLIB_IR_TESTING_H_
