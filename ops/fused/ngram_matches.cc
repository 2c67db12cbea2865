#include "ops/fused/ngram_matches.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "ops/fused/script.h"
#include "ops/fused/token_ids_script.h"

namespace tally::ops::fused {
namespace {

// One row's sequences, preds first, then each reference, as spans of `ids`.
struct Sequences {
  std::vector<int64_t> ids;
  std::vector<int64_t> begin, length;

  void Clear() {
    ids.clear();
    begin.clear();
    length.clear();
  }
  // Add appends the non-negative ids of `row` (width l) as one sequence.
  void Add(const int64_t* row, int64_t l) {
    begin.push_back(static_cast<int64_t>(ids.size()));
    for (int64_t k = 0; k < l; ++k) {
      if (row[k] >= 0) ids.push_back(row[k]);
    }
    length.push_back(static_cast<int64_t>(ids.size()) - begin.back());
  }
};

// A k-gram: which sequence (0 is preds) and where in `ids` it starts.
struct Gram {
  int64_t seq;
  int64_t start;
};

// ForEachRun sorts the k-grams of every sequence of `s` and calls
// run(first, last) once per group of equal k-grams, [first, last) in `grams`
// (preds' before the references', references in order).
template <typename Run>
void ForEachRun(const Sequences& s, int64_t k, std::vector<Gram>& grams, Run run) {
  grams.clear();
  for (size_t q = 0; q < s.length.size(); ++q) {
    for (int64_t i = 0; i + k <= s.length[q]; ++i) grams.push_back({static_cast<int64_t>(q), s.begin[q] + i});
  }
  const int64_t* ids = s.ids.data();
  std::sort(grams.begin(), grams.end(), [&](const Gram& a, const Gram& b) {
    for (int64_t o = 0; o < k; ++o) {
      if (ids[a.start + o] != ids[b.start + o]) return ids[a.start + o] < ids[b.start + o];
    }
    return a.seq < b.seq;
  });
  for (size_t g = 0; g < grams.size();) {
    size_t end = g + 1;
    while (end < grams.size() && std::equal(ids + grams[g].start, ids + grams[g].start + k, ids + grams[end].start)) {
      ++end;
    }
    run(g, end);
    g = end;
  }
}

// CountPerSequence counts the grams of [first, last) per sequence.
void CountPerSequence(const std::vector<Gram>& grams, size_t first, size_t last, std::vector<int64_t>& per_seq) {
  std::fill(per_seq.begin(), per_seq.end(), 0);
  for (size_t x = first; x < last; ++x) ++per_seq[grams[x].seq];
}

// CountRow fills `out` (2 n_gram + 2 counts) for one row.
void CountRow(const Sequences& s, int64_t n_gram, std::vector<Gram>& grams, std::vector<int64_t>& per_ref,
              int64_t* out) {
  const int64_t refs = static_cast<int64_t>(s.length.size()) - 1;
  const int64_t lp = s.length[0];
  per_ref.resize(refs + 1);
  for (int64_t k = 1; k <= n_gram; ++k) {
    int64_t matches = 0;
    ForEachRun(s, k, grams, [&](size_t first, size_t last) {
      CountPerSequence(grams, first, last, per_ref);
      if (per_ref[0] > 0 && refs > 0) {
        matches += std::min(per_ref[0], *std::max_element(per_ref.begin() + 1, per_ref.end()));
      }
    });
    out[k - 1] = matches;
    out[n_gram + k - 1] = std::max<int64_t>(lp - k + 1, 0);
  }
  out[2 * n_gram] = lp;
  bool any = false;
  for (int64_t q = 1; q <= refs; ++q) any = any || s.length[q] > 0;
  int64_t best = 0;
  int64_t best_diff = -1;
  for (int64_t q = 1; q <= refs; ++q) {
    if (any && s.length[q] == 0) continue;
    const int64_t diff = std::abs(lp - s.length[q]);
    if (best_diff < 0 || diff < best_diff) {
      best_diff = diff;
      best = s.length[q];
    }
  }
  out[2 * n_gram + 1] = best;
}

// OverlapRow fills `out` ([R, n_gram]) for one row: per reference and
// order, the shared k-grams.
void OverlapRow(const Sequences& s, int64_t n_gram, std::vector<Gram>& grams, std::vector<int64_t>& per_seq,
                int64_t* out) {
  const int64_t refs = static_cast<int64_t>(s.length.size()) - 1;
  per_seq.resize(refs + 1);
  for (int64_t k = 1; k <= n_gram; ++k) {
    ForEachRun(s, k, grams, [&](size_t first, size_t last) {
      CountPerSequence(grams, first, last, per_seq);
      if (per_seq[0] == 0) return;
      for (int64_t q = 1; q <= refs; ++q) out[(q - 1) * n_gram + k - 1] += std::min(per_seq[0], per_seq[q]);
    });
  }
}

// ForEachRow calls row(sequences, r, scratch...) for every row r of preds
// [N, Lp] and target [N, R, Lt] as int64, rows spread over the threads.
template <typename Row>
void ForEachRow(const at::Tensor& preds, const at::Tensor& target, Row row) {
  const at::Tensor p = preds.to(at::kLong).contiguous();
  const at::Tensor t = target.to(at::kLong).contiguous();
  const int64_t lp = p.size(1), refs = t.size(1), lt = t.size(2);
  const int64_t* pd = p.data_ptr<int64_t>();
  const int64_t* td = t.data_ptr<int64_t>();
  at::parallel_for(0, p.size(0), 16, [&](int64_t begin, int64_t end) {
    Sequences s;
    std::vector<Gram> grams;
    std::vector<int64_t> per_seq;
    for (int64_t r = begin; r < end; ++r) {
      s.Clear();
      s.Add(pd + r * lp, lp);
      for (int64_t q = 0; q < refs; ++q) s.Add(td + (r * refs + q) * lt, lt);
      row(s, r, grams, per_seq);
    }
  });
}

}  // namespace

at::Tensor NgramMatches(const at::Tensor& preds, const at::Tensor& target, int64_t n_gram) {
  const int64_t n = preds.size(0);
  const auto opts = preds.options().dtype(at::kLong);
  if (preds.is_meta() || target.is_meta()) return at::empty({n, 2 * n_gram + 2}, opts);
  if (!preds.is_cpu() || !target.is_cpu()) {
    return RunScript(NgramMatchesScript(), "ngram_matches", {preds, target, n_gram}).toTensor();
  }
  at::Tensor out = at::zeros({n, 2 * n_gram + 2}, opts);
  int64_t* od = out.data_ptr<int64_t>();
  ForEachRow(preds, target,
             [&](const Sequences& s, int64_t r, std::vector<Gram>& grams, std::vector<int64_t>& scratch) {
               CountRow(s, n_gram, grams, scratch, od + r * (2 * n_gram + 2));
             });
  return out;
}

at::Tensor NgramOverlap(const at::Tensor& preds, const at::Tensor& target, int64_t n_gram) {
  const int64_t n = preds.size(0), refs = target.size(1);
  const auto opts = preds.options().dtype(at::kLong);
  if (preds.is_meta() || target.is_meta()) return at::empty({n, refs, n_gram}, opts);
  if (!preds.is_cpu() || !target.is_cpu()) {
    return RunScript(NgramMatchesScript(), "ngram_overlap", {preds, target, n_gram}).toTensor();
  }
  at::Tensor out = at::zeros({n, refs, n_gram}, opts);
  int64_t* od = out.data_ptr<int64_t>();
  ForEachRow(preds, target,
             [&](const Sequences& s, int64_t r, std::vector<Gram>& grams, std::vector<int64_t>& scratch) {
               OverlapRow(s, n_gram, grams, scratch, od + r * refs * n_gram);
             });
  return out;
}

const char* NgramMatchesScript() {
  static const std::string* source = new std::string(std::string(kCompactIdsScript) + R"TS(
def _gram_counts(p: Tensor, t: Tensor, lp: Tensor, lt: Tensor, k: int) -> Tuple[Tensor, Tensor, Tensor]:
    # Per k-gram of preds (p [N, Lp] compacted ids, wp = Lp - k + 1 starts):
    # whether it is its first occurrence, how often preds holds it, and how
    # often each reference does ([N, wp, R]).
    wp = p.size(1) - k + 1
    wt = t.size(2) - k + 1
    vp = torch.arange(wp, dtype=4, device=p.device).unsqueeze(0) + k <= lp.unsqueeze(1)
    same = vp.unsqueeze(2) & vp.unsqueeze(1)
    for o in range(k):
        po = p[:, o : o + wp]
        same = same & (po.unsqueeze(2) == po.unsqueeze(1))
    count_p = same.to(4).sum(2)
    first = vp & ~torch.tril(same, -1).any(2)
    count_t = torch.zeros([p.size(0), wp, t.size(1)], dtype=4, device=p.device)
    if wt > 0 and t.size(1) > 0:
        vt = torch.arange(wt, dtype=4, device=p.device).reshape(1, 1, wt) + k <= lt.unsqueeze(2)
        hit = vp.unsqueeze(2).unsqueeze(3) & vt.unsqueeze(1)
        for o in range(k):
            hit = hit & (p[:, o : o + wp].unsqueeze(2).unsqueeze(3) == t[:, :, o : o + wt].unsqueeze(1))
        count_t = hit.to(4).sum(3)
    return first, count_p, count_t

def ngram_matches(preds: Tensor, target: Tensor, n_gram: int) -> Tensor:
    n = preds.size(0)
    if preds.is_meta or target.is_meta:
        return torch.empty([n, 2 * n_gram + 2], dtype=4, device=preds.device)
    r = target.size(1)
    width = target.size(2)
    p = _compact(preds)
    t = _compact(target.reshape(n * r, width)).reshape(n, r, width)
    lp = (preds >= 0).to(4).sum(1)
    lt = (target >= 0).to(4).sum(2)
    zero = torch.zeros([n], dtype=4, device=p.device)
    matches: List[Tensor] = []
    totals: List[Tensor] = []
    for k in range(1, n_gram + 1):
        if p.size(1) - k + 1 <= 0:
            matches.append(zero)
            totals.append(zero)
            continue
        first, count_p, count_t = _gram_counts(p, t, lp, lt, k)
        if r > 0:
            clip = torch.minimum(count_p, count_t.max(2)[0])
        else:
            clip = torch.zeros_like(count_p)
        matches.append(torch.where(first, clip, torch.zeros_like(count_p)).sum(1))
        totals.append((lp - k + 1).clamp(min=0))
    ref_len = zero
    if r > 0:
        present = lt > 0
        candidate = present | ~present.any(1, keepdim=True)
        diff = torch.where(candidate, (lt - lp.unsqueeze(1)).abs(), torch.full_like(lt, 9223372036854775807))
        ref_len = lt.gather(1, diff.argmin(1, keepdim=True)).squeeze(1)
    return torch.stack(matches + totals + [lp, ref_len], 1)

def ngram_overlap(preds: Tensor, target: Tensor, n_gram: int) -> Tensor:
    n = preds.size(0)
    r = target.size(1)
    if preds.is_meta or target.is_meta:
        return torch.empty([n, r, n_gram], dtype=4, device=preds.device)
    width = target.size(2)
    p = _compact(preds)
    t = _compact(target.reshape(n * r, width)).reshape(n, r, width)
    lp = (preds >= 0).to(4).sum(1)
    lt = (target >= 0).to(4).sum(2)
    shared: List[Tensor] = []
    for k in range(1, n_gram + 1):
        if p.size(1) - k + 1 <= 0:
            shared.append(torch.zeros([n, r], dtype=4, device=p.device))
            continue
        first, count_p, count_t = _gram_counts(p, t, lp, lt, k)
        both = torch.minimum(count_p.unsqueeze(2), count_t)
        shared.append(torch.where(first.unsqueeze(2), both, torch.zeros_like(both)).sum(1))
    return torch.stack(shared, 2)
)TS");
  return source->c_str();
}

}  // namespace tally::ops::fused
