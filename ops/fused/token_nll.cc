#include "ops/fused/token_nll.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "ops/fused/cpu_features.h"
#include "ops/fused/script.h"

// On CPU, 16-bit rows are read once with AVX-512 or AVX2 (TableSumAvx512,
// TableSumAvx2: the maximum and the table's sum of exp(x) in one pass);
// other rows, and 16-bit rows whose maximum is out of the table's range,
// twice (RowNll).
namespace tally::ops::fused {
namespace {

// RowMax is the largest of x[0..v) (NaN skipped).
template <typename T>
double RowMax(const T* x, int64_t v) {
  double peak = -INFINITY;
  for (int64_t j = 0; j < v; ++j) peak = std::fmax(peak, static_cast<double>(x[j]));
  return peak;
}

// SumExp is the sum of exp(x - peak) over x[0..v), in float64; four partial
// sums keep the loop's dependency chains short. SumExpAvx2 below is what
// runs where the CPU has it.
template <typename T>
double SumExp(const T* x, int64_t v, double peak) {
  double s[4] = {0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 4 <= v; j += 4) {
    for (int u = 0; u < 4; ++u) s[u] += std::exp(static_cast<double>(x[j + u]) - peak);
  }
  for (; j < v; ++j) s[0] += std::exp(static_cast<double>(x[j]) - peak);
  return (s[0] + s[1]) + (s[2] + s[3]);
}

// ExpTable is exp(x) in float64 for every value x of a 16-bit float type
// (by its bits), each correctly rounded to within an ulp, +inf past 709.
template <typename T>
const double* ExpTable() {
  static const double* table = [] {
    auto* t = new double[65536];
    for (uint32_t code = 0; code < 65536; ++code) {
      const T x(static_cast<uint16_t>(code), T::from_bits());
      t[code] = std::exp(static_cast<double>(x));
    }
    return t;
  }();
  return table;
}

// SumExpTable is the sum of exp(x) over 16-bit x[0..v), each term from
// ExpTable: no exp to compute.
template <typename T>
double SumExpTable(const T* x, int64_t v) {
  const double* table = ExpTable<T>();
  const uint16_t* bits = reinterpret_cast<const uint16_t*>(x);
  double s[4] = {0, 0, 0, 0};
  int64_t j = 0;
  for (; j + 4 <= v; j += 4) {
    for (int u = 0; u < 4; ++u) s[u] += table[bits[j + u]];
  }
  for (; j < v; ++j) s[0] += table[bits[j]];
  return (s[0] + s[1]) + (s[2] + s[3]);
}

// The AVX2 loops: compiled for AVX2, F16C and FMA, and called only where
// the CPU has them.
#define TALLY_AVX2 __attribute__((target("avx2,fma,f16c")))

// glibc's libmvec: exp of four doubles (AVX2), what GCC calls for
// vectorized exp loops; its error is glibc's few-ulp bound.
extern "C" TALLY_AVX2 __m256d _ZGVdN4v_exp(__m256d x);

// Load4 widens x[0..4) to four doubles, exactly.
template <typename T>
TALLY_AVX2 __m256d Load4(const T* x) {
  if constexpr (std::is_same_v<T, double>) {
    return _mm256_loadu_pd(x);
  } else if constexpr (std::is_same_v<T, float>) {
    return _mm256_cvtps_pd(_mm_loadu_ps(x));
  } else if constexpr (std::is_same_v<T, c10::Half>) {
    return _mm256_cvtps_pd(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x))));
  } else {  // bfloat16: the top half of a float32
    const __m128i bits = _mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(x)));
    return _mm256_cvtps_pd(_mm_castsi128_ps(_mm_slli_epi32(bits, 16)));
  }
}

TALLY_AVX2 double Sum4(__m256d v) {
  __m128d pair = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(pair, _mm_unpackhi_pd(pair, pair)));
}

// RowMaxAvx2 is the largest of x[0..v) (NaN skipped), four at a time.
template <typename T>
TALLY_AVX2 double RowMaxAvx2(const T* x, int64_t v) {
  const int64_t whole = v - v % 8;
  __m256d m0 = _mm256_set1_pd(-INFINITY), m1 = m0;
  for (int64_t j = 0; j < whole; j += 8) {
    m0 = _mm256_max_pd(Load4(x + j), m0);  // a NaN x leaves the maximum as it was
    m1 = _mm256_max_pd(Load4(x + j + 4), m1);
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_max_pd(m0, m1));
  double peak = std::fmax(std::fmax(lanes[0], lanes[1]), std::fmax(lanes[2], lanes[3]));
  for (int64_t j = whole; j < v; ++j) peak = std::fmax(peak, static_cast<double>(x[j]));
  return peak;
}

// SumExpAvx2 is SumExp four doubles at a time (the sum in another order).
template <typename T>
TALLY_AVX2 double SumExpAvx2(const T* x, int64_t v, double peak) {
  const int64_t whole = v - v % 8;
  const __m256d p = _mm256_set1_pd(peak);
  __m256d s0 = _mm256_setzero_pd(), s1 = s0;
  for (int64_t j = 0; j < whole; j += 8) {
    s0 = _mm256_add_pd(s0, _ZGVdN4v_exp(_mm256_sub_pd(Load4(x + j), p)));
    s1 = _mm256_add_pd(s1, _ZGVdN4v_exp(_mm256_sub_pd(Load4(x + j + 4), p)));
  }
  double sum = Sum4(_mm256_add_pd(s0, s1));
  for (int64_t j = whole; j < v; ++j) sum += std::exp(static_cast<double>(x[j]) - peak);
  return sum;
}

// TableSumAvx2 is SumExpTable for 16-bit x, eight at a time (four-lane
// gathers from the table), with the maximum of x (NaN skipped) from the
// same pass: one read of the row where RowMax then SumExpTable take two.
template <typename T>
TALLY_AVX2 double TableSumAvx2(const T* x, int64_t v, double& peak) {
  const double* table = ExpTable<T>();
  const uint16_t* bits = reinterpret_cast<const uint16_t*>(x);
  const int64_t whole = v - v % 8;
  __m256d s0 = _mm256_setzero_pd(), s1 = s0;
  __m256 m = _mm256_set1_ps(-INFINITY);
  // The masked gather with every lane on: the plain one starts from an
  // undefined register, which GCC 12 warns about.
  const __m256d zero = _mm256_setzero_pd(), all = _mm256_castsi256_pd(_mm256_set1_epi64x(-1));
  for (int64_t j = 0; j < whole; j += 8) {
    const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bits + j));
    const __m256i code = _mm256_cvtepu16_epi32(raw);
    __m256 value;
    if constexpr (std::is_same_v<T, c10::Half>) {
      value = _mm256_cvtph_ps(raw);
    } else {  // bfloat16: the top half of a float32
      value = _mm256_castsi256_ps(_mm256_slli_epi32(code, 16));
    }
    m = _mm256_max_ps(value, m);  // a NaN x leaves the maximum as it was
    s0 = _mm256_add_pd(s0, _mm256_mask_i32gather_pd(zero, table, _mm256_castsi256_si128(code), all, 8));
    s1 = _mm256_add_pd(s1, _mm256_mask_i32gather_pd(zero, table, _mm256_extracti128_si256(code, 1), all, 8));
  }
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  peak = -INFINITY;
  for (const float f : lanes) peak = std::fmax(peak, static_cast<double>(f));
  double sum = Sum4(_mm256_add_pd(s0, s1));
  for (int64_t j = whole; j < v; ++j) {
    peak = std::fmax(peak, static_cast<double>(x[j]));
    sum += table[bits[j]];
  }
  return sum;
}

#undef TALLY_AVX2

// TableSumAvx512 is TableSumAvx2 sixteen at a time (eight-lane gathers):
// a gather costs about one cycle an element whatever its width, and the
// wider loop spends fewer instructions around them.
template <typename T>
__attribute__((target("avx512f"))) double TableSumAvx512(const T* x, int64_t v, double& peak) {
  const double* table = ExpTable<T>();
  const uint16_t* bits = reinterpret_cast<const uint16_t*>(x);
  const int64_t whole = v - v % 16;
  __m512d s0 = _mm512_setzero_pd(), s1 = s0;
  __m512 m = _mm512_set1_ps(-INFINITY);
  // The masked forms with every lane on: GCC 12's plain ones start from an
  // undefined register, which it warns about (as in TableSumAvx2).
  const __m512d zero = _mm512_setzero_pd();
  const __mmask16 all = 0xffff;
  for (int64_t j = 0; j < whole; j += 16) {
    const __m256i raw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bits + j));
    const __m512i code = _mm512_maskz_cvtepu16_epi32(all, raw);
    __m512 value;
    if constexpr (std::is_same_v<T, c10::Half>) {
      value = _mm512_maskz_cvtph_ps(all, raw);
    } else {  // bfloat16: the top half of a float32
      value = _mm512_castsi512_ps(_mm512_maskz_slli_epi32(all, code, 16));
    }
    m = _mm512_maskz_max_ps(all, value, m);  // a NaN x leaves the maximum as it was
    s0 = _mm512_add_pd(s0,
                       _mm512_mask_i32gather_pd(zero, 0xff, _mm512_maskz_extracti64x4_epi64(0xf, code, 0), table, 8));
    s1 = _mm512_add_pd(s1,
                       _mm512_mask_i32gather_pd(zero, 0xff, _mm512_maskz_extracti64x4_epi64(0xf, code, 1), table, 8));
  }
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, m);
  peak = -INFINITY;
  for (const float f : lanes) peak = std::fmax(peak, static_cast<double>(f));
  alignas(64) double sums[8];
  _mm512_store_pd(sums, _mm512_add_pd(s0, s1));
  double sum = ((sums[0] + sums[1]) + (sums[2] + sums[3])) + ((sums[4] + sums[5]) + (sums[6] + sums[7]));
  for (int64_t j = whole; j < v; ++j) {
    peak = std::fmax(peak, static_cast<double>(x[j]));
    sum += table[bits[j]];
  }
  return sum;
}

// The vector paths a CPU takes.
struct Paths {
  bool avx2 = false, avx512 = false;
};

// RowNll is logsumexp(x[0..v)) - x[t] for one row, in float64, the maximum
// taken once. 16-bit logits whose maximum lies in [-650, 690 - log V] sum
// exp(x) from the table: no overflow (each term is at most e^690 / V), and
// the terms below e^-708 (subnormal or 0) lie more than e^-58 under the
// largest. Others sum exp(x - max), four lanes at a time with AVX2.
template <typename T>
double RowNll(const T* x, int64_t v, int64_t t, Paths cpu) {
  const bool avx2 = cpu.avx2;
  const double xt = static_cast<double>(x[t]);
  double peak;
  if constexpr (std::is_same_v<T, c10::Half> || std::is_same_v<T, c10::BFloat16>) {
    // With AVX-512 or AVX2 the table's sum comes with the maximum, in one read.
    double sum = 0.0;
    if (cpu.avx512) {
      sum = TableSumAvx512(x, v, peak);
    } else if (avx2) {
      sum = TableSumAvx2(x, v, peak);
    } else {
      peak = RowMax(x, v);
    }
    if (peak >= -650.0 && peak <= 690.0 - std::log(static_cast<double>(v))) {
      return std::log(avx2 ? sum : SumExpTable(x, v)) - xt;
    }
  } else {
    peak = avx2 ? RowMaxAvx2(x, v) : RowMax(x, v);
  }
  // A row whose maximum is infinite or NaN-only takes the scalar loop: NaN.
  const double sum = avx2 && std::isfinite(peak) ? SumExpAvx2(x, v, peak) : SumExp(x, v, peak);
  return peak + std::log(sum) - xt;
}

}  // namespace

at::Tensor TokenNll(const at::Tensor& logits, const at::Tensor& target) {
  const auto opts = logits.options().dtype(at::kDouble);
  if (logits.is_meta() || target.is_meta()) return at::empty(target.sizes(), opts);
  if (!logits.is_cpu() || !target.is_cpu()) {
    return RunScript(kTokenNllScript, "token_nll", {logits, target}).toTensor();
  }
  const int64_t v = logits.size(-1);
  const at::Tensor x = logits.contiguous();
  const at::Tensor t = target.to(at::kLong).contiguous();
  at::Tensor out = at::zeros(target.sizes(), opts);
  const int64_t rows = t.numel();
  const int64_t* td = t.data_ptr<int64_t>();
  double* od = out.data_ptr<double>();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "token_nll", [&] {
    const scalar_t* xd = x.data_ptr<scalar_t>();
    const Paths cpu{HasAvx2F16cFma(), HasAvx512()};
    at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) {
        if (td[r] >= 0 && td[r] < v) od[r] = RowNll(xd + r * v, v, td[r], cpu);
      }
    });
  });
  return out;
}

const char kTokenNllScript[] = R"TS(
# dtype=4 is int64 and 7 float64 (ScalarType codes: the C++ compiler resolves no torch.int64).
def token_nll(logits: Tensor, target: Tensor) -> Tensor:
    if logits.is_meta or target.is_meta:
        return torch.empty(target.shape, dtype=7, device=logits.device)
    v = logits.size(-1)
    x = logits.reshape(-1, v)
    t = target.reshape(-1).to(4)
    inside = (t >= 0) & (t < v)
    safe = torch.where(inside, t, torch.zeros_like(t)).unsqueeze(1)
    out = torch.zeros([t.size(0)], dtype=7, device=logits.device)
    step = max(1, 33554432 // max(v, 1))
    for start in range(0, t.size(0), step):
        chunk = x[start : start + step].to(7)
        picked = chunk.gather(1, safe[start : start + step]).squeeze(1)
        out[start : start + step] = torch.logsumexp(chunk, 1) - picked
    return torch.where(inside, out, torch.zeros_like(out)).reshape(target.shape)
)TS";

}  // namespace tally::ops::fused
