#include "ops/fused/lcs_length.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ops/fused/script.h"
#include "ops/fused/token_ids.h"
#include "ops/fused/token_ids_script.h"

namespace tally::ops::fused {
namespace {

// Lcs is the length of the longest common subsequence of a and b, by rows
// of the table over b.
int64_t Lcs(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>& row) {
  row.assign(b.size() + 1, 0);
  for (const int64_t x : a) {
    int64_t diag = 0;
    for (size_t j = 1; j <= b.size(); ++j) {
      const int64_t up = row[j];
      row[j] = x == b[j - 1] ? diag + 1 : std::max(up, row[j - 1]);
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

at::Tensor LcsLength(const at::Tensor& preds, const at::Tensor& target) {
  const int64_t n = preds.size(0), refs = target.size(1);
  const auto opts = preds.options().dtype(at::kLong);
  if (preds.is_meta() || target.is_meta()) return at::empty({n, refs}, opts);
  if (!preds.is_cpu() || !target.is_cpu()) {
    return RunScript(LcsLengthScript(), "lcs_length", {preds, target}).toTensor();
  }
  return PerReference<std::vector<int64_t>>(
      preds, target, [](const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>& row) {
        return Lcs(a, b, row);
      });
}

const char* LcsLengthScript() {
  static const std::string* source = new std::string(std::string(kCompactIdsScript) + R"TS(
def lcs_length(preds: Tensor, target: Tensor) -> Tensor:
    n = preds.size(0)
    r = target.size(1)
    if preds.is_meta or target.is_meta:
        return torch.empty([n, r], dtype=4, device=preds.device)
    width = target.size(2)
    p = _compact(preds)
    t = _compact(target.reshape(n * r, width)).reshape(n, r, width)
    lp = (preds >= 0).to(4).sum(1).reshape(n, 1, 1).expand(n, r, 1)
    at_lt = (target >= 0).to(4).sum(2).unsqueeze(2)
    prev = torch.zeros([n, r, width + 1], dtype=4, device=p.device)
    zero = torch.zeros([n, r, 1], dtype=4, device=p.device)
    length = zero
    for i in range(1, p.size(1) + 1):
        same = (p[:, i - 1 : i].unsqueeze(1) == t).to(4)
        cand = torch.maximum(prev[:, :, 1:], prev[:, :, :-1] + same)
        cur = torch.cummax(torch.cat([zero, cand], 2), 2)[0]
        length = torch.where(lp == i, cur.gather(2, at_lt), length)
        prev = cur
    return length.squeeze(2)
)TS");
  return source->c_str();
}

}  // namespace tally::ops::fused
