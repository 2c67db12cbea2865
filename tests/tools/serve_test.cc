// Tests of `tally serve` as a client sees it (docs/cli.md, "serve"): the
// built binary started as a child process (ServerProcess), driven over HTTP
// with httplib::Client. What a server accumulates is compared byte for byte
// with `tally eval --format json` on the same rows written as .npy files;
// bad requests must get eval's one-line message and change nothing; the
// counters, the Prometheus text, reset, checkpoints across a kill -9 and a
// load of concurrent clients are checked from the outside.
#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <httplib.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine/io/npy.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/tools/cli_testing.h"
#include "tests/tools/server_process.h"

namespace tally {
namespace {

using json = nlohmann::json;
using ::tally::testing::Invocation;
using ::tally::testing::OneCleanErrorLine;
using ::tally::testing::RunTally;
using ::tally::testing::ServerProcess;
using ::tally::testing::TallyBinary;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kJson[] = "application/json";

// ---------------------------------------------------------------------------
// Data: rows of named inputs, as JSON text and as .npy arrays of the same values.

// Column is one input over all rows. Float elements are written in JSON
// with two decimals and kept as the float32 that text parses to (strtod,
// then a cast to float: what the server does), so the .npy file holds
// exactly the values the server receives.
struct Column {
  std::string name;
  io::NpyDType dtype = io::NpyDType::kFloat32;  // kFloat32 or kInt64
  int64_t width = 0;                            // 0: shape [N]; otherwise [N, width]
  std::vector<std::string> text;                // every element as written in JSON, row-major
  std::vector<float> f32;                       // the elements, when kFloat32
  std::vector<int64_t> i64;                     // the elements, when kInt64
  int64_t per_row() const { return width == 0 ? 1 : width; }

  // AddHundredths appends k/100 for a random k in [lo, hi].
  void AddHundredths(std::mt19937& rng, int lo, int hi) {
    const int k = std::uniform_int_distribution<int>(lo, hi)(rng);
    text.push_back(absl::StrFormat("%.2f", k / 100.0));
    f32.push_back(static_cast<float>(std::strtod(text.back().c_str(), nullptr)));
  }
  // AddWholeFloat appends a float with an integer value, written `k.0`.
  void AddWholeFloat(std::mt19937& rng, int lo, int hi) {
    const int k = std::uniform_int_distribution<int>(lo, hi)(rng);
    text.push_back(absl::StrCat(k, ".0"));
    f32.push_back(static_cast<float>(k));
  }
  void AddInt(std::mt19937& rng, int lo, int hi) {
    const int k = std::uniform_int_distribution<int>(lo, hi)(rng);
    text.push_back(absl::StrCat(k));
    i64.push_back(k);
  }
};

// DataSet is the specs a server runs and the rows it is fed.
struct DataSet {
  std::string label;
  std::vector<std::string> specs;
  std::vector<Column> columns;
  int64_t rows = 0;
};

// Multiclass: logits in [-5, 5] with two decimals (ties happen, and both
// sides see the same ones), integer labels.
DataSet Multiclass(int64_t rows, int classes, uint32_t seed) {
  DataSet d;
  d.label = "multiclass";
  const std::string c = absl::StrCat("num_classes=", classes);
  d.specs = {absl::StrCat("multiclass_accuracy(", c, ")"),
             absl::StrCat("multiclass_accuracy(", c, ", average=micro)"),
             absl::StrCat("multiclass_accuracy(", c, ", top_k=2)"),
             absl::StrCat("multiclass_f1_score(", c, ", average=macro)"),
             absl::StrCat("multiclass_precision(", c, ", average=none)"),
             absl::StrCat("multiclass_confusion_matrix(", c, ")")};
  std::mt19937 rng(seed);
  Column preds{"preds", io::NpyDType::kFloat32, classes};
  Column target{"target", io::NpyDType::kInt64, 0};
  for (int64_t r = 0; r < rows; ++r) {
    for (int j = 0; j < classes; ++j) preds.AddHundredths(rng, -500, 500);
    target.AddInt(rng, 0, classes - 1);
  }
  d.columns = {preds, target};
  d.rows = rows;
  return d;
}

// Binary: probabilities with two decimals (some exactly at the thresholds).
DataSet Binary(int64_t rows, uint32_t seed) {
  DataSet d;
  d.label = "binary";
  d.specs = {"binary_accuracy", "binary_f1_score(threshold=0.3)", "binary_confusion_matrix", "binary_stat_scores"};
  std::mt19937 rng(seed);
  Column preds{"preds", io::NpyDType::kFloat32, 0};
  Column target{"target", io::NpyDType::kInt64, 0};
  for (int64_t r = 0; r < rows; ++r) {
    preds.AddHundredths(rng, 0, 100);
    target.AddInt(rng, 0, 1);
  }
  d.columns = {preds, target};
  d.rows = rows;
  return d;
}

// Regression on whole numbers: every partial sum is exact in float32, so
// the result cannot depend on how rows were split or merged.
DataSet Regression(int64_t rows, uint32_t seed) {
  DataSet d;
  d.label = "regression";
  d.specs = {"mean_squared_error", "mean_absolute_error", "mean_squared_error(squared=false)"};
  std::mt19937 rng(seed);
  Column preds{"preds", io::NpyDType::kFloat32, 0};
  Column target{"target", io::NpyDType::kFloat32, 0};
  for (int64_t r = 0; r < rows; ++r) {
    preds.AddWholeFloat(rng, -20, 20);
    target.AddWholeFloat(rng, -20, 20);
  }
  d.columns = {preds, target};
  d.rows = rows;
  return d;
}

// Body is the POST /v1/update body of rows [begin, end).
std::string Body(const DataSet& d, int64_t begin, int64_t end) {
  std::string b = "{";
  for (size_t i = 0; i < d.columns.size(); ++i) {
    const Column& c = d.columns[i];
    absl::StrAppend(&b, i == 0 ? "" : ", ", "\"", c.name, "\": [");
    for (int64_t r = begin; r < end; ++r) {
      if (r > begin) b += ", ";
      if (c.width == 0) {
        b += c.text[r];
      } else {
        absl::StrAppend(&b, "[", absl::StrJoin(c.text.begin() + r * c.width, c.text.begin() + (r + 1) * c.width, ", "),
                        "]");
      }
    }
    b += "]";
  }
  return b + "}";
}

// WriteFile writes `bytes` to `path`.
void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string Dir(const std::string& name) {
  const std::string dir = absl::StrCat(::tally::testing::TestTmpDir(), "/", name);
  mkdir(dir.c_str(), 0755);
  return dir;
}

// WriteInputs writes rows [begin, end) of every column to `dir`/NAME.npy
// and returns eval's `--input NAME=FILE` arguments.
std::vector<std::string> WriteInputs(const DataSet& d, int64_t begin, int64_t end, const std::string& dir) {
  std::vector<std::string> args;
  for (const Column& c : d.columns) {
    io::NpyArray a;
    a.dtype = c.dtype;
    a.shape = {end - begin};
    if (c.width != 0) a.shape.push_back(c.width);
    const int64_t from = begin * c.per_row(), n = (end - begin) * c.per_row();
    if (c.dtype == io::NpyDType::kFloat32) {
      a.data.assign(reinterpret_cast<const char*>(c.f32.data() + from), n * sizeof(float));
    } else {
      a.data.assign(reinterpret_cast<const char*>(c.i64.data() + from), n * sizeof(int64_t));
    }
    const std::string path = absl::StrCat(dir, "/", c.name, ".npy");
    absl::Status st = io::WriteNpy(path, a);
    EXPECT_TRUE(st.ok()) << st;
    args.push_back("--input");
    args.push_back(absl::StrCat(c.name, "=", path));
  }
  return args;
}

// Eval runs `tally eval --format json [--batch-size B]` over rows
// [begin, end) of `d` (B = 0: one update).
Invocation Eval(const DataSet& d, int64_t begin, int64_t end, int64_t batch, const std::string& dir) {
  std::vector<std::string> args = {"eval", "--format", "json"};
  for (const std::string& s : d.specs) args.insert(args.end(), {"--metric", s});
  for (const std::string& a : WriteInputs(d, begin, end, dir)) args.push_back(a);
  if (batch > 0) args.insert(args.end(), {"--batch-size", absl::StrCat(batch)});
  return RunTally(args);
}

// EvalError is the message of a failed eval: its one stderr line without
// the "tally eval: error: " prefix.
std::string EvalError(const Invocation& r) {
  EXPECT_TRUE(OneCleanErrorLine(r, {})) << r;
  absl::string_view msg = r.err;
  EXPECT_TRUE(absl::ConsumePrefix(&msg, "tally eval: error: ")) << r;
  absl::ConsumeSuffix(&msg, "\n");
  return std::string(msg);
}

// ---------------------------------------------------------------------------
// The server and its HTTP API.

// SpawnServe spawns `tally serve --port 0 --metric ...` with `extra` flags.
std::unique_ptr<ServerProcess> SpawnServe(const std::vector<std::string>& specs,
                                          const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"serve", "--port", "0"};
  for (const std::string& s : specs) args.insert(args.end(), {"--metric", s});
  args.insert(args.end(), extra.begin(), extra.end());
  return ServerProcess::Spawn(TallyBinary(), args);
}

// ASSERT_LISTENING waits for a spawned server's `listening on` line.
#define ASSERT_LISTENING(server)                                   \
  do {                                                             \
    const absl::Status listening = (server)->WaitUntilListening(); \
    ASSERT_TRUE(listening.ok()) << listening;                      \
  } while (0)

// Reply is an HTTP answer; status 0 when none came (body says why).
struct Reply {
  int status = 0;
  std::string body;
  std::string content_type;
};
std::ostream& operator<<(std::ostream& os, const Reply& r) { return os << "HTTP " << r.status << " " << r.body; }

Reply FromResult(const httplib::Result& res) {
  Reply r;
  if (!res) {
    r.body = absl::StrCat("no answer: ", httplib::to_string(res.error()));
    return r;
  }
  r.status = res->status;
  r.body = res->body;
  r.content_type = res->get_header_value("Content-Type");
  return r;
}

// Client talks to one server: a fresh connection per request unless
// keep_alive, without Nagle's algorithm on the client's side.
class Client {
 public:
  explicit Client(const ServerProcess& s, bool keep_alive = false) : http_(s.host(), s.port()) {
    http_.set_connection_timeout(10);
    http_.set_read_timeout(30);
    http_.set_write_timeout(30);
    http_.set_keep_alive(keep_alive);
    http_.set_tcp_nodelay(true);
  }
  Reply Post(const std::string& path, const std::string& body) {
    // cpp-httplib answers 400 to a POST without a body (no Content-Length).
    return FromResult(http_.Post(path.c_str(), body.empty() ? "{}" : body, kJson));
  }
  Reply Update(const std::string& body) { return Post("/v1/update", body); }
  Reply Get(const std::string& path) { return FromResult(http_.Get(path.c_str())); }
  Reply Metrics() { return Get("/v1/metrics"); }

 private:
  httplib::Client http_;
};

// ErrorOf is the "error" string of a 400/409 body ("" if it has none).
std::string ErrorOf(const Reply& r) {
  json j = json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("error") || !j["error"].is_string()) return "";
  return j["error"].get<std::string>();
}

// ---------------------------------------------------------------------------
// Prometheus text exposition format 0.0.4.

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct Exposition {
  std::map<std::string, std::string> types;  // family -> counter | gauge | ...
  std::vector<Sample> samples;
  // Find returns the value of the sample `name` whose labels include `labels`.
  std::optional<double> Find(const std::string& name, const std::map<std::string, std::string>& labels) const {
    for (const Sample& s : samples) {
      if (s.name != name) continue;
      bool all = true;
      for (const auto& [k, v] : labels) {
        auto it = s.labels.find(k);
        all = all && it != s.labels.end() && it->second == v;
      }
      if (all) return s.value;
    }
    return std::nullopt;
  }
};

bool ValidName(absl::string_view n, bool colons) {
  if (n.empty()) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    const char c = n[i];
    const bool ok = absl::ascii_isalpha(c) || c == '_' || (colons && c == ':') || (i > 0 && absl::ascii_isdigit(c));
    if (!ok) return false;
  }
  return true;
}

// ParsePrometheus parses `text` strictly: `# HELP name text` and
// `# TYPE name type` comments, then samples `name{k="v",...} value` with
// valid metric and label names, escaped label values and a float value.
// A family's HELP and TYPE come before its samples, at most once each, and
// its samples are contiguous.
::testing::AssertionResult ParsePrometheus(const std::string& text, Exposition* out) {
  *out = Exposition();
  if (!text.empty() && text.back() != '\n') return ::testing::AssertionFailure() << "does not end with a newline";
  std::map<std::string, int> help_count;
  std::set<std::string> finished;  // families whose samples are over
  std::string current;             // family of the previous line
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(absl::string_view(text), '\n', absl::SkipEmpty())) {
    ++line_no;
    auto fail = [&]() { return ::testing::AssertionFailure() << "line " << line_no << ": '" << line << "': "; };
    std::string family;
    if (absl::StartsWith(line, "#")) {
      std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(' ', 3));
      if (parts.size() < 3 || parts[0] != "#" || (parts[1] != "HELP" && parts[1] != "TYPE")) continue;  // a comment
      family = std::string(parts[2]);
      if (!ValidName(family, true)) return fail() << "bad metric name";
      if (parts[1] == "HELP") {
        if (++help_count[family] > 1) return fail() << "second HELP";
      } else {
        static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary", "untyped"};
        if (parts.size() != 4 || kTypes.count(std::string(parts[3])) == 0) return fail() << "bad TYPE";
        if (out->types.count(family)) return fail() << "second TYPE";
        for (const Sample& s : out->samples)
          if (s.name == family) return fail() << "TYPE after samples";
        out->types[family] = std::string(parts[3]);
      }
    } else {
      Sample s;
      size_t i = 0;
      while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
      s.name = std::string(line.substr(0, i));
      if (!ValidName(s.name, true)) return fail() << "bad metric name";
      if (i < line.size() && line[i] == '{') {
        ++i;
        while (i < line.size() && line[i] != '}') {
          size_t eq = line.find('=', i);
          if (eq == absl::string_view::npos) return fail() << "label without '='";
          std::string key(line.substr(i, eq - i));
          if (!ValidName(key, false) || absl::StartsWith(key, "__")) return fail() << "bad label name '" << key << "'";
          i = eq + 1;
          if (i >= line.size() || line[i] != '"') return fail() << "unquoted label value";
          std::string value;
          for (++i; i < line.size() && line[i] != '"'; ++i) {
            if (line[i] == '\\') {
              if (++i >= line.size()) return fail() << "dangling escape";
              if (line[i] == 'n')
                value += '\n';
              else if (line[i] == '\\' || line[i] == '"')
                value += line[i];
              else
                return fail() << "bad escape";
            } else {
              value += line[i];
            }
          }
          if (i >= line.size()) return fail() << "unterminated label value";
          ++i;  // the closing quote
          if (s.labels.count(key)) return fail() << "label '" << key << "' twice";
          s.labels[key] = value;
          if (i < line.size() && line[i] == ',')
            ++i;
          else if (i >= line.size() || line[i] != '}')
            return fail() << "expected ',' or '}'";
        }
        if (i >= line.size()) return fail() << "unterminated labels";
        ++i;  // '}'
      }
      if (i >= line.size() || line[i] != ' ') return fail() << "no space before the value";
      std::vector<absl::string_view> rest = absl::StrSplit(line.substr(i + 1), ' ');
      if (rest.empty() || rest.size() > 2) return fail() << "expected 'value [timestamp]'";
      if (rest[0] == "NaN")
        s.value = NAN;
      else if (rest[0] == "+Inf")
        s.value = INFINITY;
      else if (rest[0] == "-Inf")
        s.value = -INFINITY;
      else if (!absl::SimpleAtod(rest[0], &s.value))
        return fail() << "bad value";
      family = s.name;
      if (!out->types.count(family)) return fail() << "sample before its TYPE";
      if (help_count[family] == 0) return fail() << "sample before its HELP";
      out->samples.push_back(std::move(s));
    }
    if (family != current) {
      if (!current.empty()) finished.insert(current);
      if (finished.count(family)) return fail() << "family '" << family << "' is not contiguous";
      current = family;
    }
  }
  return ::testing::AssertionSuccess();
}

// Counters are the default set's counters from GET /metrics.
struct Counters {
  double updates = -1, rows = -1, rejected = -1, compute_errors = -1;
  bool operator==(const Counters& o) const {
    return updates == o.updates && rows == o.rows && rejected == o.rejected && compute_errors == o.compute_errors;
  }
};
std::ostream& operator<<(std::ostream& os, const Counters& c) {
  return os << "{updates " << c.updates << ", rows " << c.rows << ", rejected " << c.rejected << ", compute_errors "
            << c.compute_errors << "}";
}

::testing::AssertionResult ScrapeCounters(Client& client, Counters* c, Exposition* all = nullptr) {
  Reply r = client.Get("/metrics");
  if (r.status != 200) return ::testing::AssertionFailure() << "GET /metrics: " << r;
  Exposition e;
  ::testing::AssertionResult parsed = ParsePrometheus(r.body, &e);
  if (!parsed) return parsed << "\n" << r.body;
  const std::map<std::string, std::string> set = {{"set", "default"}};
  auto get = [&](const char* name) { return e.Find(name, set).value_or(-1); };
  c->updates = get("tally_updates_total");
  c->rows = get("tally_rows_total");
  c->rejected = get("tally_rejected_updates_total");
  c->compute_errors = get("tally_compute_errors_total");
  if (all != nullptr) *all = std::move(e);
  return ::testing::AssertionSuccess();
}

// ValueOf is the JSON value of `spec` in a GET /v1/metrics body.
json ValueOf(const std::string& body, const std::string& spec) {
  json doc = json::parse(body, nullptr, false);
  if (doc.is_discarded() || !doc.contains("results")) return json();
  for (const json& e : doc["results"])
    if (e["metric"] == spec) return e["value"];
  return json();
}

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(TallyBinary().empty()) << "tools/tally/tally not found in the runfiles"; }
};

// ---------------------------------------------------------------------------
// 1. What a server accumulates is what eval computes.

// Verifies that K batches POSTed by 4 concurrent clients give, on GET
// /v1/metrics, exactly (byte for byte) the stdout of `tally eval --format
// json --batch-size B` over the same rows, for multiclass (float32 logits),
// binary and whole-number regression metrics, whose results do not depend
// on how updates are split across the server's threads; and that reading
// twice gives the same bytes.
TEST_F(ServeTest, MetricsEqualEvalOnTheSameRows) {
  constexpr int64_t kBatch = 40, kBatches = 25;
  constexpr int64_t kRows = kBatch * kBatches - 7;  // the last batch is shorter
  for (const DataSet& d : {Multiclass(kRows, 5, 1), Binary(kRows, 2), Regression(kRows, 3)}) {
    SCOPED_TRACE(d.label);
    // The JSON text parses to the float32 values the .npy files hold.
    for (const Column& c : d.columns) {
      for (size_t i = 0; i < c.f32.size(); ++i) {
        ASSERT_EQ(static_cast<float>(std::strtod(c.text[i].c_str(), nullptr)), c.f32[i]) << c.text[i];
      }
    }
    auto server = SpawnServe(d.specs);
    ASSERT_LISTENING(server);
    Client client(*server);
    EXPECT_EQ(client.Metrics().status, 409);

    std::atomic<int> failures{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        Client c(*server);
        for (int64_t b = t; b < kBatches; b += 4) {
          Reply r = c.Update(Body(d, b * kBatch, std::min(kRows, (b + 1) * kBatch)));
          if (r.status != 200 || r.body != "{\"ok\": true}") {
            ADD_FAILURE() << "batch " << b << ": " << r;
            ++failures;
          }
        }
      });
    }
    for (std::thread& t : threads) t.join();
    ASSERT_EQ(failures.load(), 0);

    Invocation eval = Eval(d, 0, kRows, kBatch, Dir("equivalence_" + d.label));
    ASSERT_EQ(eval.exit_code, 0) << eval;
    Reply got = client.Metrics();
    ASSERT_EQ(got.status, 200) << got;
    EXPECT_THAT(got.content_type, HasSubstr("application/json"));
    EXPECT_EQ(got.body + "\n", eval.out);
    EXPECT_EQ(client.Metrics().body, got.body);

    Counters c;
    ASSERT_TRUE(ScrapeCounters(client, &c));
    EXPECT_EQ(c, (Counters{kBatches, kRows, 0, 0}));
  }
}

// Verifies text bodies: sentences (a row's references as a list, ragged)
// are tokenized as `tally eval` tokenizes text files, so two text batches
// give eval's result over the two files together; a row that is not text
// and a metric set that splits text two ways are 400s naming the input.
TEST_F(ServeTest, TextBodiesAreTokenized) {
  const std::vector<std::string> hyps = {"the cat is on the mat", "Hello, W\u00f6rld!", "", "a b c d e f g h"};
  const std::vector<std::vector<std::string>> refs = {
      {"there is a cat on the mat", "a cat is on the mat"}, {"hello world"}, {"x y", "z"}, {"e f g h a b c d"}};
  const std::string dir = Dir("text_bodies");
  std::string preds_txt, refs_tsv;
  for (size_t i = 0; i < hyps.size(); ++i) {
    absl::StrAppend(&preds_txt, hyps[i], "\n");
    absl::StrAppend(&refs_tsv, absl::StrJoin(refs[i], "\t"), "\n");
  }
  WriteFile(dir + "/preds.txt", preds_txt);
  WriteFile(dir + "/target.tsv", refs_tsv);
  const auto rows = [&](size_t begin, size_t end) {
    json preds = json::array(), target = json::array();
    for (size_t i = begin; i < end; ++i) {
      preds.push_back(hyps[i]);
      target.push_back(refs[i]);
    }
    return json{{"preds", preds}, {"target", target}}.dump();
  };
  const std::vector<std::string> specs = {"translation_edit_rate", "translation_edit_rate(normalize=false)"};
  auto server = SpawnServe(specs);
  ASSERT_LISTENING(server);
  Client client(*server);
  Reply bad = client.Update(R"({"preds": ["a b", 3], "target": [["a"], ["b"]]})");
  EXPECT_EQ(bad.status, 400) << bad;
  EXPECT_THAT(ErrorOf(bad), HasSubstr("input 'preds' is text: row 1 is not a string"));
  ASSERT_EQ(client.Update(rows(0, 3)).status, 200);
  ASSERT_EQ(client.Update(rows(3, 4)).status, 200);
  Invocation eval = RunTally({"eval", "--format", "json", "--metric", specs[0], "--metric", specs[1], "--input",
                              "preds=" + dir + "/preds.txt", "--input", "target=" + dir + "/target.tsv"});
  ASSERT_EQ(eval.exit_code, 0) << eval;
  Reply got = client.Metrics();
  ASSERT_EQ(got.status, 200) << got;
  EXPECT_EQ(got.body + "\n", eval.out);
  auto words = SpawnServe({"word_error_rate", "char_error_rate"});
  ASSERT_LISTENING(words);
  Client mixed(*words);
  Reply two_ways = mixed.Update(rows(0, 1));
  EXPECT_EQ(two_ways.status, 400) << two_ways;
  EXPECT_THAT(ErrorOf(two_ways), HasSubstr("splits text into words but char_error_rate into characters"));
}

// Verifies that integers sent for a float input after the first update are
// cast (JSON `1` for preds fixed as float32 by `0.25`), and that the result
// is eval's over the same values as float32.
TEST_F(ServeTest, IntegersAreCastToAFloatInput) {
  DataSet d = Multiclass(8, 3, 4);
  // Rows 4..7: whole-number logits, sent as JSON integers.
  Column& preds = d.columns[0];
  for (int64_t i = 4 * 3; i < 8 * 3; ++i) {
    preds.f32[i] = static_cast<float>(i % 4);
    preds.text[i] = absl::StrCat(i % 4);
  }
  auto server = SpawnServe(d.specs);
  ASSERT_LISTENING(server);
  Client client(*server);
  ASSERT_EQ(client.Update(Body(d, 0, 4)).status, 200);
  Reply ints = client.Update(Body(d, 4, 8));
  ASSERT_EQ(ints.status, 200) << ints;
  Invocation eval = Eval(d, 0, 8, 4, Dir("cast"));
  ASSERT_EQ(eval.exit_code, 0) << eval;
  EXPECT_EQ(client.Metrics().body + "\n", eval.out);
}

TEST_F(ServeTest, DictResultsKeepTheirKeys) {
  // Verifies that /v1/metrics answers mean_average_precision as TorchMetrics'
  // dict (one JSON object, keys in its order), as `tally eval` prints it:
  // its docstring example, one image with one detection and one box.
  const std::vector<std::string> specs = {"mean_average_precision"};
  auto server = SpawnServe(specs);
  ASSERT_LISTENING(server);
  Client client(*server);
  Reply up = client.Update(R"({"boxes": [[[258.0, 41.0, 606.0, 285.0]]], "scores": [[0.536]], "labels": [[0]],)"
                           R"( "target_boxes": [[[214.0, 41.0, 562.0, 285.0]]], "target_labels": [[0]]})");
  ASSERT_EQ(up.status, 200) << up;
  const std::string body = client.Metrics().body;
  EXPECT_THAT(body, HasSubstr(R"("value": {"map": )"));  // TorchMetrics' key order
  json got = json::parse(body, nullptr, false);
  ASSERT_TRUE(got.contains("results")) << got;
  const json& value = got["results"][0]["value"];
  ASSERT_TRUE(value.is_object()) << value;
  std::vector<std::string> keys;
  for (auto it = value.begin(); it != value.end(); ++it) keys.push_back(it.key());
  EXPECT_EQ(keys.size(), 15u);
  EXPECT_NEAR(value["map"].get<double>(), 0.6, 1e-12);
  EXPECT_NEAR(value["map_50"].get<double>(), 1.0, 1e-12);  // pycocotools: 0.9999999999999999
  EXPECT_EQ(value["map_small"].get<double>(), -1.0);
  EXPECT_EQ(value["classes"], json::array({0}));
}

TEST_F(ServeTest, SlicedMetricsTakeGroupsAndLabelThem) {
  // Verifies that /v1/update takes `groups` like any input and that a sliced
  // metric's per-group values are Prometheus samples with a `group` label
  // (the overall value without one), equal to the metric on each group's
  // rows; demographic parity (a tuple of scalars) has no group axis.
  const std::string acc = "binary_accuracy(num_groups=2, overall=true)";
  const std::string dp = "demographic_parity(num_groups=2)";
  auto server = SpawnServe({acc, dp});
  ASSERT_LISTENING(server);
  Client client(*server);
  // Group 0: both right; group 1: one of two right (0.8 > 0.5 against 0).
  // Positive rates: 1/2 in both groups, so parity 1 between groups 0 and 0.
  Reply r = client.Update(R"({"preds": [0.9, 0.2, 0.8, 0.1], "target": [1, 0, 0, 0], "groups": [0, 0, 1, 1]})");
  ASSERT_EQ(r.status, 200) << r;
  Reply m = client.Get("/metrics");
  ASSERT_EQ(m.status, 200) << m;
  Exposition e;
  ASSERT_TRUE(ParsePrometheus(m.body, &e)) << m.body;
  const auto at = [&](const std::string& metric, std::map<std::string, std::string> labels) {
    labels["metric"] = metric;
    return e.Find("tally_metric", labels);
  };
  EXPECT_EQ(at(acc, {{"part", "0"}, {"group", "0"}}), 1.0);
  EXPECT_EQ(at(acc, {{"part", "0"}, {"group", "1"}}), 0.5);
  EXPECT_EQ(at(acc, {{"part", "1"}}), 0.75);
  EXPECT_EQ(at(dp, {{"part", "0"}}), 1.0);
  EXPECT_EQ(at(dp, {{"part", "1"}}), 0.0);
  EXPECT_EQ(at(dp, {{"part", "2"}}), 0.0);
  EXPECT_THAT(m.body, Not(HasSubstr("part=\"1\",group")));
}

// ---------------------------------------------------------------------------
// 2. Bad input: 400, eval's message, nothing changed.

// BadInputTest runs a multiclass server (3 classes) that accepted 4 rows.
class BadInputTest : public ServeTest {
 protected:
  void SetUp() override {
    ServeTest::SetUp();
    specs_ = {"multiclass_accuracy(num_classes=3)", "multiclass_confusion_matrix(num_classes=3)"};
    server_ = SpawnServe(specs_);
    ASSERT_LISTENING(server_);
    client_ = std::make_unique<Client>(*server_);
    ASSERT_EQ(client_
                  ->Update(R"({"preds": [[0.1, 0.7, 0.2], [0.8, 0.1, 0.1], [0.2, 0.2, 0.6], [0.3, 0.4, 0.3]],
                                  "target": [1, 0, 2, 0]})")
                  .status,
              200);
    Reply m = client_->Metrics();
    ASSERT_EQ(m.status, 200) << m;
    metrics_before_ = m.body;
    ASSERT_TRUE(ScrapeCounters(*client_, &counters_before_));
    ASSERT_EQ(counters_before_.updates, 1);
    ASSERT_EQ(counters_before_.rows, 4);
  }

  // Rejected posts `body`, expects a 400 whose error is one line, and that
  // nothing a client can see changed but the rejected counter, which counts
  // every 400 (those of serve's own parsing too); returns the error.
  std::string Rejected(const std::string& body) {
    ++rejected_;
    Reply r = client_->Update(body);
    EXPECT_EQ(r.status, 400) << r;
    EXPECT_THAT(r.content_type, HasSubstr("application/json"));
    const std::string error = ErrorOf(r);
    EXPECT_NE(error, "") << r;
    EXPECT_THAT(error, Not(HasSubstr("\n")));
    ExpectUnchanged();
    return error;
  }

  void ExpectUnchanged() {
    EXPECT_EQ(client_->Metrics().body, metrics_before_);
    Counters now;
    ASSERT_TRUE(ScrapeCounters(*client_, &now));
    EXPECT_EQ(now.updates, counters_before_.updates);
    EXPECT_EQ(now.rows, counters_before_.rows);
    EXPECT_EQ(now.rejected, counters_before_.rejected + rejected_);
  }

  // EvalMessage is eval's error for the given preds/target arrays.
  std::string EvalMessage(const std::string& name, const io::NpyArray& preds, const io::NpyArray& target) {
    const std::string dir = Dir("bad_" + name);
    const std::string p = dir + "/preds.npy", t = dir + "/target.npy";
    EXPECT_TRUE(io::WriteNpy(p, preds).ok());
    EXPECT_TRUE(io::WriteNpy(t, target).ok());
    std::vector<std::string> args = {"eval", "--format", "json"};
    for (const std::string& s : specs_) args.insert(args.end(), {"--metric", s});
    args.insert(args.end(), {"--input", "preds=" + p, "--input", "target=" + t});
    return EvalError(RunTally(args));
  }

  static io::NpyArray F32(std::vector<int64_t> shape, const std::vector<float>& v) {
    io::NpyArray a;
    a.dtype = io::NpyDType::kFloat32;
    a.shape = std::move(shape);
    a.data.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
    return a;
  }
  static io::NpyArray I64(const std::vector<int64_t>& v) {
    io::NpyArray a;
    a.dtype = io::NpyDType::kInt64;
    a.shape = {static_cast<int64_t>(v.size())};
    a.data.assign(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(int64_t));
    return a;
  }

  std::vector<std::string> specs_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<Client> client_;
  std::string metrics_before_;
  Counters counters_before_;
  int rejected_ = 0;  // 400s so far
};

// Verifies that a label out of range is a 400 with exactly eval's message
// for the same rows, and changes nothing.
TEST_F(BadInputTest, LabelOutOfRange) {
  const std::string error = Rejected(R"({"preds": [[0.1, 0.7, 0.2], [0.8, 0.1, 0.1]], "target": [1, 3]})");
  EXPECT_EQ(error, EvalMessage("range", F32({2, 3}, {0.1f, 0.7f, 0.2f, 0.8f, 0.1f, 0.1f}), I64({1, 3})));
  EXPECT_THAT(error, HasSubstr("multiclass_accuracy"));
  // A negative label too.
  EXPECT_EQ(Rejected(R"({"preds": [[0.1, 0.7, 0.2]], "target": [-1]})"),
            EvalMessage("negative", F32({1, 3}, {0.1f, 0.7f, 0.2f}), I64({-1})));
}

// Verifies that an unknown input name is a 400 with eval's message for
// `--input foo=FILE`.
TEST_F(BadInputTest, UnknownInputName) {
  const std::string error = Rejected(R"({"preds": [[0.1, 0.7, 0.2]], "target": [1], "foo": [1]})");
  const std::string dir = Dir("bad_unknown");
  ASSERT_TRUE(io::WriteNpy(dir + "/preds.npy", F32({1, 3}, {0.1f, 0.7f, 0.2f})).ok());
  ASSERT_TRUE(io::WriteNpy(dir + "/target.npy", I64({1})).ok());
  Invocation eval = RunTally({"eval", "--metric", specs_[0], "--input", "preds=" + dir + "/preds.npy", "--input",
                              "target=" + dir + "/target.npy", "--input", "foo=" + dir + "/target.npy"});
  EXPECT_EQ(error, EvalError(eval));
  EXPECT_THAT(error, HasSubstr("'foo'"));
}

// Verifies that a wrong trailing dim, a row-count mismatch, float labels
// after integer ones, and an input no metric takes are 400s that name the
// input, and change nothing. (Whether the first two carry eval's exact
// message is ShapeErrorsAreEvalsMessages below.)
TEST_F(BadInputTest, WrongShapesAndTypes) {
  std::string error = Rejected(R"({"preds": [[0.1, 0.7], [0.8, 0.1]], "target": [1, 0]})");
  EXPECT_THAT(error, HasSubstr("multiclass_accuracy"));
  EXPECT_THAT(error, HasSubstr("preds"));
  error = Rejected(R"({"preds": [[0.1, 0.7, 0.2, 0.0]], "target": [1]})");
  EXPECT_THAT(error, HasSubstr("preds"));
  error = Rejected(R"({"preds": [[0.1, 0.7, 0.2], [0.8, 0.1, 0.1]], "target": [1, 0, 2]})");
  EXPECT_THAT(error, HasSubstr("'target' has 3 rows"));
  error = Rejected(R"({"preds": [0.1, 0.7, 0.2], "target": [1, 0, 2]})");
  EXPECT_THAT(error, HasSubstr("preds"));
  // Float labels after integer ones: what eval says of float labels.
  error = Rejected(R"({"preds": [[0.1, 0.7, 0.2], [0.8, 0.1, 0.1]], "target": [1.0, 0.5]})");
  EXPECT_EQ(error,
            EvalMessage("float_target", F32({2, 3}, {0.1f, 0.7f, 0.2f, 0.8f, 0.1f, 0.1f}), F32({2}, {1.0f, 0.5f})));
  EXPECT_THAT(error, HasSubstr("target"));
  EXPECT_THAT(error, HasSubstr("f32"));
  // Even whole-valued floats: the dtype, not the values, decides.
  Rejected(R"({"preds": [[0.1, 0.7, 0.2]], "target": [1.0]})");
  error = Rejected(R"({"preds": [[0.1, 0.7, 0.2]], "target": [1], "indexes": [0]})");
  EXPECT_THAT(error, HasSubstr("indexes"));
}

// Verifies that bodies that are no valid request are 400s with a one-line
// reason, and change nothing.
TEST_F(BadInputTest, MalformedBodies) {
  EXPECT_EQ(Rejected(R"({"preds": [[0.1, 0.7, 0.2]], "target": [1)"), "request body is not valid JSON");
  EXPECT_EQ(Rejected("not json at all"), "request body is not valid JSON");
  EXPECT_THAT(Rejected(R"([[0.1, 0.7, 0.2]])"), HasSubstr("JSON object"));
  EXPECT_THAT(Rejected(R"({})"), HasSubstr("no input"));
  EXPECT_THAT(Rejected(R"({"preds": [[0.1, 0.7, 0.2], [0.8, 0.1]], "target": [1, 0]})"), HasSubstr("ragged"));
  EXPECT_THAT(Rejected(R"({"preds": [["a", "b", "c"]], "target": [1]})"), HasSubstr("'preds'"));
  EXPECT_THAT(Rejected(R"({"preds": [[0.1, 0.7, 0.2]], "target": [null]})"), HasSubstr("'target'"));
  EXPECT_THAT(Rejected(R"({"preds": [[0.1, 0.7, 0.2]]})"), HasSubstr("target"));
  // The server still takes good updates afterwards.
  Reply ok = client_->Update(R"({"preds": [[0.1, 0.7, 0.2]], "target": [1]})");
  EXPECT_EQ(ok.status, 200) << ok;
  Counters c;
  ASSERT_TRUE(ScrapeCounters(*client_, &c));
  EXPECT_EQ(c, (Counters{2, 5, 8, 0}));
}

// Verifies that once the first update fixed the signature, a wrong
// trailing dim or a row-count mismatch still gets the message eval prints
// for the same data (docs/cli.md), not Program's runtime message
// ("input 'preds': wrong size of dim 1: expected f32[N,3]@cpu, ...").
TEST_F(BadInputTest, ShapeErrorsAreEvalsMessages) {
  EXPECT_EQ(Rejected(R"({"preds": [[0.1, 0.7], [0.8, 0.1]], "target": [1, 0]})"),
            EvalMessage("dim", F32({2, 2}, {0.1f, 0.7f, 0.8f, 0.1f}), I64({1, 0})));
  EXPECT_EQ(Rejected(R"({"preds": [[0.1, 0.7, 0.2], [0.8, 0.1, 0.1]], "target": [1, 0, 2]})"),
            EvalMessage("rows", F32({2, 3}, {0.1f, 0.7f, 0.2f, 0.8f, 0.1f, 0.1f}), I64({1, 0, 2})));
}

// Verifies that a rejected first update fixes nothing: GET /v1/metrics
// still answers 409, and a later valid update with float preds is accepted
// although the rejected one had integer preds.
TEST_F(ServeTest, ARejectedFirstUpdateFixesNothing) {
  auto server = SpawnServe({"binary_accuracy"});
  ASSERT_LISTENING(server);
  Client client(*server);
  Reply bad = client.Update(R"({"preds": [1, 0], "target": [1, 2]})");
  ASSERT_EQ(bad.status, 400) << bad;
  EXPECT_EQ(ErrorOf(bad), "binary_accuracy: target: 1 values outside {0, 1}");
  EXPECT_EQ(client.Metrics().status, 409);
  Reply good = client.Update(R"({"preds": [0.9, 0.2], "target": [1, 0]})");
  EXPECT_EQ(good.status, 200) << good;
}

// ---------------------------------------------------------------------------
// 3. Load.

// Verifies that 8 concurrent clients, 500 updates of 16 rows each, are all
// accepted and all counted: tally_updates_total and tally_rows_total equal
// what was sent, the confusion matrix sums to the rows and its row sums are
// the label counts; a concurrent scraper sees the counters only grow. The
// latency percentiles and throughput are recorded as test properties.
TEST_F(ServeTest, LoadOfConcurrentClients) {
  constexpr int kClients = 8, kRequestsPerClient = 500, kRows = 16, kClasses = 10, kBodies = 64;
  const DataSet d = Multiclass(kBodies * kRows, kClasses, 5);
  std::vector<std::string> bodies;
  for (int b = 0; b < kBodies; ++b) bodies.push_back(Body(d, b * kRows, (b + 1) * kRows));
  const std::string cm_spec = absl::StrCat("multiclass_confusion_matrix(num_classes=", kClasses, ")");
  auto server = SpawnServe({absl::StrCat("multiclass_accuracy(num_classes=", kClasses, ")"), cm_spec});
  ASSERT_LISTENING(server);

  std::vector<std::vector<int64_t>> latencies_us(kClients);
  std::vector<std::vector<int64_t>> labels(kClients, std::vector<int64_t>(kClasses, 0));
  std::atomic<int> failures{0};
  std::atomic<bool> done{false};
  std::atomic<int> scrapes{0};
  // The scraper reads while updates land: counters never go down.
  std::thread scraper([&] {
    Client c(*server);
    double last = 0;
    while (!done.load()) {
      Counters now;
      if (!ScrapeCounters(c, &now)) {
        ++failures;
      } else if (now.updates >= 0) {  // -1 until the first update created the session
        EXPECT_GE(now.updates, last);
        EXPECT_LE(now.updates, kClients * kRequestsPerClient);
        last = now.updates;
      }
      ++scrapes;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> clients;
  for (int t = 0; t < kClients; ++t) {
    clients.emplace_back([&, t] {
      // A connection per request, so that the latencies include the
      // connection set-up a client without keep-alive pays.
      Client c(*server);
      latencies_us[t].reserve(kRequestsPerClient);
      for (int i = 0; i < kRequestsPerClient; ++i) {
        const int b = (t * kRequestsPerClient + i) % kBodies;
        const auto t0 = std::chrono::steady_clock::now();
        Reply r = c.Update(bodies[b]);
        latencies_us[t].push_back(
            std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count());
        if (r.status != 200) {
          if (failures++ < 5) ADD_FAILURE() << "client " << t << " request " << i << ": " << r;
          continue;
        }
        for (int64_t row = b * kRows; row < (b + 1) * kRows; ++row) ++labels[t][d.columns[1].i64[row]];
      }
    });
  }
  for (std::thread& t : clients) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  done.store(true);
  scraper.join();
  ASSERT_EQ(failures.load(), 0);
  EXPECT_LT(seconds, 60.0) << "the load took too long";

  Client client(*server);
  Counters c;
  ASSERT_TRUE(ScrapeCounters(client, &c));
  constexpr int64_t kRequests = int64_t{kClients} * kRequestsPerClient;
  EXPECT_EQ(c, (Counters{kRequests, kRequests * kRows, 0, 0}));
  Reply m = client.Metrics();
  ASSERT_EQ(m.status, 200) << m;
  const json cm = ValueOf(m.body, cm_spec);
  ASSERT_TRUE(cm.is_array() && cm.size() == kClasses) << m;
  int64_t total = 0;
  for (int i = 0; i < kClasses; ++i) {
    int64_t row_sum = 0, want = 0;
    for (const json& v : cm[i]) row_sum += v.get<int64_t>();
    for (int t = 0; t < kClients; ++t) want += labels[t][i];
    EXPECT_EQ(row_sum, want) << "label " << i;
    total += row_sum;
  }
  EXPECT_EQ(total, kRequests * kRows);

  std::vector<int64_t> all;
  for (const auto& l : latencies_us) all.insert(all.end(), l.begin(), l.end());
  std::sort(all.begin(), all.end());
  const int64_t p50 = all[all.size() / 2], p99 = all[all.size() * 99 / 100];
  const double rps = kRequests / seconds;
  RecordProperty("load_clients", kClients);
  RecordProperty("load_requests", static_cast<int>(kRequests));
  RecordProperty("load_rows_per_request", kRows);
  RecordProperty("load_p50_latency_us", static_cast<int>(p50));
  RecordProperty("load_p99_latency_us", static_cast<int>(p99));
  RecordProperty("load_requests_per_s", static_cast<int>(rps));
  RecordProperty("load_updates_per_s", static_cast<int>(c.updates / seconds));
  RecordProperty("load_rows_per_s", static_cast<int>(c.rows / seconds));
  std::cout << absl::StrFormat(
                   "serve load: %d clients x %d updates of %d rows in %.2f s: p50 %d us, p99 %d us, %.0f requests/s, "
                   "%.0f updates/s, %.0f rows/s (%d concurrent scrapes)",
                   kClients, kRequestsPerClient, kRows, seconds, p50, p99, rps, c.updates / seconds, c.rows / seconds,
                   scrapes.load())
            << std::endl;
}

// ---------------------------------------------------------------------------
// 4. Checkpoints and crashes.

// Verifies the replica pattern of docs/distributed.md: two servers fed
// disjoint rows (several updates each) give, through `tally merge` of their
// `GET /v1/state`, byte for byte the stdout of `tally eval --format json`
// over the union of the rows, for counting metrics and exact curves (`cat`
// states); the state is an octet stream that `tally merge` also reads from
// a file, and a server without updates answers 409.
TEST_F(ServeTest, MergeOfTwoServersEqualsEvalOverTheUnion) {
  constexpr int64_t kRows = 301, kSplit = 113, kBatch = 37;
  DataSet binary = Binary(kRows, 11);
  binary.specs.push_back("binary_auroc");
  binary.specs.push_back("binary_average_precision");
  for (const DataSet& d : {Multiclass(kRows, 5, 10), binary}) {
    SCOPED_TRACE(d.label);
    auto a = SpawnServe(d.specs), b = SpawnServe(d.specs);
    ASSERT_LISTENING(a);
    ASSERT_LISTENING(b);
    Client ca(*a), cb(*b);
    EXPECT_EQ(ca.Get("/v1/state").status, 409);
    for (int64_t r = 0; r < kRows; r += kBatch) {
      const int64_t end = std::min(kRows, r + kBatch);
      // Rows before kSplit go to server a, the rest to b (the batch that
      // straddles it is split).
      if (r < kSplit) {
        ASSERT_EQ(ca.Update(Body(d, r, std::min(end, kSplit))).status, 200);
      }
      if (end > kSplit) {
        ASSERT_EQ(cb.Update(Body(d, std::max(r, kSplit), end)).status, 200);
      }
    }
    Invocation eval = Eval(d, 0, kRows, 0, Dir("replicas_" + d.label));
    ASSERT_EQ(eval.exit_code, 0) << eval;
    const std::string url_a = absl::StrCat("http://127.0.0.1:", a->port()),
                      url_b = absl::StrCat("http://127.0.0.1:", b->port());
    Invocation merged = RunTally({"merge", "--format", "json", url_b, url_a});
    ASSERT_EQ(merged.exit_code, 0) << merged;
    EXPECT_EQ(merged.out, eval.out);

    Reply state = ca.Get("/v1/state");
    ASSERT_EQ(state.status, 200);
    EXPECT_EQ(state.content_type, "application/octet-stream");
    EXPECT_EQ(state.body.substr(0, 8), "TALLYSTA");
    const std::string file = absl::StrCat(Dir("replicas_" + d.label), "/a.st");
    WriteFile(file, state.body);
    Invocation mixed = RunTally({"merge", "--format", "json", file, url_b});
    ASSERT_EQ(mixed.exit_code, 0) << mixed;
    EXPECT_EQ(mixed.out, eval.out);
    // Replica a twice (its saved state and its URL, or its URL polled twice)
    // would count its rows twice: refused, naming the source and the one
    // that already brought them.
    EXPECT_TRUE(OneCleanErrorLine(RunTally({"merge", file, url_b, url_a}), {url_a, "a.st", "count twice"}));
    EXPECT_TRUE(OneCleanErrorLine(RunTally({"merge", url_a, url_a}), {url_a, "count twice"}));
  }
  // A server that cannot be reached is one line naming it.
  Invocation gone = RunTally({"merge", "http://127.0.0.1:1", "--timeout", "2"});
  EXPECT_TRUE(OneCleanErrorLine(gone, {"http://127.0.0.1:1"})) << gone;
}

bool HasTempFiles(const std::string& dir, const std::string& file) {
  bool found = false;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return false;
  while (dirent* e = readdir(d)) found = found || absl::StartsWith(e->d_name, file + ".tmp.");
  closedir(d);
  return found;
}

using ::tally::testing::ReadFile;

// Verifies that after POST /v1/checkpoint, more updates and a kill -9, a
// server restarted with the same --checkpoint answers exactly the metrics
// and counters of the checkpoint (which are eval's over the rows sent
// before it), removes the temp file a write killed midway leaves, and goes
// on counting from there.
TEST_F(ServeTest, CheckpointSurvivesKill9) {
  const DataSet d = Multiclass(400, 4, 6);
  const std::string dir = Dir("crash");
  const std::string file = "state.ckpt", path = dir + "/" + file;
  unlink(path.c_str());
  const std::vector<std::string> flags = {"--checkpoint", path};

  auto server = SpawnServe(d.specs, flags);
  ASSERT_LISTENING(server);
  Client client(*server);
  EXPECT_EQ(client.Post("/v1/checkpoint", "").status, 409);  // nothing to save yet
  for (int b = 0; b < 10; ++b) ASSERT_EQ(client.Update(Body(d, b * 20, (b + 1) * 20)).status, 200);
  EXPECT_EQ(client.Update(R"({"preds": [[0.0, 0.0, 0.0, 0.0]], "target": [4]})").status, 400);
  Reply saved = client.Post("/v1/checkpoint", "");
  ASSERT_EQ(saved.status, 200) << saved;
  EXPECT_EQ(saved.body, "{\"ok\": true}");
  const std::string at_checkpoint = client.Metrics().body;
  Counters counters_at_checkpoint;
  ASSERT_TRUE(ScrapeCounters(client, &counters_at_checkpoint));
  EXPECT_EQ(counters_at_checkpoint, (Counters{10, 200, 1, 0}));
  Invocation eval = Eval(d, 0, 200, 20, Dir("crash_eval"));
  ASSERT_EQ(eval.exit_code, 0) << eval;
  EXPECT_EQ(at_checkpoint + "\n", eval.out);

  for (int b = 10; b < 20; ++b) ASSERT_EQ(client.Update(Body(d, b * 20, (b + 1) * 20)).status, 200);
  ASSERT_NE(client.Metrics().body, at_checkpoint);
  server->Signal(SIGKILL);
  Invocation killed = server->Wait();
  ASSERT_EQ(killed.signal, SIGKILL) << killed;

  // What a server killed inside WriteFileAtomically leaves behind.
  WriteFile(absl::StrCat(path, ".tmp.", 999999, ".0"), "half a checkpoint");
  ASSERT_TRUE(HasTempFiles(dir, file));

  auto restarted = SpawnServe(d.specs, flags);
  ASSERT_LISTENING(restarted);
  Client again(*restarted);
  Reply restored = again.Metrics();
  ASSERT_EQ(restored.status, 200) << restored;
  EXPECT_EQ(restored.body, at_checkpoint);
  Counters counters;
  ASSERT_TRUE(ScrapeCounters(again, &counters));
  EXPECT_EQ(counters, counters_at_checkpoint);
  EXPECT_FALSE(HasTempFiles(dir, file));

  // The restored server knows the signature: it takes updates and counts on.
  ASSERT_EQ(again.Update(Body(d, 200, 220)).status, 200);
  ASSERT_TRUE(ScrapeCounters(again, &counters));
  EXPECT_EQ(counters, (Counters{11, 220, 1, 0}));
  EXPECT_EQ(again.Post("/v1/checkpoint", "").status, 200);
  EXPECT_FALSE(HasTempFiles(dir, file));
}

// KillDuringCheckpointWrites has two clients write checkpoints in a loop
// and kills the server (SIGKILL) once `writes` have succeeded (or 30 s
// passed); it returns the successful writes.
int KillDuringCheckpointWrites(ServerProcess& server, int writes) {
  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&] {
      Client c(server);
      while (!stop.load()) {
        if (c.Post("/v1/checkpoint", "").status == 200) ++written;
      }
    });
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (written.load() < writes && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  server.Signal(SIGKILL);
  stop.store(true);
  for (std::thread& t : writers) t.join();
  EXPECT_EQ(server.Wait().signal, SIGKILL);
  return written.load();
}

// Verifies that a kill -9 while checkpoints are being written leaves a file
// the next server restores (the write is atomic: the old or the new file,
// both of the same state here), and no temp file after the restart.
TEST_F(ServeTest, KillDuringCheckpointWritesLeavesAValidFile) {
  const DataSet d = Multiclass(200, 4, 7);
  const std::string dir = Dir("crash_during_write");
  const std::string file = "state.ckpt", path = dir + "/" + file;
  unlink(path.c_str());
  auto server = SpawnServe(d.specs, {"--checkpoint", path});
  ASSERT_LISTENING(server);
  Client client(*server);
  for (int b = 0; b < 10; ++b) ASSERT_EQ(client.Update(Body(d, b * 20, (b + 1) * 20)).status, 200);
  const std::string state = client.Metrics().body;
  ASSERT_EQ(client.Post("/v1/checkpoint", "").status, 200);
  ASSERT_GE(KillDuringCheckpointWrites(*server, 20), 20) << "checkpoints kept failing";

  auto restarted = SpawnServe(d.specs, {"--checkpoint", path});
  ASSERT_LISTENING(restarted);
  Client again(*restarted);
  EXPECT_EQ(again.Metrics().body, state);
  EXPECT_FALSE(HasTempFiles(dir, file));
}

// Verifies that a checkpoint that is corrupt (a flipped byte), truncated,
// not a checkpoint at all, or written for other metrics makes `tally serve`
// exit non-zero before listening, with one clean stderr line naming the
// file, and leaves the file as it was.
TEST_F(ServeTest, BadCheckpointStopsTheStart) {
  const DataSet d = Multiclass(40, 3, 8);
  const std::string dir = Dir("bad_checkpoint");
  const std::string good = dir + "/good.ckpt";
  unlink(good.c_str());
  {
    auto server = SpawnServe(d.specs, {"--checkpoint", good});
    ASSERT_LISTENING(server);
    Client client(*server);
    ASSERT_EQ(client.Update(Body(d, 0, 40)).status, 200);
    ASSERT_EQ(client.Post("/v1/checkpoint", "").status, 200);
  }
  const std::string bytes = ReadFile(good);
  ASSERT_GT(bytes.size(), 64u);
  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x5a;

  struct Case {
    std::string name, bytes;
    std::vector<std::string> specs;
  };
  const std::vector<Case> cases = {
      {"flipped", flipped, d.specs},
      {"truncated", bytes.substr(0, bytes.size() / 2), d.specs},
      {"empty", "", d.specs},
      {"garbage", "this is not a tally checkpoint\n", d.specs},
      {"foreign", bytes, {"multiclass_accuracy(num_classes=3, average=micro)"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = absl::StrCat(dir, "/", c.name, ".ckpt");
    WriteFile(path, c.bytes);
    auto server = SpawnServe(c.specs, {"--checkpoint", path});
    EXPECT_FALSE(server->WaitUntilListening().ok());
    Invocation r = server->Wait();
    EXPECT_TRUE(OneCleanErrorLine(r, {"tally serve: error:", path})) << r;
    EXPECT_THAT(r.out, Not(HasSubstr("listening on")));
    EXPECT_EQ(ReadFile(path), c.bytes) << "the bad checkpoint was changed";
  }
}

// ---------------------------------------------------------------------------
// 5. Reset.

// Verifies that POST /v1/reset empties the metrics (they read as eval's
// over zero rows: an all-zero confusion matrix) while the counters keep
// counting, and that what follows a reset is eval's over those rows alone.
TEST_F(ServeTest, ResetEmptiesMetricsButNotCounters) {
  const DataSet d = Multiclass(200, 3, 9);
  auto server = SpawnServe(d.specs);
  ASSERT_LISTENING(server);
  Client client(*server);
  EXPECT_EQ(client.Post("/v1/reset", "").status, 200);  // before any update: nothing to reset
  for (int b = 0; b < 5; ++b) ASSERT_EQ(client.Update(Body(d, b * 20, (b + 1) * 20)).status, 200);
  Reply reset = client.Post("/v1/reset", "");
  ASSERT_EQ(reset.status, 200) << reset;
  EXPECT_EQ(reset.body, "{\"ok\": true}");

  Reply empty = client.Metrics();
  ASSERT_EQ(empty.status, 200) << empty;
  Invocation eval_empty = Eval(d, 0, 0, 0, Dir("reset_empty"));
  ASSERT_EQ(eval_empty.exit_code, 0) << eval_empty;
  EXPECT_EQ(empty.body + "\n", eval_empty.out);
  const json cm = ValueOf(empty.body, d.specs.back());
  ASSERT_EQ(cm, json::parse("[[0, 0, 0], [0, 0, 0], [0, 0, 0]]")) << empty;
  Counters c;
  ASSERT_TRUE(ScrapeCounters(client, &c));
  EXPECT_EQ(c, (Counters{5, 100, 0, 0}));

  for (int b = 5; b < 8; ++b) ASSERT_EQ(client.Update(Body(d, b * 20, (b + 1) * 20)).status, 200);
  Invocation eval_after = Eval(d, 100, 160, 20, Dir("reset_after"));
  ASSERT_EQ(eval_after.exit_code, 0) << eval_after;
  EXPECT_EQ(client.Metrics().body + "\n", eval_after.out);
  ASSERT_TRUE(ScrapeCounters(client, &c));
  EXPECT_EQ(c, (Counters{8, 160, 0, 0}));
}

// Verifies that a body over --max-body-bytes is answered 413 with one JSON
// error naming the flag, before the server parses it, and changes nothing.
TEST_F(ServeTest, OversizedBodyIs413AndChangesNothing) {
  const DataSet d = Multiclass(200, 3, 9);
  auto server = SpawnServe(d.specs, {"--max-body-bytes", "4000"});
  ASSERT_LISTENING(server);
  Client client(*server);
  ASSERT_EQ(client.Update(Body(d, 0, 10)).status, 200);
  const std::string before = client.Metrics().body;
  const std::string big = Body(d, 0, 200);
  ASSERT_GT(big.size(), 4000u);
  Reply r = client.Update(big);
  EXPECT_EQ(r.status, 413) << r;
  EXPECT_THAT(r.body, HasSubstr("--max-body-bytes")) << r;
  EXPECT_NO_THROW(json::parse(r.body)) << r;
  EXPECT_EQ(client.Metrics().body, before);
  EXPECT_EQ(client.Update(Body(d, 10, 20)).status, 200);  // still serving
}

// ---------------------------------------------------------------------------
// 6. Prometheus.

// Verifies that GET /metrics is well-formed text exposition 0.0.4 (names,
// labels, HELP/TYPE before their contiguous samples), that the counters
// are counters named *_total with the traffic's values, and that every
// gauge equals the matching element of GET /v1/metrics.
TEST_F(ServeTest, PrometheusTextParsesAndMatches) {
  const DataSet d = Multiclass(60, 3, 10);
  std::vector<std::string> specs = d.specs;
  specs.push_back("multiclass_roc(num_classes=3, thresholds=3)");  // a tuple result: part labels
  auto server = SpawnServe(specs);
  ASSERT_LISTENING(server);
  Client client(*server);
  Reply before = client.Get("/metrics");
  ASSERT_EQ(before.status, 200) << before;
  Exposition e;
  ASSERT_TRUE(ParsePrometheus(before.body, &e)) << before.body;

  for (int b = 0; b < 3; ++b) ASSERT_EQ(client.Update(Body(d, b * 20, (b + 1) * 20)).status, 200);
  ASSERT_EQ(client.Update(R"({"preds": [[0.1, 0.7, 0.2]], "target": [7]})").status, 400);
  Reply text = client.Get("/metrics");
  ASSERT_EQ(text.status, 200) << text;
  EXPECT_THAT(text.content_type, HasSubstr("text/plain; version=0.0.4"));
  ASSERT_TRUE(ParsePrometheus(text.body, &e)) << text.body;
  for (const char* counter :
       {"tally_updates_total", "tally_rows_total", "tally_rejected_updates_total", "tally_compute_errors_total"}) {
    EXPECT_EQ(e.types[counter], "counter") << counter;
  }
  for (const auto& [family, type] : e.types) {
    if (type == "counter") {
      EXPECT_TRUE(absl::EndsWith(family, "_total")) << family;
    }
  }
  Counters c;
  ASSERT_TRUE(ScrapeCounters(client, &c));
  EXPECT_EQ(c, (Counters{3, 60, 1, 0}));

  // Gauges: one sample per output element, equal to the JSON values.
  EXPECT_EQ(e.types["tally_metric"], "gauge");
  const std::string body = client.Metrics().body;
  int gauges = 0;
  for (const Sample& s : e.samples) {
    if (s.name != "tally_metric") continue;
    ++gauges;
    EXPECT_EQ(s.labels.at("set"), "default");
    const json v = ValueOf(body, s.labels.at("metric"));
    ASSERT_FALSE(v.is_null()) << s.labels.at("metric");
    // The element's position: part="p" (a tuple result's part), then
    // class="c" (a vector) or index="i,j,..." (a matrix or more).
    std::vector<std::string> path;
    if (s.labels.count("part")) path.push_back(s.labels.at("part"));
    if (s.labels.count("class")) path.push_back(s.labels.at("class"));
    if (s.labels.count("index")) {
      for (absl::string_view i : absl::StrSplit(s.labels.at("index"), ',')) path.emplace_back(i);
    }
    EXPECT_FALSE(s.labels.count("class") && s.labels.count("index"));
    json element = v;
    for (const std::string& i : path) {
      size_t k = 0;
      ASSERT_TRUE(absl::SimpleAtoi(i, &k)) << absl::StrJoin(path, ",");
      ASSERT_TRUE(element.is_array() && k < element.size())
          << s.labels.at("metric") << " at " << absl::StrJoin(path, ",");
      element = element[k];
    }
    ASSERT_TRUE(element.is_number()) << s.labels.at("metric") << " at " << absl::StrJoin(path, ",");
    EXPECT_DOUBLE_EQ(s.value, element.get<double>()) << s.labels.at("metric");
  }
  // Every element: accuracy x3 and f1 (scalars), precision per class (3),
  // the confusion matrix (9), the ROC's fpr and tpr (3 x 3 each) and
  // thresholds (3).
  EXPECT_EQ(gauges, 4 + 3 + 9 + 9 + 9 + 3);
  for (const std::string& spec : specs) {
    EXPECT_TRUE(e.Find("tally_metric", {{"metric", spec}}).has_value()) << spec;
  }
}

// Verifies that the parser above rejects what it should (a guard against a
// check that passes everything).
TEST(PrometheusParserTest, RejectsMalformedText) {
  Exposition e;
  EXPECT_TRUE(ParsePrometheus("# HELP a_total A.\n# TYPE a_total counter\na_total{set=\"x,y\"} 3\n", &e));
  EXPECT_EQ(e.Find("a_total", {{"set", "x,y"}}), 3);
  EXPECT_FALSE(ParsePrometheus("a 1\n", &e));                                    // no TYPE
  EXPECT_FALSE(ParsePrometheus("# HELP a A.\n# TYPE a gauge\n1a 1\n", &e));      // bad name
  EXPECT_FALSE(ParsePrometheus("# HELP a A.\n# TYPE a gauge\na{b=c} 1\n", &e));  // unquoted
  EXPECT_FALSE(ParsePrometheus("# HELP a A.\n# TYPE a gauge\na{b=\"c\"} x\n", &e));
  EXPECT_FALSE(ParsePrometheus("# HELP a A.\n# TYPE a gauge\na 1\n# HELP b B.\n# TYPE b gauge\nb 1\na 2\n", &e));
  EXPECT_FALSE(ParsePrometheus("# HELP a A.\n# TYPE a gauge\na 1", &e));  // no final newline
}

// ---------------------------------------------------------------------------
// Life cycle.

// Verifies that SIGTERM and SIGINT stop a server cleanly (exit 0, nothing on
// stderr), SIGTERM with an idle keep-alive connection open (the server
// waits for it up to its keep-alive timeout, 5 s), and that --port 0 gave a
// real port.
TEST_F(ServeTest, SigtermAndSigintStopCleanly) {
  for (int sig : {SIGTERM, SIGINT}) {
    SCOPED_TRACE(strsignal(sig));
    auto server = SpawnServe({"binary_accuracy"});
    ASSERT_LISTENING(server);
    EXPECT_EQ(server->host(), "127.0.0.1");
    EXPECT_GT(server->port(), 0);
    Client client(*server, /*keep_alive=*/sig == SIGTERM);
    ASSERT_EQ(client.Update(R"({"preds": [0.9, 0.2], "target": [1, 0]})").status, 200);
    const auto t0 = std::chrono::steady_clock::now();
    server->Signal(sig);
    Invocation r = server->Wait(std::chrono::seconds(20));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_EQ(r.exit_code, 0) << r;
    EXPECT_EQ(r.signal, 0) << r;
    EXPECT_EQ(r.err, "") << r;
    EXPECT_EQ(r.out, absl::StrCat("listening on 127.0.0.1:", server->port(), "\n")) << r;
    std::cout << "stopped by " << strsignal(sig) << " in " << absl::StrFormat("%.2f", seconds) << " s" << std::endl;
  }
}

// Verifies that a bad spec stops the start with one clean error line, and
// that POST /v1/checkpoint without --checkpoint is a 400.
TEST_F(ServeTest, StartErrors) {
  for (const char* spec : {"no_such_metric", "multiclass_accuracy(num_classes=3"}) {
    SCOPED_TRACE(spec);
    auto bad = SpawnServe({spec});
    EXPECT_FALSE(bad->WaitUntilListening().ok());
    EXPECT_TRUE(OneCleanErrorLine(bad->Wait(), {"tally serve: error:"}));
  }
  auto bad_port = SpawnServe({"binary_accuracy"}, {"--port", "http"});
  EXPECT_FALSE(bad_port->WaitUntilListening().ok());
  EXPECT_TRUE(OneCleanErrorLine(bad_port->Wait(), {"--port"}));

  auto first = SpawnServe({"binary_accuracy"});
  ASSERT_LISTENING(first);
  Client client(*first);
  ASSERT_EQ(client.Update(R"({"preds": [0.9, 0.2], "target": [1, 0]})").status, 200);
  Reply no_file = client.Post("/v1/checkpoint", "");
  EXPECT_EQ(no_file.status, 400) << no_file;
  EXPECT_THAT(ErrorOf(no_file), HasSubstr("--checkpoint"));
}

// Verifies that `tally serve --port N` does not start when another server
// listens on N (cpp-httplib's default SO_REUSEPORT let both bind, and the
// kernel split the traffic between two independent sessions).
TEST_F(ServeTest, APortInUseStopsTheStart) {
  auto first = SpawnServe({"binary_accuracy"});
  ASSERT_LISTENING(first);
  auto second = SpawnServe({"binary_accuracy"}, {"--port", absl::StrCat(first->port())});
  EXPECT_FALSE(second->WaitUntilListening().ok());
  EXPECT_TRUE(OneCleanErrorLine(second->Wait(std::chrono::seconds(5)), {absl::StrCat(first->port())}));
}

// Verifies that keep-alive requests are not held by Nagle's algorithm: the
// server writes headers and body in two writes, and without TCP_NODELAY the
// body waited for the client's delayed ACK (~40 ms per request; fresh
// connections start in quick-ACK mode and do not show it). The bound is
// half that delay, far above a request's real cost: a regression check,
// not a speed target.
TEST_F(ServeTest, KeepAliveRequestsAreNotDelayed) {
  auto server = SpawnServe({"binary_accuracy"});
  ASSERT_LISTENING(server);
  Client client(*server, /*keep_alive=*/true);
  std::vector<int64_t> us;
  for (int i = 0; i < 20; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(client.Update(R"({"preds": [0.9, 0.2], "target": [1, 0]})").status, 200);
    us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  EXPECT_LT(us[us.size() / 2], 20000) << "median of 20 keep-alive updates, us";
}

// ---------------------------------------------------------------------------
// 7. Misbehaving clients and faults.

// Raw is a TCP connection to the server from a chosen loopback source
// address (127.0.0.2 stands for another host), for clients that send slowly
// or not at all. Reads time out after 10 s.
class Raw {
 public:
  Raw(int port, const char* source = "127.0.0.1") {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in src{};
    src.sin_family = AF_INET;
    inet_pton(AF_INET, source, &src.sin_addr);
    bind(fd_, reinterpret_cast<sockaddr*>(&src), sizeof(src));
    sockaddr_in dst{};
    dst.sin_family = AF_INET;
    dst.sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&dst), sizeof(dst)) == 0;
    timeval tv{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  ~Raw() { close(fd_); }
  Raw(const Raw&) = delete;
  Raw& operator=(const Raw&) = delete;

  bool connected() const { return connected_; }
  bool Send(absl::string_view bytes) {
    return send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
  }
  // Read reads one answer: its status (0 when the server closed the
  // connection or said nothing in time) and body.
  Reply Read() {
    Reply r;
    std::string in;
    size_t header_end = std::string::npos;
    int64_t length = -1;
    char buf[4096];
    for (;;) {
      if (header_end == std::string::npos) {
        header_end = in.find("\r\n\r\n");
        if (header_end != std::string::npos) {
          std::vector<std::string> lines = absl::StrSplit(in.substr(0, header_end), "\r\n");
          std::vector<std::string> first = absl::StrSplit(lines[0], ' ');
          if (first.size() < 2 || !absl::SimpleAtoi(first[1], &r.status)) return Reply{};
          for (const std::string& l : lines) {
            absl::string_view v = l;
            if (absl::ConsumePrefix(&v, "Content-Length: ") && !absl::SimpleAtoi(v, &length)) return Reply{};
          }
        }
      }
      if (header_end != std::string::npos && length >= 0 &&
          static_cast<int64_t>(in.size() - header_end - 4) >= length) {
        r.body = in.substr(header_end + 4, length);
        return r;
      }
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n <= 0) return Reply{};
      in.append(buf, n);
    }
  }
  // ClosedWithin tells whether the server closes the connection within
  // `seconds` (reading and dropping whatever it sends first).
  bool ClosedWithin(int seconds) {
    timeval tv{seconds, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    char buf[4096];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return true;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    }
    return false;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

// TimedGet is one GET on a fresh connection from `source`: the reply and
// how long it took, in ms.
Reply TimedGet(int port, const std::string& path, const char* source, double* ms) {
  const auto t0 = std::chrono::steady_clock::now();
  Raw c(port, source);
  Reply r;
  if (c.Send(absl::StrCat("GET ", path, " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"))) r = c.Read();
  *ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

// SlowSenders are threads that each keep a request crawling in, a byte
// every `gap`: `prefix`, then 'a' after 'a' until destroyed.
class SlowSenders {
 public:
  SlowSenders(int port, int n, std::chrono::milliseconds gap, const std::string& prefix) {
    for (int i = 0; i < n; ++i) {
      threads_.emplace_back([this, port, gap, prefix] {
        Raw c(port);
        for (size_t k = 0; !stop_.load(); ++k) {
          if (!c.Send(k < prefix.size() ? prefix.substr(k, 1) : std::string("a"))) return;
          ++sent_;
          std::this_thread::sleep_for(gap);
        }
      });
    }
  }
  ~SlowSenders() {
    stop_.store(true);
    for (std::thread& t : threads_) t.join();
  }
  int64_t sent() const { return sent_.load(); }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> sent_{0};
  std::vector<std::thread> threads_;
};

// Verifies the issue's stall: 8 clients sending a request a byte at a time
// and dozens of idle keep-alive connections do not delay a scrape (each GET
// answered in well under a second; cpp-httplib's thread per connection made
// it wait 10-15 s); a client past its share of connections
// (--max-connections-per-client) gets read-only reserved slots and then
// refusals, never another client's service; and its share comes back when
// its connections close.
TEST_F(ServeTest, SlowAndIdleClientsDoNotDelayAScrape) {
  auto server = SpawnServe({"multiclass_accuracy(num_classes=3)"},
                           {"--idle-timeout", "60", "--max-connections-per-client", "64"});
  ASSERT_LISTENING(server);
  const int port = server->port();
  Client client(*server);
  ASSERT_EQ(client.Update(R"({"preds": [0, 1, 2], "target": [0, 1, 1]})").status, 200);

  SlowSenders slow(port, 8, std::chrono::milliseconds(100),
                   "POST /v1/update HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n");
  std::vector<std::unique_ptr<Raw>> idle;
  for (int i = 0; i < 40; ++i) idle.push_back(std::make_unique<Raw>(port));  // connected, silent
  for (int i = 0; i < 8; ++i) {                                              // kept alive after an answer
    idle.push_back(std::make_unique<Raw>(port));
    ASSERT_TRUE(idle.back()->Send("GET /metrics HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_EQ(idle.back()->Read().status, 200);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  double worst = 0;
  for (int i = 0; i < 20; ++i) {
    double ms = 0;
    Reply r = TimedGet(port, i % 4 == 0 ? "/v1/metrics" : "/metrics", "127.0.0.1", &ms);
    ASSERT_EQ(r.status, 200) << r;
    worst = std::max(worst, ms);
  }
  EXPECT_LT(worst, 1000) << "slowest of 20 scrapes beside 8 slow and 48 idle connections, ms";
  std::cout << "scrape beside 8 slow + 48 idle connections: worst " << worst << " ms\n";
  EXPECT_GT(slow.sent(), 8);

  // 200 more from the same client: 8 reach its share of 64, 32 get the
  // read-only reserve (closed after 2 s idle), the rest are refused.
  std::vector<std::unique_ptr<Raw>> flood;
  for (int i = 0; i < 200; ++i) flood.push_back(std::make_unique<Raw>(port));
  // Another client is served at once.
  for (int i = 0; i < 5; ++i) {
    double ms = 0;
    Reply r = TimedGet(port, "/metrics", "127.0.0.2", &ms);
    ASSERT_EQ(r.status, 200) << r;
    EXPECT_LT(ms, 1000) << "a scrape from another client beside a flood, ms";
  }
  int closed = 0;
  for (auto& c : flood) closed += c->ClosedWithin(0) ? 1 : 0;  // refused at once
  std::this_thread::sleep_for(std::chrono::seconds(3));        // the reserved ones time out
  for (auto& c : flood) closed += c->ClosedWithin(1) ? 1 : 0;
  EXPECT_GE(closed, 150);
  EXPECT_LE(closed, 192) << "the 8 connections within the client's share stay open";
  // Past its share, the client may still read, but not write.
  double ms = 0;
  EXPECT_EQ(TimedGet(port, "/metrics", "127.0.0.1", &ms).status, 200);
  {
    Raw c(port);
    const std::string body = R"({"preds": [0], "target": [0]})";
    ASSERT_TRUE(
        c.Send(absl::StrCat("POST /v1/update HTTP/1.1\r\nHost: t\r\nContent-Length: ", body.size(), "\r\n\r\n", body)));
    Reply r = c.Read();
    EXPECT_EQ(r.status, 503) << r;
    EXPECT_THAT(ErrorOf(r), HasSubstr("--max-connections-per-client")) << r;
  }
  flood.clear();
  idle.clear();
  // Its share comes back once the server has seen the closes.
  int status = 0;
  for (int i = 0; i < 50 && status != 200; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    status = client.Update(R"({"preds": [0], "target": [0]})").status;
  }
  EXPECT_EQ(status, 200);
}

// Verifies that a body still arriving --request-timeout seconds after its
// headers is cut off (the connection closed, nothing updated), and that a
// connection silent for --idle-timeout seconds is closed.
TEST_F(ServeTest, SlowBodiesAndIdleConnectionsAreClosed) {
  auto server = SpawnServe({"multiclass_accuracy(num_classes=3)"}, {"--request-timeout", "2", "--idle-timeout", "2"});
  ASSERT_LISTENING(server);
  Client client(*server);
  ASSERT_EQ(client.Update(R"({"preds": [0, 1, 2], "target": [0, 1, 1]})").status, 200);
  Counters before;
  ASSERT_TRUE(ScrapeCounters(client, &before));

  const auto t0 = std::chrono::steady_clock::now();
  Raw slow(server->port());
  const std::string body = R"({"preds": [0, 1, 2], "target": [0, 1, 1]})";
  ASSERT_TRUE(
      slow.Send(absl::StrCat("POST /v1/update HTTP/1.1\r\nHost: t\r\nContent-Length: ", body.size(), "\r\n\r\n")));
  bool cut = false;
  for (size_t i = 0; i < body.size() && !cut; ++i) {
    cut = !slow.Send(body.substr(i, 1)) || slow.ClosedWithin(0);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  cut = cut || slow.ClosedWithin(3);
  EXPECT_TRUE(cut) << "a body crawling in past --request-timeout";
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 8);
  Counters after;
  ASSERT_TRUE(ScrapeCounters(client, &after));
  EXPECT_EQ(after, before);

  Raw silent(server->port());
  EXPECT_TRUE(silent.ClosedWithin(6)) << "a silent connection past --idle-timeout";
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TALLY_TEST_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(TALLY_TEST_ASAN)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif

// RssKb is a process's resident set (VmRSS), in KiB (-1: unknown).
int64_t RssKb(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view v = line;
    int64_t kb = 0;
    if (absl::ConsumePrefix(&v, "VmRSS:") &&
        absl::SimpleAtoi(absl::StripSuffix(absl::StripAsciiWhitespace(v), " kB"), &kb)) {
      return kb;
    }
  }
  return -1;
}

// Traffic posts bodies [first, last) (`rows` rows each) from `threads`
// clients, with a malformed body, an out-of-range label and an oversized
// body beside every fifth, while a scraper reads; it checks every answer
// and returns the rejections that reached the session.
int64_t Traffic(const ServerProcess& server, const DataSet& d, int64_t first, int64_t last, int64_t rows, int threads) {
  std::atomic<int64_t> next{first}, rejected{0};
  std::atomic<bool> done{false};
  std::thread scraper([&] {
    Client c(server);
    while (!done.load()) {
      Counters now;
      EXPECT_TRUE(ScrapeCounters(c, &now));
      // 409 only before the first update.
      const Reply r = c.Metrics();
      EXPECT_TRUE(r.status == 200 || (r.status == 409 && now.updates < 1)) << r;
    }
  });
  std::vector<std::thread> clients;
  for (int t = 0; t < threads; ++t) {
    clients.emplace_back([&] {
      Client c(server, /*keep_alive=*/true);
      for (int64_t b = next++; b < last; b = next++) {
        Reply ok = c.Update(Body(d, b * rows, (b + 1) * rows));
        EXPECT_EQ(ok.status, 200) << ok;
        if (b % 5 != 0) continue;
        Reply bad = c.Update(R"({"preds": [[0.1, 0.2], )");
        EXPECT_EQ(bad.status, 400) << bad;
        Reply label = c.Update(Body(d, 0, 1).replace(Body(d, 0, 1).rfind('['), std::string::npos, "[99]}"));
        EXPECT_EQ(label.status, 400) << label;
        Reply big = c.Update(std::string(300000, ' '));
        EXPECT_EQ(big.status, 413) << big;
        rejected += 2;
      }
    });
  }
  for (std::thread& t : clients) t.join();
  done.store(true);
  scraper.join();
  return rejected.load();
}

// Verifies a bounded soak of the server under faults, phase by phase:
// concurrent clients with malformed, out-of-range and oversized bodies
// beside slow clients; a kill -9 in the middle of checkpoint writes and a
// restart from the file; then more of the same traffic. After each phase
// GET /v1/metrics equals `tally eval` over exactly the accepted rows and
// the counters match; the RSS stays flat while traffic repeats.
TEST_F(ServeTest, SoakUnderFaults) {
  constexpr int64_t kRows = 10, kBodies = 1500;
  const DataSet d = Multiclass(kRows * kBodies, 5, 21);
  const std::string dir = Dir("soak");
  const std::string path = dir + "/soak.ckpt";
  unlink(path.c_str());
  const std::vector<std::string> flags = {"--checkpoint", path, "--max-body-bytes", "200000"};
  auto server = SpawnServe(d.specs, flags);
  ASSERT_LISTENING(server);
  int64_t rejected = 0;
  {
    SlowSenders slow(server->port(), 4, std::chrono::milliseconds(50), "POST /v1/update HTTP/1.1\r\nX-Pad: ");
    rejected += Traffic(*server, d, 0, 500, kRows, 4);
  }
  Client client(*server);
  Invocation eval = Eval(d, 0, 500 * kRows, 0, Dir("soak_1"));
  ASSERT_EQ(eval.exit_code, 0) << eval;
  EXPECT_EQ(client.Metrics().body + "\n", eval.out);
  Counters c;
  ASSERT_TRUE(ScrapeCounters(client, &c));
  EXPECT_EQ(c, (Counters{500, 500 * kRows, static_cast<double>(rejected), 0}));

  // kill -9 while two clients write checkpoints.
  ASSERT_GE(KillDuringCheckpointWrites(*server, 10), 10) << "checkpoints kept failing";

  auto restarted = SpawnServe(d.specs, flags);
  ASSERT_LISTENING(restarted);
  Client again(*restarted);
  EXPECT_EQ(again.Metrics().body + "\n", eval.out);
  ASSERT_TRUE(ScrapeCounters(again, &c));
  EXPECT_EQ(c, (Counters{500, 500 * kRows, static_cast<double>(rejected), 0}));

  // The same traffic twice more: the second round must not grow the RSS.
  rejected += Traffic(*restarted, d, 500, 1000, kRows, 4);
  const int64_t rss_a = RssKb(restarted->pid());
  rejected += Traffic(*restarted, d, 1000, 1500, kRows, 4);
  const int64_t rss_b = RssKb(restarted->pid());
  ASSERT_GT(rss_a, 0);
  // Under ASan freed blocks wait in its quarantine (256 MB), so the RSS
  // says nothing there.
  if (!kAddressSanitizer) {
    EXPECT_LT(rss_b, rss_a + 16 * 1024) << "RSS after the second round of 500 bodies (KiB), against the first";
  }
  std::cout << "soak RSS: " << rss_a << " KiB after round 2, " << rss_b << " KiB after round 3\n";
  Invocation all = Eval(d, 0, kBodies * kRows, 0, Dir("soak_3"));
  ASSERT_EQ(all.exit_code, 0) << all;
  EXPECT_EQ(again.Metrics().body + "\n", all.out);
  ASSERT_TRUE(ScrapeCounters(again, &c));
  EXPECT_EQ(c, (Counters{kBodies, kBodies * kRows, static_cast<double>(rejected), 0}));
}

// Verifies the first update's signature: declared dtypes (--dtype) take
// later requests of either kind, a first bool target leaves room for 0/1
// integers, and after a reset the next update fixes the signature again
// (the counters carried over).
TEST_F(ServeTest, SignatureIsDeclaredWidenedOrRefixedAfterReset) {
  struct Case {
    std::vector<std::string> flags;
    std::string first, then;
  };
  const Case cases[] = {
      // Integer preds first, with preds declared float32.
      {{"--dtype", "preds=float32"},
       R"({"preds": [0, 1, 1], "target": [0, 1, 0]})",
       R"({"preds": [0.9, 0.2], "target": [1, 0]})"},
      // A bool target first: fixed as int64.
      {{}, R"({"preds": [0.9, 0.2], "target": [true, false]})", R"({"preds": [0.9, 0.2], "target": [1, 0]})"},
  };
  for (const Case& k : cases) {
    auto server = SpawnServe({"binary_accuracy"}, k.flags);
    ASSERT_LISTENING(server);
    Client c(*server);
    ASSERT_EQ(c.Update(k.first).status, 200);
    Reply r = c.Update(k.then);
    EXPECT_EQ(r.status, 200) << k.first << " then " << k.then << ": " << r;
  }
  auto server = SpawnServe({"binary_accuracy"});
  ASSERT_LISTENING(server);
  Client c(*server);
  ASSERT_EQ(c.Update(R"({"preds": [0, 1, 1], "target": [0, 1, 0]})").status, 200);
  Reply refused = c.Update(R"({"preds": [0.9, 0.2], "target": [1, 0]})");
  EXPECT_EQ(refused.status, 400) << refused;
  EXPECT_THAT(ErrorOf(refused), HasSubstr("first update fixed")) << refused;
  ASSERT_EQ(c.Post("/v1/reset", "").status, 200);
  Reply after = c.Update(R"({"preds": [0.9, 0.2, 0.7], "target": [1, 0, 0]})");
  EXPECT_EQ(after.status, 200) << after;
  EXPECT_EQ(ValueOf(c.Metrics().body, "binary_accuracy"), json(2.0 / 3.0)) << c.Metrics();
  Counters counters;
  ASSERT_TRUE(ScrapeCounters(c, &counters));
  EXPECT_EQ(counters, (Counters{2, 6, 1, 0}));
  EXPECT_EQ(c.Update(R"({"preds": [1, 0], "target": [1, 0]})").status, 200);  // integers fit float32 now
  Invocation bad = RunTally({"serve", "--metric", "binary_accuracy", "--dtype", "pred=float32"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_THAT(bad.err, HasSubstr("--dtype")) << bad;
}

// Verifies --auth-token-file: every route answers 401 (one JSON error, and
// nothing changes) without the bearer token or with a wrong one, and
// serves with it; an empty token file or a missing one stops the start.
TEST_F(ServeTest, AuthTokenIsRequiredWhenGiven) {
  const std::string dir = Dir("token");
  const std::string file = dir + "/token";
  std::ofstream(file) << "s3cret-token\n";
  auto server = SpawnServe({"binary_accuracy"}, {"--auth-token-file", file});
  ASSERT_LISTENING(server);
  auto request = [&](const std::string& method, const std::string& path, const std::string& auth) {
    Raw c(server->port());
    const std::string body = method == "POST" ? R"({"preds": [0.9, 0.2], "target": [1, 0]})" : "";
    c.Send(absl::StrCat(method, " ", path, " HTTP/1.1\r\nHost: t\r\n", auth.empty() ? "" : "Authorization: ", auth,
                        auth.empty() ? "" : "\r\n", "Content-Length: ", body.size(), "\r\n\r\n", body));
    return c.Read();
  };
  for (const std::string& auth : {std::string(), std::string("Bearer wrong"), std::string("Bearer s3cret-toke"),
                                  std::string("Basic s3cret-token")}) {
    for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
             {"POST", "/v1/update"}, {"GET", "/metrics"}, {"GET", "/v1/metrics"}, {"POST", "/v1/reset"}}) {
      Reply r = request(method, path, auth);
      EXPECT_EQ(r.status, 401) << method << " " << path << " with '" << auth << "': " << r;
      EXPECT_THAT(ErrorOf(r), HasSubstr("Authorization: Bearer")) << r;
    }
  }
  EXPECT_EQ(request("GET", "/v1/metrics", "Bearer s3cret-token").status, 409);  // nothing was updated
  EXPECT_EQ(request("POST", "/v1/update", "Bearer s3cret-token").status, 200);
  Reply m = request("GET", "/v1/metrics", "Bearer s3cret-token");
  EXPECT_EQ(ValueOf(m.body, "binary_accuracy"), json(1.0)) << m;

  std::ofstream(dir + "/empty") << "  \n";
  for (const std::string& bad : {dir + "/empty", dir + "/absent", dir}) {
    Invocation r = RunTally({"serve", "--port", "0", "--metric", "binary_accuracy", "--auth-token-file", bad});
    EXPECT_NE(r.exit_code, 0) << r;
    EXPECT_TRUE(OneCleanErrorLine(r, {"--auth-token-file"})) << r;
  }
}

}  // namespace
}  // namespace tally
