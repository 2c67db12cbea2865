// Micro-batching of a Session's shards (engine-internal; the design is in
// session.h, "Micro-batching"): a shard queues validated updates in staging
// buffers and applies them as one update of the concatenated rows.
#ifndef TALLY_ENGINE_SERVING_INTERNAL_MICRO_BATCH_H_
#define TALLY_ENGINE_SERVING_INTERNAL_MICRO_BATCH_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "engine/runtime/program.h"
#include "engine/serving/internal/window_ring.h"
#include "engine/serving/session_types.h"

namespace tally::serving::internal {

struct MetricSet;  // metric_set.h

struct ShardState;

// MicroBatchQueue is a shard's queue: validated updates not applied yet,
// copied into staging buffers (so callers may reuse their tensors), when
// the first arrived, and their intervals.
struct MicroBatchQueue {
  std::vector<at::Tensor> staging;  // per input, rows [0, rows) queued
  std::vector<int64_t> sizes;       // the rows of each queued update, in order
  int64_t updates = 0;
  int64_t rows = 0;
  int64_t since_ns = 0;
  Epochs epochs;
};

// Apply folds validated inputs into one shard state, directly or through
// its micro-batching queue (when `mb` is on and the set is batchable), and
// counts the update. An update it queues returns OK, so it must apply when
// the queue flushes: it is queued only when Program::CheckBatch passes for
// the queued rows and its own together (else the queue flushes first, and an
// update that does not fit alone is applied directly, which refuses it).
absl::Status Apply(MetricSet& set, ShardState& st, const NamedTensors& inputs, int64_t rows, const MicroBatching& mb,
                   int64_t now_ns);

// Flush applies the queued updates of a shard as one update of the staged
// rows (in arrival order). If that fails (only an internal failure can, such
// as an allocation: they were checked when queued), each queued update is
// applied alone; one that still fails is dropped and counted as rejected,
// and the first such error is returned.
absl::Status Flush(MetricSet& set, ShardState& st);

}  // namespace tally::serving::internal

#endif  // TALLY_ENGINE_SERVING_INTERNAL_MICRO_BATCH_H_
