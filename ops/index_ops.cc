// Creation, shape, indexing and counting ops: constant, full, arange,
// linspace, size, reshape, flatten, unsqueeze, squeeze, select, transpose,
// one_hot, topk_mask, histogram, sort, rank_average.
#include "absl/strings/str_cat.h"
#include "ops/op_registry.h"
#include "support/status_macros.h"

namespace tally::ops {
namespace {

using ir::Dim;
using ir::DType;
using ir::TensorType;
using Types = absl::StatusOr<std::vector<TensorType>>;

// DTypeAttr: the dtype of a creation op with attributes A.
template <typename A>
absl::StatusOr<DType> DTypeAttr(const ir::AttrMap& a) {
  return ir::ParseDType(AttrsOf<A>(a).dtype);
}

}  // namespace

void RegisterIndexOps(OpTable& t) {
  auto add = [&t](OpDef d) { AddOp(t, std::move(d)); };
  {
    OpDef d = MakeOp(OpId::kConstant, 0, 0, SpecsOf<ConstantAttrs>(),
                     [](const std::vector<TensorType>&, const ir::AttrMap& a, const ir::Device& dev) -> Types {
                       TALLY_ASSIGN_OR_RETURN(DType dt, DTypeAttr<ConstantAttrs>(a));
                       const auto attrs = AttrsOf<ConstantAttrs>(a);
                       if (attrs.value.has_value() == attrs.dense()) {
                         return absl::InvalidArgumentError("takes exactly one of value and values");
                       }
                       if (attrs.shape.has_value() && !attrs.dense()) {
                         return absl::InvalidArgumentError("a shape needs values");
                       }
                       ir::Shape s;
                       int64_t numel = 1;
                       for (int64_t d : attrs.Sizes()) {
                         if (d < 0) return absl::InvalidArgumentError("negative size");
                         // More elements than values can never match (and must not overflow).
                         if (d > 0 && numel > static_cast<int64_t>(attrs.values.get().size()) / d + 1) {
                           return absl::InvalidArgumentError(
                               absl::StrCat("shape holds more than the ", attrs.values.get().size(), " values given"));
                         }
                         s.push_back(Dim::Fixed(d));
                         numel *= d;
                       }
                       if (attrs.dense() && numel != static_cast<int64_t>(attrs.values.get().size())) {
                         return absl::InvalidArgumentError(
                             absl::StrCat("shape holds ", numel, " values, got ", attrs.values.get().size()));
                       }
                       return std::vector<TensorType>{{dt, s, dev}};
                     });
    d.traits.creates = true;
    add(std::move(d));
  }
  {
    OpDef d = MakeOp(OpId::kFull, 0, 0, SpecsOf<FullAttrs>(),
                     [](const std::vector<TensorType>&, const ir::AttrMap& a, const ir::Device& dev) -> Types {
                       TALLY_ASSIGN_OR_RETURN(DType dt, DTypeAttr<FullAttrs>(a));
                       ir::Shape s;
                       for (int64_t n : AttrsOf<FullAttrs>(a).shape) {
                         if (n < 0) return absl::InvalidArgumentError("negative size");
                         s.push_back(Dim::Fixed(n));
                       }
                       return std::vector<TensorType>{{dt, s, dev}};
                     });
    d.traits.creates = true;
    add(std::move(d));
  }
  {
    OpDef d = MakeOp(OpId::kArange, 0, 0, SpecsOf<ArangeAttrs>(),
                     [](const std::vector<TensorType>&, const ir::AttrMap& a, const ir::Device& dev) -> Types {
                       TALLY_ASSIGN_OR_RETURN(DType dt, DTypeAttr<ArangeAttrs>(a));
                       return std::vector<TensorType>{{dt, {Dim::Fixed(AttrsOf<ArangeAttrs>(a).n)}, dev}};
                     });
    d.traits.creates = true;
    add(std::move(d));
  }
  // linspace: torch.linspace(start, end, steps) in a float dtype, made by
  // ATen's own kernel on the device, so that values meant to sit exactly on
  // its points (calibration bin boundaries) are binned as TorchMetrics bins
  // them: ATen's rounding is not a formula the IR can restate.
  {
    OpDef d = MakeOp(OpId::kLinspace, 0, 0, SpecsOf<LinspaceAttrs>(),
                     [](const std::vector<TensorType>&, const ir::AttrMap& a, const ir::Device& dev) -> Types {
                       TALLY_ASSIGN_OR_RETURN(DType dt, DTypeAttr<LinspaceAttrs>(a));
                       if (!ir::IsFloating(dt)) return absl::InvalidArgumentError("expects a float dtype");
                       const int64_t steps = AttrsOf<LinspaceAttrs>(a).steps;
                       if (steps < 0) return absl::InvalidArgumentError("negative number of steps");
                       return std::vector<TensorType>{{dt, {Dim::Fixed(steps)}, dev}};
                     });
    d.traits.creates = true;
    add(std::move(d));
  }
  // full_like: the input's shape filled with `value`.
  add(MakeOp(OpId::kFullLike, 1, 1, SpecsOf<FullLikeAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
               TALLY_ASSIGN_OR_RETURN(DType dt, DTypeAttr<FullLikeAttrs>(a));
               return std::vector<TensorType>{{dt, in[0].shape, in[0].device}};
             }));
  // transfer: the one op that changes device — an explicit, visible copy of
  // a program input to the program's device (opt-in, --transfer-inputs).
  {
    OpDef d = MakeOp(OpId::kTransfer, 1, 1, SpecsOf<TransferAttrs>(),
                     [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
                       TALLY_ASSIGN_OR_RETURN(ir::Device dev, ir::ParseDevice(AttrsOf<TransferAttrs>(a).device));
                       TensorType t = in[0];
                       t.device = dev;
                       return std::vector<TensorType>{t};
                     });
    d.traits.preserves_device = false;
    add(std::move(d));
  }
  // size: a dim's size as an i64 scalar on the device; metadata only.
  add(MakeOp(OpId::kSize, 1, 1, SpecsOf<DimAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
               TALLY_RETURN_IF_ERROR(NormalizeDim(AttrsOf<DimAttrs>(a).dim, in[0].rank()).status());
               return std::vector<TensorType>{{DType::kInt64, {}, in[0].device}};
             }));
  add(MakeOp(OpId::kReshape, 1, 1, SpecsOf<ReshapeAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
               // Only fixed shapes reshape; symbolic inputs use flatten/unsqueeze.
               int64_t numel = 1;
               for (const Dim& d : in[0].shape) {
                 if (d.is_symbolic()) return absl::InvalidArgumentError("reshape of a symbolic shape");
                 numel *= d.size;
               }
               ir::Shape s;
               int64_t prod = 1;
               for (int64_t n : AttrsOf<ReshapeAttrs>(a).shape) {
                 s.push_back(Dim::Fixed(n));
                 prod *= n;
               }
               if (prod != numel) return absl::InvalidArgumentError("reshape changes the element count");
               return std::vector<TensorType>{{in[0].dtype, s, in[0].device}};
             }));
  add(MakeOp(OpId::kFlatten, 1, 1, {},
             [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
               const Dim out = FlatDim(in[0].shape);
               return std::vector<TensorType>{{in[0].dtype, {out}, in[0].device}};
             }));
  add(MakeOp(OpId::kUnsqueeze, 1, 1, SpecsOf<DimAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
               TALLY_ASSIGN_OR_RETURN(int64_t d, NormalizeDim(AttrsOf<DimAttrs>(a).dim, in[0].rank() + 1));
               TensorType t = in[0];
               t.shape.insert(t.shape.begin() + d, Dim::Fixed(1));
               return std::vector<TensorType>{t};
             }));
  add(MakeOp(OpId::kSqueeze, 1, 1, SpecsOf<DimAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
               TALLY_ASSIGN_OR_RETURN(int64_t d, NormalizeDim(AttrsOf<DimAttrs>(a).dim, in[0].rank()));
               if (in[0].shape[d] != Dim::Fixed(1)) return absl::InvalidArgumentError("squeeze of a dim that is not 1");
               TensorType t = in[0];
               t.shape.erase(t.shape.begin() + d);
               return std::vector<TensorType>{t};
             }));
  add(MakeOp(OpId::kSelect, 1, 1, SpecsOf<SelectAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
               const auto attrs = AttrsOf<SelectAttrs>(a);
               TALLY_ASSIGN_OR_RETURN(int64_t d, NormalizeDim(attrs.dim, in[0].rank()));
               const Dim& dim = in[0].shape[d];
               const int64_t idx = attrs.index;
               if (dim.is_symbolic() || idx < 0 || idx >= dim.size) {
                 return absl::InvalidArgumentError("select index out of range of a fixed dim");
               }
               TensorType t = in[0];
               t.shape.erase(t.shape.begin() + d);
               return std::vector<TensorType>{t};
             }));
  add(MakeOp(OpId::kTranspose, 1, 1, SpecsOf<TransposeAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
               const auto attrs = AttrsOf<TransposeAttrs>(a);
               TALLY_ASSIGN_OR_RETURN(int64_t d0, NormalizeDim(attrs.dim0, in[0].rank()));
               TALLY_ASSIGN_OR_RETURN(int64_t d1, NormalizeDim(attrs.dim1, in[0].rank()));
               TensorType t = in[0];
               std::swap(t.shape[d0], t.shape[d1]);
               return std::vector<TensorType>{t};
             }));
  // one_hot: i1[..., C], true where x == class; values outside [0, C) give an
  // all-false row instead of failing, so it never needs a host check.
  add(MakeOp(OpId::kOneHot, 1, 1, SpecsOf<OneHotAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
               if (!ir::IsIntegral(in[0].dtype)) return absl::InvalidArgumentError("expects integer labels");
               TensorType t = in[0];
               t.dtype = DType::kBool;
               t.shape.push_back(Dim::Fixed(AttrsOf<OneHotAttrs>(a).num_classes));
               return std::vector<TensorType>{t};
             }));
  // topk_mask: i1 of the input's shape, true at the k largest of the last dim.
  add(MakeOp(OpId::kTopkMask, 1, 1, SpecsOf<TopkMaskAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
               if (in[0].rank() < 1) return absl::InvalidArgumentError("expects rank >= 1");
               const Dim& last = in[0].shape.back();
               const int64_t k = AttrsOf<TopkMaskAttrs>(a).k;
               if (k < 1 || (!last.is_symbolic() && k > last.size)) {
                 return absl::InvalidArgumentError(absl::StrCat("k=", k, " out of range of the last dim"));
               }
               TensorType t = in[0];
               t.dtype = DType::kBool;
               return std::vector<TensorType>{t};
             }));
  // histogram(idx[, weights]): counts (or weight sums) of idx into a buffer of
  // fixed `size`; rows whose idx is outside [0, size) are dropped on device.
  add(MakeOp(OpId::kHistogram, 1, 2, SpecsOf<HistogramAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
               if (!ir::IsIntegral(in[0].dtype) || in[0].rank() != 1) {
                 return absl::InvalidArgumentError("expects a rank-1 integer index");
               }
               DType dt = DType::kInt64;
               if (in.size() == 2) {
                 if (in[1].shape != in[0].shape) return absl::InvalidArgumentError("weights must match the index");
                 dt = ir::IsFloating(in[1].dtype) ? in[1].dtype : DType::kInt64;
               }
               return std::vector<TensorType>{{dt, {Dim::Fixed(AttrsOf<HistogramAttrs>(a).size)}, in[0].device}};
             }));
  // replica_histogram(idx, key[, weights][, groups]): the row reduction of
  // sliced and bootstrapped metrics (ops/fused/replica_histogram.h):
  // [replicas * size]; with num_groups = G (poisson) and groups, per group,
  // [G, replicas * size].
  add(MakeOp(OpId::kReplicaHistogram, 2, 4, SpecsOf<ReplicaHistogramAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
               const auto attrs = AttrsOf<ReplicaHistogramAttrs>(a);
               if (attrs.mode != "groups" && attrs.mode != "poisson") {
                 return absl::InvalidArgumentError("mode must be groups or poisson");
               }
               if (attrs.size < 1 || attrs.replicas < 1 || attrs.block < 1) {
                 return absl::InvalidArgumentError("size, replicas and block must be >= 1");
               }
               if (!ir::IsIntegral(in[0].dtype) || in[0].rank() != 1 || !ir::IsIntegral(in[1].dtype) ||
                   in[1].rank() != 1) {
                 return absl::InvalidArgumentError("expects rank-1 integer idx and key");
               }
               const bool grouped = attrs.num_groups.has_value();
               if (grouped && (attrs.mode != "poisson" || attrs.num_groups.get() < 1 || in.size() < 3 ||
                               !ir::IsIntegral(in.back().dtype) || in.back().shape != in[1].shape)) {
                 return absl::InvalidArgumentError("num_groups needs mode poisson and integer groups like the key");
               }
               if (in.size() > (grouped ? 4u : 3u)) return absl::InvalidArgumentError("too many operands");
               DType dt = DType::kInt64;
               if (in.size() == (grouped ? 4u : 3u)) {
                 if (in[2].shape != in[0].shape) return absl::InvalidArgumentError("weights must match the index");
                 if (ir::IsFloating(in[2].dtype)) dt = DType::kFloat64;
               }
               TensorType out{dt, {Dim::Fixed(attrs.replicas * attrs.size)}, in[0].device};
               if (grouped) out.shape.insert(out.shape.begin(), Dim::Fixed(attrs.num_groups.get()));
               return std::vector<TensorType>{out};
             }));
  add(MakeOp(OpId::kSort, 1, 1, SpecsOf<SortAttrs>(),
             [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
               TALLY_RETURN_IF_ERROR(NormalizeDim(AttrsOf<SortAttrs>(a).dim, in[0].rank()).status());
               TensorType idx = in[0];
               idx.dtype = DType::kInt64;
               return std::vector<TensorType>{in[0], idx};
             }));
  // rank_average: 1-based ranks along dim 0 with ties given their mean rank
  // (scipy.stats.rankdata "average"), in f64.
  add(MakeOp(OpId::kRankAverage, 1, 1, {},
             [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
               if (in[0].rank() < 1) return absl::InvalidArgumentError("expects rank >= 1");
               TensorType t = in[0];
               t.dtype = DType::kFloat64;
               return std::vector<TensorType>{t};
             }));
}

}  // namespace tally::ops
