// `tally bench`: the benchmark workloads of docs/cli.md, measured in-process.
//
// Each workload compiles its metrics once, warms up, then times repeated
// runs and reports medians. The bandwidth workloads (cls_large, cls_vocab,
// reg_large) cycle distinct batches larger together than twice the
// last-level cache, and also measure the machine's read bandwidth (a plain
// sum over 400 MB, or 4x the last-level cache if larger; 64 MB under
// --quick), so that gb_per_s reads as a fraction of what DRAM allows.
#ifndef TALLY_TOOLS_TALLY_BENCH_H_
#define TALLY_TOOLS_TALLY_BENCH_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/ir/types.h"

namespace tally::tools {

// BenchResult holds the reported fields; absent ones are omitted from JSON.
struct BenchResult {
  std::string workload;
  std::string backend = "eager";
  std::optional<std::string> device;  // the program's device, when not cpu
  std::optional<double> us_per_update;
  std::optional<double> ms_compute;
  // Workloads with a compute: updates timed right after a compute, which
  // has evicted their inputs from the caches (us_per_update is measured in
  // back-to-back passes of updates, as a serving loop runs them).
  std::optional<double> us_per_update_cold;
  std::optional<double> gb_per_s;
  std::optional<double> ms_per_sync;
  std::optional<double> collectives_per_sync;
  // The read probe: the median GB/s of read_probe_runs plain sums over
  // read_probe_bytes, and (max - min) / median of those runs.
  std::optional<double> read_gb_per_s;
  std::optional<double> read_gb_per_s_spread;
  std::optional<double> read_probe_bytes;
  std::optional<double> read_probe_runs;
  std::optional<double> bandwidth_fraction;  // gb_per_s / read_gb_per_s
  // state_bytes: the program's fixed-size states after the compiler
  // (narrow-states); peak_rss_mb: the process's peak resident memory so far
  // (getrusage), inputs and the compile included.
  std::optional<double> state_bytes;
  std::optional<double> peak_rss_mb;
  // merge_* workloads: one shard's state file, and the time MergeStates
  // takes over `sources_merged` of them (compiling the program included)
  // plus the compute of the merged result.
  std::optional<double> state_file_bytes;
  std::optional<double> sources_merged;
  std::optional<double> ms_merge;
  int64_t aten_calls_per_update = 0;
};

// BenchWorkloads lists the workload names.
std::vector<std::string> BenchWorkloads();

// RunBench runs one workload with its program and inputs on `device`
// (the fork-based sync_cls and merge_* run on cpu only: Unimplemented
// elsewhere). `quick` shrinks repetitions (for tests). Off cpu, each timed
// pass ends when the device has finished its work.
absl::StatusOr<BenchResult> RunBench(const std::string& workload, const std::string& backend, bool quick = false,
                                     const ir::Device& device = ir::Device{});

// BenchToJson is one result as one JSON object (docs/cli.md): the workload
// and backend, the fields present, numbers as absl::StrCat prints them.
std::string BenchToJson(const BenchResult& r);
// BenchSkippedToJson is the JSON line of a workload that cannot run here:
// {"workload": W, "backend": B, "skipped": WHY}, every string escaped.
std::string BenchSkippedToJson(const std::string& workload, const std::string& backend, absl::string_view why);
// BenchToTable is one result for people.
std::string BenchToTable(const BenchResult& r);

}  // namespace tally::tools

#endif  // TALLY_TOOLS_TALLY_BENCH_H_
