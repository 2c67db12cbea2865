// Fused binary/multilabel confusion-matrix kernel: the labelling, the value
// checks and the counting of TorchMetrics' binary and multilabel inputs in
// two passes over the rows (a range scan of float preds that decides whether
// they are logits, then the counting pass).
//
// Semantics are exactly those of bl_confmat's decomposition
// (ops/decompositions.cc), which is the primitive path of
// metrics/classification/stats.cc:
//   - float preds are sigmoided when any element (with `logits_over_kept` and
//     an ignore_index: any element whose target is not ignore_index) is
//     outside [0, 1] or NaN, then compared `> threshold` in the preds dtype
//     (the threshold rounded to float32 for float32 preds). The sigmoid is
//     ATen's, computed on the whole preds tensor, so every element gets the
//     bits the decomposition gets (ATen's vectorized and scalar sigmoid
//     paths differ in the last bit, and a value next to the threshold can
//     flip on it);
//   - int32/int64 preds are labels `== 1`, and values other than 0 and 1 are
//     bad; bool preds are labels;
//   - targets (int32, int64 or bool) other than 0 and 1 are bad;
//   - elements whose target is ignore_index are skipped and never bad;
//   - a row (dim 0) holding a bad element is skipped entirely; bad elements
//     are counted one by one.
#ifndef TALLY_OPS_FUSED_BL_CONFMAT_H_
#define TALLY_OPS_FUSED_BL_CONFMAT_H_

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>

#include <tuple>

namespace tally::ops::fused {

// BlConfmatCpu takes preds and target of one shape, [N] or [N, L], and
// returns (confmat i64[2, 2] for [N] inputs or i64[L, 2, 2] for [N, L],
// indexed [label][target][pred]; bad_target i64[]; bad_preds i64[]).
std::tuple<at::Tensor, at::Tensor, at::Tensor> BlConfmatCpu(const at::Tensor& preds, const at::Tensor& target,
                                                            double threshold, bool logits_over_kept,
                                                            c10::optional<int64_t> ignore_index);
// BlConfmatMeta returns tensors of the result shapes on the inputs' device.
std::tuple<at::Tensor, at::Tensor, at::Tensor> BlConfmatMeta(const at::Tensor& preds, const at::Tensor& target,
                                                             double threshold, bool logits_over_kept,
                                                             c10::optional<int64_t> ignore_index);

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_BL_CONFMAT_H_
