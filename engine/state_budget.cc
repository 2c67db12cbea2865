#include "engine/state_budget.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace tally {

int64_t DefaultStateBudget() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return int64_t{8} << 30;
  return static_cast<int64_t>(pages) * page / 2;
}

std::string FormatBytes(int64_t bytes) {
  double b = static_cast<double>(bytes);
  if (b >= (1 << 30)) return absl::StrFormat("%d bytes (%.1f GiB)", bytes, b / (1 << 30));
  if (b >= (1 << 20)) return absl::StrFormat("%d bytes (%.1f MiB)", bytes, b / (1 << 20));
  if (b >= (1 << 10)) return absl::StrFormat("%d bytes (%.1f KiB)", bytes, b / (1 << 10));
  return absl::StrCat(bytes, " bytes");
}

std::vector<std::string> SizeDrivers(const ir::StateDecl& s, const std::vector<CollectionEntry>& entries) {
  std::vector<std::string> out;
  for (const auto& e : entries) {
    if (e.label != s.metric) continue;
    for (const auto& [key, value] : e.size_args) {
      for (const ir::Dim& d : s.type.shape) {
        if (!d.is_symbolic() && value > 1 && (d.size == value || d.size == value + 1)) {
          out.push_back(absl::StrCat(key, "=", value));
          break;
        }
      }
    }
  }
  return out;
}

absl::Status CheckStateBudget(const ir::Module& m, const std::vector<CollectionEntry>& entries, int64_t budget) {
  if (budget <= 0) budget = DefaultStateBudget();
  // Sum in double too: a product of argument-driven dims may overflow int64.
  double total = 0;
  const ir::StateDecl* largest = nullptr;
  double largest_bytes = -1;
  for (const auto& s : m.states) {
    if (s.reducer == ir::Reducer::kCat) continue;
    double n = static_cast<double>(ir::DTypeSize(s.type.dtype));
    for (const ir::Dim& d : s.type.shape) n *= d.is_symbolic() ? 1 : static_cast<double>(d.size);
    total += n;
    if (n > largest_bytes) {
      largest_bytes = n;
      largest = &s;
    }
  }
  if (total <= static_cast<double>(budget) || largest == nullptr) return absl::OkStatus();
  std::vector<std::string> drivers = SizeDrivers(*largest, entries);
  auto bytes = [](double b) {
    return b < 9.2e18 ? FormatBytes(static_cast<int64_t>(b)) : absl::StrFormat("%.3g bytes", b);
  };
  return absl::ResourceExhaustedError(absl::StrCat(
      largest->metric.empty() ? "program" : largest->metric, ": state '", largest->name, "' ", ir::DTypeName(largest->type.dtype),
      largest->type.ShapeString(), drivers.empty() ? "" : absl::StrCat(" (from ", absl::StrJoin(drivers, ", "), ")"),
      " needs ", bytes(largest_bytes), "; the program's fixed-size states need ", bytes(total),
      ", over the state budget of ", FormatBytes(budget), " (--max-state-bytes); nothing was allocated"));
}

}  // namespace tally
