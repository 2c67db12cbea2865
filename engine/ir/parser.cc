#include "engine/ir/parser.h"

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "support/status_macros.h"

namespace tally::ir {
namespace {

absl::Status Error(int line, absl::string_view text, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("IR line ", line, ": ", what, ": '", absl::StripAsciiWhitespace(text), "'"));
}

// SplitTopLevel splits on `sep` outside brackets, braces, parens and strings.
std::vector<std::string> SplitTopLevel(absl::string_view s, char sep) {
  std::vector<std::string> out;
  int depth = 0;
  bool in_str = false;
  std::string cur;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (in_str) {
      cur.push_back(c);
      if (c == '\\' && i + 1 < s.size())
        cur.push_back(s[++i]);
      else if (c == '"')
        in_str = false;
      continue;
    }
    if (c == '"') in_str = true;
    if (c == '[' || c == '(' || c == '{') ++depth;
    if (c == ']' || c == ')' || c == '}') --depth;
    if (c == sep && depth == 0) {
      out.push_back(std::string(absl::StripAsciiWhitespace(cur)));
      cur.clear();
      continue;
    }
    cur.push_back(c);
  }
  std::string last(absl::StripAsciiWhitespace(cur));
  if (!last.empty() || !out.empty()) out.push_back(last);
  return out;
}

// FindClosing returns the index of the bracket closing the one at `open`.
size_t FindClosing(absl::string_view s, size_t open) {
  int depth = 0;
  bool in_str = false;
  for (size_t i = open; i < s.size(); ++i) {
    char c = s[i];
    if (in_str) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_str = false;
      continue;
    }
    if (c == '"')
      in_str = true;
    else if (c == '(' || c == '[' || c == '{')
      ++depth;
    else if (c == ')' || c == ']' || c == '}') {
      if (--depth == 0) return i;
    }
  }
  return absl::string_view::npos;
}

struct GraphParser {
  std::vector<std::string> lines;
  size_t pos = 0;
  int line_base = 0;

  absl::StatusOr<std::unique_ptr<Graph>> ParseOne() {
    std::string header = lines[pos];
    int header_line = line_base + pos + 1;
    absl::string_view h = absl::StripAsciiWhitespace(header);
    if (!absl::StartsWith(h, "graph @")) return Error(header_line, h, "expected 'graph @name(...) {'");
    size_t lp = h.find('(');
    if (lp == absl::string_view::npos) return Error(header_line, h, "missing '('");
    size_t rp = FindClosing(h, lp);
    if (rp == absl::string_view::npos || !absl::EndsWith(h, "{")) {
      return Error(header_line, h, "malformed graph header");
    }
    auto g = std::make_unique<Graph>(std::string(h.substr(7, lp - 7)));
    absl::flat_hash_map<std::string, Value*> env;
    for (const std::string& p : SplitTopLevel(h.substr(lp + 1, rp - lp - 1), ',')) {
      if (p.empty()) continue;
      size_t colon = p.find(':');
      if (p[0] != '%' || colon == std::string::npos) return Error(header_line, p, "bad parameter");
      std::string name = std::string(absl::StripAsciiWhitespace(p.substr(1, colon - 1)));
      auto type = ParseTensorType(p.substr(colon + 1));
      if (!type.ok()) return Error(header_line, p, type.status().message());
      if (env.contains("%" + name)) return Error(header_line, p, "duplicate parameter");
      env["%" + name] = g->AddParam(name, *type);
    }
    ++pos;
    for (; pos < lines.size(); ++pos) {
      int ln = line_base + pos + 1;
      absl::string_view l = absl::StripAsciiWhitespace(lines[pos]);
      if (l.empty() || absl::StartsWith(l, "//")) continue;
      if (absl::StartsWith(l, "return")) {
        size_t a = l.find('(');
        size_t b = a == absl::string_view::npos ? a : FindClosing(l, a);
        if (b == absl::string_view::npos) return Error(ln, l, "malformed return");
        for (const std::string& r : SplitTopLevel(l.substr(a + 1, b - a - 1), ',')) {
          if (r.empty()) continue;
          size_t colon = r.rfind(':');
          if (colon == std::string::npos) return Error(ln, r, "return entry needs 'label: %value'");
          std::string label(absl::StripAsciiWhitespace(r.substr(0, colon)));
          std::string ref(absl::StripAsciiWhitespace(r.substr(colon + 1)));
          auto it = env.find(ref);
          if (it == env.end()) return Error(ln, r, "use of undefined value");
          g->AddReturn(label, it->second);
        }
        ++pos;
        if (pos >= lines.size() || absl::StripAsciiWhitespace(lines[pos]) != "}") {
          return Error(ln, l, "expected '}' after return");
        }
        ++pos;
        return g;
      }
      TALLY_RETURN_IF_ERROR(ParseNode(l, ln, *g, env));
    }
    return Error(header_line, h, "graph is not closed by 'return (...)' and '}'");
  }

  absl::Status ParseNode(absl::string_view l, int ln, Graph& g, absl::flat_hash_map<std::string, Value*>& env) {
    size_t eq = l.find(" = ");
    if (eq == absl::string_view::npos) return Error(ln, l, "expected '%x = op(...)'");
    std::vector<std::string> outs = SplitTopLevel(l.substr(0, eq), ',');
    absl::string_view rest = l.substr(eq + 3);
    size_t lp = rest.find('(');
    if (lp == absl::string_view::npos) return Error(ln, l, "missing '(' after op name");
    std::string op(absl::StripAsciiWhitespace(rest.substr(0, lp)));
    size_t rp = FindClosing(rest, lp);
    if (rp == absl::string_view::npos) return Error(ln, l, "unbalanced '('");
    std::vector<Value*> ins;
    for (const std::string& a : SplitTopLevel(rest.substr(lp + 1, rp - lp - 1), ',')) {
      if (a.empty()) continue;
      auto it = env.find(a);
      if (it == env.end()) return Error(ln, a, "use of undefined value");
      ins.push_back(it->second);
    }
    rest = absl::StripAsciiWhitespace(rest.substr(rp + 1));
    AttrMap attrs;
    if (absl::StartsWith(rest, "{")) {
      size_t rb = FindClosing(rest, 0);
      if (rb == absl::string_view::npos) return Error(ln, l, "unbalanced '{'");
      for (const std::string& kv : SplitTopLevel(rest.substr(1, rb - 1), ',')) {
        if (kv.empty()) continue;
        size_t e = kv.find('=');
        if (e == std::string::npos) return Error(ln, kv, "attribute needs 'key=value'");
        auto v = ParseAttr(kv.substr(e + 1));
        if (!v.ok()) return Error(ln, kv, v.status().message());
        attrs[std::string(absl::StripAsciiWhitespace(kv.substr(0, e)))] = *v;
      }
      rest = absl::StripAsciiWhitespace(rest.substr(rb + 1));
    }
    if (!absl::StartsWith(rest, ":")) return Error(ln, l, "expected ': type' after the op");
    rest = rest.substr(1);
    std::string loc;
    size_t lpos = rest.find(" loc(");
    if (lpos != absl::string_view::npos) {
      size_t close = FindClosing(rest, lpos + 4);
      if (close == absl::string_view::npos) return Error(ln, l, "unbalanced loc(");
      auto v = ParseAttr(rest.substr(lpos + 5, close - lpos - 5));
      if (!v.ok() || !std::holds_alternative<std::string>(*v)) return Error(ln, l, "bad loc");
      loc = std::get<std::string>(*v);
      rest = rest.substr(0, lpos);
    }
    std::vector<TensorType> types;
    for (const std::string& t : SplitTopLevel(rest, ',')) {
      auto type = ParseTensorType(t);
      if (!type.ok()) return Error(ln, t, type.status().message());
      types.push_back(*type);
    }
    if (types.size() != outs.size()) return Error(ln, l, "number of results and types differ");
    Node* n = g.AddNode(op, std::move(ins), std::move(attrs), std::move(types), loc);
    for (size_t i = 0; i < outs.size(); ++i) {
      if (outs[i].empty() || outs[i][0] != '%') return Error(ln, l, "result names start with '%'");
      if (env.contains(outs[i])) return Error(ln, outs[i], "value defined twice");
      env[outs[i]] = n->output(i);
    }
    return absl::OkStatus();
  }
};

absl::StatusOr<StateDecl> ParseState(absl::string_view l, int ln) {
  // state @name : type key=value ...
  std::vector<std::string> parts = SplitTopLevel(l, ' ');
  std::vector<std::string> toks;
  for (auto& p : parts)
    if (!p.empty()) toks.push_back(p);
  if (toks.size() < 4 || toks[0] != "state" || toks[1][0] != '@' || toks[2] != ":") {
    return Error(ln, l, "expected 'state @name : type ...'");
  }
  StateDecl s;
  s.name = toks[1].substr(1);
  auto type = ParseTensorType(toks[3]);
  if (!type.ok()) return Error(ln, l, type.status().message());
  s.type = *type;
  for (size_t i = 4; i < toks.size(); ++i) {
    size_t e = toks[i].find('=');
    if (e == std::string::npos) return Error(ln, toks[i], "expected key=value");
    std::string key = toks[i].substr(0, e);
    std::string val = toks[i].substr(e + 1);
    if (key == "reducer") {
      auto r = ParseReducer(val);
      if (!r.ok()) return Error(ln, l, r.status().message());
      s.reducer = *r;
      continue;
    }
    auto v = ParseAttr(val);
    if (!v.ok()) return Error(ln, toks[i], v.status().message());
    if (key == "init") {
      if (auto* d = std::get_if<double>(&*v))
        s.init = *d;
      else if (auto* n = std::get_if<int64_t>(&*v))
        s.init = static_cast<double>(*n);
      else
        return Error(ln, toks[i], "init must be a number");
    } else if (key == "scatter") {
      if (!std::holds_alternative<bool>(*v)) return Error(ln, toks[i], "scatter must be true or false");
      s.scatter = std::get<bool>(*v);
    } else if (key == "group" || key == "check" || key == "metric") {
      if (!std::holds_alternative<std::string>(*v)) return Error(ln, toks[i], "expected a string");
      (key == "group" ? s.group : key == "check" ? s.check : s.metric) = std::get<std::string>(*v);
    } else {
      return Error(ln, toks[i], "unknown state attribute");
    }
  }
  return s;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Graph>> ParseGraph(absl::string_view text) {
  GraphParser p;
  for (absl::string_view l : absl::StrSplit(text, '\n')) p.lines.emplace_back(l);
  while (p.pos < p.lines.size() && absl::StripAsciiWhitespace(p.lines[p.pos]).empty()) ++p.pos;
  if (p.pos >= p.lines.size()) return absl::InvalidArgumentError("empty IR text");
  return p.ParseOne();
}

absl::StatusOr<std::unique_ptr<Module>> ParseModule(absl::string_view text) {
  GraphParser p;
  for (absl::string_view l : absl::StrSplit(text, '\n')) p.lines.emplace_back(l);
  auto m = std::make_unique<Module>();
  bool opened = false, closed = false;
  while (p.pos < p.lines.size()) {
    int ln = p.pos + 1;
    absl::string_view l = absl::StripAsciiWhitespace(p.lines[p.pos]);
    if (l.empty() || absl::StartsWith(l, "//")) {
      ++p.pos;
      continue;
    }
    if (closed) return Error(ln, l, "text after the end of the module");
    if (!opened) {
      if (l != "module {") return Error(ln, l, "expected 'module {'");
      opened = true;
      ++p.pos;
      continue;
    }
    if (l == "}") {
      closed = true;
      ++p.pos;
      continue;
    }
    if (absl::StartsWith(l, "state ")) {
      TALLY_ASSIGN_OR_RETURN(StateDecl s, ParseState(l, ln));
      if (m->FindState(s.name)) return Error(ln, l, "duplicate state");
      m->states.push_back(std::move(s));
      ++p.pos;
      continue;
    }
    if (absl::StartsWith(l, "graph @")) {
      TALLY_ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, p.ParseOne());
      std::string name = g->name();
      if (name == "update") {
        if (m->update) return Error(ln, l, "second update graph");
        m->update = std::move(g);
      } else if (name == "finalize") {
        if (m->finalize) return Error(ln, l, "second finalize graph");
        m->finalize = std::move(g);
      } else if (absl::StartsWith(name, "merge.")) {
        if (m->merges.count(name.substr(6))) return Error(ln, l, "second merge graph for the group");
        m->merges[name.substr(6)] = std::move(g);
      } else {
        return Error(ln, l, "graph must be @update, @finalize or @merge.<group>");
      }
      continue;
    }
    return Error(ln, l, "expected 'state', 'graph' or '}'");
  }
  if (!closed) return absl::InvalidArgumentError("IR: module is not closed by '}'");
  return m;
}

}  // namespace tally::ir
