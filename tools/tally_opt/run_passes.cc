#include "tools/tally_opt/run_passes.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/ir/printer.h"
#include "passes/pipeline.h"

namespace tally::tools {

absl::Status RunPassesChecked(std::vector<std::unique_ptr<passes::Pass>> passes, ir::Module& module) {
  if (passes.empty()) return passes::PassPipeline("tally_opt").Run(module).status();
  for (auto& pass : passes) {
    const std::string name(pass->name());
    // One pipeline per pass: the verifier before it and after a change.
    passes::PassPipeline single("tally_opt");
    single.AddPass(std::move(pass));
    const std::string before = ir::PrintModule(module);
    absl::StatusOr<bool> changed = single.Run(module);
    if (!changed.ok()) return changed.status();
    if (!*changed && ir::PrintModule(module) != before) {
      return absl::InternalError(
          absl::StrCat("pass '", name, "' changed the module but answered that it did not (Run returned false)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace tally::tools
