// State files: one program's states with what identifies them, so that
// shards that never share a process group — the workers of a sharded job,
// the replicas of a server — can be merged later (`tally merge`,
// MergeStates in api/state_files.h).
//
// Framing: engine/persist/checkpoint_format.h with magic "TALLYSTA", version 2. The
// payload is the input signature (PutSignature), the specs (a count, then
// each), the state layout hash, the states (Program::SaveState bytes,
// engine/runtime/internal/state_codec.h) and the ids of the shards whose rows they hold (a
// count, then each).
#ifndef TALLY_ENGINE_PERSIST_STATE_FILE_H_
#define TALLY_ENGINE_PERSIST_STATE_FILE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/dsl/builder.h"
#include "engine/ir/module.h"
#include "engine/persist/checkpoint_format.h"

namespace tally::persist {

// PutSignature appends an input signature (count, then name, dtype, dims
// each); ReadSignature reads it back. Errors start "<kind> <path>: ".
void PutSignature(std::string& out, const dsl::Signature& sig);
absl::StatusOr<dsl::Signature> ReadSignature(persist::Reader& r, absl::string_view path,
                                             absl::string_view kind = "checkpoint");

// SameInputs holds when two signatures name the same inputs with the same
// dtypes, ranks and dims after the leading one (shards differ in rows).
bool SameInputs(const dsl::Signature& a, const dsl::Signature& b);

// StateLayout describes a module's states as a fold sees them, one line per
// state: name, type without device, reducer and merge group. Programs with
// equal layouts fold each other's states; unlike Program::fingerprint it
// names no device, so a shard run on a GPU merges with one run on a CPU.
std::string StateLayout(const ir::Module& m);

// StateFile is what a state file holds.
struct StateFile {
  dsl::Signature signature;
  std::vector<std::string> specs;
  std::string layout_hash;  // persist::HexHash(StateLayout(module))
  std::string states;       // Program::SaveState bytes
  // The shards whose rows `states` hold: one id per save of an evaluation
  // or a replica (ShardId), the union of the sources' through merges, so
  // that a merge refuses a source whose rows it already holds.
  std::vector<std::string> ids;
};

// ShardId is the id of the shard `key` names in this process ("eval 3",
// "session 2 set default"): the hash of a random nonce drawn once per
// process and the key, so that it differs between processes and between
// keys, and a replica that saves its states twice gives the same id.
std::string ShardId(absl::string_view key);

// EncodeStateFile frames `f`; DecodeStateFile checks the framing and reads
// it back, InvalidArgument "state file <source>: ..." when the bytes are not
// a whole state file.
std::string EncodeStateFile(const StateFile& f);
absl::StatusOr<StateFile> DecodeStateFile(absl::string_view bytes, absl::string_view source);

}  // namespace tally::persist

#endif  // TALLY_ENGINE_PERSIST_STATE_FILE_H_
