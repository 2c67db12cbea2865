// Fnv1a64: the one byte hash of Tally's files and messages.
//
// Its values are stored (checkpoint and state-file checksums, the layout
// hashes in state files, the fingerprint of an exported module) and compared
// between processes (the sync header's fingerprint words), so they never
// change: a new use picks its seed, an old one keeps the seed it was made
// with.
#ifndef TALLY_SUPPORT_HASH_H_
#define TALLY_SUPPORT_HASH_H_

#include <cstdint>

#include "absl/strings/string_view.h"

namespace tally::support {

// kFnv1a64Offset is FNV-1a's standard 64-bit offset basis.
inline constexpr uint64_t kFnv1a64Offset = 0xcbf29ce484222325ull;

// Fnv1a64 is the 64-bit FNV-1a hash of `bytes` (prime 0x100000001b3),
// starting from `seed`: each byte is XORed into the hash, which is then
// multiplied by the prime. A single changed byte always changes the hash.
uint64_t Fnv1a64(absl::string_view bytes, uint64_t seed = kFnv1a64Offset);

}  // namespace tally::support

#endif  // TALLY_SUPPORT_HASH_H_
