#include "engine/serving/internal/micro_batch.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>

#include "absl/status/statusor.h"
#include "engine/serving/internal/metric_set.h"
#include "engine/serving/internal/session_shards.h"
#include "support/status_macros.h"
#include "support/torch_status.h"

namespace tally::serving::internal {
namespace {

// Stage copies one update's rows after the staged ones (growing the
// staging buffers by doubling); false when they cannot join the staged rows
// (other trailing sizes), and then nothing is staged.
absl::StatusOr<bool> Stage(MetricSet& set, MicroBatchQueue& q, const NamedTensors& inputs, int64_t rows) {
  std::vector<const at::Tensor*> ordered(set.params.size(), nullptr);
  for (size_t j = 0; j < set.params.size(); ++j)
    for (const auto& in : inputs)
      if (in.first == set.params[j]) ordered[j] = &in.second;
  if (q.staging.size() != set.params.size()) q.staging.resize(set.params.size());
  for (size_t j = 0; j < ordered.size(); ++j) {
    if (ordered[j] == nullptr || ordered[j]->dim() == 0 || ordered[j]->size(0) != rows) return false;
    const at::Tensor& buf = q.staging[j];
    if (q.updates > 0 && buf.sizes().slice(1) != ordered[j]->sizes().slice(1)) return false;
  }
  absl::Status status = support::CatchTorch(
      [&] {
        for (size_t j = 0; j < ordered.size(); ++j) {
          const at::Tensor& in = *ordered[j];
          at::Tensor& buf = q.staging[j];
          const bool fits = buf.defined() && buf.size(0) >= q.rows + rows &&
                            buf.sizes().slice(1) == in.sizes().slice(1) && buf.scalar_type() == in.scalar_type() &&
                            buf.device() == in.device();
          if (!fits) {
            std::vector<int64_t> sizes(in.sizes().begin(), in.sizes().end());
            sizes[0] = std::max<int64_t>(2 * (q.rows + rows), 64);
            at::Tensor grown = at::empty(sizes, in.options());
            if (q.rows > 0) grown.narrow(0, 0, q.rows).copy_(buf.narrow(0, 0, q.rows));
            buf = grown;
          }
          if (rows == 0) continue;
          // A plain memcpy for contiguous CPU rows: narrow + copy_ would cost
          // more in dispatch than a small batch's bytes.
          if (buf.is_cpu() && in.is_cpu() && in.is_contiguous() && buf.is_contiguous()) {
            const size_t row_bytes = in.nbytes() / rows;
            std::memcpy(static_cast<char*>(buf.data_ptr()) + q.rows * row_bytes, in.data_ptr(), in.nbytes());
          } else {
            buf.narrow(0, q.rows, rows).copy_(in);
          }
        }
      },
      set.name);
  TALLY_RETURN_IF_ERROR(status);
  return true;
}

// Rows [offset, offset + rows) of the staged inputs.
NamedTensors StagedRows(const MetricSet& set, const MicroBatchQueue& q, int64_t offset, int64_t rows) {
  NamedTensors batch;
  for (size_t j = 0; j < set.params.size(); ++j) {
    batch.emplace_back(set.params[j], q.staging[j].narrow(0, offset, rows));
  }
  return batch;
}

}  // namespace

absl::Status Flush(MetricSet& set, ShardState& st) {
  MicroBatchQueue& q = st.queue;
  if (q.updates == 0) return absl::OkStatus();
  bool all_applied = false;
  absl::Status status = ApplyNow(set, st, StagedRows(set, q, 0, q.rows), q.epochs, &all_applied);
  // One at a time only if the all-time program took none of the rows (a
  // window's failure after it took them must not apply them twice).
  if (!status.ok() && !all_applied && q.updates > 1) {
    status = absl::OkStatus();
    int64_t offset = 0;
    for (int64_t rows : q.sizes) {
      bool one_applied = false;
      absl::Status one = ApplyNow(set, st, StagedRows(set, q, offset, rows), q.epochs, &one_applied);
      offset += rows;
      if (!one.ok() && status.ok()) status = one;
      if (one.ok() || one_applied) continue;
      --st.updates;
      st.rows -= rows;
      ++st.rejected;
    }
  } else if (!status.ok() && !all_applied) {
    st.updates -= q.updates;
    st.rows -= q.rows;
    st.rejected += q.updates;
  }
  q.updates = 0;
  q.rows = 0;
  q.sizes.clear();
  return status;
}

absl::Status Apply(MetricSet& set, ShardState& st, const NamedTensors& inputs, int64_t rows, const MicroBatching& mb,
                   int64_t now_ns) {
  Epochs epochs = EpochsOf(set, now_ns);
  auto direct = [&] {
    absl::Status status = ApplyNow(set, st, inputs, epochs);
    if (status.ok()) {
      ++st.updates;
      st.rows += rows;
    } else {
      ++st.rejected;
    }
    return status;
  };
  if (mb.max_rows <= 0 || !set.batchable) return direct();
  if (!st.all) {
    auto program = set.NewProgram();
    if (!program.ok()) return direct();  // which fails the same way, counted
    st.all = *std::move(program);
  }
  // Without an exact check at queueing, queue nothing (see Apply's comment).
  if (!st.all->growth_is_shape_determined()) return direct();
  MicroBatchQueue& q = st.queue;
  // The queue holds updates of one interval per window, and only rows that
  // apply together. A failed flush has counted its losses in `rejected`
  // (Flush): they are not this update's, which goes on.
  if (q.updates > 0 && (epochs != q.epochs || !st.all->CheckBatch(inputs, q.rows).ok())) (void)Flush(set, st);
  if (q.updates == 0) {
    if (!st.all->CheckBatch(inputs, 0).ok()) return direct();
    q.epochs = epochs;
    q.since_ns = now_ns;
  }
  auto staged = Stage(set, q, inputs, rows);
  if (staged.ok() && !*staged) {
    (void)Flush(set, st);
    q.epochs = epochs;
    q.since_ns = now_ns;
    staged = Stage(set, q, inputs, rows);
  }
  if (!staged.ok() || !*staged) return direct();
  ++st.updates;
  st.rows += rows;
  ++q.updates;
  q.rows += rows;
  q.sizes.push_back(rows);
  if (q.rows >= mb.max_rows || q.updates >= mb.max_updates || now_ns - q.since_ns >= mb.max_delay_us * 1000) {
    return Flush(set, st);
  }
  return absl::OkStatus();
}

}  // namespace tally::serving::internal
