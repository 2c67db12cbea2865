// Helpers shared by the Session tests (session_test, session_concurrency_test):
// deterministic input rows for a classification set and an aggregation set,
// a single-threaded reference, and exact comparisons of metric values.
#ifndef TALLY_TESTS_ENGINE_SESSION_TESTING_H_
#define TALLY_TESTS_ENGINE_SESSION_TESTING_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "api/tally.h"
#include "engine/dsl/builder.h"

namespace tally::testing {

inline constexpr char kAcc[] = "multiclass_accuracy(num_classes=3, average=none)";
inline constexpr char kConfmat[] = "multiclass_confusion_matrix(num_classes=3)";
inline constexpr char kF1[] = "multiclass_f1_score(num_classes=3, average=macro)";

// Rows returns `n` rows from `seed`: preds/target int64 labels in [0, 3),
// value float64 small integers (so sums are exact in any order).
NamedTensors Rows(int64_t n, int64_t seed);
// Slice returns rows [start, start + len) of every input (views).
NamedTensors Slice(const NamedTensors& rows, int64_t start, int64_t len);
// Only keeps the inputs named in `names`.
NamedTensors Only(const NamedTensors& rows, const std::vector<std::string>& names);
// CatRows concatenates the rows of every part, input by input (in the
// order of the first part's inputs).
NamedTensors CatRows(const std::vector<NamedTensors>& parts);
// Sig is the signature of Rows.
dsl::Signature Sig();
// TwoSets is a classification set "cls" (kAcc, kConfmat, kF1) and an
// aggregation set "agg" (sum, mean over `value`).
std::vector<MetricSetSpec> TwoSets();
// Reference feeds every row to one single-threaded session of `specs` (the
// classification specs or {"sum", "mean"}) in one update and computes it.
std::vector<MetricValue> Reference(const std::vector<std::string>& specs, const NamedTensors& rows);
// ExpectSameValues expects bit-identical values, metric by metric.
void ExpectSameValues(const std::vector<MetricValue>& a, const std::vector<MetricValue>& b);
// ValueOf returns the value of `spec` in `values` (a test failure if none).
at::Tensor ValueOf(const std::vector<MetricValue>& values, absl::string_view spec);
// Sum returns the first value as a double (the "sum" metric of a set).
double Sum(const std::vector<MetricValue>& values);
// TempPath returns a per-process file path under TEST_TMPDIR.
std::string TempPath(const std::string& name);

}  // namespace tally::testing

#endif  // TALLY_TESTS_ENGINE_SESSION_TESTING_H_
