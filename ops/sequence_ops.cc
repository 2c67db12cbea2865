// Ops over token sequences, one per row: preds and target are integer
// [N, L] ids in which a negative id is padding (skipped wherever it is).
//   edit_distance(preds, target) {substitution_cost} -> i64 [N, 3]: per row
//     the Levenshtein distance between the two id sequences (insertions and
//     deletions cost 1, a substitution substitution_cost), then the lengths
//     of preds and of target (ops/fused/edit_distance.h).
#include "ops/attrs.h"
#include "ops/op_registry.h"

namespace tally::ops {
namespace {

using ir::DType;
using ir::TensorType;
using Types = absl::StatusOr<std::vector<TensorType>>;

}  // namespace

void RegisterSequenceOps(OpTable& t) {
  AddOp(t, MakeOp(OpId::kEditDistance, 2, 2, SpecsOf<EditDistanceAttrs>(),
                  [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
                    for (const TensorType& x : in) {
                      if (x.rank() != 2 || !ir::IsIntegral(x.dtype) || x.dtype == DType::kBool) {
                        return absl::InvalidArgumentError("expects integer [N, L] token ids");
                      }
                    }
                    if (!(in[0].shape[0] == in[1].shape[0])) {
                      return absl::InvalidArgumentError("preds and target must have the same rows");
                    }
                    if (AttrsOf<EditDistanceAttrs>(a).substitution_cost < 0) {
                      return absl::InvalidArgumentError("substitution_cost must be >= 0");
                    }
                    return std::vector<TensorType>{{DType::kInt64, {in[0].shape[0], ir::Dim::Fixed(3)}, in[0].device}};
                  }));
}

}  // namespace tally::ops
