#include "ops/fused/mc_confmat.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <cmath>
#include <vector>

namespace tally::ops::fused {
namespace {

// RowArgmax is ATen's argmax of one row: the first maximum, NaN largest.
template <typename T>
inline int64_t RowArgmax(const T* row, int64_t c) {
  int64_t best = 0;
  T bv = row[0];
  if (std::isnan(bv)) return 0;
  for (int64_t j = 1; j < c; ++j) {
    T v = row[j];
    if (v > bv) {
      bv = v;
      best = j;
    } else if (std::isnan(v)) {
      return j;
    }
  }
  return best;
}

struct Counts {
  std::vector<int64_t> cm;
  int64_t bad_t = 0, bad_p = 0;
};

template <typename P, typename L>
void CountRows(const P* preds, const L* target, bool scores, int64_t c, bool has_ignore,
               int64_t ignore, int64_t begin, int64_t end, Counts& out) {
  int64_t* cm = out.cm.data();
  for (int64_t i = begin; i < end; ++i) {
    int64_t t = static_cast<int64_t>(target[i]);
    if (has_ignore && t == ignore) continue;
    bool bt = t < 0 || t >= c;
    int64_t label;
    bool bp = false;
    if (scores) {
      label = RowArgmax(preds + i * c, c);
    } else {
      label = static_cast<int64_t>(preds[i]);
      bp = label < 0 || label >= c;
    }
    out.bad_t += bt;
    out.bad_p += bp;
    if (!bt && !bp) ++cm[t * c + label];
  }
}

template <typename P, typename L>
void Run(const at::Tensor& preds, const at::Tensor& target, bool scores, int64_t c,
         c10::optional<int64_t> ignore_index, Counts& total) {
  const P* p = preds.data_ptr<P>();
  const L* t = target.data_ptr<L>();
  int64_t n = target.size(0);
  int64_t threads = at::get_num_threads();
  // Private histograms per thread; fall back to one thread when C^2 is large.
  int64_t grain = (c * c * threads > (1 << 22)) ? std::max<int64_t>(n, 1) : 32768;
  std::vector<Counts> parts(threads);
  for (auto& part : parts) part.cm.assign(c * c, 0);
  at::parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
    Counts& mine = parts[at::get_thread_num()];
    CountRows(p, t, scores, c, ignore_index.has_value(), ignore_index.value_or(0), begin, end, mine);
  });
  total.cm.assign(c * c, 0);
  for (const auto& part : parts) {
    for (int64_t k = 0; k < c * c; ++k) total.cm[k] += part.cm[k];
    total.bad_t += part.bad_t;
    total.bad_p += part.bad_p;
  }
}

}  // namespace

std::tuple<at::Tensor, at::Tensor, at::Tensor> McConfmatCpu(const at::Tensor& preds_in,
                                                            const at::Tensor& target_in,
                                                            int64_t c,
                                                            c10::optional<int64_t> ignore_index) {
  TORCH_CHECK(target_in.dim() == 1, "mc_confmat: target must be [N]");
  bool scores = at::isFloatingType(preds_in.scalar_type());
  TORCH_CHECK(scores ? (preds_in.dim() == 2 && preds_in.size(1) == c) : preds_in.dim() == 1,
              "mc_confmat: preds must be [N, C] scores or [N] labels");
  at::Tensor preds = preds_in.contiguous();
  at::Tensor target = target_in.contiguous();
  Counts total;
  auto dispatch_target = [&](auto p_tag) {
    using P = decltype(p_tag);
    if (target.scalar_type() == at::kLong) Run<P, int64_t>(preds, target, scores, c, ignore_index, total);
    else if (target.scalar_type() == at::kInt) Run<P, int32_t>(preds, target, scores, c, ignore_index, total);
    else TORCH_CHECK(false, "mc_confmat: target must be int32 or int64");
  };
  switch (preds.scalar_type()) {
    case at::kFloat: dispatch_target(float{}); break;
    case at::kDouble: dispatch_target(double{}); break;
    case at::kLong: dispatch_target(int64_t{}); break;
    case at::kInt: dispatch_target(int32_t{}); break;
    default: TORCH_CHECK(false, "mc_confmat: unsupported preds dtype");
  }
  auto opts = target.options().dtype(at::kLong);
  at::Tensor cm = at::empty({c, c}, opts);
  std::copy(total.cm.begin(), total.cm.end(), cm.data_ptr<int64_t>());
  return {cm, at::scalar_tensor(total.bad_t, opts), at::scalar_tensor(total.bad_p, opts)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> McConfmatMeta(const at::Tensor&, const at::Tensor& target,
                                                             int64_t c, c10::optional<int64_t>) {
  auto opts = target.options().dtype(at::kLong);
  return {at::empty({c, c}, opts), at::empty({}, opts), at::empty({}, opts)};
}

}  // namespace tally::ops::fused
