#include "engine/ir/printer.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tally::ir {

std::string PrintStateDecl(const StateDecl& s) {
  std::string out = absl::StrCat("state @", s.name, " : ", s.type.ToString(), " init=", FormatDouble(s.init),
                                 " reducer=", ReducerName(s.reducer));
  if (!s.group.empty()) absl::StrAppend(&out, " group=", AttrToString(s.group));
  if (!s.check.empty()) absl::StrAppend(&out, " check=", AttrToString(s.check));
  if (s.scatter) absl::StrAppend(&out, " scatter=true");
  absl::StrAppend(&out, " metric=", AttrToString(s.metric));
  return out;
}

std::string PrintGraph(const Graph& g, int indent) {
  std::string pad(indent, ' ');
  absl::flat_hash_map<const Value*, std::string> names;
  std::vector<std::string> params;
  for (Value* p : g.params()) {
    names[p] = "%" + p->name();
    params.push_back(absl::StrCat(names[p], ": ", p->type().ToString()));
  }
  std::string out = absl::StrCat(pad, "graph @", g.name(), "(", absl::StrJoin(params, ", "), ") {\n");
  int counter = 0;
  for (const auto& n : g.nodes()) {
    std::vector<std::string> outs, types, ins;
    for (Value* v : n->outputs()) {
      names[v] = absl::StrCat("%", counter++);
      outs.push_back(names[v]);
      types.push_back(v->type().ToString());
    }
    for (Value* v : n->inputs()) {
      auto it = names.find(v);
      ins.push_back(it == names.end() ? "%<undef>" : it->second);
    }
    absl::StrAppend(&out, pad, "  ", absl::StrJoin(outs, ", "), " = ", n->op(), "(", absl::StrJoin(ins, ", "), ")");
    if (!n->attrs().empty()) {
      std::vector<std::string> attrs;
      for (const auto& [k, v] : n->attrs()) attrs.push_back(absl::StrCat(k, "=", AttrToString(v)));
      absl::StrAppend(&out, " {", absl::StrJoin(attrs, ", "), "}");
    }
    absl::StrAppend(&out, " : ", absl::StrJoin(types, ", "));
    if (!n->loc().empty()) absl::StrAppend(&out, " loc(", AttrToString(n->loc()), ")");
    out += "\n";
  }
  std::vector<std::string> rets;
  for (const auto& [label, v] : g.returns()) {
    auto it = names.find(v);
    rets.push_back(absl::StrCat(label, ": ", it == names.end() ? "%<undef>" : it->second));
  }
  absl::StrAppend(&out, pad, "  return (", absl::StrJoin(rets, ", "), ")\n", pad, "}\n");
  return out;
}

std::string PrintModule(const Module& m) {
  std::string out = "module {\n";
  for (const auto& s : m.states) absl::StrAppend(&out, "  ", PrintStateDecl(s), "\n");
  if (m.update) out += PrintGraph(*m.update, 2);
  for (const auto& [group, g] : m.merges) out += PrintGraph(*g, 2);
  if (m.finalize) out += PrintGraph(*m.finalize, 2);
  out += "}\n";
  return out;
}

}  // namespace tally::ir
