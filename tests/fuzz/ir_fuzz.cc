#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "ops/op_verifier.h"
#include "tests/fuzz/fuzz_check.h"
#include "tests/fuzz/targets.h"

namespace tally::fuzz {

// The printer's contract (printer.h) is PrintModule(ParseModule(t)) == t for
// printed text t, so what parses is printed, and that text must parse back
// and print the same. Verification may fail (the parser checks syntax only);
// it must not crash.
void FuzzIr(absl::string_view data) {
  if (absl::StatusOr<std::unique_ptr<ir::Module>> m = ir::ParseModule(data); m.ok()) {
    (void)ops::VerifyModule(**m);
    const std::string printed = ir::PrintModule(**m);
    absl::StatusOr<std::unique_ptr<ir::Module>> again = ir::ParseModule(printed);
    FuzzCheck(again.ok(), absl::StrCat("printed module does not parse: ", again.status().message(), "\n", printed));
    FuzzCheck(ir::PrintModule(**again) == printed, absl::StrCat("printed module prints differently:\n", printed));
  }
  if (absl::StatusOr<std::unique_ptr<ir::Graph>> g = ir::ParseGraph(data); g.ok()) {
    (void)ops::VerifyGraph(**g);
    const std::string printed = ir::PrintGraph(**g);
    absl::StatusOr<std::unique_ptr<ir::Graph>> again = ir::ParseGraph(printed);
    FuzzCheck(again.ok(), absl::StrCat("printed graph does not parse: ", again.status().message(), "\n", printed));
    FuzzCheck(ir::PrintGraph(**again) == printed, absl::StrCat("printed graph prints differently:\n", printed));
  }
}

}  // namespace tally::fuzz
