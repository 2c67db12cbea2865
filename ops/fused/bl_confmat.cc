#include "ops/fused/bl_confmat.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <limits>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>

#include "ops/fused/cpu_features.h"

namespace tally::ops::fused {
namespace {

// Counts are one chunk's (or the total) confusion matrices and bad values.
struct Counts {
  std::vector<int64_t> cm;  // [L][target][pred]
  int64_t bad_t = 0, bad_p = 0;
};

struct Args {
  int64_t labels;  // per row: 1 for [N] inputs
  bool has_ignore;
  int64_t ignore;
};

// Outside is the decomposition's `!(x >= 0 && x <= 1)`: NaN is outside.
template <typename P>
inline bool Outside(P x) {
  return !(x >= P(0) && x <= P(1));
}

template <typename P, typename T>
bool AnyOutsideScalar(const P* p, const T* t, int64_t begin, int64_t end, bool masked, int64_t ignore) {
  bool any = false;
  if (masked) {
    for (int64_t i = begin; i < end; ++i) any |= Outside(p[i]) & (static_cast<int64_t>(t[i]) != ignore);
  } else {
    for (int64_t i = begin; i < end; ++i) any |= Outside(p[i]);
  }
  return any;
}

__attribute__((target("avx2"))) bool AnyOutsideAvx2(const float* p, int64_t begin, int64_t end) {
  const __m256 zero = _mm256_setzero_ps(), one = _mm256_set1_ps(1.0f);
  __m256 inside = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    __m256 v = _mm256_loadu_ps(p + i);
    // Ordered comparisons: false for NaN.
    inside =
        _mm256_and_ps(inside, _mm256_and_ps(_mm256_cmp_ps(v, zero, _CMP_GE_OQ), _mm256_cmp_ps(v, one, _CMP_LE_OQ)));
  }
  bool any = _mm256_movemask_ps(inside) != 0xff;
  for (; i < end; ++i) any |= Outside(p[i]);
  return any;
}

__attribute__((target("avx2"))) bool AnyOutsideAvx2(const double* p, int64_t begin, int64_t end) {
  const __m256d zero = _mm256_setzero_pd(), one = _mm256_set1_pd(1.0);
  __m256d inside = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
  int64_t i = begin;
  for (; i + 4 <= end; i += 4) {
    __m256d v = _mm256_loadu_pd(p + i);
    inside =
        _mm256_and_pd(inside, _mm256_and_pd(_mm256_cmp_pd(v, zero, _CMP_GE_OQ), _mm256_cmp_pd(v, one, _CMP_LE_OQ)));
  }
  bool any = _mm256_movemask_pd(inside) != 0xf;
  for (; i < end; ++i) any |= Outside(p[i]);
  return any;
}

// AnyOutside is the decomposition's Any(outside) over `count` elements
// (with `masked`, over those whose target is not `ignore`). Blocks stop
// early once some thread found one.
template <typename P, typename T>
bool AnyOutside(const P* p, const T* t, int64_t count, bool masked, int64_t ignore) {
  constexpr int64_t kBlock = 1 << 14;
  std::atomic<bool> found{false};
  const bool avx2 = !masked && HasAvx2();
  at::parallel_for(0, count, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end && !found.load(std::memory_order_relaxed); b += kBlock) {
      int64_t e = std::min(end, b + kBlock);
      bool any = avx2 ? AnyOutsideAvx2(p, b, e) : AnyOutsideScalar(p, t, b, e, masked, ignore);
      if (any) found.store(true, std::memory_order_relaxed);
    }
  });
  return found.load();
}

// Label is the decomposition's label of one (probability) value.
template <typename P>
inline int64_t Label(P v, P threshold) {
  if constexpr (std::is_floating_point<P>::value)
    return v > threshold;
  else if constexpr (std::is_same<P, bool>::value)
    return v;
  else
    return v == 1;
}

// CountRows counts rows [begin, end) of `v` (float probabilities, or int or
// bool labels) against `t`. kL > 0 fixes the labels per row at compile time.
template <int kL, typename P, typename T>
void CountRows(const P* v, const T* t, P threshold, const Args& a, int64_t begin, int64_t end, Counts& out) {
  constexpr bool kIntLabels = std::is_integral<P>::value && !std::is_same<P, bool>::value;
  const int64_t labels = kL > 0 ? kL : a.labels;
  int64_t* __restrict cm = out.cm.data();
  int64_t bad_t = 0, bad_p = 0;
  for (int64_t i = begin; i < end; ++i) {
    const P* __restrict vr = v + i * labels;
    const T* __restrict tr = t + i * labels;
    // One pass counts the row; the rare row holding a bad value is taken
    // back out by a second pass adding the same cells with the opposite sign.
    bool row_bad = false;
    for (int64_t j = 0; j < labels; ++j) {
      int64_t tv = static_cast<int64_t>(tr[j]);
      bool ignored = a.has_ignore && tv == a.ignore;
      bool bt = !ignored && tv != 0 && tv != 1;
      bool bp = false;
      if constexpr (kIntLabels) {
        int64_t pv = static_cast<int64_t>(vr[j]);
        bp = !ignored && pv != 0 && pv != 1;
      }
      bad_t += bt;
      bad_p += bp;
      row_bad |= bt | bp;
      // An ignored (or bad) target may hold anything: `& 1` keeps the cell in bounds.
      cm[4 * j + 2 * (tv & 1) + Label(vr[j], threshold)] += !ignored;
    }
    if (!row_bad) continue;
    for (int64_t j = 0; j < labels; ++j) {
      int64_t tv = static_cast<int64_t>(tr[j]);
      bool ignored = a.has_ignore && tv == a.ignore;
      cm[4 * j + 2 * (tv & 1) + Label(vr[j], threshold)] -= !ignored;
    }
  }
  out.bad_t += bad_t;
  out.bad_p += bad_p;
}

// GtBits8 sets bit k when v[k] > threshold (false for NaN).
__attribute__((target("avx2"))) inline unsigned GtBits8(const float* v, float threshold) {
  return _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(v), _mm256_set1_ps(threshold), _CMP_GT_OQ));
}
__attribute__((target("avx2"))) inline unsigned GtBits8(const double* v, double threshold) {
  const __m256d th = _mm256_set1_pd(threshold);
  unsigned lo = _mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(v), th, _CMP_GT_OQ));
  unsigned hi = _mm256_movemask_pd(_mm256_cmp_pd(_mm256_loadu_pd(v + 4), th, _CMP_GT_OQ));
  return lo | (hi << 4);
}

// EqBits4/EqBits8 set bit k when lane k of `a` equals `x`.
__attribute__((target("avx2"))) inline unsigned EqBits4(__m256i a, __m256i x) {
  return static_cast<unsigned>(_mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpeq_epi64(a, x))));
}
__attribute__((target("avx2"))) inline unsigned EqBits8(__m256i a, __m256i x) {
  return static_cast<unsigned>(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(a, x))));
}

// TargetBits8 sets, for t[0..8), the bits of targets equal to 0, to 1 and to
// the ignore value (`ignore_on` false: none).
__attribute__((target("avx2"))) inline void TargetBits8(const int64_t* t, int64_t ignore, bool ignore_on,
                                                        unsigned& zero, unsigned& one, unsigned& ignored) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t));
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t + 4));
  const __m256i z = _mm256_setzero_si256(), o = _mm256_set1_epi64x(1);
  zero = EqBits4(a, z) | (EqBits4(b, z) << 4);
  one = EqBits4(a, o) | (EqBits4(b, o) << 4);
  ignored = 0;
  if (ignore_on) {
    const __m256i g = _mm256_set1_epi64x(ignore);
    ignored = EqBits4(a, g) | (EqBits4(b, g) << 4);
  }
}
__attribute__((target("avx2"))) inline void TargetBits8(const int32_t* t, int64_t ignore, bool ignore_on,
                                                        unsigned& zero, unsigned& one, unsigned& ignored) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t));
  zero = EqBits8(a, _mm256_setzero_si256());
  one = EqBits8(a, _mm256_set1_epi32(1));
  // An ignore value outside int32 matches no int32 target.
  bool fits = ignore >= std::numeric_limits<int32_t>::min() && ignore <= std::numeric_limits<int32_t>::max();
  ignored = ignore_on && fits ? EqBits8(a, _mm256_set1_epi32(static_cast<int32_t>(ignore))) : 0u;
}

// CountBinaryAvx2 is CountRows for one label per row (binary), float
// probabilities and int32/int64 targets: eight elements at a time as bit
// masks, counted with popcnt into four running sums (kept, target 1, label
// 1, both), which pipeline where a histogram's increments of the same four
// counters wait on each other's stores. A row is one element, so a bad
// element only drops itself.
template <typename P, typename T>
__attribute__((target("avx2,popcnt"))) void CountBinaryAvx2(const P* v, const T* t, P threshold, const Args& a,
                                                            int64_t begin, int64_t end, Counts& out) {
  int64_t kept = 0, target1 = 0, label1 = 0, both = 0, bad_t = 0;
  int64_t i = begin;
  for (; i + 8 <= end; i += 8) {
    unsigned label = GtBits8(v + i, threshold);
    unsigned zero, one, ignored;
    TargetBits8(t + i, a.ignore, a.has_ignore, zero, one, ignored);
    unsigned keep = (zero | one) & ~ignored;
    bad_t += __builtin_popcount(~(zero | one | ignored) & 0xffu);
    kept += __builtin_popcount(keep);
    target1 += __builtin_popcount(one & keep);
    label1 += __builtin_popcount(label & keep);
    both += __builtin_popcount(one & label & keep);
  }
  // kept, target 1, label 1, both -> [[tn, fp], [fn, tp]].
  out.cm[0] += kept - target1 - label1 + both;
  out.cm[1] += label1 - both;
  out.cm[2] += target1 - both;
  out.cm[3] += both;
  out.bad_t += bad_t;
  CountRows<1>(v, t, threshold, a, i, end, out);
}

template <typename P, typename T>
using CountFn = void (*)(const P*, const T*, P, const Args&, int64_t, int64_t, Counts&);

// PickCounter fixes small label counts at compile time (the per-row loops
// unroll).
template <typename P, typename T, int... kLs>
CountFn<P, T> PickCounter(int64_t labels, std::integer_sequence<int, kLs...>) {
  CountFn<P, T> fn = &CountRows<0, P, T>;
  ((labels == kLs ? (fn = &CountRows<kLs, P, T>, 0) : 0), ...);
  return fn;
}

template <typename P, typename T>
void Run(const at::Tensor& preds_in, const at::Tensor& preds, const at::Tensor& target, double threshold,
         bool logits_over_kept, c10::optional<int64_t> ignore_index, Counts& total) {
  const int64_t n = target.size(0);
  const int64_t labels = target.dim() == 2 ? target.size(1) : 1;
  const Args a{labels, ignore_index.has_value(), ignore_index.value_or(0)};
  const T* t = target.data_ptr<T>();
  const P* v = preds.data_ptr<P>();
  P th{};
  at::Tensor probs;
  if constexpr (std::is_floating_point<P>::value) {
    th = static_cast<P>(threshold);  // as the decomposition's constant in the preds dtype
    if (AnyOutside(v, t, n * labels, logits_over_kept && a.has_ignore, a.ignore)) {
      // ATen's sigmoid of the very tensor the decomposition sigmoids.
      probs = at::sigmoid(preds_in).contiguous();
      v = probs.data_ptr<P>();
    }
  }
  total.cm.assign(4 * labels, 0);
  std::mutex mu;
  constexpr bool kAvx2Types = std::is_floating_point<P>::value && !std::is_same<T, bool>::value;
  const bool avx2 = kAvx2Types && labels == 1 && HasAvx2();
  const CountFn<P, T> count = PickCounter<P, T>(labels, std::integer_sequence<int, 1, 2, 3, 4, 5, 6, 7, 8>{});
  at::parallel_for(0, n, std::max<int64_t>(1, 32768 / labels), [&](int64_t begin, int64_t end) {
    // Counts of this chunk stay in locals (no shared cache lines) until one
    // locked merge at the end.
    Counts mine;
    mine.cm.assign(4 * labels, 0);
    if constexpr (kAvx2Types) {
      if (avx2) CountBinaryAvx2(v, t, th, a, begin, end, mine);
    }
    if (!avx2) count(v, t, th, a, begin, end, mine);
    std::lock_guard<std::mutex> lock(mu);
    for (int64_t k = 0; k < 4 * labels; ++k) total.cm[k] += mine.cm[k];
    total.bad_t += mine.bad_t;
    total.bad_p += mine.bad_p;
  });
}

std::vector<int64_t> ConfmatShape(const at::Tensor& target) {
  if (target.dim() == 2) return {target.size(1), 2, 2};
  return {2, 2};
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> BlConfmatCpu(const at::Tensor& preds_in, const at::Tensor& target_in,
                                                            double threshold, bool logits_over_kept,
                                                            c10::optional<int64_t> ignore_index) {
  TORCH_CHECK(target_in.dim() == 1 || target_in.dim() == 2, "bl_confmat: target must be [N] or [N, L]");
  TORCH_CHECK(preds_in.sizes() == target_in.sizes(), "bl_confmat: preds and target must have one shape");
  at::Tensor preds = preds_in.contiguous();
  at::Tensor target = target_in.contiguous();
  Counts total;
  auto dispatch_target = [&](auto p_tag) {
    using P = decltype(p_tag);
    switch (target.scalar_type()) {
      case at::kLong:
        Run<P, int64_t>(preds_in, preds, target, threshold, logits_over_kept, ignore_index, total);
        break;
      case at::kInt:
        Run<P, int32_t>(preds_in, preds, target, threshold, logits_over_kept, ignore_index, total);
        break;
      case at::kBool:
        Run<P, bool>(preds_in, preds, target, threshold, logits_over_kept, ignore_index, total);
        break;
      default:
        TORCH_CHECK(false, "bl_confmat: target must be int32, int64 or bool");
    }
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
    case at::kBool:
      dispatch_target(bool{});
      break;
    default:
      TORCH_CHECK(false, "bl_confmat: unsupported preds dtype");
  }
  auto opts = target.options().dtype(at::kLong);
  at::Tensor cm = at::empty(ConfmatShape(target), opts);
  std::copy(total.cm.begin(), total.cm.end(), cm.data_ptr<int64_t>());
  return {cm, at::scalar_tensor(total.bad_t, opts), at::scalar_tensor(total.bad_p, opts)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> BlConfmatMeta(const at::Tensor&, const at::Tensor& target, double, bool,
                                                             c10::optional<int64_t>) {
  auto opts = target.options().dtype(at::kLong);
  return {at::empty(ConfmatShape(target), opts), at::empty({}, opts), at::empty({}, opts)};
}

}  // namespace tally::ops::fused
