// Pass: the interface every compiler pass implements.
//
// A pass has a stable kebab-case name (used in flags, dumps and errors) and
// runs over a module, returning whether it changed it. Options are
// constructor arguments.
#ifndef TALLY_PASSES_PASS_H_
#define TALLY_PASSES_PASS_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/ir/module.h"
#include "passes/compile_report.h"

namespace tally::passes {

// Pass transforms a module in place.
class Pass {
 public:
  virtual ~Pass() = default;
  // name is the pass's stable id, e.g. "cse".
  virtual absl::string_view name() const = 0;
  // Run returns true when it changed the module.
  virtual absl::StatusOr<bool> Run(ir::Module& m) = 0;
  // counters are per-run statistics shown by `inspect` (e.g. nodes_merged).
  const std::map<std::string, int64_t>& counters() const { return counters_; }
  // Report writes what the last Run produced besides the module (a proof,
  // fusion groups) into `report`; the pipeline calls it after each run.
  virtual void Report(CompileReport& report) const {}

 protected:
  std::map<std::string, int64_t> counters_;
};

}  // namespace tally::passes

#endif  // TALLY_PASSES_PASS_H_
