// `tally merge SOURCE...`: fold state files and running servers' states
// (docs/cli.md). A source is a state file (`tally eval --save-state`) or a
// server, `http://HOST:PORT` (its `GET /v1/state`); the merged states give
// what `tally eval` over every source's rows prints.
#ifndef TALLY_TOOLS_TALLY_MERGE_H_
#define TALLY_TOOLS_TALLY_MERGE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/tally.h"

namespace tally::tools {

// MergeCommand is the command line of `tally merge`.
struct MergeCommand {
  std::vector<std::string> sources;
  std::string format = "table";                // table, json, or none (with save_state)
  std::string save_state;                      // write the merged states here too
  std::string auth_token;                      // sent to servers as `Authorization: Bearer`
  absl::Duration timeout = absl::Seconds(30);  // per server request
  EvalOptions eval;                            // device, backend, budget
};

// IsUrl says whether a source names a server rather than a file.
bool IsUrl(const std::string& source);

// FetchState reads one source: a file, or `GET <url>/v1/state` (a URL with
// a path is fetched as given). A file or a server's answer larger than
// `max_bytes` is ResourceExhausted before it is all read.
absl::StatusOr<StateSource> FetchState(const std::string& source, const std::string& auth_token, absl::Duration timeout,
                                       int64_t max_bytes);

// RunMerge reads and folds the sources one at a time (each read capped by
// the budget), writes --save-state and returns the text to print.
absl::StatusOr<std::string> RunMerge(const MergeCommand& command);

}  // namespace tally::tools

#endif  // TALLY_TOOLS_TALLY_MERGE_H_
