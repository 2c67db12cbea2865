// The rows every retrieval metric reads: `indexes`, `preds` and `target`,
// appended as given to three cat states that all retrieval metrics of a
// collection share, and in finalize checked and sorted by query.
#ifndef TALLY_METRICS_RETRIEVAL_ROWS_H_
#define TALLY_METRICS_RETRIEVAL_ROWS_H_

#include <cstdint>
#include <optional>

#include "engine/dsl/builder.h"

namespace tally::metrics {

// SortedRows are the accumulated rows in finalize, sorted by (query, preds
// descending, stable), and the counts of invalid targets over all rows.
struct SortedRows {
  ops::Expr keys, preds, target;   // i64 query ids, f32 preds, i64/f64 target
  ops::Expr not_binary, negative;  // i64 counts (ignored rows excluded)
  ops::Expr weight;                // with `weight`: f64 row weights, sorted alike (else invalid)
};

// ReadRetrievalRows declares the three 1-D inputs and checks their metadata
// (float preds, integer indexes), accumulates them, and returns them sorted
// in finalize with count_invalid over the target. `weighted` also keeps the
// optional row weights (metrics/weights.h) beside the rows, when the
// signature has them. On failure the builder is poisoned, with an error
// naming the input, and false is returned.
bool ReadRetrievalRows(dsl::MetricBuilder& b, std::optional<int64_t> ignore_index, SortedRows& out,
                       bool weighted = false);

}  // namespace tally::metrics

#endif  // TALLY_METRICS_RETRIEVAL_ROWS_H_
