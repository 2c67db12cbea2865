// Tests of `tally eval --world-size W` as a user runs it (docs/cli.md): W forked
// ranks on 127.0.0.1 print, once, what one process prints — on the demo data
// sets and on .npy files (retrieval queries cut by shard boundaries, more
// ranks than rows) — and every failure is one clear line on stderr. Also
// `tally bench --workload sync_cls`, the same sync measured.
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/io/npy.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tools/cli_testing.h"

namespace tally {
namespace {

using json = nlohmann::json;
using testing::Invocation;
using testing::OneCleanErrorLine;
using testing::RunTally;

// SameJson compares two `--format json` documents: the same structure and
// strings, numbers within `rel` relative error (null matches null).
::testing::AssertionResult SameJson(const json& a, const json& b, double rel = 1e-12) {
  if (a.is_number() && b.is_number()) {
    double x = a.get<double>(), y = b.get<double>();
    if (x == y || std::abs(x - y) <= rel * std::max(std::abs(x), std::abs(y))) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << x << " vs " << y;
  }
  if (a.type() != b.type()) return ::testing::AssertionFailure() << a.dump() << " vs " << b.dump();
  if (a.is_array() || a.is_object()) {
    if (a.size() != b.size()) return ::testing::AssertionFailure() << a.dump() << " vs " << b.dump();
    auto ia = a.begin();
    auto ib = b.begin();
    for (; ia != a.end(); ++ia, ++ib) {
      if (a.is_object() && ia.key() != ib.key()) return ::testing::AssertionFailure() << ia.key() << " vs " << ib.key();
      auto same = SameJson(*ia, *ib, rel);
      if (!same) return same;
    }
    return ::testing::AssertionSuccess();
  }
  if (a == b) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << a.dump() << " vs " << b.dump();
}

class WorldSizeCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { ASSERT_FALSE(testing::TallyBinary().empty()) << "tools/tally/tally not found"; }

  static std::string Path(const std::string& name) { return absl::StrCat(testing::TestTmpDir(), "/", name, ".npy"); }
  static void Write(const std::string& name, io::NpyDType dtype, std::vector<int64_t> shape, const void* data,
                    size_t bytes) {
    ASSERT_TRUE(testing::WriteNpyFile(Path(name), dtype, std::move(shape), data, bytes).ok());
  }

  // Expect runs `args` with --format json under W = 1, 2 and 3 and expects
  // the same document each time.
  static void ExpectSameForEveryWorldSize(const std::vector<std::string>& args, double rel = 1e-12) {
    json one;
    for (int world : {1, 2, 3}) {
      std::vector<std::string> a = args;
      a.insert(a.end(), {"--format", "json", "--world-size", absl::StrCat(world)});
      Invocation r = RunTally(a);
      ASSERT_EQ(r.exit_code, 0) << r;
      EXPECT_TRUE(r.err.empty()) << r;
      json doc = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
      ASSERT_FALSE(doc.is_discarded()) << r;
      ASSERT_EQ(r.out.find('\n'), r.out.size() - 1) << "printed more than once\n" << r;
      if (world == 1) {
        one = doc;
        continue;
      }
      EXPECT_TRUE(SameJson(doc, one, rel)) << "--world-size " << world << "\n" << r;
    }
  }
};

TEST_F(WorldSizeCli, DemoDataMatchesOneProcess) {
  // Verifies that on each embedded demo data set (classification, binary,
  // multilabel, regression, aggregation) --world-size 2 and 3 print what one
  // process prints, as JSON and, for the default table, text.
  ExpectSameForEveryWorldSize({"eval"});
  ExpectSameForEveryWorldSize({"eval", "--batch-size", "5"});
  ExpectSameForEveryWorldSize({"eval", "--metric", "binary_accuracy", "--metric", "binary_auroc"});
  ExpectSameForEveryWorldSize({"eval", "--metric", "multilabel_f1_score(num_labels=4)", "--batch-size", "7"});
  ExpectSameForEveryWorldSize({"eval", "--metric", "mean_squared_error", "--metric", "pearson_corrcoef", "--metric",
                               "spearman_corrcoef", "--metric", "r2_score", "--batch-size", "9"});
  ExpectSameForEveryWorldSize({"eval", "--metric", "mean", "--metric", "max", "--metric", "min"});
  Invocation one = RunTally({"eval"});
  Invocation three = RunTally({"eval", "--world-size", "3"});
  ASSERT_EQ(one.exit_code, 0) << one;
  EXPECT_EQ(three.exit_code, 0) << three;
  EXPECT_EQ(three.out, one.out);
}

TEST_F(WorldSizeCli, FileInputsMatchOneProcess) {
  // Verifies the same on .npy files: retrieval with each query's documents
  // in consecutive rows (shard boundaries cut queries), multiclass scores in
  // batches, and 2 rows over 3 ranks (one rank has none).
  std::vector<float> preds;
  std::vector<int64_t> target, indexes;
  for (int64_t i = 0; i < 47; ++i) {
    preds.push_back(static_cast<float>((i * 37) % 23) / 23.0f);
    target.push_back((i * 7) % 3 == 0 ? 1 : 0);
    indexes.push_back(i / 6);
  }
  Write("ret_preds", io::NpyDType::kFloat32, {47}, preds.data(), preds.size() * 4);
  Write("ret_target", io::NpyDType::kInt64, {47}, target.data(), target.size() * 8);
  Write("ret_indexes", io::NpyDType::kInt64, {47}, indexes.data(), indexes.size() * 8);
  ExpectSameForEveryWorldSize({"eval", "--metric", "retrieval_recall(top_k=1)", "--metric", "retrieval_reciprocal_rank",
                               "--metric", "retrieval_normalized_dcg(top_k=3)", "--metric",
                               "retrieval_average_precision", "--input", "preds=" + Path("ret_preds"), "--input",
                               "target=" + Path("ret_target"), "--input", "indexes=" + Path("ret_indexes"),
                               "--batch-size", "4"});
  std::vector<float> scores;
  std::vector<int64_t> labels;
  for (int64_t i = 0; i < 31; ++i) {
    for (int c = 0; c < 3; ++c) scores.push_back(static_cast<float>((i * 5 + c * 11) % 13) / 13.0f);
    labels.push_back((i * 2) % 3);
  }
  Write("mc_preds", io::NpyDType::kFloat32, {31, 3}, scores.data(), scores.size() * 4);
  Write("mc_target", io::NpyDType::kInt64, {31}, labels.data(), labels.size() * 8);
  ExpectSameForEveryWorldSize({"eval", "--metric", "multiclass_accuracy(num_classes=3, average=macro)", "--metric",
                               "multiclass_auroc(num_classes=3)", "--metric",
                               "multiclass_confusion_matrix(num_classes=3)", "--input", "preds=" + Path("mc_preds"),
                               "--input", "target=" + Path("mc_target"), "--batch-size", "6"});
  Write("two_preds", io::NpyDType::kFloat32, {2, 3}, scores.data(), 6 * 4);
  Write("two_target", io::NpyDType::kInt64, {2}, labels.data(), 2 * 8);
  ExpectSameForEveryWorldSize({"eval", "--metric", "multiclass_f1_score(num_classes=3)", "--input",
                               "preds=" + Path("two_preds"), "--input", "target=" + Path("two_target")});
}

TEST_F(WorldSizeCli, BootstrapAndSlicesAreBitIdenticalAcrossWorldAndBatchSizes) {
  // Verifies the promise: a bootstrap keys each row's draws by its
  // position in the whole input, so its intervals are the same bits under
  // any world size and batch size; slices likewise.
  std::vector<float> preds;
  std::vector<int64_t> target, groups;
  for (int64_t i = 0; i < 1000; ++i) {
    preds.push_back(static_cast<float>((i * 7919) % 1000) / 1000.0f);
    target.push_back((i * 7919) % 1000 + (i * 31) % 400 > 700 ? 1 : 0);
    groups.push_back((i * 13) % 4);
  }
  Write("boot_preds", io::NpyDType::kFloat32, {1000}, preds.data(), preds.size() * 4);
  Write("boot_target", io::NpyDType::kInt64, {1000}, target.data(), target.size() * 8);
  Write("boot_groups", io::NpyDType::kInt64, {1000}, groups.data(), groups.size() * 8);
  const std::vector<std::string> args = {
      "eval",
      "--metric",
      "binary_auroc(thresholds=200, num_bootstraps=50, seed=7, quantile=[0.05, 0.95])",
      "--metric",
      "binary_auroc(num_groups=4)",
      "--metric",
      "binary_f1_score(num_bootstraps=20)",
      "--input",
      "preds=" + Path("boot_preds"),
      "--input",
      "target=" + Path("boot_target"),
      "--input",
      "groups=" + Path("boot_groups")};
  Invocation whole = RunTally([&] {
    auto a = args;
    a.insert(a.end(), {"--format", "json"});
    return a;
  }());
  ASSERT_EQ(whole.exit_code, 0) << whole;
  for (const char* batch : {"1000", "333", "7"}) {
    auto a = args;
    a.insert(a.end(), {"--batch-size", batch});
    ExpectSameForEveryWorldSize(a, /*rel=*/0.0);
    auto b = a;
    b.insert(b.end(), {"--format", "json"});
    Invocation r = RunTally(b);
    EXPECT_TRUE(SameJson(json::parse(r.out, nullptr, false), json::parse(whole.out, nullptr, false), 0.0))
        << "--batch-size " << batch << "\n"
        << r;
  }
}

TEST_F(WorldSizeCli, BadWorldSizeIsAClearError) {
  // Verifies that a world size that is not an integer from 1 to 256, or a
  // bad --sync-timeout, is one clear line naming the flag.
  for (const char* w : {"0", "-1", "-3", "two", "1.5", "", "100000"}) {
    Invocation r = RunTally({"eval", "--world-size", w});
    EXPECT_TRUE(OneCleanErrorLine(r, {"--world-size", absl::StrCat("'", w, "'")})) << r;
  }
  for (const char* t : {"0", "-2", "soon"}) {
    Invocation r = RunTally({"eval", "--world-size", "2", "--sync-timeout", t});
    EXPECT_TRUE(OneCleanErrorLine(r, {"--sync-timeout"})) << r;
  }
}

TEST_F(WorldSizeCli, ErrorsUnderWorldSizeAreTheOneProcessLine) {
  // Verifies that a bad spec, a shape mismatch and an out-of-range label
  // (counted on the ranks, reported after the sync) print the one line one
  // process prints, with a non-zero exit.
  std::vector<float> scores(12, 0.25f);
  std::vector<int64_t> labels = {1, 0, 5, 2};
  std::vector<int64_t> good_labels = {1, 0, 2, 2};
  Write("bad_preds", io::NpyDType::kFloat32, {4, 3}, scores.data(), scores.size() * 4);
  Write("bad_target", io::NpyDType::kInt64, {4}, labels.data(), labels.size() * 8);
  Write("good_target", io::NpyDType::kInt64, {4}, good_labels.data(), good_labels.size() * 8);
  const std::vector<std::vector<std::string>> cases = {
      {"eval", "--metric", "multiclass_accuracy(num_classes=3, frobnicate=1)"},
      // 3-class scores for num_classes=4 (the demo data would fit 4 classes).
      {"eval", "--metric", "multiclass_accuracy(num_classes=4)", "--input", "preds=" + Path("bad_preds"), "--input",
       "target=" + Path("good_target")},
      {"eval", "--metric", "multiclass_accuracy(num_classes=3)", "--input", "preds=" + Path("bad_preds"), "--input",
       "target=" + Path("bad_target")},
  };
  for (const auto& args : cases) {
    Invocation one = RunTally(args);
    std::vector<std::string> w = args;
    w.insert(w.end(), {"--world-size", "2", "--batch-size", "1"});
    Invocation two = RunTally(w);
    EXPECT_TRUE(OneCleanErrorLine(two, {"multiclass_accuracy"})) << two;
    EXPECT_EQ(two.err, one.err) << two;
  }
}

TEST_F(WorldSizeCli, BenchSyncClsReportsSyncTimeAndCollectives) {
  // Verifies that `bench --workload sync_cls` runs the cls_small collection
  // on 2 ranks and reports ms_per_sync and collectives_per_sync (2: the
  // header and one allreduce), in the JSON of docs/cli.md and in the table.
  Invocation r = RunTally({"bench", "--workload", "sync_cls", "--quick", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r;
  json doc = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(doc.is_discarded()) << r;
  EXPECT_EQ(doc["workload"], "sync_cls");
  EXPECT_EQ(doc["backend"], "eager");
  ASSERT_TRUE(doc.contains("ms_per_sync")) << r;
  EXPECT_GT(doc["ms_per_sync"].get<double>(), 0);
  EXPECT_EQ(doc["collectives_per_sync"].get<double>(), 2);
  EXPECT_FALSE(doc.contains("us_per_update")) << r;
  Invocation table = RunTally({"bench", "--workload", "sync_cls", "--quick", "--backend", "torchscript"});
  ASSERT_EQ(table.exit_code, 0) << table;
  EXPECT_NE(table.out.find("ms_per_sync: "), std::string::npos) << table;
  EXPECT_NE(table.out.find("collectives_per_sync: 2\n"), std::string::npos) << table;
}

}  // namespace
}  // namespace tally
