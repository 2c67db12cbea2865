// JSON request bodies as named tensors, for `tally serve`.
//
// `{"preds": [[0.1, 0.9], ...], "target": [1, ...], "indexes": [...]}`:
// each value a number or a rectangular nested list. Types follow
// torch.tensor on the same Python literals (what a TorchMetrics user would
// build): all true/false -> bool, all integers -> int64, any other number
// -> float32. An optional `"dtypes": {"preds": "float16"}` declares an
// input's dtype (bool, int32, int64, float16, bfloat16, float32, float64):
// the values are converted to it (16-bit floats rounded to nearest).
#ifndef TALLY_API_JSON_INPUTS_H_
#define TALLY_API_JSON_INPUTS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/dsl/builder.h"
#include "engine/runtime/program.h"

namespace tally {

// TensorsFromJson parses a request body into CPU tensors in the canonical
// input order (preds, target, indexes, value, weight). Errors name the
// input and say what is wrong (not JSON, unknown name, ragged list, ...).
absl::StatusOr<NamedTensors> TensorsFromJson(absl::string_view body);

// ConformToSignature casts each input to its dtype in `sig` when that loses
// nothing (integers to a float input, bools to an integer one, float values
// that a float16/bfloat16 input holds exactly) and rejects the rest (floats
// for an integer input), naming the input; shapes are left to Program's own
// checks.
absl::StatusOr<NamedTensors> ConformToSignature(NamedTensors inputs, const dsl::Signature& sig);

}  // namespace tally

#endif  // TALLY_API_JSON_INPUTS_H_
