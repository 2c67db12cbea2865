// perplexity(ignore_index=None), TorchMetrics 1.5.2's: exp of the mean
// negative log-likelihood of target [B, S] (integer token ids) under logits
// [B, S, V] (float16, bfloat16, float32 or float64), positions whose target
// is ignore_index left out. The likelihoods come from one token_nll kernel
// (ops/fused/token_nll.h): logsumexp in float64 read straight from the
// logits' own dtype, never a softmax copy of [B, S, V]; the states are a
// float64 sum and an int64 count (16 bytes), whatever V.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "metrics/regression/operands.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ops::Expr;

absl::StatusOr<dsl::Metric> Build(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(const std::optional<int64_t> ignore_index, args.GetOptionalInt("ignore_index"));
  MetricBuilder b(args.metric_name(), sig, device);
  // The logits as given: token_nll reads float16 and bfloat16 itself, so
  // [B, S, V] is never widened to a float32 copy.
  Expr preds = b.RawInput("preds");
  Expr target = b.Input("target");
  if (!b.ok()) return b.status();
  const std::vector<int64_t>& ps = b.FindInput("preds")->shape;
  const std::vector<int64_t>& ts = b.FindInput("target")->shape;
  if (ps.size() != 3 || !ir::IsFloating(preds.dtype())) {
    b.FailInput("preds", absl::StrCat("expected floating logits [batch_size, seq_len, vocab_size], got ",
                                      ir::DTypeName(preds.dtype()), " of shape ", ShapeText(ps)));
  } else if (ts.size() != 2 || !ir::IsIntegral(target.dtype()) || target.dtype() == DType::kBool) {
    b.FailInput("target", absl::StrCat("expected integer token ids [batch_size, seq_len], got ",
                                       ir::DTypeName(target.dtype()), " of shape ", ShapeText(ts)));
  } else if (ps[0] != ts[0] || ps[1] != ts[1]) {
    b.FailInput("target",
                absl::StrCat("shape ", ShapeText(ts), " is not the first two dims of preds' ", ShapeText(ps)));
  }
  if (!b.ok()) return b.status();
  const int64_t vocab = ps[2];
  Expr counted = ignore_index ? target != static_cast<double>(*ignore_index) : ops::FullLike(target, 1, DType::kBool);
  b.Check("target",
          absl::StrCat("{n} token ids outside [0, ", vocab, ")",
                       ignore_index ? absl::StrCat(" (other than ignore_index ", *ignore_index, ")") : ""),
          ops::Sum(ops::Cast(counted && ((target < 0.0) || (target >= static_cast<double>(vocab))), DType::kInt64)));
  Expr nll = b.Op(ops::OpId::kTokenNll, {preds, target});
  State total = b.AddState("total_log_probs", DType::kFloat64, {}, ir::Reducer::kSum);
  State count = b.AddState("count", DType::kInt64, {}, ir::Reducer::kSum);
  b.Accumulate(total, ops::Sum(ignore_index ? ops::Where(counted, nll, 0.0) : nll));
  b.Accumulate(count, ops::Sum(ops::Cast(counted, DType::kInt64)));
  b.Output(ops::Exp(b.Read(total) / F64(b.Read(count))));
  return b.Finish();
}

}  // namespace

void RegisterPerplexity(std::vector<MetricInfo>& out) {
  out.push_back({"perplexity", "text", {"preds", "target"}, Build});
}

}  // namespace tally::metrics
