#include "ops/fused/mc_confmat.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <immintrin.h>

#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "ops/confmat_parts.h"

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

// RowArgmaxWide is RowArgmax for long float32 rows (C >= 32): a vector max
// with four accumulators, then the first element equal to it. Two passes
// over a row that stays in cache; a NaN anywhere takes the exact slow path.
__attribute__((target("avx2,bmi"))) int64_t RowArgmaxWide(const float* row, int64_t c) {
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  __m256 m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf, m4 = ninf, m5 = ninf, m6 = ninf, m7 = ninf;
  __m256 nan = _mm256_setzero_ps(), nan2 = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 64 <= c; j += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(row + j + 512), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(row + j + 528), _MM_HINT_T0);
    __m256 v0 = _mm256_loadu_ps(row + j), v1 = _mm256_loadu_ps(row + j + 8);
    __m256 v2 = _mm256_loadu_ps(row + j + 16), v3 = _mm256_loadu_ps(row + j + 24);
    __m256 v4 = _mm256_loadu_ps(row + j + 32), v5 = _mm256_loadu_ps(row + j + 40);
    __m256 v6 = _mm256_loadu_ps(row + j + 48), v7 = _mm256_loadu_ps(row + j + 56);
    nan = _mm256_or_ps(nan, _mm256_or_ps(_mm256_cmp_ps(v0, v1, _CMP_UNORD_Q), _mm256_cmp_ps(v2, v3, _CMP_UNORD_Q)));
    nan2 = _mm256_or_ps(nan2, _mm256_or_ps(_mm256_cmp_ps(v4, v5, _CMP_UNORD_Q), _mm256_cmp_ps(v6, v7, _CMP_UNORD_Q)));
    m0 = _mm256_max_ps(m0, v0);
    m1 = _mm256_max_ps(m1, v1);
    m2 = _mm256_max_ps(m2, v2);
    m3 = _mm256_max_ps(m3, v3);
    m4 = _mm256_max_ps(m4, v4);
    m5 = _mm256_max_ps(m5, v5);
    m6 = _mm256_max_ps(m6, v6);
    m7 = _mm256_max_ps(m7, v7);
  }
  nan = _mm256_or_ps(nan, nan2);
  m0 = _mm256_max_ps(_mm256_max_ps(m0, m4), _mm256_max_ps(m1, m5));
  m2 = _mm256_max_ps(_mm256_max_ps(m2, m6), _mm256_max_ps(m3, m7));
  m1 = m3 = ninf;
  for (; j + 8 <= c; j += 8) {
    __m256 v = _mm256_loadu_ps(row + j);
    nan = _mm256_or_ps(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    m0 = _mm256_max_ps(m0, v);
  }
  if (_mm256_movemask_ps(nan) != 0) return RowArgmaxSlow(row, c);
  __m256 m = _mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3));
  m = _mm256_max_ps(m, _mm256_permute2f128_ps(m, m, 1));
  m = _mm256_max_ps(m, _mm256_shuffle_ps(m, m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm256_max_ps(m, _mm256_shuffle_ps(m, m, _MM_SHUFFLE(2, 3, 0, 1)));
  float best = _mm256_cvtss_f32(m);
  for (; j < c; ++j) {
    float v = row[j];
    if (v != v) return RowArgmaxSlow(row, c);
    best = v > best ? v : best;
  }
  const __m256 b = _mm256_set1_ps(best);
  int64_t k = 0;
  for (; k + 8 <= c; k += 8) {
    unsigned eq = static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(row + k), b, _CMP_EQ_OQ)));
    if (eq != 0) return k + __builtin_ctz(eq);
  }
  for (; k < c; ++k) {
    if (row[k] == best) return k;
  }
  return 0;
}

bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi");
  return has;
}

// Layout says where one kept row (target t, label l) is counted: in the
// C x C matrix, or in the rows of the parts mc_marginals keeps (offsets into
// the buffer; -1 for a part not kept).
struct Layout {
  int64_t c = 0;
  int64_t size = 0;  // buffer elements
  int64_t tp = -1, target = -1, pred = -1, abs_err = -1, sq_err = -1;
};

template <bool kMatrix>
inline void Add(const Layout& lay, int64_t* buf, int64_t t, int64_t l) {
  if constexpr (kMatrix) {
    ++buf[t * lay.c + l];
  } else {
    if (lay.tp >= 0 && t == l) ++buf[lay.tp + t];
    if (lay.target >= 0) ++buf[lay.target + t];
    if (lay.pred >= 0) ++buf[lay.pred + l];
    const int64_t d = t - l;
    if (lay.abs_err >= 0) buf[lay.abs_err + t] += d < 0 ? -d : d;
    if (lay.sq_err >= 0) buf[lay.sq_err + t] += d * d;
  }
}

// Counts is one thread's buffer (`cm`: the output itself, or `owned`) and
// its bad-value counts.
struct Counts {
  int64_t* cm = nullptr;
  std::vector<int64_t> owned;
  int64_t bad_t = 0, bad_p = 0;
};

// CountRows counts rows [begin, end). kC > 0 fixes the class count at
// compile time (small C: the argmax loop unrolls into selects); kC == 0 reads
// it from `c`.
template <bool kMatrix, int kC, typename P, typename L>
void CountRows(const P* preds, const L* target, bool scores, const Layout& lay, bool has_ignore, int64_t ignore,
               int64_t begin, int64_t end, Counts& out) {
  const int64_t c = kC > 0 ? kC : lay.c;
  const bool wide = std::is_same<P, float>::value && kC == 0 && c >= 32 && HasAvx2();
  int64_t* cm = out.cm;
  // Local counters: the per-thread Counts share cache lines.
  int64_t bad_t = 0, bad_p = 0;
  for (int64_t i = begin; i < end; ++i) {
    int64_t t = static_cast<int64_t>(target[i]);
    if (has_ignore && t == ignore) continue;
    bool bt = t < 0 || t >= c;
    int64_t label;
    bool bp = false;
    if (scores) {
      if constexpr (std::is_same<P, float>::value) {
        label = wide ? RowArgmaxWide(preds + i * c, c) : RowArgmax(preds + i * c, c);
      } else {
        label = RowArgmax(preds + i * c, c);
      }
    } else {
      label = static_cast<int64_t>(preds[i]);
      bp = label < 0 || label >= c;
    }
    bad_t += bt;
    bad_p += bp;
    if (!bt && !bp) Add<kMatrix>(lay, cm, t, label);
  }
  out.bad_t += bad_t;
  out.bad_p += bad_p;
}

// CountRowsAvx2 is CountRows for float32 scores with 2 <= C <= 16: each row
// is two masked 8-lane loads, a horizontal max, and the first lane equal to
// it (the first maximum, as ATen's argmax). Rows holding a NaN take
// RowArgmaxSlow. About 4x fewer instructions per row than the scalar loop.
template <bool kMatrix, typename L>
__attribute__((target("avx2,bmi"))) void CountRowsAvx2(const float* preds, const L* target, const Layout& lay,
                                                       bool has_ignore, int64_t ignore, int64_t begin, int64_t end,
                                                       Counts& out) {
  const int64_t c = lay.c;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i mask0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<int64_t>(c, 8))), lane);
  const __m256i mask1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::max<int64_t>(c - 8, 0))), lane);
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  int64_t* cm = out.cm;
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
    int nan =
        _mm256_movemask_ps(_mm256_or_ps(_mm256_cmp_ps(v0, v0, _CMP_UNORD_Q), _mm256_cmp_ps(v1, v1, _CMP_UNORD_Q)));
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
    Add<kMatrix>(lay, cm, t, label);
  }
  out.bad_t += bad_t;
}

template <typename P, typename L>
using CountFn = void (*)(const P*, const L*, bool, const Layout&, bool, int64_t, int64_t, int64_t, Counts&);

template <bool kMatrix, typename P, typename L, int... kCs>
CountFn<P, L> PickCounter(int64_t c, std::integer_sequence<int, kCs...>) {
  CountFn<P, L> fn = &CountRows<kMatrix, 0, P, L>;
  ((c == kCs ? (fn = &CountRows<kMatrix, kCs, P, L>, 0) : 0), ...);
  return fn;
}

template <bool kMatrix, typename P, typename L>
void Run(const at::Tensor& preds, const at::Tensor& target, bool scores, const Layout& lay,
         c10::optional<int64_t> ignore_index, int64_t* out, Counts& total) {
  const P* p = preds.data_ptr<P>();
  const L* t = target.data_ptr<L>();
  const int64_t c = lay.c;
  int64_t n = target.size(0);
  int64_t threads = at::get_num_threads();
  CountFn<P, L> count = scores
                            ? PickCounter<kMatrix, P, L>(
                                  c, std::integer_sequence<int, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16>{})
                            : &CountRows<kMatrix, 0, P, L>;
  bool avx2 = scores && std::is_same<P, float>::value && c >= 2 && c <= 16 && HasAvx2();
  auto count_range = [&](int64_t begin, int64_t end, Counts& into) {
    if constexpr (std::is_same<P, float>::value) {
      if (avx2) {
        CountRowsAvx2<kMatrix, L>(p, t, lay, ignore_index.has_value(), ignore_index.value_or(0), begin, end, into);
        return;
      }
    }
    count(p, t, scores, lay, ignore_index.has_value(), ignore_index.value_or(0), begin, end, into);
  };
  // Private buffers per thread; one thread when the buffer is large or the
  // batch small. Long score rows split into chunks of about 2^18 elements.
  const int64_t grain = scores && c > 16 ? std::max<int64_t>(1, (int64_t{1} << 18) / c) : 32768;
  if (n <= grain || threads == 1 || lay.size * threads > (1 << 22)) {
    // One thread counts straight into the output: a large matrix is never
    // allocated twice.
    std::fill(out, out + lay.size, int64_t{0});
    total.cm = out;
    count_range(0, n, total);
    return;
  }
  std::vector<Counts> parts(threads);
  for (auto& part : parts) {
    part.owned.assign(lay.size, 0);
    part.cm = part.owned.data();
  }
  at::parallel_for(0, n, grain,
                   [&](int64_t begin, int64_t end) { count_range(begin, end, parts[at::get_thread_num()]); });
  std::fill(out, out + lay.size, int64_t{0});
  for (const auto& part : parts) {
    for (int64_t k = 0; k < lay.size; ++k) out[k] += part.cm[k];
    total.bad_t += part.bad_t;
    total.bad_p += part.bad_p;
  }
}

// Count checks the inputs, dispatches on their dtypes and counts into `out`
// (lay.size elements); returns (bad_target, bad_preds).
template <bool kMatrix>
std::pair<int64_t, int64_t> Count(const char* op, const at::Tensor& preds_in, const at::Tensor& target_in,
                                  const Layout& lay, c10::optional<int64_t> ignore_index, int64_t* out) {
  const int64_t c = lay.c;
  TORCH_CHECK(target_in.dim() == 1, op, ": target must be [N]");
  bool scores = at::isFloatingType(preds_in.scalar_type());
  TORCH_CHECK(scores ? (preds_in.dim() == 2 && preds_in.size(1) == c) : preds_in.dim() == 1, op,
              ": preds must be [N, C] scores or [N] labels");
  at::Tensor preds = preds_in.contiguous();
  at::Tensor target = target_in.contiguous();
  Counts total;
  auto dispatch_target = [&](auto p_tag) {
    using P = decltype(p_tag);
    if (target.scalar_type() == at::kLong)
      Run<kMatrix, P, int64_t>(preds, target, scores, lay, ignore_index, out, total);
    else if (target.scalar_type() == at::kInt)
      Run<kMatrix, P, int32_t>(preds, target, scores, lay, ignore_index, out, total);
    else
      TORCH_CHECK(false, op, ": target must be int32 or int64");
  };
  switch (preds.scalar_type()) {
    case at::kFloat:
      dispatch_target(float{});
      break;
    case at::kDouble:
      dispatch_target(double{});
      break;
    case at::kLong:
      dispatch_target(int64_t{});
      break;
    case at::kInt:
      dispatch_target(int32_t{});
      break;
    default:
      TORCH_CHECK(false, op, ": unsupported preds dtype");
  }
  return {total.bad_t, total.bad_p};
}

// MarginalLayout places the listed parts as consecutive rows of C.
Layout MarginalLayout(int64_t c, const std::vector<ConfmatPart>& parts) {
  Layout lay;
  lay.c = c;
  lay.size = c * static_cast<int64_t>(parts.size());
  for (size_t i = 0; i < parts.size(); ++i) {
    int64_t off = c * static_cast<int64_t>(i);
    switch (parts[i]) {
      case ConfmatPart::kTp:
        lay.tp = off;
        break;
      case ConfmatPart::kTarget:
        lay.target = off;
        break;
      case ConfmatPart::kPred:
        lay.pred = off;
        break;
      case ConfmatPart::kAbsErr:
        lay.abs_err = off;
        break;
      case ConfmatPart::kSqErr:
        lay.sq_err = off;
        break;
    }
  }
  return lay;
}

std::vector<ConfmatPart> PartsOrThrow(c10::string_view text) {
  auto parts = ParseConfmatParts(absl::string_view(text.data(), text.size()));
  TORCH_CHECK(parts.ok(), "mc_marginals: ", std::string(parts.status().message()));
  return *parts;
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> McConfmatCpu(const at::Tensor& preds, const at::Tensor& target,
                                                            int64_t c, c10::optional<int64_t> ignore_index) {
  Layout lay;
  lay.c = c;
  lay.size = c * c;
  auto opts = target.options().dtype(at::kLong);
  at::Tensor cm = at::empty({c, c}, opts);
  auto [bad_t, bad_p] = Count<true>("mc_confmat", preds, target, lay, ignore_index, cm.data_ptr<int64_t>());
  return {cm, at::scalar_tensor(bad_t, opts), at::scalar_tensor(bad_p, opts)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> McMarginalsCpu(const at::Tensor& preds, const at::Tensor& target,
                                                              int64_t c, c10::optional<int64_t> ignore_index,
                                                              c10::string_view parts, bool totals) {
  std::vector<ConfmatPart> kept = PartsOrThrow(parts);
  Layout lay = MarginalLayout(c, kept);
  auto opts = target.options().dtype(at::kLong);
  at::Tensor marginals = at::empty({static_cast<int64_t>(kept.size()), c}, opts);
  auto [bad_t, bad_p] = Count<false>("mc_marginals", preds, target, lay, ignore_index, marginals.data_ptr<int64_t>());
  if (totals) marginals = marginals.sum(1);
  return {marginals, at::scalar_tensor(bad_t, opts), at::scalar_tensor(bad_p, opts)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> McMarginalsMeta(const at::Tensor&, const at::Tensor& target, int64_t c,
                                                               c10::optional<int64_t>, c10::string_view parts,
                                                               bool totals) {
  auto opts = target.options().dtype(at::kLong);
  int64_t rows = static_cast<int64_t>(PartsOrThrow(parts).size());
  return {totals ? at::empty({rows}, opts) : at::empty({rows, c}, opts), at::empty({}, opts), at::empty({}, opts)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> McConfmatMeta(const at::Tensor&, const at::Tensor& target, int64_t c,
                                                             c10::optional<int64_t>) {
  auto opts = target.options().dtype(at::kLong);
  return {at::empty({c, c}, opts), at::empty({}, opts), at::empty({}, opts)};
}

}  // namespace tally::ops::fused
