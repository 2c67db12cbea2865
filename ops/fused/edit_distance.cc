#include "ops/fused/edit_distance.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "ops/fused/script.h"
#include "ops/fused/token_ids_script.h"

namespace tally::ops::fused {
namespace {

// Ids appends the non-negative ids of `row` (length l) to `out`.
void Ids(const int64_t* row, int64_t l, std::vector<int64_t>& out) {
  out.clear();
  for (int64_t k = 0; k < l; ++k) {
    if (row[k] >= 0) out.push_back(row[k]);
  }
}

}  // namespace

at::Tensor EditDistance(const at::Tensor& preds, const at::Tensor& target, int64_t substitution_cost) {
  const int64_t n = preds.size(0);
  const auto opts = preds.options().dtype(at::kLong);
  if (preds.is_meta() || target.is_meta()) return at::empty({n, 3}, opts);
  if (!preds.is_cpu() || !target.is_cpu()) {
    return RunScript(EditDistanceScript(), "edit_distance", {preds, target, substitution_cost}).toTensor();
  }
  const at::Tensor p = preds.to(at::kLong).contiguous();
  const at::Tensor t = target.to(at::kLong).contiguous();
  at::Tensor out = at::empty({n, 3}, opts);
  const int64_t lp = p.size(1), lt = t.size(1);
  const int64_t* pd = p.data_ptr<int64_t>();
  const int64_t* td = t.data_ptr<int64_t>();
  int64_t* od = out.data_ptr<int64_t>();
  at::parallel_for(0, n, 16, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> a, b, row;
    for (int64_t r = begin; r < end; ++r) {
      Ids(pd + r * lp, lp, a);
      Ids(td + r * lt, lt, b);
      row.resize(b.size() + 1);
      std::iota(row.begin(), row.end(), int64_t{0});
      for (size_t i = 1; i <= a.size(); ++i) {
        int64_t diag = row[0];
        row[0] = static_cast<int64_t>(i);
        for (size_t j = 1; j <= b.size(); ++j) {
          const int64_t up = row[j];
          row[j] = std::min({up + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : substitution_cost)});
          diag = up;
        }
      }
      od[r * 3] = row[b.size()];
      od[r * 3 + 1] = static_cast<int64_t>(a.size());
      od[r * 3 + 2] = static_cast<int64_t>(b.size());
    }
  });
  return out;
}

const char* EditDistanceScript() {
  static const std::string* source = new std::string(std::string(kCompactIdsScript) + R"TS(
def edit_distance(preds: Tensor, target: Tensor, substitution_cost: int) -> Tensor:
    n = preds.size(0)
    if preds.is_meta or target.is_meta:
        return torch.empty([n, 3], dtype=4, device=preds.device)
    p = _compact(preds)
    t = _compact(target)
    lp = (preds >= 0).to(4).sum(1)
    lt = (target >= 0).to(4).sum(1)
    cols = torch.arange(t.size(1) + 1, dtype=4, device=p.device)
    prev = cols.unsqueeze(0).expand(n, t.size(1) + 1)
    at_lt = lt.unsqueeze(1)
    dist = prev.gather(1, at_lt).squeeze(1)
    for i in range(1, p.size(1) + 1):
        differ = (p[:, i - 1 : i] != t).to(4)
        best = torch.minimum(prev[:, :-1] + differ * substitution_cost, prev[:, 1:] + 1)
        first = torch.full([n, 1], i, dtype=4, device=p.device)
        cur = torch.cummin(torch.cat([first, best], 1) - cols, 1)[0] + cols
        dist = torch.where(lp == i, cur.gather(1, at_lt).squeeze(1), dist)
        prev = cur
    return torch.stack([dist, lp, lt], 1)
)TS");
  return source->c_str();
}

}  // namespace tally::ops::fused
