// Status helpers shared by the whole engine.
//
// Debian's Abseil (20220623) has no ABSL_RETURN_IF_ERROR / ASSIGN_OR_RETURN, so
// Tally keeps its own small set here, in one place.
#ifndef TALLY_SUPPORT_STATUS_MACROS_H_
#define TALLY_SUPPORT_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#define TALLY_CONCAT_INNER_(a, b) a##b
#define TALLY_CONCAT_(a, b) TALLY_CONCAT_INNER_(a, b)

// TALLY_RETURN_IF_ERROR returns the status of `expr` when it is not OK.
#define TALLY_RETURN_IF_ERROR(expr)                \
  do {                                             \
    ::absl::Status tally_status_ = (expr);         \
    if (!tally_status_.ok()) return tally_status_; \
  } while (0)

// TALLY_ASSIGN_OR_RETURN(lhs, expr) assigns the value of a StatusOr or returns
// its error.
#define TALLY_ASSIGN_OR_RETURN(lhs, expr) \
  TALLY_ASSIGN_OR_RETURN_IMPL_(TALLY_CONCAT_(tally_statusor_, __LINE__), lhs, expr)
#define TALLY_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()

// TALLY_RET_CHECK(cond) returns an Internal error naming the broken invariant.
#define TALLY_RET_CHECK(cond)                                                                                        \
  do {                                                                                                               \
    if (!(cond))                                                                                                     \
      return ::absl::InternalError(::absl::StrCat("invariant failed: ", #cond, " (", __FILE__, ":", __LINE__, ")")); \
  } while (0)

#endif  // TALLY_SUPPORT_STATUS_MACROS_H_
