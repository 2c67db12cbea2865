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

}  // namespace tally::metrics

#endif  // TALLY_METRICS_TEXT_TOKEN_IDS_H_
