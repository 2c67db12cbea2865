#include "metrics/spec.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tally::metrics {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Parses `text`, which must be valid, and returns the value of its only
// argument.
ArgValue OnlyValue(absl::string_view text) {
  absl::StatusOr<MetricSpec> spec = ParseMetricSpec(text);
  EXPECT_TRUE(spec.ok()) << spec.status();
  if (!spec.ok() || spec->args.size() != 1) {
    ADD_FAILURE() << "expected exactly one argument in " << text;
    return ArgValue();
  }
  return spec->args[0].second;
}

// Returns the error message for an invalid spec.
std::string ParseError(absl::string_view text) {
  absl::StatusOr<MetricSpec> spec = ParseMetricSpec(text);
  EXPECT_FALSE(spec.ok()) << "parsed: " << text;
  if (spec.ok()) return "";
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(spec.status().message());
}

SpecArgs ArgsFor(absl::string_view text) {
  absl::StatusOr<MetricSpec> spec = ParseMetricSpec(text);
  EXPECT_TRUE(spec.ok()) << spec.status();
  return SpecArgs(spec.ok() ? *spec : MetricSpec());
}

// Verifies that a bare name parses with no arguments, with or without empty
// parentheses and surrounding whitespace, and that `text` is kept verbatim.
TEST(ParseMetricSpecTest, BareName) {
  for (absl::string_view text : {"accuracy", "  accuracy ", "accuracy()", "accuracy ( )", "\taccuracy\n"}) {
    SCOPED_TRACE(text);
    absl::StatusOr<MetricSpec> spec = ParseMetricSpec(text);
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->text, text);
    EXPECT_EQ(spec->name, "accuracy");
    EXPECT_THAT(spec->args, IsEmpty());
  }
}

// Verifies that arguments keep their order and whitespace is allowed
// everywhere, including a trailing comma.
TEST(ParseMetricSpecTest, ArgumentsAndWhitespace) {
  absl::StatusOr<MetricSpec> spec = ParseMetricSpec(" multiclass_accuracy ( num_classes = 5 ,average=macro,  k=-1, ) ");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "multiclass_accuracy");
  ASSERT_EQ(spec->args.size(), 3u);
  EXPECT_EQ(spec->args[0].first, "num_classes");
  EXPECT_EQ(spec->args[0].second, ArgValue(int64_t{5}));
  EXPECT_EQ(spec->args[1].first, "average");
  EXPECT_EQ(spec->args[1].second, ArgValue(std::string("macro")));
  EXPECT_EQ(spec->args[2].first, "k");
  EXPECT_EQ(spec->args[2].second, ArgValue(int64_t{-1}));
}

// Verifies that integers, including extremes and a '+' sign, parse as int64.
TEST(ParseMetricSpecTest, Integers) {
  EXPECT_EQ(OnlyValue("m(x=5)"), ArgValue(int64_t{5}));
  EXPECT_EQ(OnlyValue("m(x=-1)"), ArgValue(int64_t{-1}));
  EXPECT_EQ(OnlyValue("m(x=+3)"), ArgValue(int64_t{3}));
  EXPECT_EQ(OnlyValue("m(x=0)"), ArgValue(int64_t{0}));
  EXPECT_EQ(OnlyValue("m(x=9223372036854775807)"), ArgValue(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(OnlyValue("m(x=-9223372036854775808)"), ArgValue(std::numeric_limits<int64_t>::min()));
}

// Verifies that decimal, exponent, inf and nan literals parse as double.
TEST(ParseMetricSpecTest, Floats) {
  EXPECT_EQ(OnlyValue("m(x=0.3)"), ArgValue(0.3));
  EXPECT_EQ(OnlyValue("m(x=1e-6)"), ArgValue(1e-6));
  EXPECT_EQ(OnlyValue("m(x=-2.5)"), ArgValue(-2.5));
  EXPECT_EQ(OnlyValue("m(x=.5)"), ArgValue(0.5));
  EXPECT_EQ(OnlyValue("m(x=5.)"), ArgValue(5.0));
  EXPECT_EQ(OnlyValue("m(x=2E+3)"), ArgValue(2000.0));
  EXPECT_EQ(OnlyValue("m(x=inf)"), ArgValue(std::numeric_limits<double>::infinity()));
  EXPECT_EQ(OnlyValue("m(x=-inf)"), ArgValue(-std::numeric_limits<double>::infinity()));
  ArgValue nan = OnlyValue("m(x=nan)");
  ASSERT_TRUE(std::holds_alternative<double>(nan));
  EXPECT_TRUE(std::isnan(std::get<double>(nan)));
}

// Verifies the bool and none keywords in both spellings.
TEST(ParseMetricSpecTest, BoolsAndNone) {
  EXPECT_EQ(OnlyValue("m(x=true)"), ArgValue(true));
  EXPECT_EQ(OnlyValue("m(x=True)"), ArgValue(true));
  EXPECT_EQ(OnlyValue("m(x=false)"), ArgValue(false));
  EXPECT_EQ(OnlyValue("m(x=False)"), ArgValue(false));
  EXPECT_EQ(OnlyValue("m(x=none)"), ArgValue(std::monostate{}));
  EXPECT_EQ(OnlyValue("m(x=None)"), ArgValue(std::monostate{}));
}

// Verifies bare words and single- and double-quoted strings with escapes.
TEST(ParseMetricSpecTest, Strings) {
  EXPECT_EQ(OnlyValue("m(x=macro)"), ArgValue(std::string("macro")));
  EXPECT_EQ(OnlyValue("m(x=_a-b.c2)"), ArgValue(std::string("_a-b.c2")));
  EXPECT_EQ(OnlyValue("m(x='cuda:1')"), ArgValue(std::string("cuda:1")));
  EXPECT_EQ(OnlyValue("m(x=\"a, b)\")"), ArgValue(std::string("a, b)")));
  EXPECT_EQ(OnlyValue("m(x='')"), ArgValue(std::string("")));
  EXPECT_EQ(OnlyValue("m(x='true')"), ArgValue(std::string("true")));
  EXPECT_EQ(OnlyValue("m(x='5')"), ArgValue(std::string("5")));
  EXPECT_EQ(OnlyValue(R"(m(x='it\'s \"q\" \\ \n'))"), ArgValue(std::string("it's \"q\" \\ \n")));
  EXPECT_EQ(OnlyValue(R"(m(x='C:\data'))"), ArgValue(std::string("C:\\data")));
}

// Verifies number lists: all-int lists are int64, any float makes the list
// double, and the empty list is an empty int64 list.
TEST(ParseMetricSpecTest, Lists) {
  EXPECT_EQ(OnlyValue("m(x=[1, 2])"), ArgValue(std::vector<int64_t>{1, 2}));
  EXPECT_EQ(OnlyValue("m(x=[0.1,0.5 , 1])"), ArgValue(std::vector<double>{0.1, 0.5, 1.0}));
  EXPECT_EQ(OnlyValue("m(x=[ ])"), ArgValue(std::vector<int64_t>{}));
  EXPECT_EQ(OnlyValue("m(x=[-3,])"), ArgValue(std::vector<int64_t>{-3}));
  EXPECT_EQ(OnlyValue("m(x=[1e-3, inf])"),
            ArgValue(std::vector<double>{1e-3, std::numeric_limits<double>::infinity()}));
  // Strings, quoted or bare; a tuple is the same list (rouge_keys=('rouge1', 'rougeL')).
  EXPECT_EQ(OnlyValue("m(x=['rouge1', rougeL])"), ArgValue(std::vector<std::string>{"rouge1", "rougeL"}));
  EXPECT_EQ(OnlyValue("m(x=('a b', \"c\",))"), ArgValue(std::vector<std::string>{"a b", "c"}));
  EXPECT_EQ(OnlyValue("m(x=(1, 2))"), ArgValue(std::vector<int64_t>{1, 2}));
  EXPECT_EQ(OnlyValue("m(x=())"), ArgValue(std::vector<int64_t>{}));
}

// Verifies the error for a missing value, with the spec quoted.
TEST(ParseMetricSpecTest, MissingValue) {
  EXPECT_EQ(ParseError("multiclass_accuracy(num_classes=)"),
            "bad metric spec 'multiclass_accuracy(num_classes=)': missing "
            "value for 'num_classes'");
  EXPECT_THAT(ParseError("m(a=1, b= , c=2)"), HasSubstr("missing value for 'b'"));
  EXPECT_THAT(ParseError("m(a="), HasSubstr("missing value for 'a'"));
}

// Verifies structural errors: empty name, missing ')', junk after ')',
// duplicate keys, missing '=', positional arguments and stray commas.
TEST(ParseMetricSpecTest, StructuralErrors) {
  EXPECT_EQ(ParseError(""), "bad metric spec '': empty metric name");
  EXPECT_EQ(ParseError("   "), "bad metric spec '   ': empty metric name");
  EXPECT_THAT(ParseError("(k=1)"), HasSubstr("expected a metric name at column 1"));
  EXPECT_THAT(ParseError("1abc"), HasSubstr("expected a metric name"));
  EXPECT_EQ(ParseError("m(k=1"), "bad metric spec 'm(k=1': missing ')'");
  EXPECT_THAT(ParseError("m(k=1, "), HasSubstr("missing ')'"));
  EXPECT_THAT(ParseError("m("), HasSubstr("missing ')'"));
  EXPECT_EQ(ParseError("m(k=1) x"), "bad metric spec 'm(k=1) x': unexpected text after ')': 'x'");
  EXPECT_THAT(ParseError("m(k=1)()"), HasSubstr("unexpected text after ')'"));
  EXPECT_EQ(ParseError("m(k=1, k=2)"), "bad metric spec 'm(k=1, k=2)': duplicate argument 'k'");
  EXPECT_THAT(ParseError("m(k 1)"), HasSubstr("expected '=' after 'k' at column 5, found '1'"));
  EXPECT_THAT(ParseError("m(5)"), HasSubstr("expected an argument name"));
  EXPECT_THAT(ParseError("m(,)"), HasSubstr("expected an argument name"));
  EXPECT_THAT(ParseError("m(a=1,,b=2)"), HasSubstr("expected an argument name"));
  EXPECT_THAT(ParseError("m x"), HasSubstr("expected '(' or end of spec"));
  EXPECT_THAT(ParseError("m(a=1 b=2)"), HasSubstr("expected ',' or ')' after the value of 'a'"));
}

// Verifies errors inside values: invalid tokens, unterminated strings, bad
// lists and out-of-range integers.
TEST(ParseMetricSpecTest, ValueErrors) {
  EXPECT_THAT(ParseError("m(d=cuda:1)"), HasSubstr("invalid value 'cuda:1' for 'd'"));
  EXPECT_THAT(ParseError("m(d=1abc)"), HasSubstr("invalid value '1abc'"));
  EXPECT_THAT(ParseError("m(d=-)"), HasSubstr("invalid value '-'"));
  EXPECT_THAT(ParseError("m(d='abc)"), HasSubstr("unterminated string for 'd'"));
  EXPECT_THAT(ParseError("m(d=[1, 2)"), HasSubstr("expected ',' or ']'"));
  EXPECT_THAT(ParseError("m(d=[1, 2"), HasSubstr("missing ']' for 'd'"));
  EXPECT_THAT(ParseError("m(d=[1, x])"), HasSubstr("list elements for 'd' must be all numbers or all strings"));
  EXPECT_THAT(ParseError("m(d=['a', 2.5])"), HasSubstr("must be all numbers or all strings"));
  EXPECT_THAT(ParseError("m(d=[true])"), HasSubstr("must be numbers or strings, got true"));
  EXPECT_THAT(ParseError("m(d=[[1]])"), HasSubstr("nested lists"));
  EXPECT_THAT(ParseError("m(d=[(1)])"), HasSubstr("nested lists"));
  EXPECT_THAT(ParseError("m(d=('a', 'b']"), HasSubstr("expected ',' or ')' in the list for 'd'"));
  EXPECT_THAT(ParseError("m(d=('a'"), HasSubstr("missing ')' for 'd'"));
  EXPECT_THAT(ParseError("m(d=99999999999999999999)"),
              HasSubstr("integer 99999999999999999999 for 'd' is out of range"));
}

// Verifies ArgValueToString for every kind, and that its output parses back
// to the same value.
TEST(ArgValueToStringTest, FormatsAndRoundTrips) {
  const std::vector<std::pair<ArgValue, std::string>> cases = {
      {ArgValue(std::monostate{}), "none"},
      {ArgValue(true), "true"},
      {ArgValue(false), "false"},
      {ArgValue(int64_t{-42}), "-42"},
      {ArgValue(0.3), "0.3"},
      {ArgValue(1e-6), "1e-06"},
      {ArgValue(2.0), "2.0"},
      {ArgValue(-0.0), "-0.0"},
      {ArgValue(1e300), "1e+300"},
      {ArgValue(std::numeric_limits<double>::infinity()), "inf"},
      {ArgValue(-std::numeric_limits<double>::infinity()), "-inf"},
      {ArgValue(std::string("macro")), "macro"},
      {ArgValue(std::string("cuda:1")), "'cuda:1'"},
      {ArgValue(std::string("none")), "'none'"},
      {ArgValue(std::string("inf")), "'inf'"},
      {ArgValue(std::string("5")), "'5'"},
      {ArgValue(std::string("")), "''"},
      {ArgValue(std::string("it's\n")), "'it\\'s\\n'"},
      {ArgValue(std::vector<int64_t>{1, 2}), "[1, 2]"},
      {ArgValue(std::vector<double>{0.1, 0.5}), "[0.1, 0.5]"},
      {ArgValue(std::vector<double>{1.0}), "[1.0]"},
      {ArgValue(std::vector<std::string>{"rouge1", "a b"}), "['rouge1', 'a b']"},
  };
  for (const auto& [value, text] : cases) {
    SCOPED_TRACE(text);
    EXPECT_EQ(ArgValueToString(value), text);
    EXPECT_EQ(OnlyValue("m(x=" + text + ")"), value);
  }
  EXPECT_EQ(ArgValueToString(ArgValue(std::nan(""))), "nan");
  EXPECT_EQ(ArgValueToString(ArgValue(0.1 + 0.2)), "0.30000000000000004");
}

// Verifies typed getters return present values of the right type.
TEST(SpecArgsTest, TypedGetters) {
  SpecArgs args = ArgsFor("m(i=3, d=0.5, di=2, b=true, s=macro, q='a b', il=[1, 2], dl=[0.5])");
  EXPECT_EQ(args.metric_name(), "m");
  EXPECT_EQ(*args.GetInt("i"), 3);
  EXPECT_EQ(*args.GetDouble("d"), 0.5);
  EXPECT_EQ(*args.GetDouble("di"), 2.0);
  EXPECT_EQ(*args.GetBool("b"), true);
  EXPECT_EQ(*args.GetString("s"), "macro");
  EXPECT_EQ(*args.GetString("q"), "a b");
  EXPECT_THAT(*args.GetIntList("il"), ElementsAre(1, 2));
  EXPECT_THAT(*args.GetDoubleList("dl"), ElementsAre(0.5));
  EXPECT_THAT(*args.GetStringList("q"), ElementsAre("a b"));  // one string is a list of one
  EXPECT_TRUE(args.CheckAllUsed().ok());
}

// Verifies defaults are used for absent arguments, and present values win.
TEST(SpecArgsTest, Defaults) {
  SpecArgs args = ArgsFor("m(k=7)");
  EXPECT_EQ(*args.GetInt("k", 1), 7);
  EXPECT_EQ(*args.GetInt("absent_int", 5), 5);
  EXPECT_EQ(*args.GetDouble("absent_double", 0.5), 0.5);
  EXPECT_EQ(*args.GetBool("absent_bool", true), true);
  EXPECT_EQ(*args.GetString("absent_string", "x"), "x");
  EXPECT_EQ(*args.GetEnum("absent_enum", {"micro", "macro"}, "macro"), "macro");
  EXPECT_THAT(*args.GetDoubleList("absent_list", std::vector<double>{0.5}), ElementsAre(0.5));
  EXPECT_THAT(*args.GetIntList("absent_ilist", std::vector<int64_t>{}), IsEmpty());
  EXPECT_TRUE(args.CheckAllUsed().ok());
}

// Verifies that a required argument that is absent is an error naming the
// metric and the argument.
TEST(SpecArgsTest, RequiredMissing) {
  SpecArgs args = ArgsFor("multiclass_accuracy");
  absl::StatusOr<int64_t> k = args.GetInt("num_classes");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(k.status().message(), "multiclass_accuracy: missing required argument 'num_classes'");
  EXPECT_FALSE(args.GetDouble("t").ok());
  EXPECT_FALSE(args.GetBool("b").ok());
  EXPECT_FALSE(args.GetString("s").ok());
  EXPECT_FALSE(args.GetEnum("e", {"a"}).ok());
  EXPECT_FALSE(args.GetDoubleList("l").ok());
  EXPECT_FALSE(args.GetIntList("l").ok());
}

// Verifies optional getters: absent or none give nullopt, values pass
// through, and wrong types are still errors.
TEST(SpecArgsTest, OptionalGetters) {
  SpecArgs args = ArgsFor("m(a=none, b=4, c=None, d=2, e=word, f=none, g=x)");
  EXPECT_EQ(*args.GetOptionalInt("a"), std::nullopt);
  EXPECT_EQ(*args.GetOptionalInt("b"), std::optional<int64_t>(4));
  EXPECT_EQ(*args.GetOptionalInt("absent"), std::nullopt);
  EXPECT_EQ(*args.GetOptionalDouble("c"), std::nullopt);
  EXPECT_EQ(*args.GetOptionalDouble("d"), std::optional<double>(2.0));
  EXPECT_EQ(*args.GetOptionalString("e"), std::optional<std::string>("word"));
  EXPECT_EQ(*args.GetOptionalString("f"), std::nullopt);
  absl::StatusOr<std::optional<int64_t>> bad = args.GetOptionalInt("g");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "m: argument 'g' must be an integer or none, got string 'x'");
  EXPECT_TRUE(args.CheckAllUsed().ok());
}

// Verifies type errors name the metric, the argument and the bad value.
TEST(SpecArgsTest, TypeErrors) {
  SpecArgs args = ArgsFor("m(i=3.0, n=none, d=yes, b=1, s=5, l=2, il=[0.5])");
  EXPECT_EQ(args.GetInt("i").status().message(), "m: argument 'i' must be an integer, got float 3.0");
  EXPECT_EQ(args.GetInt("n", 1).status().message(), "m: argument 'n' must be an integer, got none");
  EXPECT_EQ(args.GetDouble("d").status().message(), "m: argument 'd' must be a number, got string 'yes'");
  EXPECT_EQ(args.GetBool("b").status().message(), "m: argument 'b' must be true or false, got integer 1");
  EXPECT_EQ(args.GetString("s").status().message(), "m: argument 's' must be a string, got integer 5");
  EXPECT_EQ(args.GetDoubleList("l").status().message(), "m: argument 'l' must be a list of numbers, got integer 2");
  EXPECT_EQ(args.GetIntList("il").status().message(), "m: argument 'il' must be a list of integers, got list [0.5]");
  // Arguments that failed type checks still count as used.
  EXPECT_TRUE(args.CheckAllUsed().ok());
}

// Verifies GetEnum: allowed words and quoted strings pass, bare `none` maps to
// "none", other values list the allowed ones, and a bad default is Internal.
TEST(SpecArgsTest, Enum) {
  SpecArgs args = ArgsFor("m(a=macro, b=none, c='weighted', d=Macro, e=3)");
  const std::vector<absl::string_view> averages = {"micro", "macro", "weighted", "none"};
  EXPECT_EQ(*args.GetEnum("a", averages), "macro");
  EXPECT_EQ(*args.GetEnum("b", {"micro", "macro", "weighted", "none"}), "none");
  EXPECT_EQ(*args.GetEnum("c", averages, "micro"), "weighted");
  EXPECT_EQ(args.GetEnum("d", averages).status().message(),
            "m: argument 'd' must be one of 'micro', 'macro', 'weighted', "
            "'none', got string 'Macro'");
  EXPECT_THAT(args.GetEnum("e", averages).status().message(), HasSubstr("got integer 3"));
  absl::StatusOr<std::string> none_not_allowed = args.GetEnum("b", {"x", "y"});
  ASSERT_FALSE(none_not_allowed.ok());
  EXPECT_EQ(none_not_allowed.status().message(), "m: argument 'b' must be one of 'x', 'y', got none");
  absl::StatusOr<std::string> bad_default = args.GetEnum("absent", {"x", "y"}, "z");
  EXPECT_EQ(bad_default.status().code(), absl::StatusCode::kInternal);
}

// Verifies CheckAllUsed reports arguments the builder never read, with a
// suggestion for near misses and the list of accepted arguments.
TEST(SpecArgsTest, UnknownArguments) {
  SpecArgs args = ArgsFor("multiclass_accuracy(num_clases=3, average=macro)");
  EXPECT_FALSE(args.GetInt("num_classes").ok());
  EXPECT_TRUE(args.GetEnum("average", {"micro", "macro"}, "micro").ok());
  absl::Status s = args.CheckAllUsed();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "multiclass_accuracy: unknown argument 'num_clases' (did you mean "
            "'num_classes'?); accepted arguments: 'num_classes', 'average'");

  SpecArgs none = ArgsFor("accuracy(foo=1, bar=2)");
  s = none.CheckAllUsed();
  EXPECT_EQ(s.message(),
            "accuracy: unknown arguments 'foo', 'bar'; this metric takes no "
            "arguments");

  SpecArgs far = ArgsFor("m(zzz=1)");
  EXPECT_TRUE(far.GetInt("threshold", 1).ok());
  EXPECT_EQ(far.CheckAllUsed().message(), "m: unknown argument 'zzz'; accepted arguments: 'threshold'");
}

// Verifies Has does not mark arguments used while Find does, and Find
// returns the raw value.
TEST(SpecArgsTest, HasAndFind) {
  SpecArgs args = ArgsFor("m(t=[0.5, 0.7])");
  EXPECT_TRUE(args.Has("t"));
  EXPECT_FALSE(args.Has("u"));
  EXPECT_FALSE(args.CheckAllUsed().ok());
  EXPECT_EQ(args.Find("u"), nullptr);
  const ArgValue* t = args.Find("t");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(*t, ArgValue(std::vector<double>{0.5, 0.7}));
  EXPECT_TRUE(args.CheckAllUsed().ok());
}

// Verifies InvalidArgument prefixes builder messages with the metric name.
TEST(SpecArgsTest, InvalidArgumentHelper) {
  SpecArgs args = ArgsFor("topk(k=0)");
  absl::Status s = args.InvalidArgument("k must be >= 1, got 0");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "topk: k must be >= 1, got 0");
}

}  // namespace
}  // namespace tally::metrics
