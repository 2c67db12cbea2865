#include "api/state_files.h"

#include <atomic>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/io/regular_file.h"
#include "engine/ir/types.h"
#include "engine/persist/checkpoint_format.h"
#include "engine/persist/state_file.h"
#include "engine/runtime/compiler.h"
#include "support/status_macros.h"

namespace tally {
namespace {

std::string LayoutHash(const Program& program) { return persist::HexHash(persist::StateLayout(program.module())); }

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
                                 const dsl::Signature& sig, std::vector<std::string> ids) {
  persist::StateFile file;
  file.signature = sig;
  file.specs = specs;
  file.layout_hash = LayoutHash(program);
  file.ids = std::move(ids);
  TALLY_ASSIGN_OR_RETURN(file.states, program.SaveComputedState());
  return persist::EncodeStateFile(file);
}

}  // namespace

absl::StatusOr<std::string> SaveState(const PreparedEval& prepared) {
  // Every save is a shard of its own.
  static std::atomic<uint64_t> saves{0};
  return Save(*prepared.program, prepared.specs, prepared.signature,
              {persist::ShardId(absl::StrCat("eval ", saves.fetch_add(1)))});
}

absl::StatusOr<std::string> SaveState(const MergedStates& merged) {
  return Save(*merged.program, merged.specs, merged.signature, merged.ids);
}

absl::StatusOr<StateSource> ReadStateSource(const std::string& path, int64_t max_bytes) {
  absl::StatusOr<std::string> bytes = io::ReadRegularFile(path, max_bytes);
  if (!bytes.ok()) return absl::Status(bytes.status().code(), absl::StrCat("state file: ", bytes.status().message()));
  return StateSource{path, *std::move(bytes)};
}

StateMerger::StateMerger(EvalOptions options) : options_(std::move(options)) {}
StateMerger::~StateMerger() = default;

absl::Status StateMerger::Add(const StateSource& source) {
  // Errors name the source and keep their code (a budget refusal is
  // ResourceExhausted, a file of other metrics InvalidArgument).
  auto about = [&](const absl::Status& st) {
    return absl::Status(st.code(), absl::StrCat("state file ", source.name, ": ", st.message()));
  };
  auto bad = [&](absl::string_view what) { return about(absl::InvalidArgumentError(what)); };
  TALLY_ASSIGN_OR_RETURN(persist::StateFile file, persist::DecodeStateFile(source.bytes, source.name));
  if (merged_.program == nullptr) {
    // The first source defines the program; every other must match it.
    auto entries = BuildEntries(file.specs, file.signature, options_.device);
    if (!entries.ok()) return about(entries.status());
    CompileOptions co;
    co.device = options_.device;
    co.checked = options_.checked;
    co.backend = options_.backend;
    co.max_state_bytes = options_.max_state_bytes;
    auto program = Compile(*entries, co);
    if (!program.ok()) return about(program.status());
    auto scratch = Program::Create((*program)->module().Clone(), (*program)->options());
    if (!scratch.ok()) return about(scratch.status());
    merged_.specs = file.specs;
    merged_.signature = file.signature;
    merged_.entries = *std::move(entries);
    merged_.program = *std::move(program);
    scratch_ = *std::move(scratch);
    layout_ = LayoutHash(*merged_.program);
    first_ = source.name;
  } else if (file.specs != merged_.specs) {
    return bad(absl::StrCat("holds other metrics (", absl::StrJoin(file.specs, ", "), ") than ", first_, " (",
                            absl::StrJoin(merged_.specs, ", "), ")"));
  } else if (!persist::SameInputs(file.signature, merged_.signature)) {
    return bad(absl::StrCat("was saved for other inputs (", Describe(file.signature), ") than ", first_, " (",
                            Describe(merged_.signature), ")"));
  }
  if (file.layout_hash != layout_) {
    return bad("its states are laid out differently from this build's program (saved by another Tally version?)");
  }
  for (const std::string& id : file.ids) {
    auto it = brought_.find(id);
    if (it != brought_.end()) {
      return bad(absl::StrCat("holds shard ", id, ", which ", it->second,
                              " already brought: its rows would count twice (the same file or replica twice, or a "
                              "merged file and one of its parts)"));
    }
  }
  absl::Status st = scratch_->LoadState(file.states);
  if (!st.ok()) return bad(st.message());
  st = merged_.program->CheckMerge(*scratch_);  // over the budget: ResourceExhausted
  if (st.ok()) st = merged_.program->Merge(*scratch_);
  if (!st.ok()) return about(st);
  for (std::string& id : file.ids) {
    brought_.emplace(id, source.name);
    merged_.ids.push_back(std::move(id));
  }
  return absl::OkStatus();
}

absl::StatusOr<MergedStates> StateMerger::Take() && {
  if (merged_.program == nullptr) return absl::InvalidArgumentError("no state files to merge");
  scratch_.reset();
  return std::move(merged_);
}

absl::StatusOr<MergedStates> MergeStates(const std::vector<StateSource>& sources, const EvalOptions& options) {
  StateMerger merger(options);
  for (const StateSource& source : sources) TALLY_RETURN_IF_ERROR(merger.Add(source));
  return std::move(merger).Take();
}

}  // namespace tally
