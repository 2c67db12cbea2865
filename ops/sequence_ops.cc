// Ops over token sequences, one per row: preds and target are integer
// [N, L] ids in which a negative id is padding (skipped wherever it is).
//   edit_distance(preds, target) {substitution_cost} -> i64 [N, 3]: per row
//     the Levenshtein distance between the two id sequences (insertions and
//     deletions cost 1, a substitution substitution_cost), then the lengths
//     of preds and of target (ops/fused/edit_distance.h); {substitutions}
//     adds three columns, [N, 6]: the substitutions, deletions and
//     insertions of the minimal alignment with the fewest substitutions.
//   ngram_matches(preds, target) {n_gram} -> i64 [N, 2 n_gram + 2]: per row
//     of preds [N, Lp] against its references target [N, R, Lt], the
//     clipped n-gram matches of orders 1..n_gram, preds' n-gram counts of
//     those orders, preds' length and the closest reference length
//     (ops/fused/ngram_matches.h): what BLEU sums.
//   ngram_overlap(preds, target) {n_gram} -> i64 [N, R, n_gram]: per row and
//     reference, the n-grams of each order 1..n_gram the two share (the sum
//     over n-grams of the smaller count; ops/fused/ngram_matches.h): what
//     chrF and ROUGE-N score.
//   lcs_length(preds, target) -> i64 [N, R]: per row and reference, the
//     length of the longest common subsequence (ops/fused/lcs_length.h):
//     ROUGE-L.
//   ter_edits(preds, target) -> i64 [N, R]: per row and reference, the
//     translation edit rate's edits (shifts plus the beam-limited edit
//     distance; ops/fused/ter_edits.h).
//   token_nll(logits, target) -> f64 [...]: per position of target [...],
//     -log softmax(logits [..., V])[target] in float64, 0 where the target
//     is outside [0, V) (ops/fused/token_nll.h): what perplexity sums.
#include "ops/attrs.h"
#include "ops/op_registry.h"
#include "support/status_macros.h"

namespace tally::ops {
namespace {

using ir::DType;
using ir::TensorType;
using Types = absl::StatusOr<std::vector<TensorType>>;

// CheckReferences accepts integer preds [N, Lp] with target [N, R, Lt].
absl::Status CheckReferences(const std::vector<TensorType>& in) {
  for (const TensorType& x : in) {
    if (!ir::IsIntegral(x.dtype) || x.dtype == DType::kBool) {
      return absl::InvalidArgumentError("expects integer token ids");
    }
  }
  if (in[0].rank() != 2 || in[1].rank() != 3) {
    return absl::InvalidArgumentError("expects preds [N, Lp] and target [N, R, Lt]");
  }
  if (!(in[0].shape[0] == in[1].shape[0])) {
    return absl::InvalidArgumentError("preds and target must have the same rows");
  }
  return absl::OkStatus();
}

}  // namespace

void RegisterSequenceOps(OpTable& t) {
  AddOp(t,
        MakeOp(OpId::kEditDistance, 2, 2, SpecsOf<EditDistanceAttrs>(),
               [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
                 for (const TensorType& x : in) {
                   if (x.rank() != 2 || !ir::IsIntegral(x.dtype) || x.dtype == DType::kBool) {
                     return absl::InvalidArgumentError("expects integer [N, L] token ids");
                   }
                 }
                 if (!(in[0].shape[0] == in[1].shape[0])) {
                   return absl::InvalidArgumentError("preds and target must have the same rows");
                 }
                 if (AttrsOf<EditDistanceAttrs>(a).substitution_cost < 0) {
                   return absl::InvalidArgumentError("substitution_cost must be >= 0");
                 }
                 const int64_t width = AttrsOf<EditDistanceAttrs>(a).substitutions.get() ? 6 : 3;
                 return std::vector<TensorType>{{DType::kInt64, {in[0].shape[0], ir::Dim::Fixed(width)}, in[0].device}};
               }));
  AddOp(t, MakeOp(OpId::kNgramMatches, 2, 2, SpecsOf<NgramMatchesAttrs>(),
                  [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
                    TALLY_RETURN_IF_ERROR(CheckReferences(in));
                    const int64_t n_gram = AttrsOf<NgramMatchesAttrs>(a).n_gram;
                    if (n_gram < 1) return absl::InvalidArgumentError("n_gram must be >= 1");
                    return std::vector<TensorType>{
                        {DType::kInt64, {in[0].shape[0], ir::Dim::Fixed(2 * n_gram + 2)}, in[0].device}};
                  }));
  AddOp(t, MakeOp(OpId::kNgramOverlap, 2, 2, SpecsOf<NgramMatchesAttrs>(),
                  [](const std::vector<TensorType>& in, const ir::AttrMap& a, const ir::Device&) -> Types {
                    TALLY_RETURN_IF_ERROR(CheckReferences(in));
                    const int64_t n_gram = AttrsOf<NgramMatchesAttrs>(a).n_gram;
                    if (n_gram < 1) return absl::InvalidArgumentError("n_gram must be >= 1");
                    return std::vector<TensorType>{
                        {DType::kInt64, {in[0].shape[0], in[1].shape[1], ir::Dim::Fixed(n_gram)}, in[0].device}};
                  }));
  AddOp(t, MakeOp(OpId::kLcsLength, 2, 2, {},
                  [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
                    TALLY_RETURN_IF_ERROR(CheckReferences(in));
                    return std::vector<TensorType>{{DType::kInt64, {in[0].shape[0], in[1].shape[1]}, in[0].device}};
                  }));
  AddOp(t, MakeOp(OpId::kTerEdits, 2, 2, {},
                  [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
                    TALLY_RETURN_IF_ERROR(CheckReferences(in));
                    return std::vector<TensorType>{{DType::kInt64, {in[0].shape[0], in[1].shape[1]}, in[0].device}};
                  }));
  AddOp(t, MakeOp(OpId::kTokenNll, 2, 2, {},
                  [](const std::vector<TensorType>& in, const ir::AttrMap&, const ir::Device&) -> Types {
                    const TensorType& logits = in[0];
                    const TensorType& target = in[1];
                    if (!ir::IsFloating(logits.dtype) || logits.rank() < 1) {
                      return absl::InvalidArgumentError("expects floating logits [..., V]");
                    }
                    if (!ir::IsIntegral(target.dtype) || target.dtype == DType::kBool ||
                        target.rank() + 1 != logits.rank()) {
                      return absl::InvalidArgumentError("expects integer target [...] with logits [..., V]");
                    }
                    for (size_t d = 0; d < target.shape.size(); ++d) {
                      if (!(target.shape[d] == logits.shape[d])) {
                        return absl::InvalidArgumentError("logits and target must agree on the leading dims");
                      }
                    }
                    return std::vector<TensorType>{{DType::kFloat64, target.shape, logits.device}};
                  }));
}

}  // namespace tally::ops
