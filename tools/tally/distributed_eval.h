// `tally eval` over several ranks whose states sync over Gloo (docs/cli.md):
//
// * `--world-size W` alone: W ranks forked on this machine, on 127.0.0.1.
//   The calling process checks and compiles everything first (so a bad spec
//   or input fails exactly as with one process), then forks W ranks
//   (engine/dist/launch.h). Rank r takes the r-th of W contiguous shards of
//   the rows (as equal as possible). The first rank to fail or die stops the
//   others, and its error is the run's.
// * `--rank R` (or torchrun's RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT):
//   this process is one rank of a job someone else started, on this host or
//   another; rank 0 hosts the rendezvous store at the master's address
//   (under torchrun, whose agent hosts it, every rank is a client), as
//   torch.distributed's env:// does. The rank reads its own inputs (whole)
//   or takes its contiguous shard of files every rank reads.
//
// Either way each rank feeds its rows in --batch-size batches, joins the
// group, and dist::Sync folds every rank's states; rank 0 computes, prints
// and writes --save-state (the states of every rank's rows).
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
  std::string format = "table";  // "table", "json" or "none": what rank 0 prints
  std::string save_state;        // rank 0 writes the synced states here
  // One rank of an externally started job (rank >= 0); -1: fork the ranks.
  int rank = -1;
  std::string master_addr;  // where rank 0 hosts the store
  int master_port = 0;
  std::string local_addr;  // what this rank's Gloo binds (dist::Rendezvous)
  // agent_store: the store at the master's address is torchrun's agent's
  // (TORCHELASTIC_USE_AGENT_STORE=True): every rank is its client, and
  // keys go under store_prefix, as torch.distributed's env:// does.
  bool agent_store = false;
  std::string store_prefix;
  // inputs_per_rank: the inputs are this rank's own rows (read whole);
  // otherwise every rank reads the same files and takes its shard.
  bool inputs_per_rank = false;
};

// kMaxWorldSize bounds --world-size (each rank is a process).
inline constexpr int kMaxWorldSize = 256;

// EvaluateDistributed returns the text rank 0 formatted (ResultsToTable or
// ResultsToJson; empty on other ranks of an external job), or the error
// that explains the run (dist::FirstFailure for forked ranks).
absl::StatusOr<std::string> EvaluateDistributed(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                                const EvalOptions& options, const DistributedEvalOptions& dist_options);

// FormatResults is `results` as --format prints them: a table, one JSON
// line, or nothing for "none".
std::string FormatResults(const std::vector<EvalResult>& results, const std::string& format);

// FinishEval is what the last process of an evaluation does with its
// program: writes --save-state, then formats the results (nothing for
// format "none").
absl::StatusOr<std::string> FinishEval(const PreparedEval& prepared, const std::string& format,
                                       const std::string& save_state);

}  // namespace tally::tools

#endif  // TALLY_TOOLS_TALLY_DISTRIBUTED_EVAL_H_
