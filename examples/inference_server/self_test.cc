#include "examples/inference_server/self_test.h"

#include <httplib.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tally::examples {
namespace {

using nlohmann::json;

// Tally is what the clients sent and were answered.
struct Tally {
  int64_t requests = 0;
  int64_t rows = 0;
  int64_t correct = 0;
  std::vector<std::vector<int64_t>> confusion;  // [label][prediction]
  std::vector<std::string> failures;
};

// Checker prints one line per check and remembers the failures.
class Checker {
 public:
  explicit Checker(std::ostream& out) : out_(out) {}
  void Check(bool ok, const std::string& line) {
    out_ << (ok ? "" : "FAIL: ") << line << "\n";
    failed_ += ok ? 0 : 1;
  }
  int failed() const { return failed_; }

 private:
  std::ostream& out_;
  int failed_ = 0;
};

// Chomp drops a body's trailing newline for a report line.
std::string Chomp(std::string s) {
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// OneClient sends requests index, index + threads, ... below o.requests.
Tally OneClient(const SelfTestOptions& o, int index) {
  Tally t;
  t.confusion.assign(o.classes, std::vector<int64_t>(o.classes, 0));
  std::mt19937_64 rng(o.seed * 1000003 + index);
  std::uniform_int_distribution<int64_t> rows_dist(1, o.max_rows), label_dist(0, o.classes - 1);
  std::uniform_real_distribution<double> feature_dist(-2.0, 2.0);
  httplib::Client cli("127.0.0.1", o.port);
  cli.set_read_timeout(60, 0);
  for (int64_t i = index; i < o.requests; i += o.threads) {
    const int64_t rows = rows_dist(rng);
    json features = json::array(), labels = json::array();
    for (int64_t r = 0; r < rows; ++r) {
      json row = json::array();
      for (int64_t f = 0; f < o.features; ++f) row.push_back(static_cast<float>(feature_dist(rng)));
      features.push_back(std::move(row));
      labels.push_back(label_dist(rng));
    }
    auto res = cli.Post("/predict", json{{"features", features}, {"labels", labels}}.dump(), "application/json");
    if (!res || res->status != 200) {
      t.failures.push_back(absl::StrCat(
          "request ", i, ": ",
          res ? absl::StrCat("status ", res->status, " ", Chomp(res->body)) : httplib::to_string(res.error())));
      continue;
    }
    const json answer = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
    const json preds = answer.is_object() ? answer.value("predictions", json()) : json();
    const json scores = answer.is_object() ? answer.value("scores", json()) : json();
    if (!preds.is_array() || !scores.is_array() || static_cast<int64_t>(preds.size()) != rows ||
        static_cast<int64_t>(scores.size()) != rows) {
      t.failures.push_back(
          absl::StrCat("request ", i, ": not ", rows, " predictions and score rows: ", Chomp(res->body)));
      continue;
    }
    for (int64_t r = 0; r < rows; ++r) {
      // The prediction must be the first maximum of the row's scores.
      int64_t argmax = 0;
      for (int64_t c = 1; c < o.classes; ++c)
        if (scores[r][c].get<double>() > scores[r][argmax].get<double>()) argmax = c;
      const int64_t p = preds[r].is_number_integer() ? preds[r].get<int64_t>() : -1;
      if (p != argmax || static_cast<int64_t>(scores[r].size()) != o.classes) {
        t.failures.push_back(absl::StrCat("request ", i, " row ", r, ": prediction ", preds[r].dump(),
                                          " is not the argmax of ", scores[r].dump()));
        break;
      }
      const int64_t label = labels[r].get<int64_t>();
      t.confusion[label][p] += 1;
      t.correct += p == label ? 1 : 0;
    }
    t.requests += 1;
    t.rows += rows;
  }
  return t;
}

// Get fetches `path`; the body, or "" after printing a failed check.
std::string Get(int port, const std::string& path, Checker& check) {
  httplib::Client cli("127.0.0.1", port);
  auto res = cli.Get(path.c_str());
  const bool ok = res && res->status == 200;
  if (!ok)
    check.Check(false, absl::StrCat("GET ", path, ": ", res ? absl::StrCat("status ", res->status) : "no answer"));
  return ok ? res->body : "";
}

// FindMetric returns the value of the first metric whose spec starts with `prefix`.
json FindMetric(const json& metrics, absl::string_view prefix) {
  if (!metrics.is_object() || !metrics.contains("metrics")) return json();
  for (const json& m : metrics["metrics"])
    if (absl::StartsWith(m.value("metric", ""), prefix)) return m.value("value", json());
  return json();
}

void CheckMetrics(const SelfTestOptions& o, const Tally& sent, Checker& check) {
  const json m = json::parse(Get(o.port, "/v1/metrics", check), nullptr, /*allow_exceptions=*/false);
  const json c = m.is_object() ? m.value("counters", json::object()) : json::object();
  const int64_t updates = c.value("updates", int64_t{-1}), rows = c.value("rows", int64_t{-1}),
                rejected = c.value("rejected", int64_t{-1});
  check.Check(updates == sent.requests && rows == sent.rows && rejected == 0,
              absl::StrCat("counters: updates=", updates, " rows=", rows, " rejected=", rejected, " (sent ",
                           sent.requests, " requests, ", sent.rows, " rows)"));

  const json acc = FindMetric(m, "multiclass_accuracy(");
  const double independent = sent.rows ? static_cast<double>(sent.correct) / sent.rows : 0.0;
  const double server = acc.is_number() ? acc.get<double>() : NAN;
  check.Check(std::fabs(server - independent) <= 1e-6,
              absl::StrCat("accuracy: server=", acc.dump(), " independent=", independent, " (", sent.correct, "/",
                           sent.rows, ")"));

  const json confusion = FindMetric(m, "multiclass_confusion_matrix(");
  check.Check(confusion == json(sent.confusion), absl::StrCat("confusion matrix: server=", confusion.dump(),
                                                              " independent=", json(sent.confusion).dump()));

  const std::string prom = Get(o.port, "/metrics", check);
  const std::string want_updates = absl::StrCat("\ntally_updates_total{set=\"default\"} ", sent.requests, "\n");
  const std::string want_rows = absl::StrCat("\ntally_rows_total{set=\"default\"} ", sent.rows, "\n");
  check.Check(absl::StrContains(prom, want_updates) && absl::StrContains(prom, want_rows),
              absl::StrCat("prometheus: tally_updates_total ", sent.requests, ", tally_rows_total ", sent.rows));
}

// Observed is what the reads show, the rejected counter apart: a bad request
// must move that counter and nothing else.
struct Observed {
  int64_t rejected = -1;
  std::string rest;  // /v1/metrics without counters.rejected, /metrics without its rejected sample
};

Observed Observe(int port, Checker& check) {
  Observed seen;
  json m = json::parse(Get(port, "/v1/metrics", check), nullptr, /*allow_exceptions=*/false);
  if (m.is_object() && m["counters"].is_object()) {
    seen.rejected = m["counters"].value("rejected", int64_t{-1});
    m["counters"].erase("rejected");
  }
  seen.rest = m.dump() + "\n";
  for (absl::string_view line : absl::StrSplit(Get(port, "/metrics", check), '\n'))
    if (!absl::StartsWith(line, "tally_rejected_updates_total{")) absl::StrAppend(&seen.rest, line, "\n");
  return seen;
}

// CheckNoChange sends requests that must not update the session: bad ones
// (only counted as rejected) and an unlabelled one (not counted at all).
void CheckNoChange(const SelfTestOptions& o, Checker& check) {
  const Observed before = Observe(o.port, check);
  const std::string row = json(std::vector<float>(o.features, 0.5f)).dump();
  const std::string wide = json(std::vector<float>(o.features + 1, 0.5f)).dump();
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"truncated JSON", R"({"features": [[1, 2)"},
      {"not an object", "[1, 2]"},
      {"no features", R"({"labels": [0]})"},
      {"empty features", R"({"features": [], "labels": []})"},
      {"wrong row width", absl::StrCat(R"({"features": [)", row, ",", wide, R"(], "labels": [0, 0]})")},
      {"non-number feature", absl::StrCat(R"({"features": [["x")", std::string(o.features > 1 ? ", 1" : ""),
                                          std::string(o.features > 2 ? ", 1" : ""), R"(]], "labels": [0]})")},
      {"too many labels", absl::StrCat(R"({"features": [)", row, R"(], "labels": [0, 1]})")},
      {"label out of range", absl::StrCat(R"({"features": [)", row, R"(], "labels": [)", o.classes, "]}")},
      {"negative label", absl::StrCat(R"({"features": [)", row, R"(], "labels": [-1]})")},
      {"float label", absl::StrCat(R"({"features": [)", row, R"(], "labels": [0.5]})")},
  };
  httplib::Client cli("127.0.0.1", o.port);
  int answered_400 = 0;
  for (const auto& [name, body] : bad) {
    auto res = cli.Post("/predict", body, "application/json");
    const bool one_line = res && !res->body.empty() && res->body.find('\n') == res->body.size() - 1 &&
                          absl::StrContains(res->body, "\"error\"");
    if (res && res->status == 400 && one_line) {
      answered_400 += 1;
    } else {
      check.Check(false, absl::StrCat("bad request (", name, "): ",
                                      res ? absl::StrCat("status ", res->status, " ", Chomp(res->body)) : "no answer"));
    }
  }
  auto unlabelled = cli.Post("/predict", absl::StrCat(R"({"features": [)", row, "]}"), "application/json");
  const bool unlabelled_ok = unlabelled && unlabelled->status == 200;
  const Observed after = Observe(o.port, check);
  const bool same = after.rest == before.rest;
  const int64_t rejected = after.rejected - before.rejected;
  check.Check(answered_400 == static_cast<int>(bad.size()) && rejected == answered_400 && unlabelled_ok && same,
              absl::StrCat("bad requests: ", answered_400, " of ", bad.size(), " answered 400 with a one-line error, ",
                           rejected, " counted as rejected; unlabelled request answered ",
                           unlabelled ? unlabelled->status : 0, "; metrics ", same ? "unchanged" : "CHANGED"));
}

}  // namespace

absl::Status RunSelfTest(const SelfTestOptions& o, std::ostream& out) {
  Checker check(out);
  std::vector<Tally> parts(o.threads);
  std::vector<std::thread> clients;
  for (int i = 0; i < o.threads; ++i) clients.emplace_back([&, i] { parts[i] = OneClient(o, i); });
  for (std::thread& t : clients) t.join();

  Tally sent;
  sent.confusion.assign(o.classes, std::vector<int64_t>(o.classes, 0));
  for (const Tally& t : parts) {
    sent.requests += t.requests;
    sent.rows += t.rows;
    sent.correct += t.correct;
    for (int64_t a = 0; a < o.classes; ++a)
      for (int64_t b = 0; b < o.classes; ++b) sent.confusion[a][b] += t.confusion[a][b];
    for (const std::string& f : t.failures) check.Check(false, f);
  }
  check.Check(sent.requests == o.requests, absl::StrCat("requests: ", sent.requests, " of ", o.requests, " from ",
                                                        o.threads, " threads answered 200, ", sent.rows, " rows"));
  CheckMetrics(o, sent, check);
  CheckNoChange(o, check);
  if (check.failed() == 0) {
    out << "self-test: PASS\n";
    return absl::OkStatus();
  }
  out << "self-test: FAIL (" << check.failed() << " checks)\n";
  return absl::InternalError(absl::StrCat("self-test failed ", check.failed(), " checks"));
}

}  // namespace tally::examples
