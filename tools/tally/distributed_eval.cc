#include "tools/tally/distributed_eval.h"

#include "absl/strings/str_cat.h"
#include "engine/dist/gloo_group.h"
#include "engine/dist/launch.h"
#include "engine/dist/sync.h"
#include "engine/persist/checkpoint_format.h"
#include "support/status_macros.h"

namespace tally::tools {
namespace {

// RunRank is one rank's whole part: its rows, the group, the sync, and on
// rank 0 the output.
absl::StatusOr<std::string> RunRank(PreparedEval& prepared, const EvalOptions& options,
                                    const DistributedEvalOptions& dist_options, const dist::Rendezvous& rv) {
  auto [begin, end] = dist_options.inputs_per_rank ? std::make_pair(int64_t{0}, prepared.rows)
                                                   : dist::ShardRange(prepared.rows, rv.world_size, rv.rank);
  TALLY_RETURN_IF_ERROR(FeedRows(*prepared.program, prepared.used, begin, end, options.batch_size));
  TALLY_ASSIGN_OR_RETURN(std::unique_ptr<dist::Group> group, dist::ConnectGloo(rv));
  dist::SyncOptions so;
  so.timeout = dist_options.timeout;
  TALLY_RETURN_IF_ERROR(dist::Sync(*prepared.program, group->pg(), so).status());
  if (rv.rank != 0) return std::string();
  return FinishEval(prepared, dist_options.format, dist_options.save_state);
}

}  // namespace

absl::StatusOr<std::string> FinishEval(const PreparedEval& prepared, const std::string& format,
                                       const std::string& save_state) {
  if (!save_state.empty()) {
    TALLY_ASSIGN_OR_RETURN(std::string bytes, SaveState(prepared));
    TALLY_RETURN_IF_ERROR(persist::WriteFileAtomically(save_state, bytes, "state file"));
  }
  if (format == "none") return std::string();
  TALLY_ASSIGN_OR_RETURN(std::vector<EvalResult> results,
                         CollectResults(*prepared.program, prepared.entries, prepared.specs));
  return FormatResults(results, format);
}

std::string FormatResults(const std::vector<EvalResult>& results, const std::string& format) {
  if (format == "none") return std::string();
  return format == "json" ? ResultsToJson(results) + "\n" : ResultsToTable(results);
}

absl::StatusOr<std::string> EvaluateDistributed(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                                const EvalOptions& options,
                                                const DistributedEvalOptions& dist_options) {
  const int world = dist_options.world_size;
  if (world < 1 || world > kMaxWorldSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("--world-size must be between 1 and ", kMaxWorldSize, ", got ", world));
  }
  if (dist_options.rank >= world) {
    return absl::InvalidArgumentError(
        absl::StrCat("--rank must be in [0, world size ", world, "), got ", dist_options.rank));
  }
  // Everything that does not depend on the group fails here, once.
  TALLY_ASSIGN_OR_RETURN(PreparedEval prepared, PrepareEval(specs, inputs, options));
  if (dist_options.rank >= 0) {
    dist::Rendezvous rv;
    rv.host = dist_options.master_addr;
    rv.port = dist_options.master_port;
    rv.host_store = dist_options.rank == 0 && !dist_options.agent_store;
    rv.store_prefix = dist_options.store_prefix;
    rv.local_addr = dist_options.local_addr;
    rv.rank = dist_options.rank;
    rv.world_size = world;
    rv.timeout = dist_options.timeout;
    return RunRank(prepared, options, dist_options, rv);
  }
  dist::LaunchOptions launch;
  launch.timeout = dist_options.timeout;
  // The first failure decides the run: a dead rank stops the others at once
  // instead of leaving them to time out.
  launch.stop_all_on_failure = true;
  auto outcomes = dist::RunRanks(world, launch, [&](const dist::Rendezvous& rv) {
    return RunRank(prepared, options, dist_options, rv);  // on this rank's forked copy
  });
  if (!outcomes.ok()) return outcomes.status();
  TALLY_RETURN_IF_ERROR(dist::FirstFailure(*outcomes));
  return (*outcomes)[0].output;
}

}  // namespace tally::tools
