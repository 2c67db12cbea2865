// tally eval's text inputs (--input NAME=FILE.txt): sentences, one a line,
// turned into token ids as each metric's TorchMetrics class splits them
// (api/text_inputs.h). Metrics that split differently (words for
// word_error_rate, characters for char_error_rate) are evaluated as groups,
// each over its own ids, and their results put back in the order asked.
#ifndef TALLY_TOOLS_TALLY_TEXT_FILES_H_
#define TALLY_TOOLS_TALLY_TEXT_FILES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "api/evaluate.h"

namespace tally::tools {

// TextInput is the sentences of one input: of one text file, or of several
// with one line each per row (references: ref1.txt,ref2.txt), token ids
// [N, L] or [N, R, L].
struct TextInput {
  std::string name;
  std::vector<std::vector<std::string>> files;
};

// IsTextPath is whether `path` names text: a file ending in ".txt", or
// several such, comma-separated, or one ".tsv" file (references
// tab-separated on each row's line).
bool IsTextPath(absl::string_view path);

// ReadTextInput reads input `name`'s text file(s) from `path`; several files
// must have as many lines each. A .tsv file's line n holds row n's
// references, tab-separated (a row with fewer has absent ones).
absl::StatusOr<TextInput> ReadTextInput(const std::string& name, absl::string_view path);

// TextBody is a `tally serve` request body with its text inputs set apart:
// `json` the body without them (what api/json_inputs.h parses), `texts`
// the sentences of each.
struct TextBody {
  std::string json;
  std::vector<TextInput> texts;
};

// SplitTextBody sets apart the inputs of a JSON object `body` given as
// text: a list of sentences, one a row (`"preds": ["the cat", ...]`), or a
// list of lists, each row's references (`"target": [["a cat", "the cat"],
// ["a dog"]]`; a row with fewer has absent ones). A body with no string
// right inside a list is returned as it is, unparsed.
absl::StatusOr<TextBody> SplitTextBody(const std::string& body);

// WithTokenIds is `inputs` plus each text input as token ids, for `specs`
// that all split text the same way; an error names two that do not.
absl::StatusOr<NamedTensors> WithTokenIds(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                          const std::vector<TextInput>& texts);

// EvaluateText evaluates `specs` over `inputs` and the token ids of `texts`:
// one evaluation for each way of splitting the text, results in spec order.
absl::StatusOr<std::vector<EvalResult>> EvaluateText(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                                     const std::vector<TextInput>& texts, const EvalOptions& options);

}  // namespace tally::tools

#endif  // TALLY_TOOLS_TALLY_TEXT_FILES_H_
