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
#include "ops/fused/cpu_features.h"

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

// Layout says where one kept row (target t, label l) is counted: in the
// C x C matrix, or in the rows of the parts mc_marginals keeps (offsets into
// the buffer; -1 for a part not kept). With `groups` = G > 0 there are G
// such buffers, one after the other, and row i counts in the one of its
// group id (a row whose id is outside [0, G) counts in none).
struct Layout {
  int64_t c = 0;
  int64_t size = 0;    // elements of one buffer
  int64_t groups = 0;  // G, or 0: no group axis
  int64_t total() const { return size * (groups > 0 ? groups : 1); }
  int64_t tp = -1, target = -1, pred = -1, abs_err = -1, sq_err = -1;
};

// Add counts one kept row (target t, label l) into `buf`: 1 each (A is
// int64_t), or the row's weight `w` (A is double).
template <bool kMatrix, typename A>
inline void Add(const Layout& lay, A* buf, int64_t t, int64_t l, A w) {
  if constexpr (kMatrix) {
    buf[t * lay.c + l] += w;
  } else {
    if (lay.tp >= 0 && t == l) buf[lay.tp + t] += w;
    if (lay.target >= 0) buf[lay.target + t] += w;
    if (lay.pred >= 0) buf[lay.pred + l] += w;
    const int64_t d = t - l;
    if (lay.abs_err >= 0) buf[lay.abs_err + t] += static_cast<A>(d < 0 ? -d : d) * w;
    if (lay.sq_err >= 0) buf[lay.sq_err + t] += static_cast<A>(d * d) * w;
  }
}

// GroupBuffer is where row i counts: `cm`, or with group ids its group's
// buffer; nullptr for an id outside [0, G) (the row counts nowhere).
template <typename A>
inline A* GroupBuffer(A* cm, const int64_t* groups, int64_t i, const Layout& lay) {
  if (groups == nullptr) return cm;
  const int64_t g = groups[i];
  return g < 0 || g >= lay.groups ? nullptr : cm + g * lay.size;
}

// Counts is one thread's buffer (`cm`: the output itself, or `owned`) and
// its bad-value counts.
template <typename A>
struct Counts {
  A* cm = nullptr;
  std::vector<A> owned;
  int64_t bad_t = 0, bad_p = 0;
};

// RowWeight is row i's weight: 1 without weights (A int64_t), else w[i]
// (float64, sanitized by SanitizeWeights).
template <typename A>
inline A RowWeight(const double* w, int64_t i) {
  if constexpr (std::is_same<A, double>::value) {
    return w[i];
  } else {
    return 1;
  }
}

// CountRows counts rows [begin, end). kC > 0 fixes the class count at
// compile time (small C: the argmax loop unrolls into selects); kC == 0 reads
// it from `c`.
template <bool kMatrix, int kC, typename A, typename P, typename L>
void CountRows(const P* preds, const L* target, const double* weight, const int64_t* groups, bool scores,
               const Layout& lay, bool has_ignore, int64_t ignore, int64_t begin, int64_t end, Counts<A>& out) {
  const int64_t c = kC > 0 ? kC : lay.c;
  const bool wide = std::is_same<P, float>::value && kC == 0 && c >= 32 && HasAvx2();
  A* cm = out.cm;
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
    A* into = GroupBuffer(cm, groups, i, lay);
    if (into == nullptr) continue;
    if (!bt && !bp) Add<kMatrix>(lay, into, t, label, RowWeight<A>(weight, i));
  }
  out.bad_t += bad_t;
  out.bad_p += bad_p;
}

// CountRowsAvx2 is CountRows for float32 scores with 2 <= C <= 16: each row
// is two masked 8-lane loads, a horizontal max, and the first lane equal to
// it (the first maximum, as ATen's argmax). Rows holding a NaN take
// RowArgmaxSlow. About 4x fewer instructions per row than the scalar loop.
template <bool kMatrix, typename A, typename L>
__attribute__((target("avx2,bmi"))) void CountRowsAvx2(const float* preds, const L* target, const double* weight,
                                                       const int64_t* groups, const Layout& lay, bool has_ignore,
                                                       int64_t ignore, int64_t begin, int64_t end, Counts<A>& out) {
  const int64_t c = lay.c;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i mask0 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::min<int64_t>(c, 8))), lane);
  const __m256i mask1 = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::max<int64_t>(c - 8, 0))), lane);
  const __m256 ninf = _mm256_set1_ps(-INFINITY);
  A* cm = out.cm;
  int64_t bad_t = 0;
  for (int64_t i = begin; i < end; ++i) {
    int64_t t = static_cast<int64_t>(target[i]);
    if (has_ignore && t == ignore) continue;
    if (t < 0 || t >= c) {
      ++bad_t;
      continue;
    }
    A* into = GroupBuffer(cm, groups, i, lay);
    if (into == nullptr) continue;
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
    Add<kMatrix>(lay, into, t, label, RowWeight<A>(weight, i));
  }
  out.bad_t += bad_t;
}

template <typename A, typename P, typename L>
using CountFn = void (*)(const P*, const L*, const double*, const int64_t*, bool, const Layout&, bool, int64_t, int64_t,
                         int64_t, Counts<A>&);

template <bool kMatrix, typename A, typename P, typename L, int... kCs>
CountFn<A, P, L> PickCounter(int64_t c, std::integer_sequence<int, kCs...>) {
  CountFn<A, P, L> fn = &CountRows<kMatrix, 0, A, P, L>;
  ((c == kCs ? (fn = &CountRows<kMatrix, kCs, A, P, L>, 0) : 0), ...);
  return fn;
}

// SanitizeWeights writes rows [begin, end) of the raw weights `w` (any float
// dtype) as float64, a negative, NaN or infinite weight as 0: the weight
// operand's meaning (metrics/weights.h), here without a float64 copy of the
// batch.
// SanitizeFloatAvx2 is SanitizeWeights for float32 weights, eight at a time
// (the same values: a masked-out weight is +0.0).
__attribute__((target("avx2"))) void SanitizeFloatAvx2(const float* x, int64_t n, double* out) {
  const __m256 zero = _mm256_setzero_ps(), inf = _mm256_set1_ps(INFINITY);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    v = _mm256_and_ps(v, _mm256_and_ps(_mm256_cmp_ps(v, zero, _CMP_GE_OQ), _mm256_cmp_ps(v, inf, _CMP_LT_OQ)));
    _mm256_storeu_pd(out + i, _mm256_cvtps_pd(_mm256_castps256_ps128(v)));
    _mm256_storeu_pd(out + i + 4, _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  }
  for (; i < n; ++i) {
    const double v = static_cast<double>(x[i]);
    out[i] = v >= 0 && v < INFINITY ? v : 0.0;
  }
}

void SanitizeWeights(const at::Tensor& w, int64_t begin, int64_t end, double* out) {
  if (w.scalar_type() == at::kFloat && HasAvx2()) {
    SanitizeFloatAvx2(w.data_ptr<float>() + begin, end - begin, out);
    return;
  }
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, w.scalar_type(), "mc_confmat weight", [&] {
    const scalar_t* x = w.data_ptr<scalar_t>() + begin;
    for (int64_t i = 0; i < end - begin; ++i) {
      const double v = static_cast<double>(x[i]);
      out[i] = v >= 0 && v < INFINITY ? v : 0.0;  // NaN fails both
    }
  });
}

template <bool kMatrix, typename A, typename P, typename L>
void Run(const at::Tensor& preds, const at::Tensor& target, const at::Tensor* weight, const int64_t* groups,
         bool scores, const Layout& lay, c10::optional<int64_t> ignore_index, A* out, Counts<A>& total) {
  const P* p = preds.data_ptr<P>();
  const L* t = target.data_ptr<L>();
  const int64_t c = lay.c;
  int64_t n = target.size(0);
  int64_t threads = at::get_num_threads();
  CountFn<A, P, L> count =
      scores ? PickCounter<kMatrix, A, P, L>(
                   c, std::integer_sequence<int, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16>{})
             : &CountRows<kMatrix, 0, A, P, L>;
  bool avx2 = scores && std::is_same<P, float>::value && c >= 2 && c <= 16 && HasAvx2();
  const bool has_ignore = ignore_index.has_value();
  const int64_t ignore = ignore_index.value_or(0);
  const int64_t stride = scores ? c : 1;  // preds elements per row
  auto count_block = [&](const P* bp, const L* bt, const double* bw, const int64_t* bg, int64_t rows, Counts<A>& into) {
    if constexpr (std::is_same<P, float>::value) {
      if (avx2) {
        CountRowsAvx2<kMatrix, A, L>(bp, bt, bw, bg, lay, has_ignore, ignore, 0, rows, into);
        return;
      }
    }
    count(bp, bt, bw, bg, scores, lay, has_ignore, ignore, 0, rows, into);
  };
  // Weighted rows go in blocks whose weights are sanitized into a buffer
  // that stays in L1.
  auto count_range = [&](int64_t begin, int64_t end, Counts<A>& into) {
    if (weight == nullptr) {
      count_block(p + begin * stride, t + begin, nullptr, groups ? groups + begin : nullptr, end - begin, into);
      return;
    }
    constexpr int64_t kBlock = 2048;
    double w[kBlock];
    for (int64_t b = begin; b < end; b += kBlock) {
      const int64_t e = std::min(end, b + kBlock);
      SanitizeWeights(*weight, b, e, w);
      count_block(p + b * stride, t + b, w, groups ? groups + b : nullptr, e - b, into);
    }
  };
  // Private buffers per thread; one thread when the buffer is large or the
  // batch small. Long score rows split into chunks of about 2^18 elements.
  const int64_t grain = scores && c > 16 ? std::max<int64_t>(1, (int64_t{1} << 18) / c) : 32768;
  const int64_t size = lay.total();
  if (n <= grain || threads == 1 || size * threads > (1 << 22)) {
    // One thread counts straight into the output: a large matrix is never
    // allocated twice.
    std::fill(out, out + size, A{0});
    total.cm = out;
    count_range(0, n, total);
    return;
  }
  std::vector<Counts<A>> parts(threads);
  for (auto& part : parts) {
    part.owned.assign(size, 0);
    part.cm = part.owned.data();
  }
  at::parallel_for(0, n, grain,
                   [&](int64_t begin, int64_t end) { count_range(begin, end, parts[at::get_thread_num()]); });
  std::fill(out, out + size, A{0});
  for (const auto& part : parts) {
    for (int64_t k = 0; k < size; ++k) out[k] += part.cm[k];
    total.bad_t += part.bad_t;
    total.bad_p += part.bad_p;
  }
}

// Count checks the inputs, dispatches on their dtypes and counts into `out`
// (lay.total() elements; with `weight`, a float [N] tensor, weight sums;
// with `groups`, an integer [N] tensor, lay.groups buffers); returns
// (bad_target, bad_preds).
template <bool kMatrix, typename A>
std::pair<int64_t, int64_t> Count(const char* op, const at::Tensor& preds_in, const at::Tensor& target_in,
                                  const at::Tensor* weight, const at::Tensor* groups_in, const Layout& lay,
                                  c10::optional<int64_t> ignore_index, A* out) {
  const int64_t c = lay.c;
  TORCH_CHECK(target_in.dim() == 1, op, ": target must be [N]");
  bool scores = at::isFloatingType(preds_in.scalar_type());
  TORCH_CHECK(scores ? (preds_in.dim() == 2 && preds_in.size(1) == c) : preds_in.dim() == 1, op,
              ": preds must be [N, C] scores or [N] labels");
  at::Tensor preds = preds_in.contiguous();
  at::Tensor target = target_in.contiguous();
  at::Tensor w;
  if (weight != nullptr) {
    TORCH_CHECK(at::isFloatingType(weight->scalar_type()) && weight->dim() == 1 && weight->size(0) == target.size(0),
                op, ": weight must be float [N]");
    w = weight->contiguous();
  }
  at::Tensor groups;
  if (groups_in != nullptr) {
    TORCH_CHECK(lay.groups > 0, op, ": groups needs num_groups > 0");
    TORCH_CHECK(groups_in->dim() == 1 && groups_in->size(0) == target.size(0), op, ": groups must be [N]");
    groups = groups_in->to(at::kLong).contiguous();
  }
  const int64_t* g = groups.defined() ? groups.data_ptr<int64_t>() : nullptr;
  const at::Tensor* wp = w.defined() ? &w : nullptr;
  Counts<A> total;
  auto dispatch_target = [&](auto p_tag) {
    using P = decltype(p_tag);
    if (target.scalar_type() == at::kLong)
      Run<kMatrix, A, P, int64_t>(preds, target, wp, g, scores, lay, ignore_index, out, total);
    else if (target.scalar_type() == at::kInt)
      Run<kMatrix, A, P, int32_t>(preds, target, wp, g, scores, lay, ignore_index, out, total);
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

// Optional is an optional tensor operand that is present and defined.
const at::Tensor* Optional(const c10::optional<at::Tensor>& t) { return t.has_value() && t->defined() ? &*t : nullptr; }

// CountType is the dtype of the counts: int64, or float64 weight sums.
at::ScalarType CountType(const c10::optional<at::Tensor>& weight) { return Optional(weight) ? at::kDouble : at::kLong; }

// GroupedShape is `shape` with the group axis in front when there is one.
std::vector<int64_t> GroupedShape(std::vector<int64_t> shape, const c10::optional<at::Tensor>& groups,
                                  int64_t num_groups) {
  if (Optional(groups)) shape.insert(shape.begin(), num_groups);
  return shape;
}

// CountInto counts into a new tensor of `shape` (with the group axis):
// int64 counts, or float64 weight sums with `weight`.
template <bool kMatrix>
std::tuple<at::Tensor, at::Tensor, at::Tensor> CountInto(const char* op, const at::Tensor& preds,
                                                         const at::Tensor& target,
                                                         const c10::optional<at::Tensor>& weight,
                                                         const c10::optional<at::Tensor>& groups, Layout lay,
                                                         int64_t num_groups, c10::optional<int64_t> ignore_index,
                                                         std::vector<int64_t> shape) {
  auto opts = target.options().dtype(at::kLong);
  if (Optional(groups)) lay.groups = num_groups;
  at::Tensor out = at::empty(GroupedShape(std::move(shape), groups, num_groups), opts.dtype(CountType(weight)));
  std::pair<int64_t, int64_t> bad;
  if (Optional(weight)) {
    bad = Count<kMatrix, double>(op, preds, target, Optional(weight), Optional(groups), lay, ignore_index,
                                 out.data_ptr<double>());
  } else {
    bad = Count<kMatrix, int64_t>(op, preds, target, nullptr, Optional(groups), lay, ignore_index,
                                  out.data_ptr<int64_t>());
  }
  return {out, at::scalar_tensor(bad.first, opts), at::scalar_tensor(bad.second, opts)};
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> McConfmatCpu(const at::Tensor& preds, const at::Tensor& target,
                                                            int64_t c, c10::optional<int64_t> ignore_index,
                                                            const c10::optional<at::Tensor>& weight,
                                                            const c10::optional<at::Tensor>& groups,
                                                            int64_t num_groups) {
  Layout lay;
  lay.c = c;
  lay.size = c * c;
  return CountInto<true>("mc_confmat", preds, target, weight, groups, lay, num_groups, ignore_index, {c, c});
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> McMarginalsCpu(const at::Tensor& preds, const at::Tensor& target,
                                                              int64_t c, c10::optional<int64_t> ignore_index,
                                                              c10::string_view parts, bool totals,
                                                              const c10::optional<at::Tensor>& weight,
                                                              const c10::optional<at::Tensor>& groups,
                                                              int64_t num_groups) {
  std::vector<ConfmatPart> kept = PartsOrThrow(parts);
  Layout lay = MarginalLayout(c, kept);
  auto r = CountInto<false>("mc_marginals", preds, target, weight, groups, lay, num_groups, ignore_index,
                            {static_cast<int64_t>(kept.size()), c});
  if (totals) std::get<0>(r) = std::get<0>(r).sum(-1);
  return r;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> McMarginalsMeta(const at::Tensor&, const at::Tensor& target, int64_t c,
                                                               c10::optional<int64_t>, c10::string_view parts,
                                                               bool totals, const c10::optional<at::Tensor>& weight,
                                                               const c10::optional<at::Tensor>& groups,
                                                               int64_t num_groups) {
  auto opts = target.options().dtype(at::kLong);
  int64_t rows = static_cast<int64_t>(PartsOrThrow(parts).size());
  std::vector<int64_t> shape = totals ? std::vector<int64_t>{rows} : std::vector<int64_t>{rows, c};
  return {at::empty(GroupedShape(shape, groups, num_groups), target.options().dtype(CountType(weight))),
          at::empty({}, opts), at::empty({}, opts)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> McConfmatMeta(const at::Tensor&, const at::Tensor& target, int64_t c,
                                                             c10::optional<int64_t>,
                                                             const c10::optional<at::Tensor>& weight,
                                                             const c10::optional<at::Tensor>& groups,
                                                             int64_t num_groups) {
  auto opts = target.options().dtype(at::kLong);
  return {at::empty(GroupedShape({c, c}, groups, num_groups), target.options().dtype(CountType(weight))),
          at::empty({}, opts), at::empty({}, opts)};
}

}  // namespace tally::ops::fused
