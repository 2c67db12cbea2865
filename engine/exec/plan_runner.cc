#include "engine/exec/plan_runner.h"

#include "absl/strings/str_cat.h"

namespace tally::exec {

absl::string_view BackendName(Backend b) {
  switch (b) {
    case Backend::kEager:
      return "eager";
    case Backend::kTorchScript:
      return "torchscript";
  }
  return "eager";
}

absl::StatusOr<Backend> ParseBackend(absl::string_view s) {
  if (s == "eager") return Backend::kEager;
  if (s == "torchscript") return Backend::kTorchScript;
  return absl::InvalidArgumentError(absl::StrCat("unknown backend '", s, "' (eager or torchscript)"));
}

}  // namespace tally::exec
