#include "tests/testlib/file_check.h"

#include <torch/csrc/jit/testing/file_check.h>

#include <exception>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tally::testing {

std::string TranslateChecks(absl::string_view checks) {
  std::string out;
  for (absl::string_view line : absl::StrSplit(checks, '\n')) {
    absl::string_view l = absl::StripLeadingAsciiWhitespace(line);
    if (absl::StartsWith(l, "//"))
      l.remove_prefix(2);
    else if (absl::StartsWith(l, "#"))
      l.remove_prefix(1);
    else
      continue;
    l = absl::StripLeadingAsciiWhitespace(l);
    if (!absl::StartsWith(l, "CHECK")) continue;
    size_t colon = l.find(':');
    if (colon == absl::string_view::npos) continue;
    std::string directive(l.substr(0, colon));
    if (directive == "CHECK-LABEL") directive = "CHECK";
    absl::string_view body = l.substr(colon + 1);
    // One space after the colon separates it from the pattern; more is part of
    // the pattern only in LLVM's strict mode, so drop it.
    body = absl::StripLeadingAsciiWhitespace(body);
    absl::StrAppend(&out, "# ", directive, ": ", body, "\n");
  }
  return out;
}

::testing::AssertionResult FileCheck(absl::string_view text, absl::string_view checks) {
  std::string translated = TranslateChecks(checks);
  if (translated.empty()) {
    return ::testing::AssertionFailure() << "FileCheck: no CHECK lines in:\n" << checks;
  }
  try {
    torch::jit::testing::FileCheck().run(translated, std::string(text));
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "FileCheck failed: " << e.what() << "\n--- input ---\n" << text;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace tally::testing
