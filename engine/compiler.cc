#include "engine/compiler.h"

#include "engine/state_budget.h"
#include "engine/status_macros.h"
#include "passes/canonicalize.h"
#include "passes/cse.h"
#include "passes/eliminate_dead_states.h"
#include "passes/insert_transfers.h"
#include "passes/narrow_states.h"
#include "passes/place.h"
#include "passes/remove_host_syncs.h"

namespace tally {

std::unique_ptr<passes::PassPipeline> DefaultPipeline(const CompileOptions& options) {
  const ir::Device& device = options.device;
  auto p = std::make_unique<passes::PassPipeline>("default");
  p->AddPass<passes::Canonicalize>();
  p->AddPass<passes::Cse>();
  p->AddPass<passes::EliminateDeadStates>();
  p->AddPass<passes::NarrowStates>();
  p->AddPass<passes::RemoveHostSyncs>();
  p->AddPass<passes::Place>(device);
  p->AddPass<passes::Fuse>(device, options.fuse_policy);
  if (options.transfer_inputs) p->AddPass<passes::InsertTransfers>(device);
  p->AddPass<passes::ProveSingleDevicePass>(device);
  return p;
}

namespace {
// RunPipeline runs `p` and collects what inspect shows.
absl::Status RunPipeline(passes::PassPipeline& p, Compiled& c, const CompileOptions& options) {
  TALLY_RETURN_IF_ERROR(p.Run(*c.module).status());
  c.log = p.records();
  TALLY_ASSIGN_OR_RETURN(c.proof, passes::ProveSingleDevice(*c.module, options.device));
  for (const auto& pass : p.passes()) {
    if (auto* f = dynamic_cast<const passes::Fuse*>(pass.get())) c.fusion_groups = f->groups();
  }
  return absl::OkStatus();
}
}  // namespace

absl::StatusOr<Compiled> Recompile(const ir::Module& m, const CompileOptions& options) {
  Compiled c;
  c.module = m.Clone();
  c.linked = m.Clone();
  passes::PassPipeline p("placement");
  p.AddPass<passes::Place>(options.device);
  p.AddPass<passes::Fuse>(options.device, options.fuse_policy);
  if (options.transfer_inputs) p.AddPass<passes::InsertTransfers>(options.device);
  p.AddPass<passes::ProveSingleDevicePass>(options.device);
  TALLY_RETURN_IF_ERROR(RunPipeline(p, c, options));
  return c;
}

absl::StatusOr<std::unique_ptr<Program>> MoveProgram(const Program& p, const ir::Device& device) {
  CompileOptions co;
  co.device = device;
  co.checked = p.options().checked;
  co.transfer_inputs = p.options().transfer_inputs;
  co.backend = p.options().backend;
  TALLY_ASSIGN_OR_RETURN(Compiled c, Recompile(p.module(), co));
  ProgramOptions po = p.options();
  po.device = device;
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Program> moved, Program::Create(std::move(c.module), po));
  TALLY_ASSIGN_OR_RETURN(std::string bytes, p.SaveState());
  TALLY_RETURN_IF_ERROR(moved->LoadState(bytes));
  moved->set_recompiler(&MoveProgram);
  return moved;
}

absl::StatusOr<Compiled> CompileModule(const std::vector<CollectionEntry>& entries,
                                       const CompileOptions& options) {
  Compiled c;
  TALLY_ASSIGN_OR_RETURN(c.module, LinkCollection(entries));
  c.linked = c.module->Clone();
  auto pipeline = DefaultPipeline(options);
  pipeline->set_dump_after(options.dump_after);
  TALLY_RETURN_IF_ERROR(RunPipeline(*pipeline, c, options));
  return c;
}

absl::StatusOr<std::unique_ptr<Program>> Compile(const std::vector<CollectionEntry>& entries,
                                                 const CompileOptions& options) {
  TALLY_ASSIGN_OR_RETURN(Compiled c, CompileModule(entries, options));
  TALLY_RETURN_IF_ERROR(CheckStateBudget(*c.module, entries, options.max_state_bytes));
  ProgramOptions po;
  po.max_bytes = options.max_state_bytes;
  po.size_args = SizeArgsOf(entries);
  po.device = options.device;
  po.checked = options.checked;
  po.transfer_inputs = options.transfer_inputs;
  po.backend = options.backend;
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Program> program, Program::Create(std::move(c.module), po));
  program->set_recompiler(&MoveProgram);
  return program;
}

}  // namespace tally
