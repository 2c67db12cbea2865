// Typed op attributes: one struct per op (or op family) with attributes.
//
// A struct lists its fields once, in Fields(); the op's schema (SpecsOf, for
// the op table's checks), reading a node's attributes (AttrsOf) and writing
// them (ToAttrMap) all derive from that list, so an attribute is spelled in
// one place. A misspelt field does not compile; a node whose attributes do
// not match the schema (a missing, misspelt or mistyped key) fails
// ops::InferTypes, and so the verifier, before any kernel reads it.
//
// Fields are required (plain types) or optional (Opt<T>): an optional field
// absent from the node stays absent when written back, so the text IR
// round-trips; its default, where it has one, is declared here and nowhere
// else.
#ifndef TALLY_OPS_ATTRS_H_
#define TALLY_OPS_ATTRS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "engine/ir/attribute.h"
#include "engine/ir/graph.h"

namespace tally::ops {

// AttrKind is the expected kind of one attribute.
enum class AttrKind { kInt, kDouble, kBool, kString, kInts, kDoubles };

// AttrSpec is one attribute of an op's schema.
struct AttrSpec {
  std::string name;
  AttrKind kind;
  bool required = true;
};

// Opt is an optional attribute, with the value kernels use when it is absent
// (T{} unless the field declares one: Opt<bool> keepdim{false}).
template <typename T>
class Opt {
 public:
  Opt() = default;
  explicit Opt(T fallback) : fallback_(std::move(fallback)) {}
  Opt& operator=(T v) {
    value_ = std::move(v);
    return *this;
  }
  bool has_value() const { return value_.has_value(); }
  // get: the value, or the declared default when absent.
  const T& get() const { return value_ ? *value_ : fallback_; }
  const std::optional<T>& optional() const { return value_; }
  void reset() { value_.reset(); }

 private:
  std::optional<T> value_;
  T fallback_{};
};

// Field names one member of an attribute struct.
template <typename S, typename T>
struct Field {
  const char* name;
  T S::*member;
};
template <typename S, typename T>
constexpr Field<S, T> F(const char* name, T S::*member) {
  return {name, member};
}

namespace attrs_internal {

template <typename X>
using Bare = std::remove_cv_t<std::remove_reference_t<X>>;

template <typename T>
struct Kind;
template <>
struct Kind<int64_t> {
  static constexpr AttrKind kValue = AttrKind::kInt;
  static bool Read(const ir::Attr& a, int64_t& out) {
    if (const auto* v = std::get_if<int64_t>(&a)) return out = *v, true;
    return false;
  }
};
template <>
struct Kind<double> {
  static constexpr AttrKind kValue = AttrKind::kDouble;
  static bool Read(const ir::Attr& a, double& out) {
    if (const auto* v = std::get_if<double>(&a)) return out = *v, true;
    if (const auto* v = std::get_if<int64_t>(&a)) return out = static_cast<double>(*v), true;
    return false;
  }
};
template <>
struct Kind<bool> {
  static constexpr AttrKind kValue = AttrKind::kBool;
  static bool Read(const ir::Attr& a, bool& out) {
    if (const auto* v = std::get_if<bool>(&a)) return out = *v, true;
    return false;
  }
};
template <>
struct Kind<std::string> {
  static constexpr AttrKind kValue = AttrKind::kString;
  static bool Read(const ir::Attr& a, std::string& out) {
    if (const auto* v = std::get_if<std::string>(&a)) return out = *v, true;
    return false;
  }
};
template <>
struct Kind<std::vector<int64_t>> {
  static constexpr AttrKind kValue = AttrKind::kInts;
  static bool Read(const ir::Attr& a, std::vector<int64_t>& out) {
    if (const auto* v = std::get_if<std::vector<int64_t>>(&a)) return out = *v, true;
    return false;
  }
};
template <>
struct Kind<std::vector<double>> {
  static constexpr AttrKind kValue = AttrKind::kDoubles;
  static bool Read(const ir::Attr& a, std::vector<double>& out) {
    if (const auto* v = std::get_if<std::vector<double>>(&a)) return out = *v, true;
    if (const auto* v = std::get_if<std::vector<int64_t>>(&a)) return out.assign(v->begin(), v->end()), true;
    return false;
  }
};

template <typename T>
struct FieldOps {
  static constexpr bool kRequired = true;
  static constexpr AttrKind kKind = Kind<T>::kValue;
  static void Read(const ir::AttrMap& m, const char* name, T& out) {
    if (auto it = m.find(name); it != m.end()) Kind<T>::Read(it->second, out);
  }
  static void Write(const T& v, const char* name, ir::AttrMap& m) { m[name] = v; }
};
template <typename T>
struct FieldOps<Opt<T>> {
  static constexpr bool kRequired = false;
  static constexpr AttrKind kKind = Kind<T>::kValue;
  static void Read(const ir::AttrMap& m, const char* name, Opt<T>& out) {
    T v{};
    if (auto it = m.find(name); it != m.end() && Kind<T>::Read(it->second, v)) out = std::move(v);
  }
  static void Write(const Opt<T>& v, const char* name, ir::AttrMap& m) {
    if (v.has_value()) m[name] = v.get();
  }
};

}  // namespace attrs_internal

// SpecsOf is the schema of attribute struct A.
template <typename A>
std::vector<AttrSpec> SpecsOf() {
  std::vector<AttrSpec> out;
  std::apply(
      [&](auto... f) {
        (out.push_back(AttrSpec{f.name,
                                attrs_internal::FieldOps<attrs_internal::Bare<decltype(A{}.*(f.member))>>::kKind,
                                attrs_internal::FieldOps<attrs_internal::Bare<decltype(A{}.*(f.member))>>::kRequired}),
         ...);
      },
      A::Fields());
  return out;
}

// AttrsOf reads a node's attributes (checked against SpecsOf<A> when the
// node was built or verified).
template <typename A>
A AttrsOf(const ir::AttrMap& m) {
  A a{};
  std::apply(
      [&](auto... f) {
        (attrs_internal::FieldOps<attrs_internal::Bare<decltype(a.*(f.member))>>::Read(m, f.name, a.*(f.member)), ...);
      },
      A::Fields());
  return a;
}
template <typename A>
A AttrsOf(const ir::Node& n) {
  return AttrsOf<A>(n.attrs());
}

// ToAttrMap writes A's fields (an absent optional stays absent).
template <typename A>
ir::AttrMap ToAttrMap(const A& a) {
  ir::AttrMap m;
  std::apply(
      [&](auto... f) {
        (attrs_internal::FieldOps<attrs_internal::Bare<decltype(a.*(f.member))>>::Write(a.*(f.member), f.name, m), ...);
      },
      A::Fields());
  return m;
}

// SetAttrs replaces a node's attributes by `a`'s.
template <typename A>
void SetAttrs(ir::Node& n, const A& a) {
  n.mutable_attrs() = ToAttrMap(a);
}

// ---------------------------------------------------------------------------
// The attribute structs, by op (ops/op_list.h). Defaults are the ops'.

// safe_div: the value where the denominator is 0.
struct SafeDivAttrs {
  Opt<double> zero_division{0.0};
  static constexpr auto Fields() { return std::make_tuple(F("zero_division", &SafeDivAttrs::zero_division)); }
};
// clamp: the bounds (either may be absent).
struct ClampAttrs {
  Opt<double> min;
  Opt<double> max;
  static constexpr auto Fields() { return std::make_tuple(F("min", &ClampAttrs::min), F("max", &ClampAttrs::max)); }
};
// cast: the result dtype, by name (ir::DTypeName).
struct CastAttrs {
  std::string dtype;
  static constexpr auto Fields() { return std::make_tuple(F("dtype", &CastAttrs::dtype)); }
};
// reduce_sum, reduce_max, reduce_min, reduce_any, reduce_all: absent dims
// reduce every dim.
struct ReduceAttrs {
  Opt<std::vector<int64_t>> dims;
  Opt<bool> keepdim{false};
  static constexpr auto Fields() {
    return std::make_tuple(F("dims", &ReduceAttrs::dims), F("keepdim", &ReduceAttrs::keepdim));
  }
};
// argmax.
struct ArgmaxAttrs {
  int64_t dim = 0;
  Opt<bool> keepdim{false};
  static constexpr auto Fields() {
    return std::make_tuple(F("dim", &ArgmaxAttrs::dim), F("keepdim", &ArgmaxAttrs::keepdim));
  }
};
// softmax, size, unsqueeze, squeeze, cumsum: one dim.
struct DimAttrs {
  int64_t dim = 0;
  static constexpr auto Fields() { return std::make_tuple(F("dim", &DimAttrs::dim)); }
};
// constant: a scalar `value`, or a dense tensor (MLIR's dense<...>, XLA's
// constant): `values` in row-major order, of `shape` ([len(values)] when
// absent). Exactly one of value and values.
struct ConstantAttrs {
  Opt<double> value;
  Opt<std::vector<int64_t>> shape;
  Opt<std::vector<double>> values;
  std::string dtype;
  static ConstantAttrs Scalar(double v, std::string dtype) {
    ConstantAttrs a;
    a.value = v;
    a.dtype = std::move(dtype);
    return a;
  }
  static ConstantAttrs Dense(std::vector<double> values, std::string dtype) {
    ConstantAttrs a;
    a.values = std::move(values);
    a.dtype = std::move(dtype);
    return a;
  }
  // dense: a tensor, not a scalar.
  bool dense() const { return values.has_value(); }
  // Sizes: the constant's sizes ({} for a scalar).
  std::vector<int64_t> Sizes() const {
    if (!dense()) return {};
    if (shape.has_value()) return shape.get();
    return {static_cast<int64_t>(values.get().size())};
  }
  static constexpr auto Fields() {
    return std::make_tuple(F("value", &ConstantAttrs::value), F("shape", &ConstantAttrs::shape),
                           F("values", &ConstantAttrs::values), F("dtype", &ConstantAttrs::dtype));
  }
};
// full: `shape` filled with `value`.
struct FullAttrs {
  std::vector<int64_t> shape;
  double value = 0;
  std::string dtype;
  static constexpr auto Fields() {
    return std::make_tuple(F("shape", &FullAttrs::shape), F("value", &FullAttrs::value), F("dtype", &FullAttrs::dtype));
  }
};
// full_like: the input's shape filled with `value`.
struct FullLikeAttrs {
  double value = 0;
  std::string dtype;
  static constexpr auto Fields() {
    return std::make_tuple(F("value", &FullLikeAttrs::value), F("dtype", &FullLikeAttrs::dtype));
  }
};
// arange: [0, n).
struct ArangeAttrs {
  int64_t n = 0;
  std::string dtype;
  static constexpr auto Fields() { return std::make_tuple(F("n", &ArangeAttrs::n), F("dtype", &ArangeAttrs::dtype)); }
};
// linspace: `steps` points from `start` to `end`.
struct LinspaceAttrs {
  double start = 0;
  double end = 0;
  int64_t steps = 0;
  std::string dtype;
  static constexpr auto Fields() {
    return std::make_tuple(F("start", &LinspaceAttrs::start), F("end", &LinspaceAttrs::end),
                           F("steps", &LinspaceAttrs::steps), F("dtype", &LinspaceAttrs::dtype));
  }
};
// transfer: the destination device.
struct TransferAttrs {
  std::string device;
  static constexpr auto Fields() { return std::make_tuple(F("device", &TransferAttrs::device)); }
};
// reshape.
struct ReshapeAttrs {
  std::vector<int64_t> shape;
  static constexpr auto Fields() { return std::make_tuple(F("shape", &ReshapeAttrs::shape)); }
};
// select: `index` along `dim`.
struct SelectAttrs {
  int64_t dim = 0;
  int64_t index = 0;
  static constexpr auto Fields() {
    return std::make_tuple(F("dim", &SelectAttrs::dim), F("index", &SelectAttrs::index));
  }
};
// transpose.
struct TransposeAttrs {
  int64_t dim0 = 0;
  int64_t dim1 = 0;
  static constexpr auto Fields() {
    return std::make_tuple(F("dim0", &TransposeAttrs::dim0), F("dim1", &TransposeAttrs::dim1));
  }
};
// one_hot.
struct OneHotAttrs {
  int64_t num_classes = 0;
  static constexpr auto Fields() { return std::make_tuple(F("num_classes", &OneHotAttrs::num_classes)); }
};
// topk_mask: the k largest of each row.
struct TopkMaskAttrs {
  int64_t k = 0;
  static constexpr auto Fields() { return std::make_tuple(F("k", &TopkMaskAttrs::k)); }
};
// histogram: `size` bins.
struct HistogramAttrs {
  int64_t size = 0;
  static constexpr auto Fields() { return std::make_tuple(F("size", &HistogramAttrs::size)); }
};
// replica_histogram (ops/fused/replica_histogram.h).
struct ReplicaHistogramAttrs {
  int64_t size = 0;
  int64_t replicas = 0;
  std::string mode;  // "groups" or "poisson"
  int64_t seed = 0;
  int64_t block = 1;  // elements of idx per key
  // Poisson per group: the last operand is each row's group id; [G, replicas * size].
  Opt<int64_t> num_groups;
  static constexpr auto Fields() {
    return std::make_tuple(F("size", &ReplicaHistogramAttrs::size), F("replicas", &ReplicaHistogramAttrs::replicas),
                           F("mode", &ReplicaHistogramAttrs::mode), F("seed", &ReplicaHistogramAttrs::seed),
                           F("block", &ReplicaHistogramAttrs::block),
                           F("num_groups", &ReplicaHistogramAttrs::num_groups));
  }
};
// sort.
struct SortAttrs {
  int64_t dim = 0;
  Opt<bool> descending{false};
  static constexpr auto Fields() {
    return std::make_tuple(F("dim", &SortAttrs::dim), F("descending", &SortAttrs::descending));
  }
};
// searchsorted, bucketize: which side of equal values.
struct SideAttrs {
  Opt<bool> right{false};
  static constexpr auto Fields() { return std::make_tuple(F("right", &SideAttrs::right)); }
};
// topk.
struct TopkAttrs {
  int64_t k = 0;
  Opt<int64_t> dim{-1};
  Opt<bool> largest{true};
  Opt<bool> sorted{true};
  static constexpr auto Fields() {
    return std::make_tuple(F("k", &TopkAttrs::k), F("dim", &TopkAttrs::dim), F("largest", &TopkAttrs::largest),
                           F("sorted", &TopkAttrs::sorted));
  }
};
// argsort.
struct ArgsortAttrs {
  Opt<int64_t> dim{-1};
  Opt<bool> descending{false};
  Opt<bool> stable{true};
  static constexpr auto Fields() {
    return std::make_tuple(F("dim", &ArgsortAttrs::dim), F("descending", &ArgsortAttrs::descending),
                           F("stable", &ArgsortAttrs::stable));
  }
};
// edit_distance: the cost of one substitution (an insertion or deletion
// costs 1); with `substitutions`, also the substitutions, deletions and
// insertions of the alignment with the fewest substitutions.
struct EditDistanceAttrs {
  int64_t substitution_cost = 1;
  Opt<bool> substitutions{false};
  static constexpr auto Fields() {
    return std::make_tuple(F("substitution_cost", &EditDistanceAttrs::substitution_cost),
                           F("substitutions", &EditDistanceAttrs::substitutions));
  }
};
// sdr: the distortion filter's length, zero-mean signals, and the constant
// added to the autocorrelation's diagonal.
struct SdrAttrs {
  int64_t filter_length = 512;
  Opt<bool> zero_mean{false};
  Opt<double> load_diag{0.0};
  static constexpr auto Fields() {
    return std::make_tuple(F("filter_length", &SdrAttrs::filter_length), F("zero_mean", &SdrAttrs::zero_mean),
                           F("load_diag", &SdrAttrs::load_diag));
  }
};
// signal_ratio: how many trailing dims one signal spans, the target
// scaled by its projection coefficient (SI-SDR) or as it is (SNR), the
// signals without their means, and the epsilon added to every ratio's
// terms (preds' dtype's, as TorchMetrics adds it).
struct SignalRatioAttrs {
  Opt<int64_t> signal_dims{1};
  Opt<bool> scale_invariant{true};
  Opt<bool> zero_mean{false};
  double eps = 0;
  static constexpr auto Fields() {
    return std::make_tuple(F("signal_dims", &SignalRatioAttrs::signal_dims),
                           F("scale_invariant", &SignalRatioAttrs::scale_invariant),
                           F("zero_mean", &SignalRatioAttrs::zero_mean), F("eps", &SignalRatioAttrs::eps));
  }
};
// depthwise_conv2d: the step between windows, in both spatial dims, and the
// rows and columns of reflection padding (torch's "reflect": the edge is
// not repeated) added on each side first.
struct Conv2dAttrs {
  Opt<int64_t> stride{1};
  Opt<int64_t> pad_h{0};
  Opt<int64_t> pad_w{0};
  static constexpr auto Fields() {
    return std::make_tuple(F("stride", &Conv2dAttrs::stride), F("pad_h", &Conv2dAttrs::pad_h),
                           F("pad_w", &Conv2dAttrs::pad_w));
  }
};
// class_overlap: the classes counted, whether masks hold class indices
// ([N, ...]) or one 0/1 channel per class ([N, C, ...]), and whether class 0
// (the background) is dropped from the counts.
struct ClassOverlapAttrs {
  int64_t num_classes = 1;
  Opt<bool> index{false};
  Opt<bool> include_background{true};
  static constexpr auto Fields() {
    return std::make_tuple(F("num_classes", &ClassOverlapAttrs::num_classes), F("index", &ClassOverlapAttrs::index),
                           F("include_background", &ClassOverlapAttrs::include_background));
  }
};
// coco_match: COCO's IoU thresholds (in order), the detections kept per
// image and class (max_det, the largest of maxDets) and whether every label
// counts as one class (average='micro').
struct CocoMatchAttrs {
  std::vector<double> iou_thresholds;
  int64_t max_det = 100;
  Opt<bool> micro{false};
  static constexpr auto Fields() {
    return std::make_tuple(F("iou_thresholds", &CocoMatchAttrs::iou_thresholds), F("max_det", &CocoMatchAttrs::max_det),
                           F("micro", &CocoMatchAttrs::micro));
  }
};
// coco_summary: coco_match's thresholds, COCO's recall thresholds and its
// three maxDets (ascending), micro as for coco_match, and whether the
// per-class values are computed.
struct CocoSummaryAttrs {
  std::vector<double> iou_thresholds;
  std::vector<double> rec_thresholds;
  std::vector<int64_t> max_dets;
  Opt<bool> micro{false};
  Opt<bool> class_metrics{false};
  static constexpr auto Fields() {
    return std::make_tuple(F("iou_thresholds", &CocoSummaryAttrs::iou_thresholds),
                           F("rec_thresholds", &CocoSummaryAttrs::rec_thresholds),
                           F("max_dets", &CocoSummaryAttrs::max_dets), F("micro", &CocoSummaryAttrs::micro),
                           F("class_metrics", &CocoSummaryAttrs::class_metrics));
  }
};
// panoptic_match: the thing and the stuff category ids, each sorted and
// distinct; category k of the counts is things[k], then stuffs[k - T]
// (TorchMetrics' continuous ids).
// Its IoU sums count units of 2^-24: a float32 IoU above 0.5 is a whole
// number of them.
inline constexpr double kPanopticIouUnit = 1.0 / 16777216.0;
struct PanopticMatchAttrs {
  std::vector<int64_t> things;
  std::vector<int64_t> stuffs;
  static constexpr auto Fields() {
    return std::make_tuple(F("things", &PanopticMatchAttrs::things), F("stuffs", &PanopticMatchAttrs::stuffs));
  }
};
// coco_bins: the classes (labels in [0, num_classes)), the score bins
// (width 1/score_bins over [0, 1]), COCO's three maxDets and the number of
// IoU thresholds coco_match matched at. coco_bins_summary takes
// CocoSummaryAttrs (micro false).
struct CocoBinsAttrs {
  int64_t num_classes = 1;
  int64_t score_bins = 1;
  std::vector<int64_t> max_dets;
  int64_t thresholds = 1;
  static constexpr auto Fields() {
    return std::make_tuple(F("num_classes", &CocoBinsAttrs::num_classes), F("score_bins", &CocoBinsAttrs::score_bins),
                           F("max_dets", &CocoBinsAttrs::max_dets), F("thresholds", &CocoBinsAttrs::thresholds));
  }
};
// ngram_matches, ngram_overlap: the highest n-gram order counted (orders
// 1..n_gram).
struct NgramMatchesAttrs {
  int64_t n_gram = 4;
  static constexpr auto Fields() { return std::make_tuple(F("n_gram", &NgramMatchesAttrs::n_gram)); }
};
// bincount.
struct BincountAttrs {
  int64_t minlength = 0;
  static constexpr auto Fields() { return std::make_tuple(F("minlength", &BincountAttrs::minlength)); }
};
// assert_zero: the message ("{n}" is the count); whole_state checks are
// skipped while a state's partial values are checked.
struct AssertZeroAttrs {
  std::string message;
  Opt<bool> whole_state{false};
  // WholeState: a check only the whole state can tell (not a bad input).
  static AssertZeroAttrs WholeState(std::string message) {
    AssertZeroAttrs a{std::move(message)};
    a.whole_state = true;
    return a;
  }
  static constexpr auto Fields() {
    return std::make_tuple(F("message", &AssertZeroAttrs::message), F("whole_state", &AssertZeroAttrs::whole_state));
  }
};
// mc_confmat.
// With num_groups = G the last operand is the rows' group ids and the
// counts gain a leading [G] axis (ops/fused/mc_confmat.h).
struct McConfmatAttrs {
  int64_t num_classes = 0;
  Opt<int64_t> ignore_index;
  Opt<int64_t> num_groups;
  static constexpr auto Fields() {
    return std::make_tuple(F("num_classes", &McConfmatAttrs::num_classes),
                           F("ignore_index", &McConfmatAttrs::ignore_index),
                           F("num_groups", &McConfmatAttrs::num_groups));
  }
};
// mc_marginals: `parts` is a comma list (ops/confmat_parts.h); num_groups as
// mc_confmat's.
struct McMarginalsAttrs {
  int64_t num_classes = 0;
  Opt<int64_t> ignore_index;
  std::string parts;
  Opt<bool> totals{false};
  Opt<int64_t> num_groups;
  static constexpr auto Fields() {
    return std::make_tuple(F("num_classes", &McMarginalsAttrs::num_classes),
                           F("ignore_index", &McMarginalsAttrs::ignore_index), F("parts", &McMarginalsAttrs::parts),
                           F("totals", &McMarginalsAttrs::totals), F("num_groups", &McMarginalsAttrs::num_groups));
  }
};
// confmat_part: one part's name (ops/confmat_parts.h).
struct ConfmatPartAttrs {
  std::string part;
  static constexpr auto Fields() { return std::make_tuple(F("part", &ConfmatPartAttrs::part)); }
};
// score_code16: "fp16" or "bf16".
struct ScoreCode16Attrs {
  std::string format;
  static constexpr auto Fields() { return std::make_tuple(F("format", &ScoreCode16Attrs::format)); }
};
// count_outside: the range [low, high) (ops/fused/count_outside.h).
struct CountOutsideAttrs {
  double low = 0;
  double high = 0;
  static constexpr auto Fields() {
    return std::make_tuple(F("low", &CountOutsideAttrs::low), F("high", &CountOutsideAttrs::high));
  }
};
// code16_counts.
struct Code16CountsAttrs {
  std::string format;
  int64_t classes = 0;
  static constexpr auto Fields() {
    return std::make_tuple(F("format", &Code16CountsAttrs::format), F("classes", &Code16CountsAttrs::classes));
  }
};
// bl_confmat.
struct BlConfmatAttrs {
  double threshold = 0;
  bool logits_over_kept = false;
  Opt<int64_t> ignore_index;
  static constexpr auto Fields() {
    return std::make_tuple(F("threshold", &BlConfmatAttrs::threshold),
                           F("logits_over_kept", &BlConfmatAttrs::logits_over_kept),
                           F("ignore_index", &BlConfmatAttrs::ignore_index));
  }
};
// reg_stats: whether the error moments are kept (the prune pass drops them
// when nobody reads them).
struct RegStatsAttrs {
  Opt<bool> error_moments{true};
  static constexpr auto Fields() { return std::make_tuple(F("error_moments", &RegStatsAttrs::error_moments)); }
};
// moments_merge.
struct MomentsMergeAttrs {
  int64_t variables = 0;
  Opt<std::vector<int64_t>> pairs;
  static constexpr auto Fields() {
    return std::make_tuple(F("variables", &MomentsMergeAttrs::variables), F("pairs", &MomentsMergeAttrs::pairs));
  }
};
// count_invalid.
struct CountInvalidAttrs {
  Opt<int64_t> ignore_index;
  static constexpr auto Fields() { return std::make_tuple(F("ignore_index", &CountInvalidAttrs::ignore_index)); }
};
// retrieval_score.
struct RetrievalScoreAttrs {
  std::string metric;
  std::string empty_target_action;
  bool adaptive_k = false;
  Opt<int64_t> top_k;
  Opt<int64_t> ignore_index;
  Opt<std::string> aggregation{"mean"};
  static constexpr auto Fields() {
    return std::make_tuple(
        F("metric", &RetrievalScoreAttrs::metric), F("empty_target_action", &RetrievalScoreAttrs::empty_target_action),
        F("adaptive_k", &RetrievalScoreAttrs::adaptive_k), F("top_k", &RetrievalScoreAttrs::top_k),
        F("ignore_index", &RetrievalScoreAttrs::ignore_index), F("aggregation", &RetrievalScoreAttrs::aggregation));
  }
};

}  // namespace tally::ops

#endif  // TALLY_OPS_ATTRS_H_
