#include "ops/fused/retrieval.h"

#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "ops/retrieval_metric.h"

namespace tally::ops::fused {
namespace {

// ---- count_invalid -----------------------------------------------------------

struct Invalid {
  int64_t not_binary = 0, negative = 0;
  Invalid operator+(const Invalid& o) const { return {not_binary + o.not_binary, negative + o.negative}; }
};

template <typename T>
Invalid CountInvalidRows(const T* x, int64_t begin, int64_t end, bool has_ignore, double ignore) {
  Invalid r;
  if constexpr (std::is_integral_v<T>) {
    // Integer compares (branch-free, vectorized); an ignore_index outside T's
    // range matches nothing.
    const bool ignorable = has_ignore && ignore >= static_cast<double>(std::numeric_limits<T>::lowest()) &&
                           ignore <= static_cast<double>(std::numeric_limits<T>::max());
    const T ig = ignorable ? static_cast<T>(ignore) : T{};
    int64_t not_binary = 0, negative = 0;
    for (int64_t i = begin; i < end; ++i) {
      const T v = x[i];
      const bool kept = !(ignorable & (v == ig));
      not_binary += static_cast<int64_t>(!((v == T{0}) | (v == T{1})) & kept);
      negative += static_cast<int64_t>((v < T{0}) & kept);
    }
    return {not_binary, negative};
  }
  for (int64_t i = begin; i < end; ++i) {
    const double v = static_cast<double>(x[i]);
    const bool kept = !(has_ignore && v == ignore);
    r.not_binary += !(v == 0.0 || v == 1.0) && kept;  // NaN counts in both
    r.negative += !(v >= 0.0) && kept;
  }
  return r;
}

// ---- retrieval_score -----------------------------------------------------------

using Metric = RetrievalMetric;

Metric ParseMetric(c10::string_view m) {
  std::optional<Metric> metric = RetrievalMetricNamed(absl::string_view(m.data(), m.size()));
  TORCH_CHECK(metric.has_value(), "retrieval_score: unknown metric '", std::string(m), "'");
  return *metric;
}

struct Options {
  Metric metric;
  std::string action;  // neg, pos, skip, error
  bool adaptive_k = false;
  int64_t top_k = -1;  // -1: every document
  bool has_ignore = false;
  double ignore = 0;
  std::string aggregation = "mean";  // mean, median, min, max
};

// A query's outcome: absent (no counted row), scored, or empty (no positives;
// no negatives for fall_out).
enum class Outcome : uint8_t { kAbsent, kScored, kEmpty };

struct Scratch {
  std::vector<double> rel, pred, ideal;
};

// Greater orders scores descending with NaN first (ATen sorts NaN as largest).
template <typename S>
inline bool Greater(S a, S b) {
  return (std::isnan(a) && !std::isnan(b)) || a > b;
}

// Discount is the decomposition's 1 / (log(rank + 1) / log 2), op for op,
// from a table for the first ranks.
inline double DiscountOf(int64_t rank) { return 1.0 / (std::log(static_cast<double>(rank) + 1.0) / std::log(2.0)); }
inline double Discount(int64_t rank) {
  static const std::vector<double>* table = [] {
    auto* t = new std::vector<double>(4096);
    for (int64_t r = 1; r < 4096; ++r) (*t)[r] = DiscountOf(r);
    return t;
  }();
  return rank < 4096 ? (*table)[rank] : DiscountOf(rank);
}

inline double SafeDiv(double a, double b) { return b != 0.0 ? a / b : 0.0; }

// ScoreRows scores the n counted rows of one query (sorted by preds
// descending): rel(j) and pred(j) read row j.
template <typename Rel, typename Pred>
Outcome ScoreRows(int64_t n, Rel rel, Pred pred, const Options& o, Scratch& s, double* score) {
  if (n == 0) return Outcome::kAbsent;
  const int64_t k = o.top_k < 0 ? n : std::min(o.top_k, n);  // rows within top_k
  double npos = 0, hits = 0;
  bool binary = true;  // every relevance 0 or 1 (the ideal order needs no sort)
  for (int64_t j = 0; j < n; ++j) {
    const double r = rel(j);
    npos += r;
    binary &= r == 0.0 || r == 1.0;
  }
  for (int64_t j = 0; j < k; ++j) hits += rel(j);
  bool empty = npos == 0.0;
  double value = 0;
  switch (o.metric) {
    case Metric::kRecall:
      value = SafeDiv(hits, npos);
      break;
    case Metric::kPrecision: {
      double denom = static_cast<double>(n);
      if (o.top_k >= 0) denom = o.adaptive_k ? static_cast<double>(std::min(o.top_k, n)) : static_cast<double>(o.top_k);
      value = SafeDiv(hits, denom);
      break;
    }
    case Metric::kHitRate:
      value = hits > 0.0 ? 1.0 : 0.0;
      break;
    case Metric::kReciprocalRank: {
      double seen = 0;
      for (int64_t j = 0; j < k; ++j) {
        const double r = rel(j);
        seen += r;
        if (r != 0.0 && seen == 1.0) value += r / static_cast<double>(j + 1);
      }
      break;
    }
    case Metric::kAveragePrecision: {
      double seen = 0, sum = 0;
      for (int64_t j = 0; j < k; ++j) {
        const double r = rel(j);
        seen += r;
        sum += r * (seen / static_cast<double>(j + 1));
      }
      value = SafeDiv(sum, hits);
      break;
    }
    case Metric::kRPrecision: {
      double in_r = 0;
      for (int64_t j = 0; j < n && static_cast<double>(j + 1) <= npos; ++j) in_r += rel(j);
      value = SafeDiv(in_r, npos);
      break;
    }
    case Metric::kFallOut: {
      double negs = 0, top = 0;
      for (int64_t j = 0; j < n; ++j) negs += 1.0 - rel(j);
      for (int64_t j = 0; j < k; ++j) top += 1.0 - rel(j);
      value = SafeDiv(top, negs);
      empty = negs == 0.0;
      break;
    }
    case Metric::kNdcg: {
      // sklearn's tie-averaged DCG: a run of equal preds shares its mean
      // relevance over the discounts of its ranks; the ideal ranks by relevance.
      double gain = 0;
      for (int64_t g0 = 0; g0 < k;) {  // runs starting past top_k add nothing
        int64_t g1 = g0 + 1;
        while (g1 < n && pred(g1) == pred(g0)) ++g1;
        double sum = 0;
        for (int64_t j = g0; j < g1; ++j) sum += rel(j);
        const double mean = sum / static_cast<double>(g1 - g0);
        for (int64_t j = g0; j < std::min(g1, k); ++j) gain += Discount(j + 1) * mean;
        g0 = g1;
      }
      double best = 0;
      if (binary) {  // npos ones, then zeros
        const int64_t ones = static_cast<int64_t>(npos);
        for (int64_t j = 0; j < std::min(k, ones); ++j) best += Discount(j + 1);
      } else {
        s.ideal.resize(n);
        for (int64_t j = 0; j < n; ++j) s.ideal[j] = rel(j);
        // NaN first, as segment_sort orders it in the decomposition.
        std::partial_sort(s.ideal.begin(), s.ideal.begin() + k, s.ideal.end(),
                          [](double a, double b) { return Greater(a, b); });
        for (int64_t j = 0; j < k; ++j) best += Discount(j + 1) * s.ideal[j];
      }
      value = SafeDiv(gain, best);
      break;
    }
    case Metric::kAuroc: {
      // binary_auroc of the top k rows: each positive scores the negatives
      // below it, and half of those tied with it (the trapezoidal ROC).
      const double negs = static_cast<double>(k) - hits;
      double seen_neg = 0, u = 0;
      for (int64_t g0 = 0; g0 < k;) {
        int64_t g1 = g0 + 1;
        while (g1 < k && pred(g1) == pred(g0)) ++g1;
        double pos_g = 0;
        for (int64_t j = g0; j < g1; ++j) pos_g += rel(j);
        const double neg_g = static_cast<double>(g1 - g0) - pos_g;
        seen_neg += neg_g;
        u += pos_g * (negs - seen_neg) + 0.5 * pos_g * neg_g;
        g0 = g1;
      }
      value = SafeDiv(u, hits * negs);
      break;
    }
  }
  *score = value;
  return empty ? Outcome::kEmpty : Outcome::kScored;
}

// ScoreQuery scores rows [b, e) of one query: in place without ignore_index,
// else over a compacted copy of the counted rows.
template <typename P, typename T>
Outcome ScoreQuery(const P* preds, const T* target, int64_t b, int64_t e, const Options& o, Scratch& s, double* score) {
  if (!o.has_ignore) {
    return ScoreRows(
        e - b, [target, b](int64_t j) { return static_cast<double>(target[b + j]); },
        [preds, b](int64_t j) { return static_cast<double>(preds[b + j]); }, o, s, score);
  }
  s.rel.clear();
  s.pred.clear();
  for (int64_t i = b; i < e; ++i) {
    const double v = static_cast<double>(target[i]);
    if (v == o.ignore) continue;
    s.rel.push_back(v);
    s.pred.push_back(static_cast<double>(preds[i]));
  }
  const double* rel = s.rel.data();
  const double* pred = s.pred.data();
  return ScoreRows(
      static_cast<int64_t>(s.rel.size()), [rel](int64_t j) { return rel[j]; }, [pred](int64_t j) { return pred[j]; }, o,
      s, score);
}

template <typename P, typename T>
void ScoreAll(const int64_t* keys, const P* preds, const T* target, const double* weight, int64_t n, const Options& o,
              double* mean, int64_t* empties) {
  std::vector<int64_t> starts;
  for (int64_t i = 0; i < n; ++i)
    if (i == 0 || keys[i] != keys[i - 1]) starts.push_back(i);
  const int64_t queries = static_cast<int64_t>(starts.size());
  starts.push_back(n);
  std::vector<double> scores(queries, 0.0);
  std::vector<Outcome> outcomes(queries, Outcome::kAbsent);
  at::parallel_for(0, queries, 256, [&](int64_t begin, int64_t end) {
    Scratch s;
    for (int64_t q = begin; q < end; ++q)
      outcomes[q] = ScoreQuery(preds, target, starts[q], starts[q + 1], o, s, &scores[q]);
  });
  // Summed in query order, whatever the threads did.
  double sum = 0, count = 0;
  int64_t empty = 0;
  const bool skip = o.action == "skip" || o.action == "error";
  const bool mean_only = o.aggregation == "mean";
  std::vector<double> kept;  // the scores median/min/max read, in query order
  for (int64_t q = 0; q < queries; ++q) {
    if (outcomes[q] == Outcome::kAbsent) continue;
    double v = scores[q];
    if (outcomes[q] == Outcome::kEmpty) {
      ++empty;
      if (skip) continue;
      v = o.action == "pos" ? 1.0 : 0.0;
    }
    // A query weighs the mean of its rows' weights (1 without weights).
    double w = 1.0;
    if (weight != nullptr) {
      w = 0.0;
      for (int64_t i = starts[q]; i < starts[q + 1]; ++i) w += weight[i];
      w /= static_cast<double>(starts[q + 1] - starts[q]);
    }
    sum += w * v;
    count += w;
    if (!mean_only) kept.push_back(v);
  }
  *empties = empty;
  if (mean_only || kept.empty()) {
    *mean = SafeDiv(sum, count);
    return;
  }
  // torch.median/min/max: NaN if any score is NaN.
  if (std::any_of(kept.begin(), kept.end(), [](double v) { return std::isnan(v); })) {
    *mean = std::numeric_limits<double>::quiet_NaN();
  } else if (o.aggregation == "min") {
    *mean = *std::min_element(kept.begin(), kept.end());
  } else if (o.aggregation == "max") {
    *mean = *std::max_element(kept.begin(), kept.end());
  } else {  // median: the lower of the two middle scores
    auto mid = kept.begin() + (kept.size() - 1) / 2;
    std::nth_element(kept.begin(), mid, kept.end());
    *mean = *mid;
  }
}

// ---- segment_sort ------------------------------------------------------------

// DescendingKey maps a score to an unsigned key whose ascending order is the
// scores' descending order, NaN first (ATen sorts NaN as largest) and -0
// equal to +0 (they compare equal, so ties keep row order).
inline uint32_t DescendingKey(float x) {
  if (std::isnan(x)) return 0;
  if (x == 0.0f) x = 0.0f;
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  const uint32_t ascending = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  return ~ascending;  // >= ~key(+inf) > 0: NaN (0) sorts first
}
inline uint64_t DescendingKey(double x) {
  if (std::isnan(x)) return 0;
  if (x == 0.0) x = 0.0;
  uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  const uint64_t ascending = (u & 0x8000000000000000ull) ? ~u : (u | 0x8000000000000000ull);
  return ~ascending;
}

// A row's sort word: its score's descending key, then the row, so that words
// are distinct and order by score, ties by row. float32 scores and fewer than
// 2^32 rows pack into one uint64; otherwise a (key, row) pair.
struct PackedWords {
  using Word = uint64_t;
  static Word Make(float score, int64_t row) {
    return (static_cast<uint64_t>(DescendingKey(score)) << 32) | static_cast<uint64_t>(row);
  }
  static int64_t Row(Word w) { return static_cast<int64_t>(w & 0xffffffffu); }
};
struct PairWords {
  using Word = std::pair<uint64_t, int64_t>;
  template <typename S>
  static Word Make(S score, int64_t row) {
    return {DescendingKey(score), row};
  }
  static int64_t Row(const Word& w) { return w.second; }
};

// Permutation writes segment_sort's order into `perm`: a stable counting sort
// (dense ids) or LSD radix sort (sparse ids) by query key moves the rows'
// words, then a plain sort of each query's contiguous words orders it — no
// indirection and no stable sort.
template <class W, typename S>
void Permutation(const int64_t* keys, const S* scores, int64_t n, int64_t* perm) {
  using Word = typename W::Word;
  std::vector<Word> words(n);
  std::vector<int64_t> starts;  // first word of each query
  int64_t lo = keys[0], hi = keys[0];
  bool sorted = true;
  for (int64_t i = 1; i < n; ++i) {
    lo = std::min(lo, keys[i]);
    hi = std::max(hi, keys[i]);
    sorted &= keys[i] >= keys[i - 1];
  }
  const uint64_t range = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);
  auto offset = [lo](int64_t k) { return static_cast<uint64_t>(k) - static_cast<uint64_t>(lo); };
  if (sorted) {
    for (int64_t i = 0; i < n; ++i) {
      words[i] = W::Make(scores[i], i);
      if (i == 0 || keys[i] != keys[i - 1]) starts.push_back(i);
    }
  } else if (range <= static_cast<uint64_t>(2 * n + 1024)) {  // dense ids: one counting sort
    std::vector<int64_t> next(range + 2, 0);
    for (int64_t i = 0; i < n; ++i) ++next[offset(keys[i]) + 1];
    for (uint64_t v = 1; v < range + 2; ++v) {
      if (next[v] != 0) starts.push_back(next[v - 1]);
      next[v] += next[v - 1];
    }
    for (int64_t i = 0; i < n; ++i) words[next[offset(keys[i])]++] = W::Make(scores[i], i);
  } else {  // sparse ids: a stable LSD radix sort over the bytes the range needs
    for (int64_t i = 0; i < n; ++i) words[i] = W::Make(scores[i], i);
    std::vector<Word> tmp(n);
    auto key_of = [keys, &offset](const Word& w) { return offset(keys[W::Row(w)]); };
    for (uint64_t r = range, shift = 0; r != 0; r >>= 8, shift += 8) {
      int64_t count[257] = {0};
      for (int64_t i = 0; i < n; ++i) ++count[((key_of(words[i]) >> shift) & 0xff) + 1];
      for (int d = 1; d < 257; ++d) count[d] += count[d - 1];
      for (int64_t i = 0; i < n; ++i) tmp[count[(key_of(words[i]) >> shift) & 0xff]++] = words[i];
      words.swap(tmp);
    }
    for (int64_t i = 0; i < n; ++i)
      if (i == 0 || key_of(words[i]) != key_of(words[i - 1])) starts.push_back(i);
  }
  const int64_t runs = static_cast<int64_t>(starts.size());
  starts.push_back(n);
  at::parallel_for(0, runs, 64, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) std::sort(words.begin() + starts[r], words.begin() + starts[r + 1]);
  });
  at::parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) perm[i] = W::Row(words[i]);
  });
}

}  // namespace

std::tuple<at::Tensor, at::Tensor> CountInvalidCpu(const at::Tensor& target, c10::optional<int64_t> ignore_index) {
  at::Tensor x = target.contiguous();
  const int64_t n = x.numel();
  Invalid bad;
  AT_DISPATCH_ALL_TYPES_AND(at::kBool, x.scalar_type(), "count_invalid", [&] {
    const scalar_t* data = x.data_ptr<scalar_t>();
    const double ignore = ignore_index.has_value() ? static_cast<double>(*ignore_index) : 0.0;
    bad = at::parallel_reduce(
        0, n, 1 << 16, Invalid{},
        [&](int64_t b, int64_t e, Invalid acc) {
          return acc + CountInvalidRows(data, b, e, ignore_index.has_value(), ignore);
        },
        std::plus<Invalid>());
  });
  auto i64 = target.options().dtype(at::kLong);
  return {at::scalar_tensor(bad.not_binary, i64), at::scalar_tensor(bad.negative, i64)};
}

std::tuple<at::Tensor, at::Tensor> CountInvalidMeta(const at::Tensor& target, c10::optional<int64_t>) {
  auto i64 = target.options().dtype(at::kLong);
  return {at::empty({}, i64), at::empty({}, i64)};
}

std::tuple<at::Tensor, at::Tensor> RetrievalScoreCpu(const at::Tensor& keys, const at::Tensor& preds,
                                                     const at::Tensor& target, c10::string_view metric,
                                                     c10::string_view empty_target_action, bool adaptive_k,
                                                     c10::optional<int64_t> top_k, c10::optional<int64_t> ignore_index,
                                                     c10::string_view aggregation,
                                                     const c10::optional<at::Tensor>& weight) {
  TORCH_CHECK(keys.scalar_type() == at::kLong, "retrieval_score: keys must be int64");
  TORCH_CHECK(!weight.has_value() ||
                  (weight->scalar_type() == at::kDouble && weight->numel() == keys.numel() && aggregation == "mean"),
              "retrieval_score: weight must be float64, one per row, with aggregation mean");
  TORCH_CHECK(aggregation == "mean" || aggregation == "median" || aggregation == "min" || aggregation == "max",
              "retrieval_score: unknown aggregation '", std::string(aggregation), "'");
  TORCH_CHECK(keys.numel() == preds.numel() && keys.numel() == target.numel(),
              "retrieval_score: keys, preds and target must have the same rows");
  Options o;
  o.metric = ParseMetric(metric);
  o.action = std::string(empty_target_action);
  o.adaptive_k = adaptive_k;
  o.top_k = top_k.value_or(-1);
  o.has_ignore = ignore_index.has_value();
  o.ignore = static_cast<double>(ignore_index.value_or(0));
  o.aggregation = std::string(aggregation);
  at::Tensor k = keys.contiguous(), p = preds.contiguous(), t = target.contiguous();
  at::Tensor w = weight.has_value() ? weight->contiguous() : at::Tensor();
  const double* wp = w.defined() ? w.data_ptr<double>() : nullptr;
  double mean = 0;
  int64_t empty = 0;
  AT_DISPATCH_FLOATING_TYPES(p.scalar_type(), "retrieval_score", [&] {
    using P = scalar_t;
    if (t.scalar_type() == at::kLong) {
      ScoreAll(k.data_ptr<int64_t>(), p.data_ptr<P>(), t.data_ptr<int64_t>(), wp, k.numel(), o, &mean, &empty);
    } else {
      TORCH_CHECK(t.scalar_type() == at::kDouble, "retrieval_score: target must be int64 or float64");
      ScoreAll(k.data_ptr<int64_t>(), p.data_ptr<P>(), t.data_ptr<double>(), wp, k.numel(), o, &mean, &empty);
    }
  });
  return {at::scalar_tensor(mean, keys.options().dtype(at::kDouble)),
          at::scalar_tensor(empty, keys.options().dtype(at::kLong))};
}

std::tuple<at::Tensor, at::Tensor> RetrievalScoreMeta(const at::Tensor& keys, const at::Tensor&, const at::Tensor&,
                                                      c10::string_view, c10::string_view, bool, c10::optional<int64_t>,
                                                      c10::optional<int64_t>, c10::string_view,
                                                      const c10::optional<at::Tensor>&) {
  return {at::empty({}, keys.options().dtype(at::kDouble)), at::empty({}, keys.options().dtype(at::kLong))};
}

at::Tensor SegmentSortPermutationCpu(const at::Tensor& keys, const at::Tensor& scores) {
  TORCH_CHECK(keys.scalar_type() == at::kLong && keys.dim() == 1, "segment_sort: keys must be int64 [N]");
  at::Tensor k = keys.contiguous(), s = scores.contiguous();
  const int64_t n = k.numel();
  at::Tensor perm = at::empty({n}, k.options());
  if (n == 0) return perm;
  int64_t* p = perm.data_ptr<int64_t>();
  if (s.scalar_type() == at::kFloat && n < (int64_t{1} << 32)) {
    Permutation<PackedWords>(k.data_ptr<int64_t>(), s.data_ptr<float>(), n, p);
  } else {
    AT_DISPATCH_FLOATING_TYPES(s.scalar_type(), "segment_sort",
                               [&] { Permutation<PairWords>(k.data_ptr<int64_t>(), s.data_ptr<scalar_t>(), n, p); });
  }
  return perm;
}

}  // namespace tally::ops::fused
