#include "ops/fused/mc_confmat.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <immintrin.h>

#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

namespace tally::ops::fused {
namespace {

// RowArgmax is ATen's argmax of one row: the first maximum, NaN largest.
// The common path is branch-free (selects, no data-dependent jumps); a row
// holding a NaN takes the exact slow path.
template <typename T>
inline int64_t RowArgmaxSlow(const T* row, int64_t c) {
  int64_t best = 0;
  T bv = row[0];
  if (std::isnan(bv)) return 0;
  for (int64_t j = 1; j < c; ++j) {
    T v = row[j];
    if (std::isnan(v)) return j;
    if (v > bv) {
      bv = v;
      best = j;
    }
  }
  return best;
}

template <typename T>
inline int64_t RowArgmax(const T* row, int64_t c) {
  T bv = row[0];
  int64_t best = 0;
  bool nan = bv != bv;
  for (int64_t j = 1; j < c; ++j) {
    T v = row[j];
    bool gt = v > bv;
    bv = gt ? v : bv;
    best = gt ? j : best;
    nan |= v != v;
  }
  return nan ? RowArgmaxSlow(row, c) : best;
}

struct Counts {
  std::vector<int64_t> cm;
  int64_t bad_t = 0, bad_p = 0;
};

// CountRows counts rows [begin, end). kC > 0 fixes the class count at
// compile time (small C: the argmax loop unrolls into selects); kC == 0 reads
// it from `c`.
template <int kC, typename P, typename L>
void CountRows(const P* preds, const L* target, bool scores, int64_t c_dyn, bool has_ignore,
               int64_t ignore, int64_t begin, int64_t end, Counts& out) {
  const int64_t c = kC > 0 ? kC : c_dyn;
  int64_t* cm = out.cm.data();
  // Local counters: the per-thread Counts share cache lines.
  int64_t bad_t = 0, bad_p = 0;
  for (int64_t i = begin; i < end; ++i) {
    int64_t t = static_cast<int64_t>(target[i]);
    if (has_ignore && t == ignore) continue;
    bool bt = t < 0 || t >= c;
    int64_t label;
    bool bp = false;
    if (scores) {
      label = RowArgmax(preds + i * c, c);
    } else {
      label = static_cast<int64_t>(preds[i]);
      bp = label < 0 || label >= c;
    }
    bad_t += bt;
    bad_p += bp;
    if (!bt && !bp) ++cm[t * c + label];
  }
  out.bad_t += bad_t;
  out.bad_p += bad_p;
}

// CountRowsAvx2 is CountRows for float32 scores with 2 <= C <= 16: each row
// is two masked 8-lane loads, a horizontal max, and the first lane equal to
// it (the first maximum, as ATen's argmax). Rows holding a NaN take
// RowArgmaxSlow. About 4x fewer instructions per row than the scalar loop.
template <typename L>
__attribute__((target("avx2,bmi"))) void CountRowsAvx2(const float* preds, const L* target, int64_t c,
                                                        bool has_ignore, int64_t ignore, int64_t begin,
                                                        int64_t end, Counts& out) {
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i mask0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<int64_t>(c, 8))), lane);
  const __m256i mask1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::max<int64_t>(c - 8, 0))), lane);
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  int64_t* cm = out.cm.data();
  int64_t bad_t = 0;
  for (int64_t i = begin; i < end; ++i) {
    int64_t t = static_cast<int64_t>(target[i]);
    if (has_ignore && t == ignore) continue;
    if (t < 0 || t >= c) {
      ++bad_t;
      continue;
    }
    const float* row = preds + i * c;
    __m256 v0 = _mm256_blendv_ps(ninf, _mm256_maskload_ps(row, mask0), _mm256_castsi256_ps(mask0));
    __m256 v1 = _mm256_blendv_ps(ninf, _mm256_maskload_ps(row + 8, mask1), _mm256_castsi256_ps(mask1));
    int nan = _mm256_movemask_ps(
        _mm256_or_ps(_mm256_cmp_ps(v0, v0, _CMP_UNORD_Q), _mm256_cmp_ps(v1, v1, _CMP_UNORD_Q)));
    int64_t label;
    if (nan) {
      label = RowArgmaxSlow(row, c);
    } else {
      __m256 m = _mm256_max_ps(v0, v1);
      m = _mm256_max_ps(m, _mm256_permute2f128_ps(m, m, 1));
      m = _mm256_max_ps(m, _mm256_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
      m = _mm256_max_ps(m, _mm256_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
      unsigned eq = static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(v0, m, _CMP_EQ_OQ))) |
                    (static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(v1, m, _CMP_EQ_OQ))) << 8);
      label = __builtin_ctz(eq);
    }
    ++cm[t * c + label];
  }
  out.bad_t += bad_t;
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi");
  return has;
}

template <typename P, typename L>
using CountFn = void (*)(const P*, const L*, bool, int64_t, bool, int64_t, int64_t, int64_t, Counts&);

template <typename P, typename L, int... kCs>
CountFn<P, L> PickCounter(int64_t c, std::integer_sequence<int, kCs...>) {
  CountFn<P, L> fn = &CountRows<0, P, L>;
  ((c == kCs ? (fn = &CountRows<kCs, P, L>, 0) : 0), ...);
  return fn;
}

template <typename P, typename L>
void Run(const at::Tensor& preds, const at::Tensor& target, bool scores, int64_t c,
         c10::optional<int64_t> ignore_index, int64_t* cm_out, Counts& total) {
  const P* p = preds.data_ptr<P>();
  const L* t = target.data_ptr<L>();
  int64_t n = target.size(0);
  int64_t threads = at::get_num_threads();
  CountFn<P, L> count = scores ? PickCounter<P, L>(c, std::integer_sequence<int, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16>{})
                                : &CountRows<0, P, L>;
  bool avx2 = scores && std::is_same<P, float>::value && c >= 2 && c <= 16 && HasAvx2();
  auto count_range = [&](int64_t begin, int64_t end, Counts& into) {
    if constexpr (std::is_same<P, float>::value) {
      if (avx2) {
        CountRowsAvx2<L>(p, t, c, ignore_index.has_value(), ignore_index.value_or(0), begin, end, into);
        return;
      }
    }
    count(p, t, scores, c, ignore_index.has_value(), ignore_index.value_or(0), begin, end, into);
  };
  // Private histograms per thread; one thread when C^2 is large or the batch small.
  const int64_t grain = 32768;
  if (n <= grain || threads == 1 || c * c * threads > (1 << 22)) {
    total.cm.assign(c * c, 0);
    count_range(0, n, total);
  } else {
    std::vector<Counts> parts(threads);
    for (auto& part : parts) part.cm.assign(c * c, 0);
    at::parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
      count_range(begin, end, parts[at::get_thread_num()]);
    });
    total.cm.assign(c * c, 0);
    for (const auto& part : parts) {
      for (int64_t k = 0; k < c * c; ++k) total.cm[k] += part.cm[k];
      total.bad_t += part.bad_t;
      total.bad_p += part.bad_p;
    }
  }
  std::copy(total.cm.begin(), total.cm.end(), cm_out);
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> McConfmatCpu(const at::Tensor& preds_in,
                                                            const at::Tensor& target_in,
                                                            int64_t c,
                                                            c10::optional<int64_t> ignore_index) {
  TORCH_CHECK(target_in.dim() == 1, "mc_confmat: target must be [N]");
  bool scores = at::isFloatingType(preds_in.scalar_type());
  TORCH_CHECK(scores ? (preds_in.dim() == 2 && preds_in.size(1) == c) : preds_in.dim() == 1,
              "mc_confmat: preds must be [N, C] scores or [N] labels");
  at::Tensor preds = preds_in.contiguous();
  at::Tensor target = target_in.contiguous();
  Counts total;
  auto opts = target.options().dtype(at::kLong);
  at::Tensor cm = at::empty({c, c}, opts);
  int64_t* cm_out = cm.data_ptr<int64_t>();
  auto dispatch_target = [&](auto p_tag) {
    using P = decltype(p_tag);
    if (target.scalar_type() == at::kLong) Run<P, int64_t>(preds, target, scores, c, ignore_index, cm_out, total);
    else if (target.scalar_type() == at::kInt) Run<P, int32_t>(preds, target, scores, c, ignore_index, cm_out, total);
    else TORCH_CHECK(false, "mc_confmat: target must be int32 or int64");
  };
  switch (preds.scalar_type()) {
    case at::kFloat: dispatch_target(float{}); break;
    case at::kDouble: dispatch_target(double{}); break;
    case at::kLong: dispatch_target(int64_t{}); break;
    case at::kInt: dispatch_target(int32_t{}); break;
    default: TORCH_CHECK(false, "mc_confmat: unsupported preds dtype");
  }
  return {cm, at::scalar_tensor(total.bad_t, opts), at::scalar_tensor(total.bad_p, opts)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> McConfmatMeta(const at::Tensor&, const at::Tensor& target,
                                                             int64_t c, c10::optional<int64_t>) {
  auto opts = target.options().dtype(at::kLong);
  return {at::empty({c, c}, opts), at::empty({}, opts), at::empty({}, opts)};
}

}  // namespace tally::ops::fused
