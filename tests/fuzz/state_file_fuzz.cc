#include <string>

#include "api/tally.h"
#include "engine/persist/checkpoint_format.h"
#include "engine/persist/state_file.h"
#include "tests/fuzz/targets.h"

namespace tally::fuzz {

// The input is a state file's payload: framing it here gives it a valid
// checksum, so mutations reach the payload decoder and the merge behind it
// (a flipped byte of a framed file only ever fails the checksum). The raw
// bytes also go through DecodeStateFile.
void FuzzStateFile(absl::string_view data) {
  (void)persist::DecodeStateFile(data, "fuzz");
  const StateSource source{"fuzz.st", persist::Frame(data, persist::kStateFile)};
  EvalOptions options;
  // Specs come from the bytes: a budget well inside the fuzzer's RSS limit
  // refuses a huge num_classes before anything is allocated.
  options.max_state_bytes = int64_t{64} << 20;
  StateMerger merger(options);
  if (!merger.Add(source).ok()) return;
  // The same file again (a merge with its own rows), then the metrics.
  (void)merger.Add(source);
  auto merged = std::move(merger).Take();
  if (!merged.ok()) return;
  (void)CollectResults(*merged->program, merged->entries, merged->specs);
  (void)SaveState(*merged);
}

}  // namespace tally::fuzz
