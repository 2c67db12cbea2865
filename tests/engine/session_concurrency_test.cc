// Verifies that Session (engine/serving/session.h) is exact and race-free under
// concurrent use: 8 threads x 10,000 updates, direct and micro-batched, with
// an update-count and a time window, end with exactly the single-threaded
// counters, states and values while readers compute, export, snapshot and
// checkpoint; threads that come and go and sessions sharing threads are all
// counted; cat states, Reset and LoadCheckpoint race safely with updates.
//
// CI runs this target twice: plainly and under ThreadSanitizer
// (`bazel test --config=tsan //tests/engine:session_concurrency_test`, see
// .bazelrc), where any report makes the test exit non-zero.
#include <ATen/ATen.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "api/tally.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/session_testing.h"
#include "tests/testlib/status_matchers.h"

namespace tally {
namespace {

using ::tally::testing::CatRows;
using ::tally::testing::ExpectSameValues;
using ::tally::testing::IsOk;
using ::tally::testing::kAcc;
using ::tally::testing::kConfmat;
using ::tally::testing::kF1;
using ::tally::testing::Only;
using ::tally::testing::Reference;
using ::tally::testing::Rows;
using ::tally::testing::Sig;
using ::tally::testing::Slice;
using ::tally::testing::Sum;
using ::tally::testing::TempPath;
using ::tally::testing::TwoSets;
using ::tally::testing::ValueOf;

int64_t ConfusionTotal(const std::vector<MetricValue>& values) {
  return ValueOf(values, kConfmat).sum().item<int64_t>();
}

// SampleSum adds the values of the exposition lines that start with
// `prefix` (a metric name and the leading labels).
double SampleSum(const std::string& text, absl::string_view prefix) {
  double total = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, prefix)) continue;
    double v = 0;
    EXPECT_TRUE(absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) << line;
    total += v;
  }
  return total;
}

struct Mode {
  const char* name;
  int64_t max_rows;  // SessionOptions::micro_batching.max_rows (0: off)
};

void PrintTo(const Mode& m, std::ostream* os) { *os << m.name; }

class EightThreadsTest : public ::testing::TestWithParam<Mode> {};

TEST_P(EightThreadsTest, GiveExactlyTheSingleThreadedResultWhileReadersRace) {
  constexpr int kThreads = 8, kUpdates = 10000, kBatch = 4;
  constexpr int kBadEvery = kUpdates / 10;     // 10 rejected updates per thread
  constexpr int kWindow = 1000, kBuckets = 4;  // "last_1000": 4 intervals of 250 updates
  static_assert(kThreads * kUpdates % (kWindow / kBuckets) == 0 && kThreads * kUpdates >= kWindow,
                "the last interval is full, so the window holds exactly kWindow updates at the end");
  const std::string path = TempPath(absl::StrCat("ckpt_eight_", GetParam().name));
  SessionOptions o;
  o.micro_batching.max_rows = GetParam().max_rows;
  o.windows.push_back({"last_1000", WindowSpec::Kind::kUpdates, kWindow, kBuckets});
  // Real clock; the test ends well within an hour's 3 newest intervals, so
  // this window holds every update.
  o.windows.push_back({"last_hour", WindowSpec::Kind::kSeconds, 3600, 4});
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> s, tally::CreateSession(TwoSets(), Sig(), o));
  std::vector<NamedTensors> data;
  for (int t = 0; t < kThreads; ++t) data.push_back(Rows(kUpdates * kBatch, 100 + t));
  NamedTensors bad = Rows(kBatch, 99);
  bad[2].second = bad[2].second.to(at::kFloat);  // "agg" rejects it, so neither set takes it

  const std::string cm_prefix = absl::StrCat("tally_metric{set=\"cls\",metric=\"", kConfmat, "\",");
  std::atomic<int> running{kThreads};
  // Reader 1: every count only grows; Counters (read after Compute) has at
  // least the matrix's rows; the update window never holds more than its
  // 1000 updates.
  std::thread values_reader([&] {
    int64_t last_cm = 0, last_rows = 0;
    do {
      TALLY_ASSERT_OK_AND_ASSIGN(auto v, s->Compute("cls"));
      TALLY_ASSERT_OK_AND_ASSIGN(SessionCounters c, s->Counters("cls"));
      const int64_t cm = ConfusionTotal(v);
      EXPECT_GE(cm, last_cm);
      EXPECT_GE(c.rows, last_rows);
      EXPECT_LE(cm, c.rows);
      EXPECT_EQ(c.rows, c.updates * kBatch);
      last_cm = cm;
      last_rows = c.rows;
      TALLY_ASSERT_OK_AND_ASSIGN(auto w, s->ComputeWindow("cls", "last_1000"));
      const int64_t in_window = ConfusionTotal(w);
      EXPECT_LE(in_window, kWindow * kBatch);
      EXPECT_EQ(in_window % kBatch, 0);
      TALLY_ASSERT_OK_AND_ASSIGN(auto agg, s->ComputeWindow("agg", "last_hour"));
      EXPECT_EQ(agg.size(), 2u);
    } while (running.load() > 0);
  });
  // Reader 2: one export, snapshot or checkpoint is one consistent cut: the
  // exported matrix holds exactly the exported rows, and a checkpoint loaded
  // into another session does too.
  std::thread export_reader([&] {
    TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> restored, tally::CreateSession(TwoSets(), Sig()));
    std::vector<int64_t> last_counts;
    int i = 0;
    do {
      const std::string text = s->ExportPrometheus();
      const double rows = SampleSum(text, "tally_rows_total{set=\"cls\"} ");
      EXPECT_EQ(SampleSum(text, cm_prefix), rows);
      EXPECT_EQ(SampleSum(text, "tally_updates_total{set=\"cls\"} ") * kBatch, rows);
      // The integer states (the confusion matrix, invalid-label counts) only grow.
      TALLY_ASSERT_OK_AND_ASSIGN(std::vector<at::Tensor> snap, s->Snapshot("cls"));
      std::vector<int64_t> counts;
      for (const at::Tensor& t : snap)
        if (t.scalar_type() == at::kLong) counts.push_back(t.sum().item<int64_t>());
      if (!last_counts.empty()) {
        ASSERT_EQ(counts.size(), last_counts.size());
        for (size_t j = 0; j < counts.size(); ++j) EXPECT_GE(counts[j], last_counts[j]) << "state " << j;
      }
      last_counts = counts;
      if (i++ % 4 == 0) {
        ASSERT_THAT(s->SaveCheckpoint(path), IsOk());
        ASSERT_THAT(restored->LoadCheckpoint(path), IsOk());
        TALLY_ASSERT_OK_AND_ASSIGN(SessionCounters c, restored->Counters("cls"));
        TALLY_ASSERT_OK_AND_ASSIGN(auto v, restored->Compute("cls"));
        EXPECT_EQ(ConfusionTotal(v), c.rows);
        EXPECT_EQ(c.rows, c.updates * kBatch);
      }
    } while (running.load() > 0);
  });
  std::vector<std::thread> updaters;
  for (int t = 0; t < kThreads; ++t) {
    updaters.emplace_back([&, t] {
      for (int u = 0; u < kUpdates; ++u) {
        EXPECT_THAT(s->Update(Slice(data[t], u * kBatch, kBatch)), IsOk());
        if (u % kBadEvery == kBadEvery / 2) {
          EXPECT_FALSE(s->Update(bad).ok());
        }
      }
      --running;
    });
  }
  for (auto& th : updaters) th.join();
  values_reader.join();
  export_reader.join();

  // Exactly the single-threaded session fed every row in one update: the
  // values, the states, and (every update is in it) the hour window.
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> ref, tally::CreateSession(TwoSets(), Sig()));
  ASSERT_THAT(ref->Update(CatRows(data)), IsOk());
  for (const char* set : {"cls", "agg"}) {
    SCOPED_TRACE(set);
    TALLY_ASSERT_OK_AND_ASSIGN(auto want, ref->Compute(set));
    TALLY_ASSERT_OK_AND_ASSIGN(auto got, s->Compute(set));
    ExpectSameValues(got, want);
    TALLY_ASSERT_OK_AND_ASSIGN(auto hour, s->ComputeWindow(set, "last_hour"));
    ExpectSameValues(hour, want);
    TALLY_ASSERT_OK_AND_ASSIGN(std::vector<at::Tensor> got_states, s->Snapshot(set));
    TALLY_ASSERT_OK_AND_ASSIGN(std::vector<at::Tensor> want_states, ref->Snapshot(set));
    ASSERT_EQ(got_states.size(), want_states.size());
    for (size_t i = 0; i < got_states.size(); ++i) {
      EXPECT_TRUE(at::equal(got_states[i], want_states[i]))
          << "state " << i << ": " << got_states[i] << " vs " << want_states[i];
    }
    TALLY_ASSERT_OK_AND_ASSIGN(SessionCounters c, s->Counters(set));
    EXPECT_EQ(c.updates, kThreads * kUpdates);
    EXPECT_EQ(c.rows, int64_t{kThreads} * kUpdates * kBatch);
    EXPECT_EQ(c.rejected, kThreads * (kUpdates / kBadEvery));
    EXPECT_EQ(c.compute_errors, 0);
  }
  // The last 1000 updates, whichever threads made them.
  TALLY_ASSERT_OK_AND_ASSIGN(auto last, s->ComputeWindow("cls", "last_1000"));
  EXPECT_EQ(ConfusionTotal(last), kWindow * kBatch);
  const std::string text = s->ExportPrometheus();
  EXPECT_EQ(SampleSum(text, cm_prefix), int64_t{kThreads} * kUpdates * kBatch);
  EXPECT_EQ(SampleSum(text, "tally_updates_total{set=\"agg\"} "), kThreads * kUpdates);
  EXPECT_EQ(SampleSum(text, "tally_rejected_updates_total{set=\"agg\"} "), kThreads * (kUpdates / kBadEvery));
  // A checkpoint of the final state restores it exactly.
  ASSERT_THAT(s->SaveCheckpoint(path), IsOk());
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> restored, tally::CreateSession(TwoSets(), Sig()));
  ASSERT_THAT(restored->LoadCheckpoint(path), IsOk());
  ExpectSameValues(*restored->Compute("cls"), *ref->Compute("cls"));
  EXPECT_EQ(restored->Counters("cls")->updates, kThreads * kUpdates);
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(Modes, EightThreadsTest, ::testing::Values(Mode{"Direct", 0}, Mode{"MicroBatched", 32}),
                         [](const ::testing::TestParamInfo<Mode>& info) { return std::string(info.param.name); });

TEST(SessionConcurrencyTest, ThreadsThatComeAndGoAndSessionsSharingThreadsAreAllCounted) {
  constexpr int kWaves = 4, kThreadsPerWave = 4, kUpdates = 200, kBatch = 3;
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> a, tally::CreateSession(TwoSets(), Sig()));
  SessionOptions batched;
  batched.micro_batching.max_rows = 16;
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> b, tally::CreateSession(TwoSets(), Sig(), batched));
  std::vector<NamedTensors> data;
  for (int t = 0; t < kWaves * kThreadsPerWave; ++t) data.push_back(Rows(kUpdates * kBatch, 500 + t));
  std::atomic<bool> done{false};
  // New threads register their shards while reads walk the shard lists.
  std::thread reader([&] {
    do {
      EXPECT_THAT(a->Compute("cls"), IsOk());
      EXPECT_THAT(b->Counters("agg"), IsOk());
    } while (!done.load());
  });
  for (int wave = 0; wave < kWaves; ++wave) {
    std::vector<std::thread> threads;
    for (int k = 0; k < kThreadsPerWave; ++k) {
      const int t = wave * kThreadsPerWave + k;
      threads.emplace_back([&, t] {
        // Each thread has a shard per session; the two interleave.
        for (int u = 0; u < kUpdates; ++u) {
          EXPECT_THAT(a->Update(Slice(data[t], u * kBatch, kBatch)), IsOk());
          EXPECT_THAT(b->Update(Slice(data[t], u * kBatch, kBatch)), IsOk());
        }
      });
    }
    for (auto& th : threads) th.join();
  }
  done = true;
  reader.join();
  const NamedTensors all = CatRows(data);
  for (Session* s : {a.get(), b.get()}) {
    ExpectSameValues(*s->Compute("cls"), Reference({kAcc, kConfmat, kF1}, all));
    ExpectSameValues(*s->Compute("agg"), Reference({"sum", "mean"}, all));
    TALLY_ASSERT_OK_AND_ASSIGN(SessionCounters c, s->Counters("cls"));
    EXPECT_EQ(c.updates, kWaves * kThreadsPerWave * kUpdates);
    EXPECT_EQ(c.rows, kWaves * kThreadsPerWave * kUpdates * kBatch);
  }
}

TEST(SessionConcurrencyTest, AReadSeesEveryUpdateThatReturnedBeforeIt) {
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> s, tally::CreateDefaultSession({"sum"}, Sig()));
  NamedTensors rows = Rows(64, 7);
  double expected = 0;
  for (int i = 0; i < 16; ++i) {
    NamedTensors b = Only(Slice(rows, 4 * i, 4), {"value"});
    std::thread([&] { ASSERT_THAT(s->Update(b), IsOk()); }).join();
    expected += b[0].second.sum().item<double>();
    TALLY_ASSERT_OK_AND_ASSIGN(auto v, s->Compute());
    EXPECT_EQ(v[0].value.tensor.item<double>(), expected);
  }
}

TEST(SessionConcurrencyTest, CatStatesFromManyThreadsGiveTheSingleThreadedResult) {
  constexpr int kThreads = 4, kUpdates = 300, kBatch = 5;
  const std::vector<std::string> specs = {"binary_auroc", "retrieval_reciprocal_rank", "retrieval_recall(top_k=2)"};
  auto rows_for = [](int64_t n, int64_t seed) {
    at::Generator gen = at::detail::createCPUGenerator(seed);
    return NamedTensors{{"preds", at::rand({n}, gen, at::kFloat)},
                        {"target", at::randint(0, 2, {n}, gen, at::kLong)},
                        {"indexes", at::randint(0, 40, {n}, gen, at::kLong)}};
  };
  TALLY_ASSERT_OK_AND_ASSIGN(auto sig, tally::SignatureOf(rows_for(4, 0)));
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> s, tally::CreateDefaultSession(specs, sig));
  std::vector<NamedTensors> data;
  for (int t = 0; t < kThreads; ++t) data.push_back(rows_for(kUpdates * kBatch, 400 + t));
  std::atomic<bool> done{false};
  std::thread reader([&] {
    while (!done.load()) (void)s->Compute();
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int u = 0; u < kUpdates; ++u) ASSERT_THAT(s->Update(Slice(data[t], u * kBatch, kBatch)), IsOk());
    });
  }
  for (auto& th : threads) th.join();
  done = true;
  reader.join();
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> ref, tally::CreateDefaultSession(specs, sig));
  ASSERT_THAT(ref->Update(CatRows(data)), IsOk());
  TALLY_ASSERT_OK_AND_ASSIGN(auto got, s->Compute());
  TALLY_ASSERT_OK_AND_ASSIGN(auto want, ref->Compute());
  for (size_t i = 0; i < got.size(); ++i) {
    // Rows arrive in another order: equal up to float summation order.
    EXPECT_TRUE(at::allclose(got[i].value.tensor, want[i].value.tensor, 1e-6, 1e-7))
        << got[i].spec << ": " << got[i].value.tensor << " vs " << want[i].value.tensor;
  }
  TALLY_ASSERT_OK_AND_ASSIGN(auto snap, s->Snapshot());
  int64_t cat_rows = 0;
  for (const auto& t : snap) cat_rows = std::max<int64_t>(cat_rows, t.dim() > 0 ? t.size(0) : 0);
  EXPECT_EQ(cat_rows, kThreads * kUpdates * kBatch);
}

TEST(SessionConcurrencyTest, MicroBatchedUpdatesGiveTheSameResults) {
  constexpr int kThreads = 4, kUpdates = 2000, kBatch = 3;
  SessionOptions o;
  o.micro_batching.max_rows = 32;
  o.windows.push_back({"last100", WindowSpec::Kind::kUpdates, 100, 4});
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> s, tally::CreateSession(TwoSets(), Sig(), o));
  // A queued update is visible to the next read.
  NamedTensors first = Rows(kBatch, 50);
  ASSERT_THAT(s->Update(first), IsOk());
  TALLY_ASSERT_OK_AND_ASSIGN(auto agg, s->Compute("agg"));
  EXPECT_EQ(Sum(agg), first[2].second.sum().item<double>());
  std::vector<NamedTensors> data;
  for (int t = 0; t < kThreads; ++t) data.push_back(Rows(kUpdates * kBatch, 200 + t));
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // The caller reuses one set of input tensors: queued rows are copies.
      NamedTensors reused = Slice(data[t], 0, kBatch);
      for (auto& in : reused) in.second = in.second.clone();
      for (int u = 0; u < kUpdates; ++u) {
        for (size_t j = 0; j < reused.size(); ++j)
          reused[j].second.copy_(data[t][j].second.narrow(0, u * kBatch, kBatch));
        ASSERT_THAT(s->Update(reused), IsOk());
      }
    });
  }
  for (auto& th : threads) th.join();
  data.push_back(first);
  const NamedTensors all = CatRows(data);
  ExpectSameValues(*s->Compute("cls"), Reference({kAcc, kConfmat, kF1}, all));
  ExpectSameValues(*s->Compute("agg"), Reference({"sum", "mean"}, all));
  TALLY_ASSERT_OK_AND_ASSIGN(SessionCounters c, s->Counters("cls"));
  EXPECT_EQ(c.updates, kThreads * kUpdates + 1);
  EXPECT_EQ(c.rows, (kThreads * kUpdates + 1) * kBatch);

  // One thread: the window matches an unbatched session's.
  SessionOptions plain = o;
  plain.micro_batching.max_rows = 0;
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> a, tally::CreateSession(TwoSets(), Sig(), o));
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> b, tally::CreateSession(TwoSets(), Sig(), plain));
  for (int u = 0; u < 230; ++u) {
    NamedTensors batch = Slice(data[0], u * kBatch, kBatch);
    ASSERT_THAT(a->Update(batch), IsOk());
    ASSERT_THAT(b->Update(batch), IsOk());
    if (u % 37 == 0) ExpectSameValues(*a->ComputeWindow("cls", "last100"), *b->ComputeWindow("cls", "last100"));
  }
  ExpectSameValues(*a->ComputeWindow("cls", "last100"), *b->ComputeWindow("cls", "last100"));
  ExpectSameValues(*a->ComputeWindow("agg", "last100"), *b->ComputeWindow("agg", "last100"));
}

TEST(SessionConcurrencyTest, ReadsResetsAndCheckpointsRaceSafelyWithUpdates) {
  const std::string path = TempPath("ckpt_race");
  SessionOptions o;
  o.windows.push_back({"last64", WindowSpec::Kind::kUpdates, 64, 4});
  o.micro_batching.max_rows = 16;
  TALLY_ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> s, tally::CreateSession(TwoSets(), Sig(), o));
  ASSERT_THAT(s->SaveCheckpoint(path), IsOk());
  std::atomic<bool> done{false};
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      NamedTensors rows = Rows(2000 * 2, 300 + t);
      for (int u = 0; u < 2000; ++u)
        if (!s->Update(Slice(rows, 2 * u, 2)).ok()) ++failures;
    });
  }
  std::thread reader([&] {
    for (int i = 0; !done.load(); ++i) {
      bool ok = s->Compute("cls").ok() && s->ComputeWindow("agg", "last64").ok() && s->Snapshot("agg").ok() &&
                !s->ExportPrometheus().empty();
      if (i % 5 == 0) ok = ok && s->Reset().ok();
      if (i % 7 == 0) ok = ok && s->SaveCheckpoint(path).ok();
      if (i % 11 == 0) ok = ok && s->LoadCheckpoint(path).ok();
      if (!ok) ++failures;
    }
  });
  for (auto& th : threads) th.join();
  done = true;
  reader.join();
  EXPECT_EQ(failures.load(), 0);
  // Whatever the race left, the session still counts exactly from a Reset.
  ASSERT_THAT(s->Reset(), IsOk());
  NamedTensors rows = Rows(40, 9);
  ASSERT_THAT(s->Update(rows), IsOk());
  ExpectSameValues(*s->Compute("cls"), Reference({kAcc, kConfmat, kF1}, rows));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace tally
