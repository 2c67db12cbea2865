// Golden tests: every case of tests/golden/fixtures/*.json (generated from
// scikit-learn/SciPy by gen_fixtures.py) evaluated through the same library
// as `tally eval`, three ways: one update with all rows, batches of 7 rows,
// and two programs fed the two halves and merged.
#include <ATen/ATen.h>
#include <torch/version.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/tally.h"
#include "engine/ir/aten_types.h"
#include "engine/runtime/compiler.h"
#include "engine/runtime/results.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "nlohmann/json.hpp"
#include "tests/testlib/test_device.h"

namespace tally {
namespace {

using json = nlohmann::json;

struct GoldenCase {
  std::string file;
  json body;
};

// The fixtures hold expectations under torch 1.13's linspace; cases whose
// value follows torch 2.x's (boundary hits of calibration bins) are listed
// again in fixtures/torch2/<file>.json (gen_fixtures.py --torch2-overlay).
constexpr bool kTorch2 = TORCH_VERSION_MAJOR >= 2;

// Fixture files that exist but do not parse (must stay empty): a file
// dropped for a syntax slip would silently run none of its cases.
std::vector<std::string>& UnparsedFixtureFiles() {
  static std::vector<std::string> files;
  return files;
}

// The document at path; null if there is no such file (an overlay that does
// not apply) or if it does not parse (then listed in UnparsedFixtureFiles).
json LoadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return json();
  json doc = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    UnparsedFixtureFiles().push_back(path);
    return json();
  }
  return doc;
}

// Overlay names that matched no case (must stay empty).
std::vector<std::string>& UnmatchedOverlayNames() {
  static std::vector<std::string> names;
  return names;
}

std::vector<GoldenCase> LoadCases() {
  // Every fixture file, in name order so that test names are stable.
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("tests/golden/fixtures", ec)) {
    if (e.path().extension() == ".json") files.push_back(e.path().stem().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<GoldenCase> out;
  UnmatchedOverlayNames().clear();
  UnparsedFixtureFiles().clear();
  for (const std::string& f : files) {
    json doc = LoadJson(absl::StrCat("tests/golden/fixtures/", f, ".json"));
    if (doc.is_null()) continue;
    json overlay = kTorch2 ? LoadJson(absl::StrCat("tests/golden/fixtures/torch2/", f, ".json")) : json();
    json expected = overlay.is_null() ? json::object() : overlay["expected"];
    for (auto& c : doc["cases"]) {
      auto it = expected.find(c["name"].get<std::string>());
      if (it != expected.end()) {
        c["expected"] = *it;
        expected.erase(it);
      }
      out.push_back({f, c});
    }
    for (auto& [name, value] : expected.items()) UnmatchedOverlayNames().push_back(f + ": " + name);
  }
  return out;
}

at::Tensor ToTensor(const json& spec) {
  std::string dtype = spec["dtype"];
  std::vector<int64_t> shape = spec["shape"].get<std::vector<int64_t>>();
  if (dtype == "int64" || dtype == "int32") {  // exact, ids near the int64 limits included
    at::Tensor t = at::tensor(spec["data"].get<std::vector<int64_t>>(), at::kLong).reshape(shape);
    return dtype == "int32" ? t.to(at::kInt) : t;
  }
  std::vector<double> values;
  for (const auto& v : spec["data"]) {
    if (v.is_null())
      values.push_back(NAN);
    else if (v.is_boolean())
      values.push_back(v.get<bool>() ? 1 : 0);
    else if (v.is_string())  // "inf" or "-inf" (tests/golden/README.md)
      values.push_back(v.get<std::string>() == "-inf" ? -INFINITY : INFINITY);
    else
      values.push_back(v.get<double>());
  }
  at::Tensor t = at::tensor(values, at::kDouble).reshape(shape);
  if (dtype == "float32") return t.to(at::kFloat);
  if (dtype == "float16") return t.to(at::kHalf);
  if (dtype == "bfloat16") return t.to(at::kBFloat16);
  if (dtype == "int64") return t.to(at::kLong);
  if (dtype == "int32") return t.to(at::kInt);
  if (dtype == "bool") return t.to(at::kBool);
  return t;
}

// Flatten expected JSON (number | null | nested list) and its shape.
void FlattenExpected(const json& e, std::vector<double>& values, std::vector<int64_t>& shape, size_t depth) {
  if (e.is_array()) {
    if (shape.size() <= depth) shape.push_back(static_cast<int64_t>(e.size()));
    for (const auto& x : e) FlattenExpected(x, values, shape, depth + 1);
    return;
  }
  if (e.is_null())
    values.push_back(NAN);
  else if (e.is_string()) {
    std::string s = e.get<std::string>();
    values.push_back(s == "inf" || s == "Infinity" ? INFINITY : s == "-inf" || s == "-Infinity" ? -INFINITY : NAN);
  } else {
    values.push_back(e.get<double>());
  }
}

::testing::AssertionResult Matches(const at::Tensor& got_in, const json& expected, double rtol, double atol) {
  std::vector<double> want;
  std::vector<int64_t> shape;
  FlattenExpected(expected, want, shape, 0);
  at::Tensor got = got_in.to(at::kCPU).to(at::kDouble).contiguous();
  std::vector<int64_t> got_shape(got.sizes().begin(), got.sizes().end());
  if (got_shape != shape && !(got.numel() == 1 && want.size() == 1)) {
    return ::testing::AssertionFailure() << "shape [" << got.sizes() << "] but expected " << expected.dump();
  }
  const double* g = got.data_ptr<double>();
  for (size_t i = 0; i < want.size(); ++i) {
    double w = want[i], x = g[i];
    bool ok =
        (std::isnan(w) && std::isnan(x)) || (std::isinf(w) && x == w) || std::abs(x - w) <= atol + rtol * std::abs(w);
    if (!ok) {
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << x << ", expected " << w << " (expected " << expected.dump() << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

// A tuple result (roc's (fpr, tpr, thresholds); per-class lists of curves of
// different lengths) matches a JSON list with one item per part.
::testing::AssertionResult Matches(const ResultTree& got, const json& expected, double rtol, double atol) {
  if (got.is_leaf()) return Matches(got.tensor, expected, rtol, atol);
  if (!expected.is_array() || expected.size() != got.parts.size()) {
    return ::testing::AssertionFailure() << "a tuple of " << got.parts.size() << " parts but expected "
                                         << expected.dump();
  }
  for (size_t i = 0; i < got.parts.size(); ++i) {
    ::testing::AssertionResult r = Matches(got.parts[i], expected[i], rtol, atol);
    if (!r) return ::testing::AssertionFailure() << "part " << i << ": " << r.message();
  }
  return ::testing::AssertionSuccess();
}

class GoldenTest : public ::testing::TestWithParam<GoldenCase> {};

// SameValues: `got` (the test device's) equals `want` (cpu's) within the
// fixture's tolerances, part by part.
::testing::AssertionResult SameValues(const ResultTree& got, const ResultTree& want, double rtol, double atol) {
  if (got.is_leaf() != want.is_leaf() || got.parts.size() != want.parts.size()) {
    return ::testing::AssertionFailure() << "a different result structure than on cpu";
  }
  for (size_t i = 0; i < got.parts.size(); ++i) {
    ::testing::AssertionResult r = SameValues(got.parts[i], want.parts[i], rtol, atol);
    if (!r) return ::testing::AssertionFailure() << "part " << i << ": " << r.message();
  }
  if (!got.is_leaf()) return ::testing::AssertionSuccess();
  at::Tensor g = got.tensor.to(at::kCPU).to(at::kDouble), w = want.tensor.to(at::kCPU).to(at::kDouble);
  if (g.sizes() != w.sizes()) {
    return ::testing::AssertionFailure() << "shape [" << g.sizes() << "] but [" << w.sizes() << "] on cpu";
  }
  const bool same = at::isclose(g, w, rtol, atol, /*equal_nan=*/true).all().item<bool>();
  if (!same) return ::testing::AssertionFailure() << "got " << g << "\nbut on cpu " << w;
  return ::testing::AssertionSuccess();
}

TEST_P(GoldenTest, MatchesReference) {
  // Verifies that the metric equals the reference in one pass, in batches of
  // 7 rows, and as the merge of two half-programs, with every program on the
  // test device (tests/testlib/test_device.h); off cpu, also that each value
  // equals cpu's within the same tolerances.
  const ir::Device& device = testing::TestDevice();
  auto dev = ir::ToDevice(device);
  ASSERT_TRUE(dev.ok()) << dev.status();
  const json& c = GetParam().body;
  std::string spec = c["metric"];
  SCOPED_TRACE(absl::StrCat(GetParam().file, ": ", std::string(c["name"]), ": ", spec));
  auto parsed = metrics::ParseMetricSpec(spec);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  // A fixture of a metric the registry lacks is a failure, never a skip.
  ASSERT_NE(metrics::FindMetric(parsed->name), nullptr) << "metric not registered: " << parsed->name;
  NamedTensors inputs;
  for (auto& [name, arr] : c["inputs"].items()) inputs.emplace_back(name, ToTensor(arr));
  double rtol = c.value("rtol", 1e-5), atol = c.value("atol", 1e-6);
  if (c.contains("error")) {
    // A refused case: the error names the metric and says why.
    const std::string want = c["error"];
    for (int64_t batch : {0, 7}) {
      tally::EvalOptions opts;
      opts.batch_size = batch;
      opts.device = device;
      auto r = tally::Evaluate({spec}, inputs, opts);
      ASSERT_FALSE(r.ok()) << "batch " << batch << ": expected an error containing '" << want << "'";
      const std::string msg(r.status().message());
      EXPECT_TRUE(absl::StrContains(msg, want) && absl::StrContains(msg, parsed->name)) << msg;
    }
    return;
  }
  std::optional<ResultTree> on_cpu;
  if (testing::OnAccelerator()) {
    auto r = tally::Evaluate({spec}, inputs, tally::EvalOptions{});
    ASSERT_TRUE(r.ok()) << "cpu: " << r.status();
    on_cpu = (*r)[0].result;
  }
  for (int64_t batch : {0, 7}) {
    tally::EvalOptions opts;
    opts.batch_size = batch;
    opts.device = device;
    auto r = tally::Evaluate({spec}, inputs, opts);
    ASSERT_TRUE(r.ok()) << "batch " << batch << ": " << r.status();
    EXPECT_TRUE(Matches((*r)[0].result, c["expected"], rtol, atol)) << "batch_size " << batch;
    if (on_cpu) {
      EXPECT_TRUE(SameValues((*r)[0].result, *on_cpu, rtol, atol)) << "batch_size " << batch;
    }
  }
  // Merge of halves.
  auto sig = tally::SignatureOf(inputs);
  ASSERT_TRUE(sig.ok());
  std::unique_ptr<Program> halves[2];
  for (auto& p : halves) {
    auto entries = tally::BuildEntries({spec}, *sig, device);
    ASSERT_TRUE(entries.ok()) << entries.status();
    CompileOptions co;
    co.device = device;
    auto prog = Compile(*entries, co);
    ASSERT_TRUE(prog.ok()) << prog.status();
    p = std::move(*prog);
  }
  int64_t rows = 0;
  for (const auto& [n, t] : inputs) rows = t.dim() ? t.size(0) : rows;
  int64_t half = rows / 2;
  for (int k = 0; k < 2; ++k) {
    NamedTensors part;
    for (const auto& [n, t] : inputs) {
      if (halves[k]->module().update->FindParam(n) == nullptr) continue;
      at::Tensor rows_k = t.dim() == 0 ? t : (k == 0 ? t.narrow(0, 0, half) : t.narrow(0, half, rows - half));
      part.emplace_back(n, rows_k.to(*dev));
    }
    ASSERT_TRUE(halves[k]->Update(part).ok());
  }
  ASSERT_TRUE(halves[0]->Merge(*halves[1]).ok());
  auto merged = halves[0]->Compute();
  ASSERT_TRUE(merged.ok()) << merged.status();
  auto tree = CollectResult(*merged, parsed->name);
  ASSERT_TRUE(tree.ok()) << tree.status();
  EXPECT_TRUE(Matches(*tree, c["expected"], rtol, atol)) << "merge of halves";
}

std::string CaseName(const ::testing::TestParamInfo<GoldenCase>& info) {
  std::string name = absl::StrCat(info.param.file, "_", info.param.body["name"].get<std::string>(), "_", info.index);
  for (char& ch : name)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GoldenTest, ::testing::ValuesIn(LoadCases()), CaseName);

TEST(GoldenFixtures, AreFound) {
  // Verifies that the fixtures were found (a missing data dependency would
  // otherwise silently run zero cases).
  EXPECT_GT(LoadCases().size(), 1000u);
}

TEST(GoldenFixtures, EveryFileParses) {
  LoadCases();
  EXPECT_TRUE(UnparsedFixtureFiles().empty()) << absl::StrJoin(UnparsedFixtureFiles(), "\n");
}

TEST(GoldenFixtures, Torch2OverlayNamesExistingCases) {
  LoadCases();
  EXPECT_TRUE(UnmatchedOverlayNames().empty()) << absl::StrJoin(UnmatchedOverlayNames(), "\n");
  if (kTorch2) {
    // The overlay is found when it applies (a missing data dependency would
    // otherwise run torch 1.13's expectations).
    EXPECT_FALSE(LoadJson("tests/golden/fixtures/torch2/calibration.json").is_null());
  }
}

}  // namespace
}  // namespace tally
