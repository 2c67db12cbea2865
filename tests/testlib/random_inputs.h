// Random, valid (or deliberately invalid) inputs for every input form the
// library's metrics take, for the backend parity and export tests.
#ifndef TALLY_TESTS_TESTLIB_RANDOM_INPUTS_H_
#define TALLY_TESTS_TESTLIB_RANDOM_INPUTS_H_

#include <ATen/ATen.h>

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/runtime/compiler.h"
#include "engine/runtime/program.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"

namespace tally::testing {

// Form names an input signature with a value distribution, e.g. "mc_f"
// (multiclass f32 scores [N, C] and i64 labels) or "mc_bad" (labels out of
// range in some rows, which deferred checks count).
struct Form {
  std::string name;
  int64_t classes = 3;
};

// SpecFor adds the arguments a registered metric requires. A task wrapper
// (accuracy, auroc, ...) gets task=multiclass and what its multiclass_ metric
// requires: "accuracy(task=multiclass, num_classes=3)".
std::string SpecFor(const metrics::MetricInfo& m);

// SpecsFor is SpecFor followed by the variants the registry-wide tests also
// run: for the threshold-free curves, the binned forms (thresholds=5 and an
// unsorted list); for a task wrapper, its binary and multilabel tasks (those
// it has) and, over a curve, thresholds=5.
std::vector<std::string> SpecsFor(const metrics::MetricInfo& m);

// SpecsByForm lists, per form name, every spec (SpecsFor of every metric)
// that compiles for that form alone: the registry-wide tests' collections.
std::map<std::string, std::vector<std::string>> SpecsByForm();

// WithArg adds `arg` ("key=value") to a spec string.
std::string WithArg(const std::string& spec, const std::string& arg);

// FormsFor lists the input forms to try for a metric (not all compile).
std::vector<Form> FormsFor(const metrics::MetricInfo& m);

// MakeBatch draws `n` rows of `form` from `gen` on the CPU.
NamedTensors MakeBatch(const Form& form, int64_t n, at::Generator& gen);

// CompileFor builds `specs` for the signature of `form` and compiles them.
absl::StatusOr<std::unique_ptr<Program>> CompileFor(const std::vector<std::string>& specs, const Form& form,
                                                    const CompileOptions& options);

// CompileModuleFor is CompileFor without instantiating a program.
absl::StatusOr<Compiled> CompileModuleFor(const std::vector<std::string>& specs, const Form& form,
                                          const CompileOptions& options);

// Close compares two tensors: same dtype, shape and device; integers and
// bools exactly; floats within `rel` relative error (NaN matches NaN,
// infinities match exactly).
::testing::AssertionResult Close(const at::Tensor& a, const at::Tensor& b, double rel = 1e-12);

}  // namespace tally::testing

#endif  // TALLY_TESTS_TESTLIB_RANDOM_INPUTS_H_
