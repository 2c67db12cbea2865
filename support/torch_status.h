// The one place where LibTorch exceptions become absl::Status.
//
// LibTorch throws c10::Error (and occasionally std::exception); nothing may
// leave Tally's public API as an exception, so every call into ATen from an
// executor goes through CatchTorch.
#ifndef TALLY_SUPPORT_TORCH_STATUS_H_
#define TALLY_SUPPORT_TORCH_STATUS_H_

#include <exception>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "support/status_macros.h"

namespace tally::support {

// FirstLine keeps the first line of a LibTorch message (drops the C++ trace).
std::string FirstLine(const char* what);

// kCheckFailed starts the message of a failed finalize check (the op
// assert_zero, in either backend); Compute reports the text after it alone,
// as it reports a deferred-check counter.
inline constexpr char kCheckFailed[] = "check failed: ";
// CheckFailure returns the text after kCheckFailed when `message` holds it.
std::optional<std::string> CheckFailure(absl::string_view message);

// ScopedSkipStateChecks makes the eager assert_zero kernel pass its
// whole-state checks (assert_zero {whole_state=true}) on this thread while
// alive: Program::CheckValues judges one request's values, not whether the
// whole state is complete.
class ScopedSkipStateChecks {
 public:
  ScopedSkipStateChecks();
  ~ScopedSkipStateChecks();
  ScopedSkipStateChecks(const ScopedSkipStateChecks&) = delete;
  ScopedSkipStateChecks& operator=(const ScopedSkipStateChecks&) = delete;
  static bool active();

 private:
  bool previous_;
};

// CatchTorch runs `f` and turns any exception into an Internal/InvalidArgument
// status prefixed with `context`.
template <typename F>
absl::Status CatchTorch(F&& f, const std::string& context) {
  try {
    f();
    return absl::OkStatus();
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(context, ": ", FirstLine(e.what())));
  } catch (...) {
    return absl::InternalError(absl::StrCat(context, ": unknown exception"));
  }
}

}  // namespace tally::support

#endif  // TALLY_SUPPORT_TORCH_STATUS_H_
