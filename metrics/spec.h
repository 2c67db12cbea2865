// Metric specifications: the strings users write to ask for a metric, such as
//
//   accuracy
//   multiclass_accuracy(num_classes=5, average=macro)
//   binary_precision(threshold=0.3)
//   binned_auroc(thresholds=[0.1, 0.5, 0.9], label='p(y)')
//
// This file holds the parsed form of such a string (`MetricSpec`), its
// parser (`ParseMetricSpec`), and `SpecArgs`, a typed reader that metric
// builders use to pull their arguments out of a spec with defaults, type
// checks and a final check that no argument was misspelled.
//
// Grammar (whitespace is allowed around every token):
//
//   spec  := name [ '(' [ arg { ',' arg } [ ',' ] ] ')' ]
//   name  := identifier                       ([A-Za-z_][A-Za-z0-9_]*)
//   arg   := identifier '=' value
//   value := 'none' | 'None'                  -> std::monostate
//          | 'true' | 'True' | 'false' | 'False'  -> bool
//          | integer            e.g. 5, -1, +3     -> int64_t
//          | float              e.g. 0.3, 1e-6, -2.5, .5, 5., inf, -inf, nan
//                               (inf/infinity/nan in any case) -> double
//          | bare word          e.g. macro, top_k, v1.2, a-b  -> std::string
//            (starts with a letter or '_', then letters, digits, '_', '.',
//             '-'; anything else must be quoted)
//          | quoted string      '...' or "...", escapes \\ \' \" \n \t
//                                                  -> std::string
//          | list of numbers    [1, 2] -> std::vector<int64_t>,
//                               [0.1, 2] -> std::vector<double>
//                               (a list holding any float is a double list;
//                                [] is an empty int64 list)
//          | list of strings    ['rouge1', rougeL] -> std::vector<std::string>
//            (a tuple, `(...)`, is the same list, as Python writes it)
//
// All errors are `absl::InvalidArgumentError`s. Parse errors quote the spec
// and point at the problem:
//
//   bad metric spec 'multiclass_accuracy(num_classes=)': missing value for
//   'num_classes'
//
// and `SpecArgs` errors name the metric:
//
//   multiclass_accuracy: missing required argument 'num_classes'
//   multiclass_accuracy: unknown argument 'num_clases' (did you mean
//   'num_classes'?)

#ifndef TALLY_METRICS_SPEC_H_
#define TALLY_METRICS_SPEC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace tally::metrics {

// The value of one `key=value` argument of a metric spec. `std::monostate`
// is `none`. Note: when constructing one directly, pass exactly these types
// (e.g. `int64_t{5}`, `std::string("macro")`); a string literal would
// otherwise convert to `bool`.
using ArgValue = std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<int64_t>,
                              std::vector<double>, std::vector<std::string>>;

// Formats `value` in spec syntax such that `ParseMetricSpec` reads it back as
// the same value: `none`, `true`, `5`, `0.3`, `1.0`, `inf`, `macro`,
// `'needs quotes'`, `[1, 2]`, `[0.1, 0.5]`. Doubles use the shortest
// representation that round-trips and always contain '.', 'e', "inf" or
// "nan"; strings are left bare when that parses back as the same string.
std::string ArgValueToString(const ArgValue& value);

// A parsed metric spec.
struct MetricSpec {
  // The spec exactly as given to `ParseMetricSpec`.
  std::string text;
  // The metric name, e.g. "multiclass_accuracy".
  std::string name;
  // The arguments in the order written. Keys are unique.
  std::vector<std::pair<std::string, ArgValue>> args;
};

// Parses `text` per the grammar at the top of this file. Returns
// InvalidArgument, quoting `text`, for an empty or invalid name, a missing
// '=' or value, a duplicate key, an unterminated string or list, a missing
// ')', or text after the closing ')'.
absl::StatusOr<MetricSpec> ParseMetricSpec(absl::string_view text);

// Typed, checked access to the arguments of a `MetricSpec`, for metric
// builders. Each getter marks its argument as used (even if it then reports
// a type error), so that after reading everything it understands a builder
// can call `CheckAllUsed()` to reject misspelled or unsupported arguments.
// All errors are InvalidArgument and start with "<metric name>: ".
//
// Typical use:
//
//   SpecArgs args(spec);
//   absl::StatusOr<int64_t> k = args.GetInt("num_classes");
//   absl::StatusOr<std::string> avg =
//       args.GetEnum("average", {"micro", "macro", "weighted", "none"},
//                    "micro");
//   if (!k.ok()) return k.status();
//   if (!avg.ok()) return avg.status();
//   if (absl::Status s = args.CheckAllUsed(); !s.ok()) return s;
class SpecArgs {
 public:
  // Copies `spec`; the SpecArgs does not refer to it afterwards.
  explicit SpecArgs(MetricSpec spec);

  // Returns the metric name of the spec.
  const std::string& metric_name() const { return spec_.name; }

  // Returns the spec this reader was constructed from.
  const MetricSpec& spec() const { return spec_; }

  // Returns whether the spec has an argument called `name` (any value,
  // including none). Does not mark it as used.
  bool Has(absl::string_view name) const;

  // Returns the raw value of `name` and marks it as used, or nullptr if the
  // spec has no such argument. For arguments whose meaning depends on their
  // type (e.g. "an int count or a list of thresholds"). The pointer stays
  // valid for the lifetime of this SpecArgs.
  // `type` and `default_text` describe the argument in the metric catalogue
  // (`tally list-metrics --format markdown`), e.g. "a float or a word", "warn";
  // they change nothing here.
  const ArgValue* Find(absl::string_view name, absl::string_view type = "", absl::string_view default_text = "");

  // Returns the int64 value of `name`; `default_value` if it is absent.
  // Errors if it is absent without a default, or is not an integer (floats,
  // even integral ones like 3.0, and none are rejected).
  absl::StatusOr<int64_t> GetInt(absl::string_view name, std::optional<int64_t> default_value = std::nullopt);

  // Returns the int64 value of `name`, or nullopt if it is absent or none.
  // Errors if it has any other non-integer value.
  absl::StatusOr<std::optional<int64_t>> GetOptionalInt(absl::string_view name);

  // Returns the value of `name` as a double (integers are converted);
  // `default_value` if it is absent. Errors if it is absent without a
  // default or is not a number.
  absl::StatusOr<double> GetDouble(absl::string_view name, std::optional<double> default_value = std::nullopt);

  // Returns the value of `name` as a double (integers are converted), or
  // nullopt if it is absent or none. Errors if it is not a number.
  absl::StatusOr<std::optional<double>> GetOptionalDouble(absl::string_view name);

  // Returns the bool value of `name`; `default_value` if it is absent.
  // Errors if it is absent without a default or is not true/false.
  absl::StatusOr<bool> GetBool(absl::string_view name, std::optional<bool> default_value = std::nullopt);

  // Returns the string value (bare word or quoted) of `name`;
  // `default_value` if it is absent. Errors if it is absent without a
  // default or is not a string (none, numbers and bools are rejected).
  absl::StatusOr<std::string> GetString(absl::string_view name,
                                        std::optional<std::string> default_value = std::nullopt);

  // Returns the string value of `name`, or nullopt if it is absent or none.
  // Errors if it has any other non-string value.
  absl::StatusOr<std::optional<std::string>> GetOptionalString(absl::string_view name);

  // Returns the value of `name`, which must be one of `allowed` (compared
  // case-sensitively); `default_value` if it is absent. The value `none`
  // (which parses as std::monostate) is returned as "none" when "none" is in
  // `allowed`. Errors list the allowed values. Returns Internal if
  // `default_value` itself is not in `allowed` (a builder bug).
  absl::StatusOr<std::string> GetEnum(absl::string_view name, absl::Span<const absl::string_view> allowed,
                                      std::optional<std::string> default_value = std::nullopt);

  // Returns the list value of `name` as doubles (int lists are converted);
  // `default_value` if it is absent. Errors if it is absent without a
  // default or is not a list.
  absl::StatusOr<std::vector<double>> GetDoubleList(absl::string_view name,
                                                    std::optional<std::vector<double>> default_value = std::nullopt);

  // Returns the list value of `name`, which must contain only integers;
  // `default_value` if it is absent. Errors if it is absent without a
  // default or is not an integer list.
  absl::StatusOr<std::vector<int64_t>> GetIntList(absl::string_view name,
                                                  std::optional<std::vector<int64_t>> default_value = std::nullopt);

  // Returns the string list value of `name`; a single string is a list of
  // one; `default_value` if it is absent.
  absl::StatusOr<std::vector<std::string>> GetStringList(
      absl::string_view name, std::optional<std::vector<std::string>> default_value = std::nullopt);

  // Returns OK if every argument of the spec was read by some getter (or
  // `Find`), else InvalidArgument naming the unread ones, e.g.
  // "multiclass_accuracy: unknown argument 'num_clases' (did you mean
  // 'num_classes'?)". Suggestions come from the names the builder asked for.
  absl::Status CheckAllUsed() const;

  // Returns InvalidArgument("<metric name>: <message>"), for builders that
  // validate argument values themselves (e.g. "num_classes must be >= 2").
  absl::Status InvalidArgument(absl::string_view message) const;

  // One argument a builder asked for, in the order first asked: its name,
  // the type its getter reads ("int", "float", "bool", "string", "one of
  // ...", "int list", "float list", or Find's description), and the default
  // the getter was given ("" when it has none and the argument is required;
  // "none" for the optional getters). The metric catalogue is made of these.
  struct Request {
    std::string name;
    std::string type;
    std::string default_text;
    bool required = false;
  };
  const std::vector<Request>& requests() const { return requests_; }

 private:
  // Marks `name` as requested and returns its value (marking it used), or
  // nullptr if absent.
  const ArgValue* Lookup(absl::string_view name, absl::string_view type = "", std::string default_text = "",
                         bool required = false);
  absl::Status MissingError(absl::string_view name) const;
  absl::Status TypeError(absl::string_view name, absl::string_view expected, const ArgValue& got) const;

  MetricSpec spec_;
  std::vector<bool> used_;              // Parallel to spec_.args.
  std::vector<std::string> requested_;  // Names builders asked for.
  std::vector<Request> requests_;       // Parallel to requested_.
};

}  // namespace tally::metrics

#endif  // TALLY_METRICS_SPEC_H_
