#include "engine/dsl/metric.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tally::dsl {

std::string PartLabel(absl::string_view base, const std::vector<int>& path) {
  std::string out(base);
  for (int i : path) absl::StrAppend(&out, "/", i);
  return out;
}

bool ParsePartLabel(absl::string_view label, std::string* base, std::vector<int>* path) {
  std::vector<absl::string_view> items = absl::StrSplit(label, '/');
  *base = std::string(items[0]);
  path->clear();
  for (size_t i = 1; i < items.size(); ++i) {
    int k;
    if (items[i].empty() || !absl::ascii_isdigit(items[i][0]) || !absl::SimpleAtoi(items[i], &k)) return false;
    path->push_back(k);
  }
  return true;
}

absl::StatusOr<std::unique_ptr<ir::Module>> LinkCollection(const std::vector<CollectionEntry>& entries) {
  auto out = std::make_unique<ir::Module>();
  out->update = std::make_unique<ir::Graph>("update");
  out->finalize = std::make_unique<ir::Graph>("finalize");
  for (const CollectionEntry& e : entries) {
    const ir::Module& m = *e.metric.module;
    const std::string prefix = e.label + ".";
    for (ir::StateDecl s : m.states) {
      s.name = prefix + s.name;
      if (!s.group.empty()) s.group = prefix + s.group;
      out->states.push_back(std::move(s));
    }
    // Update: shared inputs by name.
    absl::flat_hash_map<const ir::Value*, ir::Value*> map;
    for (ir::Value* p : m.update->params()) {
      ir::Value* shared = out->update->FindParam(p->name());
      if (shared == nullptr) {
        shared = out->update->AddParam(p->name(), p->type());
      } else if (shared->type() != p->type()) {
        return absl::InvalidArgumentError(absl::StrCat(e.label, ": input '", p->name(), "' is ", p->type().ToString(),
                                                       " here but ", shared->type().ToString(), " for another metric"));
      }
      map[p] = shared;
    }
    map = m.update->CloneInto(*out->update, std::move(map));
    for (const auto& [label, v] : m.update->returns()) out->update->AddReturn(prefix + label, map.at(v));
    // Finalize: one parameter per state.
    absl::flat_hash_map<const ir::Value*, ir::Value*> fmap;
    for (ir::Value* p : m.finalize->params()) {
      fmap[p] = out->finalize->AddParam(prefix + p->name(), p->type());
    }
    fmap = m.finalize->CloneInto(*out->finalize, std::move(fmap));
    for (const auto& [label, v] : m.finalize->returns()) {
      std::string base;
      std::vector<int> path;
      std::string linked = ParsePartLabel(label, &base, &path) && base == kResultLabel
                               ? PartLabel(e.label, path)
                               : absl::StrCat(e.label, ".", label);
      out->finalize->AddReturn(linked, fmap.at(v));
    }
    // Merge graphs.
    for (const auto& [group, g] : m.merges) {
      auto mg = std::make_unique<ir::Graph>("merge." + prefix + group);
      absl::flat_hash_map<const ir::Value*, ir::Value*> mmap;
      for (ir::Value* p : g->params()) {
        // "a.<state>" -> "a.<label>.<state>"
        std::string name = p->name();
        name = name.substr(0, 2) + prefix + name.substr(2);
        mmap[p] = mg->AddParam(name, p->type());
      }
      mmap = g->CloneInto(*mg, std::move(mmap));
      for (const auto& [label, v] : g->returns()) mg->AddReturn(prefix + label, mmap.at(v));
      out->merges[prefix + group] = std::move(mg);
    }
  }
  return out;
}

}  // namespace tally::dsl
