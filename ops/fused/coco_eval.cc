#include "ops/fused/coco_eval.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "ops/fused/script.h"

namespace tally::ops::fused {
namespace {

// pycocotools' areaRng: all, small, medium, large.
constexpr std::array<double, kCocoAreaRanges> kAreaLo = {0.0, 0.0, 32.0 * 32.0, 96.0 * 96.0};
constexpr std::array<double, kCocoAreaRanges> kAreaHi = {1e10, 32.0 * 32.0, 96.0 * 96.0, 1e10};

bool OutsideRange(double area, int a) { return area < kAreaLo[a] || area > kAreaHi[a]; }

void SetBit(int64_t* words, int64_t bit) { words[bit >> 6] |= int64_t{1} << (bit & 63); }
bool GetBit(const int64_t* words, int64_t bit) { return (words[bit >> 6] >> (bit & 63)) & 1; }

// BoxIou is maskApi.c's bbIou for one xywh pair: against a crowd box the
// union is the detection's own area.
double BoxIou(const double* d, const double* g, bool crowd) {
  const double w = std::min(d[0] + d[2], g[0] + g[2]) - std::max(d[0], g[0]);
  if (w <= 0) return 0.0;
  const double h = std::min(d[1] + d[3], g[1] + g[3]) - std::max(d[1], g[1]);
  if (h <= 0) return 0.0;
  const double inter = w * h;
  const double da = d[2] * d[3];
  return inter / (crowd ? da : da + g[2] * g[3] - inter);
}

// MatchImage is evaluateImg for every class and area range of image n.
void MatchImage(int64_t n, int64_t D, int64_t G, const double* boxes, const double* scores, const int64_t* labels,
                const double* tboxes, const int64_t* tlabels, const int64_t* crowd, const double* tarea,
                const std::vector<double>& thr, int64_t max_det, bool micro, int64_t W, int64_t* rank, int64_t* tp,
                int64_t* ig, int64_t* counted) {
  const int64_t T = static_cast<int64_t>(thr.size());
  const double* bx = boxes + n * D * 4;
  const double* sc = scores + n * D;
  const int64_t* lb = labels + n * D;
  const double* tb = tboxes + n * G * 4;
  const int64_t* tl = tlabels + n * G;
  const int64_t* cr = crowd + n * G;
  const double* ta = tarea + n * G;
  int64_t* rk = rank + n * D;
  int64_t* tpn = tp + n * D * W;
  int64_t* ign = ig + n * D * W;
  int64_t* cn = counted + n * G;
  for (int64_t g = 0; g < G; ++g) {
    if (tl[g] < 0 || cr[g]) continue;
    for (int a = 0; a < kCocoAreaRanges; ++a) {
      if (!OutsideRange(ta[g], a)) cn[g] |= int64_t{1} << a;
    }
  }
  auto cls = [micro](int64_t label) { return micro ? int64_t{0} : label; };
  // Detections by (class, score descending), stable: slot order breaks ties.
  // Every slot starts ignored everywhere; matching clears the slots it
  // evaluates (padding and ranks past max_det stay so).
  std::vector<int64_t> order;
  for (int64_t d = 0; d < D; ++d) {
    if (lb[d] >= 0) order.push_back(d);
    for (int64_t bit = 0; bit < kCocoAreaRanges * T; ++bit) SetBit(ign + d * W, bit);
  }
  std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
    if (cls(lb[x]) != cls(lb[y])) return cls(lb[x]) < cls(lb[y]);
    return sc[x] > sc[y];
  });
  std::vector<int64_t> dets, gts;
  std::vector<double> iou;
  std::vector<char> gt_ig, taken;
  std::vector<int64_t> gt_sorted;
  for (size_t begin = 0; begin < order.size();) {
    const int64_t c = cls(lb[order[begin]]);
    size_t end = begin;
    while (end < order.size() && cls(lb[order[end]]) == c) ++end;
    dets.clear();
    for (size_t i = begin; i < end; ++i) {
      const int64_t d = order[i];
      rk[d] = static_cast<int64_t>(i - begin);
      if (rk[d] < max_det) dets.push_back(d);
    }
    begin = end;
    gts.clear();
    for (int64_t g = 0; g < G; ++g) {
      if (tl[g] >= 0 && cls(tl[g]) == c) gts.push_back(g);
    }
    const size_t nd = dets.size(), ng = gts.size();
    iou.assign(nd * ng, 0.0);
    for (size_t i = 0; i < nd; ++i) {
      for (size_t j = 0; j < ng; ++j) iou[i * ng + j] = BoxIou(bx + dets[i] * 4, tb + gts[j] * 4, cr[gts[j]] != 0);
    }
    for (size_t i = 0; i < nd; ++i) {
      for (int64_t w = 0; w < W; ++w) ign[dets[i] * W + w] = 0;
    }
    for (int a = 0; a < kCocoAreaRanges; ++a) {
      if (ng == 0) {
        // Nothing to match: a detection is ignored where its area is out of range.
        for (size_t i = 0; i < nd; ++i) {
          const double* b = bx + dets[i] * 4;
          if (!OutsideRange(b[2] * b[3], a)) continue;
          for (int64_t t = 0; t < T; ++t) SetBit(ign + dets[i] * W, a * T + t);
        }
        continue;
      }
      gt_ig.assign(ng, 0);
      for (size_t j = 0; j < ng; ++j) gt_ig[j] = cr[gts[j]] != 0 || OutsideRange(ta[gts[j]], a);
      // evaluateImg's order: regular ground truth first, then ignored, each in
      // slot order (its stable sort by the ignore flag).
      gt_sorted.clear();
      for (int pass = 0; pass < 2; ++pass) {
        for (size_t j = 0; j < ng; ++j) {
          if (gt_ig[j] == pass) gt_sorted.push_back(static_cast<int64_t>(j));
        }
      }
      for (int64_t t = 0; t < T; ++t) {
        const int64_t bit = a * T + t;
        taken.assign(ng, 0);
        for (size_t i = 0; i < nd; ++i) {
          double best = std::min(thr[t], 1 - 1e-10);
          int64_t m = -1;
          for (int64_t j : gt_sorted) {
            if (taken[j] && !cr[gts[j]]) continue;
            if (m > -1 && !gt_ig[m] && gt_ig[j]) break;
            if (iou[i * ng + j] < best) continue;
            best = iou[i * ng + j];
            m = j;
          }
          const int64_t d = dets[i];
          if (m == -1) {
            const double* b = bx + d * 4;
            if (OutsideRange(b[2] * b[3], a)) SetBit(ign + d * W, bit);
            continue;
          }
          taken[m] = 1;
          SetBit((gt_ig[m] ? ign : tpn) + d * W, bit);
        }
      }
    }
  }
}

at::Tensor CpuContiguous(const at::Tensor& t, at::ScalarType type) { return t.to(at::kCPU, type).contiguous(); }

// Rows are the accumulated rows of one matching (micro or per class).
struct Rows {
  const int64_t* rank;
  const int64_t* tp;
  const int64_t* ig;
};

// Summary holds precision [T, R, K, A, M] and recall [T, K, A, M] as
// accumulate leaves them (-1 where nothing was evaluated).
struct Summary {
  int64_t T, R, K, M;
  std::vector<double> precision, recall;
  double& P(int64_t t, int64_t r, int64_t k, int64_t a, int64_t m) {
    return precision[(((t * R + r) * K + k) * kCocoAreaRanges + a) * M + m];
  }
  double& Rc(int64_t t, int64_t k, int64_t a, int64_t m) { return recall[((t * K + k) * kCocoAreaRanges + a) * M + m]; }
};

// Curve sets the recall and the precision at the recall thresholds of
// (t, k, a, m) from the running true- and false-positive counts of its
// first nd detections, as accumulate does: the precision envelope, then
// pr[searchsorted(rc, recThrs, left)], 0 for every threshold from the first
// past the end (pycocotools' try/except).
void Curve(Summary& s, int64_t t, int64_t k, int a, int64_t m, const std::vector<double>& tp_sum,
           const std::vector<double>& fp_sum, size_t nd, int64_t npig, const std::vector<double>& rec,
           std::vector<double>& pr) {
  s.Rc(t, k, a, m) = nd ? tp_sum[nd - 1] / static_cast<double>(npig) : 0.0;
  pr.resize(nd);
  for (size_t i = 0; i < nd; ++i) pr[i] = tp_sum[i] / (fp_sum[i] + tp_sum[i] + std::numeric_limits<double>::epsilon());
  for (size_t i = nd; i-- > 1;) pr[i - 1] = std::max(pr[i - 1], pr[i]);
  bool past_end = false;
  for (int64_t r = 0; r < s.R; ++r) {
    double q = 0.0;
    if (!past_end) {
      // rc is non-decreasing but recThrs need not be: search afresh.
      const size_t pi = static_cast<size_t>(
          std::lower_bound(tp_sum.begin(), tp_sum.begin() + nd, rec[r],
                           [npig](double x, double v) { return x / static_cast<double>(npig) < v; }) -
          tp_sum.begin());
      if (pi >= nd)
        past_end = true;
      else
        q = pr[pi];
    }
    s.P(t, r, k, a, m) = q;
  }
}

// Accumulate fills category k of `s` from the detections `dets` (row
// indices in state order) and the ground truth `gts` of that category.
void Accumulate(Summary& s, int64_t k, const std::vector<int64_t>& dets, const std::vector<int64_t>& gts,
                const double* scores, const Rows& rows, const int64_t* counted, const std::vector<double>& rec,
                const std::vector<int64_t>& max_dets, int64_t W) {
  // accumulate's mergesort of the concatenated scores: ties keep image
  // order, then each image's own order, which is the state's row order.
  std::vector<int64_t> sorted = dets;
  std::stable_sort(sorted.begin(), sorted.end(), [&](int64_t x, int64_t y) { return scores[x] > scores[y]; });
  // Each maxDets limit's detections (each image's first ones), in that
  // order; the same for every area range.
  std::vector<std::vector<int64_t>> within(s.M);
  for (int64_t m = 0; m < s.M; ++m) {
    for (int64_t d : sorted) {
      if (rows.rank[d] < max_dets[m]) within[m].push_back(d);
    }
  }
  std::vector<double> tp_sum, fp_sum, pr;
  for (int a = 0; a < kCocoAreaRanges; ++a) {
    int64_t npig = 0;
    for (int64_t g : gts) npig += (counted[g] >> a) & 1;
    if (npig == 0) continue;
    for (int64_t m = 0; m < s.M; ++m) {
      const std::vector<int64_t>& sel = within[m];
      const size_t nd = sel.size();
      for (int64_t t = 0; t < s.T; ++t) {
        const int64_t bit = a * s.T + t;
        tp_sum.resize(nd);
        fp_sum.resize(nd);
        double tps = 0, fps = 0;
        for (size_t i = 0; i < nd; ++i) {
          const bool is_tp = GetBit(rows.tp + sel[i] * W, bit);
          const bool is_ig = GetBit(rows.ig + sel[i] * W, bit);
          tps += is_tp;
          fps += !is_tp && !is_ig;
          tp_sum[i] = tps;
          fp_sum[i] = fps;
        }
        Curve(s, t, k, a, m, tp_sum, fp_sum, nd, npig, rec, pr);
      }
    }
  }
}

// PairwiseSum is NumPy's pairwise summation of float64: eight running sums
// up to 128 elements, halves (at a multiple of 8) above.
double PairwiseSum(const double* a, int64_t n) {
  if (n < 8) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += a[i];
    return sum;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    int64_t i = 8;
    for (; i < n - n % 8; i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) sum += a[i];
    return sum;
  }
  int64_t half = n / 2;
  half -= half % 8;
  return PairwiseSum(a, half) + PairwiseSum(a + half, n - half);
}

// Mean is _summarize's np.mean(s[s > -1]), -1 when nothing is selected:
// np.add.reduce sums its ufunc buffers of 8192 elements pairwise, so the
// mean equals pycocotools' to the last bit.
double Mean(const std::vector<double>& v) {
  std::vector<double> kept;
  for (double x : v) {
    if (x > -1) kept.push_back(x);
  }
  if (kept.empty()) return -1.0;
  const int64_t n = static_cast<int64_t>(kept.size());
  double sum = 0.0;
  for (int64_t i = 0; i < n; i += 8192) sum += PairwiseSum(kept.data() + i, std::min<int64_t>(8192, n - i));
  return sum / static_cast<double>(n);
}

// Summarize is _summarize(ap, iouThr, areaRng, maxDets) over categories
// [k0, k1).
double Summarize(Summary& s, bool ap, const std::vector<double>& thr, double iou_thr, int a, int64_t max_det,
                 const std::vector<int64_t>& max_dets, int64_t k0, int64_t k1) {
  // aind/mind by equality: a maxDets not among the limits selects nothing.
  const auto mit = std::find(max_dets.begin(), max_dets.end(), max_det);
  if (mit == max_dets.end()) return -1.0;
  const int64_t m = mit - max_dets.begin();
  // The selection in NumPy's (C) order: t, then r, then k.
  std::vector<double> v;
  for (int64_t t = 0; t < s.T; ++t) {
    if (!std::isnan(iou_thr) && thr[t] != iou_thr) continue;
    for (int64_t r = 0; r < (ap ? s.R : 1); ++r) {
      for (int64_t k = k0; k < k1; ++k) v.push_back(ap ? s.P(t, r, k, a, m) : s.Rc(t, k, a, m));
    }
  }
  return Mean(v);
}

std::array<double, 12> Stats(Summary& s, const std::vector<double>& thr, const std::vector<int64_t>& md, int64_t k0,
                             int64_t k1) {
  const double all = NAN;
  auto S = [&](bool ap, double iou, int a, int64_t m) { return Summarize(s, ap, thr, iou, a, m, md, k0, k1); };
  // _summarizeDets: stats[0] at maxDets=100 as written, the rest at maxDets[2].
  return {S(true, all, 0, 100),    S(true, 0.5, 0, md[2]),  S(true, 0.75, 0, md[2]), S(true, all, 1, md[2]),
          S(true, all, 2, md[2]),  S(true, all, 3, md[2]),  S(false, all, 0, md[0]), S(false, all, 0, md[1]),
          S(false, all, 0, md[2]), S(false, all, 1, md[2]), S(false, all, 2, md[2]), S(false, all, 3, md[2])};
}

// Results are the op's outputs from `s`: the twelve stats, the classes and,
// from `per_class` (null: none), each class's map and mar.
std::vector<at::Tensor> Results(Summary& s, Summary* per_class, const std::vector<int64_t>& classes,
                                const std::vector<double>& iou_thresholds, const std::vector<int64_t>& max_dets,
                                const at::TensorOptions& f64, const at::TensorOptions& i64) {
  const int64_t K = static_cast<int64_t>(classes.size());
  const std::array<double, 12> stats = Stats(s, iou_thresholds, max_dets, 0, K);
  at::Tensor per_map = at::empty({per_class ? K : 0}, at::kDouble);
  at::Tensor per_mar = at::empty({per_class ? K : 0}, at::kDouble);
  for (int64_t k = 0; per_class && k < K; ++k) {
    const std::array<double, 12> st = Stats(*per_class, iou_thresholds, max_dets, k, k + 1);
    per_map[k] = st[0];
    per_mar[k] = st[8];
  }
  at::Tensor stats_t = at::empty({12}, at::kDouble);
  for (int i = 0; i < 12; ++i) stats_t[i] = stats[i];
  at::Tensor classes_t = at::empty({K}, at::kLong);
  for (int64_t k = 0; k < K; ++k) classes_t[k] = classes[k];
  return {stats_t.to(f64), classes_t.to(i64), per_map.to(f64), per_mar.to(f64)};
}

}  // namespace

std::vector<at::Tensor> CocoMatch(const std::vector<at::Tensor>& in, const std::vector<double>& iou_thresholds,
                                  int64_t max_det, bool micro) {
  const int64_t N = in[0].size(0), D = in[0].size(1), G = in[3].size(1);
  const int64_t W = CocoWords(static_cast<int64_t>(iou_thresholds.size()));
  const auto i64 = in[0].options().dtype(at::kLong);
  if (in[0].is_meta()) {
    return {at::empty({N * D}, i64), at::empty({N * D, W}, i64), at::empty({N * D, W}, i64), at::empty({N * G}, i64)};
  }
  if (!in[0].is_cpu()) {
    auto out = RunScript(CocoMatchScript(), "coco_match",
                         {in[0], in[1], in[2], in[3], in[4], in[5], in[6], iou_thresholds, max_det, micro})
                   .toTuple()
                   ->elements();
    return {out[0].toTensor(), out[1].toTensor(), out[2].toTensor(), out[3].toTensor()};
  }
  const at::Tensor boxes = CpuContiguous(in[0], at::kDouble), scores = CpuContiguous(in[1], at::kDouble);
  const at::Tensor labels = CpuContiguous(in[2], at::kLong), tboxes = CpuContiguous(in[3], at::kDouble);
  const at::Tensor tlabels = CpuContiguous(in[4], at::kLong), crowd = CpuContiguous(in[5], at::kLong);
  const at::Tensor tarea = CpuContiguous(in[6], at::kDouble);
  at::Tensor rank = at::full({N, D}, -1, i64), tp = at::zeros({N, D, W}, i64), ig = at::zeros({N, D, W}, i64);
  at::Tensor counted = at::zeros({N, G}, i64);
  at::parallel_for(0, N, 16, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      MatchImage(n, D, G, boxes.data_ptr<double>(), scores.data_ptr<double>(), labels.data_ptr<int64_t>(),
                 tboxes.data_ptr<double>(), tlabels.data_ptr<int64_t>(), crowd.data_ptr<int64_t>(),
                 tarea.data_ptr<double>(), iou_thresholds, max_det, micro, W, rank.data_ptr<int64_t>(),
                 tp.data_ptr<int64_t>(), ig.data_ptr<int64_t>(), counted.data_ptr<int64_t>());
    }
  });
  return {rank.view({N * D}), tp.view({N * D, W}), ig.view({N * D, W}), counted.view({N * G})};
}

std::vector<at::Tensor> CocoSummary(const std::vector<at::Tensor>& in, const std::vector<double>& iou_thresholds,
                                    const std::vector<double>& rec_thresholds, const std::vector<int64_t>& max_dets,
                                    bool micro, bool class_metrics) {
  const auto f64 = in[0].options().dtype(at::kDouble), i64 = in[0].options().dtype(at::kLong);
  const at::Tensor scores = CpuContiguous(in[0], at::kDouble), labels = CpuContiguous(in[1], at::kLong);
  const at::Tensor gt_labels = CpuContiguous(in[5], at::kLong), counted = CpuContiguous(in[6], at::kLong);
  std::vector<at::Tensor> kept;  // the row tensors the pointers below read
  auto rows_of = [&kept](const at::Tensor& rank, const at::Tensor& tp, const at::Tensor& ig) {
    kept.push_back(CpuContiguous(rank, at::kLong));
    kept.push_back(CpuContiguous(tp, at::kLong));
    kept.push_back(CpuContiguous(ig, at::kLong));
    const size_t e = kept.size();
    return Rows{kept[e - 3].data_ptr<int64_t>(), kept[e - 2].data_ptr<int64_t>(), kept[e - 1].data_ptr<int64_t>()};
  };
  const Rows rows = rows_of(in[2], in[3], in[4]);
  // Per-class values come from a per-class matching: with micro, its rows
  // follow (in[7..9]).
  const Rows per_class = in.size() > 7 ? rows_of(in[7], in[8], in[9]) : rows;
  const int64_t R = scores.size(0), Rg = gt_labels.size(0);
  const int64_t W = CocoWords(static_cast<int64_t>(iou_thresholds.size()));
  const double* sc = scores.data_ptr<double>();
  const int64_t* lb = labels.data_ptr<int64_t>();
  const int64_t* gl = gt_labels.data_ptr<int64_t>();
  const int64_t* cn = counted.data_ptr<int64_t>();

  std::vector<int64_t> classes;
  for (int64_t i = 0; i < R; ++i)
    if (lb[i] >= 0) classes.push_back(lb[i]);
  for (int64_t i = 0; i < Rg; ++i)
    if (gl[i] >= 0) classes.push_back(gl[i]);
  std::sort(classes.begin(), classes.end());
  classes.erase(std::unique(classes.begin(), classes.end()), classes.end());
  const int64_t K = static_cast<int64_t>(classes.size());
  auto index_of = [&classes](int64_t label) {
    return std::lower_bound(classes.begin(), classes.end(), label) - classes.begin();
  };
  // The rows of each category, in state order.
  auto group = [&](bool as_micro, std::vector<std::vector<int64_t>>& dets, std::vector<std::vector<int64_t>>& gts) {
    dets.assign(K, {});
    gts.assign(K, {});
    // micro: every label is 0, and only a category 0 among the classes
    // evaluates anything.
    const int64_t zero = as_micro && K && std::binary_search(classes.begin(), classes.end(), 0) ? index_of(0) : -1;
    for (int64_t i = 0; i < R; ++i) {
      if (lb[i] < 0) continue;
      const int64_t k = as_micro ? zero : index_of(lb[i]);
      if (k >= 0) dets[k].push_back(i);
    }
    for (int64_t i = 0; i < Rg; ++i) {
      if (gl[i] < 0) continue;
      const int64_t k = as_micro ? zero : index_of(gl[i]);
      if (k >= 0) gts[k].push_back(i);
    }
  };
  const int64_t T = static_cast<int64_t>(iou_thresholds.size()), RT = static_cast<int64_t>(rec_thresholds.size());
  const int64_t M = static_cast<int64_t>(max_dets.size());
  auto summary = [&](bool as_micro, const Rows& r) {
    Summary s{T,
              RT,
              K,
              M,
              std::vector<double>(T * RT * K * kCocoAreaRanges * M, -1.0),
              std::vector<double>(T * K * kCocoAreaRanges * M, -1.0)};
    std::vector<std::vector<int64_t>> dets, gts;
    group(as_micro, dets, gts);
    for (int64_t k = 0; k < K; ++k) {
      if (dets[k].empty() && gts[k].empty()) continue;
      Accumulate(s, k, dets[k], gts[k], sc, r, cn, rec_thresholds, max_dets, W);
    }
    return s;
  };
  Summary s = summary(micro, rows);
  std::optional<Summary> macro;
  if (class_metrics && micro) macro = summary(false, per_class);
  return Results(s, class_metrics ? (macro ? &*macro : &s) : nullptr, classes, iou_thresholds, max_dets, f64, i64);
}

std::vector<at::Tensor> CocoBins(const std::vector<at::Tensor>& in, int64_t num_classes, int64_t score_bins,
                                 const std::vector<int64_t>& max_dets, int64_t thresholds) {
  const int64_t C = num_classes, K = score_bins, T = thresholds, A = kCocoAreaRanges;
  const auto i64 = in[0].options().dtype(at::kLong);
  const int64_t R = in[0].size(0), S = A * T;
  if (in[0].is_meta()) return {at::empty({R, S, 2}, i64), at::empty({C, A + 1}, i64)};
  if (!in[0].is_cpu()) {
    std::vector<c10::IValue> args(in.begin(), in.end());
    args.insert(args.end(), {num_classes, score_bins, max_dets, thresholds});
    auto out = RunScript(CocoBinsScript(), "coco_bins", args).toTuple();
    return {out->elements()[0].toTensor(), out->elements()[1].toTensor()};
  }
  const at::Tensor scores = CpuContiguous(in[0], at::kDouble), labels = CpuContiguous(in[1], at::kLong);
  const at::Tensor rank = CpuContiguous(in[2], at::kLong), tp = CpuContiguous(in[3], at::kLong);
  const at::Tensor ig = CpuContiguous(in[4], at::kLong), gt_labels = CpuContiguous(in[5], at::kLong);
  const at::Tensor counted = CpuContiguous(in[6], at::kLong);
  // Slot (a, t) of row i: its cell's flat index and 1, or (0, 0). A row
  // counts under its tightest maxDets limit only: the summary adds the
  // looser limits' counts to each limit's.
  at::Tensor rows = at::zeros({R, S, 2}, i64), gt = at::zeros({C, A + 1}, i64);
  int64_t* out = rows.data_ptr<int64_t>();
  int64_t* g = gt.data_ptr<int64_t>();
  const int64_t W = tp.size(1);
  const double* sc = scores.data_ptr<double>();
  const int64_t* lb = labels.data_ptr<int64_t>();
  const int64_t* rk = rank.data_ptr<int64_t>();
  const int64_t* tpd = tp.data_ptr<int64_t>();
  const int64_t* igd = ig.data_ptr<int64_t>();
  for (int64_t i = 0; i < scores.size(0); ++i) {
    const int64_t c = lb[i];
    if (c < 0 || c >= C) continue;  // padding; a label out of range is the metric's check
    ++g[c * (A + 1) + A];
    // Bins of width 1/K over [0, 1]; scores outside fall in the end bins.
    const double bin = std::floor(sc[i] * static_cast<double>(K));
    const int64_t b = std::isnan(bin) ? 0 : static_cast<int64_t>(std::clamp(bin, 0.0, static_cast<double>(K - 1)));
    int64_t m = 0;
    while (m < 3 && !(rk[i] >= 0 && rk[i] < max_dets[m])) ++m;
    if (m == 3) continue;  // past every limit
    const int64_t* tpw = tpd + i * W;
    const int64_t* igw = igd + i * W;
    for (int64_t a = 0; a < A; ++a) {
      for (int64_t t = 0; t < T; ++t) {
        const bool is_tp = GetBit(tpw, a * T + t);
        if (!is_tp && GetBit(igw, a * T + t)) continue;  // ignored: neither
        int64_t* slot = out + ((i * A + a) * T + t) * 2;
        slot[0] = (((((c * A + a) * 3 + m) * T + t) * K + b) * 2) + (is_tp ? 0 : 1);
        slot[1] = 1;
      }
    }
  }
  const int64_t* gl = gt_labels.data_ptr<int64_t>();
  const int64_t* cn = counted.data_ptr<int64_t>();
  for (int64_t i = 0; i < gt_labels.size(0); ++i) {
    const int64_t c = gl[i];
    if (c < 0 || c >= C) continue;
    ++g[c * (A + 1) + A];
    for (int64_t a = 0; a < A; ++a) g[c * (A + 1) + a] += (cn[i] >> a) & 1;
  }
  return {rows, gt};
}

std::vector<at::Tensor> CocoBinsSummary(const at::Tensor& hist_in, const at::Tensor& gt_in,
                                        const std::vector<double>& iou_thresholds,
                                        const std::vector<double>& rec_thresholds, const std::vector<int64_t>& max_dets,
                                        bool class_metrics) {
  const auto f64 = hist_in.options().dtype(at::kDouble), i64 = hist_in.options().dtype(at::kLong);
  const at::Tensor hist = CpuContiguous(hist_in, at::kLong), gt = CpuContiguous(gt_in, at::kLong);
  const int64_t C = hist.size(0), A = kCocoAreaRanges, T = hist.size(3), KB = hist.size(4);
  const int64_t* h = hist.data_ptr<int64_t>();
  const int64_t* g = gt.data_ptr<int64_t>();
  std::vector<int64_t> classes;
  for (int64_t c = 0; c < C; ++c)
    if (g[c * (A + 1) + A] > 0) classes.push_back(c);
  const int64_t K = static_cast<int64_t>(classes.size()), RT = static_cast<int64_t>(rec_thresholds.size());
  Summary s{T, RT, K, 3, std::vector<double>(T * RT * K * A * 3, -1.0), std::vector<double>(T * K * A * 3, -1.0)};
  std::vector<double> tp_sum, fp_sum, pr;
  std::vector<int64_t> points, seen(KB), limit(T * KB * 2);
  for (int64_t k = 0; k < K; ++k) {
    const int64_t c = classes[k];
    for (int64_t a = 0; a < A; ++a) {
      const int64_t npig = g[c * (A + 1) + a];
      if (npig == 0) continue;
      // A limit's counts: its own rows' and the tighter limits' ([T, K, 2]).
      std::fill(limit.begin(), limit.end(), 0);
      for (int64_t m = 0; m < 3; ++m) {
        const int64_t* own = h + ((c * A + a) * 3 + m) * T * KB * 2;
        for (int64_t j = 0; j < T * KB * 2; ++j) limit[j] += own[j];
        const int64_t* cell = limit.data();
        // A bin is a point of the curve, shared by every threshold, when it
        // holds a counted detection at some threshold: its detections
        // enter together, highest bin first (a bin empty at one threshold
        // repeats the point before, as an ignored detection does).
        // (Summed threshold by threshold: each pass reads one row of bins
        // in order, which a bin per 16-bit code needs.)
        std::fill(seen.begin(), seen.end(), 0);
        for (int64_t t = 0; t < T; ++t) {
          const int64_t* row = cell + t * KB * 2;
          for (int64_t b = 0; b < KB; ++b) seen[b] += row[2 * b] + row[2 * b + 1];
        }
        points.clear();
        for (int64_t b = KB; b-- > 0;) {
          if (seen[b] > 0) points.push_back(b);
        }
        const size_t nd = points.size();
        for (int64_t t = 0; t < T; ++t) {
          tp_sum.resize(nd);
          fp_sum.resize(nd);
          double tps = 0, fps = 0;
          for (size_t i = 0; i < nd; ++i) {
            tps += static_cast<double>(cell[(t * KB + points[i]) * 2]);
            fps += static_cast<double>(cell[(t * KB + points[i]) * 2 + 1]);
            tp_sum[i] = tps;
            fp_sum[i] = fps;
          }
          Curve(s, t, k, static_cast<int>(a), m, tp_sum, fp_sum, nd, npig, rec_thresholds, pr);
        }
      }
    }
  }
  return Results(s, class_metrics ? &s : nullptr, classes, iou_thresholds, max_dets, f64, i64);
}

}  // namespace tally::ops::fused

namespace tally::ops::fused {

// coco_match in tensor ops over all images at once: one step per sorted
// detection slot, each choosing every image's, area range's and
// threshold's match together (the same rule as MatchImage: the regular
// ground truth of highest IoU at or above the threshold, the later one on
// ties; ignored ground truth only when no regular one qualifies).
// TorchScript's torch.tensor(List[float], dtype=float64) and `t[i] = x`
// round a Python float through float32; fill_ keeps every bit.
constexpr char kF64Tensor[] = R"TS(
def coco_f64(v: List[float], like: Tensor) -> Tensor:
    out = torch.zeros([len(v)], dtype=7, device=like.device)
    for i in range(len(v)):
        out[i].fill_(v[i])
    return out
)TS";

const char* CocoMatchScript() {
  static const std::string* source = new std::string(std::string(kF64Tensor) + R"TS(
def coco_match(boxes: Tensor, scores: Tensor, labels: Tensor, tboxes: Tensor, tlabels: Tensor, crowd: Tensor,
               tarea: Tensor, iou_thresholds: List[float], max_det: int, micro: bool
               ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    n = boxes.size(0)
    d = boxes.size(1)
    g = tboxes.size(1)
    t = len(iou_thresholds)
    w = (4 * t + 63) // 64
    dev = boxes.device
    if boxes.is_meta:
        return (torch.empty([n * d], dtype=4, device=dev), torch.empty([n * d, w], dtype=4, device=dev),
                torch.empty([n * d, w], dtype=4, device=dev), torch.empty([n * g], dtype=4, device=dev))
    bx = boxes.to(7)
    tb = tboxes.to(7)
    # (no float list literals: an export prints 1e10 as an int)
    lo = torch.zeros([4], dtype=7, device=dev)
    lo[2].fill_(1024.0)
    lo[3].fill_(9216.0)
    hi = torch.full([4], 1e10, dtype=7, device=dev)
    hi[1].fill_(1024.0)
    hi[2].fill_(9216.0)
    is_crowd = crowd != 0
    gt_real = tlabels >= 0
    # [N, G, A]: outside the range or a crowd (ignored), and counted
    gt_out = (tarea.to(7).unsqueeze(2) < lo) | (tarea.to(7).unsqueeze(2) > hi)
    gt_ig = gt_out | is_crowd.unsqueeze(2)
    counted = (((~gt_ig) & gt_real.unsqueeze(2)).to(4) * torch.tensor([1, 2, 4, 8], dtype=4, device=dev)).sum(2)
    det_real = labels >= 0
    cls = labels if not micro else torch.zeros_like(labels)
    tcls = tlabels if not micro else torch.zeros_like(tlabels)
    # (class, score descending, slot), padding last
    key = torch.where(det_real, cls, torch.full_like(cls, 9223372036854775807))
    s1 = torch.sort(scores.to(7), stable=True, dim=1, descending=True)[1]
    s2 = torch.sort(torch.gather(key, 1, s1), stable=True, dim=1)[1]
    order = torch.gather(s1, 1, s2)
    skey = torch.gather(key, 1, order)
    pos = torch.arange(d, device=dev).unsqueeze(0).expand([n, d])
    first = torch.ones_like(skey, dtype=11)
    if d > 1:
        first = torch.cat([first.narrow(1, 0, 1), skey.narrow(1, 1, d - 1) != skey.narrow(1, 0, d - 1)], 1)
    start = torch.cummax(torch.where(first, pos, torch.zeros_like(pos)), 1)[0]
    srank = pos - start
    rank = torch.full([n, d], -1, dtype=4, device=dev).scatter(1, order, srank)
    rank = torch.where(det_real, rank, torch.full_like(rank, -1))
    # IoU [N, D, G] as bbIou, -1 across classes and padding
    dx = bx.unsqueeze(2)
    gx = tb.unsqueeze(1)
    iw = torch.minimum(dx[..., 0] + dx[..., 2], gx[..., 0] + gx[..., 2]) - torch.maximum(dx[..., 0], gx[..., 0])
    ih = torch.minimum(dx[..., 1] + dx[..., 3], gx[..., 1] + gx[..., 3]) - torch.maximum(dx[..., 1], gx[..., 1])
    inter = iw * ih
    da = dx[..., 2] * dx[..., 3]
    ga = gx[..., 2] * gx[..., 3]
    union = torch.where(is_crowd.unsqueeze(1), da, da + ga - inter)
    iou = torch.where((iw > 0) & (ih > 0), inter / union, torch.zeros_like(inter))
    same = (cls.unsqueeze(2) == tcls.unsqueeze(1)) & det_real.unsqueeze(2) & gt_real.unsqueeze(1)
    iou = torch.where(same, iou, torch.full_like(iou, -1.0))
    thr = coco_f64(iou_thresholds, bx).clamp_max(1 - 1e-10).view([1, 1, t, 1])
    det_area = (bx[..., 2] * bx[..., 3]).unsqueeze(2)
    det_out = (det_area < lo) | (det_area > hi)  # [N, D, A]
    taken = torch.zeros([n, 4, t, g], dtype=11, device=dev)
    tp = torch.zeros([n, d, 4, t], dtype=11, device=dev)
    ig = torch.ones([n, d, 4, t], dtype=11, device=dev)
    gidx = torch.arange(g, device=dev).view([1, 1, 1, g])
    gig = gt_ig.transpose(1, 2).unsqueeze(2)  # [N, A, 1, G]
    rows = torch.arange(n, device=dev)
    if g == 0:
        active_all = ((rank >= 0) & (rank < max_det)).view([n, d, 1, 1])
        ig = det_out.view([n, d, 4, 1]).expand([n, d, 4, t]) | (~active_all)
    for i in range(d if g > 0 else 0):
        det = order.select(1, i)
        active = (rank[rows, det] >= 0) & (rank[rows, det] < max_det)
        io = iou[rows, det].view([n, 1, 1, g])
        # (TorchScript's parser binds ~ looser than &: every ~ is parenthesized.)
        cand = (~(taken & (~is_crowd.view([n, 1, 1, g])))) & (io >= thr)
        regular = cand & (~gig)
        pick = torch.where(regular.any(3, True), regular, cand & gig)
        best = torch.where(pick, io.expand_as(pick), torch.full_like(pick, -2.0, dtype=7)).amax(3, True)
        m = torch.where(pick & (io == best), gidx.expand_as(pick), torch.full_like(pick, -1, dtype=4)).amax(3)
        hit = (m >= 0) & active.view([n, 1, 1])
        mc = m.clamp_min(0)
        m_ig = torch.gather(gig.expand([n, 4, t, g]), 3, mc.unsqueeze(3)).squeeze(3)
        taken = taken | (hit.unsqueeze(3) & (gidx == mc.unsqueeze(3)))
        out = det_out[rows, det].view([n, 4, 1])
        tp[rows, det] = hit & (~m_ig)
        ig[rows, det] = torch.where(hit, m_ig, out.expand([n, 4, t])) | (~active.view([n, 1, 1]))
    bits = torch.cat([tp.reshape([n, d, 4 * t]), torch.zeros([n, d, 64 * w - 4 * t], dtype=11, device=dev)], 2)
    ibits = torch.cat([ig.reshape([n, d, 4 * t]), torch.zeros([n, d, 64 * w - 4 * t], dtype=11, device=dev)], 2)
    shift = torch.ones([64], dtype=4, device=dev).cumsum(0) - 1
    weight = torch.ones([64], dtype=4, device=dev) << shift
    tpw = (bits.reshape([n, d, w, 64]).to(4) * weight).sum(3)
    igw = (ibits.reshape([n, d, w, 64]).to(4) * weight).sum(3)
    return (rank.reshape([n * d]), tpw.reshape([n * d, w]), igw.reshape([n * d, w]), counted.reshape([n * g]))
)TS");
  return source->c_str();
}

// accumulate's curve and summarize in tensor ops, shared by coco_summary
// and coco_bins_summary: coco_curve is Curve for every threshold at once
// (tp_sum, fp_sum [t, nd]).
constexpr char kCocoCurveAndStats[] = R"TS(
def coco_curve(tp_sum: Tensor, fp_sum: Tensor, npig: int, rec: Tensor) -> Tuple[Tensor, Tensor]:
    t = tp_sum.size(0)
    nd = tp_sum.size(1)
    r_n = rec.size(0)
    if nd == 0:
        return (torch.zeros([t], dtype=7), torch.zeros([t, r_n], dtype=7))
    rc = tp_sum / npig
    pr = tp_sum / (fp_sum + tp_sum + 2.220446049250313e-16)
    pr = torch.flip(torch.cummax(torch.flip(pr, [1]), 1)[0], [1])
    pi = torch.searchsorted(rc.contiguous(), rec.unsqueeze(0).expand([t, r_n]).contiguous())
    past = (pi >= nd).to(4).cumsum(1) > 0
    q = torch.gather(pr, 1, pi.clamp_max(nd - 1))
    return (rc[:, nd - 1], torch.where(past, torch.zeros_like(q), q))

def coco_mean(s: Tensor) -> float:
    v = s[s > -1]
    if v.numel() == 0:
        return -1.0
    return float(v.sum() / v.numel())

def coco_stat(precision: Tensor, recall: Tensor, thr: List[float], ap: bool, iou: float, a: int, md: int,
              max_dets: List[int], k0: int, k1: int) -> float:
    m = -1
    for i in range(len(max_dets)):
        if max_dets[i] == md and m < 0:
            m = i
    if m < 0:
        return -1.0
    ts: List[int] = []
    for i in range(len(thr)):
        if iou < 0.0 or thr[i] == iou:
            ts.append(i)
    if len(ts) == 0:
        return -1.0
    ti = torch.tensor(ts, dtype=4)
    if ap:
        return coco_mean(precision[ti].narrow(2, k0, k1 - k0)[:, :, :, a, m])
    return coco_mean(recall[ti].narrow(1, k0, k1 - k0)[:, :, a, m])

def coco_stats(precision: Tensor, recall: Tensor, thr: List[float], md: List[int], k0: int, k1: int) -> List[float]:
    out: List[float] = []
    for (ap, iou, a, mx) in [(True, -1.0, 0, 100), (True, 0.5, 0, md[2]), (True, 0.75, 0, md[2]),
                             (True, -1.0, 1, md[2]), (True, -1.0, 2, md[2]), (True, -1.0, 3, md[2]),
                             (False, -1.0, 0, md[0]), (False, -1.0, 0, md[1]), (False, -1.0, 0, md[2]),
                             (False, -1.0, 1, md[2]), (False, -1.0, 2, md[2]), (False, -1.0, 3, md[2])]:
        out.append(coco_stat(precision, recall, thr, ap, iou, a, mx, md, k0, k1))
    return out

def coco_meta_results(on: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    dev = on.device
    return (torch.empty([12], dtype=7, device=dev), torch.empty([0], dtype=4, device=dev),
            torch.empty([0], dtype=7, device=dev), torch.empty([0], dtype=7, device=dev))

def coco_results(p: Tensor, r: Tensor, classes: Tensor, iou_thresholds: List[float], max_dets: List[int],
                 per_p: Tensor, per_r: Tensor, class_metrics: bool, like: Tensor, on: Tensor
                 ) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    # `like`: the host's float64; `on`: a tensor on the results' device.
    dev = on.device
    stats = coco_f64(coco_stats(p, r, iou_thresholds, max_dets, 0, classes.size(0)), like)
    k_n = classes.size(0) if class_metrics else 0
    per_map = torch.zeros([k_n], dtype=7)
    per_mar = torch.zeros([k_n], dtype=7)
    for k in range(k_n):
        st = coco_stats(per_p, per_r, iou_thresholds, max_dets, k, k + 1)
        per_map[k].fill_(st[0])
        per_mar[k].fill_(st[8])
    return (stats.to(dev), classes.to(dev), per_map.to(dev), per_mar.to(dev))
)TS";

// coco_summary in tensor ops (finalize: the host loops over categories,
// area ranges and maxDets; thresholds are vectorized).
const char* CocoSummaryScript() {
  static const std::string* source = new std::string(std::string(kF64Tensor) + kCocoCurveAndStats + R"TS(
def coco_accumulate(scores: Tensor, labels: Tensor, rank: Tensor, tp: Tensor, ig: Tensor, gt_labels: Tensor,
                    counted: Tensor, classes: Tensor, micro: bool, t: int, rec: Tensor, max_dets: List[int]
                    ) -> Tuple[Tensor, Tensor]:
    k_n = classes.size(0)
    r_n = rec.size(0)
    m_n = len(max_dets)
    precision = torch.full([t, r_n, k_n, 4, m_n], -1.0, dtype=7)
    recall = torch.full([t, k_n, 4, m_n], -1.0, dtype=7)
    w = tp.size(1)
    shift = torch.ones([64], dtype=4).cumsum(0) - 1
    tpb = ((tp.unsqueeze(2) >> shift) & 1).reshape([-1, 64 * w]).narrow(1, 0, 4 * t).reshape([-1, 4, t]) != 0
    igb = ((ig.unsqueeze(2) >> shift) & 1).reshape([-1, 64 * w]).narrow(1, 0, 4 * t).reshape([-1, 4, t]) != 0
    has_zero = bool((classes == 0).any())
    for k in range(k_n):
        c = int(classes[k])
        if micro:
            if c != 0 or not has_zero:
                continue
            dsel = labels >= 0
            gsel = gt_labels >= 0
        else:
            dsel = labels == c
            gsel = gt_labels == c
        if not bool(dsel.any()) and not bool(gsel.any()):
            continue
        idx = torch.nonzero(dsel).view([-1])
        order = torch.sort(scores[idx], stable=True, descending=True)[1]
        idx = idx[order]
        for a in range(4):
            npig = int(((counted[gsel] >> a) & 1).sum())
            if npig == 0:
                continue
            for m in range(m_n):
                sel = idx[rank[idx] < max_dets[m]]
                tps = tpb[sel, a].transpose(0, 1).to(7)
                fps = ((~tpb[sel, a]) & (~igb[sel, a])).transpose(0, 1).to(7)
                rc, q = coco_curve(tps.cumsum(1), fps.cumsum(1), npig, rec)
                recall[:, k, a, m] = rc
                precision[:, :, k, a, m] = q
    return (precision, recall)

def coco_summary(scores: Tensor, labels: Tensor, rank: Tensor, tp: Tensor, ig: Tensor, gt_labels: Tensor,
                 counted: Tensor, extra: List[Tensor], iou_thresholds: List[float], rec_thresholds: List[float],
                 max_dets: List[int], micro: bool, class_metrics: bool) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    if scores.is_meta:
        return coco_meta_results(scores)
    cpu = torch.device("cpu")
    sc = scores.to(cpu, 7)
    lb = labels.to(cpu, 4)
    gl = gt_labels.to(cpu, 4)
    cn = counted.to(cpu, 4)
    seen = torch.sort(torch.cat([lb[lb >= 0], gl[gl >= 0]]))[0]
    classes = seen
    if seen.numel() > 1:
        classes = seen[torch.cat([torch.ones([1], dtype=11), seen.narrow(0, 1, seen.numel() - 1) != seen.narrow(0, 0, seen.numel() - 1)])]
    t = len(iou_thresholds)
    rec = coco_f64(rec_thresholds, sc)
    p, r = coco_accumulate(sc, lb, rank.to(cpu, 4), tp.to(cpu, 4), ig.to(cpu, 4), gl, cn, classes, micro, t, rec,
                           max_dets)
    per_p, per_r = p, r
    if class_metrics and micro:
        per_p, per_r = coco_accumulate(sc, lb, extra[0].to(cpu, 4), extra[1].to(cpu, 4), extra[2].to(cpu, 4), gl, cn,
                                       classes, False, t, rec, max_dets)
    return coco_results(p, r, classes, iou_thresholds, max_dets, per_p, per_r, class_metrics, sc, scores)
)TS");
  return source->c_str();
}

// coco_bins in tensor ops: every row's bits at once, counted by index_add
// into the flat histogram (fixed size: no host read).
const char* CocoBinsScript() {
  static const std::string* source = new std::string(R"TS(
def coco_bins(scores: Tensor, labels: Tensor, rank: Tensor, tp: Tensor, ig: Tensor, gt_labels: Tensor,
              counted: Tensor, num_classes: int, score_bins: int, max_dets: List[int], t: int
              ) -> Tuple[Tensor, Tensor]:
    c_n = num_classes
    k_n = score_bins
    dev = scores.device
    rows = tp.size(0)
    if scores.is_meta:
        return (torch.empty([rows, 4 * t, 2], dtype=4, device=dev), torch.empty([c_n, 5], dtype=4, device=dev))
    w = tp.size(1)
    lb = labels.to(4)
    valid = (lb >= 0) & (lb < c_n)
    c = torch.where(valid, lb, 0)
    b = torch.floor(scores.to(7) * k_n)
    b = torch.where(torch.isnan(b), torch.zeros_like(b), b).clamp(0, k_n - 1).to(4)
    shift = torch.ones([64], dtype=4, device=dev).cumsum(0) - 1
    tpb = ((tp.to(4).unsqueeze(2) >> shift) & 1).reshape([rows, 64 * w]).narrow(1, 0, 4 * t) != 0
    igb = ((ig.to(4).unsqueeze(2) >> shift) & 1).reshape([rows, 64 * w]).narrow(1, 0, 4 * t) != 0
    bits = torch.ones([4 * t], dtype=4, device=dev).cumsum(0) - 1
    a = torch.div(bits, t, rounding_mode="floor")
    tt = bits - a * t
    fpb = (~tpb) & (~igb)
    # Slot (a, t) of each row: its cell's flat index and 1, or (0, 0); a
    # row counts under its tightest maxDets limit (3: past every one).
    limit = torch.full_like(lb, 3)
    for m in range(2, -1, -1):
        limit = torch.where((rank >= 0) & (rank < max_dets[m]), torch.full_like(lb, m), limit)
    inm = (valid & (limit < 3)).unsqueeze(1)
    cell = ((((c * 4).unsqueeze(1) + a) * 3 + limit.clamp(0, 2).unsqueeze(1)) * t + tt) * k_n + b.unsqueeze(1)
    hit = ((tpb | fpb) & inm).to(4)
    idx = (cell * 2 + (~tpb).to(4)) * hit
    gl = gt_labels.to(4)
    gvalid = (gl >= 0) & (gl < c_n)
    gc = torch.where(gvalid, gl, 0)
    gt = torch.zeros([c_n * 5], dtype=4, device=dev)
    gt.index_add_(0, c * 5 + 4, valid.to(4))
    gt.index_add_(0, gc * 5 + 4, gvalid.to(4))
    cn = counted.to(4)
    for aa in range(4):
        gt.index_add_(0, gc * 5 + aa, ((cn >> aa) & 1) * gvalid.to(4))
    return (torch.stack([idx, hit], 2), gt.reshape([c_n, 5]))
)TS");
  return source->c_str();
}

// coco_bins_summary in tensor ops (finalize, on the host).
const char* CocoBinsSummaryScript() {
  static const std::string* source = new std::string(std::string(kF64Tensor) + kCocoCurveAndStats + R"TS(
def coco_bins_summary(hist: Tensor, gt: Tensor, iou_thresholds: List[float], rec_thresholds: List[float],
                      max_dets: List[int], micro: bool, class_metrics: bool) -> Tuple[Tensor, Tensor, Tensor, Tensor]:
    if hist.is_meta:
        return coco_meta_results(hist)
    cpu = torch.device("cpu")
    h = hist.to(cpu, 4).cumsum(2)  # a limit's counts: its own rows' and the tighter limits'
    g = gt.to(cpu, 4)
    classes = torch.nonzero(g[:, 4] > 0).view([-1])
    t = len(iou_thresholds)
    like = torch.zeros([0], dtype=7)
    rec = coco_f64(rec_thresholds, like)
    k_n = classes.size(0)
    precision = torch.full([t, rec.size(0), k_n, 4, 3], -1.0, dtype=7)
    recall = torch.full([t, k_n, 4, 3], -1.0, dtype=7)
    for k in range(k_n):
        c = int(classes[k])
        for a in range(4):
            npig = int(g[c, a])
            if npig == 0:
                continue
            for m in range(3):
                cell = torch.flip(h[c, a, m], [1])
                pts = cell[:, cell.sum([0, 2]) > 0]
                rc, q = coco_curve(pts[:, :, 0].to(7).cumsum(1), pts[:, :, 1].to(7).cumsum(1), npig, rec)
                recall[:, k, a, m] = rc
                precision[:, :, k, a, m] = q
    return coco_results(precision, recall, classes, iou_thresholds, max_dets, precision, recall, class_metrics, like,
                        hist)
)TS");
  return source->c_str();
}

}  // namespace tally::ops::fused
