#include "engine/micro_batch.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>

#include "absl/status/statusor.h"
#include "engine/metric_set.h"
#include "engine/session_shards.h"
#include "support/status_macros.h"
#include "support/torch_status.h"

namespace tally::engine::internal {
namespace {

// Stage copies one update's rows after the staged ones (growing the
// staging buffers by doubling); false when they cannot join the staged rows
// (other trailing sizes), and then nothing is staged.
absl::StatusOr<bool> Stage(Session::MetricSet& set, MicroBatchQueue& q, const NamedTensors& inputs, int64_t rows) {
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

}  // namespace

absl::Status Flush(Session::MetricSet& set, ShardState& st) {
  MicroBatchQueue& q = st.queue;
  if (q.updates == 0) return absl::OkStatus();
  NamedTensors batch;
  for (size_t j = 0; j < set.params.size(); ++j) {
    batch.emplace_back(set.params[j], q.staging[j].narrow(0, 0, q.rows));
  }
  absl::Status status = ApplyNow(set, st, batch, q.epochs);
  if (!status.ok()) {
    // Validated on arrival, so this is an internal failure (e.g. memory).
    st.updates -= q.updates;
    st.rows -= q.rows;
    st.rejected += q.updates;
  }
  q.updates = 0;
  q.rows = 0;
  return status;
}

absl::Status Apply(Session::MetricSet& set, ShardState& st, const NamedTensors& inputs, int64_t rows,
                   const MicroBatching& mb, int64_t now_ns) {
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
  MicroBatchQueue& q = st.queue;
  // The queue holds updates of one interval per window.
  if (q.updates > 0 && epochs != q.epochs) (void)Flush(set, st);
  if (q.updates == 0) {
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
  if (q.rows >= mb.max_rows || q.updates >= mb.max_updates || now_ns - q.since_ns >= mb.max_delay_us * 1000) {
    return Flush(set, st);
  }
  return absl::OkStatus();
}

}  // namespace tally::engine::internal
