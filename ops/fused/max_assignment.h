// max_assignment: the largest total of a one-to-one matching of rows to
// columns of an integer table, sum_i table[i, s(i)] over injective s (the
// linear assignment problem, maximizing; rows and columns may differ in
// number). cluster_accuracy matches clusters to classes with it.
//
// The host solves it (finalize only) with the Hungarian method in its
// shortest-augmenting-path form, in exact int64 arithmetic: O(r^2 c) for
// r = min(rows, cols), c = max(rows, cols). The total is unique even where
// the matching is not, so the TorchScript form (kMaxAssignmentScript, the
// same algorithm) agrees exactly.
#ifndef TALLY_OPS_FUSED_MAX_ASSIGNMENT_H_
#define TALLY_OPS_FUSED_MAX_ASSIGNMENT_H_

#include <ATen/core/Tensor.h>

namespace tally::ops::fused {

// MaxAssignment takes an integer [R, C] table and returns the int64 [] total
// on its device; on `meta`, an empty meta scalar.
at::Tensor MaxAssignment(const at::Tensor& table);

// kMaxAssignmentScript defines max_assignment(table).
extern const char kMaxAssignmentScript[];

}  // namespace tally::ops::fused

#endif  // TALLY_OPS_FUSED_MAX_ASSIGNMENT_H_
