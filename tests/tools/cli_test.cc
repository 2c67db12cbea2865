// Tests of the `tally` command line as a user runs it: the built binary,
// fed .npy files. Success paths print a table or the JSON contract of
// docs/cli.md; every bad input exits non-zero with exactly one line on stderr
// that names the metric or the input — never a stack trace, abort or signal.
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/io/npy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "nlohmann/json.hpp"
#include "tests/tools/cli_testing.h"

namespace tally {
namespace {

using ::testing::HasSubstr;
using json = nlohmann::json;

using ::tally::testing::Invocation;
using ::tally::testing::OneCleanErrorLine;
using ::tally::testing::RunTally;
using ::tally::testing::TallyBinary;

std::string TmpDir() { return ::tally::testing::TestTmpDir(); }

using ::tally::testing::ReadFile;

class CliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_FALSE(TallyBinary().empty()) << "tools/tally/tally not found in the runfiles";
    dir_ = new std::string(absl::StrCat(TmpDir(), "/fixtures"));
    mkdir(dir_->c_str(), 0755);
    // 4 rows of 3-class probabilities and labels.
    WriteF32("preds", {4, 3}, {0.1f, 0.7f, 0.2f, 0.8f, 0.1f, 0.1f, 0.2f, 0.2f, 0.6f, 0.3f, 0.4f, 0.3f});
    WriteI64("target", {4}, {1, 0, 2, 0});
    WriteI64("target_3rows", {3}, {1, 0, 2});
    WriteI64("target_out_of_range", {4}, {1, 0, 5, 0});
    WriteF64("target_float", {4}, {1, 0, 2, 0});
    WriteF32("preds_rank3", {4, 3, 2}, std::vector<float>(24, 0.5f));
    WriteF32("value", {4}, {1, 2, NAN, 4});
    WriteF32("value_ints", {6}, {3, -1, 4, 1, -5, 9});
    WriteF32("empty", {0}, {});
    WriteF32("value_inf", {2}, {1, INFINITY});
    // A valid file cut short.
    std::string full = ReadFile(Path("preds"));
    std::ofstream(Path("truncated"), std::ios::binary) << full.substr(0, full.size() - 7);
    std::ofstream(Path("not_npy"), std::ios::binary) << "this is not a numpy file";
    // A valid byte-string file (a dtype Tally does not read): a bool file
    // with the descr changed, which keeps the header length.
    io::NpyArray b;
    b.dtype = io::NpyDType::kBool;
    b.shape = {4};
    b.data = std::string("\1\0\1\1", 4);
    std::string bytes = io::SerializeNpy(b);
    size_t at = bytes.find("|b1");
    ASSERT_NE(at, std::string::npos);
    bytes.replace(at, 3, "|S1");
    std::ofstream(Path("bytes_s1"), std::ios::binary) << bytes;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static std::string Path(const std::string& name) { return absl::StrCat(*dir_, "/", name, ".npy"); }
  static std::string In(const std::string& input, const std::string& file) {
    return absl::StrCat(input, "=", Path(file));
  }

  static void Write(const std::string& name, io::NpyDType dtype, std::vector<int64_t> shape, const void* data,
                    size_t bytes) {
    ASSERT_TRUE(testing::WriteNpyFile(Path(name), dtype, std::move(shape), data, bytes).ok());
  }
  static void WriteF32(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& v) {
    Write(name, io::NpyDType::kFloat32, std::move(shape), v.data(), v.size() * sizeof(float));
  }
  static void WriteF64(const std::string& name, std::vector<int64_t> shape, const std::vector<double>& v) {
    Write(name, io::NpyDType::kFloat64, std::move(shape), v.data(), v.size() * sizeof(double));
  }
  static void WriteI64(const std::string& name, std::vector<int64_t> shape, const std::vector<int64_t>& v) {
    Write(name, io::NpyDType::kInt64, std::move(shape), v.data(), v.size() * sizeof(int64_t));
  }

  // WriteRaw writes an .npy file in any dtype: `descr` and `fortran_order` go
  // into the header as given, `data` is the element bytes in file order.
  static void WriteRaw(const std::string& name, const std::string& descr, bool fortran_order, const std::string& shape,
                       const std::string& data) {
    std::string header = absl::StrCat("{'descr': '", descr, "', 'fortran_order': ", fortran_order ? "True" : "False",
                                      ", 'shape': ", shape, ", }");
    header.append(63 - (10 + header.size()) % 64, ' ');
    header.push_back('\n');
    std::string bytes("\x93NUMPY\x01\x00", 8);
    bytes.push_back(static_cast<char>(header.size() & 0xFF));
    bytes.push_back(static_cast<char>(header.size() >> 8));
    std::ofstream(Path(name), std::ios::binary) << bytes << header << data;
  }

  // Multiclass runs multiclass_accuracy(num_classes=3) with extra args.
  static Invocation Multiclass(const std::string& preds, const std::string& target,
                               std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {
        "eval",    "--metric",          "multiclass_accuracy(num_classes=3)", "--input", In("preds", preds),
        "--input", In("target", target)};
    args.insert(args.end(), extra.begin(), extra.end());
    return RunTally(args);
  }

  static std::string* dir_;
};

std::string* CliTest::dir_ = nullptr;

// ParseResults parses `--format json` output and checks its exact shape:
// {"results": [{"metric": <string>, "value": <number | null | nested list>}]}.
::testing::AssertionResult ParseResults(const Invocation& r, json* results) {
  if (r.exit_code != 0) return ::testing::AssertionFailure() << r;
  json doc = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return ::testing::AssertionFailure() << "stdout is not JSON\n" << r;
  if (!doc.is_object() || doc.size() != 1 || !doc.contains("results") || !doc["results"].is_array()) {
    return ::testing::AssertionFailure() << "not {\"results\": [...]}\n" << r;
  }
  for (const json& e : doc["results"]) {
    if (!e.is_object() || e.size() != 2 || !e.contains("metric") || !e["metric"].is_string() || !e.contains("value")) {
      return ::testing::AssertionFailure() << "bad result entry " << e.dump() << "\n" << r;
    }
    const json& v = e["value"];
    if (!(v.is_number() || v.is_null() || v.is_array())) {
      return ::testing::AssertionFailure() << "bad value " << v.dump() << "\n" << r;
    }
  }
  *results = doc["results"];
  return ::testing::AssertionSuccess();
}

// Verifies that `tally eval` without --input runs on the demo data, exits 0
// and prints a table with a header and a row per metric.
TEST_F(CliTest, DemoEvalPrintsATable) {
  Invocation r = RunTally({"eval"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_EQ(r.err, "") << r;
  EXPECT_THAT(r.out, HasSubstr("demo data"));
  std::istringstream lines(r.out);
  std::string line;
  bool header = false;
  int rows = 0;
  while (std::getline(lines, line)) {
    if (absl::StartsWith(line, "metric") && absl::StrContains(line, "value"))
      header = true;
    else if (header && !absl::StartsWith(line, "---") && !line.empty())
      ++rows;
  }
  EXPECT_TRUE(header) << r;
  EXPECT_GE(rows, 1) << r;

  Invocation j = RunTally({"eval", "--format", "json"});
  json results;
  ASSERT_TRUE(ParseResults(j, &results));
  EXPECT_EQ(static_cast<int>(results.size()), rows);
}

// Verifies the JSON contract: one entry per --metric in order, the spec
// exactly as given (spaces included), numbers, and NaN written as null.
TEST_F(CliTest, JsonShapeAndNaNAsNull) {
  Invocation r = RunTally({"eval", "--metric", "mean", "--metric", "sum( nan_strategy = ignore )", "--metric",
                           "mean(nan_strategy=disable)", "--input", In("value", "value"), "--format", "json"});
  json results;
  ASSERT_TRUE(ParseResults(r, &results));
  ASSERT_EQ(results.size(), 3u) << r;
  EXPECT_EQ(results[0]["metric"], "mean");
  EXPECT_DOUBLE_EQ(results[0]["value"].get<double>(), 7.0 / 3.0);
  EXPECT_EQ(results[1]["metric"], "sum( nan_strategy = ignore )");
  EXPECT_EQ(results[1]["value"].get<double>(), 7.0);
  EXPECT_EQ(results[2]["metric"], "mean(nan_strategy=disable)");
  EXPECT_TRUE(results[2]["value"].is_null()) << r;
  EXPECT_THAT(r.out, HasSubstr("\"value\": null")) << r;
  EXPECT_EQ(r.err, "");
}

// Verifies that infinite results (max of nothing, a sum reaching inf) keep
// the JSON strictly valid (null, as JSON has no infinities) while the table
// says -inf and inf; empty inputs are a valid evaluation.
TEST_F(CliTest, InfinitiesKeepJsonValid) {
  Invocation r = RunTally({"eval", "--metric", "max", "--metric", "min", "--metric", "sum", "--input",
                           In("value", "empty"), "--format", "json"});
  json results;
  ASSERT_TRUE(ParseResults(r, &results));
  EXPECT_TRUE(results[0]["value"].is_null()) << r;
  EXPECT_TRUE(results[1]["value"].is_null()) << r;
  EXPECT_EQ(results[2]["value"].get<double>(), 0.0);
  EXPECT_THAT(r.out, ::testing::Not(HasSubstr("Infinity")));
  ASSERT_TRUE(ParseResults(
      RunTally({"eval", "--metric", "sum", "--input", In("value", "value_inf"), "--format", "json"}), &results));
  EXPECT_TRUE(results[0]["value"].is_null());
  Invocation table = RunTally({"eval", "--metric", "max", "--metric", "min", "--input", In("value", "empty")});
  ASSERT_EQ(table.exit_code, 0) << table;
  EXPECT_THAT(table.out, HasSubstr("-inf"));
  EXPECT_THAT(table.out, ::testing::ContainsRegex("min +inf"));
}

// Verifies that --batch-size gives the same results as one update, and that
// the command line accepts the preds name for aggregation input.
TEST_F(CliTest, BatchSizeDoesNotChangeResults) {
  json one, batched;
  ASSERT_TRUE(ParseResults(RunTally({"eval", "--metric", "mean", "--metric", "max", "--input",
                                     In("value", "value_ints"), "--format", "json"}),
                           &one));
  ASSERT_TRUE(ParseResults(RunTally({"eval", "--metric", "mean", "--metric", "max", "--input",
                                     In("value", "value_ints"), "--format", "json", "--batch-size", "4"}),
                           &batched));
  EXPECT_EQ(one, batched);
  EXPECT_EQ(one[1]["value"].get<double>(), 9.0);
  json preds;
  ASSERT_TRUE(ParseResults(
      RunTally({"eval", "--metric", "mean", "--input", In("preds", "value_ints"), "--format", "json"}), &preds));
  EXPECT_EQ(preds[0]["value"].get<double>(), 11.0 / 6.0);
}

// Verifies a multiclass metric end to end, also batched and as a table.
TEST_F(CliTest, MulticlassAccuracy) {
  ASSERT_NE(metrics::FindMetric("multiclass_accuracy"), nullptr) << "multiclass_accuracy not registered";
  json one, batched;
  ASSERT_TRUE(ParseResults(Multiclass("preds", "target", {"--format", "json"}), &one));
  ASSERT_TRUE(ParseResults(Multiclass("preds", "target", {"--format", "json", "--batch-size", "3"}), &batched));
  EXPECT_EQ(one, batched);
  EXPECT_EQ(one[0]["metric"], "multiclass_accuracy(num_classes=3)");
  ASSERT_TRUE(one[0]["value"].is_number());
  Invocation table = Multiclass("preds", "target");
  ASSERT_EQ(table.exit_code, 0) << table;
  EXPECT_THAT(table.out, HasSubstr("multiclass_accuracy(num_classes=3)"));
  EXPECT_THAT(table.out, ::testing::Not(HasSubstr("demo data")));
}

// Verifies that the dtypes TorchMetrics users save but Tally converts on read
// give the same results as the native ones: uint8 targets with float16 preds
// (little- and big-endian) for binary_accuracy, and a Fortran-order
// big-endian float64 preds matrix with int8 targets for multiclass_accuracy.
TEST_F(CliTest, ConvertedDTypesMatchNativeOnes) {
  // 0.25, 0.75, 0.375, 0.875, 0.125, 0.625 as IEEE half bits.
  const std::vector<uint16_t> half = {0x3400, 0x3A00, 0x3600, 0x3B00, 0x3000, 0x3900};
  std::string le, be;
  for (uint16_t h : half) {
    le += {static_cast<char>(h & 0xFF), static_cast<char>(h >> 8)};
    be += {static_cast<char>(h >> 8), static_cast<char>(h & 0xFF)};
  }
  WriteRaw("bin_preds_f2le", "<f2", false, "(6,)", le);
  WriteRaw("bin_preds_f2be", ">f2", false, "(6,)", be);
  WriteRaw("bin_target_u1", "|u1", false, "(6,)", std::string("\0\1\1\1\0\0", 6));
  WriteF32("bin_preds_f4", {6}, {0.25f, 0.75f, 0.375f, 0.875f, 0.125f, 0.625f});
  WriteI64("bin_target_i8", {6}, {0, 1, 1, 1, 0, 0});
  auto binary = [&](const std::string& preds, const std::string& target, json* out) {
    return ParseResults(RunTally({"eval", "--format", "json", "--metric", "binary_accuracy", "--input",
                                  In("preds", preds), "--input", In("target", target)}),
                        out);
  };
  json native, half_le, half_be;
  ASSERT_TRUE(binary("bin_preds_f4", "bin_target_i8", &native));
  ASSERT_TRUE(binary("bin_preds_f2le", "bin_target_u1", &half_le));
  ASSERT_TRUE(binary("bin_preds_f2be", "bin_target_u1", &half_be));
  EXPECT_NEAR(native[0]["value"].get<double>(), 4.0 / 6.0, 1e-6);
  EXPECT_EQ(half_le, native);
  EXPECT_EQ(half_be, native);

  ASSERT_NE(metrics::FindMetric("multiclass_accuracy"), nullptr) << "multiclass_accuracy not registered";
  // The "preds" fixture (4 x 3, float32 values widened exactly to float64),
  // column by column, each value big-endian; the "target" labels as int8.
  const std::vector<float> p = {0.1f, 0.7f, 0.2f, 0.8f, 0.1f, 0.1f, 0.2f, 0.2f, 0.6f, 0.3f, 0.4f, 0.3f};
  std::string fortran;
  for (int col = 0; col < 3; ++col) {
    for (int row = 0; row < 4; ++row) {
      const double v = p[row * 3 + col];
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof(bits));
      for (int i = 7; i >= 0; --i) fortran.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
    }
  }
  WriteRaw("mc_preds_fortran_f8be", ">f8", true, "(4, 3)", fortran);
  WriteRaw("mc_target_i1", "|i1", false, "(4,)", std::string("\1\0\2\0", 4));
  json mc_native, mc_converted;
  ASSERT_TRUE(ParseResults(Multiclass("preds", "target", {"--format", "json"}), &mc_native));
  ASSERT_TRUE(ParseResults(Multiclass("mc_preds_fortran_f8be", "mc_target_i1", {"--format", "json"}), &mc_converted));
  EXPECT_EQ(mc_converted, mc_native);
}

// Verifies that a tuple result prints as the nested list of its parts, as
// `[x.tolist() ...]` of TorchMetrics' tuple gives: binary_roc's (fpr, tpr,
// thresholds), and the exact multiclass form's per-class lists.
TEST_F(CliTest, TupleResultsAreNestedLists) {
  WriteF32("roc_preds", {4}, {0.0f, 0.5f, 0.7f, 0.8f});
  WriteI64("roc_target", {4}, {0, 1, 1, 0});
  json results;
  ASSERT_TRUE(ParseResults(RunTally({"eval", "--format", "json", "--metric", "binary_roc", "--input",
                                     In("preds", "roc_preds"), "--input", In("target", "roc_target")}),
                           &results));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0]["metric"], "binary_roc");
  json want = json::parse("[[0.0, 0.5, 0.5, 0.5, 1.0], [0.0, 0.0, 0.5, 1.0, 1.0], [1.0, 0.8, 0.7, 0.5, 0.0]]");
  const json& got = results[0]["value"];
  ASSERT_EQ(got.size(), 3u) << got.dump();
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(got[i].size(), want[i].size()) << got.dump();
    for (size_t j = 0; j < want[i].size(); ++j) EXPECT_NEAR(got[i][j].get<double>(), want[i][j].get<double>(), 1e-6);
  }
  Invocation mc = RunTally({"eval", "--format", "json", "--metric", "multiclass_roc(num_classes=3)", "--input",
                            In("preds", "preds"), "--input", In("target", "target")});
  ASSERT_TRUE(ParseResults(mc, &results));
  const json& curves = results[0]["value"];
  ASSERT_EQ(curves.size(), 3u) << mc;
  for (const json& part : curves) {
    ASSERT_EQ(part.size(), 3u) << mc;  // one curve per class
    for (const json& c : part) EXPECT_TRUE(c.is_array() && !c.empty()) << mc;
  }
}

// Verifies TorchMetrics' task wrappers end to end: accuracy(task=binary) as
// JSON, accuracy(task=multiclass) averaging micro like
// multiclass_accuracy(average=micro), list-metrics showing them, inspect and
// the demo data taking the inputs of the task, and a missing task as one
// error line naming the metric and the argument.
TEST_F(CliTest, TaskWrappers) {
  WriteF32("wrap_preds", {6}, {0.2f, 0.8f, 0.6f, 0.4f, 0.9f, 0.1f});
  WriteI64("wrap_target", {6}, {0, 1, 0, 0, 1, 1});
  json results;
  ASSERT_TRUE(ParseResults(RunTally({"eval", "--format", "json", "--metric", "accuracy(task=binary)", "--input",
                                     In("preds", "wrap_preds"), "--input", In("target", "wrap_target")}),
                           &results));
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0]["metric"], "accuracy(task=binary)");
  EXPECT_DOUBLE_EQ(results[0]["value"].get<double>(), 4.0 / 6.0);

  // Argmax of the "preds" fixture: 1, 0, 2, 1 for targets 1, 0, 2, 0.
  ASSERT_TRUE(ParseResults(
      RunTally({"eval", "--format", "json", "--metric", "accuracy(task=multiclass, num_classes=3)", "--metric",
                "multiclass_accuracy(num_classes=3, average=micro)", "--metric", "multiclass_accuracy(num_classes=3)",
                "--input", In("preds", "preds"), "--input", In("target", "target"), "--batch-size", "3"}),
      &results));
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0]["metric"], "accuracy(task=multiclass, num_classes=3)");
  EXPECT_DOUBLE_EQ(results[0]["value"].get<double>(), 0.75);
  EXPECT_EQ(results[0]["value"], results[1]["value"]);
  EXPECT_DOUBLE_EQ(results[2]["value"].get<double>(), (0.5 + 1.0 + 1.0) / 3.0);  // macro

  Invocation list = RunTally({"list-metrics"});
  ASSERT_EQ(list.exit_code, 0) << list;
  EXPECT_THAT(list.out, HasSubstr("accuracy  (task_wrapper; inputs: preds, target, weight)"));
  EXPECT_THAT(list.out, HasSubstr("\nauroc  (task_wrapper"));
  Invocation inspect = RunTally({"inspect", "--metric", "auroc(task=multilabel, num_labels=4)"});
  EXPECT_EQ(inspect.exit_code, 0) << inspect;
  Invocation demo = RunTally({"eval", "--metric", "f1_score(task=binary)"});
  EXPECT_EQ(demo.exit_code, 0) << demo;
  EXPECT_THAT(demo.out, HasSubstr("binary"));

  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric", "accuracy", "--input", In("preds", "wrap_preds"),
                                          "--input", In("target", "wrap_target")}),
                                {"accuracy", "'task'"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric", "exact_match(task=binary)", "--input",
                                          In("preds", "wrap_preds"), "--input", In("target", "wrap_target")}),
                                {"exact_match", "'task'", "'multiclass', 'multilabel'"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric", "recall(task=multiclass, num_classes=3)", "--input",
                                          In("preds", "preds"), "--input", In("target", "target_out_of_range")}),
                                {"recall", "target"}));
}

// Verifies the spec errors: a malformed spec, an unknown metric, an unknown
// argument, a bad argument value.
TEST_F(CliTest, BadSpecs) {
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric", "mean(", "--input", In("value", "value")}), {"mean("}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric", "mean(nan_strategy)", "--input", In("value", "value")}),
                                {"mean", "nan_strategy"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric", "no_such_metric", "--input", In("value", "value")}),
                                {"unknown metric", "no_such_metric"}));
  EXPECT_TRUE(
      OneCleanErrorLine(RunTally({"eval", "--metric", "mean(nan_stratgy=warn)", "--input", In("value", "value")}),
                        {"mean", "unknown argument", "nan_stratgy"}));
  EXPECT_TRUE(
      OneCleanErrorLine(RunTally({"eval", "--metric", "mean(nan_strategy=sometimes)", "--input", In("value", "value")}),
                        {"mean", "nan_strategy"}));
}

// Verifies the file errors: missing, truncated and not-npy files name the
// input.
TEST_F(CliTest, BadFiles) {
  EXPECT_TRUE(OneCleanErrorLine(
      RunTally({"eval", "--metric", "mean", "--input", absl::StrCat("value=", *dir_, "/missing.npy")}),
      {"input 'value'", "missing.npy"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric", "mean", "--input", In("value", "truncated")}),
                                {"input 'value'", "truncated"}));
  EXPECT_TRUE(
      OneCleanErrorLine(RunTally({"eval", "--metric", "mean", "--input", In("value", "not_npy")}), {"input 'value'"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric", "mean", "--input", In("value", "bytes_s1")}),
                                {"input 'value'", "S1", "byte strings"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric", "mean", "--input", absl::StrCat("value=", *dir_)}),
                                {"input 'value'"}));
}

// Verifies the input errors: wrong shape, wrong dtype, row counts that
// differ, an unknown input name, a malformed --input.
TEST_F(CliTest, BadInputs) {
  ASSERT_NE(metrics::FindMetric("multiclass_accuracy"), nullptr) << "multiclass_accuracy not registered";
  EXPECT_TRUE(OneCleanErrorLine(Multiclass("preds_rank3", "target"), {"multiclass_accuracy", "preds"}));
  EXPECT_TRUE(OneCleanErrorLine(Multiclass("preds", "target_float"), {"multiclass_accuracy", "target"}));
  EXPECT_TRUE(OneCleanErrorLine(Multiclass("preds", "target_3rows"), {"target", "preds", "rows"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric", "mean", "--input", In("values", "value")}), {"values"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric", "mean", "--input", "value"}), {"--input"}));
}

// Verifies that labels outside [0, num_classes) are an error naming the
// metric and the input.
TEST_F(CliTest, OutOfRangeLabel) {
  ASSERT_NE(metrics::FindMetric("multiclass_accuracy"), nullptr) << "multiclass_accuracy not registered";
  EXPECT_TRUE(OneCleanErrorLine(Multiclass("preds", "target_out_of_range"), {"multiclass_accuracy", "target"}));
  EXPECT_TRUE(OneCleanErrorLine(Multiclass("preds", "target_out_of_range", {"--batch-size", "1"}),
                                {"multiclass_accuracy", "target"}));
}

// Verifies that a deferred value check (NaN with nan_strategy=error) is
// reported like any other bad input.
TEST_F(CliTest, DeferredCheckFailure) {
  EXPECT_TRUE(
      OneCleanErrorLine(RunTally({"eval", "--metric", "mean(nan_strategy=error)", "--input", In("value", "value")}),
                        {"mean", "value", "1 NaN"}));
}

// Verifies --world-size 2 and --backend torchscript: they either work (the
// same numbers as the defaults) or say plainly that they are not yet
// supported.
TEST_F(CliTest, WorldSizeAndBackend) {
  json base;
  ASSERT_TRUE(ParseResults(
      RunTally({"eval", "--metric", "mean", "--input", In("value", "value_ints"), "--format", "json"}), &base));
  for (std::vector<std::string> flags :
       {std::vector<std::string>{"--world-size", "2"}, std::vector<std::string>{"--backend", "torchscript"}}) {
    std::vector<std::string> args = {"eval",     "--metric", "mean", "--input", In("value", "value_ints"),
                                     "--format", "json"};
    args.insert(args.end(), flags.begin(), flags.end());
    Invocation r = RunTally(args);
    SCOPED_TRACE(flags[0]);
    if (r.exit_code == 0) {
      json results;
      ASSERT_TRUE(ParseResults(r, &results));
      EXPECT_EQ(results, base);
    } else {
      EXPECT_TRUE(OneCleanErrorLine(r, {flags[0], "not yet supported"}));
    }
  }
}

// Verifies the flag errors: bad --batch-size values, --world-size 0, an
// unknown backend, format and flag, a flag without its value, an unknown
// command.
TEST_F(CliTest, BadFlags) {
  for (const char* bs : {"0", "-3", "abc", "2.5"}) {
    EXPECT_TRUE(
        OneCleanErrorLine(RunTally({"eval", "--metric", "mean", "--input", In("value", "value"), "--batch-size", bs}),
                          {"--batch-size", bs}));
  }
  EXPECT_TRUE(OneCleanErrorLine(
      RunTally({"eval", "--metric", "mean", "--input", In("value", "value"), "--world-size", "0"}), {"--world-size"}));
  EXPECT_TRUE(OneCleanErrorLine(
      RunTally({"eval", "--metric", "mean", "--input", In("value", "value"), "--backend", "jax"}), {"jax"}));
  EXPECT_TRUE(OneCleanErrorLine(
      RunTally({"eval", "--metric", "mean", "--input", In("value", "value"), "--format", "xml"}), {"--format", "xml"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric", "mean", "--input", In("value", "value"), "--frobnicate"}),
                                {"unknown flag", "--frobnicate"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric"}), {"--metric"}));
  EXPECT_TRUE(OneCleanErrorLine(
      RunTally({"eval", "--metric", "mean", "--input", In("value", "value"), "--device", "gpu"}), {"gpu"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"frobnicate"}), {"frobnicate"}));
}

// Verifies that a device this machine lacks is a clean error for eval, while
// inspect plans for it without hardware.
TEST_F(CliTest, MissingDevice) {
  EXPECT_TRUE(OneCleanErrorLine(
      RunTally({"eval", "--metric", "mean", "--input", In("value", "value"), "--device", "cuda:1"}), {"cuda:1"}));
  Invocation r = RunTally({"inspect", "--metric", "mean", "--device", "cuda:1"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_THAT(r.out, HasSubstr("@cuda:1"));
}

// TextFile writes `bytes` as a .txt input and returns NAME=PATH.
std::string TextFile(const std::string& input, const std::string& file, const std::string& bytes) {
  const std::string path = absl::StrCat(testing::TestTmpDir(), "/", file, ".txt");
  std::ofstream(path, std::ios::binary) << bytes;
  return absl::StrCat(input, "=", path);
}

// Verifies text inputs against TorchMetrics' documented examples (its
// docstrings: WER 0.5, MER 0.4444, WIL 0.6528, WIP 0.3472, CER 0.3415 =
// 14/41, edit distance 3.5), each metric split its own way in one run:
// words for the word rates, Unicode code points for char_error_rate and
// edit_distance; Python's whitespace (no-break space included), CRLF lines
// and a byte-order mark; and the errors for bad bytes and non-text metrics.
TEST_F(CliTest, TextFiles) {
  const std::string hyp = TextFile("preds", "hyp", "this is the prediction\nthere is an other sample\n");
  const std::string ref = TextFile("target", "ref", "\xEF\xBB\xBFthis is the reference\r\nthere is another one");
  Invocation r = RunTally({"eval", "--format", "json", "--input", hyp, "--input", ref, "--metric", "word_error_rate",
                           "--metric", "char_error_rate", "--metric", "match_error_rate", "--metric",
                           "word_information_lost", "--metric", "word_information_preserved"});
  json results;
  ASSERT_TRUE(ParseResults(r, &results));
  ASSERT_EQ(results.size(), 5u);
  const double want[] = {0.5, 14.0 / 41.0, 4.0 / 9.0, 47.0 / 72.0, 25.0 / 72.0};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(results[i]["value"].get<double>(), want[i], 1e-15) << results[i];
  EXPECT_EQ(results[1]["metric"], "char_error_rate");

  r = RunTally({"eval", "--format", "json", "--metric", "edit_distance", "--input",
                TextFile("preds", "edit_hyp", "rain\nlnaguaeg\n"), "--input",
                TextFile("target", "edit_ref", "shine\nlanguage\n")});
  ASSERT_TRUE(ParseResults(r, &results));
  EXPECT_EQ(results[0]["value"].get<double>(), 3.5);

  // Two code points differ of eleven; both words differ; U+00A0 and runs of
  // spaces separate words as str.split() does.
  const std::string uni_hyp = TextFile("preds", "uni_hyp",
                                       "h\xC3\xA9llo w\xC3\xB6rld\na\xC2\xA0"
                                       "b  c\n");
  const std::string uni_ref = TextFile("target", "uni_ref", "hello world\na b c\n");
  r = RunTally({"eval", "--format", "json", "--input", uni_hyp, "--input", uni_ref, "--metric", "word_error_rate",
                "--metric", "char_error_rate"});
  ASSERT_TRUE(ParseResults(r, &results));
  EXPECT_NEAR(results[0]["value"].get<double>(), 2.0 / 5.0, 1e-15);
  // Characters: 2 edits in the first line; "a\u00a0b  c" against "a b c"
  // substitutes the no-break space and has one space more: 4 edits of 16.
  EXPECT_NEAR(results[1]["value"].get<double>(), 4.0 / 16.0, 1e-15);

  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric", "word_error_rate", "--input",
                                          TextFile("preds", "bad_utf8", "fine\nbad \xFF\n"), "--input", ref}),
                                {"input 'preds'", "line 2", "UTF-8"}));
  EXPECT_TRUE(OneCleanErrorLine(RunTally({"eval", "--metric", "mean", "--input", TextFile("value", "v", "1\n")}),
                                {"mean", "takes no text"}));
  EXPECT_TRUE(
      OneCleanErrorLine(RunTally({"eval", "--metric", "word_error_rate", "--metric", "char_error_rate", "--input", hyp,
                                  "--input", ref, "--save-state", absl::StrCat(testing::TestTmpDir(), "/s.tally")}),
                        {"word_error_rate", "char_error_rate", "one at a time"}));
}

// Verifies BLEU from text files, references in two files (one line each per
// row): TorchMetrics' docstring example, 0.7598 = (5/6 4/5 3/4 2/3)^(1/4)
// with no brevity penalty, for bleu_score and for sacre_bleu_score over
// words ('none'); 13a sets the period apart, (6/7 5/6 4/5 3/4)^(1/4), and
// lowercase finds the upper-case words; files of unequal lengths are refused.
TEST_F(CliTest, BleuFromTextFiles) {
  const std::string ref = absl::StrCat(TextFile("target", "bleu_ref1", "there is a cat on the mat.\n"), ",",
                                       TextFile("x", "bleu_ref2", "a cat is on the mat.\n").substr(2));
  auto value = [&](const std::string& hyp, const std::string& metric) {
    json results;
    Invocation r = RunTally({"eval", "--format", "json", "--input", TextFile("preds", "bleu_hyp", hyp), "--input", ref,
                             "--metric", metric});
    return ParseResults(r, &results) ? results[0]["value"].get<double>() : -1.0;
  };
  EXPECT_NEAR(value("the cat is on the mat.\n", "bleu_score"), std::pow(1.0 / 3.0, 0.25), 1e-15);
  EXPECT_NEAR(value("the cat is on the mat.\n", "sacre_bleu_score(tokenize='none')"), std::pow(1.0 / 3.0, 0.25), 1e-15);
  EXPECT_NEAR(value("the cat is on the mat.\n", "sacre_bleu_score"), std::pow(3.0 / 7.0, 0.25), 1e-15);
  EXPECT_NEAR(value("THE CAT IS ON THE MAT.\n", "sacre_bleu_score(lowercase=true)"), std::pow(3.0 / 7.0, 0.25), 1e-15);
  EXPECT_EQ(value("THE CAT IS ON THE MAT.\n", "sacre_bleu_score"), 0.0);
  EXPECT_TRUE(OneCleanErrorLine(
      RunTally({"eval", "--metric", "bleu_score", "--input", TextFile("preds", "bleu_hyp2", "a\nb\n"), "--input",
                absl::StrCat(TextFile("target", "bleu_r1", "a\nb\n"), ",", TextFile("x", "bleu_r2", "a\n").substr(2))}),
      {"input 'target'", "1 lines", "one line each per row"}));
}

// Verifies chrF++, ROUGE and SQuAD from text files against TorchMetrics'
// documented examples (chrF 0.8640; ROUGE 0.75 / 0 / 0.5 / 0.5 per key;
// SQuAD 100 / 100), chrF without words and ROUGE's lowercase words
// ("JOHN!" is "john"), and references read from one tab-separated file
// (a row with fewer references has absent ones).
TEST_F(CliTest, ChrfRougeSquadFromTextFiles) {
  json results;
  const std::string chrf_ref = absl::StrCat(testing::TestTmpDir(), "/chrf_refs.tsv");
  std::ofstream(chrf_ref, std::ios::binary) << "there is a cat on the mat\ta cat is on the mat\n";
  Invocation r =
      RunTally({"eval", "--format", "json", "--input", TextFile("preds", "chrf_hyp", "the cat is on the mat\n"),
                "--input", absl::StrCat("target=", chrf_ref), "--metric", "chrf_score", "--metric",
                "chrf_score(n_word_order=0)", "--metric", "bleu_score"});
  ASSERT_TRUE(ParseResults(r, &results)) << r;
  EXPECT_NEAR(results[0]["value"].get<double>(), 0.8640, 5e-5);
  EXPECT_NE(results[1]["value"].get<double>(), results[0]["value"].get<double>());
  EXPECT_NEAR(results[2]["value"].get<double>(), 0.7598, 5e-5);

  r = RunTally({"eval", "--format", "json", "--input", TextFile("preds", "rouge_hyp", "My name is JOHN!\n"), "--input",
                TextFile("target", "rouge_ref", "Is your name John\n"), "--metric", "rouge_score", "--metric",
                "rouge_score(rouge_keys=('rougeL', 'rouge1'))"});
  ASSERT_TRUE(ParseResults(r, &results)) << r;
  const std::vector<double> want = {0.75, 0.75, 0.75, 0, 0, 0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5};
  EXPECT_EQ(results[0]["value"].get<std::vector<double>>(), want);
  EXPECT_EQ(results[1]["value"].get<std::vector<double>>(), (std::vector<double>{0.5, 0.5, 0.5, 0.75, 0.75, 0.75}));

  // Row 1 matches its second answer exactly; row 2 ("The Tower") shares one
  // word of two with "tower of pisa" (F1 2/4) and has one answer only.
  const std::string answers = absl::StrCat(testing::TestTmpDir(), "/answers.tsv");
  std::ofstream(answers, std::ios::binary) << "1975\t1976.\ntower of Pisa\n";
  r = RunTally({"eval", "--format", "json", "--input", TextFile("preds", "squad_hyp", "1976\nThe Tower\n"), "--input",
                absl::StrCat("target=", answers), "--metric", "squad"});
  ASSERT_TRUE(ParseResults(r, &results)) << r;
  EXPECT_EQ(results[0]["value"].get<std::vector<double>>(), (std::vector<double>{50.0, 100.0 * (1.0 + 0.5) / 2}));
  EXPECT_TRUE(OneCleanErrorLine(
      RunTally({"eval", "--metric", "rouge_score(use_stemmer=true)", "--input", TextFile("preds", "stem_hyp", "a\n"),
                "--input", TextFile("target", "stem_ref", "a\n")}),
      {"rouge_score", "stemmed"}));
}

// Verifies translation_edit_rate from text against TorchMetrics' documented
// example (2/13: one edit over the references' mean length 6.5), its
// lowercasing ("A cat ..." matches "a cat ..." unless lowercase=false), and
// error_counts' [hits, substitutions, deletions, insertions] (a tie between
// two substitutions and a deletion plus an insertion takes the latter).
TEST_F(CliTest, TranslationEditRateAndErrorCountsFromTextFiles) {
  json results;
  const std::string refs = absl::StrCat(testing::TestTmpDir(), "/ter_refs.tsv");
  std::ofstream(refs, std::ios::binary) << "there is a cat on the mat\ta cat is on the mat\n";
  Invocation r =
      RunTally({"eval", "--format", "json", "--input", TextFile("preds", "ter_doc", "the cat is on the mat\n"),
                "--input", absl::StrCat("target=", refs), "--metric", "translation_edit_rate"});
  ASSERT_TRUE(ParseResults(r, &results)) << r;
  EXPECT_EQ(results[0]["value"].get<double>(), 2.0 / 13.0);
  r = RunTally({"eval", "--format", "json", "--input", TextFile("preds", "ter_case", "A cat is on the mat\n"),
                "--input", absl::StrCat("target=", refs), "--metric", "translation_edit_rate", "--metric",
                "translation_edit_rate(lowercase=false)"});
  ASSERT_TRUE(ParseResults(r, &results)) << r;
  EXPECT_EQ(results[0]["value"].get<double>(), 0.0);
  EXPECT_EQ(results[1]["value"].get<double>(), 2.0 / 13.0);
  r = RunTally({"eval", "--format", "json", "--input", TextFile("preds", "counts_hyp", "hello world foo\na b\n"),
                "--input", TextFile("target", "counts_ref", "hello word foo bar\nb c\n"), "--metric", "error_counts",
                "--metric", "word_error_rate"});
  ASSERT_TRUE(ParseResults(r, &results)) << r;
  EXPECT_EQ(results[0]["value"].get<std::vector<int64_t>>(), (std::vector<int64_t>{3, 1, 2, 1}));
  EXPECT_EQ(results[1]["value"].get<double>(), 4.0 / 6.0);
}

}  // namespace
}  // namespace tally
