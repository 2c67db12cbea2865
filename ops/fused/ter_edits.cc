#include "ops/fused/ter_edits.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "ops/fused/script.h"
#include "ops/fused/token_ids.h"

namespace tally::ops::fused {
namespace {

using Words = std::vector<int64_t>;

// TorchMetrics' constants (functional/text/ter.py, helper.py).
constexpr int64_t kBeamWidth = 25;
constexpr int64_t kMaxShiftSize = 10;  // blocks of 1 .. kMaxShiftSize - 1 words
constexpr int64_t kMaxShiftDist = 50;
constexpr int64_t kMaxShiftCandidates = 1000;
constexpr int64_t kUndefined = 10000000000000000;  // 1e16: a cell outside the beam

// The step that reached a cell, preferred in this order on equal costs.
enum Step : uint8_t { kNothing, kSubstitute, kDelete, kInsert, kNone };

// Levenshtein is TorchMetrics' beam-limited edit distance from a word list
// (the rows) to the fixed `goal` (the columns). Table() keeps the whole
// table of one word list, for its trace and for the candidates that share
// a prefix with it.
class Levenshtein {
 public:
  void Reset(const Words& goal) {
    goal_ = &goal;
    width_ = static_cast<int64_t>(goal.size()) + 1;
  }

  // Table fills the table of `words` and returns their distance.
  int64_t Table(const Words& words) {
    const int64_t n = static_cast<int64_t>(words.size());
    cost_.resize((n + 1) * width_);
    step_.resize((n + 1) * width_);
    for (int64_t j = 0; j < width_; ++j) {
      cost_[j] = j;
      step_[j] = kInsert;
    }
    for (int64_t i = 1; i <= n; ++i) Row(words, i, &cost_[(i - 1) * width_], &cost_[i * width_], &step_[i * width_]);
    return cost_[n * width_ + width_ - 1];
  }

  // Distance of `words`, whose first `same` words are the table's.
  int64_t Distance(const Words& words, int64_t same) {
    const int64_t n = static_cast<int64_t>(words.size());
    if (same >= n) return cost_[n * width_ + width_ - 1];
    prev_.assign(cost_.begin() + same * width_, cost_.begin() + (same + 1) * width_);
    cur_.resize(width_);
    steps_.resize(width_);
    for (int64_t i = same + 1; i <= n; ++i) {
      Row(words, i, prev_.data(), cur_.data(), steps_.data());
      prev_.swap(cur_);
    }
    return prev_[width_ - 1];
  }

  // Trace sets `out` to the steps from the start to the end of the table
  // of n words.
  void Trace(int64_t n, std::vector<uint8_t>& out) const {
    out.clear();
    int64_t i = n, j = width_ - 1;
    while (i > 0 || j > 0) {
      const uint8_t s = step_[i * width_ + j];
      if (s == kNone) break;  // a cell in the beam comes from one in the beam
      out.push_back(s);
      if (s != kDelete) --j;
      if (s != kInsert) --i;
    }
    std::reverse(out.begin(), out.end());
  }

 private:
  // Row fills row i (of words.size() rows) from the one before.
  void Row(const Words& words, int64_t i, const int64_t* prev, int64_t* cur, uint8_t* step) const {
    const Words& goal = *goal_;
    const int64_t n = static_cast<int64_t>(words.size()), m = width_ - 1;
    const double ratio = static_cast<double>(m) / static_cast<double>(n);
    const int64_t beam = ratio / 2 > kBeamWidth ? static_cast<int64_t>(std::ceil(ratio / 2 + kBeamWidth)) : kBeamWidth;
    const int64_t diag = static_cast<int64_t>(std::floor(static_cast<double>(i) * ratio));
    const int64_t lo = std::max<int64_t>(0, diag - beam);
    const int64_t hi = i == n ? m + 1 : std::min<int64_t>(m + 1, diag + beam);
    std::fill(cur, cur + width_, kUndefined);
    std::fill(step, step + width_, kNone);
    for (int64_t j = lo; j < hi; ++j) {
      if (j == 0) {
        cur[0] = prev[0] + 1;
        step[0] = kDelete;
        continue;
      }
      const bool same = words[i - 1] == goal[j - 1];
      const auto take = [&](int64_t c, Step s) {
        if (cur[j] > c) {
          cur[j] = c;
          step[j] = s;
        }
      };
      take(prev[j - 1] + (same ? 0 : 1), same ? kNothing : kSubstitute);
      take(prev[j] + 1, kDelete);
      take(cur[j - 1] + 1, kInsert);
    }
  }

  const Words* goal_ = nullptr;
  int64_t width_ = 1;
  std::vector<int64_t> cost_, prev_, cur_;
  std::vector<uint8_t> step_, steps_;
};

// Shift is TorchMetrics' _perform_shift: the block words[start, start +
// length) moved before position `place`.
void Shift(const Words& w, int64_t start, int64_t length, int64_t place, Words& out) {
  const int64_t n = static_cast<int64_t>(w.size());
  out.clear();
  const auto slice = [&](int64_t a, int64_t b) {
    b = std::min(b, n);
    if (a < b) out.insert(out.end(), w.begin() + a, w.begin() + b);
  };
  if (place < start) {
    slice(0, place), slice(start, start + length), slice(place, start), slice(start + length, n);
  } else if (place > start + length) {
    slice(0, start), slice(start + length, place), slice(start, start + length), slice(place, n);
  } else {
    slice(0, start), slice(start + length, length + place), slice(start, start + length), slice(length + place, n);
  }
}

struct Scratch {
  Levenshtein distance;
  std::vector<uint8_t> trace;
  std::vector<int64_t> align, word_errors, goal_errors;
  Words input, shifted, best;
};

// BestShift is TorchMetrics' _shift_words: the gain of the best block shift
// of `words` toward `goal` (its result in s.best), or 0 with none;
// `checked` counts the candidates tried.
int64_t BestShift(const Words& words, const Words& goal, int64_t& checked, Scratch& s) {
  const int64_t n = static_cast<int64_t>(words.size()), m = static_cast<int64_t>(goal.size());
  const int64_t distance = s.distance.Table(words);
  s.distance.Trace(n, s.trace);
  // The alignment of the trace read from goal to words: goal position ->
  // the last word position at or before it; prefix sums of the errors.
  s.align.assign(m, -1);
  s.word_errors.assign(1, 0);
  s.goal_errors.assign(1, 0);
  int64_t wi = -1, gj = -1;
  for (const uint8_t step : s.trace) {
    const int64_t error = step == kNothing ? 0 : 1;
    if (step != kInsert) {
      ++wi;
      s.word_errors.push_back(s.word_errors.back() + error);
    }
    if (step != kDelete) {
      s.align[++gj] = wi;
      s.goal_errors.push_back(s.goal_errors.back() + error);
    }
  }
  bool found = false;
  std::tuple<int64_t, int64_t, int64_t, int64_t> best;  // gain, length, -start, -place
  for (int64_t ws = 0; ws < n; ++ws) {
    for (int64_t gs = 0; gs < m; ++gs) {
      if (std::abs(gs - ws) > kMaxShiftDist) continue;
      for (int64_t length = 1; length < kMaxShiftSize; ++length) {
        if (words[ws + length - 1] != goal[gs + length - 1]) break;
        // Shift only blocks with errors on both sides, not already aligned.
        const bool skip = s.word_errors[ws + length] == s.word_errors[ws] ||
                          s.goal_errors[gs + length] == s.goal_errors[gs] ||
                          (ws <= s.align[gs] && s.align[gs] < ws + length);
        if (!skip) {
          int64_t last = -1;
          for (int64_t offset = -1; offset < length; ++offset) {
            const int64_t place = gs + offset == -1 ? 0 : s.align[gs + offset] + 1;
            if (place == last) continue;
            last = place;
            Shift(words, ws, length, place, s.shifted);
            const int64_t same =
                std::mismatch(s.shifted.begin(), s.shifted.end(), words.begin()).first - s.shifted.begin();
            const auto candidate =
                std::make_tuple(distance - s.distance.Distance(s.shifted, same), length, -ws, -place);
            ++checked;
            if (!found || candidate > best) {
              found = true;
              best = candidate;
              s.best = s.shifted;
            }
          }
          if (checked >= kMaxShiftCandidates) return std::get<0>(best);
        }
        if (ws + length == n || gs + length == m) break;
      }
    }
  }
  return found ? std::get<0>(best) : 0;
}

// Edits is TorchMetrics' _translation_edit_rate(words, goal): shifts of
// `words` toward `goal` plus the distance left.
int64_t Edits(const Words& words, const Words& goal, Scratch& s) {
  if (goal.empty()) return 0;
  s.distance.Reset(goal);
  s.input = words;
  int64_t shifts = 0, checked = 0;
  while (true) {
    const int64_t gain = BestShift(s.input, goal, checked, s);
    if (checked >= kMaxShiftCandidates || gain <= 0) break;
    ++shifts;
    s.input.swap(s.best);
  }
  return shifts + s.distance.Table(s.input);
}

}  // namespace

at::Tensor TerEdits(const at::Tensor& preds, const at::Tensor& target) {
  const int64_t n = preds.size(0), refs = target.size(1);
  if (preds.is_meta() || target.is_meta()) return at::empty({n, refs}, preds.options().dtype(at::kLong));
  if (!preds.is_cpu() || !target.is_cpu()) {
    return RunScript(TerEditsScript(), "ter_edits", {preds, target}).toTensor();
  }
  // TorchMetrics shifts the reference toward the hypothesis.
  return PerReference<Scratch>(preds, target,
                               [](const Words& hyp, const Words& ref, Scratch& s) { return Edits(ref, hyp, s); });
}

const char* TerEditsScript() {
  static const std::string* source = new std::string(R"TS(
def _ter_table(words: List[int], goal: List[int]) -> Tuple[List[int], List[int]]:
    n = len(words)
    m = len(goal)
    w = m + 1
    cost = [10000000000000000] * ((n + 1) * w)
    step = [4] * ((n + 1) * w)
    for j in range(w):
        cost[j] = j
        step[j] = 3
    ratio = 1.0
    if n > 0:
        ratio = float(m) / float(n)
    beam = 25
    if ratio / 2 > 25:
        beam = int(ratio / 2 + 25)
        if float(beam) < ratio / 2 + 25:
            beam += 1
    for i in range(1, n + 1):
        diag = int(i * ratio)
        lo = max(0, diag - beam)
        hi = min(m + 1, diag + beam)
        if i == n:
            hi = m + 1
        for j in range(lo, hi):
            k = i * w + j
            if j == 0:
                cost[k] = cost[k - w] + 1
                step[k] = 2
            else:
                same = words[i - 1] == goal[j - 1]
                c = cost[k - w - 1] + 1
                s = 1
                if same:
                    c = cost[k - w - 1]
                    s = 0
                if cost[k] > c:
                    cost[k] = c
                    step[k] = s
                if cost[k] > cost[k - w] + 1:
                    cost[k] = cost[k - w] + 1
                    step[k] = 2
                if cost[k] > cost[k - 1] + 1:
                    cost[k] = cost[k - 1] + 1
                    step[k] = 3
    return cost, step


def _ter_shift(words: List[int], start: int, length: int, place: int) -> List[int]:
    if place < start:
        return words[:place] + words[start : start + length] + words[place:start] + words[start + length :]
    if place > start + length:
        return words[:start] + words[start + length : place] + words[start : start + length] + words[place:]
    return words[:start] + words[start + length : length + place] + words[start : start + length] + words[length + place :]


def _ter_greater(a: List[int], b: List[int]) -> bool:
    for k in range(len(a)):
        if a[k] != b[k]:
            return a[k] > b[k]
    return False


def _ter_best_shift(words: List[int], goal: List[int], checked: int) -> Tuple[int, List[int], int]:
    n = len(words)
    m = len(goal)
    cost, step = _ter_table(words, goal)
    distance = cost[len(cost) - 1]
    trace: List[int] = []
    i = n
    j = m
    while i > 0 or j > 0:
        s = step[i * (m + 1) + j]
        if s == 4:
            break
        trace.append(s)
        if s != 2:
            j -= 1
        if s != 3:
            i -= 1
    trace.reverse()
    align = [-1] * m
    word_errors = [0]
    goal_errors = [0]
    wi = -1
    gj = -1
    for s in trace:
        e = 0 if s == 0 else 1
        if s != 3:
            wi += 1
            word_errors.append(word_errors[len(word_errors) - 1] + e)
        if s != 2:
            gj += 1
            align[gj] = wi
            goal_errors.append(goal_errors[len(goal_errors) - 1] + e)
    found = False
    best_key = [0, 0, 0, 0]
    best: List[int] = words
    for ws in range(n):
        for gs in range(m):
            if abs(gs - ws) > 50:
                continue
            for length in range(1, 10):
                if words[ws + length - 1] != goal[gs + length - 1]:
                    break
                skip = word_errors[ws + length] == word_errors[ws] or goal_errors[gs + length] == goal_errors[gs]
                skip = skip or (ws <= align[gs] and align[gs] < ws + length)
                if not skip:
                    last = -1
                    for offset in range(-1, length):
                        place = 0
                        if gs + offset != -1:
                            place = align[gs + offset] + 1
                        if place != last:
                            last = place
                            shifted = _ter_shift(words, ws, length, place)
                            c, _ = _ter_table(shifted, goal)
                            key = [distance - c[len(c) - 1], length, -ws, -place]
                            checked += 1
                            if not found or _ter_greater(key, best_key):
                                found = True
                                best_key = key
                                best = shifted
                    if checked >= 1000:
                        return best_key[0], best, checked
                if ws + length == n or gs + length == m:
                    break
    return best_key[0], best, checked


def _ter_edits(words: List[int], goal: List[int]) -> int:
    if len(goal) == 0:
        return 0
    shifts = 0
    checked = 0
    while True:
        gain, shifted, checked = _ter_best_shift(words, goal, checked)
        if checked >= 1000 or gain <= 0:
            break
        shifts += 1
        words = shifted
    cost, _ = _ter_table(words, goal)
    return shifts + cost[len(cost) - 1]


def _ter_ids(row: List[int]) -> List[int]:
    out: List[int] = []
    for x in row:
        if x >= 0:
            out.append(x)
    return out


def ter_edits(preds: Tensor, target: Tensor) -> Tensor:
    n = preds.size(0)
    r = target.size(1)
    if preds.is_meta or target.is_meta:
        return torch.empty([n, r], dtype=4, device=preds.device)
    p: List[List[int]] = preds.to(4).cpu().tolist()
    t: List[List[List[int]]] = target.to(4).cpu().tolist()
    out: List[int] = []
    for row in range(n):
        hyp = _ter_ids(p[row])
        for q in range(r):
            out.append(_ter_edits(_ter_ids(t[row][q]), hyp))
    return torch.tensor(out, dtype=4, device=preds.device).reshape(n, r)
)TS");
  return source->c_str();
}

}  // namespace tally::ops::fused
