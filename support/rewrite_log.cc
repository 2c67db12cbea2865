#include "support/rewrite_log.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tally::support {
namespace {

absl::string_view BaseName(absl::string_view path) {
  size_t slash = path.rfind('/');
  if (slash != absl::string_view::npos) path.remove_prefix(slash + 1);
  return path;
}

}  // namespace

bool RewriteLogEnabled(absl::string_view file) {
  // Read each time: rewrites are rare, and tests set the variable late.
  const char* names = std::getenv("TALLY_LOG_REWRITES");
  if (names == nullptr || *names == '\0') return false;
  absl::string_view stem = BaseName(file);
  stem = stem.substr(0, stem.find('.'));
  for (absl::string_view name : absl::StrSplit(names, ',', absl::SkipWhitespace())) {
    name = absl::StripAsciiWhitespace(name);
    if (name == "all" || name == stem) return true;
  }
  return false;
}

void RewriteLog(absl::string_view file, int line, absl::string_view message) {
  const std::string text = absl::StrCat("[tally ", BaseName(file), ":", line, "] ", message, "\n");
  std::fwrite(text.data(), 1, text.size(), stderr);
}

}  // namespace tally::support
