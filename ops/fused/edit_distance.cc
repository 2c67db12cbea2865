#include "ops/fused/edit_distance.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ops/fused/script.h"
#include "ops/fused/token_ids.h"
#include "ops/fused/token_ids_script.h"

namespace tally::ops::fused {
namespace {

// With substitutions, one cost carries two numbers: an insertion or a
// deletion costs kPack and a substitution substitution_cost * kPack + 1, so
// the minimum is the least distance and, among its alignments, the fewest
// substitutions (cost / kPack, cost % kPack). Rows hold fewer than 2^31
// ids, so nothing overflows.
constexpr int64_t kPack = int64_t{1} << 31;

// Distance is the least total cost of turning a into b: indel per insertion
// or deletion, sub per substitution, by rows of the table over b.
int64_t Distance(const std::vector<int64_t>& a, const std::vector<int64_t>& b, int64_t indel, int64_t sub,
                 std::vector<int64_t>& row) {
  row.resize(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int64_t>(j) * indel;
  for (size_t i = 1; i <= a.size(); ++i) {
    int64_t diag = row[0];
    row[0] = static_cast<int64_t>(i) * indel;
    for (size_t j = 1; j <= b.size(); ++j) {
      const int64_t up = row[j];
      row[j] = std::min({up + indel, row[j - 1] + indel, diag + (a[i - 1] == b[j - 1] ? 0 : sub)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

at::Tensor EditDistance(const at::Tensor& preds, const at::Tensor& target, int64_t substitution_cost,
                        bool substitutions) {
  const int64_t n = preds.size(0), width = substitutions ? 6 : 3;
  const auto opts = preds.options().dtype(at::kLong);
  if (preds.is_meta() || target.is_meta()) return at::empty({n, width}, opts);
  if (!preds.is_cpu() || !target.is_cpu()) {
    return RunScript(EditDistanceScript(), "edit_distance", {preds, target, substitution_cost, substitutions})
        .toTensor();
  }
  const at::Tensor p = preds.to(at::kLong).contiguous();
  const at::Tensor t = target.to(at::kLong).contiguous();
  at::Tensor out = at::empty({n, width}, opts);
  const int64_t lp = p.size(1), lt = t.size(1);
  const int64_t* pd = p.data_ptr<int64_t>();
  const int64_t* td = t.data_ptr<int64_t>();
  int64_t* od = out.data_ptr<int64_t>();
  at::parallel_for(0, n, 16, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> a, b, row;
    for (int64_t r = begin; r < end; ++r) {
      Ids(pd + r * lp, lp, a);
      Ids(td + r * lt, lt, b);
      int64_t* o = od + r * width;
      o[1] = static_cast<int64_t>(a.size());
      o[2] = static_cast<int64_t>(b.size());
      if (!substitutions) {
        o[0] = Distance(a, b, 1, substitution_cost, row);
        continue;
      }
      const int64_t packed = Distance(a, b, kPack, substitution_cost * kPack + 1, row);
      o[0] = packed / kPack;
      o[3] = packed % kPack;
      // distance = cost * S + D + I and D - I = |b| - |a|.
      const int64_t indels = o[0] - substitution_cost * o[3];
      o[4] = (indels + o[2] - o[1]) / 2;
      o[5] = (indels - o[2] + o[1]) / 2;
    }
  });
  return out;
}

const char* EditDistanceScript() {
  static const std::string* source = new std::string(std::string(kCompactIdsScript) + R"TS(
def edit_distance(preds: Tensor, target: Tensor, substitution_cost: int, substitutions: bool) -> Tensor:
    n = preds.size(0)
    if preds.is_meta or target.is_meta:
        return torch.empty([n, 6 if substitutions else 3], dtype=4, device=preds.device)
    pack = 2147483648 if substitutions else 1
    indel = pack
    sub = substitution_cost * pack + (1 if substitutions else 0)
    p = _compact(preds)
    t = _compact(target)
    lp = (preds >= 0).to(4).sum(1)
    lt = (target >= 0).to(4).sum(1)
    cols = torch.arange(t.size(1) + 1, dtype=4, device=p.device) * indel
    prev = cols.unsqueeze(0).expand(n, t.size(1) + 1)
    at_lt = lt.unsqueeze(1)
    cost = prev.gather(1, at_lt).squeeze(1)
    for i in range(1, p.size(1) + 1):
        differ = (p[:, i - 1 : i] != t).to(4)
        best = torch.minimum(prev[:, :-1] + differ * sub, prev[:, 1:] + indel)
        first = torch.full([n, 1], i * indel, dtype=4, device=p.device)
        cur = torch.cummin(torch.cat([first, best], 1) - cols, 1)[0] + cols
        cost = torch.where(lp == i, cur.gather(1, at_lt).squeeze(1), cost)
        prev = cur
    if not substitutions:
        return torch.stack([cost, lp, lt], 1)
    dist = torch.div(cost, pack, rounding_mode="floor")
    subs = cost - dist * pack
    indels = dist - substitution_cost * subs
    dels = torch.div(indels + lt - lp, 2, rounding_mode="floor")
    return torch.stack([dist, lp, lt, subs, dels, indels - dels], 1)
)TS");
  return source->c_str();
}

}  // namespace tally::ops::fused
