// gmock matchers and assertion macros for absl::Status and absl::StatusOr.
//
// Debian's Abseil (20220623) ships no status matchers, so Tally keeps these in
// one place:
//
//   EXPECT_THAT(program->Update(inputs), IsOk());
//   EXPECT_THAT(ParseModule(text), StatusIs(absl::StatusCode::kInvalidArgument,
//                                           HasSubstr("IR line 3")));
//   TALLY_ASSERT_OK_AND_ASSIGN(auto m, ParseModule(text));
#ifndef TALLY_TESTS_TESTLIB_STATUS_MATCHERS_H_
#define TALLY_TESTS_TESTLIB_STATUS_MATCHERS_H_

#include <ostream>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tally::testing {
namespace internal {

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

class IsOkMatcher {
 public:
  template <typename T>
  bool MatchAndExplain(const T& value, ::testing::MatchResultListener* listener) const {
    const absl::Status& s = GetStatus(value);
    if (!s.ok()) *listener << "whose status is " << s;
    return s.ok();
  }
  void DescribeTo(std::ostream* os) const { *os << "is OK"; }
  void DescribeNegationTo(std::ostream* os) const { *os << "is not OK"; }
};

class StatusIsMatcher {
 public:
  StatusIsMatcher(absl::StatusCode code, ::testing::Matcher<const std::string&> message)
      : code_(code), message_(std::move(message)) {}

  template <typename T>
  bool MatchAndExplain(const T& value, ::testing::MatchResultListener* listener) const {
    const absl::Status& s = GetStatus(value);
    if (s.code() != code_) {
      *listener << "whose status is " << s;
      return false;
    }
    std::string message(s.message());
    ::testing::StringMatchResultListener inner;
    if (!message_.MatchAndExplain(message, &inner)) {
      *listener << "whose message \"" << message << "\" does not match";
      if (!inner.str().empty()) *listener << " (" << inner.str() << ")";
      return false;
    }
    return true;
  }
  void DescribeTo(std::ostream* os) const {
    *os << "has status code " << absl::StatusCodeToString(code_) << " and a message that ";
    message_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const {
    *os << "does not have status code " << absl::StatusCodeToString(code_)
        << " or has a message that ";
    message_.DescribeNegationTo(os);
  }

 private:
  absl::StatusCode code_;
  ::testing::Matcher<const std::string&> message_;
};

}  // namespace internal

// IsOk matches an OK absl::Status or a StatusOr holding a value.
inline ::testing::PolymorphicMatcher<internal::IsOkMatcher> IsOk() {
  return ::testing::MakePolymorphicMatcher(internal::IsOkMatcher());
}

// StatusIs matches a Status/StatusOr with `code` whose message matches
// `message` (a matcher such as HasSubstr("..."), or a string for equality).
template <typename MessageMatcher>
::testing::PolymorphicMatcher<internal::StatusIsMatcher> StatusIs(absl::StatusCode code,
                                                                  MessageMatcher message) {
  return ::testing::MakePolymorphicMatcher(internal::StatusIsMatcher(
      code, ::testing::SafeMatcherCast<const std::string&>(
                ::testing::MatcherCast<const std::string&>(message))));
}

// StatusIs(code) matches any message.
inline ::testing::PolymorphicMatcher<internal::StatusIsMatcher> StatusIs(absl::StatusCode code) {
  return StatusIs(code, ::testing::A<const std::string&>());
}

}  // namespace tally::testing

#define TALLY_TESTING_CONCAT_INNER_(a, b) a##b
#define TALLY_TESTING_CONCAT_(a, b) TALLY_TESTING_CONCAT_INNER_(a, b)

// TALLY_ASSERT_OK_AND_ASSIGN(lhs, expr) asserts that the StatusOr `expr` is
// OK (failing the test with its status otherwise) and assigns its value.
#define TALLY_ASSERT_OK_AND_ASSIGN(lhs, expr) \
  TALLY_ASSERT_OK_AND_ASSIGN_IMPL_(TALLY_TESTING_CONCAT_(tally_test_statusor_, __LINE__), lhs, expr)
#define TALLY_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr)              \
  auto tmp = (expr);                                                 \
  ASSERT_TRUE(tmp.ok()) << #expr << " failed: " << tmp.status();     \
  lhs = std::move(tmp).value()

// TALLY_ASSERT_OK / TALLY_EXPECT_OK check a Status or StatusOr.
#define TALLY_ASSERT_OK(expr) ASSERT_THAT((expr), ::tally::testing::IsOk())
#define TALLY_EXPECT_OK(expr) EXPECT_THAT((expr), ::tally::testing::IsOk())

#endif  // TALLY_TESTS_TESTLIB_STATUS_MATCHERS_H_
