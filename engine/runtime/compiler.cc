#include "engine/runtime/compiler.h"

#include "absl/strings/str_cat.h"
#include "engine/runtime/state_budget.h"
#include "ops/op_registry.h"
#include "passes/registry.h"
#include "support/status_macros.h"

namespace tally {

passes::PassOptions PassOptionsOf(const CompileOptions& options) {
  passes::PassOptions po;
  po.device = options.device;
  po.fuse_policy = options.fuse_policy;
  po.transfer_inputs = options.transfer_inputs;
  return po;
}

namespace {
// RunPipeline runs `p` and collects what inspect shows.
absl::Status RunPipeline(passes::PassPipeline& p, Compiled& c) {
  TALLY_RETURN_IF_ERROR(p.Run(*c.module).status());
  const passes::CompileReport& report = p.report();
  if (!report.proof.has_value()) {
    return absl::InternalError(absl::StrCat("pipeline '", p.name(), "' ran no prove-single-device"));
  }
  c.log = report.log;
  c.proof = *report.proof;
  c.fusion_groups = report.fusion_groups;
  return absl::OkStatus();
}
}  // namespace

absl::StatusOr<Compiled> Recompile(const ir::Module& m, const CompileOptions& options) {
  Compiled c;
  c.module = m.Clone();
  c.linked = m.Clone();
  std::unique_ptr<passes::PassPipeline> p = passes::PlacementPipeline(PassOptionsOf(options));
  TALLY_RETURN_IF_ERROR(RunPipeline(*p, c));
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

absl::StatusOr<Compiled> CompileModule(const std::vector<dsl::CollectionEntry>& entries,
                                       const CompileOptions& options) {
  // The op table against op_list.h, once: an op a family file forgot fails
  // every compile with its name instead of one program at run time.
  static const absl::Status* const op_table = new absl::Status(ops::CheckOpTable());
  TALLY_RETURN_IF_ERROR(*op_table);
  Compiled c;
  TALLY_ASSIGN_OR_RETURN(c.module, dsl::LinkCollection(entries));
  c.linked = c.module->Clone();
  auto pipeline = passes::DefaultPipeline(PassOptionsOf(options));
  pipeline->set_dump_after(options.dump_after);
  TALLY_RETURN_IF_ERROR(RunPipeline(*pipeline, c));
  return c;
}

absl::StatusOr<std::unique_ptr<Program>> Compile(const std::vector<dsl::CollectionEntry>& entries,
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
