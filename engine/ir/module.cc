#include "engine/ir/module.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace tally::ir {

absl::string_view ReducerName(Reducer r) {
  switch (r) {
    case Reducer::kSum:
      return "sum";
    case Reducer::kMax:
      return "max";
    case Reducer::kMin:
      return "min";
    case Reducer::kCat:
      return "cat";
    case Reducer::kCustom:
      return "custom";
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

std::vector<std::string> Module::MetricNames() const {
  std::vector<std::string> names;
  for (const auto& s : states) {
    if (std::find(names.begin(), names.end(), s.metric) == names.end()) names.push_back(s.metric);
  }
  return names;
}

absl::StatusOr<std::vector<int>> Module::PartialIndices() const {
  std::vector<int> out;
  const auto& rets = update->returns();
  for (const auto& s : states) {
    int idx = -1;
    for (size_t i = 0; i < rets.size(); ++i)
      if (rets[i].first == s.name) idx = static_cast<int>(i);
    if (idx < 0) return absl::InternalError(absl::StrCat("state @", s.name, " has no partial in @update"));
    out.push_back(idx);
  }
  return out;
}

int64_t StateDecl::Bytes() const {
  int64_t n = DTypeSize(type.dtype);
  for (size_t d = reducer == Reducer::kCat ? 1 : 0; d < type.shape.size(); ++d) {
    n *= type.shape[d].is_symbolic() ? 1 : type.shape[d].size;
  }
  return n;
}

int64_t Module::FixedStateBytes() const {
  int64_t total = 0;
  for (const auto& s : states) {
    if (s.reducer != Reducer::kCat) total += s.Bytes();
  }
  return total;
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
