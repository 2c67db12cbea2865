// Host helpers of the token-sequence kernels (edit_distance, lcs_length,
// ter_edits): integer ids in which a negative id is padding, skipped
// wherever it stands.
#ifndef TALLY_OPS_FUSED_TOKEN_IDS_H_
#define TALLY_OPS_FUSED_TOKEN_IDS_H_

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cstdint>
#include <vector>

namespace tally::ops::fused {

// Ids sets `out` to the non-negative ids of `row` (length l).
inline void Ids(const int64_t* row, int64_t l, std::vector<int64_t>& out) {
  out.clear();
  for (int64_t k = 0; k < l; ++k) {
    if (row[k] >= 0) out.push_back(row[k]);
  }
}

// PerReference is int64 [N, R]: score(hypothesis ids, reference ids) for
// every row of preds [N, Lp] (CPU) and each of its references target
// [N, R, Lt], rows spread over the threads. `score` must be thread-safe;
// each thread keeps its own `Scratch`.
template <typename Scratch, typename Score>
at::Tensor PerReference(const at::Tensor& preds, const at::Tensor& target, Score score) {
  const at::Tensor p = preds.to(at::kLong).contiguous();
  const at::Tensor t = target.to(at::kLong).contiguous();
  const int64_t n = p.size(0), refs = t.size(1), lp = p.size(1), lt = t.size(2);
  at::Tensor out = at::empty({n, refs}, preds.options().dtype(at::kLong));
  const int64_t* pd = p.data_ptr<int64_t>();
  const int64_t* td = t.data_ptr<int64_t>();
  int64_t* od = out.data_ptr<int64_t>();
  at::parallel_for(0, n, 16, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> a, b;
    Scratch scratch;
    for (int64_t r = begin; r < end; ++r) {
      Ids(pd + r * lp, lp, a);
      for (int64_t q = 0; q < refs; ++q) {
        Ids(td + (r * refs + q) * lt, lt, b);
        od[r * refs + q] = score(a, b, scratch);
      }
    }
  });
  return out;
}

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_TOKEN_IDS_H_
