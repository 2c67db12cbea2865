// Runs the bad-input table (bad_input_cases.json: data, not code) through the entry
// points each case lists:
//   eval:    `tally eval` on .npy files (or the special file a case names)
//            exits non-zero with one clean stderr line naming the culprit;
//   session: Session creation refuses bad specs; Session::Update refuses a
//            bad batch after a good one, and every value and counter but
//            `rejected` stays as it was;
//   module:  a module exported for the good batch's signature and loaded
//            with torch::jit::load refuses the bad batch in update() with an
//            exception naming the culprit, its states() unchanged; value
//            checks (labels out of range, NaN scores) are deferred there, as
//            in eval: compute() raises naming them;
//   serve:   `tally serve` answers the bad body (JSON: a case whose values
//            JSON cannot carry, NaN, is skipped) 400 with one error naming
//            the culprit, after a good one; GET /v1/metrics is unchanged and
//            of the counters only tally_rejected_updates_total moves.
#include <ATen/ATen.h>
#include <sys/stat.h>
#include <torch/script.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <httplib.h>
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/tally.h"
#include "engine/io/npy.h"
#include "gtest/gtest.h"
#include "metrics/inputs.h"

#include "nlohmann/json.hpp"
#include "tests/tools/cli_testing.h"
#include "tests/tools/server_process.h"

namespace tally {
namespace {

using json = nlohmann::json;

json LoadCases() {
  std::ifstream in("tests/integration/bad_input_cases.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str())["cases"];
}

// Flatten collects a nested list's leaves and its shape.
void Flatten(const json& v, std::vector<json>& leaves, std::vector<int64_t>& shape, size_t depth) {
  if (!v.is_array()) {
    leaves.push_back(v);
    return;
  }
  if (shape.size() <= depth) shape.push_back(static_cast<int64_t>(v.size()));
  for (const json& x : v) Flatten(x, leaves, shape, depth + 1);
}

// ToTensor: integers -> int64, otherwise float32 ("nan" is NaN), unless
// `dtype` says; an empty list is float32 unless `dtype` says.
at::Tensor ToTensor(const json& v, const std::string& dtype) {
  std::vector<json> leaves;
  std::vector<int64_t> shape;
  Flatten(v, leaves, shape, 0);
  bool ints = !leaves.empty();
  for (const json& x : leaves) ints = ints && x.is_number_integer();
  std::vector<double> values;
  for (const json& x : leaves) values.push_back(x.is_string() ? NAN : x.get<double>());
  at::ScalarType st = dtype == "int64" ? at::kLong : dtype == "float32" ? at::kFloat : ints ? at::kLong : at::kFloat;
  at::Tensor t = at::tensor(values, at::kDouble);
  return t.reshape(shape).to(st);
}

NamedTensors InputsOf(const json& body) {
  NamedTensors out;
  const json dtypes = body.value("dtypes", json::object());
  for (absl::string_view input : metrics::kInputNames) {
    const std::string name(input);
    if (body.contains(name)) out.emplace_back(name, ToTensor(body[name], dtypes.value(name, "")));
  }
  return out;
}

std::vector<std::string> Names(const json& c) { return c["names"].get<std::vector<std::string>>(); }

bool Lists(const json& c, const std::string& entry) {
  if (!c.contains("entries")) return true;
  for (const json& e : c["entries"])
    if (e == entry) return true;
  return false;
}

std::string Label(const json& c) { return absl::StrCat(std::string(c["class"]), ": ", c["metrics"].dump()); }

// WriteSpecial makes the damaged or special file `kind` at `path`.
void WriteSpecial(const std::string& kind, const std::string& path, const at::Tensor& t) {
  ::unlink(path.c_str());
  ::rmdir(path.c_str());
  auto npy = tally::NpyFromTensor(t);
  ASSERT_TRUE(npy.ok());
  std::string bytes = io::SerializeNpy(*npy);
  if (kind == "fifo") {
    ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  } else if (kind == "directory") {
    ASSERT_EQ(::mkdir(path.c_str(), 0700), 0);
  } else if (kind == "dev_zero_link") {
    ASSERT_EQ(::symlink("/dev/zero", path.c_str()), 0);
  } else if (kind == "missing") {
    // nothing
  } else {
    if (kind == "truncated") bytes.resize(bytes.size() - 3);
    if (kind == "trailing_bytes") bytes += "junk";
    if (kind == "complex") {
      // A valid complex64 array: NumPy's '<c8' header, 8 bytes per element.
      std::string header = "{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }";
      header.append(118 - header.size(), ' ');
      header += '\n';
      bytes = std::string("\x93NUMPY\x01\x00", 8) + std::string(1, static_cast<char>(header.size())) +
              std::string(1, '\0') + header + std::string(16, '\0');
    }
    std::ofstream(path, std::ios::binary) << bytes;
  }
}

TEST(BadInputTable, EvalExitsWithOneLineNamingTheCulprit) {
  const json cases = LoadCases();
  ASSERT_GE(cases.size(), 20u);
  int i = 0;
  for (const json& c : cases) {
    ++i;
    if (!Lists(c, "eval")) continue;
    SCOPED_TRACE(Label(c));
    const std::string dir = absl::StrCat(testing::TestTmpDir(), "/bad_", i);
    ::mkdir(dir.c_str(), 0700);
    std::vector<std::string> args = {"eval"};
    for (const json& m : c["metrics"]) args.insert(args.end(), {"--metric", m.get<std::string>()});
    const json files = c.value("file", json::object());
    for (const auto& [name, t] : InputsOf(c["bad"])) {
      const std::string path = absl::StrCat(dir, "/", name, ".npy");
      if (files.contains(name)) {
        WriteSpecial(files[name], path, t);
      } else {
        auto npy = tally::NpyFromTensor(t);
        ASSERT_TRUE(npy.ok());
        ASSERT_TRUE(io::WriteNpy(path, *npy).ok());
      }
      args.insert(args.end(), {"--input", absl::StrCat(name, "=", path)});
    }
    if (c.contains("max_state_bytes")) {
      args.insert(args.end(), {"--max-state-bytes", absl::StrCat(c["max_state_bytes"].get<int64_t>())});
    }
    testing::Invocation r = testing::RunTally(args);
    EXPECT_TRUE(testing::OneCleanErrorLine(r, Names(c))) << r;
  }
}

TEST(BadInputTable, SessionRefusesAndChangesNothing) {
  const json cases = LoadCases();
  for (const json& c : cases) {
    if (!Lists(c, "session")) continue;
    SCOPED_TRACE(Label(c));
    const std::vector<std::string> specs = c["metrics"].get<std::vector<std::string>>();
    SessionOptions so;
    so.reject_invalid_values = true;
    so.max_state_bytes = c.value("max_state_bytes", int64_t{0});
    const bool at_create = c.value("stage", "") == "create";
    auto sig = tally::SignatureOf(InputsOf(at_create ? c["bad"] : c["good"]));
    ASSERT_TRUE(sig.ok()) << sig.status();
    auto session = tally::CreateDefaultSession(specs, *sig, so);
    auto contains_names = [&](const absl::Status& st) {
      for (const std::string& n : Names(c)) {
        if (!absl::StrContains(st.message(), n)) return false;
      }
      return std::string(st.message()).find('\n') == std::string::npos;
    };
    if (at_create) {
      ASSERT_FALSE(session.ok()) << "created";
      EXPECT_TRUE(contains_names(session.status())) << session.status();
      continue;
    }
    ASSERT_TRUE(session.ok()) << session.status();
    ASSERT_TRUE((*session)->Update(InputsOf(c["good"])).ok());
    auto before = (*session)->Snapshot();
    auto counters = (*session)->Counters();
    ASSERT_TRUE(before.ok() && counters.ok());
    absl::Status st = (*session)->Update(InputsOf(c["bad"]));
    ASSERT_FALSE(st.ok()) << "accepted";
    EXPECT_TRUE(contains_names(st)) << st;
    auto after = (*session)->Snapshot();
    auto counters_after = (*session)->Counters();
    ASSERT_TRUE(after.ok() && counters_after.ok());
    ASSERT_EQ(before->size(), after->size());
    for (size_t k = 0; k < before->size(); ++k) {
      EXPECT_TRUE((*before)[k].equal((*after)[k])) << "state " << k << " changed";
    }
    EXPECT_EQ(counters_after->updates, counters->updates);
    EXPECT_EQ(counters_after->rows, counters->rows);
    EXPECT_EQ(counters_after->rejected, counters->rejected + 1);
  }
}

// StatesOf copies an exported module's states() by name.
std::map<std::string, at::Tensor> StatesOf(torch::jit::Module& m) {
  std::map<std::string, at::Tensor> out;
  c10::Dict<c10::IValue, c10::IValue> d = m.get_method("states")({}).toGenericDict();
  for (const auto& e : d) out[e.key().toStringRef()] = e.value().toTensor().clone();
  return out;
}

// CallUpdate calls update() with the batch as keyword arguments; the error
// text of what it threw, or "" when it returned.
std::string CallUpdate(torch::jit::Module& m, const NamedTensors& batch) {
  torch::jit::Kwargs kwargs;
  for (const auto& [name, t] : batch) kwargs[name] = t;
  try {
    m.get_method("update")({}, kwargs);
  } catch (const std::exception& e) {
    std::string what = e.what();
    return what.empty() ? "(empty exception)" : what;
  }
  return "";
}

TEST(BadInputTable, ExportedModuleRefusesAndChangesNothing) {
  const json cases = LoadCases();
  int ran = 0, i = 0;
  for (const json& c : cases) {
    ++i;
    if (!Lists(c, "module") || c.contains("file") || c.value("stage", "") == "create" || !c.contains("good")) continue;
    SCOPED_TRACE(Label(c));
    tally::ExportOptions o;
    o.out = absl::StrCat(testing::TestTmpDir(), "/bad_", i, ".pt");
    auto exported = tally::Export(c["metrics"].get<std::vector<std::string>>(), InputsOf(c["good"]), o);
    if (!exported.ok()) {
      // Only budgets refuse to export; no case relies on that.
      ADD_FAILURE() << exported.status();
      continue;
    }
    torch::jit::Module m = torch::jit::load(o.out);
    ASSERT_EQ(CallUpdate(m, InputsOf(c["good"])), "");
    const std::map<std::string, at::Tensor> before = StatesOf(m);
    std::string err = CallUpdate(m, InputsOf(c["bad"]));
    if (err.empty()) {
      // A deferred value check: compute names it.
      try {
        m.get_method("compute")({});
        ADD_FAILURE() << "update and compute both accepted the bad batch";
      } catch (const std::exception& e) {
        err = e.what();
      }
    } else {
      const std::map<std::string, at::Tensor> after = StatesOf(m);
      ASSERT_EQ(before.size(), after.size());
      for (const auto& [name, t] : before) EXPECT_TRUE(t.equal(after.at(name))) << name << " changed";
    }
    for (const std::string& n : Names(c)) {
      // The unused-input case names the input; the module's schema names
      // the ones it takes.
      if (c["class"] == "unused input" && n != Names(c)[0]) continue;
      EXPECT_TRUE(absl::StrContains(err, n)) << n << " not in: " << err;
    }
    ++ran;
  }
  EXPECT_GE(ran, 10);
}

// BodyOf is serve's JSON body for a case's batch.
std::string BodyOf(const json& batch) { return batch.dump(); }

bool HasNaN(const json& v) {
  if (v.is_string()) return true;
  if (v.is_array() || v.is_object()) {
    for (const json& x : v)
      if (HasNaN(x)) return true;
  }
  return false;
}

// CounterLines are GET /metrics' counter samples of the default set.
std::map<std::string, std::string> CounterLines(httplib::Client& http) {
  std::map<std::string, std::string> out;
  auto r = http.Get("/metrics");
  if (!r) return out;
  std::istringstream in(r->body);
  std::string line;
  while (std::getline(in, line)) {
    const size_t brace = line.find('{');
    if (line.empty() || line[0] == '#' || brace == std::string::npos) continue;
    const std::string name = line.substr(0, brace);
    if (absl::EndsWith(name, "_total")) out[name] = line.substr(line.rfind(' ') + 1);
  }
  return out;
}

TEST(BadInputTable, ServeAnswers400AndChangesNothing) {
  const json cases = LoadCases();
  int ran = 0;
  for (const json& c : cases) {
    if (!Lists(c, "serve") || HasNaN(c["bad"]) || c.contains("file")) continue;
    SCOPED_TRACE(Label(c));
    std::vector<std::string> args = {"serve", "--port", "0"};
    for (const json& m : c["metrics"]) args.insert(args.end(), {"--metric", m.get<std::string>()});
    if (c.contains("max_state_bytes")) {
      args.insert(args.end(), {"--max-state-bytes", absl::StrCat(c["max_state_bytes"].get<int64_t>())});
    }
    auto server = testing::ServerProcess::Spawn(testing::TallyBinary(), args);
    const absl::Status listening = server->WaitUntilListening();
    if (!listening.ok()) {
      // A spec serve refuses at start-up (it cannot parse, or names no
      // metric): one clean line and a non-zero exit.
      ASSERT_EQ(c.value("stage", ""), "create") << listening;
      testing::Invocation r = server->Wait();
      EXPECT_TRUE(testing::OneCleanErrorLine(r, Names(c))) << r;
      ++ran;
      continue;
    }
    httplib::Client http(server->host(), server->port());
    http.set_read_timeout(30);
    std::string before_values;
    std::map<std::string, std::string> before_counters;
    if (c.contains("good")) {
      auto good = http.Post("/v1/update", BodyOf(c["good"]), "application/json");
      ASSERT_TRUE(good && good->status == 200) << (good ? good->body : "no answer");
      before_values = http.Get("/v1/metrics")->body;
      before_counters = CounterLines(http);
    }
    auto bad = http.Post("/v1/update", BodyOf(c["bad"]), "application/json");
    ASSERT_TRUE(bad) << "no answer";
    EXPECT_EQ(bad->status, 400) << bad->body;
    const json err = json::parse(bad->body, nullptr, false);
    ASSERT_TRUE(err.contains("error")) << bad->body;
    const std::string msg = err["error"];
    for (const std::string& n : Names(c)) EXPECT_TRUE(absl::StrContains(msg, n)) << n << " not in: " << msg;
    if (c.contains("good")) {
      EXPECT_EQ(http.Get("/v1/metrics")->body, before_values);
      std::map<std::string, std::string> after = CounterLines(http);
      for (const auto& [name, value] : before_counters) {
        if (name == "tally_rejected_updates_total") {
          EXPECT_EQ(std::stod(after[name]), std::stod(value) + 1);
        } else {
          EXPECT_EQ(after[name], value) << name;
        }
      }
    }
    ++ran;
  }
  EXPECT_GE(ran, 12);
}

}  // namespace
}  // namespace tally
