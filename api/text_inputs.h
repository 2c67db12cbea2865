// Text as token ids: the sentences of a server or of a file (one a line,
// UTF-8) split as TorchMetrics splits them for a metric, and numbered in one
// vocabulary shared by preds and target, so that the text metrics (which
// read int64 ids [N, L], -1 padding) give TorchMetrics' values on strings.
#ifndef TALLY_API_TEXT_INPUTS_H_
#define TALLY_API_TEXT_INPUTS_H_

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tally {

// Tokenizer is how a sentence is split into units, as TorchMetrics splits
// it for a metric.
struct Tokenizer {
  enum Split : uint8_t {
    kWords,           // Python's str.split(): runs of Unicode whitespace separate words
    kCharacters,      // Unicode code points, spaces included (list(str))
    k13a,             // sacreBLEU's 13a (mteval-v13a: punctuation set apart), then words
    kGlyphs,          // sacreBLEU's 'char': code points, whitespace left out
    kRouge,           // rouge-score's: lowercased runs of [a-z0-9]
    kChrfCharacters,  // chrF's: code points of str.strip() but the spaces (U+0020)
    kChrfWords,       // chrF++'s: words, an ASCII punctuation mark at a word's end (else start) set apart
    kSquad,           // SQuAD's normalize_answer: lowercased, punctuation and articles removed, then words
    kTercom,          // TER's: lowercase first, then the flags below, then words
  };
  Split split = kWords;
  bool lowercase = false;  // each token lowercased (Unicode simple case mapping)
  // with_words: chrF++ also reads each text input's words, as input
  // "<name>_words" (split kChrfWords, lowercased alike).
  bool with_words = false;
  // kTercom's flags (translation_edit_rate's arguments): `normalize` sets
  // punctuation apart as 13a does (and 's), `no_punctuation` drops
  // . , ? : ; ! " ( ), `asian` also spaces CJK ideographs and CJK
  // punctuation (with normalize) or drops that punctuation.
  bool normalize = false;
  bool no_punctuation = false;
  bool asian = false;

  Tokenizer(Split s = kWords, bool lower = false) : split(s), lowercase(lower) {}  // NOLINT: implicit
  friend bool operator==(const Tokenizer& a, const Tokenizer& b) {
    return a.split == b.split && a.lowercase == b.lowercase && a.with_words == b.with_words &&
           a.normalize == b.normalize && a.no_punctuation == b.no_punctuation && a.asian == b.asian;
  }
};

// TokenizerName is "words", "characters", "13a words", ..., then
// ", lowercased" and ", and chrF words" where they apply.
std::string TokenizerName(Tokenizer t);

// TokenizerFor is the tokenizer TorchMetrics applies to the strings of the
// metric `spec` ("name(args)"): characters for char_error_rate and
// edit_distance, sacreBLEU's `tokenize` and `lowercase` for
// sacre_bleu_score, rouge-score's words for rouge_score, chrF's characters
// (and words) for chrf_score, SQuAD's normalised words for squad, TER's
// words for translation_edit_rate, words for the other text metrics.
// InvalidArgument for a metric that takes no text, a sacreBLEU tokenizer
// read only as ids, or ROUGE's stemmer.
absl::StatusOr<Tokenizer> TokenizerFor(absl::string_view spec);

// CheckUtf8 is OK when `text` is well-formed UTF-8 (RFC 3629: no overlong
// forms, surrogates or code points past U+10FFFF); otherwise
// InvalidArgument naming the byte offset of the first bad sequence.
absl::Status CheckUtf8(absl::string_view text);

// Tokenize splits one sentence of valid UTF-8.
std::vector<std::string> Tokenize(absl::string_view sentence, Tokenizer t);

// ReadTextLines reads the UTF-8 file at `path`, one sentence a line ("\n"
// or "\r\n"; a final newline ends the last line, a leading byte-order mark
// is skipped). An error names the path and the line of any byte that is not
// UTF-8.
absl::StatusOr<std::vector<std::string>> ReadTextLines(const std::string& path);

// Vocabulary numbers tokens 0, 1, ... in the order they first appear.
class Vocabulary {
 public:
  int64_t Id(absl::string_view token);
  int64_t size() const { return static_cast<int64_t>(ids_.size()); }

 private:
  absl::flat_hash_map<std::string, int64_t> ids_;
};

// TokenIds is the int64 [N, L] tensor of `sentences` split by `t` into ids
// of `vocab`: L the longest row (at least 1), shorter rows padded with -1.
// InvalidArgument naming the sentence if one is not UTF-8.
absl::StatusOr<at::Tensor> TokenIds(const std::vector<std::string>& sentences, Tokenizer t, Vocabulary& vocab);

}  // namespace tally

#endif  // TALLY_API_TEXT_INPUTS_H_
