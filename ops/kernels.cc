#include "ops/kernels.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <tuple>

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/InferenceMode.h>
#include "absl/strings/str_replace.h"
#include "engine/ir/aten_types.h"
#include "ops/attrs.h"
#include "ops/fused/bl_confmat.h"
#include "ops/fused/class_overlap.h"
#include "ops/fused/coco_eval.h"
#include "ops/fused/count_outside.h"
#include "ops/fused/depthwise_conv.h"
#include "ops/fused/edit_distance.h"
#include "ops/fused/expected_mutual_info.h"
#include "ops/fused/lcs_length.h"
#include "ops/fused/max_assignment.h"
#include "ops/fused/mc_confmat.h"
#include "ops/fused/ngram_matches.h"
#include "ops/fused/panoptic_match.h"
#include "ops/fused/rank_stats.h"
#include "ops/fused/reg_stats.h"
#include "ops/fused/replica_histogram.h"
#include "ops/fused/retrieval.h"
#include "ops/fused/score_code.h"
#include "ops/fused/sdr.h"
#include "ops/fused/signal_ratio.h"
#include "ops/fused/ter_edits.h"
#include "ops/fused/token_nll.h"
#include "ops/fused/trace_sqrt.h"
#include "ops/meta_kernels.h"
#include "support/torch_status.h"

namespace tally::ops {
namespace {

using ir::ToScalarType;

at::ScalarType OutType(const ir::Node& n, int i = 0) { return ir::ToScalarType(n.output(i)->type().dtype); }
at::TensorOptions CreateOptions(const ir::Node& n) {
  return at::TensorOptions().dtype(OutType(n)).device(c10::Device(n.output(0)->type().device.name));
}
// Operands of arithmetic are brought to the result dtype first, so the IR's
// type inference is what runs (not ATen's promotion of 0-d tensors).
at::Tensor As(const at::Tensor& t, at::ScalarType s) { return t.scalar_type() == s ? t : t.to(s); }
// Comparisons compare in the promoted dtype of their operands.
std::pair<at::Tensor, at::Tensor> Promoted(const at::Tensor& a, const at::Tensor& b) {
  at::ScalarType s = at::promote_types(a.scalar_type(), b.scalar_type());
  return {As(a, s), As(b, s)};
}
// WriteResults moves a multi-result ATen or fused call's results into `out`.
template <typename... T>
void WriteResults(std::tuple<T...> r, at::Tensor* out) {
  std::apply(
      [out](auto&... t) {
        int i = 0;
        ((out[i++] = std::move(t)), ...);
      },
      r);
}
void WriteResults(std::vector<at::Tensor> r, at::Tensor* out) {
  for (size_t i = 0; i < r.size(); ++i) out[i] = std::move(r[i]);
}

#define BINARY(NAME, EXPR)                                              \
  void NAME(const ir::Node& n, const at::Tensor* in, at::Tensor* out) { \
    at::ScalarType s = OutType(n);                                      \
    const at::Tensor a = As(in[0], s), b = As(in[1], s);                \
    out[0] = (EXPR);                                                    \
  }
BINARY(Add, a + b)
BINARY(Sub, a - b)
BINARY(Mul, a* b)
BINARY(Div, a / b)
BINARY(Pow, at::pow(a, b))
BINARY(Maximum, at::maximum(a, b))
BINARY(Minimum, at::minimum(a, b))
#undef BINARY

void SafeDiv(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  at::ScalarType s = OutType(n);
  const at::Tensor a = As(in[0], s), b = As(in[1], s);
  out[0] = at::where(b != 0, a / b, at::scalar_tensor(AttrsOf<SafeDivAttrs>(n).zero_division.get(), a.options()));
}

#define COMPARE(NAME, EXPR)                                           \
  void NAME(const ir::Node&, const at::Tensor* in, at::Tensor* out) { \
    auto [a, b] = Promoted(in[0], in[1]);                             \
    out[0] = (EXPR);                                                  \
  }
COMPARE(Eq, at::eq(a, b))
COMPARE(Ne, at::ne(a, b))
COMPARE(Lt, at::lt(a, b))
COMPARE(Le, at::le(a, b))
COMPARE(Gt, at::gt(a, b))
COMPARE(Ge, at::ge(a, b))
#undef COMPARE

void LogicalAnd(const ir::Node&, const at::Tensor* in, at::Tensor* out) { out[0] = at::logical_and(in[0], in[1]); }
void LogicalOr(const ir::Node&, const at::Tensor* in, at::Tensor* out) { out[0] = at::logical_or(in[0], in[1]); }
void LogicalXor(const ir::Node&, const at::Tensor* in, at::Tensor* out) { out[0] = at::logical_xor(in[0], in[1]); }
void LogicalNot(const ir::Node&, const at::Tensor* in, at::Tensor* out) { out[0] = at::logical_not(in[0]); }
void IsNan(const ir::Node&, const at::Tensor* in, at::Tensor* out) { out[0] = at::isnan(in[0]); }
void Neg(const ir::Node&, const at::Tensor* in, at::Tensor* out) { out[0] = at::neg(in[0]); }
void Abs(const ir::Node&, const at::Tensor* in, at::Tensor* out) { out[0] = at::abs(in[0]); }

#define FLOAT_UNARY(NAME, EXPR)                                         \
  void NAME(const ir::Node& n, const at::Tensor* in, at::Tensor* out) { \
    const at::Tensor x = As(in[0], OutType(n));                         \
    out[0] = (EXPR);                                                    \
  }
FLOAT_UNARY(Exp, at::exp(x))
FLOAT_UNARY(Log, at::log(x))
FLOAT_UNARY(Sqrt, at::sqrt(x))
FLOAT_UNARY(Acos, at::acos(x))
FLOAT_UNARY(Atan, at::atan(x))
FLOAT_UNARY(Sigmoid, at::sigmoid(x))
// log(cosh(x)) = |x| + log1p(exp(-2|x|)) - log(2): no overflow for large |x|.
FLOAT_UNARY(LogCosh, at::abs(x) + at::log1p(at::exp(-2 * at::abs(x))) - std::log(2.0))
#undef FLOAT_UNARY

void Clamp(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  // Integer inputs keep their dtype (ATen would promote to float and lose
  // int64 digits): their bounds are the integers inside [min, max].
  const bool integral = !at::isFloatingType(in[0].scalar_type());
  const auto attrs = AttrsOf<ClampAttrs>(n);
  auto bound = [&](const Opt<double>& b, bool upper) -> c10::optional<at::Scalar> {
    if (!b.has_value()) return c10::nullopt;
    double v = b.get();
    if (!integral) return at::Scalar(v);
    if (std::isinf(v) && (v > 0) == upper) return c10::nullopt;  // no bound
    v = upper ? std::floor(v) : std::ceil(v);
    v = std::min(std::max(v, -9.2e18), 9.2e18);
    return at::Scalar(static_cast<int64_t>(v));
  };
  out[0] = As(at::clamp(in[0], bound(attrs.min, false), bound(attrs.max, true)), OutType(n));
}
void Cast(const ir::Node& n, const at::Tensor* in, at::Tensor* out) { out[0] = As(in[0], OutType(n)); }
void Where(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  at::ScalarType s = OutType(n);
  out[0] = at::where(in[0], As(in[1], s), As(in[2], s));
}

// Reductions.
std::vector<int64_t> ReduceDims(const ir::Node& n, int64_t rank) {
  std::vector<int64_t> dims = AttrsOf<ReduceAttrs>(n).dims.get();
  if (dims.empty())
    for (int64_t i = 0; i < rank; ++i) dims.push_back(i);
  for (auto& d : dims)
    if (d < 0) d += rank;
  return dims;
}
void ReduceSum(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  out[0] = at::sum(in[0], ReduceDims(n, in[0].dim()), AttrsOf<ReduceAttrs>(n).keepdim.get(), OutType(n));
}
// ReducedSizes is the result shape of reducing `dims` of `x`.
std::vector<int64_t> ReducedSizes(const at::Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < x.dim(); ++i) {
    bool r = std::find(dims.begin(), dims.end(), i) != dims.end();
    if (!r)
      sizes.push_back(x.size(i));
    else if (keepdim)
      sizes.push_back(1);
  }
  return sizes;
}
template <bool kMax>
void ReduceExtreme(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const at::Tensor& x = in[0];
  auto dims = ReduceDims(n, x.dim());
  const bool keepdim = AttrsOf<ReduceAttrs>(n).keepdim.get();
  bool empty = false;
  for (int64_t d : dims) empty |= x.size(d) == 0;
  if (x.dim() == 0) {
    out[0] = x.clone();
    return;
  }
  if (empty) {
    // The identity of max/min: an empty reduction needs no host check.
    at::Scalar fill;
    if (at::isFloatingType(x.scalar_type()))
      fill = kMax ? -INFINITY : INFINITY;
    else
      fill = kMax ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
    if (x.scalar_type() == at::kInt)
      fill = kMax ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max();
    out[0] = at::full(ReducedSizes(x, dims, keepdim), fill, x.options());
    return;
  }
  out[0] = kMax ? at::amax(x, dims, keepdim) : at::amin(x, dims, keepdim);
}
template <bool kAny>
void ReduceBool(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  at::Tensor x = As(in[0], at::kBool);
  auto dims = ReduceDims(n, x.dim());
  std::sort(dims.rbegin(), dims.rend());
  const bool keepdim = AttrsOf<ReduceAttrs>(n).keepdim.get();
  if (x.dim() == 0) {
    out[0] = x.clone();
    return;
  }
  for (int64_t d : dims) x = kAny ? at::any(x, d, keepdim) : at::all(x, d, keepdim);
  out[0] = x;
}
void Argmax(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<ArgmaxAttrs>(n);
  out[0] = at::argmax(in[0], a.dim, a.keepdim.get());
}
void Softmax(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  out[0] = at::softmax(in[0], AttrsOf<DimAttrs>(n).dim, OutType(n));
}

// Creation and shape.
void Constant(const ir::Node& n, const at::Tensor*, at::Tensor* out) {
  const auto a = AttrsOf<ConstantAttrs>(n);
  if (!a.dense()) {
    out[0] = at::scalar_tensor(a.value.get(), CreateOptions(n));
    return;
  }
  // Made in float64 on the host, then cast and moved: one copy per update.
  const std::vector<double>& v = a.values.get();
  out[0] = at::tensor(at::ArrayRef<double>(v), at::TensorOptions().dtype(at::kDouble))
               .reshape(a.Sizes())
               .to(CreateOptions(n));
}
void Full(const ir::Node& n, const at::Tensor*, at::Tensor* out) {
  const auto a = AttrsOf<FullAttrs>(n);
  out[0] = at::full(a.shape, a.value, CreateOptions(n));
}
void FullLike(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  out[0] = at::full(in[0].sizes(), AttrsOf<FullLikeAttrs>(n).value, in[0].options().dtype(OutType(n)));
}
void Arange(const ir::Node& n, const at::Tensor*, at::Tensor* out) {
  out[0] = at::arange(AttrsOf<ArangeAttrs>(n).n, CreateOptions(n));
}
void Linspace(const ir::Node& n, const at::Tensor*, at::Tensor* out) {
  const auto a = AttrsOf<LinspaceAttrs>(n);
  out[0] = at::linspace(a.start, a.end, a.steps, CreateOptions(n));
}
void Size(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  out[0] = at::scalar_tensor(in[0].size(AttrsOf<DimAttrs>(n).dim), in[0].options().dtype(at::kLong));
}
void Transfer(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  out[0] = in[0].to(c10::Device(AttrsOf<TransferAttrs>(n).device));
}
void Reshape(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  out[0] = in[0].reshape(AttrsOf<ReshapeAttrs>(n).shape);
}
void Flatten(const ir::Node&, const at::Tensor* in, at::Tensor* out) { out[0] = in[0].reshape({-1}); }
void Unsqueeze(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  out[0] = in[0].unsqueeze(AttrsOf<DimAttrs>(n).dim);
}
void Squeeze(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  out[0] = in[0].squeeze(AttrsOf<DimAttrs>(n).dim);
}
void Select(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<SelectAttrs>(n);
  out[0] = in[0].select(a.dim, a.index);
}
void Transpose(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<TransposeAttrs>(n);
  out[0] = in[0].transpose(a.dim0, a.dim1);
}
void OneHot(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  at::Tensor classes = at::arange(AttrsOf<OneHotAttrs>(n).num_classes, in[0].options());
  out[0] = at::eq(in[0].unsqueeze(-1), classes);
}
void TopkMask(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  at::Tensor idx = std::get<1>(at::topk(in[0], AttrsOf<TopkMaskAttrs>(n).k, -1, /*largest=*/true, /*sorted=*/false));
  out[0] = at::zeros(in[0].sizes(), in[0].options().dtype(at::kBool)).scatter_(-1, idx, true);
}
void Histogram(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const int64_t size = AttrsOf<HistogramAttrs>(n).size;
  at::Tensor idx = As(in[0], at::kLong);
  at::Tensor valid = (idx >= 0).logical_and_(idx < size);
  at::ScalarType s = OutType(n);
  at::Tensor w = n.inputs().size() > 1 ? As(in[1], s) : at::ones_like(idx, idx.options().dtype(s));
  // An empty batch adds nothing (and ATen's meta index_add_ rejects it).
  if (idx.numel() == 0) {
    out[0] = at::zeros({size}, w.options());
    return;
  }
  w = at::where(valid, w, at::zeros({}, w.options()));
  idx = at::where(valid, idx, at::zeros({}, idx.options()));
  out[0] = at::zeros({size}, w.options()).index_add_(0, idx, w);
}
void SearchSorted(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  out[0] =
      at::searchsorted(in[0].contiguous(), in[1].contiguous(), /*out_int32=*/false, AttrsOf<SideAttrs>(n).right.get());
}
// Gather ops (gather_ops.cc).
void Concat(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  out[0] = at::cat(at::TensorList(in, n.inputs().size()), 0);
}
void Take(const ir::Node&, const at::Tensor* in, at::Tensor* out) {
  const at::Tensor idx = in[1].to(at::kLong).clamp(0, std::max<int64_t>(in[0].size(0) - 1, 0));
  out[0] = in[0].index_select(0, idx.flatten()).reshape(idx.sizes());
}
void Sort(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<SortAttrs>(n);
  WriteResults(at::sort(in[0], /*stable=*/true, a.dim, a.descending.get()), out);
}
// Ranking ops (sort_ops.cc).
void Bucketize(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  auto [x, boundaries] = Promoted(in[0], in[1]);
  out[0] =
      at::bucketize(x.contiguous(), boundaries.contiguous(), /*out_int32=*/false, AttrsOf<SideAttrs>(n).right.get());
}
void Cumsum(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const at::Tensor x = As(in[0], OutType(n));
  const int64_t dim = at::maybe_wrap_dim(AttrsOf<DimAttrs>(n).dim, x.dim());
  // ATen's CUDA cumsum of floats is not deterministic (it refuses to run
  // under deterministic mode); elsewhere than on the host a fixed-order scan
  // runs on the tensor's own device instead.
  const bool host = x.is_cpu() || x.is_meta();
  out[0] = host || !at::isFloatingType(x.scalar_type()) ? at::cumsum(x, dim) : CumsumScan(x, dim);
}
void Topk(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<TopkAttrs>(n);
  WriteResults(at::topk(in[0], a.k, a.dim.get(), a.largest.get(), a.sorted.get()), out);
}
void Argsort(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<ArgsortAttrs>(n);
  const int64_t dim = a.dim.get();
  const bool descending = a.descending.get();
  out[0] = a.stable.get() ? std::get<1>(at::sort(in[0], /*stable=*/true, dim, descending))
                          : std::get<1>(at::sort(in[0], dim, descending));
}
at::Tensor RankAverage1D(const at::Tensor& v) {
  int64_t len = v.size(0);
  auto opts = v.options().dtype(at::kDouble);
  if (len == 0) return at::zeros({0}, opts);
  auto [sorted, perm] = at::sort(v, /*stable=*/true, 0, false);
  at::Tensor first = at::ones({1}, v.options().dtype(at::kBool));
  at::Tensor starts = at::cat({first, sorted.slice(0, 1).ne(sorted.slice(0, 0, len - 1))});
  at::Tensor gid = at::cumsum(starts.to(at::kLong), 0) - 1;
  at::Tensor pos = at::arange(1, len + 1, opts);
  at::Tensor sum = at::zeros({len}, opts).index_add_(0, gid, pos);
  at::Tensor cnt = at::zeros({len}, opts).index_add_(0, gid, at::ones({len}, opts));
  at::Tensor avg = (sum / cnt.clamp_min(1)).index_select(0, gid);
  return at::empty({len}, opts).scatter_(0, perm, avg);
}
void RankAverage(const ir::Node&, const at::Tensor* in, at::Tensor* out) {
  const at::Tensor& x = in[0];
  if (x.dim() == 1) {
    out[0] = RankAverage1D(x);
    return;
  }
  int64_t columns = 1;  // not reshape(-1): that is ambiguous for an empty batch
  for (int64_t d = 1; d < x.dim(); ++d) columns *= x.size(d);
  if (columns == 0) {
    out[0] = at::zeros(x.sizes(), x.options().dtype(at::kDouble));
    return;
  }
  at::Tensor flat = x.reshape({x.size(0), columns});
  std::vector<at::Tensor> cols;
  for (int64_t j = 0; j < flat.size(1); ++j) cols.push_back(RankAverage1D(flat.select(1, j)));
  out[0] = at::stack(cols, 1).reshape(x.sizes());
}

// The syncing ops (remove-host-syncs rewrites them out of update plans).
void Bincount(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  out[0] = at::bincount(in[0], {}, AttrsOf<BincountAttrs>(n).minlength);
}
void MaskedSelect(const ir::Node&, const at::Tensor* in, at::Tensor* out) { out[0] = at::masked_select(in[0], in[1]); }
void Nonzero(const ir::Node&, const at::Tensor* in, at::Tensor* out) { out[0] = at::nonzero(in[0]); }
void ExpectedMutualInfo(const ir::Node&, const at::Tensor* in, at::Tensor* out) {
  out[0] = fused::ExpectedMutualInfo(in[0], in[1]);
}
void MaxAssignment(const ir::Node&, const at::Tensor* in, at::Tensor* out) { out[0] = fused::MaxAssignment(in[0]); }
void EditDistance(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto attrs = AttrsOf<EditDistanceAttrs>(n);
  out[0] = fused::EditDistance(in[0], in[1], attrs.substitution_cost, attrs.substitutions.get());
}
void NgramMatches(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  out[0] = fused::NgramMatches(in[0], in[1], AttrsOf<NgramMatchesAttrs>(n).n_gram);
}
void NgramOverlap(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  out[0] = fused::NgramOverlap(in[0], in[1], AttrsOf<NgramMatchesAttrs>(n).n_gram);
}
void LcsLength(const ir::Node&, const at::Tensor* in, at::Tensor* out) { out[0] = fused::LcsLength(in[0], in[1]); }
void TerEdits(const ir::Node&, const at::Tensor* in, at::Tensor* out) { out[0] = fused::TerEdits(in[0], in[1]); }
void Sdr(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto attrs = AttrsOf<SdrAttrs>(n);
  out[0] = fused::Sdr(in[0], in[1], attrs.filter_length, attrs.zero_mean.get(), attrs.load_diag.get());
}
void SignalRatio(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<SignalRatioAttrs>(n);
  out[0] = fused::SignalRatio(in[0], in[1], a.signal_dims.get(), a.scale_invariant.get(), a.zero_mean.get(), a.eps);
}
void TokenNll(const ir::Node&, const at::Tensor* in, at::Tensor* out) { out[0] = fused::TokenNll(in[0], in[1]); }
void DepthwiseConv2d(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<Conv2dAttrs>(n);
  out[0] = fused::DepthwiseConv2d(in[0], in[1], a.stride.get(), a.pad_h.get(), a.pad_w.get());
}
void ClassOverlap(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<ClassOverlapAttrs>(n);
  out[0] = fused::ClassOverlap(in[0], in[1], a.num_classes, a.index.get(), a.include_background.get());
}
void CocoMatch(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<CocoMatchAttrs>(n);
  std::vector<at::Tensor> r =
      fused::CocoMatch(std::vector<at::Tensor>(in, in + 7), a.iou_thresholds, a.max_det, a.micro.get());
  for (size_t i = 0; i < r.size(); ++i) out[i] = std::move(r[i]);
}
void CocoBins(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<CocoBinsAttrs>(n);
  std::vector<at::Tensor> r =
      fused::CocoBins(std::vector<at::Tensor>(in, in + 7), a.num_classes, a.score_bins, a.max_dets, a.thresholds);
  out[0] = std::move(r[0]);
  out[1] = std::move(r[1]);
}
void CocoBinsSummary(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<CocoSummaryAttrs>(n);
  std::vector<at::Tensor> r =
      fused::CocoBinsSummary(in[0], in[1], a.iou_thresholds, a.rec_thresholds, a.max_dets, a.class_metrics.get());
  for (size_t i = 0; i < r.size(); ++i) out[i] = std::move(r[i]);
}
void PanopticMatch(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<PanopticMatchAttrs>(n);
  std::vector<at::Tensor> r = fused::PanopticMatch(in[0], in[1], a.things, a.stuffs);
  out[0] = std::move(r[0]);
  out[1] = std::move(r[1]);
}
void CocoSummary(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<CocoSummaryAttrs>(n);
  std::vector<at::Tensor> r = fused::CocoSummary(std::vector<at::Tensor>(in, in + n.inputs().size()), a.iou_thresholds,
                                                 a.rec_thresholds, a.max_dets, a.micro.get(), a.class_metrics.get());
  for (size_t i = 0; i < r.size(); ++i) out[i] = std::move(r[i]);
}
void Matmul(const ir::Node&, const at::Tensor* in, at::Tensor* out) { out[0] = at::matmul(in[0], in[1]); }
void TraceSqrt(const ir::Node&, const at::Tensor* in, at::Tensor* out) { out[0] = fused::TraceSqrt(in[0]); }

// Fused composite ops: CPU tensors call the kernel directly (no dispatcher
// on the hot path); other devices go through the `tally::` operator of the
// same signature (ops/fused/library.cc), under InferenceMode so that Meta
// kernels run without an Autograd kernel.
template <typename R, typename... Args, typename... Vals>
R CallFused(const char* schema, R (*cpu)(Args...), bool on_cpu, Vals&&... vals) {
  if (on_cpu) return cpu(std::forward<Vals>(vals)...);
  auto op = c10::Dispatcher::singleton().findSchemaOrThrow(schema, "").typed<R(Args...)>();
  c10::InferenceMode guard;
  return op.call(std::forward<Vals>(vals)...);
}

// C10: an optional attribute as c10::optional (what the fused kernels take).
template <typename T>
c10::optional<T> C10(const Opt<T>& a) {
  return a.has_value() ? c10::optional<T>(a.get()) : c10::nullopt;
}

// OptionalInput is input `i` when the node has it (a fused op's Tensor?).
c10::optional<at::Tensor> OptionalInput(const ir::Node& n, const at::Tensor* in, size_t i) {
  return n.inputs().size() > i ? c10::optional<at::Tensor>(in[i]) : c10::nullopt;
}

// McWeight and McGroups are mc_confmat's optional operands: the weight at
// index 2 and the group ids last (with num_groups).
c10::optional<at::Tensor> McGroups(const ir::Node& n, const at::Tensor* in, const Opt<int64_t>& num_groups) {
  return num_groups.has_value() ? c10::optional<at::Tensor>(in[n.inputs().size() - 1]) : c10::nullopt;
}
c10::optional<at::Tensor> McWeight(const ir::Node& n, const at::Tensor* in, const Opt<int64_t>& num_groups) {
  return n.inputs().size() > (num_groups.has_value() ? 3u : 2u) ? c10::optional<at::Tensor>(in[2]) : c10::nullopt;
}

void McConfmat(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<McConfmatAttrs>(n);
  WriteResults(
      CallFused("tally::mc_confmat", &fused::McConfmatCpu, in[0].is_cpu(), in[0], in[1], a.num_classes,
                C10(a.ignore_index), McWeight(n, in, a.num_groups), McGroups(n, in, a.num_groups), a.num_groups.get()),
      out);
}

// confmat_part's eager form (fuse decomposes it; this serves direct calls).
void ConfmatPartKernel(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const at::Tensor& cm = in[0];
  const std::string part = AttrsOf<ConfmatPartAttrs>(n).part;
  if (part == "tp") {
    out[0] = cm.diagonal().clone();
    return;
  }
  if (part == "target") {
    out[0] = cm.sum(1, false, cm.scalar_type());
    return;
  }
  if (part == "pred") {
    out[0] = cm.sum(0, false, cm.scalar_type());
    return;
  }
  at::Tensor idx = at::arange(cm.size(0), cm.options().dtype(at::kLong));
  at::Tensor diff = (idx.unsqueeze(1) - idx.unsqueeze(0)).to(cm.scalar_type());
  at::Tensor w = part == "abs_err" ? diff.abs() : diff * diff;
  out[0] = (cm * w).sum(1, false, cm.scalar_type());
}

void McMarginals(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<McMarginalsAttrs>(n);
  WriteResults(CallFused("tally::mc_marginals", &fused::McMarginalsCpu, in[0].is_cpu(), in[0], in[1], a.num_classes,
                         C10(a.ignore_index), c10::string_view(a.parts), a.totals.get(), McWeight(n, in, a.num_groups),
                         McGroups(n, in, a.num_groups), a.num_groups.get()),
               out);
}

void CountOutside(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<CountOutsideAttrs>(n);
  out[0] = CallFused("tally::count_outside", &fused::CountOutsideCpu, in[0].is_cpu(), in[0], a.low, a.high);
}

void ScoreCode16(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const std::string format = AttrsOf<ScoreCode16Attrs>(n).format;
  out[0] = CallFused("tally::score_code16", &fused::ScoreCode16Cpu, in[0].is_cpu(), in[0], c10::string_view(format));
}

void Code16Counts(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<Code16CountsAttrs>(n);
  out[0] = CallFused("tally::code16_counts", &fused::Code16CountsCpu, in[0].is_cpu(), in[0], in[1],
                     c10::string_view(a.format), a.classes);
}

void ReplicaHistogram(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<ReplicaHistogramAttrs>(n);
  const bool grouped = a.num_groups.has_value();
  const size_t inputs = n.inputs().size() - (grouped ? 1 : 0);
  out[0] = fused::ReplicaHistogram(in[0], in[1], inputs > 2 ? c10::optional<at::Tensor>(in[2]) : c10::nullopt, a.size,
                                   a.replicas, a.mode, a.seed, a.block,
                                   grouped ? c10::optional<at::Tensor>(in[inputs]) : c10::nullopt, a.num_groups.get());
}

void BinaryRankStats(const ir::Node&, const at::Tensor* in, at::Tensor* out) {
  WriteResults(CallFused("tally::binary_rank_stats", &fused::BinaryRankStatsCpu, in[0].is_cpu(), in[0], in[1]), out);
}

void RegStats(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  WriteResults(CallFused("tally::reg_stats", &fused::RegStatsCpu, in[0].is_cpu(), in[0], in[1],
                         AttrsOf<RegStatsAttrs>(n).error_moments.get()),
               out);
}

void MomentsMerge(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  std::vector<at::Tensor> states(in, in + n.inputs().size());
  const auto a = AttrsOf<MomentsMergeAttrs>(n);
  WriteResults(CallFused("tally::moments_merge", &fused::MomentsMergeCpu, in[0].is_cpu(), at::TensorList(states),
                         a.variables, at::IntArrayRef(a.pairs.get())),
               out);
}

void BlConfmat(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<BlConfmatAttrs>(n);
  WriteResults(CallFused("tally::bl_confmat", &fused::BlConfmatCpu, in[0].is_cpu(), in[0], in[1], a.threshold,
                         a.logits_over_kept, C10(a.ignore_index)),
               out);
}

void CountInvalid(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  WriteResults(CallFused("tally::count_invalid", &fused::CountInvalidCpu, in[0].is_cpu(), in[0],
                         C10(AttrsOf<CountInvalidAttrs>(n).ignore_index)),
               out);
}

void RetrievalScore(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<RetrievalScoreAttrs>(n);
  WriteResults(
      CallFused("tally::retrieval_score", &fused::RetrievalScoreCpu, in[0].is_cpu(), in[0], in[1], in[2],
                c10::string_view(a.metric), c10::string_view(a.empty_target_action), a.adaptive_k, C10(a.top_k),
                C10(a.ignore_index), c10::string_view(a.aggregation.get()), OptionalInput(n, in, 3)),
      out);
}

// assert_zero (sync_ops.cc): the finalize form of a deferred check.
void AssertZero(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  const auto a = AttrsOf<AssertZeroAttrs>(n);
  const bool skipped = a.whole_state.get() && support::ScopedSkipStateChecks::active();
  if (!in[0].is_meta() && !skipped) {
    const int64_t count = in[0].item<int64_t>();
    TORCH_CHECK(count == 0, support::kCheckFailed, absl::StrReplaceAll(a.message, {{"{n}", std::to_string(count)}}));
  }
  out[0] = in[1];
}

// Segment ops (segment_ops.cc). Run starts of a sorted key: the first row,
// then every row whose key differs from the previous one (slices, so that an
// empty batch stays empty without a host branch).
at::Tensor SegmentStarts(const at::Tensor& keys) {
  at::Tensor first = keys.slice(0, 0, 1);
  return at::cat({first.eq(first), keys.slice(0, 1).ne(keys.slice(0, 0, -1))});
}
void SegmentSort(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  if (in[0].is_cpu() && in[0].scalar_type() == at::kLong && at::isFloatingType(in[1].scalar_type())) {
    // The same permutation from a counting/radix sort on the keys and a small
    // sort per query (ops/fused/retrieval.h).
    at::Tensor perm = fused::SegmentSortPermutationCpu(in[0], in[1]);
    for (size_t i = 0; i < n.inputs().size(); ++i) out[i] = in[i].index_select(0, perm);
    return;
  }
  at::Tensor p1 = std::get<1>(at::sort(in[1], /*stable=*/true, 0, /*descending=*/true));
  at::Tensor p2 = std::get<1>(at::sort(in[0].index_select(0, p1), /*stable=*/true, 0, false));
  at::Tensor perm = p1.index_select(0, p2);
  for (size_t i = 0; i < n.inputs().size(); ++i) out[i] = in[i].index_select(0, perm);
}
void SegmentScan(const ir::Node& n, const at::Tensor* in, at::Tensor* out) {
  at::Tensor x = at::isFloatingType(in[0].scalar_type()) ? in[0] : in[0].to(at::kLong);
  if (x.size(0) == 0) {  // a shape, not a value: index_add_ on an empty meta tensor throws
    out[0] = x.clone();
    out[1] = x.clone();
    return;
  }
  at::Tensor starts = SegmentStarts(in[1]);
  for (size_t i = 2; i < n.inputs().size(); ++i) starts = starts.logical_or(SegmentStarts(in[i]));
  at::Tensor gid = at::cumsum(starts.to(at::kLong), 0) - 1;
  at::Tensor c = at::cumsum(x, 0);
  // Rows along dim 0: a [N] mask selects whole rows of an [N, ...] x.
  std::vector<int64_t> row_shape(x.dim(), 1);
  row_shape[0] = -1;
  at::Tensor before = at::where(starts.view(row_shape), c - x, at::zeros({}, x.options()));
  at::Tensor base = at::zeros_like(x).index_add_(0, gid, before);
  out[0] = c - base.index_select(0, gid);
  out[1] = at::zeros_like(x).index_add_(0, gid, x).index_select(0, gid);
}

// The eager kernel of every op of op_list.h (composites run Tally's fused
// kernels): checked when this file compiles.
constexpr OpTableOf<Kernel> kKernels = {
    {OpId::kAdd, Add},
    {OpId::kSub, Sub},
    {OpId::kMul, Mul},
    {OpId::kDiv, Div},
    {OpId::kPow, Pow},
    {OpId::kMaximum, Maximum},
    {OpId::kMinimum, Minimum},
    {OpId::kSafeDiv, SafeDiv},
    {OpId::kEq, Eq},
    {OpId::kNe, Ne},
    {OpId::kLt, Lt},
    {OpId::kLe, Le},
    {OpId::kGt, Gt},
    {OpId::kGe, Ge},
    {OpId::kLogicalAnd, LogicalAnd},
    {OpId::kLogicalOr, LogicalOr},
    {OpId::kLogicalXor, LogicalXor},
    {OpId::kLogicalNot, LogicalNot},
    {OpId::kIsnan, IsNan},
    {OpId::kNeg, Neg},
    {OpId::kAbs, Abs},
    {OpId::kExp, Exp},
    {OpId::kLog, Log},
    {OpId::kSqrt, Sqrt},
    {OpId::kAcos, Acos},
    {OpId::kAtan, Atan},
    {OpId::kSigmoid, Sigmoid},
    {OpId::kLogCosh, LogCosh},
    {OpId::kClamp, Clamp},
    {OpId::kCast, Cast},
    {OpId::kWhere, Where},
    {OpId::kReduceSum, ReduceSum},
    {OpId::kReduceMax, ReduceExtreme<true>},
    {OpId::kReduceMin, ReduceExtreme<false>},
    {OpId::kReduceAny, ReduceBool<true>},
    {OpId::kReduceAll, ReduceBool<false>},
    {OpId::kArgmax, Argmax},
    {OpId::kSoftmax, Softmax},
    {OpId::kConstant, Constant},
    {OpId::kFull, Full},
    {OpId::kArange, Arange},
    {OpId::kLinspace, Linspace},
    {OpId::kFullLike, FullLike},
    {OpId::kSize, Size},
    {OpId::kTransfer, Transfer},
    {OpId::kReshape, Reshape},
    {OpId::kFlatten, Flatten},
    {OpId::kUnsqueeze, Unsqueeze},
    {OpId::kSqueeze, Squeeze},
    {OpId::kSelect, Select},
    {OpId::kTranspose, Transpose},
    {OpId::kOneHot, OneHot},
    {OpId::kTopkMask, TopkMask},
    {OpId::kHistogram, Histogram},
    {OpId::kSort, Sort},
    {OpId::kRankAverage, RankAverage},
    {OpId::kSearchsorted, SearchSorted},
    {OpId::kBucketize, Bucketize},
    {OpId::kCumsum, Cumsum},
    {OpId::kTopk, Topk},
    {OpId::kArgsort, Argsort},
    {OpId::kConcat, Concat},
    {OpId::kTake, Take},
    {OpId::kSegmentSort, SegmentSort},
    {OpId::kSegmentScan, SegmentScan},
    {OpId::kMcConfmat, McConfmat},
    {OpId::kMcMarginals, McMarginals},
    {OpId::kCountOutside, CountOutside},
    {OpId::kConfmatPart, ConfmatPartKernel},
    {OpId::kBinaryRankStats, BinaryRankStats},
    {OpId::kScoreCode16, ScoreCode16},
    {OpId::kCode16Counts, Code16Counts},
    {OpId::kRegStats, RegStats},
    {OpId::kMomentsMerge, MomentsMerge},
    {OpId::kBlConfmat, BlConfmat},
    {OpId::kCountInvalid, CountInvalid},
    {OpId::kRetrievalScore, RetrievalScore},
    {OpId::kAssertZero, AssertZero},
    {OpId::kBincount, Bincount},
    {OpId::kReplicaHistogram, ReplicaHistogram},
    {OpId::kMaskedSelect, MaskedSelect},
    {OpId::kNonzero, Nonzero},
    {OpId::kExpectedMutualInfo, ExpectedMutualInfo},
    {OpId::kMaxAssignment, MaxAssignment},
    {OpId::kEditDistance, EditDistance},
    {OpId::kNgramMatches, NgramMatches},
    {OpId::kNgramOverlap, NgramOverlap},
    {OpId::kLcsLength, LcsLength},
    {OpId::kTerEdits, TerEdits},
    {OpId::kSdr, Sdr},
    {OpId::kSignalRatio, SignalRatio},
    {OpId::kTokenNll, TokenNll},
    {OpId::kDepthwiseConv2d, DepthwiseConv2d},
    {OpId::kClassOverlap, ClassOverlap},
    {OpId::kCocoMatch, CocoMatch},
    {OpId::kPanopticMatch, PanopticMatch},
    {OpId::kCocoBins, CocoBins},
    {OpId::kCocoBinsSummary, CocoBinsSummary},
    {OpId::kCocoSummary, CocoSummary},
    {OpId::kMatmul, Matmul},
    {OpId::kTraceSqrt, TraceSqrt},
};
static_assert(kKernels.Complete(OpKind::kPrimitive) && kKernels.Complete(OpKind::kComposite),
              "an op of op_list.h has no eager kernel");

}  // namespace

at::Tensor CumsumScan(const at::Tensor& x, int64_t dim) {
  // Hillis-Steele: after the step with shift s every element holds the sum of
  // the 2s elements ending at it; each addition is elementwise, so the order
  // of operations is fixed whatever the device.
  dim = at::maybe_wrap_dim(dim, x.dim());
  const int64_t n = x.size(dim);
  at::Tensor y = x;
  for (int64_t s = 1; s < n; s *= 2) {
    y = y + at::cat({at::zeros_like(y.narrow(dim, 0, s)), y.narrow(dim, 0, n - s)}, dim);
  }
  return y;
}

Kernel FindKernel(OpId op) {
  EnsureMetaKernels();
  return kKernels[op];
}

Kernel FindKernel(absl::string_view op) {
  std::optional<OpId> id = OpIdNamed(op);
  return id ? FindKernel(*id) : nullptr;
}

}  // namespace tally::ops
