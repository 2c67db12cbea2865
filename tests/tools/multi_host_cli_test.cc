// `tally eval` as ranks of a job it did not start, and `tally merge` of
// state files (docs/cli.md, docs/distributed.md). Each rank is a separate
// `tally` process started the way torchrun or a user would start it (flags,
// or torchrun's RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT), bound to its own
// loopback address (127.0.0.2, 127.0.0.3, ...) as if on its own host; rank 0
// hosts the rendezvous store. What rank 0 prints must equal one process
// over every rank's rows.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/io/npy.h"
#include "gtest/gtest.h"
#include "tests/tools/cli_testing.h"
#include "tests/tools/server_process.h"

namespace tally {
namespace {

using ::tally::testing::Invocation;
using ::tally::testing::OneCleanErrorLine;
using ::tally::testing::RunTally;
using ::tally::testing::ServerProcess;
using ::tally::testing::TallyBinary;

constexpr int kClasses = 5;
const std::vector<std::string> kSpecs = {"multiclass_auroc(num_classes=5)", "multiclass_f1_score(num_classes=5)",
                                         "multiclass_accuracy(num_classes=5, average=none)"};

// FreePort is a port nothing listens on at 127.0.0.2 right now.
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = 0;
  inet_pton(AF_INET, "127.0.0.2", &a.sin_addr);
  socklen_t len = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

class MultiHostTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(TallyBinary().empty());
    dir_ = absl::StrCat(testing::TestTmpDir(), "/", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(system(absl::StrCat("mkdir -p ", dir_).c_str()), 0);
    // Scores with ties (two decimals) and labels.
    std::mt19937 rng(42);
    for (int64_t r = 0; r < kRows; ++r) {
      for (int c = 0; c < kClasses; ++c) preds_.push_back(static_cast<float>(rng() % 100) / 100.0f);
      target_.push_back(static_cast<int64_t>(rng() % kClasses));
    }
  }

  // Write writes rows [begin, end) as `<name>_preds.npy` / `_target.npy`.
  void Write(const std::string& name, int64_t begin, int64_t end) {
    ASSERT_TRUE(testing::WriteNpyFile(Path(name + "_preds.npy"), io::NpyDType::kFloat32, {end - begin, kClasses},
                                      preds_.data() + begin * kClasses, (end - begin) * kClasses * sizeof(float))
                    .ok());
    ASSERT_TRUE(testing::WriteNpyFile(Path(name + "_target.npy"), io::NpyDType::kInt64, {end - begin},
                                      target_.data() + begin, (end - begin) * sizeof(int64_t))
                    .ok());
  }
  std::string Path(const std::string& file) const { return absl::StrCat(dir_, "/", file); }
  std::vector<std::string> Eval(const std::string& name, const std::vector<std::string>& specs = kSpecs) const {
    std::vector<std::string> args = {"eval",
                                     "--format",
                                     "json",
                                     "--input",
                                     "preds=" + Path(name + "_preds.npy"),
                                     "--input",
                                     "target=" + Path(name + "_target.npy")};
    for (const std::string& s : specs) args.insert(args.end(), {"--metric", s});
    return args;
  }
  // OneProcess is what one process prints over every row.
  std::string OneProcess() {
    Write("all", 0, kRows);
    Invocation r = RunTally(Eval("all"));
    EXPECT_EQ(r.exit_code, 0) << r;
    return r.out;
  }
  // Rank starts `tally eval` as rank r of `world` with `args` (environment
  // `env`, NAME=VALUE, through env(1)).
  static std::unique_ptr<ServerProcess> Rank(std::vector<std::string> args, const std::vector<std::string>& env = {}) {
    if (env.empty()) return ServerProcess::Spawn(TallyBinary(), args);
    std::vector<std::string> with_env = env;
    with_env.push_back(TallyBinary());
    with_env.insert(with_env.end(), args.begin(), args.end());
    return ServerProcess::Spawn("/usr/bin/env", with_env);
  }
  static std::vector<std::string> RankFlags(int r, int world, int port, const std::string& timeout = "60") {
    return {"--rank",         absl::StrCat(r), "--world-size",     absl::StrCat(world), "--master-addr",
            "127.0.0.2",      "--master-port", absl::StrCat(port), "--local-addr",      absl::StrCat("127.0.0.", r + 2),
            "--sync-timeout", timeout};
  }

  static constexpr int64_t kRows = 203;
  std::string dir_;
  std::vector<float> preds_;
  std::vector<int64_t> target_;
};

TEST_F(MultiHostTest, RanksWithTheirOwnFilesPrintTheOneProcessResult) {
  // Verifies that W = 2 and 3 ranks, each reading its own uneven shard
  // (`{rank}` in the paths; one shard holds a single row), print on rank 0
  // exactly one process's JSON, and nothing on the others, all exiting 0.
  const std::string want = OneProcess();
  for (int world : {2, 3}) {
    SCOPED_TRACE(world);
    const std::vector<int64_t> cuts =
        world == 2 ? std::vector<int64_t>{0, 1, kRows} : std::vector<int64_t>{0, 90, 91, kRows};
    for (int r = 0; r < world; ++r) Write(absl::StrCat("w", world, "_shard", r), cuts[r], cuts[r + 1]);
    const int port = FreePort();
    std::vector<std::unique_ptr<ServerProcess>> ranks;
    for (int r = 0; r < world; ++r) {
      std::vector<std::string> args = Eval(absl::StrCat("w", world, "_shard{rank}"));
      for (const std::string& f : RankFlags(r, world, port)) args.push_back(f);
      ranks.push_back(Rank(args));
    }
    for (int r = 0; r < world; ++r) {
      Invocation done = ranks[r]->Wait(std::chrono::seconds(120));
      EXPECT_EQ(done.exit_code, 0) << done;
      EXPECT_EQ(done.out, r == 0 ? want : "") << "rank " << r;
    }
  }
}

TEST_F(MultiHostTest, TorchrunVariablesAndASharedFile) {
  // Verifies that 3 ranks configured only by torchrun's variables, reading
  // the same files, take contiguous shards and print the one-process result
  // on rank 0, whose --save-state holds every rank's rows (tally merge of it
  // prints the same).
  const std::string want = OneProcess();
  const int port = FreePort();
  std::vector<std::unique_ptr<ServerProcess>> ranks;
  for (int r = 0; r < 3; ++r) {
    std::vector<std::string> args = Eval("all");
    args.insert(args.end(), {"--local-addr", absl::StrCat("127.0.0.", r + 2), "--save-state", Path("job.st")});
    ranks.push_back(Rank(
        args, {absl::StrCat("RANK=", r), "WORLD_SIZE=3", "MASTER_ADDR=127.0.0.2", absl::StrCat("MASTER_PORT=", port)}));
  }
  for (int r = 0; r < 3; ++r) {
    Invocation done = ranks[r]->Wait(std::chrono::seconds(120));
    EXPECT_EQ(done.exit_code, 0) << done;
    EXPECT_EQ(done.out, r == 0 ? want : "") << "rank " << r;
  }
  Invocation merged = RunTally({"merge", "--format", "json", Path("job.st")});
  EXPECT_EQ(merged.exit_code, 0) << merged;
  EXPECT_EQ(merged.out, want);
}

TEST_F(MultiHostTest, UnderTorchrunTheAgentServesTheStore) {
  // Verifies that with TORCHELASTIC_USE_AGENT_STORE=True (torchrun's
  // elastic agent already serves the store at MASTER_ADDR:MASTER_PORT, here
  // a stand-in) rank 0 does not start its own, every rank joins as a client,
  // and rank 0 prints the one-process result; Gloo binds the interface
  // GLOO_SOCKET_IFNAME names (lo) when no --local-addr is given.
  const std::string want = OneProcess();
  auto agent = ServerProcess::Spawn(testing::FindBinary("tests/tools/agent_store"), {"127.0.0.2"});
  ASSERT_TRUE(agent->WaitUntilListening().ok());
  std::vector<std::unique_ptr<ServerProcess>> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(
        Rank(Eval("all"), {"GLOO_SOCKET_IFNAME=lo", absl::StrCat("RANK=", r), absl::StrCat("LOCAL_RANK=", r),
                           "WORLD_SIZE=2", "MASTER_ADDR=127.0.0.2", absl::StrCat("MASTER_PORT=", agent->port()),
                           "TORCHELASTIC_USE_AGENT_STORE=True", "TORCHELASTIC_RESTART_COUNT=0"}));
  }
  for (int r = 0; r < 2; ++r) {
    Invocation done = ranks[r]->Wait(std::chrono::seconds(120));
    EXPECT_EQ(done.exit_code, 0) << done;
    EXPECT_EQ(done.out, r == 0 ? want : "") << "rank " << r;
  }
}

TEST_F(MultiHostTest, ARankThatNeverArrivesIsOneLineOnTheOthers) {
  // Verifies that with rank 2 of 3 never started, ranks 0 and 1 each end
  // with one error line naming the rendezvous after --sync-timeout.
  Write("all", 0, kRows);
  const int port = FreePort();
  std::vector<std::unique_ptr<ServerProcess>> ranks;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> args = Eval("all");
    for (const std::string& f : RankFlags(r, 3, port, "4")) args.push_back(f);
    ranks.push_back(Rank(args));
  }
  for (int r = 0; r < 2; ++r) {
    Invocation done = ranks[r]->Wait(std::chrono::seconds(60));
    EXPECT_TRUE(OneCleanErrorLine(
        done, {absl::StrCat("127.0.0.2:", port), absl::StrCat("rank ", r, " of 3"), "not every rank joined within 4s"}))
        << done;
  }
}

TEST_F(MultiHostTest, ARankWithOtherMetricsIsNamed) {
  // Verifies that a rank compiled for other metrics stops both ranks with
  // one line saying the programs differ.
  Write("all", 0, kRows);
  const int port = FreePort();
  std::vector<std::unique_ptr<ServerProcess>> ranks;
  for (int r = 0; r < 2; ++r) {
    std::vector<std::string> args = Eval("all", r == 0 ? kSpecs : std::vector<std::string>{kSpecs[1]});
    for (const std::string& f : RankFlags(r, 2, port)) args.push_back(f);
    ranks.push_back(Rank(args));
  }
  for (int r = 0; r < 2; ++r) {
    Invocation done = ranks[r]->Wait(std::chrono::seconds(120));
    EXPECT_TRUE(OneCleanErrorLine(done, {"compiled different programs"})) << done;
  }
}

TEST_F(MultiHostTest, RankFlagsAreChecked) {
  // Verifies the one-line errors of inconsistent rank settings.
  Write("all", 0, kRows);
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = Eval("all");
    args.insert(args.end(), extra.begin(), extra.end());
    return RunTally(args);
  };
  EXPECT_TRUE(
      OneCleanErrorLine(run({"--rank", "3", "--world-size", "3", "--master-addr", "127.0.0.2", "--master-port", "1"}),
                        {"--rank 3", "--world-size 3"}));
  EXPECT_TRUE(OneCleanErrorLine(run({"--rank", "0", "--world-size", "2", "--master-port", "1"}), {"--master-addr"}));
  EXPECT_TRUE(OneCleanErrorLine(run({"--rank", "0", "--world-size", "2", "--master-addr", "h"}), {"--master-port"}));
  EXPECT_TRUE(OneCleanErrorLine(run({"--master-addr", "127.0.0.2"}), {"--master-addr", "--rank"}));
  EXPECT_TRUE(OneCleanErrorLine(run({"--format", "none"}), {"--save-state"}));
}

TEST_F(MultiHostTest, MergeOfShardStateFilesEqualsOneProcess) {
  // Verifies that per-shard state files (`eval --save-state --format
  // none`, one shard empty) merged in any order, in table and JSON form and
  // as a merge of a merge, print what one process prints; and that corrupt
  // and foreign files are one line naming the file, with nothing printed.
  const std::string want = OneProcess();
  Invocation table =
      RunTally({"eval", "--input", "preds=" + Path("all_preds.npy"), "--input", "target=" + Path("all_target.npy"),
                "--metric", kSpecs[0], "--metric", kSpecs[1], "--metric", kSpecs[2]});
  ASSERT_EQ(table.exit_code, 0) << table;
  const std::vector<int64_t> cuts = {0, 50, 50, 120, kRows};
  std::vector<std::string> files;
  for (size_t s = 0; s + 1 < cuts.size(); ++s) {
    Write(absl::StrCat("s", s), cuts[s], cuts[s + 1]);
    std::vector<std::string> args = Eval(absl::StrCat("s", s));
    files.push_back(Path(absl::StrCat("s", s, ".st")));
    args.insert(args.end(), {"--save-state", files.back(), "--format", "none"});
    Invocation r = RunTally(args);
    ASSERT_EQ(r.exit_code, 0) << r;
    EXPECT_EQ(r.out, "");
  }
  Invocation json = RunTally({"merge", "--format", "json", files[3], files[1], files[0], files[2]});
  EXPECT_EQ(json.exit_code, 0) << json;
  EXPECT_EQ(json.out, want);
  Invocation as_table = RunTally({"merge", files[2], files[0], files[3], files[1]});
  EXPECT_EQ(as_table.out, table.out);
  ASSERT_EQ(RunTally({"merge", "--format", "none", "--save-state", Path("01.st"), files[0], files[1]}).exit_code, 0);
  Invocation nested = RunTally({"merge", "--format", "json", Path("01.st"), files[2], files[3]});
  EXPECT_EQ(nested.out, want);
  // A shard merged twice would count its rows twice: the same file twice,
  // and a merged file with one of its parts, are refused naming both.
  Invocation twice = RunTally({"merge", files[0], files[1], files[0]});
  EXPECT_TRUE(OneCleanErrorLine(twice, {files[0], "count twice"})) << twice;
  EXPECT_EQ(twice.out, "");
  Invocation part = RunTally({"merge", Path("01.st"), files[2], files[1]});
  EXPECT_TRUE(OneCleanErrorLine(part, {files[1], Path("01.st"), "count twice"})) << part;
  // Forked ranks (--world-size alone): rank 0 writes every rank's states.
  std::vector<std::string> forked = Eval("all");
  forked.insert(forked.end(), {"--world-size", "3", "--save-state", Path("forked.st"), "--format", "none"});
  Invocation f = RunTally(forked);
  ASSERT_EQ(f.exit_code, 0) << f;
  EXPECT_EQ(RunTally({"merge", "--format", "json", Path("forked.st")}).out, want);

  // Corrupt: one byte changed.
  std::string bytes = testing::ReadFile(files[2]);
  bytes[bytes.size() / 2] ^= 1;
  std::ofstream(Path("corrupt.st"), std::ios::binary) << bytes;
  Invocation corrupt = RunTally({"merge", files[0], Path("corrupt.st")});
  EXPECT_TRUE(OneCleanErrorLine(corrupt, {Path("corrupt.st"), "checksum"})) << corrupt;
  EXPECT_EQ(corrupt.out, "");
  // Foreign: other metrics.
  std::vector<std::string> other = Eval("s0", {kSpecs[1]});
  other.insert(other.end(), {"--save-state", Path("other.st"), "--format", "none"});
  ASSERT_EQ(RunTally(other).exit_code, 0);
  Invocation foreign = RunTally({"merge", files[0], Path("other.st")});
  EXPECT_TRUE(OneCleanErrorLine(foreign, {Path("other.st"), "other metrics"})) << foreign;
  // Not a state file at all.
  Invocation npy = RunTally({"merge", Path("s0_preds.npy")});
  EXPECT_TRUE(OneCleanErrorLine(npy, {Path("s0_preds.npy"), "not a Tally state file"})) << npy;
  // Over the budget: twice s0's file (50 rows and its header) is more than
  // s0's states need (the fixed-size states and twice the rows: room to
  // copy them while their buffer grows), and less than the states of s0's
  // and s2's 120 rows need, so s2 is refused.
  const std::string budget = absl::StrCat(2 * testing::ReadFile(files[0]).size());
  Invocation over = RunTally({"merge", "--max-state-bytes", budget, files[0], files[1], files[2]});
  EXPECT_TRUE(OneCleanErrorLine(over, {files[2], "this merge would grow the states", "over the state budget"})) << over;
  EXPECT_EQ(over.out, "");
  // s0 and the empty s1 fit (saved, not computed: compute's temporaries
  // would not fit so small a budget).
  Invocation fits = RunTally(
      {"merge", "--max-state-bytes", budget, "--format", "none", "--save-state", Path("fits.st"), files[0], files[1]});
  EXPECT_EQ(fits.exit_code, 0) << fits;
}

TEST(MergeBenchTest, WorkloadsReportTheFileAndTheMerge) {
  // Verifies that `bench --workload merge_cls|merge_retrieval` report a
  // state file's bytes, 100 merged sources and the merge time, and that a
  // retrieval shard (10,000 rows in `cat` states) weighs more than the cls
  // collection's fixed-size states.
  double bytes[2] = {0, 0};
  int i = 0;
  for (const char* w : {"merge_cls", "merge_retrieval"}) {
    Invocation r = RunTally({"bench", "--workload", w, "--quick", "--format", "json"});
    ASSERT_EQ(r.exit_code, 0) << r;
    for (const char* field : {"\"state_file_bytes\": ", "\"sources_merged\": 100", "\"ms_merge\": "}) {
      EXPECT_NE(r.out.find(field), std::string::npos) << w << ": " << r.out;
    }
    const size_t at = r.out.find("\"state_file_bytes\": ");
    if (at != std::string::npos) bytes[i] = std::stod(r.out.substr(at + 20));
    ++i;
  }
  EXPECT_GT(bytes[0], 100);
  EXPECT_GT(bytes[1], 10000 * (4 + 8 + 8));
}

}  // namespace
}  // namespace tally
