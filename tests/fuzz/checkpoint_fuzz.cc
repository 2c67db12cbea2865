#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "engine/persist/checkpoint_format.h"
#include "tests/fuzz/fuzz_fixtures.h"
#include "tests/fuzz/targets.h"

namespace tally::fuzz {
namespace {

// The session reads checkpoints from a path: one scratch file per process,
// under the test's temporary directory when there is one.
const std::string& ScratchPath() {
  static const auto* path = [] {
    const char* dir = std::getenv("TEST_TMPDIR");
    return new std::string(absl::StrCat(dir != nullptr ? dir : "/tmp", "/tally_fuzz_checkpoint.", getpid()));
  }();
  return *path;
}

}  // namespace

// The input is a checkpoint payload: framing it here gives it a valid
// checksum, so mutations reach the payload decoder instead of all failing
// the checksum. The raw bytes also go through Unframe.
void FuzzCheckpoint(absl::string_view data) {
  (void)persist::Unframe(data, "fuzz");
  static Session* session = NewCheckpointSession().release();
  const std::string& path = ScratchPath();
  {
    // Not WriteFileAtomically: its fsyncs would dominate every run.
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << persist::Frame(data);
    if (!out.flush()) std::abort();
  }
  (void)Session::CheckpointSignature(path);
  if (session->LoadCheckpoint(path).ok()) {
    (void)session->Compute("cls");
    (void)session->Compute("agg");
    (void)session->ComputeWindow("cls", "last4");
  }
}

}  // namespace tally::fuzz
