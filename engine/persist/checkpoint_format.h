// Checkpoint and state files: framing, checksum and atomic writes for
// Session::SaveCheckpoint / LoadCheckpoint and state files
// (engine/persist/state_file.h).
//
// A file is a magic (8 bytes: "TALLYCKP" for checkpoints, "TALLYSTA" for
// state files), a u32 version, a u64 payload size, the payload, and a u64
// FNV-1a hash of every byte before it; integers are little-endian. FNV-1a
// detects every single-byte change (each step is a bijection of the running
// hash), and the exact size check rejects every truncation.
#ifndef TALLY_ENGINE_PERSIST_CHECKPOINT_FORMAT_H_
#define TALLY_ENGINE_PERSIST_CHECKPOINT_FORMAT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tally::persist {

// Framing names a kind of file: its magic, the version this build reads and
// writes, and what errors call it.
struct Framing {
  absl::string_view magic;  // 8 bytes
  uint32_t version;
  absl::string_view what;  // "checkpoint", "state file"
};
// Checkpoint version 2: the payload starts with the input signature.
inline constexpr Framing kCheckpoint{"TALLYCKP", 2, "checkpoint"};
// State file version 2: the payload ends with the shard ids.
inline constexpr Framing kStateFile{"TALLYSTA", 2, "state file"};

// HexHash is support::Fnv1a64 of `bytes` (standard seed) as 16 hex digits.
std::string HexHash(absl::string_view bytes);

// PutU64 / PutString append a little-endian u64 / a u64 length and bytes.
void PutU64(std::string& out, uint64_t v);
void PutString(std::string& out, absl::string_view s);

// Reader reads what PutU64/PutString wrote; false when the bytes run out.
class Reader {
 public:
  explicit Reader(absl::string_view bytes) : rest_(bytes) {}
  bool U64(uint64_t& v);
  bool String(std::string& s);
  bool done() const { return rest_.empty(); }

 private:
  absl::string_view rest_;
};

// Frame wraps a payload: magic, version, size, payload, checksum.
std::string Frame(absl::string_view payload, const Framing& framing = kCheckpoint);
// Unframe checks magic, version, size and checksum and returns the payload
// (a view into `file`); `path` names the file in errors, which start with
// framing.what. A file of the other kind is named as such.
absl::StatusOr<absl::string_view> Unframe(absl::string_view file, absl::string_view path,
                                          const Framing& framing = kCheckpoint);

// `kind` ("checkpoint", "state file") starts the errors of the file
// functions below.
//
// WriteTarget is the file a write of `path` replaces: `path` itself, or,
// when `path` is a symbolic link, the regular file it points to (so the link
// stays a link and its target gets the new bytes, rather than the link being
// replaced by a file and its target going stale). A dangling link, or a path
// that is (or points to) a directory, FIFO or device, is FailedPrecondition.
absl::StatusOr<std::string> WriteTarget(const std::string& path, absl::string_view kind = "checkpoint");
// WriteFileAtomically writes `bytes` to a temporary file beside
// WriteTarget(path), fsyncs it, renames it over the target and fsyncs the
// directory.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes,
                                 absl::string_view kind = "checkpoint");
// ReadFile returns a regular file's bytes (io::ReadRegularFile: a FIFO or
// device is refused, never read).
absl::StatusOr<std::string> ReadFile(const std::string& path, absl::string_view kind = "checkpoint");

}  // namespace tally::persist

#endif  // TALLY_ENGINE_PERSIST_CHECKPOINT_FORMAT_H_
