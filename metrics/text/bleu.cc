// BLEU over token ids, with TorchMetrics 1.5.2's names, arguments and
// values:
//   bleu_score(n_gram=4, smooth=False, weights=None)
//   sacre_bleu_score(n_gram=4, smooth=False, tokenize='13a', lowercase=False,
//                    weights=None)
// preds are ids [N, Lp]; target [N, Lt] (one reference a row) or [N, R, Lt]
// (R references, a reference of padding only is absent). The two names
// differ only in how text is split into ids (api/text_inputs.h), so over
// ids they are one program. The states are TorchMetrics' own, as int64:
// clipped n-gram matches and preds' n-gram counts per order, preds' length
// and the closest references' length; the score is computed at finalize
// in float64:
//   0 if any order has no match, else BP exp(sum_k w_k log p_k),
//   p_k = matches_k / count_k (smooth: (m + 1) / (c + 1) but for k = 1),
//   BP = 1 if preds are longer than the references, else exp(1 - ref / preds).
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

// The tokenizers of sacreBLEU that TorchMetrics offers (they split text;
// over ids they change nothing).
constexpr absl::string_view kSacreTokenizers[] = {"none",     "13a",      "zh",        "intl",     "char",
                                                  "ja-mecab", "ko-mecab", "flores101", "flores200"};

absl::StatusOr<dsl::Metric> Build(bool sacre, SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(const int64_t n_gram, args.GetInt("n_gram", 4));
  if (n_gram < 1) return args.InvalidArgument(absl::StrCat("n_gram must be >= 1, got ", n_gram));
  TALLY_ASSIGN_OR_RETURN(const bool smooth, args.GetBool("smooth", false));
  TALLY_ASSIGN_OR_RETURN(std::vector<double> weights,
                         args.GetDoubleList("weights", std::vector<double>(n_gram, 1.0 / n_gram)));
  if (static_cast<int64_t>(weights.size()) != n_gram) {
    return args.InvalidArgument(
        absl::StrCat("List of weights has different weights than `n_gram`: ", weights.size(), " != ", n_gram));
  }
  if (sacre) {
    TALLY_RETURN_IF_ERROR(args.GetEnum("tokenize", kSacreTokenizers, "13a").status());
    TALLY_RETURN_IF_ERROR(args.GetBool("lowercase", false).status());
  }
  MetricBuilder b(args.metric_name(), sig, device);
  const auto [preds, target, refs] = DeclarePredsAndReferences(b);
  if (!b.ok()) return b.status();
  ops::NgramMatchesAttrs attrs;
  attrs.n_gram = n_gram;
  Expr counts = b.Op(ops::OpId::kNgramMatches, {preds, target}, ops::ToAttrMap(attrs));
  // One state, TorchMetrics' four: [matches | n-gram counts | preds length,
  // reference length], each summed over the rows.
  State sums = b.AddState("counts", DType::kInt64, {2 * n_gram + 2}, ir::Reducer::kSum);
  b.Accumulate(sums, ops::Sum(counts, {0}));
  Expr all = b.Read(sums);
  auto part = [&](int64_t from, int64_t to) {
    std::vector<double> idx;
    for (int64_t i = from; i < to; ++i) idx.push_back(static_cast<double>(i));
    return ops::Take(all, ops::Dense(all, idx, DType::kInt64));
  };
  Expr matches = part(0, n_gram);
  Expr num = F64(matches);
  Expr den = F64(part(n_gram, 2 * n_gram));
  if (smooth) {
    std::vector<double> add(n_gram, 1.0);
    add[0] = 0.0;
    Expr one = ops::Dense(num, add, DType::kFloat64);
    num = num + one;
    den = den + one;
  }
  Expr geometric = ops::Exp(ops::Sum(ops::Dense(num, weights, DType::kFloat64) * ops::Log(num / den)));
  Expr preds_len = F64(ops::Select(all, 0, 2 * n_gram));
  Expr ref_len = F64(ops::Select(all, 0, 2 * n_gram + 1));
  Expr brevity = ops::Where(preds_len > ref_len, 1.0, ops::Exp(1.0 - ref_len / preds_len));
  b.Output(ops::Where(ops::Min(matches) == 0.0, 0.0, brevity * geometric));
  return b.Finish();
}

}  // namespace

void RegisterBleuMetrics(std::vector<MetricInfo>& out) {
  const std::vector<std::string> inputs = {"preds", "target"};
  out.push_back({"bleu_score", "text", inputs, Bound(Build, false)});
  out.push_back({"sacre_bleu_score", "text", inputs, Bound(Build, true)});
}

}  // namespace tally::metrics
