#include "api/text_inputs.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/io/regular_file.h"
#include "metrics/registry.h"

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

}  // namespace

absl::string_view TokenizerName(Tokenizer t) { return t == Tokenizer::kWords ? "words" : "characters"; }

absl::StatusOr<Tokenizer> TokenizerFor(absl::string_view metric) {
  if (metric == "char_error_rate" || metric == "edit_distance") return Tokenizer::kCharacters;
  const metrics::MetricInfo* info = metrics::FindMetric(metric);
  if (info != nullptr && info->domain == "text") return Tokenizer::kWords;
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

std::vector<absl::string_view> Tokenize(absl::string_view sentence, Tokenizer t) {
  std::vector<absl::string_view> out;
  size_t word_begin = 0;
  bool in_word = false;
  for (size_t i = 0; i < sentence.size();) {
    Decoded d = DecodeOne(sentence.substr(i));
    if (d.bytes == 0) d = {0xFFFD, 1};  // callers check first; never loop
    if (t == Tokenizer::kCharacters) {
      out.push_back(sentence.substr(i, d.bytes));
    } else if (IsSpace(d.code)) {
      if (in_word) out.push_back(sentence.substr(word_begin, i - word_begin));
      in_word = false;
    } else if (!in_word) {
      in_word = true;
      word_begin = i;
    }
    i += d.bytes;
  }
  if (in_word) out.push_back(sentence.substr(word_begin));
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
    for (absl::string_view token : Tokenize(sentences[i], t)) row.push_back(vocab.Id(token));
    width = std::max(width, static_cast<int64_t>(row.size()));
  }
  at::Tensor ids = at::full({static_cast<int64_t>(rows.size()), width}, -1, at::kLong);
  int64_t* data = ids.data_ptr<int64_t>();
  for (size_t i = 0; i < rows.size(); ++i) std::copy(rows[i].begin(), rows[i].end(), data + i * width);
  return ids;
}

}  // namespace tally
