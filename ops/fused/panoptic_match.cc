#include "ops/fused/panoptic_match.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "ops/fused/script.h"

namespace tally::ops::fused {
namespace {

// Segment is a (continuous category, instance) pair; category c (the count
// of categories) is void.
using Segment = std::pair<int64_t, int64_t>;

// Segments numbers the distinct segments of one side of an image.
struct Segments {
  absl::flat_hash_map<Segment, int64_t> ids;
  std::vector<int64_t> category;
  std::vector<int64_t> area;
  int64_t Id(const Segment& s) {
    auto [it, added] = ids.try_emplace(s, static_cast<int64_t>(category.size()));
    if (added) {
      category.push_back(s.first);
      area.push_back(0);
    }
    return it->second;
  }
};

// Categories maps category ids to continuous ids (c: void, unknown).
struct Categories {
  absl::flat_hash_map<int64_t, int64_t> continuous;
  int64_t things = 0, count = 0;
  // Of maps a point to its segment: a stuff's or void's instance is 0.
  Segment Of(int64_t category, int64_t instance, bool& unknown) const {
    auto it = continuous.find(category);
    unknown = it == continuous.end();
    if (unknown) return {count, 0};
    return {it->second, it->second < things ? instance : 0};
  }
};

// FloatRatio is a / b as TorchMetrics divides int64 tensors: in float32.
float FloatRatio(int64_t a, int64_t b) { return static_cast<float>(a) / static_cast<float>(b); }

void MatchImage(const int64_t* p, const int64_t* t, int64_t points, const Categories& cats, int64_t* counts,
                int64_t* unknown) {
  const int64_t c = cats.count;
  Segments pred, target;
  absl::flat_hash_map<std::pair<int64_t, int64_t>, int64_t> pairs;  // (pred, target) segment -> points
  // Runs of one (pred, target) point pair (most of an image) take one lookup.
  int64_t last[4] = {0, 0, 0, 0};
  std::pair<int64_t, int64_t> run{-1, -1};
  int64_t run_length = 0;
  int64_t unknown_points = 0;
  bool run_unknown = false;
  for (int64_t i = 0; i < points; ++i) {
    const int64_t* pp = p + 2 * i;
    const int64_t* tp = t + 2 * i;
    if (run_length > 0 && pp[0] == last[0] && pp[1] == last[1] && tp[0] == last[2] && tp[1] == last[3]) {
      ++run_length;
      continue;
    }
    if (run_length > 0) {
      pairs[run] += run_length;
      if (run_unknown) unknown_points += run_length;
    }
    bool target_unknown = false;
    run = {pred.Id(cats.Of(pp[0], pp[1], run_unknown)), target.Id(cats.Of(tp[0], tp[1], target_unknown))};
    run_length = 1;
    last[0] = pp[0], last[1] = pp[1], last[2] = tp[0], last[3] = tp[1];
  }
  if (run_length > 0) {
    pairs[run] += run_length;
    if (run_unknown) unknown_points += run_length;
  }
  *unknown = unknown_points;
  const Segment void_segment{c, 0};
  const auto pv = pred.ids.find(void_segment);
  const auto tv = target.ids.find(void_segment);
  const int64_t pred_void = pv == pred.ids.end() ? -1 : pv->second;
  const int64_t target_void = tv == target.ids.end() ? -1 : tv->second;
  std::vector<int64_t> pred_in_void(pred.area.size(), 0), void_in_target(target.area.size(), 0);
  for (const auto& [key, n] : pairs) {
    pred.area[key.first] += n;
    target.area[key.second] += n;
    if (key.second == target_void) pred_in_void[key.first] += n;
    if (key.first == pred_void) void_in_target[key.second] += n;
  }
  std::vector<char> pred_matched(pred.area.size(), 0), target_matched(target.area.size(), 0);
  int64_t* units = counts;
  int64_t* tps = counts + c;
  int64_t* fps = counts + 2 * c;
  int64_t* fns = counts + 3 * c;
  for (const auto& [key, inter] : pairs) {
    const auto [ps, ts] = key;
    const int64_t k = target.category[ts];
    if (ts == target_void || pred.category[ps] != k) continue;
    const int64_t uni =
        pred.area[ps] - pred_in_void[ps] + target.area[ts] - void_in_target[ts] - inter;  // >= inter > 0
    const float iou = FloatRatio(inter, uni);
    if (!(iou > 0.5f)) continue;  // above one half: at most one match per segment
    units[k] += static_cast<int64_t>(static_cast<double>(iou) / ops::kPanopticIouUnit);
    ++tps[k];
    pred_matched[ps] = target_matched[ts] = 1;
  }
  for (size_t s = 0; s < target.area.size(); ++s) {
    if (static_cast<int64_t>(s) == target_void || target_matched[s]) continue;
    if (FloatRatio(void_in_target[s], target.area[s]) <= 0.5f) ++fns[target.category[s]];
  }
  for (size_t s = 0; s < pred.area.size(); ++s) {
    if (static_cast<int64_t>(s) == pred_void || pred_matched[s]) continue;
    if (FloatRatio(pred_in_void[s], pred.area[s]) <= 0.5f) ++fps[pred.category[s]];
  }
}

}  // namespace

std::vector<at::Tensor> PanopticMatch(const at::Tensor& preds, const at::Tensor& target,
                                      const std::vector<int64_t>& things, const std::vector<int64_t>& stuffs) {
  if (!preds.device().is_cpu() || !target.device().is_cpu()) {
    auto out = RunScript(PanopticMatchScript(), "panoptic_match", {preds, target, things, stuffs}).toTuple();
    return {out->elements()[0].toTensor(), out->elements()[1].toTensor()};
  }
  Categories cats;
  cats.things = static_cast<int64_t>(things.size());
  for (int64_t v : things) cats.continuous.emplace(v, static_cast<int64_t>(cats.continuous.size()));
  for (int64_t v : stuffs) cats.continuous.emplace(v, static_cast<int64_t>(cats.continuous.size()));
  cats.count = static_cast<int64_t>(things.size() + stuffs.size());
  const int64_t n = preds.size(0);
  const at::Tensor p = preds.to(at::kLong).contiguous(), t = target.to(at::kLong).contiguous();
  const int64_t points = n == 0 ? 0 : p.numel() / (2 * n);
  at::Tensor counts = at::zeros({n, 4, cats.count}, p.options());
  at::Tensor unknown = at::zeros({n}, p.options());
  const int64_t* pd = p.data_ptr<int64_t>();
  const int64_t* td = t.data_ptr<int64_t>();
  int64_t* cd = counts.data_ptr<int64_t>();
  int64_t* ud = unknown.data_ptr<int64_t>();
  // Images of fewer than 2^16 points share a task: a thread's start costs more.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(points, 1));
  at::parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      MatchImage(pd + 2 * points * i, td + 2 * points * i, points, cats, cd + 4 * cats.count * i, ud + i);
    }
  });
  return {counts, unknown};
}

const char* PanopticMatchScript() {
  static const std::string* source = new std::string(R"TS(
def continuous_ids(x: Tensor, order: Tensor, sorted_ids: Tensor, c: int) -> Tensor:
    # A category's continuous id; c for one in neither list.
    at = torch.searchsorted(sorted_ids, x).clamp(0, c - 1)
    return torch.where(sorted_ids.index_select(0, at.reshape([-1])).reshape(x.shape) == x,
                       order.index_select(0, at.reshape([-1])).reshape(x.shape), c)

def segment_ids(key: Tensor, instance: Tensor) -> Tensor:
    # Dense ids of the distinct (key, instance) pairs: two stable sorts.
    by_instance = torch.sort(instance, stable=True)[1]
    order = by_instance.index_select(0, torch.sort(key.index_select(0, by_instance), stable=True)[1])
    k = key.index_select(0, order)
    i = instance.index_select(0, order)
    starts = torch.ones_like(k, dtype=11)
    if k.numel() > 1:
        starts[1:] = (k[1:] != k[:-1]) | (i[1:] != i[:-1])
    ids = torch.cumsum(starts.to(4), 0) - 1
    return torch.empty_like(ids).index_put_([order], ids)

def panoptic_match(preds: Tensor, target: Tensor, things: List[int], stuffs: List[int]) -> Tuple[Tensor, Tensor]:
    n = preds.size(0)
    c = len(things) + len(stuffs)
    dev = preds.device
    if preds.is_meta or target.is_meta:
        return torch.empty([n, 4, c], dtype=4, device=dev), torch.empty([n], dtype=4, device=dev)
    p = preds.flatten(1, -2).to(4)
    t = target.flatten(1, -2).to(4)
    m = p.size(0) * p.size(1)
    ids = torch.tensor(things + stuffs, dtype=4, device=dev)
    sorted_ids, order = torch.sort(ids)
    image = torch.arange(n, dtype=4, device=dev).unsqueeze(1).expand([n, p.size(1)]).reshape([-1])
    pc = continuous_ids(p[:, :, 0].reshape([-1]).contiguous(), order, sorted_ids, c)
    tc = continuous_ids(t[:, :, 0].reshape([-1]).contiguous(), order, sorted_ids, c)
    unknown = torch.zeros([n], dtype=4, device=dev).index_add_(0, image, (pc == c).to(4))
    pi = torch.where(pc < len(things), p[:, :, 1].reshape([-1]), 0)
    ti = torch.where(tc < len(things), t[:, :, 1].reshape([-1]), 0)
    # Segments are numbered over all images at once: (image, category) is
    # part of their key. Every table below has one slot per point.
    ps = segment_ids(image * (c + 1) + pc, pi)
    ts = segment_ids(image * (c + 1) + tc, ti)
    zeros = torch.zeros([m], dtype=4, device=dev)
    ones = torch.ones([m], dtype=4, device=dev)
    p_area = zeros.index_add(0, ps, ones)
    t_area = zeros.index_add(0, ts, ones)
    p_key = zeros.index_put([ps], image * (c + 1) + pc)
    t_key = zeros.index_put([ts], image * (c + 1) + tc)
    p_in_void = zeros.index_add(0, ps, (tc == c).to(4))
    void_in_t = zeros.index_add(0, ts, (pc == c).to(4))
    pair = segment_ids(ps, ts)
    inter = zeros.index_add(0, pair, ones)
    pair_p = zeros.index_put([pair], ps)
    pair_t = zeros.index_put([pair], ts)
    pk = p_key.index_select(0, pair_p)
    tk = t_key.index_select(0, pair_t)
    valid = (inter > 0) & (pk == tk) & (tk % (c + 1) != c)
    uni = (p_area.index_select(0, pair_p) - p_in_void.index_select(0, pair_p) + t_area.index_select(0, pair_t)
           - void_in_t.index_select(0, pair_t) - inter)
    iou = inter.to(6) / torch.where(valid, uni, 1).to(6)
    match = valid & (iou > 0.5)
    units = torch.where(match, (iou.to(7) * 16777216.0).to(4), 0)
    p_matched = zeros.index_add(0, pair_p, match.to(4)) > 0
    t_matched = zeros.index_add(0, pair_t, match.to(4)) > 0
    fn = (t_area > 0) & (t_key % (c + 1) != c) & (~t_matched)
    fn = fn & (void_in_t.to(6) / t_area.clamp(1, None).to(6) <= 0.5)
    fp = (p_area > 0) & (p_key % (c + 1) != c) & (~p_matched)
    fp = fp & (p_in_void.to(6) / p_area.clamp(1, None).to(6) <= 0.5)
    cells = n * (c + 1)
    out = torch.stack([torch.zeros([cells], dtype=4, device=dev).index_add_(0, tk, units),
                       torch.zeros([cells], dtype=4, device=dev).index_add_(0, tk, match.to(4)),
                       torch.zeros([cells], dtype=4, device=dev).index_add_(0, p_key, fp.to(4)),
                       torch.zeros([cells], dtype=4, device=dev).index_add_(0, t_key, fn.to(4))], 0)
    return out.reshape([4, n, c + 1]).narrow(2, 0, c).permute([1, 0, 2]).contiguous(), unknown
)TS");
  return source->c_str();
}

}  // namespace tally::ops::fused
