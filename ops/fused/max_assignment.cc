#include "ops/fused/max_assignment.h"

#include <ATen/ATen.h>

#include <cstdint>
#include <vector>

namespace tally::ops::fused {
namespace {

// kInf is above any reduced cost (|cost| <= 2^62 / rows is far beyond a count
// table) and leaves room to subtract from.
constexpr int64_t kInf = int64_t{1} << 62;

// Solve is the Hungarian method on `w` (rows <= cols, row-major), minimizing
// -w: each row in turn joins along a shortest augmenting path under the
// potentials u, v; p[j] is the row (1-based) matched to column j.
int64_t Solve(const std::vector<int64_t>& w, int64_t rows, int64_t cols) {
  std::vector<int64_t> u(rows + 1, 0), v(cols + 1, 0), p(cols + 1, 0), way(cols + 1, 0);
  for (int64_t i = 1; i <= rows; ++i) {
    p[0] = i;
    int64_t j0 = 0;
    std::vector<int64_t> minv(cols + 1, kInf);
    std::vector<bool> used(cols + 1, false);
    do {
      used[j0] = true;
      const int64_t i0 = p[j0];
      int64_t delta = kInf, j1 = 0;
      for (int64_t j = 1; j <= cols; ++j) {
        if (used[j]) continue;
        const int64_t cur = -w[(i0 - 1) * cols + (j - 1)] - u[i0] - v[j];
        if (cur < minv[j]) {
          minv[j] = cur;
          way[j] = j0;
        }
        if (minv[j] < delta) {
          delta = minv[j];
          j1 = j;
        }
      }
      for (int64_t j = 0; j <= cols; ++j) {
        if (used[j]) {
          u[p[j]] += delta;
          v[j] -= delta;
        } else {
          minv[j] -= delta;
        }
      }
      j0 = j1;
    } while (p[j0] != 0);
    do {
      const int64_t j1 = way[j0];
      p[j0] = p[j1];
      j0 = j1;
    } while (j0 != 0);
  }
  int64_t total = 0;
  for (int64_t j = 1; j <= cols; ++j) {
    if (p[j] != 0) total += w[(p[j] - 1) * cols + (j - 1)];
  }
  return total;
}

}  // namespace

at::Tensor MaxAssignment(const at::Tensor& table) {
  const auto opts = table.options().dtype(at::kLong);
  if (table.is_meta()) return at::empty({}, opts);
  at::Tensor t = table.to(at::kCPU, at::kLong);
  if (t.size(0) > t.size(1)) t = t.t();
  t = t.contiguous();
  std::vector<int64_t> w(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + t.numel());
  return at::scalar_tensor(Solve(w, t.size(0), t.size(1)), opts);
}

// The same algorithm on lists (the total, not the matching, is what both
// backends must agree on).
const char kMaxAssignmentScript[] = R"TS(
# dtype=4 is int64 and 7 float64 (ScalarType codes: the C++ compiler resolves no torch.int64).
def max_assignment(table: Tensor) -> Tensor:
    if table.is_meta:
        return torch.empty([], dtype=4, device=table.device)
    t = table.to(4)
    if t.size(0) > t.size(1):
        t = t.t()
    rows = t.size(0)
    cols = t.size(1)
    w: List[List[int]] = t.tolist()
    inf = 4611686018427387904
    u = [0] * (rows + 1)
    v = [0] * (cols + 1)
    p = [0] * (cols + 1)
    way = [0] * (cols + 1)
    for i in range(1, rows + 1):
        p[0] = i
        j0 = 0
        minv = [inf] * (cols + 1)
        used = [False] * (cols + 1)
        while True:
            used[j0] = True
            i0 = p[j0]
            delta = inf
            j1 = 0
            for j in range(1, cols + 1):
                if not used[j]:
                    cur = -w[i0 - 1][j - 1] - u[i0] - v[j]
                    if cur < minv[j]:
                        minv[j] = cur
                        way[j] = j0
                    if minv[j] < delta:
                        delta = minv[j]
                        j1 = j
            for j in range(cols + 1):
                if used[j]:
                    u[p[j]] += delta
                    v[j] -= delta
                else:
                    minv[j] -= delta
            j0 = j1
            if p[j0] == 0:
                break
        while True:
            j1 = way[j0]
            p[j0] = p[j1]
            j0 = j1
            if j0 == 0:
                break
    total = 0
    for j in range(1, cols + 1):
        if p[j] != 0:
            total += w[p[j] - 1][j - 1]
    return torch.scalar_tensor(total, dtype=4, device=table.device)
)TS";

}  // namespace tally::ops::fused
