// The TorchScript parts of the `tally` command line, run as a user runs the
// built binary: `eval --backend torchscript` prints exactly what the eager
// backend prints, `bench --backend torchscript` reports itself as such,
// `inspect --format torchscript` prints the lowered graphs, and `export`
// writes a TorchScript archive or fails with one clean line on stderr.
#include <ATen/ATen.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "api/tally.h"
#include "engine/io/npy.h"
#include "gtest/gtest.h"
#include "tests/tools/cli_testing.h"

namespace tally {
namespace {

namespace fs = std::filesystem;

using ::tally::testing::ReadFile;

using ::tally::testing::Invocation;
using ::tally::testing::OneCleanErrorLine;
using ::tally::testing::RunTally;

class TorchScriptCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(::tally::testing::TallyBinary().empty()) << "tools/tally/tally not found in the runfiles";
    dir_ = fs::path(::tally::testing::TestTmpDir()) / "ts_cli";
    fs::create_directories(dir_);
    at::Generator gen = at::detail::createCPUGenerator(21);
    Write("preds.npy", at::randn({40, 3}, gen, at::kFloat));
    Write("target.npy", at::randint(0, 3, {40}, gen, at::kLong));
    Write("rpreds.npy", at::randn({33}, gen, at::kFloat) + 1e4);
    Write("rtarget.npy", at::randn({33}, gen, at::kFloat) + 1e4);
  }

  void Write(const std::string& name, const at::Tensor& t) {
    auto a = tally::NpyFromTensor(t);
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE(io::WriteNpy((dir_ / name).string(), *a).ok());
  }

  Invocation Tally(const std::vector<std::string>& args) { return RunTally(args, dir_.string()); }

  fs::path dir_;
};

TEST_F(TorchScriptCliTest, EvalBackendsPrintTheSameJson) {
  // Verifies that --backend torchscript prints exactly the eager JSON for a
  // classification collection and for regression metrics with custom merges
  // and cat states, in one update and in batches.
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--metric", "multiclass_accuracy(num_classes=3)", "--metric",
            "multiclass_f1_score(num_classes=3, average=macro)", "--metric",
            "multiclass_confusion_matrix(num_classes=3)", "--input", "preds=preds.npy", "--input", "target=target.npy"},
           {"--metric", "pearson_corrcoef", "--metric", "spearman_corrcoef", "--metric", "r2_score", "--input",
            "preds=rpreds.npy", "--input", "target=rtarget.npy"}}) {
    for (const char* batch : {"0", "7"}) {
      std::vector<std::string> base = {"eval", "--format", "json"};
      base.insert(base.end(), args.begin(), args.end());
      if (std::string(batch) != "0") base.insert(base.end(), {"--batch-size", batch});
      Invocation eager = Tally(base);
      base.insert(base.end(), {"--backend", "torchscript"});
      Invocation ts = Tally(base);
      ASSERT_EQ(eager.exit_code, 0) << eager.err;
      ASSERT_EQ(ts.exit_code, 0) << ts.err;
      EXPECT_EQ(eager.out, ts.out);
    }
  }
}

TEST_F(TorchScriptCliTest, EvalBackendsReportTheSameBadValues) {
  // Verifies that a deferred check fails the same way on both backends.
  Write("bad_target.npy", at::tensor({0, 1, 7, 2, 9}, at::kLong));
  Write("bad_preds.npy", at::randn({5, 3}));
  std::vector<std::string> args = {"eval",
                                   "--metric",
                                   "multiclass_accuracy(num_classes=3)",
                                   "--input",
                                   "preds=bad_preds.npy",
                                   "--input",
                                   "target=bad_target.npy"};
  Invocation eager = Tally(args);
  args.insert(args.end(), {"--backend", "torchscript"});
  Invocation ts = Tally(args);
  EXPECT_TRUE(OneCleanErrorLine(eager, {"multiclass_accuracy", "target", "2"}));
  EXPECT_EQ(eager.err, ts.err);
}

TEST_F(TorchScriptCliTest, BenchReportsTheTorchScriptBackend) {
  // Verifies that bench runs a workload on the TorchScript backend.
  Invocation r = Tally({"bench", "--workload", "acc_small", "--backend", "torchscript", "--format", "json", "--quick"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"backend\": \"torchscript\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"us_per_update\""), std::string::npos) << r.out;
  EXPECT_TRUE(OneCleanErrorLine(Tally({"bench", "--workload", "acc_small", "--backend", "jax", "--quick"}), {"jax"}));
}

TEST_F(TorchScriptCliTest, InspectPrintsLoweredGraphs) {
  // Verifies inspect --format torchscript: the update calls the fused
  // operator on the CPU and decomposes it for a device without one.
  Invocation cpu = Tally({"inspect", "--format", "torchscript", "--metric", "multiclass_accuracy(num_classes=3)"});
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  EXPECT_NE(cpu.out.find("// @update"), std::string::npos) << cpu.out;
  // The narrowed matrix: per-class marginals (narrow-states).
  EXPECT_NE(cpu.out.find("tally::mc_marginals"), std::string::npos) << cpu.out;
  EXPECT_NE(cpu.out.find("// @finalize"), std::string::npos) << cpu.out;
  Invocation cuda = Tally(
      {"inspect", "--format", "torchscript", "--device", "cuda:1", "--metric", "multiclass_accuracy(num_classes=3)"});
  ASSERT_EQ(cuda.exit_code, 0) << cuda.err;
  EXPECT_EQ(cuda.out.find("tally::"), std::string::npos) << cuda.out;
  EXPECT_NE(cuda.out.find("\"cuda:1\""), std::string::npos) << cuda.out;
  Invocation merge = Tally({"inspect", "--format", "torchscript", "--metric", "pearson_corrcoef"});
  ASSERT_EQ(merge.exit_code, 0) << merge.err;
  EXPECT_NE(merge.out.find("// @merge"), std::string::npos) << merge.out;
}

TEST_F(TorchScriptCliTest, ExportWritesAnArchiveOrOneCleanError) {
  // Verifies that export writes a TorchScript (zip) archive from --input
  // signatures or default ones, and that its errors are one clean line.
  Invocation r = Tally({"export", "--metric", "multiclass_accuracy(num_classes=3)", "--input", "preds=preds.npy",
                        "--input", "target=target.npy", "--out", "m.pt"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("update(preds: f32[N,3]"), std::string::npos) << r.out;
  EXPECT_EQ(ReadFile(dir_ / "m.pt").substr(0, 2), "PK");
  Invocation d = Tally({"export", "--metric", "binary_f1_score", "--metric", "binary_accuracy", "--out", "d.pt"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("update(preds: f32[N]"), std::string::npos) << d.out;
  EXPECT_TRUE(OneCleanErrorLine(Tally({"export", "--metric", "mean"}), {"--out"}));
  EXPECT_TRUE(OneCleanErrorLine(Tally({"export", "--out", "x.pt"}), {"--metric"}));
  EXPECT_TRUE(OneCleanErrorLine(Tally({"export", "--metric", "no_such_metric", "--out", "x.pt"}), {"no_such_metric"}));
  EXPECT_TRUE(OneCleanErrorLine(Tally({"export", "--metric", "mean", "--out", "/nonexistent/dir/x.pt"}),
                                {"/nonexistent/dir/x.pt"}));
  EXPECT_TRUE(
      OneCleanErrorLine(Tally({"export", "--metric", "mean", "--out", "x.pt", "--device", "cuda:1"}), {"cuda:1"}));
}

}  // namespace
}  // namespace tally
