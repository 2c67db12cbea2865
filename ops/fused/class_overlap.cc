#include "ops/fused/class_overlap.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <immintrin.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/fused/cpu_features.h"
#include "ops/fused/script.h"

namespace tally::ops::fused {
namespace {

// Joint histograms of up to kJointCells (pred, target) cells, in four
// interleaved copies so that runs of one pair (most of a mask) do not wait
// on their own increments; larger class counts take three histograms.
constexpr int64_t kJointCells = 4096;
constexpr int64_t kLanes = 4;
// Pixels per task: enough to pay for a table, few enough for 32-bit cells.
constexpr int64_t kChunk = int64_t{1} << 20;

// Counts is one chunk's three histograms over ids [0, c] (c: out of range).
struct Counts {
  std::vector<int64_t> both, pred, target;
};

// JointAvx2 is the joint histogram's loop for int64 ids, four pixels at a
// time: the range checks and cells in AVX2 registers, the four increments
// (one per copy) scalar. Returns the pixels done (a multiple of 4).
__attribute__((target("avx2"))) int64_t JointAvx2(const int64_t* p, const int64_t* t, int64_t len, int64_t c,
                                                  uint32_t* joint) {
  const int64_t w = c + 1;
  const __m256i spare = _mm256_set1_epi64x(c);
  const __m256i below = _mm256_set1_epi64x(-1);
  const __m256i width = _mm256_set1_epi64x(w);
  const __m256i copies = _mm256_setr_epi64x(0, w * w, 2 * w * w, 3 * w * w);
  alignas(32) int64_t cell[4];
  int64_t i = 0;
  for (; i + 4 <= len; i += 4) {
    __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t + i));
    // In range: -1 < id < c; others read c.
    a = _mm256_blendv_epi8(spare, a, _mm256_and_si256(_mm256_cmpgt_epi64(a, below), _mm256_cmpgt_epi64(spare, a)));
    b = _mm256_blendv_epi8(spare, b, _mm256_and_si256(_mm256_cmpgt_epi64(b, below), _mm256_cmpgt_epi64(spare, b)));
    // a <= c < 2^32: the low halves multiply exactly.
    _mm256_store_si256(reinterpret_cast<__m256i*>(cell),
                       _mm256_add_epi64(_mm256_add_epi64(_mm256_mul_epu32(a, width), b), copies));
    ++joint[cell[0]];
    ++joint[cell[1]];
    ++joint[cell[2]];
    ++joint[cell[3]];
  }
  return i;
}

template <typename T>
void CountChunk(const T* p, const T* t, int64_t len, int64_t c, Counts& out) {
  const int64_t w = c + 1;
  const auto id = [c](T v) -> int64_t {
    return static_cast<uint64_t>(static_cast<int64_t>(v)) < static_cast<uint64_t>(c) ? static_cast<int64_t>(v) : c;
  };
  out.both.assign(w, 0);
  out.pred.assign(w, 0);
  out.target.assign(w, 0);
  if (w * w <= kJointCells && len >= w * w) {
    std::vector<uint32_t> joint(kLanes * w * w, 0);
    int64_t i = 0;
    if constexpr (std::is_same_v<T, int64_t>) {
      if (HasAvx2()) i = JointAvx2(p, t, len, c, joint.data());
    }
    for (; i + kLanes <= len; i += kLanes) {
      for (int64_t l = 0; l < kLanes; ++l) ++joint[(l * w + id(p[i + l])) * w + id(t[i + l])];
    }
    for (; i < len; ++i) ++joint[id(p[i]) * w + id(t[i])];
    for (int64_t a = 0; a < w; ++a) {
      for (int64_t b = 0; b < w; ++b) {
        int64_t v = 0;
        for (int64_t l = 0; l < kLanes; ++l) v += joint[(l * w + a) * w + b];
        out.pred[a] += v;
        out.target[b] += v;
        if (a == b) out.both[a] += v;
      }
    }
    return;
  }
  for (int64_t i = 0; i < len; ++i) {
    const int64_t a = id(p[i]), b = id(t[i]);
    ++out.pred[a];
    ++out.target[b];
    out.both[a] += a == b;
  }
}

template <typename T>
at::Tensor CountIndexCpu(const at::Tensor& preds, const at::Tensor& target, int64_t c) {
  const int64_t n = preds.size(0);
  const int64_t pixels = n == 0 ? 0 : preds.numel() / n;
  const int64_t per_sample = std::max<int64_t>(1, (pixels + kChunk - 1) / kChunk);
  std::vector<Counts> chunks(n * per_sample);
  const T* p = preds.data_ptr<T>();
  const T* t = target.data_ptr<T>();
  at::parallel_for(0, n * per_sample, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t start = (k / per_sample) * pixels + (k % per_sample) * kChunk;
      const int64_t len = std::min(kChunk, (k / per_sample + 1) * pixels - start);
      CountChunk(p + start, t + start, std::max<int64_t>(len, 0), c, chunks[k]);
    }
  });
  at::Tensor out = at::zeros({n, 3, c}, preds.options().dtype(at::kLong));
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t k = 0; k < n * per_sample; ++k) {
    int64_t* row = o + (k / per_sample) * 3 * c;
    for (int64_t j = 0; j < c; ++j) {
      row[j] += chunks[k].both[j];
      row[c + j] += chunks[k].pred[j];
      row[2 * c + j] += chunks[k].target[j];
    }
  }
  return out;
}

}  // namespace

at::Tensor ClassOverlap(const at::Tensor& preds, const at::Tensor& target, int64_t num_classes, bool index,
                        bool include_background) {
  const at::ScalarType s = preds.scalar_type();
  if (index && preds.device().is_cpu() && (s == at::kLong || s == at::kInt) && preds.dim() >= 1) {
    const at::Tensor p = preds.contiguous(), t = target.contiguous();
    at::Tensor out =
        s == at::kLong ? CountIndexCpu<int64_t>(p, t, num_classes) : CountIndexCpu<int32_t>(p, t, num_classes);
    return include_background || num_classes == 1 ? out : out.narrow(2, 1, num_classes - 1);
  }
  return RunScript(ClassOverlapScript(), "class_overlap", {preds, target, num_classes, index, include_background})
      .toTensor();
}

const char* ClassOverlapScript() {
  static const std::string* source = new std::string(R"TS(
def class_overlap(preds: Tensor, target: Tensor, num_classes: int, index: bool, include_background: bool) -> Tensor:
    n = preds.size(0)
    c = num_classes
    kept = c if include_background or c == 1 else c - 1
    if preds.is_meta or target.is_meta:
        return torch.empty([n, 3, kept], dtype=4, device=preds.device)
    if preds.numel() == 0:
        return torch.zeros([n, 3, kept], dtype=4, device=preds.device)
    if index:
        # Ids out of range count in a spare column c, dropped below.
        p = preds.reshape([n, -1]).to(4)
        t = target.reshape([n, -1]).to(4)
        p = torch.where((p >= 0) & (p < c), p, c)
        t = torch.where((t >= 0) & (t < c), t, c)
        base = torch.arange(n, device=p.device).unsqueeze(1) * (c + 1)
        both = torch.where(p == t, p, c)
        parts = [torch.bincount((x + base).reshape([-1]), None, n * (c + 1)).reshape([n, c + 1]) for x in [both, p, t]]
        out = torch.stack(parts, 1).narrow(2, 0, c)
    else:
        p = preds.reshape([n, c, -1]) != 0
        t = target.reshape([n, c, -1]) != 0
        out = torch.stack([(p & t).sum([-1]), p.sum([-1]), t.sum([-1])], 1)
    return out.narrow(2, c - kept, kept)
)TS");
  return source->c_str();
}

}  // namespace tally::ops::fused
