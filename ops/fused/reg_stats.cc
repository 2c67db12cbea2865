#include "ops/fused/reg_stats.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <immintrin.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

// The lane types cross no call boundary: each use is inlined into the entry
// point of its own instruction set (`flatten`), so GCC's note that passing
// AVX vectors without AVX changes the ABI does not apply.
#pragma GCC diagnostic ignored "-Wpsabi"

namespace tally::ops::fused {
namespace {

// Rows per block for one column: the block's inputs (8 KB of f32) and the 3
// shifted columns pass 1 keeps for pass 2 (24 KB) stay in L1 (half the time
// per row of 4096-row blocks, which spill to L2). Wider inputs take
// proportionally fewer rows.
constexpr int64_t kBlockRows = 1024;
// Blocks per task of the parallel loop: 16K rows, so 1M rows give 62 tasks.
constexpr int64_t kBlocksPerChunk = 16;

struct Moment {
  double hi = 0, lo = 0, m2 = 0;
};

// ColumnStats are one column's statistics over a range of rows.
struct ColumnStats {
  Moment p, t, e;  // preds, target, error = target − preds
  double c = 0;    // co-moment of preds and target
  double sse = 0, sae = 0;
};

// TwoSum sets s + err = a + b exactly (Knuth; any magnitudes). The merge
// graph writes the same operations.
inline void TwoSum(double a, double b, double& s, double& err) {
  double sum = a + b;
  double b_part = sum - a;
  err = (a - (sum - b_part)) + (b - b_part);
  s = sum;
}

// MergeMoment folds b into a and returns δ = mean_b − mean_a, with the
// operations of MomentGroup's merge graph (metrics/regression/moments.cc).
inline double MergeMoment(Moment& a, const Moment& b, double w_mean, double w_moment) {
  double d = (b.hi - a.hi) + (b.lo - a.lo);
  double t = a.lo + d * w_mean;
  TwoSum(a.hi, t, a.hi, a.lo);
  a.m2 = a.m2 + b.m2 + d * d * w_moment;
  return d;
}

// Merge folds `b` (nb rows) into `a` (na rows): Chan et al.'s pairwise update.
void Merge(ColumnStats& a, int64_t na, const ColumnStats& b, int64_t nb) {
  if (nb == 0) return;
  if (na == 0) {
    a = b;
    return;
  }
  double fa = static_cast<double>(na), fb = static_cast<double>(nb);
  double total = fa + fb;
  double w_mean = fb / total, w_moment = fa * fb / total;
  double dp = MergeMoment(a.p, b.p, w_mean, w_moment);
  double dt = MergeMoment(a.t, b.t, w_mean, w_moment);
  MergeMoment(a.e, b.e, w_mean, w_moment);
  a.c = a.c + b.c + dp * dt * w_moment;
  a.sse += b.sse;
  a.sae += b.sae;
}

// Lane types for Block1: the same code runs on 1, 4 (AVX2) or 8 (AVX-512)
// doubles. Sum adds the lanes in a fixed order.
struct Scalar {
  using V = double;
  static constexpr int64_t kLanes = 1;
  static V Set(double x) { return x; }
  static V Load(const float* x) { return *x; }
  static V Load(const double* x) { return *x; }
  static void Store(double* out, V v) { *out = v; }
  static V Add(V a, V b) { return a + b; }
  static V Sub(V a, V b) { return a - b; }
  static V MulAdd(V a, V b, V c) { return a * b + c; }
  static V Abs(V a) { return std::fabs(a); }
  static double Sum(V v) { return v; }
};

#define TALLY_AVX2 __attribute__((target("avx2,fma")))
struct Avx2 {
  using V = __m256d;
  static constexpr int64_t kLanes = 4;
  TALLY_AVX2 static V Set(double x) { return _mm256_set1_pd(x); }
  TALLY_AVX2 static V Load(const float* x) { return _mm256_cvtps_pd(_mm_loadu_ps(x)); }
  TALLY_AVX2 static V Load(const double* x) { return _mm256_loadu_pd(x); }
  TALLY_AVX2 static void Store(double* out, V v) { _mm256_storeu_pd(out, v); }
  TALLY_AVX2 static V Add(V a, V b) { return _mm256_add_pd(a, b); }
  TALLY_AVX2 static V Sub(V a, V b) { return _mm256_sub_pd(a, b); }
  TALLY_AVX2 static V MulAdd(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  TALLY_AVX2 static V Abs(V a) { return _mm256_andnot_pd(_mm256_set1_pd(-0.0), a); }
  TALLY_AVX2 static double Sum(V v) {
    alignas(32) double l[4];
    _mm256_store_pd(l, v);
    return (l[0] + l[2]) + (l[1] + l[3]);
  }
};

#define TALLY_AVX512 __attribute__((target("avx512f")))
struct Avx512 {
  using V = __m512d;
  static constexpr int64_t kLanes = 8;
  TALLY_AVX512 static V Set(double x) { return _mm512_set1_pd(x); }
  // (The all-lanes mask form: _mm512_cvtps_pd's undefined pass-through makes
  // GCC 12 warn.)
  TALLY_AVX512 static V Load(const float* x) { return _mm512_maskz_cvtps_pd(0xFF, _mm256_loadu_ps(x)); }
  TALLY_AVX512 static V Load(const double* x) { return _mm512_loadu_pd(x); }
  TALLY_AVX512 static void Store(double* out, V v) { _mm512_storeu_pd(out, v); }
  TALLY_AVX512 static V Add(V a, V b) { return _mm512_add_pd(a, b); }
  TALLY_AVX512 static V Sub(V a, V b) { return _mm512_sub_pd(a, b); }
  TALLY_AVX512 static V MulAdd(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  TALLY_AVX512 static V Abs(V a) { return _mm512_abs_pd(a); }
  TALLY_AVX512 static double Sum(V v) {
    alignas(64) double l[8];
    _mm512_store_pd(l, v);
    return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]));
  }
};

// Block1 computes the statistics of `len` >= 1 rows of a single column.
// Each variable x is shifted by its first value K: pass 1 sums d = x − K
// (stored in `scratch`, 3·len doubles) and m = Σd/len gives the mean as the
// exact two-double K + m; pass 2 sums (d − m)² and the cross products. A
// constant column has d = 0 everywhere: mean K, M2 exactly 0.
// kErr = false skips the error's moments (out.e stays 0): no metric of the
// collection reads them (reg_stats' error_moments attribute).
template <class S, bool kErr, typename P, typename T>
inline void Block1(const P* p, const T* t, int64_t len, double* scratch, ColumnStats& out) {
  using V = typename S::V;
  constexpr int64_t kL = S::kLanes;
  double* dp = scratch;
  double* dt = scratch + len;
  double* de = scratch + 2 * len;
  const double kp = static_cast<double>(p[0]), kt = static_cast<double>(t[0]);
  const double ke = kt - kp;

  const V vkp = S::Set(kp), vkt = S::Set(kt), vke = S::Set(ke);
  V sp = S::Set(0), st = S::Set(0), se = S::Set(0), sq = S::Set(0), sa = S::Set(0);
  int64_t i = 0;
  for (; i + kL <= len; i += kL) {
    V x = S::Load(p + i), y = S::Load(t + i);
    V e = S::Sub(y, x);
    V ax = S::Sub(x, vkp), ay = S::Sub(y, vkt), ae = S::Sub(e, vke);
    S::Store(dp + i, ax);
    S::Store(dt + i, ay);
    if (kErr) S::Store(de + i, ae);
    sp = S::Add(sp, ax);
    st = S::Add(st, ay);
    if (kErr) se = S::Add(se, ae);
    sq = S::MulAdd(e, e, sq);
    sa = S::Add(sa, S::Abs(e));
  }
  double sum_p = S::Sum(sp), sum_t = S::Sum(st), sum_e = S::Sum(se), sse = S::Sum(sq), sae = S::Sum(sa);
  for (; i < len; ++i) {
    double x = static_cast<double>(p[i]), y = static_cast<double>(t[i]);
    double e = y - x;
    dp[i] = x - kp;
    dt[i] = y - kt;
    de[i] = e - ke;
    sum_p += dp[i];
    sum_t += dt[i];
    sum_e += de[i];
    sse += e * e;
    sae += std::fabs(e);
  }
  const double n = static_cast<double>(len);
  const double mp = sum_p / n, mt = sum_t / n, me = sum_e / n;

  const V vmp = S::Set(mp), vmt = S::Set(mt), vme = S::Set(me);
  V rp = S::Set(0), rt = S::Set(0), re = S::Set(0), q = S::Set(0);
  V rp2 = S::Set(0), rt2 = S::Set(0), re2 = S::Set(0), q2 = S::Set(0);
  i = 0;
  // Two sets of accumulators: the FMA latency, not the ports, would bound one.
  for (; i + 2 * kL <= len; i += 2 * kL) {
    V a = S::Sub(S::Load(dp + i), vmp), b = S::Sub(S::Load(dt + i), vmt);
    V a2 = S::Sub(S::Load(dp + i + kL), vmp), b2 = S::Sub(S::Load(dt + i + kL), vmt);
    rp = S::MulAdd(a, a, rp);
    rt = S::MulAdd(b, b, rt);
    q = S::MulAdd(a, b, q);
    rp2 = S::MulAdd(a2, a2, rp2);
    rt2 = S::MulAdd(b2, b2, rt2);
    q2 = S::MulAdd(a2, b2, q2);
    if (kErr) {
      V c = S::Sub(S::Load(de + i), vme), c2 = S::Sub(S::Load(de + i + kL), vme);
      re = S::MulAdd(c, c, re);
      re2 = S::MulAdd(c2, c2, re2);
    }
  }
  double m2_p = S::Sum(S::Add(rp, rp2)), m2_t = S::Sum(S::Add(rt, rt2)), m2_e = S::Sum(S::Add(re, re2));
  double cpt = S::Sum(S::Add(q, q2));
  for (; i < len; ++i) {
    double a = dp[i] - mp, b = dt[i] - mt;
    m2_p += a * a;
    m2_t += b * b;
    cpt += a * b;
    if (kErr) {
      double c = de[i] - me;
      m2_e += c * c;
    }
  }
  TwoSum(kp, mp, out.p.hi, out.p.lo);
  TwoSum(kt, mt, out.t.hi, out.t.lo);
  if (kErr) {
    TwoSum(ke, me, out.e.hi, out.e.lo);
    out.e.m2 = m2_e;
  } else {
    out.e = Moment{};
  }
  out.p.m2 = m2_p;
  out.t.m2 = m2_t;
  out.c = cpt;
  out.sse = sse;
  out.sae = sae;
}

template <typename P, typename T>
using Block1Fn = void (*)(const P*, const T*, int64_t, double*, ColumnStats&);

// The entry points per instruction set; `flatten` inlines the lane
// operations (each compiled for its own target) into them.
template <bool kErr, typename P, typename T>
void Block1Scalar(const P* p, const T* t, int64_t len, double* scratch, ColumnStats& out) {
  Block1<Scalar, kErr, P, T>(p, t, len, scratch, out);
}
// Clang rejects passing __m256d/__m512d through Block1, which has no target
// attribute of its own (GCC accepts it: `flatten` inlines Block1 into these
// entry points). Clang builds (the sanitizer and fuzzer build) take the scalar
// lanes.
#if !defined(__clang__)
template <bool kErr, typename P, typename T>
TALLY_AVX2 __attribute__((flatten)) void Block1Avx2(const P* p, const T* t, int64_t len, double* scratch,
                                                    ColumnStats& out) {
  Block1<Avx2, kErr, P, T>(p, t, len, scratch, out);
}
template <bool kErr, typename P, typename T>
TALLY_AVX512 __attribute__((flatten)) void Block1Avx512(const P* p, const T* t, int64_t len, double* scratch,
                                                        ColumnStats& out) {
  Block1<Avx512, kErr, P, T>(p, t, len, scratch, out);
}
#endif
#undef TALLY_AVX2
#undef TALLY_AVX512

template <typename P, typename T>
Block1Fn<P, T> PickBlock1(bool error_moments) {
#if !defined(__clang__)
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (avx512) return error_moments ? &Block1Avx512<true, P, T> : &Block1Avx512<false, P, T>;
  if (avx2) return error_moments ? &Block1Avx2<true, P, T> : &Block1Avx2<false, P, T>;
#endif
  return error_moments ? &Block1Scalar<true, P, T> : &Block1Scalar<false, P, T>;
}

// BlockColumns is Block1 for `d` > 1 columns of row-major rows, column by
// column in scalar code (pass 2 recomputes the shifted values); `work` holds
// 10·d doubles.
template <typename P, typename T>
void BlockColumns(const P* p, const T* t, int64_t len, int64_t d, double* work, ColumnStats* out) {
  double* kp = work;
  double* kt = work + d;
  double* sp = work + 2 * d;
  double* st = work + 3 * d;
  double* se = work + 4 * d;
  double* sq = work + 5 * d;
  double* sa = work + 6 * d;
  double* rp = work + 7 * d;
  double* rt = work + 8 * d;
  double* re = work + 9 * d;
  std::fill(work + 2 * d, work + 10 * d, 0.0);
  for (int64_t j = 0; j < d; ++j) {
    kp[j] = static_cast<double>(p[j]);
    kt[j] = static_cast<double>(t[j]);
  }
  for (int64_t i = 0; i < len; ++i) {
    const P* pr = p + i * d;
    const T* tr = t + i * d;
    for (int64_t j = 0; j < d; ++j) {
      double x = static_cast<double>(pr[j]), y = static_cast<double>(tr[j]);
      double e = y - x;
      sp[j] += x - kp[j];
      st[j] += y - kt[j];
      se[j] += e - (kt[j] - kp[j]);
      sq[j] += e * e;
      sa[j] += std::fabs(e);
    }
  }
  const double n = static_cast<double>(len);
  for (int64_t j = 0; j < d; ++j) {
    sp[j] /= n;
    st[j] /= n;
    se[j] /= n;
    out[j].c = 0;
  }
  for (int64_t i = 0; i < len; ++i) {
    const P* pr = p + i * d;
    const T* tr = t + i * d;
    for (int64_t j = 0; j < d; ++j) {
      double x = static_cast<double>(pr[j]), y = static_cast<double>(tr[j]);
      double ke = kt[j] - kp[j];
      double a = (x - kp[j]) - sp[j], b = (y - kt[j]) - st[j], c = ((y - x) - ke) - se[j];
      rp[j] += a * a;
      rt[j] += b * b;
      re[j] += c * c;
      out[j].c += a * b;
    }
  }
  for (int64_t j = 0; j < d; ++j) {
    ColumnStats& o = out[j];
    TwoSum(kp[j], sp[j], o.p.hi, o.p.lo);
    TwoSum(kt[j], st[j], o.t.hi, o.t.lo);
    TwoSum(kt[j] - kp[j], se[j], o.e.hi, o.e.lo);
    o.p.m2 = rp[j];
    o.t.m2 = rt[j];
    o.e.m2 = re[j];
    o.sse = sq[j];
    o.sae = sa[j];
  }
}

// ChunkQueue hands out chunk indices to the threads of one Run. A thread
// that starts after every chunk was claimed returns without touching `run`
// (whose captures may be gone by then); the queue itself is shared.
struct ChunkQueue {
  std::atomic<int64_t> next{0}, done{0};
  int64_t chunks = 0, scratch = 0, columns = 0;
  std::function<void(int64_t, double*, ColumnStats*)> run;

  void Work() {
    int64_t c = next.fetch_add(1);
    if (c >= chunks) return;
    std::vector<double> buffer(scratch);
    std::vector<ColumnStats> block(columns);
    for (; c < chunks; c = next.fetch_add(1)) {
      run(c, buffer.data(), block.data());
      done.fetch_add(1, std::memory_order_release);
    }
  }
};

// Run folds the statistics of all `n` rows into `total` (d columns).
template <typename P, typename T>
void Run(const P* p, const T* t, int64_t n, int64_t d, bool error_moments, ColumnStats* total) {
  const int64_t block = std::max<int64_t>(1, kBlockRows / d);
  const int64_t chunk = block * kBlocksPerChunk;
  const int64_t chunks = (n + chunk - 1) / chunk;
  std::vector<ColumnStats> parts(chunks * d);
  const Block1Fn<P, T> block1 = PickBlock1<P, T>(error_moments);
  // Chunks are claimed one at a time by this thread and by helpers on
  // LibTorch's inter-op pool, and this thread waits only for chunks already
  // claimed, never for a helper to start: a helper the OS has not scheduled
  // (a busy or shared machine) finds no work left and returns. At the join of
  // an OpenMP region (at::parallel_for) the caller would wait for it, for a
  // scheduler time slice (measured: 7.8 ms per update instead of 0.6 with one
  // competing process). Each chunk's result has its own slot and the slots
  // fold in row order below, so which thread ran a chunk does not matter.
  auto queue = std::make_shared<ChunkQueue>();
  queue->chunks = chunks;
  queue->scratch = d == 1 ? 3 * std::min(block, n) : 10 * d;
  queue->columns = d;
  queue->run = [&](int64_t c, double* scratch, ColumnStats* b) {
    ColumnStats* acc = &parts[c * d];
    const int64_t last = std::min(n, (c + 1) * chunk);
    for (int64_t r = c * chunk; r < last; r += block) {
      const int64_t len = std::min(block, last - r);
      if (d == 1) {
        block1(p + r, t + r, len, scratch, b[0]);
      } else {
        BlockColumns(p + r * d, t + r * d, len, d, scratch, b);
        if (!error_moments)
          for (int64_t j = 0; j < d; ++j) b[j].e = Moment{};
      }
      for (int64_t j = 0; j < d; ++j) Merge(acc[j], r - c * chunk, b[j], len);
    }
  };
  const int64_t helpers = std::min<int64_t>(chunks, at::get_num_threads()) - 1;
  for (int64_t k = 0; k < helpers; ++k) at::launch([queue] { queue->Work(); });
  queue->Work();
  while (queue->done.load(std::memory_order_acquire) < chunks) std::this_thread::yield();
  int64_t rows = 0;
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t len = std::min(n, (c + 1) * chunk) - c * chunk;
    for (int64_t j = 0; j < d; ++j) Merge(total[j], rows, parts[c * d + j], len);
    rows += len;
  }
}

void CheckInputs(const at::Tensor& preds, const at::Tensor& target) {
  TORCH_CHECK(preds.sizes() == target.sizes(), "reg_stats: preds ", preds.sizes(), " and target ", target.sizes(),
              " differ in shape");
  TORCH_CHECK(preds.dim() == 1 || preds.dim() == 2, "reg_stats: inputs must be [N] or [N, D]");
  for (const at::Tensor* x : {&preds, &target}) {
    TORCH_CHECK(x->scalar_type() == at::kFloat || x->scalar_type() == at::kDouble,
                "reg_stats: inputs must be float32 or float64");
  }
}

}  // namespace

std::vector<at::Tensor> RegStatsCpu(const at::Tensor& preds_in, const at::Tensor& target_in, bool error_moments) {
  CheckInputs(preds_in, target_in);
  at::Tensor preds = preds_in.contiguous();
  at::Tensor target = target_in.contiguous();
  const int64_t n = preds.size(0);
  const int64_t d = preds.dim() == 2 ? preds.size(1) : 1;
  std::vector<ColumnStats> total(d);
  if (d > 0) {
    auto dispatch_target = [&](auto p_tag) {
      using P = decltype(p_tag);
      const P* p = preds.data_ptr<P>();
      if (target.scalar_type() == at::kFloat) {
        Run<P, float>(p, target.data_ptr<float>(), n, d, error_moments, total.data());
      } else {
        Run<P, double>(p, target.data_ptr<double>(), n, d, error_moments, total.data());
      }
    };
    if (preds.scalar_type() == at::kFloat)
      dispatch_target(float{});
    else
      dispatch_target(double{});
  }
  // One allocation: the per-column results are slices of `values`.
  at::Tensor values = at::empty({12 * d + 2}, preds.options().dtype(at::kDouble));
  double* v = values.data_ptr<double>();
  double sse_all = 0, sae_all = 0;
  for (int64_t j = 0; j < d; ++j) {
    const ColumnStats& s = total[j];
    const Moment* m[3] = {&s.p, &s.t, &s.e};
    for (int k = 0; k < 3; ++k) {
      v[(3 * k) * d + j] = m[k]->hi;
      v[(3 * k + 1) * d + j] = m[k]->lo;
      v[(3 * k + 2) * d + j] = m[k]->m2;
    }
    v[9 * d + j] = s.c;
    v[10 * d + j] = s.sse;
    v[11 * d + j] = s.sae;
    sse_all += s.sse;
    sae_all += s.sae;
  }
  v[12 * d] = sse_all;
  v[12 * d + 1] = sae_all;
  std::vector<at::Tensor> out;
  out.reserve(kRegStatsOutputs);
  out.push_back(at::scalar_tensor(n, preds.options().dtype(at::kLong)));
  for (int64_t k = 0; k < 12; ++k) out.push_back(values.narrow(0, k * d, d));
  out.push_back(values.select(0, 12 * d));
  out.push_back(values.select(0, 12 * d + 1));
  return out;
}

std::vector<at::Tensor> MomentsMergeCpu(at::TensorList states, int64_t variables, at::IntArrayRef pairs) {
  const int64_t npairs = static_cast<int64_t>(pairs.size()) / 2;
  const int64_t side = 1 + 3 * variables + npairs;
  TORCH_CHECK(pairs.size() % 2 == 0 && static_cast<int64_t>(states.size()) == 2 * side, "moments_merge: expected ",
              2 * side, " states");
  // The count is the row count (i64) or, weighted, the weight sum (f64).
  const bool weighted = states.size() > 0 && states[0].scalar_type() == at::kDouble;
  const at::ScalarType count_type = weighted ? at::kDouble : at::kLong;
  std::vector<at::Tensor> in(states.size());
  for (size_t i = 0; i < states.size(); ++i) {
    bool count = i == 0 || static_cast<int64_t>(i) == side;
    in[i] = states[i].contiguous();
    TORCH_CHECK(in[i].scalar_type() == (count ? count_type : at::kDouble) && in[i].dim() == (count ? 0 : 1),
                "moments_merge: state ", i, " must be ", count ? "i64[] or f64[] (both sides alike)" : "f64[d]");
  }
  const int64_t d = side > 1 ? in[1].numel() : 0;
  for (int64_t i = 1; i < 2 * side; ++i) {
    TORCH_CHECK(i == side || in[i].numel() == d, "moments_merge: states of different widths");
  }
  auto count = [&](int64_t i) {
    return weighted ? in[i].data_ptr<double>()[0] : static_cast<double>(in[i].data_ptr<int64_t>()[0]);
  };
  auto column = [&](int64_t i) { return in[i].data_ptr<double>(); };
  // The merge graph's scalars (MomentGroup::Finish, now the decomposition).
  const double fa = count(0), fb = count(side);
  const double total = fa + fb;
  const bool a_empty = fa == 0, b_empty = fb == 0, either_empty = a_empty || b_empty;
  const double w_mean = total != 0 ? fb / total : 0.0;
  const double w_moment = total != 0 ? fa * fb / total : 0.0;
  at::Tensor values = at::empty({(side - 1) * d}, in[0].options().dtype(at::kDouble));
  double* out = values.data_ptr<double>();
  std::vector<double> delta(variables * d);
  for (int64_t v = 0; v < variables; ++v) {
    const double *ha = column(1 + 3 * v), *la = column(2 + 3 * v), *m2a = column(3 + 3 * v);
    const double *hb = column(side + 1 + 3 * v), *lb = column(side + 2 + 3 * v), *m2b = column(side + 3 + 3 * v);
    double* hi = out + (3 * v) * d;
    double* lo = out + (3 * v + 1) * d;
    double* m2 = out + (3 * v + 2) * d;
    for (int64_t j = 0; j < d; ++j) {
      double dv = (hb[j] - ha[j]) + (lb[j] - la[j]);
      double t = la[j] + dv * w_mean;
      double s = ha[j] + t;
      double t_part = s - ha[j];
      double e = (ha[j] - (s - t_part)) + (t - t_part);
      hi[j] = b_empty ? ha[j] : a_empty ? hb[j] : s;
      lo[j] = b_empty ? la[j] : a_empty ? lb[j] : e;
      m2[j] = m2a[j] + m2b[j] + (either_empty ? 0.0 : dv * dv * w_moment);
      delta[v * d + j] = dv;
    }
  }
  for (int64_t k = 0; k < npairs; ++k) {
    const double *ca = column(1 + 3 * variables + k), *cb = column(side + 1 + 3 * variables + k);
    const double *da = &delta[pairs[2 * k] * d], *db = &delta[pairs[2 * k + 1] * d];
    double* c = out + (3 * variables + k) * d;
    for (int64_t j = 0; j < d; ++j) c[j] = ca[j] + cb[j] + (either_empty ? 0.0 : da[j] * db[j] * w_moment);
  }
  std::vector<at::Tensor> result;
  result.reserve(side);
  result.push_back(
      weighted ? at::scalar_tensor(total, in[0].options())
               : at::scalar_tensor(in[0].data_ptr<int64_t>()[0] + in[side].data_ptr<int64_t>()[0], in[0].options()));
  for (int64_t k = 0; k + 1 < side; ++k) result.push_back(values.narrow(0, k * d, d));
  return result;
}

std::vector<at::Tensor> MomentsMergeMeta(at::TensorList states, int64_t variables, at::IntArrayRef pairs) {
  const int64_t side = 1 + 3 * variables + static_cast<int64_t>(pairs.size()) / 2;
  TORCH_CHECK(static_cast<int64_t>(states.size()) == 2 * side, "moments_merge: expected ", 2 * side, " states");
  std::vector<at::Tensor> result;
  for (int64_t k = 0; k < side; ++k) result.push_back(at::empty(states[k].sizes(), states[k].options()));
  return result;
}

std::vector<at::Tensor> RegStatsMeta(const at::Tensor& preds, const at::Tensor& target, bool) {
  CheckInputs(preds, target);
  const int64_t d = preds.dim() == 2 ? preds.size(1) : 1;
  auto f64 = preds.options().dtype(at::kDouble);
  std::vector<at::Tensor> out;
  out.push_back(at::empty({}, preds.options().dtype(at::kLong)));
  for (int k = 0; k < 12; ++k) out.push_back(at::empty({d}, f64));
  out.push_back(at::empty({}, f64));
  out.push_back(at::empty({}, f64));
  return out;
}

}  // namespace tally::ops::fused
