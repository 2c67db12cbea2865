#include "ops/fused/rank_stats.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace tally::ops::fused {
namespace {

// OrderedBits maps a float to unsigned bits that sort as the floats do,
// with NaN counted as +inf and -0 equal to +0.
inline uint32_t OrderedBits(float f) {
  if (std::isnan(f)) f = INFINITY;
  if (f == 0.0f) f = 0.0f;
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

inline uint64_t OrderedBits(double f) {
  if (std::isnan(f)) f = INFINITY;
  if (f == 0.0) f = 0.0;
  uint64_t u;
  std::memcpy(&u, &f, sizeof(u));
  return (u & (uint64_t{1} << 63)) ? ~u : (u | (uint64_t{1} << 63));
}

// RadixSort sorts `v` ascending by its low `bits` bits (LSD, 11 bits a pass).
void RadixSort(std::vector<uint64_t>& v, int bits) {
  constexpr int kDigit = 11;
  constexpr size_t kBuckets = size_t{1} << kDigit;
  std::vector<uint64_t> tmp(v.size());
  std::vector<size_t> count(kBuckets);
  for (int shift = 0; shift < bits; shift += kDigit) {
    std::fill(count.begin(), count.end(), 0);
    for (uint64_t x : v) ++count[(x >> shift) & (kBuckets - 1)];
    size_t sum = 0;
    for (size_t& c : count) {
      size_t n = c;
      c = sum;
      sum += n;
    }
    for (uint64_t x : v) tmp[count[(x >> shift) & (kBuckets - 1)]++] = x;
    v.swap(tmp);
  }
}

// Stats scans (key, positive) pairs sorted by key ascending, tie group by
// tie group from the largest key down.
struct Stats {
  int64_t n_pos = 0, n_neg = 0;
  int64_t u2 = 0;  // twice U: exact in integers
  double precision_sum = 0;
};

template <typename Key, typename KeyOf, typename LabelOf>
Stats Scan(size_t n, KeyOf key_of, LabelOf label_of) {
  Stats s;
  int64_t pos_above = 0, rows_above = 0;
  size_t end = n;
  while (end > 0) {
    const Key k = key_of(end - 1);
    int64_t p = 0, q = 0;
    size_t i = end;
    while (i > 0 && key_of(i - 1) == k) {
      --i;
      label_of(i) ? ++p : ++q;
    }
    s.u2 += q * (2 * pos_above + p);
    pos_above += p;
    rows_above += p + q;
    if (p > 0)
      s.precision_sum += static_cast<double>(p) * static_cast<double>(pos_above) / static_cast<double>(rows_above);
    s.n_pos += p;
    s.n_neg += q;
    end = i;
  }
  return s;
}

template <typename T>
Stats Run(const T* scores, const bool* positive, int64_t n) {
  if constexpr (sizeof(T) == 4) {
    // (ordered bits << 1 | positive): 33 bits, three radix passes.
    std::vector<uint64_t> v;
    v.reserve(n);
    for (int64_t i = 0; i < n; ++i) {
      if (scores[i] < 0) continue;  // dropped
      v.push_back((static_cast<uint64_t>(OrderedBits(scores[i])) << 1) | (positive[i] ? 1 : 0));
    }
    RadixSort(v, 33);
    return Scan<uint64_t>(
        v.size(), [&](size_t i) { return v[i] >> 1; }, [&](size_t i) { return (v[i] & 1) != 0; });
  } else {
    std::vector<std::pair<uint64_t, bool>> v;
    v.reserve(n);
    for (int64_t i = 0; i < n; ++i) {
      if (scores[i] < 0) continue;
      v.emplace_back(OrderedBits(scores[i]), positive[i]);
    }
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    return Scan<uint64_t>(
        v.size(), [&](size_t i) { return v[i].first; }, [&](size_t i) { return v[i].second; });
  }
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> BinaryRankStatsCpu(const at::Tensor& scores_in,
                                                                              const at::Tensor& positive_in) {
  TORCH_CHECK(scores_in.dim() == 1 && positive_in.dim() == 1 && scores_in.size(0) == positive_in.size(0),
              "binary_rank_stats: scores and positive must be [R] of one length");
  TORCH_CHECK(positive_in.scalar_type() == at::kBool, "binary_rank_stats: positive must be bool");
  at::Tensor scores = scores_in.contiguous();
  at::Tensor positive = positive_in.contiguous();
  Stats s;
  if (scores.scalar_type() == at::kFloat) {
    s = Run(scores.data_ptr<float>(), positive.data_ptr<bool>(), scores.size(0));
  } else if (scores.scalar_type() == at::kDouble) {
    s = Run(scores.data_ptr<double>(), positive.data_ptr<bool>(), scores.size(0));
  } else {
    TORCH_CHECK(false, "binary_rank_stats: scores must be float32 or float64");
  }
  auto i64 = scores.options().dtype(at::kLong);
  auto f64 = scores.options().dtype(at::kDouble);
  return {at::scalar_tensor(s.n_pos, i64), at::scalar_tensor(s.n_neg, i64),
          at::scalar_tensor(static_cast<double>(s.u2) * 0.5, f64), at::scalar_tensor(s.precision_sum, f64)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> BinaryRankStatsMeta(const at::Tensor& scores,
                                                                               const at::Tensor&) {
  auto i64 = scores.options().dtype(at::kLong);
  auto f64 = scores.options().dtype(at::kDouble);
  return {at::empty({}, i64), at::empty({}, i64), at::empty({}, f64), at::empty({}, f64)};
}

}  // namespace tally::ops::fused
