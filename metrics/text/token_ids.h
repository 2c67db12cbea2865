// The token-id inputs of the text metrics: integer [N, L] (a negative id is
// padding), or [N, R, L] for a target of R references per row where a metric
// takes several. The width L is a symbol of the program (Lp for preds, Lt for
// target, L_<name> for others), so transcripts may differ in length from
// batch to batch.
#ifndef TALLY_METRICS_TEXT_TOKEN_IDS_H_
#define TALLY_METRICS_TEXT_TOKEN_IDS_H_

#include <string>

#include "engine/dsl/builder.h"

namespace tally::metrics {

// TokenIds declares input `name` as token ids; with `references`, rank 3
// [N, R, L] is accepted beside [N, L]. A bad input fails `b`.
ops::Expr TokenIds(dsl::MetricBuilder& b, const std::string& name, bool references = false);

// SameRows fails `b` unless inputs `a` and `c` have the same number of rows.
void SameRows(dsl::MetricBuilder& b, const std::string& a = "preds", const std::string& c = "target");

// Ids: preds [N, Lp] and target [N, R, Lt] (a 2-D target is one reference
// a row, R = 1), declared with the same rows.
struct PredsAndReferences {
  ops::Expr preds, target;
  int64_t refs = 1;
};
// DeclarePredsAndReferences declares the two inputs; a bad one fails `b`.
PredsAndReferences DeclarePredsAndReferences(dsl::MetricBuilder& b);

// Lengths counts the ids (non-negative entries) along the last dim: int64.
ops::Expr Lengths(ops::Expr ids, bool keepdim = false);

// UsedReferences marks, of `present` [N, R] (a reference that is not
// empty), the references a row scores against: its present ones, or all
// when none is (TorchMetrics then scores the empty references).
ops::Expr UsedReferences(ops::Expr present);

}  // namespace tally::metrics

#endif  // TALLY_METRICS_TEXT_TOKEN_IDS_H_
