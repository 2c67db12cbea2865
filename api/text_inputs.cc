#include "api/text_inputs.h"

#include <ATen/ATen.h>

#include <locale.h>
#include <wctype.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "engine/io/regular_file.h"
#include "metrics/registry.h"
#include "metrics/spec.h"
#include "support/status_macros.h"

namespace tally {
namespace {

// Decoded is one code point and the bytes it took; bytes == 0 when the
// sequence at the start of the input is not well-formed UTF-8.
struct Decoded {
  char32_t code = 0;
  size_t bytes = 0;
};

Decoded DecodeOne(absl::string_view s) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const unsigned char lead = byte(0);
  if (lead < 0x80) return {lead, 1};
  size_t n = 0;
  char32_t code = 0, min = 0;
  if ((lead & 0xE0) == 0xC0) {
    n = 2, code = lead & 0x1F, min = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    n = 3, code = lead & 0x0F, min = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    n = 4, code = lead & 0x07, min = 0x10000;
  } else {
    return {};
  }
  if (s.size() < n) return {};
  for (size_t i = 1; i < n; ++i) {
    if ((byte(i) & 0xC0) != 0x80) return {};
    code = (code << 6) | (byte(i) & 0x3F);
  }
  // Overlong forms, UTF-16 surrogates and code points past Unicode.
  if (code < min || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return {};
  return {code, n};
}

// IsSpace is Python's str.isspace() for one code point.
bool IsSpace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// AppendUtf8 appends code point `c` to `out`.
void AppendUtf8(char32_t c, std::string& out) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// CodePoints decodes valid UTF-8 (a bad byte reads as U+FFFD).
std::u32string CodePoints(absl::string_view s) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    Decoded d = DecodeOne(s.substr(i));
    if (d.bytes == 0) d = {0xFFFD, 1};
    out += d.code;
    i += d.bytes;
  }
  return out;
}

// Lowercase is Python's str.lower() by the C library's Unicode tables
// (C.UTF-8): the simple case mapping, so U+0130 becomes 'i' where Python
// writes "i" and a combining dot.
std::string Lowercase(absl::string_view token) {
  static const locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  std::string out;
  for (char32_t c : CodePoints(token)) {
    AppendUtf8(utf8 != static_cast<locale_t>(nullptr) ? static_cast<char32_t>(towlower_l(c, utf8))
                                                      : (c < 0x80 ? static_cast<char32_t>(std::tolower(c)) : c),
               out);
  }
  return out;
}

// Sub2 is Python's re.sub of a two-code-point pattern `first` `second` by
// `emit`, scanning left to right without overlaps as re.sub does.
template <typename First, typename Second, typename Emit>
std::u32string Sub2(const std::u32string& s, First first, Second second, Emit emit) {
  std::u32string out;
  for (size_t i = 0; i < s.size();) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      emit(s[i], s[i + 1], out);
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

// Entities replaces the four XML entities, one at a time in this order (as
// chained str.replace and re.sub do).
std::string Entities(std::string line) {
  if (absl::StrContains(line, "&")) {
    for (const auto& [from, to] :
         {std::pair<const char*, const char*>{"&quot;", "\""}, {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}}) {
      line = absl::StrReplaceAll(line, {{from, to}});
    }
  }
  return line;
}

// SpacePunctuation is the regular expressions mteval-v13a.pl and Tercom
// share, on " line ": ASCII symbols set apart, then a period or comma
// beside a non-digit, and a hyphen after a digit; with `possessive`
// (Tercom) "'s " becomes " 's " after the symbols. (Tercom's "'s$" never
// matches: the line ends with the space added.)
std::string SpacePunctuation(absl::string_view line, bool possessive) {
  const auto digit = [](char32_t c) { return c >= U'0' && c <= U'9'; };
  const auto not_digit = [&](char32_t c) { return !digit(c); };
  const auto period_or_comma = [](char32_t c) { return c == U'.' || c == U','; };
  // [\{-\~\[-\` -\&\(-\+\:-\@\/]: ASCII punctuation and symbols but ' , - .
  const auto symbol = [](char32_t c) {
    return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) ||
           (c >= 0x28 && c <= 0x2B) || (c >= 0x3A && c <= 0x40) || c == 0x2F;
  };
  std::u32string s = CodePoints(absl::StrCat(" ", line, " "));
  std::u32string spaced;
  for (char32_t c : s) {
    if (symbol(c)) {
      spaced += {U' ', c, U' '};
    } else {
      spaced += c;
    }
  }
  if (possessive) {
    std::u32string out;
    for (size_t i = 0; i < spaced.size();) {
      if (spaced.compare(i, 3, U"'s ") == 0) {
        out += U" 's ";
        i += 3;
      } else {
        out += spaced[i++];
      }
    }
    spaced = std::move(out);
  }
  // "\1 \2 " and " \1 \2": the two code points set apart.
  const auto space_after = [](char32_t a, char32_t b, std::u32string& out) { out += {a, U' ', b, U' '}; };
  const auto space_before = [](char32_t a, char32_t b, std::u32string& out) { out += {U' ', a, U' ', b}; };
  spaced = Sub2(spaced, not_digit, period_or_comma, space_after);
  spaced = Sub2(spaced, period_or_comma, not_digit, space_before);
  spaced = Sub2(
      spaced, digit, [](char32_t c) { return c == U'-'; }, space_after);
  std::string out;
  for (char32_t c : spaced) AppendUtf8(c, out);
  return out;
}

// Tokenize13a is sacreBLEU's 13a tokenizer (mteval-v13a.pl), as
// TorchMetrics 1.5.2 writes it: the language-independent replacements, then
// its four regular expressions; whitespace is collapsed by the split after.
std::string Tokenize13a(absl::string_view sentence) {
  std::string line = absl::StrReplaceAll(sentence, {{"<skipped>", ""}});
  line = absl::StrReplaceAll(line, {{"-\n", ""}});
  line = absl::StrReplaceAll(line, {{"\n", " "}});
  return SpacePunctuation(Entities(std::move(line)), /*possessive=*/false);
}

// CJK ideographs and radicals, and the CJK and full-width punctuation,
// that Tercom's asian support sets apart (TorchMetrics' _normalize_asian:
// its kana rules are anchored at the line's start, which normalization
// made a space, so they never match).
bool CjkIdeograph(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x31C0 && c <= 0x31EF) ||
         (c >= 0x2E80 && c <= 0x2EFF) || (c >= 0x3300 && c <= 0x33FF) || (c >= 0xF900 && c <= 0xFAFF) ||
         (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0x3200 && c <= 0x3F22);
}
bool CjkPunctuation(char32_t c) {
  return c == 0x3001 || c == 0x3002 || (c >= 0x3008 && c <= 0x3011) || (c >= 0x3014 && c <= 0x301F) ||
         (c >= 0xFF61 && c <= 0xFF65) || c == 0x30FB || c == 0xFF0E || c == 0xFF0C || c == 0xFF1F || c == 0xFF1A ||
         c == 0xFF1B || c == 0xFF01 || c == 0xFF02 || c == 0xFF08 || c == 0xFF09;
}

// TokenizeTercom is TorchMetrics' _TercomTokenizer (functional/text/ter.py)
// before its final split: lowercased first, then the normalization and the
// punctuation removal its flags ask for.
std::string TokenizeTercom(absl::string_view sentence, const Tokenizer& t) {
  std::string line = t.lowercase ? Lowercase(sentence) : std::string(sentence);
  if (t.normalize) {
    line = absl::StrReplaceAll(line, {{"\n-", ""}});
    line = absl::StrReplaceAll(line, {{"\n", " "}});
    line = SpacePunctuation(Entities(std::move(line)), /*possessive=*/true);
  }
  if (!t.normalize && !t.no_punctuation) return line;
  std::string out;
  for (char32_t c : CodePoints(line)) {
    const bool cjk_punctuation = t.asian && CjkPunctuation(c);
    const bool dropped =
        t.no_punctuation &&
        ((c < 0x80 && absl::string_view(".,?:;!\"()").find(static_cast<char>(c)) != absl::string_view::npos) ||
         cjk_punctuation);
    // Normalization spaces a mark before the removal drops it: its spaces stay.
    const bool spaced = t.normalize && t.asian && (CjkIdeograph(c) || cjk_punctuation);
    if (spaced) out += ' ';
    if (!dropped) AppendUtf8(c, out);
    if (spaced) out += ' ';
  }
  return out;
}

// StripSpace is Python's str.strip(): whitespace off both ends.
absl::string_view StripSpace(absl::string_view s) {
  std::vector<size_t> starts;  // of each code point
  for (size_t i = 0; i < s.size();) {
    starts.push_back(i);
    const size_t n = DecodeOne(s.substr(i)).bytes;
    i += n == 0 ? 1 : n;
  }
  size_t first = 0, last = starts.size();
  const auto space = [&](size_t k) { return IsSpace(DecodeOne(s.substr(starts[k])).code); };
  while (first < last && space(first)) ++first;
  while (last > first && space(last - 1)) --last;
  if (first == last) return {};
  const size_t end = last == starts.size() ? s.size() : starts[last];
  return s.substr(starts[first], end - starts[first]);
}

// NormalizeAnswer is SQuAD's normalize_answer but the final split:
// lowercased, ASCII punctuation removed, then every article (a, an, the)
// between word boundaries (Python's \b: \w is a letter, digit or '_')
// replaced by a space.
std::string NormalizeAnswer(absl::string_view text) {
  static const locale_t utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(nullptr));
  std::u32string s;
  for (char32_t c : CodePoints(Lowercase(text))) {
    if (!(c < 0x80 && std::ispunct(static_cast<int>(c)))) s += c;
  }
  const auto word = [&](size_t i) {
    if (i >= s.size()) return false;
    const char32_t c = s[i];
    if (c == U'_') return true;
    if (utf8 == static_cast<locale_t>(nullptr)) return c < 0x80 && std::isalnum(static_cast<int>(c));
    return iswalnum_l(static_cast<wint_t>(c), utf8) != 0;
  };
  std::string out;
  for (size_t i = 0; i < s.size();) {
    size_t matched = 0;
    if (i == 0 || !word(i - 1)) {
      // re's alternation tries a, an, the in turn; the first followed by a boundary wins.
      for (std::u32string_view article : {U"a", U"an", U"the"}) {
        if (s.compare(i, article.size(), article) == 0 && !word(i + article.size())) {
          matched = article.size();
          break;
        }
      }
    }
    if (matched > 0) {
      out += ' ';
      i += matched;
    } else {
      AppendUtf8(s[i++], out);
    }
  }
  return out;
}

// SeparatePunctuation sets apart one ASCII punctuation mark at the end of
// each word of two or more code points, else one at its start (chrF++'s
// words, as sacreBLEU and TorchMetrics split them).
std::vector<std::string> SeparatePunctuation(std::vector<std::string> words) {
  const auto punct = [](char c) { return c > 0 && std::ispunct(static_cast<unsigned char>(c)); };
  std::vector<std::string> out;
  for (std::string& w : words) {
    if (CodePoints(w).size() > 1 && punct(w.back())) {
      out.push_back(w.substr(0, w.size() - 1));
      out.push_back(w.substr(w.size() - 1));
    } else if (CodePoints(w).size() > 1 && punct(w.front())) {
      out.push_back(w.substr(0, 1));
      out.push_back(w.substr(1));
    } else {
      out.push_back(std::move(w));
    }
  }
  return out;
}

}  // namespace

std::string TokenizerName(Tokenizer t) {
  constexpr absl::string_view kNames[] = {"words",       "characters",      "13a words",  "characters without spaces",
                                          "ROUGE words", "chrF characters", "chrF words", "SQuAD words",
                                          "TER words"};
  return absl::StrCat(kNames[t.split], t.lowercase ? ", lowercased" : "", t.with_words ? ", and chrF words" : "");
}

absl::StatusOr<Tokenizer> TokenizerFor(absl::string_view spec_text) {
  TALLY_ASSIGN_OR_RETURN(metrics::MetricSpec spec, metrics::ParseMetricSpec(spec_text));
  const std::string& metric = spec.name;
  if (metric == "char_error_rate" || metric == "edit_distance") return Tokenizer::kCharacters;
  if (metric == "sacre_bleu_score") {
    metrics::SpecArgs args(spec);
    TALLY_ASSIGN_OR_RETURN(const std::string tokenize, args.GetString("tokenize", "13a"));
    TALLY_ASSIGN_OR_RETURN(const bool lowercase, args.GetBool("lowercase", false));
    if (tokenize == "13a") return Tokenizer(Tokenizer::k13a, lowercase);
    if (tokenize == "none") return Tokenizer(Tokenizer::kWords, lowercase);
    if (tokenize == "char") return Tokenizer(Tokenizer::kGlyphs, lowercase);
    return absl::InvalidArgumentError(absl::StrCat(
        metric, ": text is split with tokenize='13a', 'none' or 'char' here; give token ids for '", tokenize, "'"));
  }
  if (metric == "rouge_score") {
    metrics::SpecArgs args(spec);
    TALLY_ASSIGN_OR_RETURN(const bool stem, args.GetBool("use_stemmer", false));
    if (stem) {
      return absl::InvalidArgumentError(
          "rouge_score: text is not stemmed here (no Porter stemmer); give token ids of stemmed words");
    }
    return Tokenizer(Tokenizer::kRouge);
  }
  if (metric == "squad") return Tokenizer(Tokenizer::kSquad);
  if (metric == "translation_edit_rate") {
    metrics::SpecArgs args(spec);
    Tokenizer t(Tokenizer::kTercom);
    TALLY_ASSIGN_OR_RETURN(t.lowercase, args.GetBool("lowercase", true));
    TALLY_ASSIGN_OR_RETURN(t.normalize, args.GetBool("normalize", false));
    TALLY_ASSIGN_OR_RETURN(t.no_punctuation, args.GetBool("no_punctuation", false));
    TALLY_ASSIGN_OR_RETURN(t.asian, args.GetBool("asian_support", false));
    return t;
  }
  if (metric == "chrf_score") {
    metrics::SpecArgs args(spec);
    TALLY_ASSIGN_OR_RETURN(const bool lowercase, args.GetBool("lowercase", false));
    TALLY_ASSIGN_OR_RETURN(const bool whitespace, args.GetBool("whitespace", false));
    TALLY_ASSIGN_OR_RETURN(const int64_t n_word_order, args.GetInt("n_word_order", 2));
    Tokenizer t(whitespace ? Tokenizer::kCharacters : Tokenizer::kChrfCharacters, lowercase);
    t.with_words = n_word_order > 0;
    return t;
  }
  const metrics::MetricInfo* info = metrics::FindMetric(metric);
  if (info != nullptr && info->domain == "text" && metric != "perplexity") return Tokenizer::kWords;
  return absl::InvalidArgumentError(absl::StrCat(metric, " takes no text: give it arrays (.npy)"));
}

absl::Status CheckUtf8(absl::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const Decoded d = DecodeOne(text.substr(i));
    if (d.bytes == 0) return absl::InvalidArgumentError(absl::StrCat("invalid UTF-8 at byte ", i));
    i += d.bytes;
  }
  return absl::OkStatus();
}

std::vector<std::string> Tokenize(absl::string_view sentence, Tokenizer t) {
  std::string tokenized;
  if (t.split == Tokenizer::k13a) {
    tokenized = Tokenize13a(sentence);
    sentence = tokenized;
  } else if (t.split == Tokenizer::kRouge) {
    // rouge-score's normalisation: lowercased, every run of characters
    // outside [a-z0-9] a separator.
    tokenized = Lowercase(sentence);
    for (char& c : tokenized) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) c = ' ';
    }
    sentence = tokenized;
  } else if (t.split == Tokenizer::kChrfCharacters) {
    sentence = StripSpace(sentence);
  } else if (t.split == Tokenizer::kSquad) {
    tokenized = NormalizeAnswer(sentence);
    sentence = tokenized;
  } else if (t.split == Tokenizer::kTercom) {
    tokenized = TokenizeTercom(sentence, t);
    sentence = tokenized;
  }
  std::vector<std::string> out;
  size_t word_begin = 0;
  bool in_word = false;
  const bool characters =
      t.split == Tokenizer::kCharacters || t.split == Tokenizer::kGlyphs || t.split == Tokenizer::kChrfCharacters;
  for (size_t i = 0; i < sentence.size();) {
    Decoded d = DecodeOne(sentence.substr(i));
    if (d.bytes == 0) d = {0xFFFD, 1};  // callers check first; never loop
    const bool space = IsSpace(d.code);
    // Characters but those each split leaves out: sacreBLEU's 'char' all
    // whitespace, chrF the spaces (str.replace(" ", "")).
    const bool skipped =
        (t.split == Tokenizer::kGlyphs && space) || (t.split == Tokenizer::kChrfCharacters && d.code == U' ');
    if (characters) {
      if (!skipped) out.emplace_back(sentence.substr(i, d.bytes));
    } else if (space) {
      if (in_word) out.emplace_back(sentence.substr(word_begin, i - word_begin));
      in_word = false;
    } else if (!in_word) {
      in_word = true;
      word_begin = i;
    }
    i += d.bytes;
  }
  if (in_word) out.emplace_back(sentence.substr(word_begin));
  if (t.split == Tokenizer::kChrfWords) out = SeparatePunctuation(std::move(out));
  if (t.lowercase) {
    for (std::string& token : out) token = Lowercase(token);
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ReadTextLines(const std::string& path) {
  absl::StatusOr<std::string> bytes = io::ReadRegularFile(path);
  if (!bytes.ok()) return bytes.status();
  absl::string_view text = *bytes;
  if (absl::StartsWith(text, "\xEF\xBB\xBF")) text.remove_prefix(3);
  std::vector<std::string> lines;
  if (text.empty()) return lines;
  if (absl::EndsWith(text, "\n")) text.remove_suffix(1);
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::EndsWith(line, "\r")) line.remove_suffix(1);
    if (absl::Status s = CheckUtf8(line); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, " line ", lines.size() + 1, ": ", s.message()));
    }
    lines.emplace_back(line);
  }
  return lines;
}

int64_t Vocabulary::Id(absl::string_view token) {
  return ids_.try_emplace(std::string(token), static_cast<int64_t>(ids_.size())).first->second;
}

absl::StatusOr<at::Tensor> TokenIds(const std::vector<std::string>& sentences, Tokenizer t, Vocabulary& vocab) {
  std::vector<std::vector<int64_t>> rows;
  rows.reserve(sentences.size());
  int64_t width = 1;
  for (size_t i = 0; i < sentences.size(); ++i) {
    if (absl::Status s = CheckUtf8(sentences[i]); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("sentence ", i + 1, ": ", s.message()));
    }
    std::vector<int64_t>& row = rows.emplace_back();
    for (const std::string& token : Tokenize(sentences[i], t)) row.push_back(vocab.Id(token));
    width = std::max(width, static_cast<int64_t>(row.size()));
  }
  at::Tensor ids = at::full({static_cast<int64_t>(rows.size()), width}, -1, at::kLong);
  int64_t* data = ids.data_ptr<int64_t>();
  for (size_t i = 0; i < rows.size(); ++i) std::copy(rows[i].begin(), rows[i].end(), data + i * width);
  return ids;
}

}  // namespace tally
