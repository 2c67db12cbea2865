// Metric results as text: JSON (what `tally eval --format json`, `tally
// serve` and embedding servers answer) and the human-readable table form.
#ifndef TALLY_ENGINE_RUNTIME_RESULT_TEXT_H_
#define TALLY_ENGINE_RUNTIME_RESULT_TEXT_H_

#include <ATen/core/Tensor.h>

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "engine/runtime/results.h"

namespace tally {

// ValueToJson prints a result as a number or nested list; NaN and the
// infinities as null (JSON has neither). Integer results (counts) print as
// integers. A tuple result prints as the list of its parts, which is what
// `[x.tolist() ...]` of TorchMetrics' tuple gives: binary_roc -> [[fpr...],
// [tpr...], [thresholds...]].
// A tuple with keys (ResultTree::keys) prints as an object, as
// TorchMetrics' dict results do.
std::string ValueToJson(const at::Tensor& t);
std::string ValueToJson(const ResultTree& r);
// ValueToText prints the same shapes for people: nan, inf and -inf as such.
std::string ValueToText(const ResultTree& r);
// JsonString quotes and escapes `s` as a JSON string (nlohmann-json's
// escaping: quotes, backslashes and control characters; bytes that are not UTF-8
// become U+FFFD). Every string Tally writes into JSON goes through it or
// through nlohmann-json itself.
std::string JsonString(absl::string_view s);

}  // namespace tally

#endif  // TALLY_ENGINE_RUNTIME_RESULT_TEXT_H_
