#include "passes/compile_report.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace tally::passes {

std::string DeviceProof::ToString() const {
  std::string out = absl::StrCat("single-device proof: every edge is on ", device, "\n");
  for (const auto& [cls, n] : edges) {
    bool transfer = cls.find("explicit transfer") != std::string::npos;
    absl::StrAppend(&out, "  ", cls, ": ", n, " edges, ", transfer ? "from any device to " : "all on ", device, "\n");
  }
  absl::StrAppend(&out, "  states: ", states, ", all on ", device, "\n");
  for (const auto& b : boundary_checks) absl::StrAppend(&out, "  boundary check: ", b, "\n");
  return out;
}

}  // namespace tally::passes
