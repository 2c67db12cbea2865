// State files on the front door: a program's or a session's states as bytes
// that any store can keep (engine/persist/state_file.h), and the fold of any number
// of them. This is how shards that never share a process group are combined
// — the workers of a sharded job, the replicas of a server (docs/scaling.md):
// each saves its states, one job merges them and computes the metrics over
// every row.
//
//   eval shard:  PrepareEval, FeedRows, SaveState(prepared)
//   a server:    Session::SaveState(set)      (`GET /v1/state`)
//   the merge:   MergeStates(sources), then CollectResults or SaveState
#ifndef TALLY_API_STATE_FILES_H_
#define TALLY_API_STATE_FILES_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "api/evaluate.h"
#include "engine/dsl/builder.h"
#include "engine/runtime/program.h"
#include "metrics/collection.h"

namespace tally {

// SaveState returns the state file of a prepared evaluation: what its
// program's Compute reads (after dist::Sync, every rank's rows).
absl::StatusOr<std::string> SaveState(const PreparedEval& prepared);

// StateSource is one state file's bytes; `name` (a path, a URL) names it in
// errors.
struct StateSource {
  std::string name;
  std::string bytes;
};

// MergedStates is the fold of state files: a program holding every
// source's rows, compiled for options.device.
struct MergedStates {
  std::vector<std::string> specs;
  dsl::Signature signature;  // the first source's
  std::vector<dsl::CollectionEntry> entries;
  std::unique_ptr<Program> program;
  std::vector<std::string> ids;  // the shards merged (persist::StateFile::ids)
};

// MergeStates folds `sources` with the states' reducers. Every source must
// hold the same specs, inputs (names, dtypes, dims past the leading one) and
// state layout as the first; the first that does not, or is not a whole
// state file, is an InvalidArgument naming it, and nothing is returned; so
// is a source holding a shard that an earlier source already brought (the
// same file twice, a merged file and one of its parts, one replica polled
// twice): its rows would count twice. The
// order of the sources does not change any result: sums are exact for
// integers and within rounding for floats, and every metric over `cat`
// states is invariant to the order of its rows — except a result with one
// value per row (kl_divergence(reduction=none)), which lists the rows in
// the order of the sources. A source whose rows would grow the merged states
// past options.max_state_bytes is a ResourceExhausted naming it, before its
// rows are appended.
absl::StatusOr<MergedStates> MergeStates(const std::vector<StateSource>& sources, const EvalOptions& options = {});

// StateMerger is MergeStates one source at a time, so that a merge of k
// sources need not hold k sources' bytes: read one, Add it, drop its bytes.
// Add's errors are MergeStates' (a budget refusal stays ResourceExhausted);
// after an error nothing of that source was folded.
class StateMerger {
 public:
  explicit StateMerger(EvalOptions options = {});
  ~StateMerger();
  absl::Status Add(const StateSource& source);
  // Take returns the fold of the sources added (InvalidArgument if none).
  absl::StatusOr<MergedStates> Take() &&;

 private:
  EvalOptions options_;
  MergedStates merged_;
  std::unique_ptr<Program> scratch_;  // a source's states, loaded to fold
  std::string layout_;
  std::string first_;                           // the first source's name
  std::map<std::string, std::string> brought_;  // shard id -> the source that brought it
};

// SaveState returns merged states as one state file (so merges compose).
absl::StatusOr<std::string> SaveState(const MergedStates& merged);

// ReadStateSource reads a state file from disk as a source named by its
// path; with max_bytes >= 0 a larger file is ResourceExhausted, unread.
absl::StatusOr<StateSource> ReadStateSource(const std::string& path, int64_t max_bytes = -1);

}  // namespace tally

#endif  // TALLY_API_STATE_FILES_H_
