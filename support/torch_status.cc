#include "support/torch_status.h"

#include <cstring>

namespace tally::support {

std::string FirstLine(const char* what) {
  const char* nl = std::strchr(what, '\n');
  std::string s = nl ? std::string(what, nl - what) : std::string(what);
  // c10::Error messages end with " (most recent call first):" before a trace.
  const std::string trace = "Exception raised from";
  if (auto pos = s.find(trace); pos != std::string::npos) s = s.substr(0, pos);
  while (!s.empty() && (s.back() == ' ' || s.back() == '.')) s.pop_back();
  return s;
}

namespace {
thread_local bool t_skip_state_checks = false;
}  // namespace

ScopedSkipStateChecks::ScopedSkipStateChecks() : previous_(t_skip_state_checks) { t_skip_state_checks = true; }
ScopedSkipStateChecks::~ScopedSkipStateChecks() { t_skip_state_checks = previous_; }
bool ScopedSkipStateChecks::active() { return t_skip_state_checks; }

std::optional<std::string> CheckFailure(absl::string_view message) {
  auto pos = message.find(kCheckFailed);
  if (pos == absl::string_view::npos) return std::nullopt;
  return std::string(message.substr(pos + std::strlen(kCheckFailed)));
}

}  // namespace tally::support
