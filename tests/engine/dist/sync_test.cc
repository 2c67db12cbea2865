// Tests of dist::Sync and its launcher over real Gloo process groups in
// forked ranks on loopback: what Sync leaves behind (a synced copy; local
// states untouched; updates continue), how many collectives it issues, and
// the faults — a killed rank, a rank that never joins, a rank that never
// syncs, ranks with different metric sets — each a clear absl::Status on
// every surviving rank within the configured timeout, never a hang or a
// wrong number.
#include <ATen/ATen.h>
#include <signal.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/dist/gloo_group.h"
#include "engine/dist/launch.h"
#include "engine/dist/sync.h"
#include "engine/runtime/compiler.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/engine/dist/dist_testing.h"
#include "tests/testlib/random_inputs.h"
#include "tests/testlib/status_matchers.h"

namespace tally {
namespace {

using ::tally::testing::Form;
using ::tally::testing::StatusIs;
using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr absl::Duration kTimeout = absl::Seconds(2);

const std::vector<std::string> kCls = {
    "multiclass_accuracy(num_classes=10)", "multiclass_precision(num_classes=10, average=macro)",
    "multiclass_recall(num_classes=10, average=macro)", "multiclass_f1_score(num_classes=10, average=macro)",
    "multiclass_confusion_matrix(num_classes=10)"};

std::unique_ptr<Program> MustCompile(const std::vector<std::string>& specs, const Form& form) {
  auto p = testing::CompileFor(specs, form, CompileOptions{});
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? std::move(*p) : nullptr;
}

dist::LaunchOptions Options(bool stop_all = false) {
  dist::LaunchOptions o;
  o.timeout = kTimeout;
  o.stop_all_on_failure = stop_all;
  return o;
}

// Reference computes `p` over rows [begin, end) in one process.
NamedTensors Reference(const std::vector<std::string>& specs, const Form& form, const NamedTensors& data, int64_t begin,
                       int64_t end) {
  auto p = MustCompile(specs, form);
  if (!p) return {};
  NamedTensors used = testing::Used(*p, data);
  EXPECT_TRUE(testing::FeedRows(*p, used, begin, end, 7).ok());
  auto v = p->Compute();
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : NamedTensors{};
}

// Check turns a comparison into the rank's status.
absl::Status Check(const std::string& differences, absl::string_view when) {
  if (differences.empty()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(when, ": ", differences));
}

#define RANK_RETURN_IF_ERROR(expr)               \
  do {                                           \
    absl::Status rank_status_ = (expr);          \
    if (!rank_status_.ok()) return rank_status_; \
  } while (0)

void ExpectAllOk(const absl::StatusOr<std::vector<dist::RankOutcome>>& outcomes) {
  ASSERT_TRUE(outcomes.ok()) << outcomes.status();
  for (const auto& o : *outcomes) EXPECT_TRUE(o.status.ok()) << "rank " << o.rank << ": " << o.status;
}

TEST(Sync, SyncedCopyLeavesLocalStatesAndUpdatesContinue) {
  // Verifies that after Sync, Compute gives the result over every rank's
  // rows while the local states stay bit for bit as they were; that the next
  // Update drops the synced copy and continues from the local states (so
  // Compute is this rank's own result again); and that a second Sync covers
  // every row of both phases.
  const Form form{"mc_f", 10};
  at::Generator gen = at::detail::createCPUGenerator(11);
  const NamedTensors data = testing::MakeBatch(form, 60, gen);
  const NamedTensors want_first = Reference(kCls, form, data, 0, 40);
  const NamedTensors want_all = Reference(kCls, form, data, 0, 60);
  auto program = MustCompile(kCls, form);
  auto local_only = MustCompile(kCls, form);
  ASSERT_TRUE(program && local_only);
  const int world = 3;
  auto outcomes = dist::RunRanks(world, Options(), [&](const dist::Rendezvous& rv) -> absl::StatusOr<std::string> {
    auto group = dist::ConnectGloo(rv);
    if (!group.ok()) return group.status();
    NamedTensors used = testing::Used(*program, data);
    auto [b1, e1] = dist::ShardRange(40, world, rv.rank);
    auto [b2, e2] = dist::ShardRange(20, world, rv.rank);
    RANK_RETURN_IF_ERROR(testing::FeedRows(*program, used, b1, e1, 4));
    RANK_RETURN_IF_ERROR(testing::FeedRows(*local_only, used, b1, e1, 4));
    std::vector<at::Tensor> before;
    for (const auto& s : program->states()) before.push_back(s.clone());
    auto stats = dist::Sync(*program, (*group)->pg(), {kTimeout});
    if (!stats.ok()) return stats.status();
    if (!program->synced()) return absl::InternalError("not synced after Sync");
    auto v = program->Compute();
    if (!v.ok()) return v.status();
    RANK_RETURN_IF_ERROR(Check(testing::CompareResults(*v, want_first, 1e-12), "synced compute"));
    for (size_t i = 0; i < before.size(); ++i) {
      if (!at::equal(before[i], program->states()[i])) return absl::InternalError("Sync changed a local state");
    }
    RANK_RETURN_IF_ERROR(testing::FeedRows(*program, used, 40 + b2, 40 + e2, 4));
    RANK_RETURN_IF_ERROR(testing::FeedRows(*local_only, used, 40 + b2, 40 + e2, 4));
    if (program->synced()) return absl::InternalError("still synced after an Update");
    auto mine = program->Compute();
    auto want_mine = local_only->Compute();
    if (!mine.ok() || !want_mine.ok()) return absl::InternalError("local compute failed");
    RANK_RETURN_IF_ERROR(Check(testing::CompareResults(*mine, *want_mine, 0), "local compute after update"));
    stats = dist::Sync(*program, (*group)->pg(), {kTimeout});
    if (!stats.ok()) return stats.status();
    v = program->Compute();
    if (!v.ok()) return v.status();
    RANK_RETURN_IF_ERROR(Check(testing::CompareResults(*v, want_all, 1e-12), "second sync"));
    program->Unsync();
    v = program->Compute();
    if (!v.ok()) return v.status();
    RANK_RETURN_IF_ERROR(Check(testing::CompareResults(*v, *want_mine, 0), "after Unsync"));
    return std::string("ok");
  });
  ExpectAllOk(outcomes);
}

TEST(Sync, SetSyncedIsCheckedAndEveryStateChangeDropsIt) {
  // Verifies the Program side of Sync without processes: SetSynced rejects a
  // copy of the wrong size or dtype (Internal), Compute reads an installed
  // copy, and Reset, Merge and LoadState drop it like Update does.
  const Form form{"mc_f", 10};
  at::Generator gen = at::detail::createCPUGenerator(15);
  const NamedTensors data = testing::MakeBatch(form, 24, gen);
  auto a = MustCompile(kCls, form);
  auto b = MustCompile(kCls, form);
  ASSERT_TRUE(a && b);
  NamedTensors used = testing::Used(*a, data);
  ASSERT_THAT(testing::FeedRows(*a, used, 0, 10, 5), testing::IsOk());
  ASSERT_THAT(testing::FeedRows(*b, used, 10, 24, 5), testing::IsOk());
  EXPECT_THAT(a->SetSynced({}), StatusIs(absl::StatusCode::kInternal, HasSubstr("needs")));
  std::vector<at::Tensor> wrong;
  for (const auto& t : a->states()) wrong.push_back(t.to(at::kFloat));
  EXPECT_THAT(a->SetSynced(wrong), StatusIs(absl::StatusCode::kInternal, HasSubstr("is not a")));
  EXPECT_FALSE(a->synced());
  auto want_b = b->Compute();
  ASSERT_TRUE(want_b.ok());
  auto use_b = [&] {
    ASSERT_THAT(a->SetSynced(b->states()), testing::IsOk());
    ASSERT_TRUE(a->synced());
    auto v = a->Compute();
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ(testing::CompareResults(*v, *want_b, 0), "");
  };
  use_b();
  auto saved = a->SaveState();
  ASSERT_TRUE(saved.ok());
  EXPECT_THAT(a->LoadState(*saved), testing::IsOk());
  EXPECT_FALSE(a->synced());
  use_b();
  EXPECT_THAT(a->Merge(*b), testing::IsOk());
  EXPECT_FALSE(a->synced());
  use_b();
  EXPECT_THAT(a->Reset(), testing::IsOk());
  EXPECT_FALSE(a->synced());
}

TEST(Sync, ClassificationCollectionIsTwoCollectives) {
  // Verifies the sync_cls budget: the cls_small collection (accuracy,
  // precision, recall, F1, confusion matrix; one int64 confusion matrix and
  // its check counter) syncs with one header allgather and one allreduce.
  const Form form{"mc_f", 10};
  at::Generator gen = at::detail::createCPUGenerator(12);
  const NamedTensors data = testing::MakeBatch(form, 64, gen);
  auto program = MustCompile(kCls, form);
  ASSERT_TRUE(program);
  auto outcomes = dist::RunRanks(2, Options(), [&](const dist::Rendezvous& rv) -> absl::StatusOr<std::string> {
    auto group = dist::ConnectGloo(rv);
    if (!group.ok()) return group.status();
    auto [b, e] = dist::ShardRange(64, 2, rv.rank);
    RANK_RETURN_IF_ERROR(testing::FeedRows(*program, testing::Used(*program, data), b, e, 32));
    auto stats = dist::Sync(*program, (*group)->pg(), {kTimeout});
    if (!stats.ok()) return stats.status();
    return absl::StrCat(stats->collectives);
  });
  ExpectAllOk(outcomes);
  for (const auto& o : *outcomes) EXPECT_EQ(o.output, "2") << "rank " << o.rank;
}

TEST(Sync, ManyCatStatesExchangeTheirRowCountsSeparately) {
  // Verifies the path for more cat states than the header holds row counts
  // for (11): 12 exact binary_auroc with different ignore_index values (24
  // cat states, uneven shards, an empty rank) sync to the one-process result
  // with one more allgather for the row counts.
  std::vector<std::string> specs;
  for (int k = 2; k < 14; ++k) specs.push_back(absl::StrCat("binary_auroc(ignore_index=", k, ")"));
  const Form form{"bin_p"};
  at::Generator gen = at::detail::createCPUGenerator(16);
  const NamedTensors data = testing::MakeBatch(form, 5, gen);
  auto program = MustCompile(specs, form);
  ASSERT_TRUE(program);
  int cats = 0;
  for (const auto& d : program->module().states) cats += d.reducer == ir::Reducer::kCat;
  ASSERT_GT(cats, 11);
  const int world = 6;  // 5 rows: rank 5 has none
  NamedTensors used = testing::Used(*program, data);
  auto reference = MustCompile(specs, form);
  for (int r = 0; r < world; ++r) {
    auto [b, e] = dist::ShardRange(5, world, r);
    ASSERT_THAT(testing::FeedRows(*reference, used, b, e, 2), testing::IsOk());
  }
  auto want = reference->Compute();
  ASSERT_TRUE(want.ok()) << want.status();
  auto outcomes = dist::RunRanks(world, Options(), [&](const dist::Rendezvous& rv) -> absl::StatusOr<std::string> {
    auto group = dist::ConnectGloo(rv);
    if (!group.ok()) return group.status();
    auto [b, e] = dist::ShardRange(5, world, rv.rank);
    RANK_RETURN_IF_ERROR(testing::FeedRows(*program, used, b, e, 2));
    auto stats = dist::Sync(*program, (*group)->pg(), {kTimeout});
    if (!stats.ok()) return stats.status();
    for (size_t i = 0; i < reference->states().size(); ++i) {
      if (!testing::Close(program->synced_states()[i], reference->states()[i], 0)) {
        return absl::InternalError(absl::StrCat("state ", program->module().states[i].name, " differs"));
      }
    }
    auto v = program->Compute();
    if (!v.ok()) return v.status();
    RANK_RETURN_IF_ERROR(Check(testing::CompareResults(*v, *want, 1e-12), "results"));
    return absl::StrCat(stats->collectives);
  });
  ExpectAllOk(outcomes);
  for (const auto& o : *outcomes) EXPECT_EQ(o.output, "4") << "rank " << o.rank;  // header, counts, sums, bytes
}

TEST(Sync, WorldSizeOneNeedsNoCollective) {
  // Verifies that a group of one syncs without any collective and that the
  // synced result is the local one.
  const Form form{"mc_f", 10};
  at::Generator gen = at::detail::createCPUGenerator(13);
  const NamedTensors data = testing::MakeBatch(form, 20, gen);
  auto program = MustCompile(kCls, form);
  ASSERT_TRUE(program);
  auto outcomes = dist::RunRanks(1, Options(), [&](const dist::Rendezvous& rv) -> absl::StatusOr<std::string> {
    auto group = dist::ConnectGloo(rv);
    if (!group.ok()) return group.status();
    RANK_RETURN_IF_ERROR(testing::FeedRows(*program, testing::Used(*program, data), 0, 20, 6));
    auto want = program->Compute();
    auto stats = dist::Sync(*program, (*group)->pg(), {kTimeout});
    if (!stats.ok()) return stats.status();
    auto got = program->Compute();
    if (!want.ok() || !got.ok()) return absl::InternalError("compute failed");
    RANK_RETURN_IF_ERROR(Check(testing::CompareResults(*got, *want, 0), "world size 1"));
    return absl::StrCat(stats->collectives);
  });
  ExpectAllOk(outcomes);
  EXPECT_EQ((*outcomes)[0].output, "0");
}

TEST(SyncFaults, KilledRankIsAClearErrorOnEveryOtherRank) {
  // Verifies that when a rank is killed after joining, every other rank's
  // Sync returns Unavailable or DeadlineExceeded naming the step, within the
  // timeout, and that the launcher reports the killed rank as the cause.
  const Form form{"mc_f", 10};
  at::Generator gen = at::detail::createCPUGenerator(14);
  const NamedTensors data = testing::MakeBatch(form, 30, gen);
  auto program = MustCompile(kCls, form);
  ASSERT_TRUE(program);
  const absl::Time start = absl::Now();
  auto outcomes = dist::RunRanks(3, Options(), [&](const dist::Rendezvous& rv) -> absl::StatusOr<std::string> {
    auto group = dist::ConnectGloo(rv);
    if (!group.ok()) return group.status();
    if (rv.rank == 1) raise(SIGKILL);
    RANK_RETURN_IF_ERROR(testing::FeedRows(*program, testing::Used(*program, data), 0, 30, 8));
    auto stats = dist::Sync(*program, (*group)->pg(), {kTimeout});
    if (!stats.ok()) return stats.status();
    return std::string("synced");
  });
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  ASSERT_TRUE(outcomes.ok()) << outcomes.status();
  EXPECT_TRUE((*outcomes)[1].abnormal);
  EXPECT_THAT((*outcomes)[1].status.message(), HasSubstr("killed by signal 9"));
  // A survivor may still be in the join's final barrier when rank 1 dies, so
  // the failing step is the join or the sync; either way a clear error naming
  // the rank, never a crash (a SIGPIPE here once killed survivors).
  for (int r : {0, 2}) {
    EXPECT_FALSE((*outcomes)[r].abnormal) << r << ": " << (*outcomes)[r].status;
    const auto names_rank = HasSubstr(absl::StrCat("rank ", r, " of 3"));
    EXPECT_THAT((*outcomes)[r].status, AnyOf(StatusIs(absl::StatusCode::kUnavailable, names_rank),
                                             StatusIs(absl::StatusCode::kDeadlineExceeded, names_rank)));
    EXPECT_THAT((*outcomes)[r].status.message(),
                AnyOf(HasSubstr("sync (rank"), HasSubstr("joining the process group")));
  }
  EXPECT_THAT(dist::FirstFailure(*outcomes), StatusIs(absl::StatusCode::kAborted, HasSubstr("rank 1 of 3: died")));
  EXPECT_LT(seconds, 20) << "the survivors should fail within the 2 s timeout";
}

TEST(SyncFaults, RankThatNeverJoinsIsADeadlineError) {
  // Verifies that a rank that never joins the group gives the others a
  // DeadlineExceeded status naming the rendezvous after the configured
  // timeout (2 s here, not the 30 s default), not a hang.
  const absl::Time start = absl::Now();
  auto outcomes = dist::RunRanks(2, Options(), [&](const dist::Rendezvous& rv) -> absl::StatusOr<std::string> {
    if (rv.rank == 1) return std::string("left without joining");
    auto group = dist::ConnectGloo(rv);
    if (!group.ok()) return group.status();
    return std::string("joined");
  });
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  ASSERT_TRUE(outcomes.ok()) << outcomes.status();
  EXPECT_THAT((*outcomes)[0].status,
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       AllOf(HasSubstr("joining the process group at 127.0.0.1:"), HasSubstr("rank 0 of 2"),
                             HasSubstr("not every rank joined within 2s"))));
  EXPECT_GE((*outcomes)[0].seconds, 1.5);
  EXPECT_LT(seconds, 15);
}

TEST(SyncFaults, RankThatNeverSyncsIsADeadlineError) {
  // Verifies that a rank that joins but never calls Sync leaves the others'
  // Sync with DeadlineExceeded after the timeout; the launcher then stops
  // the straggler (stop_all_on_failure) instead of waiting for it.
  const Form form{"mc_f", 10};
  auto program = MustCompile(kCls, form);
  ASSERT_TRUE(program);
  const absl::Time start = absl::Now();
  auto outcomes =
      dist::RunRanks(2, Options(/*stop_all=*/true), [&](const dist::Rendezvous& rv) -> absl::StatusOr<std::string> {
        auto group = dist::ConnectGloo(rv);
        if (!group.ok()) return group.status();
        if (rv.rank == 1) {
          sleep(60);
          return std::string("woke up");
        }
        auto stats = dist::Sync(*program, (*group)->pg(), {kTimeout});
        if (!stats.ok()) return stats.status();
        return std::string("synced");
      });
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  ASSERT_TRUE(outcomes.ok()) << outcomes.status();
  EXPECT_THAT((*outcomes)[0].status,
              AnyOf(StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("allgather of the state header")),
                    StatusIs(absl::StatusCode::kUnavailable, HasSubstr("allgather of the state header"))));
  EXPECT_TRUE((*outcomes)[1].stopped);
  EXPECT_THAT(dist::FirstFailure(*outcomes), StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("rank 0 of 2")));
  EXPECT_LT(seconds, 15);
}

TEST(SyncFaults, DifferentMetricSetsAreAClearErrorNotAWrongNumber) {
  // Verifies that ranks whose programs differ — another metric set, or the
  // same metric with another argument (the state layout is the same there) —
  // fail on every rank with FailedPrecondition before any state moves, and
  // that a program on another rank with the same metrics syncs fine.
  const Form form{"mc_f", 10};
  auto cls = MustCompile(kCls, form);
  auto fewer = MustCompile({"multiclass_accuracy(num_classes=10)"}, form);
  auto micro = MustCompile({"multiclass_accuracy(num_classes=10, average=micro)"}, form);
  auto macro = MustCompile({"multiclass_accuracy(num_classes=10, average=macro)"}, form);
  ASSERT_TRUE(cls && fewer && micro && macro);
  EXPECT_NE(dist::SyncFingerprint(*micro), dist::SyncFingerprint(*macro));
  for (auto [a, b] : {std::pair<Program*, Program*>{cls.get(), fewer.get()}, {micro.get(), macro.get()}}) {
    // Init-captures: clang 14 cannot capture a structured binding.
    auto outcomes =
        dist::RunRanks(2, Options(), [&, a = a, b = b](const dist::Rendezvous& rv) -> absl::StatusOr<std::string> {
          auto group = dist::ConnectGloo(rv);
          if (!group.ok()) return group.status();
          Program& p = rv.rank == 0 ? *a : *b;
          auto stats = dist::Sync(p, (*group)->pg(), {kTimeout});
          if (!stats.ok()) return stats.status();
          return std::string("synced");
        });
    ASSERT_TRUE(outcomes.ok()) << outcomes.status();
    for (const auto& o : *outcomes) {
      EXPECT_THAT(o.status, StatusIs(absl::StatusCode::kFailedPrecondition,
                                     AllOf(HasSubstr("ranks 0 and 1 compiled different programs"),
                                           HasSubstr("same metrics with the same arguments"))))
          << "rank " << o.rank;
    }
  }
}

TEST(Launch, FirstFailurePrefersTheRootCause) {
  // Verifies the order in which RunRanks' outcomes explain a failed run: a
  // rank's own error, then a rank that died, then communication errors, then
  // ranks stopped by the launcher; OK when every rank succeeded; and that an
  // error every failed rank shares comes without a rank prefix.
  std::vector<dist::RankOutcome> o(4);
  for (int r = 0; r < 4; ++r) o[r].rank = r;
  EXPECT_TRUE(dist::FirstFailure(o).ok());
  o[3].status = absl::DeadlineExceededError("stopped");
  o[3].stopped = o[3].abnormal = true;
  EXPECT_THAT(dist::FirstFailure(o), StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("rank 3 of 4: stopped")));
  o[0].status = absl::UnavailableError("sync (rank 0 of 4): allgather failed");
  EXPECT_THAT(dist::FirstFailure(o), StatusIs(absl::StatusCode::kUnavailable, "sync (rank 0 of 4): allgather failed"));
  o[2].status = absl::AbortedError("died before reporting");
  o[2].abnormal = true;
  EXPECT_THAT(dist::FirstFailure(o), StatusIs(absl::StatusCode::kAborted, "rank 2 of 4: died before reporting"));
  o[1].status = absl::InvalidArgumentError("multiclass_accuracy: input 'preds': wrong dtype");
  EXPECT_THAT(dist::FirstFailure(o),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank 1 of 4: multiclass_accuracy")));
  // The same error on every failed rank is the run's error, unprefixed.
  std::vector<dist::RankOutcome> same(3);
  for (int r = 0; r < 3; ++r) {
    same[r].rank = r;
    same[r].status = absl::InvalidArgumentError("multiclass_accuracy: target: 2 values outside [0, 3)");
  }
  same[2].status = absl::OkStatus();
  EXPECT_THAT(dist::FirstFailure(same),
              StatusIs(absl::StatusCode::kInvalidArgument, "multiclass_accuracy: target: 2 values outside [0, 3)"));
  // Ranks stopped by the launcher reported nothing: the error stays unprefixed.
  same[1].status = absl::DeadlineExceededError("stopped");
  same[1].stopped = same[1].abnormal = true;
  EXPECT_THAT(dist::FirstFailure(same),
              StatusIs(absl::StatusCode::kInvalidArgument, "multiclass_accuracy: target: 2 values outside [0, 3)"));
}

TEST(Launch, ShardsAreContiguousAndAsEqualAsPossible) {
  // Verifies ShardRange: shards tile the rows in rank order, sizes differ by
  // at most one, and ranks past the rows get empty shards.
  for (int64_t rows : {0, 1, 2, 7, 10, 37}) {
    for (int w : {1, 2, 3, 4}) {
      int64_t next = 0;
      for (int r = 0; r < w; ++r) {
        auto [b, e] = dist::ShardRange(rows, w, r);
        EXPECT_EQ(b, next);
        EXPECT_GE(e - b, rows / w);
        EXPECT_LE(e - b, rows / w + 1);
        next = e;
      }
      EXPECT_EQ(next, rows);
    }
  }
}

}  // namespace
}  // namespace tally
