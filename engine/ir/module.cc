#include "engine/ir/module.h"

#include "absl/strings/str_cat.h"

namespace tally::ir {

absl::string_view ReducerName(Reducer r) {
  switch (r) {
    case Reducer::kSum: return "sum";
    case Reducer::kMax: return "max";
    case Reducer::kMin: return "min";
    case Reducer::kCat: return "cat";
    case Reducer::kCustom: return "custom";
  }
  return "?";
}

absl::StatusOr<Reducer> ParseReducer(absl::string_view s) {
  if (s == "sum") return Reducer::kSum;
  if (s == "max") return Reducer::kMax;
  if (s == "min") return Reducer::kMin;
  if (s == "cat") return Reducer::kCat;
  if (s == "custom") return Reducer::kCustom;
  return absl::InvalidArgumentError(absl::StrCat("unknown reducer '", s, "'"));
}

const StateDecl* Module::FindState(absl::string_view name) const {
  for (const auto& s : states)
    if (s.name == name) return &s;
  return nullptr;
}

int Module::StateIndex(absl::string_view name) const {
  for (size_t i = 0; i < states.size(); ++i)
    if (states[i].name == name) return static_cast<int>(i);
  return -1;
}

std::unique_ptr<Module> Module::Clone() const {
  auto m = std::make_unique<Module>();
  m->states = states;
  if (update) m->update = update->Clone();
  if (finalize) m->finalize = finalize->Clone();
  for (const auto& [k, g] : merges) m->merges[k] = g->Clone();
  return m;
}

}  // namespace tally::ir
