#include "api/state_files.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/checkpoint_format.h"
#include "engine/compiler.h"
#include "engine/io/regular_file.h"
#include "engine/ir/types.h"
#include "engine/state_file.h"
#include "support/status_macros.h"

namespace tally {
namespace {

std::string LayoutHash(const Program& program) {
  return checkpoint::HexHash(engine::StateLayout(program.module()));
}

// Describe prints inputs as `preds f32[N,3], target i64[N]`.
std::string Describe(const dsl::Signature& sig) {
  std::vector<std::string> parts;
  for (const dsl::InputSpec& in : sig) {
    std::vector<std::string> dims;
    for (size_t d = 0; d < in.shape.size(); ++d) dims.push_back(d == 0 ? "N" : absl::StrCat(in.shape[d]));
    parts.push_back(absl::StrCat(in.name, " ", ir::DTypeName(in.dtype), "[", absl::StrJoin(dims, ","), "]"));
  }
  return absl::StrJoin(parts, ", ");
}

absl::StatusOr<std::string> Save(const Program& program, const std::vector<std::string>& specs,
                                 const dsl::Signature& sig) {
  engine::StateFile file;
  file.signature = sig;
  file.specs = specs;
  file.layout_hash = LayoutHash(program);
  TALLY_ASSIGN_OR_RETURN(file.states, program.SaveComputedState());
  return engine::EncodeStateFile(file);
}

}  // namespace

absl::StatusOr<std::string> SaveState(const PreparedEval& prepared) {
  return Save(*prepared.program, prepared.specs, prepared.signature);
}

absl::StatusOr<std::string> SaveState(const MergedStates& merged) {
  return Save(*merged.program, merged.specs, merged.signature);
}

absl::StatusOr<StateSource> ReadStateSource(const std::string& path) {
  absl::StatusOr<std::string> bytes = io::ReadRegularFile(path);
  if (!bytes.ok()) return absl::Status(bytes.status().code(), absl::StrCat("state file: ", bytes.status().message()));
  return StateSource{path, *std::move(bytes)};
}

absl::StatusOr<MergedStates> MergeStates(const std::vector<StateSource>& sources, const EvalOptions& options) {
  if (sources.empty()) return absl::InvalidArgumentError("no state files to merge");
  MergedStates merged;
  std::unique_ptr<Program> scratch;
  std::string layout;
  for (const StateSource& source : sources) {
    auto bad = [&](absl::string_view what) {
      return absl::InvalidArgumentError(absl::StrCat("state file ", source.name, ": ", what));
    };
    TALLY_ASSIGN_OR_RETURN(engine::StateFile file, engine::DecodeStateFile(source.bytes, source.name));
    if (merged.program == nullptr) {
      // The first source defines the program; every other must match it.
      merged.specs = file.specs;
      merged.signature = file.signature;
      auto entries = BuildEntries(file.specs, file.signature, options.device);
      if (!entries.ok()) return bad(entries.status().message());
      merged.entries = *std::move(entries);
      CompileOptions co;
      co.device = options.device;
      co.checked = options.checked;
      co.backend = options.backend;
      co.max_state_bytes = options.max_state_bytes;
      auto program = Compile(merged.entries, co);
      if (!program.ok()) return bad(program.status().message());
      merged.program = *std::move(program);
      layout = LayoutHash(*merged.program);
      TALLY_ASSIGN_OR_RETURN(scratch, Program::Create(merged.program->module().Clone(), merged.program->options()));
    } else if (file.specs != merged.specs) {
      return bad(absl::StrCat("holds other metrics (", absl::StrJoin(file.specs, ", "), ") than ",
                              sources.front().name, " (", absl::StrJoin(merged.specs, ", "), ")"));
    } else if (!engine::SameInputs(file.signature, merged.signature)) {
      return bad(absl::StrCat("was saved for other inputs (", Describe(file.signature), ") than ",
                              sources.front().name, " (", Describe(merged.signature), ")"));
    }
    if (file.layout_hash != layout) {
      return bad("its states are laid out differently from this build's program (saved by another Tally version?)");
    }
    absl::Status st = scratch->LoadState(file.states);
    if (!st.ok()) return bad(st.message());
    st = merged.program->CheckMerge(*scratch);  // over the budget: ResourceExhausted, kept
    if (st.ok()) st = merged.program->Merge(*scratch);
    if (!st.ok()) return absl::Status(st.code(), absl::StrCat("state file ", source.name, ": ", st.message()));
  }
  return merged;
}

}  // namespace tally
