#include "api/export.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/inspect.h"
#include "engine/exec/torchscript/module_export.h"
#include "engine/runtime/compiler.h"
#include "support/status_macros.h"

namespace tally {

absl::StatusOr<std::string> Export(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                   const ExportOptions& options) {
  if (specs.empty()) return absl::InvalidArgumentError("no --metric given");
  if (options.out.empty()) return absl::InvalidArgumentError("--out FILE.pt is required");
  TALLY_ASSIGN_OR_RETURN(std::vector<dsl::CollectionEntry> entries, BuildEntriesFor(specs, inputs, options.device));
  CompileOptions co;
  co.device = options.device;
  co.fuse_policy = passes::FusePolicy::kReference;
  TALLY_ASSIGN_OR_RETURN(Compiled c, CompileModule(entries, co));
  TALLY_RETURN_IF_ERROR(exec::torchscript::ExportModule(*c.module, options.device, options.out));
  std::vector<std::string> params, labels;
  for (ir::Value* p : c.module->update->params()) params.push_back(absl::StrCat(p->name(), ": ", p->type().ToString()));
  for (const auto& [label, v] : c.module->finalize->returns()) labels.push_back(label);
  return absl::StrCat("wrote ", options.out, "\n  update(", absl::StrJoin(params, ", "), ")\n  compute() -> {",
                      absl::StrJoin(labels, ", "), "}\n  reset(), merge_state(other)\n  ", c.module->states.size(),
                      " state buffers on ", options.device.name, "\n");
}

}  // namespace tally
