#include "api/program_graph.h"

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "engine/ir/attribute.h"
#include "ops/op_registry.h"
#include "passes/fuse.h"

namespace tally {
namespace {

using json = nlohmann::ordered_json;

// DotString quotes `s` for a DOT label.
std::string DotString(const std::string& s) {
  return absl::StrCat("\"", absl::StrReplaceAll(s, {{"\\", "\\\\"}, {"\"", "\\\""}, {"\n", "\\n"}}), "\"");
}

std::string AttrsText(const ir::Node& n) {
  std::vector<std::string> parts;
  for (const auto& [k, v] : n.attrs()) parts.push_back(absl::StrCat(k, "=", ir::AttrToString(v)));
  return absl::StrJoin(parts, ", ");
}

// GraphDot draws one plan as a cluster; `ids` names every value's DOT node
// (parameters may already be named: states feeding finalize).
void GraphDot(const ir::Graph& g, const std::string& prefix, const ir::Device& device,
              std::map<const ir::Value*, std::string>& ids, std::string& out) {
  absl::StrAppend(&out, "  subgraph cluster_", prefix, " {\n    label=", DotString("@" + g.name()),
                  "; style=rounded; color=gray50;\n");
  for (const ir::Value* p : g.params()) {
    if (ids.count(p)) continue;
    const std::string id = absl::StrCat(prefix, "_in_", p->name());
    ids[p] = id;
    absl::StrAppend(&out, "    ", DotString(id), " [shape=invhouse, label=", DotString("%" + p->name()), "];\n");
  }
  int k = 0;
  for (const auto& n : g.nodes()) {
    const std::string id = absl::StrCat(prefix, "_n", k++);
    for (const ir::Value* v : n->outputs()) ids[v] = id;
    std::string label = n->op();
    const std::string attrs = AttrsText(*n);
    if (!attrs.empty() && attrs.size() <= 60) absl::StrAppend(&label, "\n{", attrs, "}");
    std::string style = "shape=box";
    if (ops::IsComposite(*n))
      style = "shape=box, style=filled, fillcolor=lightblue, penwidth=2";
    else if (ops::SyncsHost(*n))
      style = "shape=box, style=filled, fillcolor=orange";
    if (n->output()->type().device != device) absl::StrAppend(&style, ", color=red, fontcolor=red");
    absl::StrAppend(&out, "    ", DotString(id), " [", style, ", label=", DotString(label), "];\n");
  }
  out += "  }\n";
  for (const auto& n : g.nodes()) {
    for (const ir::Value* in : n->inputs()) {
      const bool elsewhere = in->type().device != device;
      absl::StrAppend(&out, "  ", DotString(ids[in]), " -> ", DotString(ids[n->output()]),
                      " [label=", DotString(in->type().ToString()), elsewhere ? ", color=red" : "", "];\n");
    }
  }
}

json TypeJson(const ir::TensorType& t) {
  std::vector<std::string> shape;
  for (const auto& d : t.shape) shape.push_back(d.is_symbolic() ? d.symbol : absl::StrCat(d.size));
  return json{{"type", t.ToString()},
              {"dtype", std::string(ir::DTypeName(t.dtype))},
              {"shape", shape},
              {"device", t.device.name}};
}

json GraphJson(const ir::Graph& g) {
  std::map<const ir::Value*, std::string> names;
  json params = json::array();
  for (const ir::Value* p : g.params()) {
    names[p] = "%" + p->name();
    json j = TypeJson(p->type());
    j["name"] = p->name();
    params.push_back(j);
  }
  int next = 0;
  json nodes = json::array();
  int syncs = 0;
  for (const auto& n : g.nodes()) {
    json outs = json::array();
    for (const ir::Value* v : n->outputs()) {
      names[v] = absl::StrCat("%", next++);
      json o = TypeJson(v->type());
      o["name"] = names[v];
      outs.push_back(o);
    }
    std::vector<std::string> ins;
    for (const ir::Value* v : n->inputs()) ins.push_back(names[v]);
    json attrs = json::object();
    for (const auto& [k, v] : n->attrs()) attrs[k] = ir::AttrToString(v);
    if (ops::SyncsHost(*n)) ++syncs;
    nodes.push_back({{"op", n->op()},
                     {"inputs", ins},
                     {"outputs", outs},
                     {"attrs", attrs},
                     {"fused", ops::IsComposite(*n)},
                     {"syncs_host", ops::SyncsHost(*n)},
                     {"loc", n->loc()}});
  }
  json returns = json::array();
  for (const auto& [label, v] : g.returns()) returns.push_back({{"label", label}, {"value", names[v]}});
  return json{{"name", g.name()},
              {"params", params},
              {"nodes", nodes},
              {"returns", returns},
              {"aten_calls", passes::CountAtenCalls(g)},
              {"host_syncs", syncs}};
}

}  // namespace

std::string ProgramToDot(const Compiled& c, const ir::Device& device) {
  const ir::Module& m = *c.module;
  std::string out =
      absl::StrCat("digraph tally {\n  label=", DotString(absl::StrCat("program on ", device.name)),
                   "; labelloc=t; rankdir=LR; fontname=\"Helvetica\";\n",
                   "  node [fontname=\"Helvetica\", fontsize=10];\n", "  edge [fontname=\"Helvetica\", fontsize=8];\n");
  std::map<const ir::Value*, std::string> ids;
  GraphDot(*m.update, "update", device, ids, out);
  // States: the update's partial folds into each, and finalize reads it.
  for (const auto& s : m.states) {
    std::string label = absl::StrCat("@", s.name, "\n", s.type.ToString(), "\nreducer=", ir::ReducerName(s.reducer));
    const bool elsewhere = s.type.device != device;
    absl::StrAppend(&out, "  ", DotString("state_" + s.name),
                    " [shape=cylinder, style=filled, fillcolor=", s.check.empty() ? "lightyellow" : "mistyrose",
                    elsewhere ? ", color=red" : "", ", label=", DotString(label), "];\n");
  }
  for (const auto& [label, v] : m.update->returns()) {
    if (m.FindState(label) == nullptr) continue;
    absl::StrAppend(&out, "  ", DotString(ids[v]), " -> ", DotString("state_" + label),
                    " [label=", DotString(std::string(ir::ReducerName(m.FindState(label)->reducer))),
                    ", style=bold];\n");
  }
  for (const ir::Value* p : m.finalize->params()) {
    if (m.FindState(p->name()) != nullptr) ids[p] = "state_" + p->name();
  }
  GraphDot(*m.finalize, "finalize", device, ids, out);
  for (const auto& [label, v] : m.finalize->returns()) {
    const std::string id = "out_" + label;
    absl::StrAppend(&out, "  ", DotString(id),
                    " [shape=note, style=filled, fillcolor=palegreen, label=", DotString(label), "];\n  ",
                    DotString(ids[v]), " -> ", DotString(id), ";\n");
  }
  if (!c.fusion_groups.empty()) {
    absl::StrAppend(&out, "  legend [shape=plaintext, label=",
                    DotString(absl::StrCat("fusion groups:\n", absl::StrJoin(c.fusion_groups, "\n"))), "];\n");
  }
  out += "}\n";
  return out;
}

std::string ProgramToJson(const Compiled& c, const ir::Device& device) {
  const ir::Module& m = *c.module;
  json j;
  j["device"] = device.name;
  json inputs = json::array();
  for (const ir::Value* p : m.update->params()) {
    json t = TypeJson(p->type());
    t["name"] = p->name();
    inputs.push_back(t);
  }
  j["inputs"] = inputs;
  json states = json::array();
  for (const auto& s : m.states) {
    json t = TypeJson(s.type);
    t["name"] = s.name;
    t["metric"] = s.metric;
    t["reducer"] = std::string(ir::ReducerName(s.reducer));
    t["bytes"] = s.Bytes();
    t["bytes_per_row"] = s.reducer == ir::Reducer::kCat;
    if (!s.group.empty()) t["group"] = s.group;
    if (!s.check.empty()) t["check"] = s.check;
    states.push_back(t);
  }
  j["states"] = states;
  j["fixed_state_bytes"] = m.FixedStateBytes();
  json passes = json::array();
  for (const auto& r : c.log) {
    json counters = json::object();
    for (const auto& [k, v] : r.counters) counters[k] = v;
    passes.push_back({{"pass", r.pass}, {"changed", r.changed}, {"counters", counters}});
  }
  j["passes"] = passes;
  j["fusion_groups"] = c.fusion_groups;
  j["update"] = GraphJson(*m.update);
  j["finalize"] = GraphJson(*m.finalize);
  json outputs = json::array();
  for (const auto& [label, v] : m.finalize->returns()) outputs.push_back(label);
  j["outputs"] = outputs;
  json edges = json::object();
  for (const auto& [k, v] : c.proof.edges) edges[k] = v;
  j["proof"] = {{"device", c.proof.device},
                {"states", c.proof.states},
                {"edges", edges},
                {"boundary_checks", c.proof.boundary_checks}};
  return j.dump(2, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace tally
