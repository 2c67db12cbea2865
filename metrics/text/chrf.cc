// chrF and chrF++ over token ids, with TorchMetrics 1.5.2's name, arguments
// and values:
//   chrf_score(n_char_order=6, n_word_order=2, beta=2.0, lowercase=False,
//              whitespace=False)
// Inputs: preds [N, Lp] and target [N, Lt] or [N, R, Lt] are CHARACTER ids;
// preds_words [N, Wp] and target_words [N, Wt] or [N, R, Wt] the WORD ids of
// the same sentences, read only when n_word_order > 0. Text is split into
// both by api/text_inputs.h (lowercase and whitespace act there; over ids
// they change nothing). A reference whose characters are all padding is
// absent unless all are.
// Per row: each reference's sentence score, the mean over orders of
//   f_k = (1 + beta^2) p_k r_k / max(beta^2 p_k + r_k, 1e-16),
// p_k = shared k-grams / preds' k-grams (0 without any), r_k likewise over
// the reference's; the row adds preds' k-gram counts, and the shared and
// reference counts of its best reference: the first whose score is above
// every earlier one and above 0 (TorchMetrics' strict `>` from 0: a row
// whose references all score 0 adds none). One int64 state holds those
// three sums per order (chars, then words); the corpus score is the same
// formula over the sums, in float64.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "metrics/text/token_ids.h"
#include "ops/attrs.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ops::Expr;

// Orders returns the k-gram counts of orders 1..n of sequences of `length`
// ids ([..., 1] int64): [..., n] = max(length - k + 1, 0).
Expr Orders(Expr length, int64_t n) {
  std::vector<double> offsets;
  for (int64_t k = 0; k < n; ++k) offsets.push_back(static_cast<double>(k));
  return ops::Clamp(length - ops::Dense(length, offsets, DType::kInt64), 0.0, std::nullopt);
}

// FScores is f_k per order from shared, preds' and the reference's counts.
Expr FScores(Expr shared, Expr hyp, Expr ref, double beta) {
  Expr precision = ops::SafeDiv(F64(shared), F64(hyp));
  Expr recall = ops::SafeDiv(F64(shared), F64(ref));
  Expr den = beta * beta * precision + recall;
  return (1.0 + beta * beta) * precision * recall / ops::Maximum(den, ops::Scalar(den, 1e-16));
}

// Side is one tokenization's per-row counts: shared [N, R, n] with each
// reference, preds' [N, 1, n] and the references' [N, R, n].
struct Side {
  Expr shared, hyp, ref;
};

Side Count(MetricBuilder& b, Expr preds, Expr target, int64_t n) {
  if (target.rank() == 2) target = ops::Unsqueeze(target, 1);
  ops::NgramMatchesAttrs attrs;
  attrs.n_gram = n;
  Side s;
  s.shared = b.Op(ops::OpId::kNgramOverlap, {preds, target}, ops::ToAttrMap(attrs));
  s.hyp = ops::Unsqueeze(Orders(Lengths(preds, /*keepdim=*/true), n), 1);
  s.ref = Orders(Lengths(target, /*keepdim=*/true), n);
  return s;
}

// References returns R of a [N, L] or [N, R, L] input.
int64_t References(MetricBuilder& b, const std::string& name) {
  const std::vector<int64_t>& shape = b.FindInput(name)->shape;
  return shape.size() == 3 ? shape[1] : 1;
}

absl::StatusOr<dsl::Metric> Build(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(const int64_t n_char, args.GetInt("n_char_order", 6));
  if (n_char < 1) {
    return args.InvalidArgument("Expected argument `n_char_order` to be an integer greater than or equal to 1.");
  }
  TALLY_ASSIGN_OR_RETURN(const int64_t n_word, args.GetInt("n_word_order", 2));
  if (n_word < 0) {
    return args.InvalidArgument("Expected argument `n_word_order` to be an integer greater than or equal to 0.");
  }
  TALLY_ASSIGN_OR_RETURN(const double beta, args.GetDouble("beta", 2.0));
  if (!(beta >= 0)) return args.InvalidArgument("Expected argument `beta` to be greater than 0.");
  TALLY_RETURN_IF_ERROR(args.GetBool("lowercase", false).status());
  TALLY_RETURN_IF_ERROR(args.GetBool("whitespace", false).status());

  MetricBuilder b(args.metric_name(), sig, device);
  Expr preds = TokenIds(b, "preds");
  Expr target = TokenIds(b, "target", /*references=*/true);
  SameRows(b);
  Expr preds_words, target_words;
  if (n_word > 0) {
    preds_words = TokenIds(b, "preds_words");
    target_words = TokenIds(b, "target_words", /*references=*/true);
    SameRows(b, "preds_words", "preds");
    SameRows(b, "target_words", "preds");
    if (b.ok() && References(b, "target_words") != References(b, "target")) {
      b.FailInput("target_words", absl::StrCat("has ", References(b, "target_words"), " references a row, target has ",
                                               References(b, "target")));
    }
  }
  if (!b.ok()) return b.status();
  const int64_t refs = References(b, "target");

  std::vector<Side> sides = {Count(b, preds, target, n_char)};
  if (n_word > 0) sides.push_back(Count(b, preds_words, target_words, n_word));
  const double n_order = static_cast<double>(n_char + n_word);
  Expr score;  // [N, R]
  for (const Side& s : sides) {
    Expr f = ops::Sum(FScores(s.shared, s.hyp, s.ref, beta), {2});
    score = score.valid() ? score + f : f;
  }
  score = score / n_order;
  Expr present = ops::Select(sides[0].ref, 2, 0) > 0.0;  // characters
  Expr masked = ops::Where(UsedReferences(present), score, -1.0);
  Expr best = ops::Argmax(masked, 1, /*keepdim=*/true);  // [N, 1]
  Expr pick = ops::Cast(best == ops::Unsqueeze(ops::Arange(best, refs), 0), DType::kInt64) *
              ops::Cast(ops::Max(masked, {1}, /*keepdim=*/true) > 0.0, DType::kInt64);  // [N, R]
  Expr picked = ops::Unsqueeze(pick, 2);
  std::vector<Expr> shared, hyp, ref;
  for (const Side& s : sides) {
    shared.push_back(ops::Sum(s.shared * picked, {0, 1}));
    hyp.push_back(ops::Sum(s.hyp, {0, 1}));
    ref.push_back(ops::Sum(s.ref * picked, {0, 1}));
  }
  std::vector<Expr> parts = shared;
  parts.insert(parts.end(), hyp.begin(), hyp.end());
  parts.insert(parts.end(), ref.begin(), ref.end());
  const int64_t orders = n_char + n_word;
  // [shared | preds' | references'] k-gram sums, each per order (characters
  // 1..n_char_order, then words 1..n_word_order).
  State sums = b.AddState("counts", DType::kInt64, {3 * orders}, ir::Reducer::kSum);
  b.Accumulate(sums, ops::Concat(parts));
  Expr all = b.Read(sums);
  auto part = [&](int64_t from) {
    std::vector<double> idx;
    for (int64_t i = from; i < from + orders; ++i) idx.push_back(static_cast<double>(i));
    return ops::Take(all, ops::Dense(all, idx, DType::kInt64));
  };
  b.Output(ops::Sum(FScores(part(0), part(orders), part(2 * orders), beta)) / n_order);
  return b.Finish();
}

}  // namespace

void RegisterChrfMetrics(std::vector<MetricInfo>& out) {
  out.push_back({"chrf_score", "text", {"preds", "target", "preds_words", "target_words"}, Build});
}

}  // namespace tally::metrics
