#include "tools/tally/text_files.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "api/text_inputs.h"
#include "nlohmann/json.hpp"
#include "support/status_macros.h"

namespace tally::tools {
namespace {

// Group is the specs (by index) whose metrics split text one way.
struct Group {
  Tokenizer tokenizer;
  std::vector<size_t> specs;
};

// GroupByTokenizer groups `specs` by how they split text; an error names
// the text input `text` and the spec that takes none.
absl::StatusOr<std::vector<Group>> GroupByTokenizer(const std::vector<std::string>& specs, const TextInput& text) {
  std::vector<Group> groups;
  for (size_t i = 0; i < specs.size(); ++i) {
    absl::StatusOr<Tokenizer> t = TokenizerFor(specs[i]);
    if (!t.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("input '", text.name, "' is text, but ", t.status().message()));
    }
    Group* g = nullptr;
    for (Group& h : groups) g = h.tokenizer == *t ? &h : g;
    if (g == nullptr) g = &groups.emplace_back(Group{*t, {}});
    g->specs.push_back(i);
  }
  return groups;
}

// Ids is one text input as token ids split by `t`: [N, L], or [N, R, L]
// for several files (reference r of row n is line n of file r, padded to
// the widest).
absl::StatusOr<at::Tensor> Ids(const TextInput& text, Tokenizer t, Vocabulary& vocab) {
  std::vector<at::Tensor> per_file;
  int64_t width = 1;
  for (const std::vector<std::string>& sentences : text.files) {
    absl::StatusOr<at::Tensor> ids = TokenIds(sentences, t, vocab);
    if (!ids.ok()) return absl::InvalidArgumentError(absl::StrCat("input '", text.name, "': ", ids.status().message()));
    width = std::max(width, ids->size(1));
    per_file.push_back(*std::move(ids));
  }
  if (per_file.size() == 1) return per_file[0];
  for (at::Tensor& ids : per_file) ids = at::constant_pad_nd(ids, {0, width - ids.size(1)}, -1);
  return at::stack(per_file, 1);
}

absl::StatusOr<NamedTensors> AddTokenIds(const NamedTensors& inputs, const std::vector<TextInput>& texts, Tokenizer t) {
  NamedTensors out = inputs;
  Vocabulary vocab;  // one for all inputs: equal tokens, equal ids
  for (const TextInput& text : texts) {
    TALLY_ASSIGN_OR_RETURN(at::Tensor ids, Ids(text, t, vocab));
    out.emplace_back(text.name, std::move(ids));
    if (t.with_words) {
      TALLY_ASSIGN_OR_RETURN(at::Tensor words, Ids(text, Tokenizer(Tokenizer::kChrfWords, t.lowercase), vocab));
      out.emplace_back(absl::StrCat(text.name, "_words"), std::move(words));
    }
  }
  return out;
}

// SetReferences puts row `row`'s references into `text`, one file each of
// `rows` lines (a row with fewer references has absent, empty, ones).
void SetReferences(TextInput& text, size_t rows, size_t row, std::vector<std::string> references) {
  while (text.files.size() < references.size()) text.files.emplace_back(rows);
  for (size_t r = 0; r < references.size(); ++r) text.files[r][row] = std::move(references[r]);
}

// MayHoldText is whether `body` has a '"' right after a '[' (whitespace
// between): only a list of strings does.
bool MayHoldText(absl::string_view body) {
  for (size_t i = body.find('['); i != absl::string_view::npos; i = body.find('[', i + 1)) {
    const size_t next = body.find_first_not_of(" \t\r\n", i + 1);
    if (next != absl::string_view::npos && body[next] == '"') return true;
  }
  return false;
}

// HasString is whether `v` is or holds a string.
bool HasString(const nlohmann::json& v) {
  if (v.is_string()) return true;
  if (!v.is_array()) return false;
  for (const nlohmann::json& x : v) {
    if (HasString(x)) return true;
  }
  return false;
}

// Sentences reads one text input: every row a sentence, or every row a
// list of its references.
absl::StatusOr<TextInput> Sentences(const std::string& name, const nlohmann::json& rows) {
  const auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat("input '", name, "' is text: ", why,
                                                   "; give a list of sentences (one a row) or of lists of a row's "
                                                   "references"));
  };
  if (!rows.is_array()) return bad("not a list");
  const size_t n = rows.size();
  TextInput text{name, {}};
  const bool references = n > 0 && rows[0].is_array();
  for (size_t row = 0; row < n; ++row) {
    const nlohmann::json& x = rows[row];
    if (x.is_array() != references) return bad(absl::StrCat("row ", row, " mixes sentences and lists"));
    if (!references) {
      if (!x.is_string()) return bad(absl::StrCat("row ", row, " is not a string"));
      SetReferences(text, n, row, {x.get<std::string>()});
      continue;
    }
    std::vector<std::string> row_references;
    for (size_t r = 0; r < x.size(); ++r) {
      if (!x[r].is_string()) return bad(absl::StrCat("row ", row, " reference ", r, " is not a string"));
      row_references.push_back(x[r].get<std::string>());
    }
    SetReferences(text, n, row, std::move(row_references));
  }
  if (text.files.empty()) text.files.emplace_back(n);
  return text;
}

}  // namespace

absl::StatusOr<TextBody> SplitTextBody(const std::string& body) {
  TextBody out;
  nlohmann::json j;
  if (MayHoldText(body)) j = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) {  // no text; or not JSON, which the tensor parser names
    out.json = body;
    return out;
  }
  for (auto it = j.begin(); it != j.end();) {
    if (it.key() == "dtypes" || !HasString(it.value())) {
      ++it;
      continue;
    }
    TALLY_ASSIGN_OR_RETURN(TextInput text, Sentences(it.key(), it.value()));
    out.texts.push_back(std::move(text));
    it = j.erase(it);
  }
  out.json = j.dump();
  return out;
}

bool IsTextPath(absl::string_view path) {
  if (absl::EndsWith(path, ".tsv") && !absl::StrContains(path, ',')) return true;
  for (absl::string_view file : absl::StrSplit(path, ',')) {
    if (!absl::EndsWith(file, ".txt")) return false;
  }
  return true;
}

absl::StatusOr<TextInput> ReadTextInput(const std::string& name, absl::string_view path) {
  TextInput text{name, {}};
  if (absl::EndsWith(path, ".tsv")) {
    // One row a line, its references tab-separated; a row with fewer has
    // empty (absent) ones after its last.
    TALLY_ASSIGN_OR_RETURN(std::vector<std::string> lines, ReadTextLines(std::string(path)));
    for (size_t row = 0; row < lines.size(); ++row) {
      std::vector<std::string> fields = absl::StrSplit(lines[row], '\t');
      SetReferences(text, lines.size(), row, std::move(fields));
    }
    if (text.files.empty()) text.files.emplace_back();
    return text;
  }
  for (absl::string_view file : absl::StrSplit(path, ',')) {
    TALLY_ASSIGN_OR_RETURN(std::vector<std::string> lines, ReadTextLines(std::string(file)));
    if (!text.files.empty() && lines.size() != text.files[0].size()) {
      return absl::InvalidArgumentError(absl::StrCat(file, " has ", lines.size(), " lines, the first file ",
                                                     text.files[0].size(), ": one line each per row"));
    }
    text.files.push_back(std::move(lines));
  }
  return text;
}

absl::StatusOr<NamedTensors> WithTokenIds(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                          const std::vector<TextInput>& texts) {
  if (texts.empty()) return inputs;
  TALLY_ASSIGN_OR_RETURN(std::vector<Group> groups, GroupByTokenizer(specs, texts[0]));
  if (groups.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        specs[groups[0].specs[0]], " splits text into ", TokenizerName(groups[0].tokenizer), " but ",
        specs[groups[1].specs[0]], " into ", TokenizerName(groups[1].tokenizer), ": give them one at a time"));
  }
  if (groups.empty()) return inputs;
  return AddTokenIds(inputs, texts, groups[0].tokenizer);
}

absl::StatusOr<std::vector<EvalResult>> EvaluateText(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                                     const std::vector<TextInput>& texts, const EvalOptions& options) {
  TALLY_ASSIGN_OR_RETURN(std::vector<Group> groups, GroupByTokenizer(specs, texts.at(0)));
  std::vector<EvalResult> results(specs.size());
  for (const Group& g : groups) {
    std::vector<std::string> group_specs;
    for (size_t i : g.specs) group_specs.push_back(specs[i]);
    TALLY_ASSIGN_OR_RETURN(NamedTensors ids, AddTokenIds(inputs, texts, g.tokenizer));
    TALLY_ASSIGN_OR_RETURN(std::vector<EvalResult> r, Evaluate(group_specs, ids, options));
    for (size_t k = 0; k < g.specs.size(); ++k) results[g.specs[k]] = std::move(r[k]);
  }
  return results;
}

}  // namespace tally::tools
