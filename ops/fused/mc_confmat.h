// Fused multiclass confusion-matrix kernel: one pass over the rows does the
// row argmax (or reads the label), the range checks and the counting.
//
// Semantics are exactly those of mc_confmat's decomposition
// (ops/decompositions.cc): argmax picks the first maximum and treats NaN as
// the largest value (as ATen does); rows whose target is `ignore_index` are
// skipped; a target (or integer label) outside [0, C) is counted and its row
// skipped.
#ifndef TALLY_OPS_FUSED_MC_CONFMAT_H_
#define TALLY_OPS_FUSED_MC_CONFMAT_H_

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>
#include <c10/util/string_view.h>

#include <tuple>

namespace tally::ops::fused {

// McConfmatCpu returns (confmat i64[C, C], bad_target i64[], bad_preds i64[]).
// With `weight` (float64 [N], every weight finite and >= 0) each kept row
// adds its weight instead of 1, and the matrix is float64.
std::tuple<at::Tensor, at::Tensor, at::Tensor> McConfmatCpu(const at::Tensor& preds, const at::Tensor& target,
                                                            int64_t num_classes, c10::optional<int64_t> ignore_index,
                                                            const c10::optional<at::Tensor>& weight = c10::nullopt);
// McConfmatMeta returns tensors of the result shapes on the inputs' device.
std::tuple<at::Tensor, at::Tensor, at::Tensor> McConfmatMeta(const at::Tensor& preds, const at::Tensor& target,
                                                             int64_t num_classes, c10::optional<int64_t> ignore_index,
                                                             const c10::optional<at::Tensor>& weight);

// McMarginalsCpu is mc_marginals: the same rows and checks, counted into the
// per-class parts listed in `parts` ("tp,target,pred,abs_err,sq_err", any
// subset in any order; ops/confmat_parts.h) instead of the C x C matrix.
// Returns (marginals i64[P, C], bad_target i64[], bad_preds i64[]); with
// `totals` each part summed over the classes, i64[P]. With `weight`, weight
// sums, float64, as McConfmatCpu.
std::tuple<at::Tensor, at::Tensor, at::Tensor> McMarginalsCpu(const at::Tensor& preds, const at::Tensor& target,
                                                              int64_t num_classes, c10::optional<int64_t> ignore_index,
                                                              c10::string_view parts, bool totals,
                                                              const c10::optional<at::Tensor>& weight = c10::nullopt);
std::tuple<at::Tensor, at::Tensor, at::Tensor> McMarginalsMeta(const at::Tensor& preds, const at::Tensor& target,
                                                               int64_t num_classes, c10::optional<int64_t> ignore_index,
                                                               c10::string_view parts, bool totals,
                                                               const c10::optional<at::Tensor>& weight);

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_MC_CONFMAT_H_
