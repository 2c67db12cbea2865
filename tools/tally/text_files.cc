#include "tools/tally/text_files.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/text_inputs.h"
#include "metrics/spec.h"
#include "support/status_macros.h"

namespace tally::tools {
namespace {

// Group is the specs (by index) whose metrics split text one way.
struct Group {
  Tokenizer tokenizer;
  std::vector<size_t> specs;
};

absl::StatusOr<std::vector<Group>> GroupByTokenizer(const std::vector<std::string>& specs) {
  std::vector<Group> groups;
  for (size_t i = 0; i < specs.size(); ++i) {
    TALLY_ASSIGN_OR_RETURN(metrics::MetricSpec spec, metrics::ParseMetricSpec(specs[i]));
    absl::StatusOr<Tokenizer> t = TokenizerFor(spec.name);
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("a text input: ", t.status().message()));
    Group* g = nullptr;
    for (Group& h : groups) g = h.tokenizer == *t ? &h : g;
    if (g == nullptr) g = &groups.emplace_back(Group{*t, {}});
    g->specs.push_back(i);
  }
  return groups;
}

absl::StatusOr<NamedTensors> AddTokenIds(const NamedTensors& inputs, const std::vector<TextInput>& texts, Tokenizer t) {
  NamedTensors out = inputs;
  Vocabulary vocab;  // one for all inputs: equal tokens, equal ids
  for (const TextInput& text : texts) {
    absl::StatusOr<at::Tensor> ids = TokenIds(text.sentences, t, vocab);
    if (!ids.ok()) return absl::InvalidArgumentError(absl::StrCat("input '", text.name, "': ", ids.status().message()));
    out.emplace_back(text.name, *std::move(ids));
  }
  return out;
}

}  // namespace

bool IsTextPath(absl::string_view path) { return absl::EndsWith(path, ".txt"); }

absl::StatusOr<NamedTensors> WithTokenIds(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                          const std::vector<TextInput>& texts) {
  if (texts.empty()) return inputs;
  TALLY_ASSIGN_OR_RETURN(std::vector<Group> groups, GroupByTokenizer(specs));
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
  TALLY_ASSIGN_OR_RETURN(std::vector<Group> groups, GroupByTokenizer(specs));
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
