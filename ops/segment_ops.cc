// Segment ops over rows grouped by a sorted int64 key (retrieval's query ids):
//   segment_sort(keys, scores, extra...) -> every input reordered so that keys
//     ascend and, within a key, scores descend (stable: ties keep row order);
//   segment_scan(x, keys, more_keys...) -> (inclusive cumulative sum of x
//     within each run of rows whose keys all equal the previous row's, the
//     run's total broadcast to each of its rows); extra keys (e.g. the
//     scores) split a query into runs of ties. x may be [N, ...] (rows along
//     dim 0, e.g. a [N, K] matrix of per-position hits): each column is
//     scanned alike.
// Both keep every result [N] on the inputs' device, so a metric reduces per
// query with a mask (e.g. the last row of each run) and needs neither a
// data-dependent number of queries nor a host loop.
#include "ops/op_registry.h"
#include "support/status_macros.h"

namespace tally::ops {
namespace {

using ir::DType;
using ir::TensorType;
using Types = absl::StatusOr<std::vector<TensorType>>;

absl::Status CheckRows(const std::vector<TensorType>& in) {
  for (const TensorType& t : in) {
    if (t.rank() != 1) return absl::InvalidArgumentError("expects 1-D operands");
    if (!(t.shape[0] == in[0].shape[0])) return absl::InvalidArgumentError("operands must have the same rows");
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterSegmentOps(OpTable& t) {
  auto add = [&t](OpDef d) { AddOp(t, std::move(d)); };
  add(MakeOp(OpId::kSegmentSort, 2, 8, {},
             [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
               TALLY_RETURN_IF_ERROR(CheckRows(in));
               if (in[0].dtype != DType::kInt64) return absl::InvalidArgumentError("keys must be int64");
               if (in[1].dtype == DType::kBool) return absl::InvalidArgumentError("scores must be numeric");
               return in;
             }));
  add(MakeOp(OpId::kSegmentScan, 2, 4, {},
             [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
               if (in[0].rank() < 1) return absl::InvalidArgumentError("expects x with rows along dim 0");
               TALLY_RETURN_IF_ERROR(CheckRows({in.begin() + 1, in.end()}));
               if (!(in[0].shape[0] == in[1].shape[0]))
                 return absl::InvalidArgumentError("operands must have the same rows");
               if (in[1].dtype != DType::kInt64) return absl::InvalidArgumentError("keys must be int64");
               for (size_t i = 2; i < in.size(); ++i) {
                 if (in[i].dtype == DType::kBool) return absl::InvalidArgumentError("extra keys must be numeric");
               }
               TensorType out = in[0];
               if (!ir::IsFloating(out.dtype)) out.dtype = DType::kInt64;
               return std::vector<TensorType>{out, out};
             }));
}

}  // namespace tally::ops
