#include "engine/ir/attribute.h"

#include <cmath>
#include <cstdio>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace tally::ir {
namespace {

bool DoubleBitsEqual(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;
  return std::memcmp(&a, &b, sizeof(double)) == 0;
}

absl::StatusOr<double> ParseDoubleToken(absl::string_view t) {
  if (t == "inf") return INFINITY;
  if (t == "-inf") return -INFINITY;
  if (t == "nan") return NAN;
  double v;
  if (!absl::SimpleAtod(t, &v)) {
    return absl::InvalidArgumentError(absl::StrCat("bad number '", t, "'"));
  }
  return v;
}

bool LooksFloat(absl::string_view t) {
  return t.find_first_of(".eE") != absl::string_view::npos || t == "inf" || t == "-inf" || t == "nan";
}

}  // namespace

bool AttrEquals(const Attr& a, const Attr& b) {
  if (a.index() != b.index()) return false;
  if (auto* x = std::get_if<double>(&a)) return DoubleBitsEqual(*x, std::get<double>(b));
  if (auto* x = std::get_if<std::vector<double>>(&a)) {
    const auto& y = std::get<std::vector<double>>(b);
    if (x->size() != y.size()) return false;
    for (size_t i = 0; i < x->size(); ++i)
      if (!DoubleBitsEqual((*x)[i], y[i])) return false;
    return true;
  }
  return a == b;
}

bool AttrMapEquals(const AttrMap& a, const AttrMap& b) {
  if (a.size() != b.size()) return false;
  auto it = b.begin();
  for (const auto& [k, v] : a) {
    if (k != it->first || !AttrEquals(v, it->second)) return false;
    ++it;
  }
  return true;
}

std::string AttrToString(const Attr& a) {
  struct Printer {
    std::string operator()(int64_t v) const { return absl::StrCat(v); }
    std::string operator()(double v) const { return FormatDouble(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const {
      std::string out = "\"";
      for (char c : v) {
        if (c == '"' || c == '\\') out.push_back('\\');
        out.push_back(c);
      }
      return out + "\"";
    }
    std::string operator()(const std::vector<int64_t>& v) const {
      return absl::StrCat("[", absl::StrJoin(v, ","), "]");
    }
    std::string operator()(const std::vector<double>& v) const {
      std::vector<std::string> parts;
      for (double d : v) parts.push_back(FormatDouble(d));
      // A trailing marker keeps an empty or integral-looking list typed.
      return absl::StrCat("[", absl::StrJoin(parts, ","), "]f");
    }
  };
  return std::visit(Printer{}, a);
}

absl::StatusOr<Attr> ParseAttr(absl::string_view s) {
  s = absl::StripAsciiWhitespace(s);
  if (s.empty()) return absl::InvalidArgumentError("empty attribute value");
  if (s == "true") return Attr(true);
  if (s == "false") return Attr(false);
  if (s[0] == '"') {
    // The inverse of AttrToString: `\` escapes the next character, and the
    // only unescaped quote is the closing one, at the very end.
    std::string out;
    size_t i = 1;
    for (; i < s.size() && s[i] != '"'; ++i) {
      if (s[i] == '\\' && ++i == s.size()) break;
      out.push_back(s[i]);
    }
    if (i >= s.size()) return absl::InvalidArgumentError(absl::StrCat("unterminated string ", s));
    if (i + 1 != s.size()) return absl::InvalidArgumentError(absl::StrCat("text after the string in ", s));
    return Attr(out);
  }
  if (s[0] == '[') {
    bool is_double = absl::EndsWith(s, "]f");
    absl::string_view body = s.substr(1, s.size() - (is_double ? 3 : 2));
    std::vector<int64_t> ints;
    std::vector<double> doubles;
    if (!absl::StripAsciiWhitespace(body).empty()) {
      for (absl::string_view t : absl::StrSplit(body, ',')) {
        t = absl::StripAsciiWhitespace(t);
        if (is_double) {
          auto d = ParseDoubleToken(t);
          if (!d.ok()) return d.status();
          doubles.push_back(*d);
        } else {
          int64_t v;
          if (!absl::SimpleAtoi(t, &v)) {
            return absl::InvalidArgumentError(absl::StrCat("bad integer '", t, "'"));
          }
          ints.push_back(v);
        }
      }
    }
    if (is_double) return Attr(doubles);
    return Attr(ints);
  }
  if (LooksFloat(s)) {
    auto d = ParseDoubleToken(s);
    if (!d.ok()) return d.status();
    return Attr(*d);
  }
  int64_t v;
  if (absl::SimpleAtoi(s, &v)) return Attr(v);
  return absl::InvalidArgumentError(absl::StrCat("bad attribute value '", s, "'"));
}

}  // namespace tally::ir
