#include "engine/compiler.h"

#include "engine/status_macros.h"
#include "passes/canonicalize.h"
#include "passes/cse.h"
#include "passes/eliminate_dead_states.h"
#include "passes/place.h"
#include "passes/remove_host_syncs.h"

namespace tally {

std::unique_ptr<passes::PassPipeline> DefaultPipeline(const ir::Device& device) {
  auto p = std::make_unique<passes::PassPipeline>("default");
  p->AddPass<passes::Canonicalize>();
  p->AddPass<passes::Cse>();
  p->AddPass<passes::EliminateDeadStates>();
  p->AddPass<passes::RemoveHostSyncs>();
  p->AddPass<passes::Place>(device);
  p->AddPass<passes::ProveSingleDevicePass>(device);
  return p;
}

absl::StatusOr<Compiled> CompileModule(const std::vector<CollectionEntry>& entries,
                                       const CompileOptions& options) {
  Compiled c;
  TALLY_ASSIGN_OR_RETURN(c.module, LinkCollection(entries));
  c.linked = c.module->Clone();
  auto pipeline = DefaultPipeline(options.device);
  pipeline->set_dump_after(options.dump_after);
  TALLY_RETURN_IF_ERROR(pipeline->Run(*c.module).status());
  c.log = pipeline->records();
  TALLY_ASSIGN_OR_RETURN(c.proof, passes::ProveSingleDevice(*c.module, options.device));
  return c;
}

absl::StatusOr<std::unique_ptr<Program>> Compile(const std::vector<CollectionEntry>& entries,
                                                 const CompileOptions& options) {
  TALLY_ASSIGN_OR_RETURN(Compiled c, CompileModule(entries, options));
  ProgramOptions po;
  po.device = options.device;
  po.checked = options.checked;
  return Program::Create(std::move(c.module), po);
}

}  // namespace tally
