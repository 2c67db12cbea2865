// Fused multiclass confusion-matrix kernel: one pass over the rows does the
// row argmax (or reads the label), the range checks and the counting.
//
// Semantics are exactly those of mc_confmat's decomposition
// (ops/decompositions.cc): argmax picks the first maximum and treats NaN as
// the largest value (as ATen does); rows whose target is `ignore_index` are
// skipped; a target (or integer label) outside [0, C) is counted and its row
// skipped.
//
// Optional operands: `weight` (float [N], any float dtype): each kept row
// adds its weight instead of 1 and the counts are float64; a negative, NaN or
// infinite weight counts as 0 (metrics/weights.h counts those as an error).
// `groups` (integer [N]) with `num_groups` = G: the result gains a leading
// [G] axis and row i counts in group groups[i]; a row whose id is outside
// [0, G) counts in none (its bad target or pred is still counted).
#ifndef TALLY_OPS_FUSED_MC_CONFMAT_H_
#define TALLY_OPS_FUSED_MC_CONFMAT_H_

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>
#include <c10/util/string_view.h>

#include <tuple>

namespace tally::ops::fused {

// McConfmatCpu returns (confmat i64[C, C] ([G, C, C] with groups),
// bad_target i64[], bad_preds i64[]).
std::tuple<at::Tensor, at::Tensor, at::Tensor> McConfmatCpu(const at::Tensor& preds, const at::Tensor& target,
                                                            int64_t num_classes, c10::optional<int64_t> ignore_index,
                                                            const c10::optional<at::Tensor>& weight = c10::nullopt,
                                                            const c10::optional<at::Tensor>& groups = c10::nullopt,
                                                            int64_t num_groups = 0);
// McConfmatMeta returns tensors of the result shapes on the inputs' device.
std::tuple<at::Tensor, at::Tensor, at::Tensor> McConfmatMeta(const at::Tensor& preds, const at::Tensor& target,
                                                             int64_t num_classes, c10::optional<int64_t> ignore_index,
                                                             const c10::optional<at::Tensor>& weight,
                                                             const c10::optional<at::Tensor>& groups,
                                                             int64_t num_groups);

// McMarginalsCpu is mc_marginals: the same rows and checks, counted into the
// per-class parts listed in `parts` ("tp,target,pred,abs_err,sq_err", any
// subset in any order; ops/confmat_parts.h) instead of the C x C matrix.
// Returns (marginals i64[P, C], bad_target i64[], bad_preds i64[]); with
// `totals` each part summed over the classes, i64[P]. Weights and groups as
// McConfmatCpu ([G, P, C] or [G, P] with groups).
std::tuple<at::Tensor, at::Tensor, at::Tensor> McMarginalsCpu(const at::Tensor& preds, const at::Tensor& target,
                                                              int64_t num_classes, c10::optional<int64_t> ignore_index,
                                                              c10::string_view parts, bool totals,
                                                              const c10::optional<at::Tensor>& weight = c10::nullopt,
                                                              const c10::optional<at::Tensor>& groups = c10::nullopt,
                                                              int64_t num_groups = 0);
std::tuple<at::Tensor, at::Tensor, at::Tensor> McMarginalsMeta(const at::Tensor& preds, const at::Tensor& target,
                                                               int64_t num_classes, c10::optional<int64_t> ignore_index,
                                                               c10::string_view parts, bool totals,
                                                               const c10::optional<at::Tensor>& weight,
                                                               const c10::optional<at::Tensor>& groups,
                                                               int64_t num_groups);

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_MC_CONFMAT_H_
