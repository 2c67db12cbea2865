// The one list of ops: every op kind Tally knows, by id, name and kind. The
// op table (op_registry), the eager kernels (kernels.cc), the TorchScript
// lowerings and the decompositions are indexed by OpId and checked complete
// against this list (by static_assert where the table is constexpr, by
// ops::CheckOpTable() for the op definitions), so an op added here and
// forgotten in a table fails the build or the first compile, not a test.
#ifndef TALLY_OPS_OP_LIST_H_
#define TALLY_OPS_OP_LIST_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>

#include "absl/strings/string_view.h"
#include "engine/ir/graph.h"

namespace tally::ops {

// kPrimitive ops have an ATen kernel and a TorchScript lowering of their
// own; kComposite ops are defined by a decomposition into primitives (their
// kernel is Tally's fused one, lowered through a registered tally:: op).
enum class OpKind : uint8_t { kPrimitive, kComposite };

// X(Id, "name", kind), one line per op.
#define TALLY_OP_LIST(X)                                    \
  X(Add, "add", kPrimitive)                                 \
  X(Sub, "sub", kPrimitive)                                 \
  X(Mul, "mul", kPrimitive)                                 \
  X(Div, "div", kPrimitive)                                 \
  X(Pow, "pow", kPrimitive)                                 \
  X(Maximum, "maximum", kPrimitive)                         \
  X(Minimum, "minimum", kPrimitive)                         \
  X(SafeDiv, "safe_div", kPrimitive)                        \
  X(Eq, "eq", kPrimitive)                                   \
  X(Ne, "ne", kPrimitive)                                   \
  X(Lt, "lt", kPrimitive)                                   \
  X(Le, "le", kPrimitive)                                   \
  X(Gt, "gt", kPrimitive)                                   \
  X(Ge, "ge", kPrimitive)                                   \
  X(LogicalAnd, "logical_and", kPrimitive)                  \
  X(LogicalOr, "logical_or", kPrimitive)                    \
  X(LogicalXor, "logical_xor", kPrimitive)                  \
  X(LogicalNot, "logical_not", kPrimitive)                  \
  X(Isnan, "isnan", kPrimitive)                             \
  X(Neg, "neg", kPrimitive)                                 \
  X(Abs, "abs", kPrimitive)                                 \
  X(Exp, "exp", kPrimitive)                                 \
  X(Log, "log", kPrimitive)                                 \
  X(Sqrt, "sqrt", kPrimitive)                               \
  X(Acos, "acos", kPrimitive)                               \
  X(Atan, "atan", kPrimitive)                               \
  X(Sigmoid, "sigmoid", kPrimitive)                         \
  X(LogCosh, "log_cosh", kPrimitive)                        \
  X(Clamp, "clamp", kPrimitive)                             \
  X(Cast, "cast", kPrimitive)                               \
  X(Where, "where", kPrimitive)                             \
  X(ReduceSum, "reduce_sum", kPrimitive)                    \
  X(ReduceMax, "reduce_max", kPrimitive)                    \
  X(ReduceMin, "reduce_min", kPrimitive)                    \
  X(ReduceAny, "reduce_any", kPrimitive)                    \
  X(ReduceAll, "reduce_all", kPrimitive)                    \
  X(Argmax, "argmax", kPrimitive)                           \
  X(Softmax, "softmax", kPrimitive)                         \
  X(Constant, "constant", kPrimitive)                       \
  X(Full, "full", kPrimitive)                               \
  X(Arange, "arange", kPrimitive)                           \
  X(Linspace, "linspace", kPrimitive)                       \
  X(FullLike, "full_like", kPrimitive)                      \
  X(Size, "size", kPrimitive)                               \
  X(Transfer, "transfer", kPrimitive)                       \
  X(Reshape, "reshape", kPrimitive)                         \
  X(Flatten, "flatten", kPrimitive)                         \
  X(Unsqueeze, "unsqueeze", kPrimitive)                     \
  X(Squeeze, "squeeze", kPrimitive)                         \
  X(Select, "select", kPrimitive)                           \
  X(Transpose, "transpose", kPrimitive)                     \
  X(OneHot, "one_hot", kPrimitive)                          \
  X(TopkMask, "topk_mask", kPrimitive)                      \
  X(Histogram, "histogram", kPrimitive)                     \
  X(Sort, "sort", kPrimitive)                               \
  X(RankAverage, "rank_average", kPrimitive)                \
  X(Searchsorted, "searchsorted", kPrimitive)               \
  X(Bucketize, "bucketize", kPrimitive)                     \
  X(Cumsum, "cumsum", kPrimitive)                           \
  X(Topk, "topk", kPrimitive)                               \
  X(Argsort, "argsort", kPrimitive)                         \
  X(Concat, "concat", kPrimitive)                           \
  X(Take, "take", kPrimitive)                               \
  X(SegmentSort, "segment_sort", kPrimitive)                \
  X(SegmentScan, "segment_scan", kPrimitive)                \
  X(Bincount, "bincount", kPrimitive)                       \
  X(ReplicaHistogram, "replica_histogram", kPrimitive)      \
  X(MaskedSelect, "masked_select", kPrimitive)              \
  X(Nonzero, "nonzero", kPrimitive)                         \
  X(AssertZero, "assert_zero", kPrimitive)                  \
  X(ExpectedMutualInfo, "expected_mutual_info", kPrimitive) \
  X(MaxAssignment, "max_assignment", kPrimitive)            \
  X(EditDistance, "edit_distance", kPrimitive)              \
  X(NgramMatches, "ngram_matches", kPrimitive)              \
  X(NgramOverlap, "ngram_overlap", kPrimitive)              \
  X(LcsLength, "lcs_length", kPrimitive)                    \
  X(TerEdits, "ter_edits", kPrimitive)                      \
  X(Sdr, "sdr", kPrimitive)                                 \
  X(SignalRatio, "signal_ratio", kPrimitive)                \
  X(TokenNll, "token_nll", kPrimitive)                      \
  X(DepthwiseConv2d, "depthwise_conv2d", kPrimitive)        \
  X(ClassOverlap, "class_overlap", kPrimitive)              \
  X(Matmul, "matmul", kPrimitive)                           \
  X(TraceSqrt, "trace_sqrt", kPrimitive)                    \
  X(CocoMatch, "coco_match", kPrimitive)                    \
  X(CocoSummary, "coco_summary", kPrimitive)                \
  X(PanopticMatch, "panoptic_match", kPrimitive)            \
  X(CocoBins, "coco_bins", kPrimitive)                      \
  X(CocoBinsSummary, "coco_bins_summary", kPrimitive)       \
  X(McConfmat, "mc_confmat", kComposite)                    \
  X(McMarginals, "mc_marginals", kComposite)                \
  X(ConfmatPart, "confmat_part", kComposite)                \
  X(BinaryRankStats, "binary_rank_stats", kComposite)       \
  X(ScoreCode16, "score_code16", kComposite)                \
  X(Code16Counts, "code16_counts", kComposite)              \
  X(RegStats, "reg_stats", kComposite)                      \
  X(MomentsMerge, "moments_merge", kComposite)              \
  X(BlConfmat, "bl_confmat", kComposite)                    \
  X(CountInvalid, "count_invalid", kComposite)              \
  X(RetrievalScore, "retrieval_score", kComposite)          \
  X(CountOutside, "count_outside", kComposite)

enum class OpId : uint8_t {
#define TALLY_OP_ENUM(id, name, kind) k##id,
  TALLY_OP_LIST(TALLY_OP_ENUM)
#undef TALLY_OP_ENUM
};

inline constexpr size_t kNumOps = 0
#define TALLY_OP_COUNT(id, name, kind) +1
    TALLY_OP_LIST(TALLY_OP_COUNT)
#undef TALLY_OP_COUNT
    ;

inline constexpr std::array<absl::string_view, kNumOps> kOpNames = {
#define TALLY_OP_NAME(id, name, kind) name,
    TALLY_OP_LIST(TALLY_OP_NAME)
#undef TALLY_OP_NAME
};

inline constexpr std::array<OpKind, kNumOps> kOpKinds = {
#define TALLY_OP_KIND(id, name, kind) OpKind::kind,
    TALLY_OP_LIST(TALLY_OP_KIND)
#undef TALLY_OP_KIND
};

constexpr size_t Index(OpId id) { return static_cast<size_t>(id); }
constexpr absl::string_view OpName(OpId id) { return kOpNames[Index(id)]; }
constexpr OpKind KindOf(OpId id) { return kOpKinds[Index(id)]; }

// OpIdNamed maps a name (IR text, a node) to its id; nullopt when no op has it.
std::optional<OpId> OpIdNamed(absl::string_view name);

// IdOf is the id of a node's op (nullopt for a name no op has: a node parsed
// from text before verification).
std::optional<OpId> IdOf(const ir::Node& n);

// Is says whether `n` is a node of op `id`: what passes ask instead of
// comparing names.
inline bool Is(const ir::Node& n, OpId id) { return IdOf(n) == id; }
inline bool Is(const ir::Node* n, OpId id) { return n != nullptr && IdOf(*n) == id; }

// OpTableOf is a constexpr table of one entry per op, filled from
// {id, entry} pairs; Complete and CoversOnly say which kinds of op have one.
template <typename T>
struct OpTableOf {
  std::array<T, kNumOps> entries{};
  constexpr OpTableOf(std::initializer_list<std::pair<OpId, T>> init) {
    for (const auto& e : init) entries[Index(e.first)] = e.second;
  }
  constexpr T operator[](OpId id) const { return entries[Index(id)]; }
  // Complete is true when every op of kind `kind` has a non-null entry.
  constexpr bool Complete(OpKind kind) const {
    for (size_t i = 0; i < kNumOps; ++i) {
      if (kOpKinds[i] == kind && entries[i] == nullptr) return false;
    }
    return true;
  }
  // CoversOnly is true when no op outside kind `kind` has an entry.
  constexpr bool CoversOnly(OpKind kind) const {
    for (size_t i = 0; i < kNumOps; ++i) {
      if (kOpKinds[i] != kind && entries[i] != nullptr) return false;
    }
    return true;
  }
};

}  // namespace tally::ops

#endif  // TALLY_OPS_OP_LIST_H_
