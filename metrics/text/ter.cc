// Translation edit rate of hypotheses against one or more references, over
// token ids, with TorchMetrics 1.5.2's name, arguments and values:
//   translation_edit_rate(normalize=False, no_punctuation=False,
//                         lowercase=True, asian_support=False,
//                         return_sentence_level_score=False)
// preds [N, Lp] and target [N, Lt] or [N, R, Lt] are word ids (a negative
// id pads; an all-padding reference is absent unless every reference of
// the row is, and then the row has one empty reference). Per row the
// fewest edits over its references (ter_edits: shifts plus the edit
// distance, as TorchMetrics searches them) and the mean of their lengths;
// the corpus TER is the edits over the lengths, 1 when the lengths are 0
// and the edits are not, else 0. With return_sentence_level_score the
// result is the tuple (corpus TER, each row's TER by the same rule), the
// rows' values kept in a cat state. The other flags shape the words of text
// (api/text_inputs.h); over ids they change nothing.
//
// The shift search runs on the host, row by row: the metric is placed on
// cpu (or planned on meta); on an accelerator every update would copy the
// ids to the host, a sync, so another device is refused.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "metrics/regression/operands.h"
#include "metrics/text/token_ids.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ops::Expr;

absl::StatusOr<dsl::Metric> Build(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  for (const char* flag : {"normalize", "no_punctuation", "asian_support"}) {
    TALLY_RETURN_IF_ERROR(args.GetBool(flag, false).status());
  }
  TALLY_RETURN_IF_ERROR(args.GetBool("lowercase", true).status());
  TALLY_ASSIGN_OR_RETURN(const bool sentences, args.GetBool("return_sentence_level_score", false));
  if (device.name != "cpu" && device.name != "meta") {
    return args.InvalidArgument(absl::StrCat("runs its shift search on the host: place it on cpu, not ", device.name,
                                             " (each update would copy the ids to the host)"));
  }
  MetricBuilder b(args.metric_name(), sig, device);
  const auto [preds, target, refs] = DeclarePredsAndReferences(b);
  if (!b.ok()) return b.status();
  Expr edits = F64(b.Op(ops::OpId::kTerEdits, {preds, target}));  // [N, R]
  Expr lengths = F64(Lengths(target));                            // [N, R]
  Expr present = lengths > 0.0;
  Expr use = UsedReferences(present);
  // Edits are below 2^53: exact in float64, and any row has a reference.
  Expr fewest = ops::Min(ops::Where(use, edits, 9.0e18), {1});
  Expr mean_length = ops::Sum(ops::Where(use, lengths, 0.0), {1}) / ops::Sum(F64(use), {1});
  State total_edits = b.AddState("edits", DType::kInt64, {}, ir::Reducer::kSum);
  State total_length = b.AddState("reference_length", DType::kFloat64, {}, ir::Reducer::kSum);
  b.Accumulate(total_edits, ops::Sum(ops::Cast(fewest, DType::kInt64)));
  b.Accumulate(total_length, ops::Sum(mean_length));
  // TorchMetrics' rule: edits / length; 1 for edits without length; else 0.
  const auto score = [](Expr e, Expr l) { return ops::Where(e > 0.0, ops::Where(l > 0.0, e / l, 1.0), 0.0); };
  Expr corpus = score(F64(b.Read(total_edits)), b.Read(total_length));
  if (!sentences) {
    b.Output(corpus);
    return b.Finish();
  }
  State rows = b.AddState("sentence_ter", DType::kFloat64, {}, ir::Reducer::kCat);
  b.Accumulate(rows, score(fewest, mean_length));
  b.Output(dsl::Parts{corpus, b.Read(rows)});
  return b.Finish();
}

}  // namespace

void RegisterTerMetrics(std::vector<MetricInfo>& out) {
  out.push_back({"translation_edit_rate", "text", {"preds", "target"}, Build});
}

}  // namespace tally::metrics
