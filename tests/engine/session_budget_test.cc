// Tests of a Session's budget: an update that returned OK is in the state,
// even when micro-batching queued updates that would not apply together
// (engine/serving/internal/micro_batch.h), and the rows a set holds are bounded whether or
// not someone read between updates (RowLedger, engine/runtime/program.h).
#include <ATen/ATen.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "api/tally.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/session_testing.h"
#include "tests/testlib/status_matchers.h"

namespace tally {
namespace {

using ::tally::testing::ExpectSameValues;
using ::tally::testing::Slice;
using ::testing::HasSubstr;

NamedTensors BinaryRows(int64_t n, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return {{"preds", at::rand({n}, gen, at::kFloat)}, {"target", at::randint(0, 2, {n}, gen, at::kLong)}};
}

// Queues everything: flushes only at a read (no row, update or time limit
// is reached by the tests' updates).
SessionOptions Queueing(int64_t max_state_bytes) {
  SessionOptions o;
  o.max_state_bytes = max_state_bytes;
  o.micro_batching.max_rows = 1 << 30;
  o.micro_batching.max_updates = 1 << 30;
  o.micro_batching.max_delay_us = int64_t{1} << 40;
  o.now_ns = [] { return int64_t{0}; };
  return o;
}

std::unique_ptr<Session> MakeSession(const std::vector<std::string>& specs, const NamedTensors& rows,
                                     SessionOptions o) {
  auto sig = tally::SignatureOf(rows);
  EXPECT_TRUE(sig.ok()) << sig.status();
  auto s = tally::CreateDefaultSession(specs, *sig, std::move(o));
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

int64_t StateBytes(const std::vector<at::Tensor>& states) {
  int64_t b = 0;
  for (const auto& t : states) b += t.numel() * t.element_size();
  return b;
}

// Feeds `updates` batches of `batch` rows; every update that returned OK must
// be counted and in the values, every refused one counted as rejected.
void ExpectAcknowledgedUpdatesKept(const std::vector<std::string>& specs, const NamedTensors& all, int64_t batch,
                                   int updates, int64_t budget, int want_accepted) {
  std::unique_ptr<Session> s = MakeSession(specs, all, Queueing(budget));
  ASSERT_NE(s, nullptr);
  int accepted = 0;
  for (int k = 0; k < updates; ++k) {
    absl::Status st = s->Update(Slice(all, k * batch, batch));
    if (st.ok()) {
      // Accepted updates come first: what is refused stays refused.
      ASSERT_EQ(accepted, k) << "update " << k << " accepted after a refusal";
      ++accepted;
    } else {
      EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
      EXPECT_THAT(std::string(st.message()), HasSubstr("--max-state-bytes"));
    }
  }
  EXPECT_EQ(accepted, want_accepted);
  auto counters = s->Counters("default");
  ASSERT_TRUE(counters.ok()) << counters.status();
  EXPECT_EQ(counters->updates, accepted);
  EXPECT_EQ(counters->rows, accepted * batch);
  EXPECT_EQ(counters->rejected, updates - accepted);
  auto got = s->Compute("default");
  ASSERT_TRUE(got.ok()) << got.status();
  // The reference: the accepted rows, one update each, without queueing.
  std::unique_ptr<Session> ref = MakeSession(specs, all, {});
  ASSERT_NE(ref, nullptr);
  for (int k = 0; k < accepted; ++k) ASSERT_TRUE(ref->Update(Slice(all, k * batch, batch)).ok());
  auto want = ref->Compute("default");
  ASSERT_TRUE(want.ok()) << want.status();
  ExpectSameValues(*got, *want);
}

TEST(MicroBatchTest, QueuedUpdatesPastTheRowBudgetAreRefusedNotDropped) {
  // Verifies that with an exact AUROC, whose states keep every row, the
  // updates that fit the budget are queued and all counted, and the first
  // that would grow the states past it is refused at Update (before, every
  // queued update returned OK and the combined flush then dropped them all).
  const std::vector<std::string> specs = {"binary_auroc", "binary_average_precision"};
  const int64_t batch = 200;
  NamedTensors all = BinaryRows(14 * batch, 3);
  int64_t one = 0, per_batch = 0;
  {
    std::unique_ptr<Session> s = MakeSession(specs, all, {});
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->Update(Slice(all, 0, batch)).ok());
    one = StateBytes(*s->Snapshot("default"));
    ASSERT_TRUE(s->Update(Slice(all, batch, batch)).ok());
    per_batch = StateBytes(*s->Snapshot("default")) - one;
  }
  ASSERT_GT(per_batch, 0);
  // Ten batches and a half of rows: the budget holds the fixed-size states
  // and twice the rows (room for a buffer's copy while it grows).
  const int64_t fixed = one - per_batch;
  ExpectAcknowledgedUpdatesKept(specs, all, batch, 14, fixed + 2 * (10 * per_batch + per_batch / 2), 10);
}

TEST(MicroBatchTest, UpdatesThatFitAloneButNotTogetherAreAllApplied) {
  // Verifies that updates whose temporaries fit the budget alone but not
  // queued together are all accepted and all applied (the queue flushes
  // before it would hold more rows than one update may have).
  // Binned curves: fixed-size histograms, and per-row temporaries (each
  // score's bin) that grow with the rows of an update.
  const std::vector<std::string> specs = {"binary_auroc(thresholds=100)", "binary_average_precision(thresholds=100)"};
  const int64_t batch = 4096;
  NamedTensors all = BinaryRows(6 * batch, 5);
  // The smallest budget under which one update of `rows` is accepted.
  auto least_budget = [&](int64_t rows) {
    int64_t lo = 1, hi = int64_t{1} << 32;
    while (lo < hi) {
      const int64_t mid = lo + (hi - lo) / 2;
      SessionOptions o;
      o.max_state_bytes = mid;
      auto sig = tally::SignatureOf(all);
      auto s = tally::CreateDefaultSession(specs, *sig, o);
      if (s.ok() && (*s)->Update(Slice(all, 0, rows)).ok()) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    return lo;
  };
  const int64_t alone = least_budget(batch);
  ASSERT_LT(alone, least_budget(3 * batch)) << "the temporaries do not grow with the rows";
  ExpectAcknowledgedUpdatesKept(specs, all, batch, 6, alone, 6);
}

TEST(SessionBudgetTest, ReadsBetweenUpdatesDoNotLetMoreRowsIn) {
  // Verifies the server case: exact AUROC, updates of 1,500 rows under a
  // 100,000-byte budget; the first update refused is the same whether or
  // not the states were read (a read moves the shard's rows to the total,
  // which used to let the shard take as many again).
  const std::vector<std::string> specs = {"binary_auroc"};
  const int64_t batch = 1500;
  const int updates = 25;
  NamedTensors all = BinaryRows(updates * batch, 9);
  auto first_refused = [&](bool read_between) {
    SessionOptions o;
    o.max_state_bytes = 100000;
    std::unique_ptr<Session> s = MakeSession(specs, all, o);
    EXPECT_NE(s, nullptr);
    int refused = -1;
    for (int k = 0; k < updates && s != nullptr; ++k) {
      absl::Status st = s->Update(Slice(all, k * batch, batch));
      if (!st.ok()) {
        EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
        if (refused < 0) refused = k;
      } else {
        EXPECT_LT(refused, 0) << "update " << k << " accepted after a refusal";
      }
      if (read_between) {
        // A read harvests the shard into the total (a compute over this
        // many rows may itself be refused by the budget: not the point).
        EXPECT_TRUE(s->Counters("default").ok());
        (void)s->Compute("default");
      }
    }
    return refused;
  };
  const int without_reads = first_refused(false);
  EXPECT_GT(without_reads, 0);
  EXPECT_LT(without_reads, updates);
  EXPECT_EQ(first_refused(true), without_reads);
}

// AllocatedBytes: what the states' storages hold allocated (a cat state is a
// view of a larger buffer), each storage once.
int64_t AllocatedBytes(const std::vector<at::Tensor>& states) {
  std::vector<const void*> seen;
  int64_t b = 0;
  for (const auto& t : states) {
    if (!t.defined() || !t.has_storage()) continue;
    const void* key = t.storage().unsafeGetStorageImpl();
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
    seen.push_back(key);
    b += static_cast<int64_t>(t.storage().nbytes());
  }
  return b;
}

TEST(StateBudgetTest, CatBuffersNeverAllocatePastTheBudget) {
  // Verifies that the budget bounds what the states allocate, not only the
  // rows they hold: after every accepted update the buffers fit the budget,
  // and so do the old and the new buffers together while a buffer grows
  // (before, buffers doubled past the budget: up to 2-3x it).
  for (const char* spec : {"binary_auroc", "retrieval_reciprocal_rank"}) {
    SCOPED_TRACE(spec);
    const std::vector<std::string> specs = {spec};
    const int64_t batch = 700;
    NamedTensors all = BinaryRows(60 * batch, 21);
    if (std::string(spec) == "retrieval_reciprocal_rank") {
      all.emplace_back("indexes", at::arange(60 * batch, at::kLong).floor_divide(10));
    }
    for (int64_t budget : {int64_t{50000}, int64_t{123457}, int64_t{300000}}) {
      SCOPED_TRACE(budget);
      EvalOptions o;
      o.max_state_bytes = budget;
      auto p = tally::PrepareEval(specs, all, o);
      ASSERT_TRUE(p.ok()) << p.status();
      Program& program = *p->program;
      int accepted = 0;
      int64_t held = AllocatedBytes(program.states());
      for (int k = 0; k < 60; ++k) {
        std::vector<const void*> before;
        for (const auto& t : program.states()) before.push_back(t.storage().unsafeGetStorageImpl());
        absl::Status st = tally::FeedRows(program, p->used, k * batch, (k + 1) * batch, batch);
        if (!st.ok()) {
          EXPECT_EQ(st.code(), absl::StatusCode::kResourceExhausted) << st;
          EXPECT_EQ(AllocatedBytes(program.states()), held);
          break;
        }
        ++accepted;
        const int64_t now = AllocatedBytes(program.states());
        EXPECT_LE(now, budget) << "after update " << k;
        // A storage that changed was copied into a new one: both were held.
        int64_t peak = held;
        for (size_t i = 0; i < before.size(); ++i) {
          const at::Tensor& t = program.states()[i];
          if (t.storage().unsafeGetStorageImpl() != before[i]) peak += static_cast<int64_t>(t.storage().nbytes());
        }
        EXPECT_LE(peak, budget) << "while update " << k << " grew a buffer";
        held = now;
      }
      // The rule refuses at twice the rows held: most of the budget is used.
      EXPECT_GT(accepted, 0);
      EXPECT_LT(accepted, 60);
    }
  }
}

}  // namespace
}  // namespace tally
