// Tests of api/text_inputs.h: UTF-8 checking, the two tokenizers (Python's
// str.split() and list(str)), text files and token-id tensors.
#include "api/text_inputs.h"

#include <ATen/ATen.h>

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tools/cli_testing.h"

namespace tally {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Strings(std::vector<std::string> v) { return v; }

// Verifies that well-formed UTF-8 passes and that each malformed form is
// refused at its byte offset.
TEST(TextInputsTest, CheckUtf8) {
  EXPECT_TRUE(CheckUtf8("plain \xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80").ok());
  EXPECT_TRUE(CheckUtf8("\xF4\x8F\xBF\xBF").ok());  // U+10FFFF
  for (const std::string bad :
       {"ab\xC0\x80", "ab\xED\xA0\x80", "ab\xF4\x90\x80\x80", "ab\xE2\x82", "ab\x80", "ab\xFF", "ab\xE2\x28\xA1"}) {
    absl::Status s = CheckUtf8(bad);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_THAT(std::string(s.message()), HasSubstr("byte 2")) << bad;
  }
}

// Verifies words: every code point Python's str.isspace() accepts separates
// words (runs of them and the ends give no empty words); others, such as
// U+200B ZERO WIDTH SPACE, do not.
TEST(TextInputsTest, WordsSplitOnPythonWhitespace) {
  const std::vector<std::string> spaces = {
      "\t",           "\n",           "\v",           "\f",           "\r",
      "\x1C",         "\x1D",         "\x1E",         "\x1F",         " ",
      "\xC2\x85",     "\xC2\xA0",     "\xE1\x9A\x80", "\xE2\x80\x80", "\xE2\x80\x8A",
      "\xE2\x80\xA8", "\xE2\x80\xA9", "\xE2\x80\xAF", "\xE2\x81\x9F", "\xE3\x80\x80"};
  for (const std::string& sp : spaces) {
    EXPECT_THAT(Strings(Tokenize(absl::StrCat(sp, "a", sp, sp, "b\xC3\xA9", sp), Tokenizer::kWords)),
                ElementsAre("a", "b\xC3\xA9"))
        << sp;
  }
  EXPECT_THAT(Strings(Tokenize("a\xE2\x80\x8B"
                               "b c",
                               Tokenizer::kWords)),
              ElementsAre("a\xE2\x80\x8B"
                          "b",
                          "c"));
  EXPECT_TRUE(Tokenize("   ", Tokenizer::kWords).empty());
  EXPECT_TRUE(Tokenize("", Tokenizer::kWords).empty());
}

// Verifies characters: one token per code point, spaces included.
TEST(TextInputsTest, CharactersAreCodePoints) {
  EXPECT_THAT(Strings(Tokenize("a \xC3\xA9\xF0\x9F\x98\x80", Tokenizer::kCharacters)),
              ElementsAre("a", " ", "\xC3\xA9", "\xF0\x9F\x98\x80"));
}

// Verifies rouge-score's normalisation: lowercased, every run outside
// [a-z0-9] a separator (accented letters included; the Kelvin sign
// lowercases to 'k' as Python's str.lower() does).
TEST(TextInputsTest, RougeWords) {
  EXPECT_THAT(Strings(Tokenize("My name is John", Tokenizer::kRouge)), ElementsAre("my", "name", "is", "john"));
  EXPECT_THAT(Strings(Tokenize("  It's 3.5km--caf\xC3\xA9 \xE2\x84\xAAg!", Tokenizer::kRouge)),
              ElementsAre("it", "s", "3", "5km", "caf", "kg"));
  EXPECT_TRUE(Tokenize("?! ...", Tokenizer::kRouge).empty());
}

// Verifies chrF's characters (str.strip(), then every code point but the
// U+0020 spaces: a tab inside stays) and chrF++'s words (one ASCII
// punctuation mark set apart at a word's end, else at its start; a word of
// one character stays whole).
TEST(TextInputsTest, ChrfCharactersAndWords) {
  EXPECT_THAT(Strings(Tokenize("\t a b\tc\xC3\xA9 \n", Tokenizer::kChrfCharacters)),
              ElementsAre("a", "b", "\t", "c", "\xC3\xA9"));
  EXPECT_TRUE(Tokenize(" \t ", Tokenizer::kChrfCharacters).empty());
  EXPECT_THAT(Strings(Tokenize(" Hello, (world) ! \"quoted\" x.y. caf\xC3\xA9.", Tokenizer::kChrfWords)),
              ElementsAre("Hello", ",", "(world", ")", "!", "\"quoted", "\"", "x.y", ".", "caf\xC3\xA9", "."));
  EXPECT_THAT(Strings(Tokenize("(a ,b", Tokenizer::kChrfWords)), ElementsAre("(", "a", ",", "b"));
  EXPECT_THAT(Strings(Tokenize("The CAT.", Tokenizer(Tokenizer::kChrfWords, true))), ElementsAre("the", "cat", "."));
}

// Verifies SQuAD's normalisation: lowercased, ASCII punctuation removed,
// articles dropped only as whole words (Python's \b), then words.
TEST(TextInputsTest, SquadWords) {
  EXPECT_THAT(Strings(Tokenize("The Eiffel Tower.", Tokenizer::kSquad)), ElementsAre("eiffel", "tower"));
  EXPECT_THAT(Strings(Tokenize("An apple, a banana and THE anthem; theatre", Tokenizer::kSquad)),
              ElementsAre("apple", "banana", "and", "anthem", "theatre"));
  EXPECT_THAT(Strings(Tokenize("Levi's a_b an\xC3\xA9 a\xE2\x82\xAC", Tokenizer::kSquad)),
              ElementsAre("levis", "ab", "an\xC3\xA9", "\xE2\x82\xAC"));
  EXPECT_TRUE(Tokenize("the . A", Tokenizer::kSquad).empty());
}

// Verifies the ids: one vocabulary across calls, -1 padding to the longest
// row, at least one column, and a bad sentence named by number.
TEST(TextInputsTest, TokenIds) {
  Vocabulary vocab;
  absl::StatusOr<at::Tensor> a = TokenIds({"b a b", "", "c"}, Tokenizer::kWords, vocab);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(at::equal(*a, at::tensor({0, 1, 0, -1, -1, -1, 2, -1, -1}, at::kLong).view({3, 3})));
  absl::StatusOr<at::Tensor> b = TokenIds({"a d"}, Tokenizer::kWords, vocab);
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(at::equal(*b, at::tensor({1, 3}, at::kLong).view({1, 2})));
  EXPECT_EQ(vocab.size(), 4);
  absl::StatusOr<at::Tensor> empty = TokenIds({"", ""}, Tokenizer::kCharacters, vocab);
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->sizes(), (std::vector<int64_t>{2, 1}));
  absl::StatusOr<at::Tensor> bad = TokenIds({"ok", "no\xFF"}, Tokenizer::kWords, vocab);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("sentence 2"));
}

// Verifies files: "\n" and "\r\n" lines, a final newline or none, a
// byte-order mark, an empty file, and the line of a bad byte.
TEST(TextInputsTest, ReadTextLines) {
  const std::string path = absl::StrCat(testing::TestTmpDir(), "/lines.txt");
  auto read = [&](const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    return ReadTextLines(path);
  };
  auto lines = read(
      "\xEF\xBB\xBF"
      "one\r\ntwo\n\nfour\n");
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_THAT(*lines, ElementsAre("one", "two", "", "four"));
  lines = read("last line without a newline");
  ASSERT_TRUE(lines.ok());
  EXPECT_THAT(*lines, ElementsAre("last line without a newline"));
  lines = read("");
  ASSERT_TRUE(lines.ok());
  EXPECT_TRUE(lines->empty());
  lines = read("fine\nfine\nbad \xC3\n");
  ASSERT_FALSE(lines.ok());
  EXPECT_THAT(std::string(lines.status().message()), HasSubstr("line 3"));
  EXPECT_THAT(std::string(lines.status().message()), HasSubstr("lines.txt"));
}

// Verifies sacreBLEU's 13a rules one by one (mteval-v13a): ASCII symbols
// but ' , - . stand apart; a period or comma stands apart unless between
// digits; a dash after a digit stands apart; the four entities are decoded
// one after another ("&amp;lt;" becomes "<"); "<skipped>" goes; other
// scripts pass through, and lowercase maps them.
TEST(TextInputsTest, SacreBleu13a) {
  EXPECT_THAT(Tokenize("Hello, world! It's 3.14 and 1,000 -- state-of-the-art (really).", Tokenizer::k13a),
              ElementsAre("Hello", ",", "world", "!", "It's", "3.14", "and", "1,000", "--", "state-of-the-art", "(",
                          "really", ")", "."));
  EXPECT_THAT(Tokenize("&quot;a&quot; &amp;lt; b&gt;c <skipped>x", Tokenizer::k13a),
              ElementsAre("\"", "a", "\"", "<", "b", ">", "c", "x"));
  EXPECT_THAT(Tokenize("5-3 a.b 2. .5 x,y $10", Tokenizer::k13a),
              ElementsAre("5", "-", "3", "a", ".", "b", "2", ".", ".", "5", "x", ",", "y", "$", "10"));
  EXPECT_THAT(Tokenize("\xC3\x89"
                       "COLE Stra\xC3\x9F"
                       "e.",
                       Tokenizer(Tokenizer::k13a, /*lower=*/true)),
              ElementsAre("\xC3\xA9"
                          "cole",
                          "stra\xC3\x9F"
                          "e",
                          "."));
  EXPECT_THAT(Tokenize("ab c\xC2\xA0"
                       "d",
                       Tokenizer::kGlyphs),
              ElementsAre("a", "b", "c", "d"));
  EXPECT_THAT(Tokenize("A b", Tokenizer(Tokenizer::kWords, true)), ElementsAre("a", "b"));
}

// Verifies TER's tokenizer against TorchMetrics 1.5.2's _TercomTokenizer
// (the expected words printed by it for these sentences): lowercase first,
// normalize's punctuation and 's, no_punctuation's removal (after the
// spacing, so "a.b" is "ab" alone and "a b" with normalize), XML entities,
// a line break before a hyphen, and asian_support's CJK spacing and
// punctuation.
TEST(TextInputsTest, Tercom) {
  const auto ter = [](bool normalize, bool no_punctuation, bool lowercase, bool asian) {
    Tokenizer t(Tokenizer::kTercom, lowercase);
    t.normalize = normalize;
    t.no_punctuation = no_punctuation;
    t.asian = asian;
    return t;
  };
  const std::string cat = "The Cat's toy, (3.5km) isn't \"here\"!  &quot;x&amp;y&quot;";
  EXPECT_THAT(Tokenize(cat, ter(false, false, true, false)),
              ElementsAre("the", "cat's", "toy,", "(3.5km)", "isn't", "\"here\"!", "&quot;x&amp;y&quot;"));
  EXPECT_THAT(Tokenize(cat, ter(true, false, true, false)),
              ElementsAre("the", "cat", "'s", "toy", ",", "(", "3.5km", ")", "isn't", "\"", "here", "\"", "!", "\"",
                          "x", "&", "y", "\""));
  EXPECT_THAT(Tokenize(cat, ter(false, true, true, false)),
              ElementsAre("the", "cat's", "toy", "35km", "isn't", "here", "&quotx&ampy&quot"));
  EXPECT_THAT(Tokenize(cat, ter(true, true, false, false)),
              ElementsAre("The", "Cat", "'s", "toy", "35km", "isn't", "here", "x", "&", "y"));
  EXPECT_THAT(Tokenize("Jean's 1-2 a.b, c.d.", ter(true, false, true, false)),
              ElementsAre("jean", "'s", "1", "-", "2", "a", ".", "b", ",", "c", ".", "d", "."));
  EXPECT_THAT(Tokenize("Jean's 1-2 a.b, c.d.", ter(false, true, true, false)),
              ElementsAre("jean's", "1-2", "ab", "cd"));
  EXPECT_THAT(Tokenize("line\n-break\nhere", ter(true, false, true, false)), ElementsAre("linebreak", "here"));
  EXPECT_THAT(Tokenize("line\n-break\nhere", ter(false, false, true, false)), ElementsAre("line", "-break", "here"));
  // 我爱北京、天安门。Tokyo（東京）
  const std::string cjk =
      "\xE6\x88\x91\xE7\x88\xB1\xE5\x8C\x97\xE4\xBA\xAC\xE3\x80\x81\xE5\xA4\xA9\xE5\xAE\x89\xE9\x97\xA8"
      "\xE3\x80\x82Tokyo\xEF\xBC\x88\xE6\x9D\xB1\xE4\xBA\xAC\xEF\xBC\x89";
  std::string lowered = cjk;
  lowered.replace(lowered.find("Tokyo"), 5, "tokyo");
  EXPECT_THAT(Tokenize(cjk, ter(true, false, true, false)), ElementsAre(lowered));
  EXPECT_THAT(Tokenize(cjk, ter(true, false, true, true)),
              ElementsAre("\xE6\x88\x91", "\xE7\x88\xB1", "\xE5\x8C\x97", "\xE4\xBA\xAC", "\xE3\x80\x81",
                          "\xE5\xA4\xA9", "\xE5\xAE\x89", "\xE9\x97\xA8", "\xE3\x80\x82", "tokyo", "\xEF\xBC\x88",
                          "\xE6\x9D\xB1", "\xE4\xBA\xAC", "\xEF\xBC\x89"));
  EXPECT_THAT(Tokenize(cjk, ter(false, true, true, true)),
              ElementsAre("\xE6\x88\x91\xE7\x88\xB1\xE5\x8C\x97\xE4\xBA\xAC\xE5\xA4\xA9\xE5\xAE\x89\xE9\x97\xA8"
                          "tokyo\xE6\x9D\xB1\xE4\xBA\xAC"));
  EXPECT_THAT(Tokenize(cjk, ter(true, true, true, true)),
              ElementsAre("\xE6\x88\x91", "\xE7\x88\xB1", "\xE5\x8C\x97", "\xE4\xBA\xAC", "\xE5\xA4\xA9",
                          "\xE5\xAE\x89", "\xE9\x97\xA8", "tokyo", "\xE6\x9D\xB1", "\xE4\xBA\xAC"));
  EXPECT_THAT(Tokenize("", ter(true, true, true, true)), ElementsAre());
  EXPECT_EQ(*TokenizerFor("translation_edit_rate"), ter(false, false, true, false));
  EXPECT_EQ(*TokenizerFor("translation_edit_rate(normalize=true, lowercase=false, asian_support=true)"),
            ter(true, false, false, true));
}

// Verifies which metrics take text, and how they split it.
TEST(TextInputsTest, TokenizerFor) {
  EXPECT_EQ(*TokenizerFor("bleu_score(n_gram=2)"), Tokenizer::kWords);
  EXPECT_EQ(*TokenizerFor("sacre_bleu_score"), Tokenizer::k13a);
  EXPECT_EQ(*TokenizerFor("sacre_bleu_score(tokenize='char', lowercase=true)"), Tokenizer(Tokenizer::kGlyphs, true));
  EXPECT_EQ(*TokenizerFor("sacre_bleu_score(tokenize='none')"), Tokenizer::kWords);
  EXPECT_THAT(std::string(TokenizerFor("sacre_bleu_score(tokenize='intl')").status().message()),
              HasSubstr("give token ids for 'intl'"));
  EXPECT_FALSE(TokenizerFor("perplexity").ok());
  EXPECT_EQ(*TokenizerFor("word_error_rate"), Tokenizer::kWords);
  EXPECT_EQ(*TokenizerFor("word_information_lost"), Tokenizer::kWords);
  EXPECT_EQ(*TokenizerFor("char_error_rate"), Tokenizer::kCharacters);
  EXPECT_EQ(*TokenizerFor("edit_distance"), Tokenizer::kCharacters);
  EXPECT_FALSE(TokenizerFor("mean_squared_error").ok());
  EXPECT_EQ(*TokenizerFor("rouge_score(rouge_keys=('rouge1', 'rougeL'))"), Tokenizer::kRouge);
  EXPECT_EQ(*TokenizerFor("squad"), Tokenizer::kSquad);
  EXPECT_THAT(std::string(TokenizerFor("rouge_score(use_stemmer=true)").status().message()),
              HasSubstr("give token ids of stemmed words"));
  Tokenizer chrf(Tokenizer::kChrfCharacters);
  chrf.with_words = true;
  EXPECT_EQ(*TokenizerFor("chrf_score"), chrf);
  EXPECT_EQ(*TokenizerFor("chrf_score(n_word_order=0, lowercase=true)"), Tokenizer(Tokenizer::kChrfCharacters, true));
  EXPECT_EQ(*TokenizerFor("chrf_score(n_word_order=0, whitespace=true)"), Tokenizer::kCharacters);
}

}  // namespace
}  // namespace tally
