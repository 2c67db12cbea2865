// Per-file debug logging of graph rewrites, in the spirit of TorchScript's
// GRAPH_UPDATE: off by default; the environment variable TALLY_LOG_REWRITES
// names the files whose rewrites go to stderr, by base name without the
// extension, comma-separated ("cse,canonicalize"), or "all".
//
//   TALLY_GRAPH_UPDATE("merged ", Describe(n), " into ", Describe(kept));
//
// prints `[tally cse.cc:56] merged ... into ...` when TALLY_LOG_REWRITES
// names cse. The arguments are only evaluated when the file is named.
#ifndef TALLY_SUPPORT_REWRITE_LOG_H_
#define TALLY_SUPPORT_REWRITE_LOG_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tally::support {

// RewriteLogEnabled says whether TALLY_LOG_REWRITES names `file` (a path;
// its base name without extension is compared).
bool RewriteLogEnabled(absl::string_view file);

// RewriteLog writes one line `[tally <base name>:<line>] <message>` to stderr.
void RewriteLog(absl::string_view file, int line, absl::string_view message);

}  // namespace tally::support

#define TALLY_GRAPH_UPDATE(...)                                                      \
  do {                                                                               \
    if (::tally::support::RewriteLogEnabled(__FILE__)) {                             \
      ::tally::support::RewriteLog(__FILE__, __LINE__, ::absl::StrCat(__VA_ARGS__)); \
    }                                                                                \
  } while (0)

#endif  // TALLY_SUPPORT_REWRITE_LOG_H_
