#include "engine/ir/verifier.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace tally::ir {
namespace {

absl::Status Fail(const Graph& g, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("verifier: graph @", g.name(), ": ", what));
}

bool SameTrailing(const Shape& a, const Shape& b) {
  return a.size() == b.size() && std::equal(a.begin() + 1, a.end(), b.begin() + 1);
}

}  // namespace

absl::Status VerifyGraph(const Graph& g, const NodeCheck& check) {
  absl::flat_hash_set<const Value*> defined;
  absl::flat_hash_set<std::string> names;
  for (Value* p : g.params()) {
    if (!names.insert(p->name()).second) return Fail(g, absl::StrCat("duplicate parameter %", p->name()));
    defined.insert(p);
  }
  for (const auto& n : g.nodes()) {
    for (Value* in : n->inputs()) {
      if (!defined.contains(in)) {
        return Fail(g, absl::StrCat(n->op(), " uses a value that is not defined before it",
                                    n->loc().empty() ? "" : " at " + n->loc()));
      }
    }
    absl::Status s = check ? check(*n) : absl::OkStatus();
    if (!s.ok()) {
      return Fail(g, absl::StrCat(s.message(), n->loc().empty() ? "" : " (" + n->loc() + ")"));
    }
    for (Value* out : n->outputs()) defined.insert(out);
  }
  absl::flat_hash_set<std::string> labels;
  for (const auto& [label, v] : g.returns()) {
    if (!defined.contains(v)) return Fail(g, absl::StrCat("result '", label, "' is not defined"));
    if (!labels.insert(label).second) return Fail(g, absl::StrCat("duplicate result '", label, "'"));
  }
  return absl::OkStatus();
}

absl::Status VerifyModule(const Module& m, const NodeCheck& check) {
  if (!m.update || !m.finalize) return absl::InvalidArgumentError("verifier: module needs update and finalize graphs");
  TALLY_RETURN_IF_ERROR(VerifyGraph(*m.update, check));
  TALLY_RETURN_IF_ERROR(VerifyGraph(*m.finalize, check));
  absl::flat_hash_set<std::string> seen;
  for (const StateDecl& s : m.states) {
    if (!seen.insert(s.name).second)
      return absl::InvalidArgumentError(absl::StrCat("verifier: duplicate state @", s.name));
    Value* partial = m.update->FindReturn(s.name);
    if (partial == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("verifier: state @", s.name, " has no partial in @update"));
    }
    const TensorType& pt = partial->type();
    if (s.scatter && (s.reducer != Reducer::kSum || s.type.dtype != DType::kInt64)) {
      return absl::InvalidArgumentError(absl::StrCat("verifier: scatter state @", s.name, " must be an int64 sum, is ",
                                                     s.type.ToString(), " reducer=", ReducerName(s.reducer)));
    }
    // A scatter state's partial is (flat index, count) rows [..., 2].
    const bool rows_ok = pt.rank() >= 1 && pt.shape.back() == Dim::Fixed(2);
    bool shape_ok = s.scatter                    ? rows_ok
                    : s.reducer == Reducer::kCat ? SameTrailing(pt.shape, s.type.shape)
                                                 : pt.shape == s.type.shape;
    if (pt.dtype != s.type.dtype || !shape_ok || pt.device != s.type.device) {
      return absl::InvalidArgumentError(
          absl::StrCat("verifier: partial of @", s.name, " is ", pt.ToString(), ", state is ", s.type.ToString()));
    }
    if (s.reducer == Reducer::kCustom && !m.merges.count(s.group)) {
      return absl::InvalidArgumentError(
          absl::StrCat("verifier: state @", s.name, " has no merge graph for group '", s.group, "'"));
    }
  }
  if (m.update->returns().size() != m.states.size()) {
    return absl::InvalidArgumentError("verifier: @update returns a partial that is not a state");
  }
  if (m.finalize->params().size() != m.states.size()) {
    return absl::InvalidArgumentError("verifier: @finalize must take every state, in order");
  }
  for (size_t i = 0; i < m.states.size(); ++i) {
    const Value* p = m.finalize->params()[i];
    if (p->name() != m.states[i].name || p->type() != m.states[i].type) {
      return absl::InvalidArgumentError(absl::StrCat(
          "verifier: @finalize parameter ", i, " is %", p->name(), ": ", p->type().ToString(), ", expected %",
          m.states[i].name, ": ", m.states[i].type.ToString(), " (@finalize takes every state, in order)"));
    }
  }
  for (const auto& [group, g] : m.merges) {
    TALLY_RETURN_IF_ERROR(VerifyGraph(*g, check));
    std::vector<const StateDecl*> members;
    for (const StateDecl& s : m.states)
      if (s.group == group) members.push_back(&s);
    if (members.empty())
      return absl::InvalidArgumentError(absl::StrCat("verifier: merge group '", group, "' has no states"));
    if (g->params().size() != 2 * members.size() || g->returns().size() != members.size()) {
      return absl::InvalidArgumentError(absl::StrCat("verifier: merge graph of '", group,
                                                     "' must take a.* and b.* of its ", members.size(), " states"));
    }
    for (size_t i = 0; i < members.size(); ++i) {
      const Value* pa = g->params()[i];
      const Value* pb = g->params()[members.size() + i];
      if (pa->name() != "a." + members[i]->name || pb->name() != "b." + members[i]->name ||
          pa->type() != members[i]->type || pb->type() != members[i]->type ||
          g->returns()[i].first != members[i]->name || g->returns()[i].second->type() != members[i]->type) {
        return absl::InvalidArgumentError(
            absl::StrCat("verifier: merge graph of '", group, "' does not match state @", members[i]->name));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace tally::ir
