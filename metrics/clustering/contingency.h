// The contingency table the clustering metrics read: n_ij, the rows whose
// class is i and whose predicted cluster is j, as one int64 [num_classes,
// num_clusters] sum state (TorchMetrics' orientation: target rows, preds
// columns).
//
// TorchMetrics keeps every label and infers the sizes at compute (a host
// sync and memory that grows with the traffic); Tally declares the sizes and
// keeps the table. Every metric of a collection builds the same state from
// the same inputs, so cse keeps one table for all of them. Its memory is
// num_clusters x num_classes x 8 bytes: the state budget refuses a table
// that does not fit before anything is allocated.
#ifndef TALLY_METRICS_CLUSTERING_CONTINGENCY_H_
#define TALLY_METRICS_CLUSTERING_CONTINGENCY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "engine/dsl/builder.h"
#include "metrics/spec.h"

namespace tally::metrics {

// TableSizes are the declared label ranges.
struct TableSizes {
  int64_t clusters = 0;  // preds in [0, clusters)
  int64_t classes = 0;   // target in [0, classes)
};

// ReadTableSizes reads `num_classes` (required) and `num_clusters`
// (defaulting to num_classes), both >= 1.
absl::StatusOr<TableSizes> ReadTableSizes(SpecArgs& args);

// AddContingencyTable declares 1-D integer `preds` (cluster ids) and
// `target` (class ids) of one length, counts labels outside their declared
// range with a deferred check (those rows count nowhere), and accumulates
// the table. On bad inputs the builder is poisoned and an invalid state
// returned.
dsl::State AddContingencyTable(dsl::MetricBuilder& b, const TableSizes& sizes);

// AddPairTable counts (target, preds) id pairs (any integer dtype) into the
// int64 [rows, cols] table "contingency" (rows: target) with one histogram.
// Rows outside `keep` (when valid) count nowhere; among the others, an id
// outside [0, cols) (preds) or [0, rows) (target) is counted by a deferred
// check naming its input, and its row skipped.
dsl::State AddPairTable(dsl::MetricBuilder& b, ops::Expr preds, ops::Expr target, int64_t rows, int64_t cols,
                        ops::Expr keep = ops::Expr());

// AddSquareLabelTable counts int64 [N] labels `preds` and `target` in [0, c)
// into the [c, c] table "confmat" (rows target) with the fused mc_confmat
// kernel, one pass with its range checks (a row with a label outside is
// counted by a deferred check and skipped): the same nodes as
// multiclass_confusion_matrix's, so a collection keeps one table for the
// clustering, nominal and confusion-matrix metrics over the same labels.
dsl::State AddSquareLabelTable(dsl::MetricBuilder& b, ops::Expr preds, ops::Expr target, int64_t c);

// Marginals are the table's finalize-side sums, in float64.
struct Marginals {
  ops::Expr table;     // f64 [C, K]
  ops::Expr classes;   // f64 [C]: rows per class
  ops::Expr clusters;  // f64 [K]: rows per predicted cluster
  ops::Expr n;         // f64 []
};
Marginals ReadMarginals(dsl::MetricBuilder& b, const dsl::State& table);

// Entropy is -sum (p/n) log(p/n) over the non-zero counts p of `counts`
// (natural log; 0 without data).
ops::Expr Entropy(ops::Expr counts, ops::Expr n);

// MutualInfo is sum n_ij/n log(n n_ij / (a_i b_j)) over the non-zero cells
// (TorchMetrics' _mutual_info_score_compute).
ops::Expr MutualInfo(const Marginals& m);

}  // namespace tally::metrics

#endif  // TALLY_METRICS_CLUSTERING_CONTINGENCY_H_
