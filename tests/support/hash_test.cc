// Tests of support::Fnv1a64: its values are stored in checkpoints, state
// files and exported modules, so they are pinned here to values computed
// outside Tally (FNV-1a's published test vectors, and Python for the other
// seeds).
#include "support/hash.h"

#include <string>

#include "engine/persist/checkpoint_format.h"
#include "gtest/gtest.h"

namespace tally::support {
namespace {

// Verifies FNV-1a's published 64-bit test vectors with the standard seed.
TEST(Fnv1a64Test, MatchesThePublishedVectors) {
  EXPECT_EQ(kFnv1a64Offset, 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ull);
}

// Verifies the seeds stored hashes were made with: the exported module's
// fingerprint seed and the sync header's second word (seed mixed with the
// length), and that bytes past 0x7f hash as unsigned.
TEST(Fnv1a64Test, KeepsTheValuesOfEverySeedInUse) {
  EXPECT_EQ(Fnv1a64("a", 1469598103934665603ull), 0x44bd8ad473cd9906ull);
  EXPECT_EQ(Fnv1a64("tally", 0x84222325cbf29ce4ull ^ 5), 0x04eb4dd99a4a7df9ull);
  EXPECT_EQ(Fnv1a64(std::string("\xff\x80", 2)), 0x0a9a2607b6f6e56aull);
}

// Verifies that the checkpoint checksum's hex form is Fnv1a64 in 16 digits.
TEST(Fnv1a64Test, CheckpointHexHashIsFnv1a64) {
  EXPECT_EQ(persist::HexHash("foobar"), "85944171f73967e8");
  EXPECT_EQ(persist::HexHash("a"), "af63dc4c8601ec8c");
}

}  // namespace
}  // namespace tally::support
