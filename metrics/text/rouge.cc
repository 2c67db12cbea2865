// ROUGE over token ids, with TorchMetrics 1.5.2's name, arguments and
// values:
//   rouge_score(rouge_keys=('rouge1', 'rouge2', 'rougeL', 'rougeLsum'),
//               accumulate='best', use_stemmer=False)
// preds are ids [N, Lp]; target [N, Lt] or [N, R, Lt] (a reference of
// padding only is absent unless all are). Each row is one sentence, so
// rougeLsum's union of LCS hits over sentences is rougeL's LCS (text is not
// split into sentences: TorchMetrics needs NLTK's punkt model for that).
// Per row and reference, for each key: hits (shared n-grams, or the LCS),
// precision = hits / preds' count, recall = hits / the reference's, F1;
// 'best' keeps the reference with the highest F1 of the first key (the
// first such), 'avg' the mean over the references. The states are the sums
// of the rows' scores and the row count (TorchMetrics keeps every sentence's
// scores); the result is float64 [3 K], for each key in the order given its
// fmeasure, precision and recall (TorchMetrics' dict, in its order).
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
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

constexpr absl::string_view kKeys[] = {"rouge1", "rouge2", "rouge3", "rouge4", "rouge5",   "rouge6",
                                       "rouge7", "rouge8", "rouge9", "rougeL", "rougeLsum"};

// Order returns n for rouge<n>, 0 for rougeL and rougeLsum.
int64_t Order(absl::string_view key) { return key.size() == 6 && key[5] >= '1' && key[5] <= '9' ? key[5] - '0' : 0; }

absl::StatusOr<dsl::Metric> Build(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(
      std::vector<std::string> given,
      args.GetStringList("rouge_keys", std::vector<std::string>{"rouge1", "rouge2", "rougeL", "rougeLsum"}));
  std::vector<std::string> keys;  // TorchMetrics' dict keeps the first of a repeated key
  for (const std::string& key : given) {
    if (std::find(std::begin(kKeys), std::end(kKeys), key) == std::end(kKeys)) {
      return args.InvalidArgument(absl::StrCat("Got unknown rouge key ", key, ". Expected to be one of ['",
                                               absl::StrJoin(kKeys, "', '"), "']"));
    }
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  if (keys.empty()) return args.InvalidArgument("rouge_keys must name at least one key");
  constexpr absl::string_view kAccumulate[] = {"best", "avg"};
  TALLY_ASSIGN_OR_RETURN(const std::string accumulate, args.GetEnum("accumulate", kAccumulate, "best"));
  // Stemming splits text (api/text_inputs.h); over ids it changes nothing.
  TALLY_RETURN_IF_ERROR(args.GetBool("use_stemmer", false).status());

  MetricBuilder b(args.metric_name(), sig, device);
  const auto [preds, target, refs] = DeclarePredsAndReferences(b);
  if (!b.ok()) return b.status();

  int64_t n_max = 0;
  bool lcs = false;
  for (const std::string& key : keys) {
    n_max = std::max(n_max, Order(key));
    lcs = lcs || Order(key) == 0;
  }
  Expr shared, longest;
  if (n_max > 0) {
    ops::NgramMatchesAttrs attrs;
    attrs.n_gram = n_max;
    shared = b.Op(ops::OpId::kNgramOverlap, {preds, target}, ops::ToAttrMap(attrs));  // [N, R, n_max]
  }
  if (lcs) longest = b.Op(ops::OpId::kLcsLength, {preds, target});  // [N, R]
  Expr lp = F64(Lengths(preds, /*keepdim=*/true));                  // [N, 1]
  Expr lt = F64(Lengths(target));                                   // [N, R]

  // Scores [3 K, N, R]: per key its fmeasure, precision and recall.
  std::vector<Expr> scores;
  for (const std::string& key : keys) {
    const int64_t n = Order(key);
    Expr hits = F64(n > 0 ? ops::Select(shared, 2, n - 1) : longest);
    Expr pred_count = n > 0 ? ops::Maximum(lp - static_cast<double>(n - 1), ops::Scalar(lp, 0.0)) : lp;
    Expr target_count = n > 0 ? ops::Maximum(lt - static_cast<double>(n - 1), ops::Scalar(lt, 0.0)) : lt;
    // A side without n-grams scores 0: its hits are 0 too.
    Expr precision = ops::SafeDiv(hits, pred_count);
    Expr recall = ops::SafeDiv(hits, target_count);
    Expr f = ops::SafeDiv(2.0 * precision * recall, precision + recall);
    for (Expr x : {f, precision, recall}) scores.push_back(ops::Unsqueeze(x, 0));
  }
  Expr all = ops::Concat(scores);
  Expr present = lt > 0.0;
  Expr use = UsedReferences(present);  // [N, R]
  Expr pick;                           // [N, R] float64 weights
  if (accumulate == "best") {
    Expr first_f = ops::Select(all, 0, 0);
    Expr best = ops::Argmax(ops::Where(use, first_f, -1.0), 1, /*keepdim=*/true);  // [N, 1]
    pick = F64(best == ops::Unsqueeze(ops::Arange(best, refs), 0));
  } else {
    Expr used = F64(use);
    pick = used / ops::Sum(used, {1}, /*keepdim=*/true);
  }
  State sums = b.AddState("score_sums", DType::kFloat64, {3 * static_cast<int64_t>(keys.size())}, ir::Reducer::kSum);
  State rows = b.AddState("rows", DType::kInt64, {}, ir::Reducer::kSum);
  b.Accumulate(sums, ops::Sum(all * ops::Unsqueeze(pick, 0), {1, 2}));
  b.Accumulate(rows, ops::Sum(ops::FullLike(ops::Squeeze(lp, 1), 1, DType::kInt64)));
  b.Output(b.Read(sums) / F64(b.Read(rows)));
  return b.Finish();
}

}  // namespace

void RegisterRougeMetrics(std::vector<MetricInfo>& out) {
  out.push_back({"rouge_score", "text", {"preds", "target"}, Build});
}

}  // namespace tally::metrics
