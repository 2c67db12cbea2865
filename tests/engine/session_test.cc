// Verifies that Session (engine/serving/session.h) — named metric sets, bad input,
// windows, Prometheus export and checkpoints — gives the results of one
// single-threaded program fed the same rows. Concurrent updates and reads are
// session_concurrency_test's.
#include "api/tally.h"

#include <ATen/ATen.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/persist/checkpoint_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/session_testing.h"
#include "tests/testlib/status_matchers.h"

namespace tally {
namespace {

using ::tally::testing::ExpectSameValues;
using ::tally::testing::IsOk;
using ::tally::testing::kAcc;
using ::tally::testing::kConfmat;
using ::tally::testing::kF1;
using ::tally::testing::Only;
using ::tally::testing::Rows;
using ::tally::testing::Sig;
using ::tally::testing::Slice;
using ::tally::testing::StatusIs;
using ::tally::testing::Sum;
using ::tally::testing::TempPath;
using ::tally::testing::TwoSets;
using ::tally::testing::ValueOf;
using ::testing::HasSubstr;

TEST(SessionTest, BadInputIsAClearErrorAndChangesNothing) {
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> s, tally::CreateSession(TwoSets(), Sig()));
  NamedTensors rows = Rows(8, 1);
  ASSERT_THAT(s->Update(rows), IsOk());
  TALLY_ASSERT_OK_AND_ASSIGN(auto cls0, s->Compute("cls"));
  TALLY_ASSERT_OK_AND_ASSIGN(auto agg0, s->Compute("agg"));

  // Valid for "cls" but not for "agg": neither set changes.
  NamedTensors bad = rows;
  bad[2].second = bad[2].second.to(at::kFloat);
  EXPECT_THAT(s->Update(bad), StatusIs(absl::StatusCode::kInvalidArgument,
                                       ::testing::AllOf(HasSubstr("metric set 'agg': sum, mean: input 'value'"),
                                                        HasSubstr("wrong dtype"))));
  NamedTensors extra = rows;
  extra.emplace_back("weights", rows[2].second);
  EXPECT_THAT(s->Update(extra), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected input 'weights'")));
  NamedTensors ragged = rows;
  ragged[1].second = ragged[1].second.narrow(0, 0, 5);
  EXPECT_THAT(s->Update(ragged), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input 'target' has 5 rows")));
  EXPECT_THAT(s->Update("nope", rows), StatusIs(absl::StatusCode::kNotFound, HasSubstr("no metric set 'nope'")));
  EXPECT_THAT(s->Update("agg", Only(rows, {"preds"})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected input 'preds'")));

  TALLY_ASSERT_OK_AND_ASSIGN(auto cls1, s->Compute("cls"));
  TALLY_ASSERT_OK_AND_ASSIGN(auto agg1, s->Compute("agg"));
  ExpectSameValues(cls0, cls1);
  ExpectSameValues(agg0, agg1);
  TALLY_ASSERT_OK_AND_ASSIGN(SessionCounters c, s->Counters("cls"));
  EXPECT_EQ(c.updates, 1);
  EXPECT_EQ(c.rejected, 3);  // bad, extra, ragged ("nope" and the "agg"-only one never reach it)
  TALLY_ASSERT_OK_AND_ASSIGN(SessionCounters a, s->Counters("agg"));
  EXPECT_EQ(a.rejected, 4);

  // A deferred value check fails Compute naming the metric; updates go on.
  NamedTensors out_of_range = Only(rows, {"preds", "target"});
  out_of_range[1].second = out_of_range[1].second + 5;
  ASSERT_THAT(s->Update("cls", out_of_range), IsOk());
  EXPECT_THAT(s->Compute("cls"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("multiclass")));
  TALLY_ASSERT_OK_AND_ASSIGN(SessionCounters c2, s->Counters("cls"));
  EXPECT_EQ(c2.compute_errors, 1);
}

TEST(SessionTest, RejectInvalidValuesRefusesABadBatchAndChangesNothing) {
  SessionOptions options;
  options.reject_invalid_values = true;
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> s, tally::CreateSession(TwoSets(), Sig(), options));
  NamedTensors rows = Rows(8, 1);
  ASSERT_THAT(s->Update(rows), IsOk());
  TALLY_ASSERT_OK_AND_ASSIGN(auto cls0, s->Compute("cls"));

  // The deferred check's message, now at Update; neither set changes.
  NamedTensors out_of_range = rows;
  out_of_range[1].second = out_of_range[1].second.clone();
  out_of_range[1].second[3] = 7;
  EXPECT_THAT(s->Update(out_of_range),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::AllOf(HasSubstr("metric set 'cls': multiclass"),
                                                                            HasSubstr("1 values outside [0, 3)"))));
  TALLY_ASSERT_OK_AND_ASSIGN(auto cls1, s->Compute("cls"));
  ExpectSameValues(cls0, cls1);
  TALLY_ASSERT_OK_AND_ASSIGN(SessionCounters c, s->Counters("cls"));
  EXPECT_EQ(c.updates, 1);
  EXPECT_EQ(c.rejected, 1);
  TALLY_ASSERT_OK_AND_ASSIGN(SessionCounters a, s->Counters("agg"));
  EXPECT_EQ(a.updates, 1);
  // A server counts what it turned away before Update, in every set.
  s->CountRejected();
  EXPECT_EQ(s->Counters("cls")->rejected, 2);
  EXPECT_EQ(s->Counters("agg")->rejected, 2);
  EXPECT_EQ(s->Counters("agg")->updates, 1);
  // The scratch program does not carry the bad batch into the next one.
  ASSERT_THAT(s->Update(Rows(8, 2)), IsOk());
  EXPECT_THAT(s->Compute("cls"), IsOk());
}

TEST(SessionTest, RejectInvalidValuesJudgesRetrievalTargetsNotMissingPositives) {
  SessionOptions options;
  options.reject_invalid_values = true;
  NamedTensors q = {{"preds", at::tensor({0.9, 0.2, 0.5, 0.1}, at::kFloat)},
                    {"target", at::tensor({0, 0, 1, 0}, at::kLong)},
                    {"indexes", at::tensor({0, 0, 1, 1}, at::kLong)}};
  TALLY_ASSERT_OK_AND_ASSIGN(dsl::Signature sig, tally::SignatureOf(q));
  TALLY_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Session> s,
      tally::CreateDefaultSession({"retrieval_recall(empty_target_action=error)", "retrieval_reciprocal_rank"}, sig,
                                  options));
  // Query 0 has no positive yet: only the whole state can tell, so the batch
  // is accepted (Compute reports it), and a later batch completes it.
  ASSERT_THAT(s->Update(q), IsOk());
  EXPECT_THAT(s->Compute(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("1 queries without a positive")));
  NamedTensors bad = q;
  bad[1].second = at::tensor({0, 2, 1, 0}, at::kLong);
  EXPECT_THAT(s->Update(bad), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("values outside {0, 1}")));
  NamedTensors more = {{"preds", at::tensor({0.3}, at::kFloat)},
                       {"target", at::tensor({1}, at::kLong)},
                       {"indexes", at::tensor({0}, at::kLong)}};
  ASSERT_THAT(s->Update(more), IsOk());
  TALLY_ASSERT_OK_AND_ASSIGN(std::vector<MetricValue> v, s->Compute());
  ASSERT_EQ(v.size(), 2u);
  EXPECT_DOUBLE_EQ(v[0].value.tensor.item<double>(), 1.0);
  // Query 0: positive ranked 2nd of 3; query 1: 1st.
  EXPECT_DOUBLE_EQ(v[1].value.tensor.item<double>(), (0.5 + 1.0) / 2);
  TALLY_ASSERT_OK_AND_ASSIGN(SessionCounters c, s->Counters());
  EXPECT_EQ(c.updates, 2);
  EXPECT_EQ(c.rejected, 1);
}

TEST(SessionTest, SetsAreIndependentAndResetEmptiesThem) {
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> s, tally::CreateSession(TwoSets(), Sig()));
  EXPECT_THAT(s->set_names(), ::testing::ElementsAre("cls", "agg"));
  NamedTensors rows = Rows(8, 2);
  ASSERT_THAT(s->Update("agg", Only(rows, {"value"})), IsOk());
  TALLY_ASSERT_OK_AND_ASSIGN(SessionCounters c, s->Counters("cls"));
  EXPECT_EQ(c.updates, 0);
  TALLY_ASSERT_OK_AND_ASSIGN(auto agg, s->Compute("agg"));
  EXPECT_EQ(agg[0].value.tensor.item<double>(), rows[2].second.sum().item<double>());
  TALLY_ASSERT_OK_AND_ASSIGN(auto snap, s->Snapshot("agg"));
  EXPECT_FALSE(snap.empty());
  ASSERT_THAT(s->Reset(), IsOk());
  TALLY_ASSERT_OK_AND_ASSIGN(auto after, s->Compute("agg"));
  EXPECT_EQ(after[0].value.tensor.item<double>(), 0.0);
  TALLY_ASSERT_OK_AND_ASSIGN(SessionCounters a, s->Counters("agg"));
  EXPECT_EQ(a.updates, 1);  // counters keep counting across Reset
  EXPECT_THAT(tally::CreateSession({{"x", {"sum"}}, {"x", {"mean"}}}, Sig()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("metric set 'x'")));
  EXPECT_THAT(tally::CreateDefaultSession({"no_such_metric"}, Sig()), StatusIs(absl::StatusCode::kInvalidArgument));
}

TEST(SessionTest, UpdateCountWindowCoversTheLastIntervals) {
  SessionOptions o;
  o.windows.push_back({"last4", WindowSpec::Kind::kUpdates, 4, 2});  // 2 intervals of 2 updates
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> s, tally::CreateDefaultSession({"sum"}, Sig(), o));
  auto one = [](double v) { return NamedTensors{{"value", at::full({1}, v, at::kDouble)}}; };
  for (int i = 1; i <= 10; ++i) ASSERT_THAT(s->Update(one(i)), IsOk());
  TALLY_ASSERT_OK_AND_ASSIGN(auto w, s->ComputeWindow("default", "last4"));
  EXPECT_EQ(Sum(w), 7 + 8 + 9 + 10);
  ASSERT_THAT(s->Update(one(11)), IsOk());
  TALLY_ASSERT_OK_AND_ASSIGN(w, s->ComputeWindow("default", "last4"));
  EXPECT_EQ(Sum(w), 9 + 10 + 11);  // the current interval holds one update
  TALLY_ASSERT_OK_AND_ASSIGN(auto total, s->Compute());
  EXPECT_EQ(Sum(total), 66);
  // Updates from other threads land in the same intervals.
  std::thread([&] { ASSERT_THAT(s->Update(one(12)), IsOk()); }).join();
  std::thread([&] { ASSERT_THAT(s->Update(one(13)), IsOk()); }).join();
  TALLY_ASSERT_OK_AND_ASSIGN(w, s->ComputeWindow("default", "last4"));
  EXPECT_EQ(Sum(w), 11 + 12 + 13);
  EXPECT_THAT(s->ComputeWindow("default", "nope"), StatusIs(absl::StatusCode::kNotFound));
  o.windows = {{"bad", WindowSpec::Kind::kUpdates, 5, 2}};
  EXPECT_THAT(tally::CreateDefaultSession({"sum"}, Sig(), o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("divide")));
}

TEST(SessionTest, CheckpointRestoresUpdateWindowsAndRestartsTimeWindows) {
  const std::string path = TempPath("ckpt_windows");
  auto now = std::make_shared<std::atomic<int64_t>>(0);
  SessionOptions o;
  o.windows.push_back({"last4", WindowSpec::Kind::kUpdates, 4, 2});
  o.windows.push_back({"last10s", WindowSpec::Kind::kSeconds, 10, 2});
  o.now_ns = [now] { return now->load(); };
  auto one = [](double v) { return NamedTensors{{"value", at::full({1}, v, at::kDouble)}}; };
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> a, tally::CreateDefaultSession({"sum"}, Sig(), o));
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> b, tally::CreateDefaultSession({"sum"}, Sig(), o));
  for (int i = 1; i <= 7; ++i) {
    ASSERT_THAT(a->Update(one(i)), IsOk());
    ASSERT_THAT(b->Update(one(i)), IsOk());
  }
  ASSERT_THAT(a->SaveCheckpoint(path), IsOk());
  ASSERT_THAT(a->Update(one(100)), IsOk());  // undone by the load
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> c, tally::CreateDefaultSession({"sum"}, Sig(), o));
  ASSERT_THAT(a->LoadCheckpoint(path), IsOk());
  ASSERT_THAT(c->LoadCheckpoint(path), IsOk());
  // Restored where it stopped: 5 + 6 + 7 (updates 4..7 with one interval
  // of two and the current one holding update 7 alone).
  for (Session* s : {a.get(), b.get(), c.get()}) {
    TALLY_ASSERT_OK_AND_ASSIGN(auto w, s->ComputeWindow("default", "last4"));
    EXPECT_EQ(Sum(w), 5 + 6 + 7);
  }
  // ...and it goes on like a session that never saved.
  for (int i = 8; i <= 9; ++i) {
    for (Session* s : {a.get(), b.get(), c.get()}) ASSERT_THAT(s->Update(one(i)), IsOk());
  }
  for (Session* s : {a.get(), b.get(), c.get()}) {
    TALLY_ASSERT_OK_AND_ASSIGN(auto w, s->ComputeWindow("default", "last4"));
    EXPECT_EQ(Sum(w), 7 + 8 + 9);
    TALLY_ASSERT_OK_AND_ASSIGN(auto total, s->Compute());
    EXPECT_EQ(Sum(total), 45);
  }
  // The time window restarts with the restored session (only 8 and 9).
  TALLY_ASSERT_OK_AND_ASSIGN(auto tw, c->ComputeWindow("default", "last10s"));
  EXPECT_EQ(Sum(tw), 8 + 9);
  // A session declaring the window otherwise restores everything else.
  SessionOptions other = o;
  other.windows[0].buckets = 4;
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> d, tally::CreateDefaultSession({"sum"}, Sig(), other));
  ASSERT_THAT(d->LoadCheckpoint(path), IsOk());
  TALLY_ASSERT_OK_AND_ASSIGN(auto dw, d->ComputeWindow("default", "last4"));
  EXPECT_EQ(Sum(dw), 0);
  EXPECT_EQ(Sum(*d->Compute()), 28);
  std::remove(path.c_str());
}

TEST(SessionTest, TimeWindowCoversTheLastSeconds) {
  auto now = std::make_shared<std::atomic<int64_t>>(0);
  SessionOptions o;
  o.now_ns = [now] { return now->load(); };
  o.windows.push_back({"last10s", WindowSpec::Kind::kSeconds, 10, 5});  // 2 s intervals
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> s, tally::CreateDefaultSession({"sum", "mean"}, Sig(), o));
  auto one = [](double v) { return NamedTensors{{"value", at::full({1}, v, at::kDouble)}}; };
  const int64_t sec = 1000000000;
  ASSERT_THAT(s->Update(one(1)), IsOk());
  *now = 3 * sec;
  ASSERT_THAT(s->Update(one(2)), IsOk());
  *now = 9 * sec;
  ASSERT_THAT(s->Update(one(4)), IsOk());
  TALLY_ASSERT_OK_AND_ASSIGN(auto w, s->ComputeWindow("default", "last10s"));
  EXPECT_EQ(Sum(w), 7);
  *now = 11 * sec;  // the interval [0, 2) s has left the window
  TALLY_ASSERT_OK_AND_ASSIGN(w, s->ComputeWindow("default", "last10s"));
  EXPECT_EQ(Sum(w), 6);
  EXPECT_EQ(w[1].value.tensor.item<double>(), 3.0);
  *now = 30 * sec;
  TALLY_ASSERT_OK_AND_ASSIGN(w, s->ComputeWindow("default", "last10s"));
  EXPECT_EQ(Sum(w), 0);
  EXPECT_TRUE(std::isnan(w[1].value.tensor.item<double>()));
  TALLY_ASSERT_OK_AND_ASSIGN(auto total, s->Compute());
  EXPECT_EQ(Sum(total), 7);
}

// A parsed exposition: families with their HELP/TYPE and samples.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};
struct Parsed {
  std::map<std::string, std::string> help, type;
  std::vector<Sample> samples;
};

bool ValidName(const std::string& n) {
  if (n.empty()) return false;
  for (size_t i = 0; i < n.size(); ++i) {
    char c = n[i];
    bool ok = std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':' ||
              (i > 0 && std::isdigit(static_cast<unsigned char>(c)));
    if (!ok) return false;
  }
  return true;
}

// ParseExposition reads the text format back; it fails the test on any
// malformed line, a sample before its family's TYPE, or a bad value.
Parsed ParseExposition(const std::string& text) {
  Parsed p;
  EXPECT_TRUE(!text.empty() && text.back() == '\n');
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.rfind("# HELP ", 0) == 0 || line.rfind("# TYPE ", 0) == 0) {
      std::string rest = line.substr(7);
      size_t sp = rest.find(' ');
      std::string name = rest.substr(0, sp);
      EXPECT_TRUE(ValidName(name)) << line;
      if (line[2] == 'H') {
        p.help[name] = rest.substr(sp + 1);
      } else {
        EXPECT_TRUE(p.help.count(name)) << "TYPE before HELP: " << line;
        std::string type = rest.substr(sp + 1);
        EXPECT_TRUE(type == "gauge" || type == "counter") << line;
        p.type[name] = type;
      }
      continue;
    }
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    EXPECT_TRUE(ValidName(s.name)) << line;
    EXPECT_TRUE(p.type.count(s.name)) << "sample before its TYPE: " << line;
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (line[i] != '}') {
        size_t eq = line.find('=', i);
        std::string key = line.substr(i, eq - i);
        EXPECT_TRUE(ValidName(key) && key.find(':') == std::string::npos) << line;
        EXPECT_EQ(line[eq + 1], '"') << line;
        std::string value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\') {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
            EXPECT_TRUE(line[j] == 'n' || line[j] == '\\' || line[j] == '"') << line;
          } else {
            value += line[j];
          }
        }
        EXPECT_LT(j, line.size()) << "unterminated label value: " << line;
        s.labels[key] = value;
        i = j + 1;
        if (line[i] == ',') ++i;
      }
      ++i;
    }
    EXPECT_EQ(line[i], ' ') << line;
    std::string v = line.substr(i + 1);
    if (v == "NaN")
      s.value = std::nan("");
    else if (v == "+Inf")
      s.value = INFINITY;
    else if (v == "-Inf")
      s.value = -INFINITY;
    else
      EXPECT_TRUE(absl::SimpleAtod(v, &s.value) && v.find_first_of("in") == std::string::npos) << line;
    p.samples.push_back(s);
  }
  return p;
}

bool SameDouble(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

TEST(SessionTest, PrometheusExportParsesBackToEveryValue) {
  const std::string weird = "we\"ird\\set\nname";
  SessionOptions o;
  o.windows.push_back({"last4", WindowSpec::Kind::kUpdates, 4, 2});
  TALLY_ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<Session> s,
      tally::CreateSession(
          {{"cls", {kAcc, kConfmat, kF1}}, {weird, {"sum", "mean", "max", "min"}}, {"empty", {"mean"}}}, Sig(), o));
  NamedTensors rows = Rows(12, 3);
  ASSERT_THAT(s->Update("cls", Only(rows, {"preds", "target"})), IsOk());
  ASSERT_THAT(s->Update(weird, {{"value", at::tensor({INFINITY, 1.5}, at::kDouble)}}), IsOk());
  ASSERT_THAT(s->Update(weird, {{"value", at::tensor({-1.0}, at::kFloat)}}), ::testing::Not(IsOk()));
  const std::string text = s->ExportPrometheus();
  Parsed p = ParseExposition(text);
  for (const auto& [name, type] : p.type) {
    EXPECT_EQ(type, absl::EndsWith(name, "_total") ? "counter" : "gauge") << name;
  }
  // Every sample against Compute.
  std::map<std::string, std::vector<MetricValue>> values;
  for (const std::string& set : s->set_names()) values[set] = *s->Compute(set);
  int checked = 0;
  for (const Sample& smp : p.samples) {
    SCOPED_TRACE(absl::StrCat(smp.name, " set=", smp.labels.at("set")));
    const std::string& set = smp.labels.at("set");
    ASSERT_TRUE(values.count(set));
    if (smp.name == "tally_metric" || smp.name == "tally_window_metric") {
      auto vs = smp.name == "tally_metric" ? values[set] : *s->ComputeWindow(set, smp.labels.at("window"));
      at::Tensor t = ValueOf(vs, smp.labels.at("metric")).to(at::kDouble);
      double want;
      if (smp.labels.count("class")) {
        want = t[std::stoi(smp.labels.at("class"))].item<double>();
      } else if (smp.labels.count("index")) {
        std::string idx = smp.labels.at("index");
        want = t[std::stoi(idx.substr(0, idx.find(',')))][std::stoi(idx.substr(idx.find(',') + 1))].item<double>();
      } else {
        want = t.item<double>();
      }
      EXPECT_TRUE(SameDouble(smp.value, want)) << smp.value << " vs " << want;
    } else {
      TALLY_ASSERT_OK_AND_ASSIGN(SessionCounters c, s->Counters(set));
      const double want = smp.name == "tally_updates_total"            ? c.updates
                          : smp.name == "tally_rows_total"             ? c.rows
                          : smp.name == "tally_rejected_updates_total" ? c.rejected
                                                                       : c.compute_errors;
      EXPECT_EQ(smp.value, want);
    }
    ++checked;
  }
  // 3 accuracy classes + 9 confusion cells + f1; 4 aggregates; 1 mean; the
  // window repeats the metrics; 4 counters per set.
  EXPECT_EQ(checked, 2 * (13 + 4 + 1) + 3 * 4) << text;
  auto find = [&](const std::string& name, std::map<std::string, std::string> labels) {
    for (const Sample& smp : p.samples) {
      bool match = smp.name == name;
      for (const auto& [k, v] : labels) match = match && smp.labels.count(k) && smp.labels.at(k) == v;
      if (match) return smp.value;
    }
    ADD_FAILURE() << "no sample " << name;
    return 0.0;
  };
  EXPECT_EQ(find("tally_metric", {{"set", weird}, {"metric", "sum"}}), INFINITY);
  EXPECT_EQ(find("tally_metric", {{"set", weird}, {"metric", "min"}}), 1.5);
  EXPECT_TRUE(std::isnan(find("tally_metric", {{"set", "empty"}, {"metric", "mean"}})));
  EXPECT_EQ(find("tally_rejected_updates_total", {{"set", weird}}), 1);
  EXPECT_EQ(find("tally_rows_total", {{"set", "cls"}}), 12);
  EXPECT_THAT(
      text,
      HasSubstr("tally_metric{set=\"cls\",metric=\"multiclass_accuracy(num_classes=3, average=none)\",class=\"2\"} "));
  EXPECT_THAT(text, HasSubstr("set=\"we\\\"ird\\\\set\\nname\""));
  EXPECT_THAT(text, HasSubstr(" +Inf\n"));
  EXPECT_THAT(text, HasSubstr(" NaN\n"));
  o.prometheus_prefix = "9bad";
  EXPECT_THAT(tally::CreateDefaultSession({"sum"}, Sig(), o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("prometheus_prefix")));
}

TEST(SessionTest, PrometheusLabelsTuplePartsAndMatrixCells) {
  NamedTensors rows = {{"preds", at::tensor({0.1f, 0.7f, 0.4f, 0.9f})}, {"target", at::tensor({0L, 1L, 0L, 1L})}};
  TALLY_ASSERT_OK_AND_ASSIGN(auto sig, tally::SignatureOf(rows));
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> s,
                             tally::CreateDefaultSession({"binary_roc(thresholds=3)", "binary_confusion_matrix"}, sig));
  ASSERT_THAT(s->Update(rows), IsOk());
  TALLY_ASSERT_OK_AND_ASSIGN(auto values, s->Compute());
  Parsed p = ParseExposition(s->ExportPrometheus());
  int parts = 0, cells = 0;
  for (const Sample& smp : p.samples) {
    if (smp.name != "tally_metric") continue;
    if (smp.labels.at("metric") == "binary_roc(thresholds=3)") {
      const int part = std::stoi(smp.labels.at("part"));
      const int cls = std::stoi(smp.labels.at("class"));
      EXPECT_EQ(smp.value, values[0].value.parts.at(part).tensor[cls].item<double>());
      ++parts;
    } else {
      const std::string idx = smp.labels.at("index");
      EXPECT_EQ(smp.value, values[1].value.tensor[idx[0] - '0'][idx[2] - '0'].item<double>());
      ++cells;
    }
  }
  EXPECT_EQ(parts, 9);  // (fpr, tpr, thresholds) x 3 thresholds
  EXPECT_EQ(cells, 4);
}

std::string ReadAll(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), bytes.size());
}

TEST(SessionTest, CheckpointRestoresExactlyWhereItStopped) {
  const std::string path = TempPath("ckpt_roundtrip");
  NamedTensors rows = Rows(40, 4);
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> a, tally::CreateSession(TwoSets(), Sig()));
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> b, tally::CreateSession(TwoSets(), Sig()));
  for (int i = 0; i < 5; ++i) {
    ASSERT_THAT(a->Update(Slice(rows, 4 * i, 4)), IsOk());
    ASSERT_THAT(b->Update(Slice(rows, 4 * i, 4)), IsOk());
  }
  ASSERT_THAT(a->SaveCheckpoint(path), IsOk());
  // Updates after the save are undone by the load...
  ASSERT_THAT(a->Update(Slice(rows, 20, 4)), IsOk());
  ASSERT_THAT(a->LoadCheckpoint(path), IsOk());
  // ...and the restored session continues like one that never saved.
  for (int i = 5; i < 10; ++i) {
    ASSERT_THAT(a->Update(Slice(rows, 4 * i, 4)), IsOk());
    ASSERT_THAT(b->Update(Slice(rows, 4 * i, 4)), IsOk());
  }
  for (const char* set : {"cls", "agg"}) {
    ExpectSameValues(*a->Compute(set), *b->Compute(set));
    TALLY_ASSERT_OK_AND_ASSIGN(auto sa, a->Snapshot(set));
    TALLY_ASSERT_OK_AND_ASSIGN(auto sb, b->Snapshot(set));
    ASSERT_EQ(sa.size(), sb.size());
    for (size_t i = 0; i < sa.size(); ++i) EXPECT_TRUE(at::equal(sa[i], sb[i]));
    EXPECT_EQ(a->Counters(set)->updates, 10);
    EXPECT_EQ(a->Counters(set)->rows, 40);
  }
  // A fresh session (another process) restores it too, created from the
  // signature the checkpoint carries.
  TALLY_ASSERT_OK_AND_ASSIGN(dsl::Signature saved, Session::CheckpointSignature(path));
  ASSERT_EQ(saved.size(), Sig().size());
  for (size_t i = 0; i < saved.size(); ++i) {
    EXPECT_EQ(saved[i].name, Sig()[i].name);
    EXPECT_EQ(saved[i].dtype, Sig()[i].dtype);
    EXPECT_EQ(saved[i].shape, Sig()[i].shape);
  }
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> c, tally::CreateSession(TwoSets(), saved));
  ASSERT_THAT(c->LoadCheckpoint(path), IsOk());
  TALLY_ASSERT_OK_AND_ASSIGN(auto restored, c->Compute("cls"));
  TALLY_ASSERT_OK_AND_ASSIGN(auto five, tally::CreateSession(TwoSets(), Sig()));
  ASSERT_THAT(five->Update(Slice(rows, 0, 20)), IsOk());
  ExpectSameValues(restored, *five->Compute("cls"));
  // No temporary file is left beside it.
  EXPECT_FALSE(std::ifstream(absl::StrCat(path, ".tmp.", getpid(), ".0")).good());
  std::remove(path.c_str());
}

TEST(SessionTest, CorruptTruncatedOrForeignCheckpointsAreRejectedAndChangeNothing) {
  const std::string path = TempPath("ckpt_bad");
  const std::string bad_path = TempPath("ckpt_bad_copy");
  NamedTensors rows = Rows(16, 5);
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> s, tally::CreateSession(TwoSets(), Sig()));
  ASSERT_THAT(s->Update(rows), IsOk());
  ASSERT_THAT(s->SaveCheckpoint(path), IsOk());
  const std::string good = ReadAll(path);
  ASSERT_GT(good.size(), 100u);
  ASSERT_THAT(s->Update(Slice(rows, 0, 3)), IsOk());
  TALLY_ASSERT_OK_AND_ASSIGN(auto before, s->Compute("cls"));
  auto unchanged = [&] {
    ExpectSameValues(*s->Compute("cls"), before);
    EXPECT_EQ(s->Counters("cls")->updates, 2);
  };
  for (size_t len = 0; len < good.size(); ++len) {
    WriteAll(bad_path, good.substr(0, len));
    ASSERT_THAT(s->LoadCheckpoint(bad_path), StatusIs(absl::StatusCode::kInvalidArgument)) << "length " << len;
  }
  unchanged();
  for (size_t i = 0; i < good.size(); ++i) {
    std::string flipped = good;
    flipped[i] ^= static_cast<char>(1 << (i % 8));
    WriteAll(bad_path, flipped);
    ASSERT_THAT(s->LoadCheckpoint(bad_path), StatusIs(absl::StatusCode::kInvalidArgument)) << "byte " << i;
  }
  unchanged();
  EXPECT_THAT(s->LoadCheckpoint(bad_path + ".missing"), StatusIs(absl::StatusCode::kNotFound));
  WriteAll(bad_path, good.substr(0, 20) + "x" + good.substr(20));
  EXPECT_THAT(s->LoadCheckpoint(bad_path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("truncated or padded")));
  std::string flipped = good;
  flipped[good.size() / 2] ^= 4;
  WriteAll(bad_path, flipped);
  EXPECT_THAT(s->LoadCheckpoint(bad_path), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("checksum")));

  // Other metric sets: other specs, other set names, other inputs for the
  // same specs (float32 values), fewer sets.
  TALLY_ASSERT_OK_AND_ASSIGN(auto other_specs,
                             tally::CreateSession({{"cls", {kAcc, kF1}}, {"agg", {"sum", "mean"}}}, Sig()));
  EXPECT_THAT(other_specs->LoadCheckpoint(path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("other metrics")));
  TALLY_ASSERT_OK_AND_ASSIGN(auto other_names,
                             tally::CreateSession({{"x", {kAcc, kConfmat, kF1}}, {"agg", {"sum", "mean"}}}, Sig()));
  EXPECT_THAT(other_names->LoadCheckpoint(path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("metric set 'cls'")));
  dsl::Signature f32 = Sig();
  for (auto& in : f32)
    if (in.name == "value") in.dtype = ir::DType::kFloat32;
  TALLY_ASSERT_OK_AND_ASSIGN(auto other_program, tally::CreateSession(TwoSets(), f32));
  EXPECT_THAT(other_program->LoadCheckpoint(path),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("saved for other inputs")));
  TALLY_ASSERT_OK_AND_ASSIGN(auto fewer, tally::CreateSession({{"cls", {kAcc, kConfmat, kF1}}}, Sig()));
  EXPECT_THAT(fewer->LoadCheckpoint(path), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2 metric sets")));
  // The good file still loads.
  ASSERT_THAT(s->LoadCheckpoint(path), IsOk());
  EXPECT_EQ(s->Counters("cls")->updates, 1);
  std::remove(path.c_str());
  std::remove(bad_path.c_str());
}

TEST(SessionTest, CheckpointFramingDetectsEverySingleByteChange) {
  std::string framed = persist::Frame("payload bytes");
  TALLY_ASSERT_OK_AND_ASSIGN(absl::string_view p, persist::Unframe(framed, "f"));
  EXPECT_EQ(p, "payload bytes");
  for (size_t i = 0; i < framed.size(); ++i)
    for (int bit = 0; bit < 8; ++bit) {
      std::string f = framed;
      f[i] ^= static_cast<char>(1 << bit);
      EXPECT_FALSE(persist::Unframe(f, "f").ok()) << i << " " << bit;
    }
}

}  // namespace
}  // namespace tally
