// `tally eval --world-size W`: the rows split over W forked ranks that sync
// their states over Gloo on 127.0.0.1 (docs/cli.md).
//
// The calling process checks and compiles everything first (so a bad spec
// or input fails exactly as with one process), then forks W ranks
// (engine/dist/launch.h). Rank r takes the r-th of W contiguous shards of
// the rows (as equal as possible), feeds it in --batch-size batches,
// joins the group, and dist::Sync folds every rank's states; rank 0 computes
// and formats the results, which are printed once. The first rank to fail
// or die stops the others, and its error is the run's.
#ifndef TALLY_TOOLS_TALLY_DISTRIBUTED_EVAL_H_
#define TALLY_TOOLS_TALLY_DISTRIBUTED_EVAL_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "api/tally.h"

namespace tally::tools {

// DistributedEvalOptions add the group's parameters to EvalOptions.
struct DistributedEvalOptions {
  int world_size = 2;
  // timeout bounds joining and each collective (--sync-timeout).
  absl::Duration timeout = absl::Seconds(30);
  std::string format = "table";  // "table" or "json": what rank 0 prints
};

// kMaxWorldSize bounds --world-size (each rank is a process).
inline constexpr int kMaxWorldSize = 256;

// EvaluateDistributed returns the text rank 0 formatted (ResultsToTable or
// ResultsToJson), or the error that explains the run (dist::FirstFailure).
absl::StatusOr<std::string> EvaluateDistributed(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                                const EvalOptions& options, const DistributedEvalOptions& dist_options);

}  // namespace tally::tools

#endif  // TALLY_TOOLS_TALLY_DISTRIBUTED_EVAL_H_
