// gmock matchers and assertion macros for absl::Status and absl::StatusOr.
//
// Debian's Abseil (20220623) ships no status matchers, so Tally keeps these in
// one place:
//
//   EXPECT_THAT(program->Update(inputs), IsOk());
//   EXPECT_THAT(ParseModule(text), StatusIs(absl::StatusCode::kInvalidArgument,
//                                           HasSubstr("IR line 3")));
//   EXPECT_THAT(InferTypes(...), IsOkAndHolds(ElementsAre(...)));
//   TALLY_ASSERT_OK_AND_ASSIGN(auto m, ParseModule(text));
#ifndef TALLY_TESTS_TESTLIB_STATUS_MATCHERS_H_
#define TALLY_TESTS_TESTLIB_STATUS_MATCHERS_H_

#include <ostream>
#include <string>
#include <type_traits>
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
    *os << "does not have status code " << absl::StatusCodeToString(code_) << " or has a message that ";
    message_.DescribeNegationTo(os);
  }

 private:
  absl::StatusCode code_;
  ::testing::Matcher<const std::string&> message_;
};

template <typename StatusOrT>
class IsOkAndHoldsImpl : public ::testing::MatcherInterface<StatusOrT> {
 public:
  using ValueType = typename std::decay_t<StatusOrT>::value_type;
  template <typename InnerMatcher>
  explicit IsOkAndHoldsImpl(InnerMatcher&& inner)
      : inner_(::testing::SafeMatcherCast<const ValueType&>(std::forward<InnerMatcher>(inner))) {}

  bool MatchAndExplain(StatusOrT value, ::testing::MatchResultListener* listener) const override {
    if (!value.ok()) {
      *listener << "whose status is " << value.status();
      return false;
    }
    ::testing::StringMatchResultListener inner;
    const bool matches = inner_.MatchAndExplain(*value, &inner);
    *listener << "whose value " << ::testing::PrintToString(*value) << (matches ? " matches" : " doesn't match");
    if (!inner.str().empty()) *listener << ", " << inner.str();
    return matches;
  }
  void DescribeTo(std::ostream* os) const override {
    *os << "is OK and has a value that ";
    inner_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const override {
    *os << "is not OK or has a value that ";
    inner_.DescribeNegationTo(os);
  }

 private:
  ::testing::Matcher<const ValueType&> inner_;
};

template <typename InnerMatcher>
class IsOkAndHoldsMatcher {
 public:
  explicit IsOkAndHoldsMatcher(InnerMatcher inner) : inner_(std::move(inner)) {}
  template <typename StatusOrT>
  operator ::testing::Matcher<StatusOrT>() const {  // NOLINT: implicit by design
    return ::testing::Matcher<StatusOrT>(new IsOkAndHoldsImpl<const StatusOrT&>(inner_));
  }

 private:
  InnerMatcher inner_;
};

}  // namespace internal

// IsOkAndHolds matches a StatusOr that is OK and whose value matches `inner`
// (a matcher, or a value for equality).
template <typename InnerMatcher>
internal::IsOkAndHoldsMatcher<std::decay_t<InnerMatcher>> IsOkAndHolds(InnerMatcher&& inner) {
  return internal::IsOkAndHoldsMatcher<std::decay_t<InnerMatcher>>(std::forward<InnerMatcher>(inner));
}

// IsOk matches an OK absl::Status or a StatusOr holding a value.
inline ::testing::PolymorphicMatcher<internal::IsOkMatcher> IsOk() {
  return ::testing::MakePolymorphicMatcher(internal::IsOkMatcher());
}

// StatusIs matches a Status/StatusOr with `code` whose message matches
// `message` (a matcher such as HasSubstr("..."), or a string for equality).
template <typename MessageMatcher>
::testing::PolymorphicMatcher<internal::StatusIsMatcher> StatusIs(absl::StatusCode code, MessageMatcher message) {
  return ::testing::MakePolymorphicMatcher(internal::StatusIsMatcher(
      code, ::testing::SafeMatcherCast<const std::string&>(::testing::MatcherCast<const std::string&>(message))));
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
#define TALLY_ASSERT_OK_AND_ASSIGN_IMPL_(tmp, lhs, expr)         \
  auto tmp = (expr);                                             \
  ASSERT_TRUE(tmp.ok()) << #expr << " failed: " << tmp.status(); \
  lhs = std::move(tmp).value()

// TALLY_ASSERT_OK / TALLY_EXPECT_OK check a Status or StatusOr.
#define TALLY_ASSERT_OK(expr) ASSERT_THAT((expr), ::tally::testing::IsOk())
#define TALLY_EXPECT_OK(expr) EXPECT_THAT((expr), ::tally::testing::IsOk())

#endif  // TALLY_TESTS_TESTLIB_STATUS_MATCHERS_H_
