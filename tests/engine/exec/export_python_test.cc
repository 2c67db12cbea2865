// docs/python.md's TorchScript snippet against `tally eval`: `tally export` writes a
// module, Debian's python3-torch loads it with torch.jit.load, the snippet
// (taken verbatim from docs/python.md) feeds batches and prints the values
// `tally eval --batch-size 7` prints; export_python_check.py also checks
// merge_state across separately loaded modules, reset, the boundary checks
// and module.to("meta"). Skipped (not failed) where `/usr/bin/python3 -c
// 'import torch, numpy'` does not work.
#include <ATen/ATen.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/tally.h"
#include "engine/io/npy.h"
#include "gtest/gtest.h"
#include "tests/tools/cli_testing.h"

namespace tally {
namespace {

namespace fs = std::filesystem;

using ::tally::testing::ReadFile;

std::string Quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Run runs a shell command; its output goes to `log`.
int Shell(const std::string& cmd, const fs::path& log) {
  int rc = std::system(absl::StrCat(cmd, " > ", Quote(log.string()), " 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

bool PythonTorchAvailable() { return std::system("/usr/bin/python3 -c 'import torch, numpy' > /dev/null 2>&1") == 0; }

// Snippet is the ```python block of docs/python.md that loads an exported
// module (its section "Without the module").
std::string Snippet() {
  std::string doc = ReadFile("docs/python.md");
  for (size_t start = doc.find("```python\n"); start != std::string::npos; start = doc.find("```python\n", start)) {
    start += 10;
    size_t end = doc.find("```", start);
    if (end == std::string::npos) return "";
    std::string block = doc.substr(start, end - start);
    if (block.find("torch.jit.load") != std::string::npos) return block;
    start = end + 3;
  }
  return "";
}

void WriteArray(const fs::path& p, const at::Tensor& t) {
  auto a = tally::NpyFromTensor(t);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(io::WriteNpy(p.string(), *a).ok());
}

class ExportPythonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!PythonTorchAvailable()) GTEST_SKIP() << "/usr/bin/python3 with torch and numpy is not installed";
    tally_ = fs::absolute("tools/tally/tally");
    check_ = fs::absolute("tests/engine/exec/export_python_check.py");
    ASSERT_TRUE(fs::exists(tally_)) << tally_;
    ASSERT_TRUE(fs::exists(check_)) << check_;
    snippet_ = Snippet();
    ASSERT_FALSE(snippet_.empty()) << "no ```python block with torch.jit.load in docs/python.md";
  }

  // Check exports `specs` for the arrays, runs eval and the Python check.
  void Check(const std::string& name, const std::vector<std::string>& specs, const at::Tensor& preds,
             const at::Tensor& target) {
    const char* tmp = std::getenv("TEST_TMPDIR");
    fs::path dir = fs::path(tmp ? tmp : "/tmp") / name;
    fs::create_directories(dir);
    WriteArray(dir / "preds.npy", preds);
    WriteArray(dir / "target.npy", target);
    std::ofstream(dir / "snippet.py") << snippet_;
    std::string metrics;
    for (const std::string& s : specs) absl::StrAppend(&metrics, " --metric ", Quote(s));
    std::string in = " --input preds=preds.npy --input target=target.npy";
    std::string cd = absl::StrCat("cd ", Quote(dir.string()), " && ");
    ASSERT_EQ(
        Shell(absl::StrCat(cd, Quote(tally_.string()), " export --out metrics.pt", metrics, in), dir / "export.log"), 0)
        << ReadFile(dir / "export.log");
    ASSERT_EQ(Shell(absl::StrCat(cd, Quote(tally_.string()), " eval --format json --batch-size 7", metrics, in),
                    dir / "eval.json"),
              0)
        << ReadFile(dir / "eval.json");
    int rc = Shell(absl::StrCat(cd, "/usr/bin/python3 ", Quote(check_.string()), " snippet.py"), dir / "python.log");
    std::string log = ReadFile(dir / "python.log");
    EXPECT_EQ(rc, 0) << log;
    EXPECT_NE(log.find("ok:"), std::string::npos) << log;
    std::cout << name << ": " << log;
  }

  fs::path tally_, check_;
  std::string snippet_;
};

TEST_F(ExportPythonTest, ReadmeSnippetPrintsWhatEvalPrints) {
  // Verifies the documented example itself: accuracy and macro F1 (and the
  // confusion matrix, an integer matrix) over 3 classes.
  at::Generator gen = at::detail::createCPUGenerator(11);
  Check("classification",
        {"multiclass_accuracy(num_classes=3)", "multiclass_f1_score(num_classes=3, average=macro)",
         "multiclass_confusion_matrix(num_classes=3)"},
        at::randn({50, 3}, gen, at::kFloat), at::randint(0, 3, {50}, gen, at::kLong));
}

TEST_F(ExportPythonTest, RegressionWithCustomMergesAndCatStates) {
  // Verifies the same for metrics with custom merge graphs (Pearson,
  // concordance, R²) and cat states (Spearman), on data offset by 1e4.
  at::Generator gen = at::detail::createCPUGenerator(12);
  at::Tensor target = at::randn({61}, gen, at::kFloat) + 1e4;
  Check("regression",
        {"mean_squared_error", "pearson_corrcoef", "concordance_corrcoef", "r2_score", "spearman_corrcoef"},
        target + at::randn({61}, gen, at::kFloat) * 0.3, target);
}

TEST_F(ExportPythonTest, BinaryAndMultilabel) {
  // Verifies binary metrics on probabilities and multilabel metrics on
  // logits (sigmoid chosen on the device).
  at::Generator gen = at::detail::createCPUGenerator(13);
  Check("binary", {"binary_accuracy", "binary_matthews_corrcoef", "binary_f1_score(threshold=0.3)"},
        at::rand({40}, gen, at::kFloat), at::randint(0, 2, {40}, gen, at::kLong));
  Check("multilabel", {"multilabel_f1_score(num_labels=4)", "multilabel_exact_match(num_labels=4)"},
        at::randn({40, 4}, gen, at::kFloat) * 2, at::randint(0, 2, {40, 4}, gen, at::kLong));
}

}  // namespace
}  // namespace tally
