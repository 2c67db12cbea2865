#include "metrics/spec.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "support/format_double.h"

namespace tally::metrics {
namespace {

bool IsIdentStart(char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_'; }

bool IsIdentChar(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_'; }

bool IsSpace(char c) { return absl::ascii_isspace(static_cast<unsigned char>(c)); }

// Characters that end an unquoted value token.
bool IsTokenEnd(char c) {
  return IsSpace(c) || c == ',' || c == '(' || c == ')' || c == '[' || c == ']' || c == '=' || c == '\'' || c == '"';
}

bool IsBareWord(absl::string_view s) {
  if (s.empty() || !IsIdentStart(s[0])) return false;
  for (char c : s) {
    if (!IsIdentChar(c) && c != '.' && c != '-') return false;
  }
  return true;
}

bool AllDigits(absl::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); });
}

absl::string_view StripSign(absl::string_view s) {
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  return s;
}

bool IsIntSyntax(absl::string_view s) { return AllDigits(StripSign(s)); }

// [+-]?(digits[.digits?]|.digits)([eE][+-]?digits)? containing '.' or an
// exponent, or [+-]?(inf|infinity|nan) in any case.
bool IsFloatSyntax(absl::string_view s) {
  s = StripSign(s);
  if (absl::EqualsIgnoreCase(s, "inf") || absl::EqualsIgnoreCase(s, "infinity") || absl::EqualsIgnoreCase(s, "nan")) {
    return true;
  }
  size_t i = 0;
  auto digits = [&]() {
    size_t start = i;
    while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) {
      ++i;
    }
    return i - start;
  };
  size_t mantissa_digits = digits();
  bool dot = false;
  if (i < s.size() && s[i] == '.') {
    dot = true;
    ++i;
    mantissa_digits += digits();
  }
  if (mantissa_digits == 0) return false;
  bool exponent = false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    exponent = true;
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size() && (dot || exponent);
}

enum class TokenKind { kNone, kBool, kInt, kFloat, kWord, kInvalid };

TokenKind ClassifyToken(absl::string_view t) {
  if (t == "none" || t == "None") return TokenKind::kNone;
  if (t == "true" || t == "True" || t == "false" || t == "False") {
    return TokenKind::kBool;
  }
  if (IsIntSyntax(t)) return TokenKind::kInt;
  if (IsFloatSyntax(t)) return TokenKind::kFloat;
  if (IsBareWord(t)) return TokenKind::kWord;
  return TokenKind::kInvalid;
}

std::string QuoteString(absl::string_view s) {
  std::string out = "'";
  for (char c : s) {
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '\'':
        out += "\\'";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        out += c;
    }
  }
  out += "'";
  return out;
}

// Describes a value for "expected X, got Y" errors.
std::string Describe(const ArgValue& v) {
  return std::visit(
      [&](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "none";
        } else if constexpr (std::is_same_v<T, bool>) {
          return absl::StrCat("bool ", ArgValueToString(v));
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return absl::StrCat("integer ", ArgValueToString(v));
        } else if constexpr (std::is_same_v<T, double>) {
          return absl::StrCat("float ", ArgValueToString(v));
        } else if constexpr (std::is_same_v<T, std::string>) {
          return absl::StrCat("string ", QuoteString(x));
        } else {
          return absl::StrCat("list ", ArgValueToString(v));
        }
      },
      v);
}

// Recursive-descent parser for one spec string.
class SpecParser {
 public:
  explicit SpecParser(absl::string_view text) : text_(text) {}

  absl::StatusOr<MetricSpec> Parse() {
    MetricSpec spec;
    spec.text = std::string(text_);
    SkipSpace();
    spec.name = ParseIdent();
    if (spec.name.empty()) {
      if (AtEnd()) return Error("empty metric name");
      return Error(absl::StrCat("expected a metric name ", Here()));
    }
    SkipSpace();
    if (AtEnd()) return spec;
    if (!Consume('(')) {
      return Error(absl::StrCat("expected '(' or end of spec after '", spec.name, "' ", Here()));
    }
    absl::Status s = ParseArgs(&spec);
    if (!s.ok()) return s;
    SkipSpace();
    if (!AtEnd()) {
      return Error(absl::StrCat("unexpected text after ')': '", text_.substr(pos_), "'"));
    }
    return spec;
  }

 private:
  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("bad metric spec '", text_, "': ", what));
  }

  // "at column N, found 'c'" / "at end of spec" for the current position.
  std::string Here() const {
    if (AtEnd()) return "at end of spec";
    return absl::StrCat("at column ", pos_ + 1, ", found '", text_.substr(pos_, 1), "'");
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }

  void SkipSpace() {
    while (!AtEnd() && IsSpace(text_[pos_])) ++pos_;
  }

  bool Consume(char c) {
    if (AtEnd() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }

  std::string ParseIdent() {
    if (AtEnd() || !IsIdentStart(text_[pos_])) return "";
    size_t start = pos_;
    while (!AtEnd() && IsIdentChar(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  // Parses everything after '(' up to and including ')'.
  absl::Status ParseArgs(MetricSpec* spec) {
    SkipSpace();
    if (Consume(')')) return absl::OkStatus();
    while (true) {
      SkipSpace();
      if (AtEnd()) return Error("missing ')'");
      std::string key = ParseIdent();
      if (key.empty()) {
        return Error(absl::StrCat("expected an argument name (key=value) ", Here()));
      }
      SkipSpace();
      if (!Consume('=')) {
        return Error(absl::StrCat("expected '=' after '", key, "' ", Here()));
      }
      SkipSpace();
      if (AtEnd() || Peek() == ',' || Peek() == ')') {
        return Error(absl::StrCat("missing value for '", key, "'"));
      }
      absl::StatusOr<ArgValue> value = ParseValue(key);
      if (!value.ok()) return value.status();
      for (const auto& [existing, unused] : spec->args) {
        if (existing == key) {
          return Error(absl::StrCat("duplicate argument '", key, "'"));
        }
      }
      spec->args.emplace_back(std::move(key), *std::move(value));
      SkipSpace();
      if (Consume(',')) {
        SkipSpace();
        if (Consume(')')) return absl::OkStatus();  // Trailing comma.
        continue;
      }
      if (Consume(')')) return absl::OkStatus();
      if (AtEnd()) return Error("missing ')'");
      return Error(absl::StrCat("expected ',' or ')' after the value of '", spec->args.back().first, "' ", Here()));
    }
  }

  absl::StatusOr<ArgValue> ParseValue(absl::string_view key) {
    const char c = Peek();
    if (c == '\'' || c == '"') return ParseQuoted(key);
    if (c == '[' || c == '(') return ParseList(key);
    absl::string_view token = ScanToken();
    if (token.empty()) {
      return Error(absl::StrCat("invalid value for '", key, "' ", Here()));
    }
    return TokenValue(token, key);
  }

  absl::string_view ScanToken() {
    size_t start = pos_;
    while (!AtEnd() && !IsTokenEnd(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  absl::StatusOr<ArgValue> TokenValue(absl::string_view t, absl::string_view key) {
    switch (ClassifyToken(t)) {
      case TokenKind::kNone:
        return ArgValue(std::monostate{});
      case TokenKind::kBool:
        return ArgValue(t == "true" || t == "True");
      case TokenKind::kInt: {
        int64_t v;
        if (!absl::SimpleAtoi(t, &v)) {
          return Error(absl::StrCat("integer ", t, " for '", key, "' is out of range"));
        }
        return ArgValue(v);
      }
      case TokenKind::kFloat: {
        double v;
        if (!absl::SimpleAtod(t, &v)) {
          return Error(absl::StrCat("invalid number ", t, " for '", key, "'"));
        }
        return ArgValue(v);
      }
      case TokenKind::kWord:
        return ArgValue(std::string(t));
      case TokenKind::kInvalid:
        break;
    }
    return Error(absl::StrCat("invalid value '", t, "' for '", key, "' (quote strings that are not plain words)"));
  }

  absl::StatusOr<ArgValue> ParseQuoted(absl::string_view key) {
    const char quote = text_[pos_++];
    std::string out;
    while (!AtEnd()) {
      char c = text_[pos_++];
      if (c == quote) return ArgValue(std::move(out));
      if (c == '\\' && !AtEnd()) {
        char e = text_[pos_++];
        switch (e) {
          case '\\':
          case '\'':
          case '"':
            out += e;
            break;
          case 'n':
            out += '\n';
            break;
          case 't':
            out += '\t';
            break;
          default:  // Unknown escapes are kept verbatim, as in Python.
            out += '\\';
            out += e;
        }
        continue;
      }
      out += c;
    }
    return Error(absl::StrCat("unterminated string for '", key, "'"));
  }

  // ParseList reads `[...]` (or a tuple, `(...)`) of numbers or of strings.
  absl::StatusOr<ArgValue> ParseList(absl::string_view key) {
    const char close = Peek() == '(' ? ')' : ']';
    ++pos_;  // '[' or '('
    std::vector<int64_t> ints;
    std::vector<double> doubles;
    std::vector<std::string> strings;
    bool any_double = false;
    const std::string missing = absl::StrCat("missing '", std::string(1, close), "' for '", key, "'");
    SkipSpace();
    if (Consume(close)) return ArgValue(std::move(ints));
    while (true) {
      SkipSpace();
      if (AtEnd()) return Error(missing);
      if (Peek() == '[' || Peek() == '(') {
        return Error(absl::StrCat("nested lists are not supported (in '", key, "')"));
      }
      if (Peek() == ',' || Peek() == ']' || Peek() == ')') {
        return Error(absl::StrCat("invalid list element for '", key, "' ", Here()));
      }
      absl::StatusOr<ArgValue> v;
      if (Peek() == '\'' || Peek() == '"') {
        v = ParseQuoted(key);
      } else {
        absl::string_view token = ScanToken();
        if (token.empty()) return Error(absl::StrCat("invalid list element for '", key, "' ", Here()));
        v = TokenValue(token, key);
      }
      if (!v.ok()) return v.status();
      if (const int64_t* i = std::get_if<int64_t>(&*v)) {
        ints.push_back(*i);
        doubles.push_back(static_cast<double>(*i));
      } else if (const double* d = std::get_if<double>(&*v)) {
        any_double = true;
        doubles.push_back(*d);
      } else if (std::string* text = std::get_if<std::string>(&*v)) {
        strings.push_back(std::move(*text));
      } else {
        return Error(
            absl::StrCat("list elements for '", key, "' must be numbers or strings, got ", ArgValueToString(*v)));
      }
      if (!strings.empty() && !doubles.empty()) {
        return Error(absl::StrCat("list elements for '", key, "' must be all numbers or all strings"));
      }
      SkipSpace();
      if (Consume(',')) {
        SkipSpace();
        if (Consume(close)) break;  // Trailing comma.
        continue;
      }
      if (Consume(close)) break;
      if (AtEnd()) return Error(missing);
      return Error(absl::StrCat("expected ',' or '", std::string(1, close), "' in the list for '", key, "' ", Here()));
    }
    if (!strings.empty()) return ArgValue(std::move(strings));
    if (any_double) return ArgValue(std::move(doubles));
    return ArgValue(std::move(ints));
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

// Levenshtein distance, for "did you mean" suggestions.
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string QuotedList(absl::Span<const absl::string_view> names) {
  std::vector<std::string> quoted;
  quoted.reserve(names.size());
  for (absl::string_view n : names) quoted.push_back(absl::StrCat("'", n, "'"));
  return absl::StrJoin(quoted, ", ");
}

}  // namespace

std::string ArgValueToString(const ArgValue& value) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "none";
        } else if constexpr (std::is_same_v<T, bool>) {
          return x ? "true" : "false";
        } else if constexpr (std::is_same_v<T, int64_t>) {
          return absl::StrCat(x);
        } else if constexpr (std::is_same_v<T, double>) {
          return support::FormatDouble(x);
        } else if constexpr (std::is_same_v<T, std::string>) {
          if (ClassifyToken(x) == TokenKind::kWord) return x;
          return QuoteString(x);
        } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
          return absl::StrCat("[", absl::StrJoin(x, ", "), "]");
        } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
          std::vector<std::string> parts;
          parts.reserve(x.size());
          for (const std::string& text : x) parts.push_back(QuoteString(text));
          return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
        } else {
          std::vector<std::string> parts;
          parts.reserve(x.size());
          for (double d : x) parts.push_back(support::FormatDouble(d));
          return absl::StrCat("[", absl::StrJoin(parts, ", "), "]");
        }
      },
      value);
}

absl::StatusOr<MetricSpec> ParseMetricSpec(absl::string_view text) { return SpecParser(text).Parse(); }

namespace {

// A getter's default in spec syntax for the catalogue; "" when it has none.
template <typename T>
std::string DefaultText(const std::optional<T>& default_value) {
  return default_value.has_value() ? ArgValueToString(ArgValue(*default_value)) : "";
}

}  // namespace

SpecArgs::SpecArgs(MetricSpec spec) : spec_(std::move(spec)), used_(spec_.args.size(), false) {}

bool SpecArgs::Has(absl::string_view name) const {
  for (const auto& [key, value] : spec_.args) {
    if (key == name) return true;
  }
  return false;
}

const ArgValue* SpecArgs::Lookup(absl::string_view name, absl::string_view type, std::string default_text,
                                 bool required) {
  if (std::find(requested_.begin(), requested_.end(), name) == requested_.end()) {
    requested_.emplace_back(name);
    requests_.push_back(Request{std::string(name), std::string(type), std::move(default_text), required});
  }
  for (size_t i = 0; i < spec_.args.size(); ++i) {
    if (spec_.args[i].first == name) {
      used_[i] = true;
      return &spec_.args[i].second;
    }
  }
  return nullptr;
}

const ArgValue* SpecArgs::Find(absl::string_view name, absl::string_view type, absl::string_view default_text) {
  return Lookup(name, type, std::string(default_text));
}

absl::Status SpecArgs::InvalidArgument(absl::string_view message) const {
  return absl::InvalidArgumentError(absl::StrCat(spec_.name, ": ", message));
}

absl::Status SpecArgs::MissingError(absl::string_view name) const {
  // A misspelling of it is the likely cause: say so (CheckAllUsed would,
  // but it runs after the builder gave up here).
  for (const auto& [key, value] : spec_.args) {
    if (key != name && EditDistance(key, std::string(name)) <= std::max<size_t>(1, name.size() / 3)) {
      return InvalidArgument(absl::StrCat("missing required argument '", name, "' (unknown argument '", key,
                                          "': did you mean '", name, "'?)"));
    }
  }
  return InvalidArgument(absl::StrCat("missing required argument '", name, "'"));
}

absl::Status SpecArgs::TypeError(absl::string_view name, absl::string_view expected, const ArgValue& got) const {
  return InvalidArgument(absl::StrCat("argument '", name, "' must be ", expected, ", got ", Describe(got)));
}

absl::StatusOr<int64_t> SpecArgs::GetInt(absl::string_view name, std::optional<int64_t> default_value) {
  const ArgValue* v = Lookup(name, "int", DefaultText(default_value), !default_value.has_value());
  if (v == nullptr) {
    if (default_value.has_value()) return *default_value;
    return MissingError(name);
  }
  if (const int64_t* i = std::get_if<int64_t>(v)) return *i;
  return TypeError(name, "an integer", *v);
}

absl::StatusOr<std::optional<int64_t>> SpecArgs::GetOptionalInt(absl::string_view name) {
  const ArgValue* v = Lookup(name, "int", "none");
  if (v == nullptr || std::holds_alternative<std::monostate>(*v)) {
    return std::optional<int64_t>();
  }
  if (const int64_t* i = std::get_if<int64_t>(v)) {
    return std::optional<int64_t>(*i);
  }
  return TypeError(name, "an integer or none", *v);
}

absl::StatusOr<double> SpecArgs::GetDouble(absl::string_view name, std::optional<double> default_value) {
  const ArgValue* v = Lookup(name, "float", DefaultText(default_value), !default_value.has_value());
  if (v == nullptr) {
    if (default_value.has_value()) return *default_value;
    return MissingError(name);
  }
  if (const double* d = std::get_if<double>(v)) {
    if (!std::isfinite(*d)) return TypeError(name, "a finite number", *v);
    return *d;
  }
  if (const int64_t* i = std::get_if<int64_t>(v)) return static_cast<double>(*i);
  return TypeError(name, "a number", *v);
}

absl::StatusOr<std::optional<double>> SpecArgs::GetOptionalDouble(absl::string_view name) {
  const ArgValue* v = Lookup(name, "float", "none");
  if (v == nullptr || std::holds_alternative<std::monostate>(*v)) {
    return std::optional<double>();
  }
  if (const double* d = std::get_if<double>(v)) {
    if (!std::isfinite(*d)) return TypeError(name, "a finite number or none", *v);
    return std::optional<double>(*d);
  }
  if (const int64_t* i = std::get_if<int64_t>(v)) {
    return std::optional<double>(static_cast<double>(*i));
  }
  return TypeError(name, "a number or none", *v);
}

absl::StatusOr<bool> SpecArgs::GetBool(absl::string_view name, std::optional<bool> default_value) {
  const ArgValue* v = Lookup(name, "bool", DefaultText(default_value), !default_value.has_value());
  if (v == nullptr) {
    if (default_value.has_value()) return *default_value;
    return MissingError(name);
  }
  if (const bool* b = std::get_if<bool>(v)) return *b;
  return TypeError(name, "true or false", *v);
}

absl::StatusOr<std::string> SpecArgs::GetString(absl::string_view name, std::optional<std::string> default_value) {
  const ArgValue* v = Lookup(name, "string", DefaultText(default_value), !default_value.has_value());
  if (v == nullptr) {
    if (default_value.has_value()) return *std::move(default_value);
    return MissingError(name);
  }
  if (const std::string* s = std::get_if<std::string>(v)) return *s;
  return TypeError(name, "a string", *v);
}

absl::StatusOr<std::optional<std::string>> SpecArgs::GetOptionalString(absl::string_view name) {
  const ArgValue* v = Lookup(name, "string", "none");
  if (v == nullptr || std::holds_alternative<std::monostate>(*v)) {
    return std::optional<std::string>();
  }
  if (const std::string* s = std::get_if<std::string>(v)) {
    return std::optional<std::string>(*s);
  }
  return TypeError(name, "a string or none", *v);
}

absl::StatusOr<std::string> SpecArgs::GetEnum(absl::string_view name, absl::Span<const absl::string_view> allowed,
                                              std::optional<std::string> default_value) {
  auto is_allowed = [&](absl::string_view s) { return std::find(allowed.begin(), allowed.end(), s) != allowed.end(); };
  const ArgValue* v = Lookup(name, absl::StrCat("one of ", absl::StrJoin(allowed, ", ")), default_value.value_or(""),
                             !default_value.has_value());
  if (v == nullptr) {
    if (!default_value.has_value()) return MissingError(name);
    if (!is_allowed(*default_value)) {
      return absl::InternalError(absl::StrCat(spec_.name, ": default '", *default_value, "' for argument '", name,
                                              "' is not one of ", QuotedList(allowed)));
    }
    return *std::move(default_value);
  }
  const std::string* s = std::get_if<std::string>(v);
  if (s != nullptr && is_allowed(*s)) return *s;
  if (std::holds_alternative<std::monostate>(*v) && is_allowed("none")) {
    return std::string("none");
  }
  return TypeError(name, absl::StrCat("one of ", QuotedList(allowed)), *v);
}

absl::StatusOr<std::vector<double>> SpecArgs::GetDoubleList(absl::string_view name,
                                                            std::optional<std::vector<double>> default_value) {
  const ArgValue* v = Lookup(name, "float list", DefaultText(default_value), !default_value.has_value());
  if (v == nullptr) {
    if (default_value.has_value()) return *std::move(default_value);
    return MissingError(name);
  }
  if (const auto* d = std::get_if<std::vector<double>>(v)) {
    for (double x : *d) {
      if (!std::isfinite(x)) return TypeError(name, "a list of finite numbers", *v);
    }
    return *d;
  }
  if (const auto* i = std::get_if<std::vector<int64_t>>(v)) {
    return std::vector<double>(i->begin(), i->end());
  }
  return TypeError(name, "a list of numbers", *v);
}

absl::StatusOr<std::vector<int64_t>> SpecArgs::GetIntList(absl::string_view name,
                                                          std::optional<std::vector<int64_t>> default_value) {
  const ArgValue* v = Lookup(name, "int list", DefaultText(default_value), !default_value.has_value());
  if (v == nullptr) {
    if (default_value.has_value()) return *std::move(default_value);
    return MissingError(name);
  }
  if (const auto* i = std::get_if<std::vector<int64_t>>(v)) return *i;
  return TypeError(name, "a list of integers", *v);
}

absl::StatusOr<std::vector<std::string>> SpecArgs::GetStringList(
    absl::string_view name, std::optional<std::vector<std::string>> default_value) {
  const ArgValue* v = Lookup(name, "string list", DefaultText(default_value), !default_value.has_value());
  if (v == nullptr) {
    if (default_value.has_value()) return *std::move(default_value);
    return MissingError(name);
  }
  if (const auto* list = std::get_if<std::vector<std::string>>(v)) return *list;
  if (const auto* one = std::get_if<std::string>(v)) return std::vector<std::string>{*one};
  return TypeError(name, "a string or a list of strings", *v);
}

absl::Status SpecArgs::CheckAllUsed() const {
  std::vector<std::string> problems;
  for (size_t i = 0; i < spec_.args.size(); ++i) {
    if (used_[i]) continue;
    const std::string& key = spec_.args[i].first;
    std::string problem = absl::StrCat("'", key, "'");
    // Suggest the closest requested name within a small edit distance.
    const std::string* best = nullptr;
    size_t best_distance = 0;
    for (const std::string& r : requested_) {
      size_t d = EditDistance(key, r);
      if (d <= std::max<size_t>(1, std::min(key.size(), r.size()) / 3) && (best == nullptr || d < best_distance)) {
        best = &r;
        best_distance = d;
      }
    }
    if (best != nullptr) absl::StrAppend(&problem, " (did you mean '", *best, "'?)");
    problems.push_back(std::move(problem));
  }
  if (problems.empty()) return absl::OkStatus();
  std::string message =
      absl::StrCat(problems.size() == 1 ? "unknown argument " : "unknown arguments ", absl::StrJoin(problems, ", "));
  if (requested_.empty()) {
    absl::StrAppend(&message, "; this metric takes no arguments");
  } else {
    std::vector<absl::string_view> names(requested_.begin(), requested_.end());
    absl::StrAppend(&message, "; accepted arguments: ", QuotedList(names));
  }
  return InvalidArgument(message);
}

}  // namespace tally::metrics
