#include "tools/tally/distributed_eval.h"

#include "absl/strings/str_cat.h"
#include "engine/dist/gloo_group.h"
#include "engine/dist/launch.h"
#include "engine/dist/sync.h"
#include "support/status_macros.h"

namespace tally::tools {

absl::StatusOr<std::string> EvaluateDistributed(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                                const EvalOptions& options,
                                                const DistributedEvalOptions& dist_options) {
  const int world = dist_options.world_size;
  if (world < 1 || world > kMaxWorldSize) {
    return absl::InvalidArgumentError(
        absl::StrCat("--world-size must be between 1 and ", kMaxWorldSize, ", got ", world));
  }
  // Everything that does not depend on the rank fails here, once.
  TALLY_ASSIGN_OR_RETURN(PreparedEval prepared, PrepareEval(specs, inputs, options));
  const bool json = dist_options.format == "json";
  dist::LaunchOptions launch;
  launch.timeout = dist_options.timeout;
  // The first failure decides the run: a dead rank stops the others at once
  // instead of leaving them to time out.
  launch.stop_all_on_failure = true;
  auto outcomes = dist::RunRanks(world, launch, [&](const dist::Rendezvous& rv) -> absl::StatusOr<std::string> {
    Program& program = *prepared.program;  // this rank's forked copy
    auto [begin, end] = dist::ShardRange(prepared.rows, world, rv.rank);
    TALLY_RETURN_IF_ERROR(FeedRows(program, prepared.used, begin, end, options.batch_size));
    TALLY_ASSIGN_OR_RETURN(std::unique_ptr<dist::Group> group, dist::ConnectGloo(rv));
    dist::SyncOptions so;
    so.timeout = dist_options.timeout;
    TALLY_RETURN_IF_ERROR(dist::Sync(program, group->pg(), so).status());
    if (rv.rank != 0) return std::string();
    TALLY_ASSIGN_OR_RETURN(std::vector<EvalResult> results, CollectResults(program, prepared.entries, specs));
    return json ? ResultsToJson(results) + "\n" : ResultsToTable(results);
  });
  if (!outcomes.ok()) return outcomes.status();
  TALLY_RETURN_IF_ERROR(dist::FirstFailure(*outcomes));
  return (*outcomes)[0].output;
}

}  // namespace tally::tools
