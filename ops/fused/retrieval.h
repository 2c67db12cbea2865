// Fused retrieval kernels: the update's target check, the query grouping of
// segment_sort, and the per-query scores of retrieval_score, each one pass
// (or one sort) on the CPU instead of dozens of ATen calls.
//
// Semantics are exactly those of the ops' decompositions and of segment_sort's
// ATen kernel (ops/retrieval_ops.cc, ops/segment_ops.cc).
#ifndef TALLY_OPS_FUSED_RETRIEVAL_H_
#define TALLY_OPS_FUSED_RETRIEVAL_H_

#include <ATen/core/Tensor.h>
#include <c10/util/Optional.h>
#include <c10/util/string_view.h>

#include <tuple>

namespace tally::ops::fused {

// CountInvalidCpu returns (values of `target` that are not 0/1, values that
// are not >= 0), ignore_index excepted, from one pass.
std::tuple<at::Tensor, at::Tensor> CountInvalidCpu(const at::Tensor& target, c10::optional<int64_t> ignore_index);
std::tuple<at::Tensor, at::Tensor> CountInvalidMeta(const at::Tensor& target, c10::optional<int64_t> ignore_index);

// RetrievalScoreCpu returns (the queries' scores aggregated f64[], queries
// without positives i64[]) over rows sorted by segment_sort; `aggregation`
// is mean, median (the lower middle, as torch.median), min or max. With
// row weights (f64 [N], mean only) each query weighs the mean of its rows'.
std::tuple<at::Tensor, at::Tensor> RetrievalScoreCpu(const at::Tensor& keys, const at::Tensor& preds,
                                                     const at::Tensor& target, c10::string_view metric,
                                                     c10::string_view empty_target_action, bool adaptive_k,
                                                     c10::optional<int64_t> top_k, c10::optional<int64_t> ignore_index,
                                                     c10::string_view aggregation,
                                                     const c10::optional<at::Tensor>& weight);
std::tuple<at::Tensor, at::Tensor> RetrievalScoreMeta(const at::Tensor& keys, const at::Tensor& preds,
                                                      const at::Tensor& target, c10::string_view metric,
                                                      c10::string_view empty_target_action, bool adaptive_k,
                                                      c10::optional<int64_t> top_k, c10::optional<int64_t> ignore_index,
                                                      c10::string_view aggregation,
                                                      const c10::optional<at::Tensor>& weight);

// SegmentSortPermutationCpu returns the i64 permutation that orders rows by
// key ascending, then score descending (NaN first), ties in row order — what
// two stable ATen sorts give — with a counting or radix sort on the keys and
// a small sort per query. keys: i64 [N]; scores: f32/f64 [N].
at::Tensor SegmentSortPermutationCpu(const at::Tensor& keys, const at::Tensor& scores);

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_RETRIEVAL_H_
