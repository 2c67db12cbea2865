// Helpers for the distributed sync tests: feeding a shard of rows to a
// program and comparing results inside a forked rank, where gtest
// assertions cannot reach the parent (a rank reports a description of what
// differs instead).
#ifndef TALLY_TESTS_ENGINE_DIST_DIST_TESTING_H_
#define TALLY_TESTS_ENGINE_DIST_DIST_TESTING_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "engine/runtime/program.h"

namespace tally::testing {

// Rows returns the row count of `inputs` (the leading dim of any input with
// one; 0 if none has).
int64_t Rows(const NamedTensors& inputs);

// Used keeps the inputs `p` takes (as `tally eval` feeds them).
NamedTensors Used(const Program& p, const NamedTensors& inputs);

// FeedRows updates `p` with rows [begin, end) of `inputs` in consecutive
// batches of `batch` rows; an empty range is no update at all.
absl::Status FeedRows(Program& p, const NamedTensors& inputs, int64_t begin, int64_t end, int64_t batch);

// CompareResults is "" when `got` and `want` have the same labels and
// tensors (testing::Close with `rel` for floats, exact otherwise), and a
// description of the first differences otherwise.
std::string CompareResults(const NamedTensors& got, const NamedTensors& want, double rel);

}  // namespace tally::testing

#endif  // TALLY_TESTS_ENGINE_DIST_DIST_TESTING_H_
