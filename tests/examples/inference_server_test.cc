// Verifies that examples/inference_server serves a TorchScript model over
// HTTP and that its embedded Session counts exactly the labelled rows it
// answered: the binary's --self-test run, a server driven from this test
// (bad requests are 400 and change nothing), and clean startup errors.
#include <httplib.h>
#include <unistd.h>

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/tools/cli_testing.h"
#include "tests/tools/server_process.h"

namespace tally::testing {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

std::string ServerBinary() { return FindBinary("examples/inference_server/inference_server"); }

// Line returns the first line of `text` that starts with `prefix` ("" if none).
std::string Line(const std::string& text, absl::string_view prefix) {
  for (absl::string_view l : absl::StrSplit(text, '\n'))
    if (absl::StartsWith(l, prefix)) return std::string(l);
  return "";
}

// Verifies that the self-test's 200 concurrent requests are all counted and
// that the session's accuracy and confusion matrix match the returned
// predictions.
TEST(InferenceServerTest, SelfTestPasses) {
  ASSERT_NE(ServerBinary(), "");
  const Invocation r = RunBinary(ServerBinary(), {"--port", "0", "--self-test", "200"});
  ASSERT_EQ(r.exit_code, 0) << r;
  EXPECT_TRUE(absl::StartsWith(r.out, "listening on 127.0.0.1:")) << r;
  EXPECT_THAT(r.out, HasSubstr("\nself-test: PASS\n")) << r;
  EXPECT_THAT(r.out, Not(HasSubstr("FAIL"))) << r;
  EXPECT_EQ(r.err, "") << r;

  // 200 requests of 1..16 rows each, all counted.
  const std::string counters = Line(r.out, "counters: ");
  long long updates = 0, rows = 0;  // NOLINT(runtime/int): sscanf's %lld
  ASSERT_EQ(std::sscanf(counters.c_str(), "counters: updates=%lld rows=%lld", &updates, &rows), 2) << r;
  EXPECT_EQ(updates, 200);
  EXPECT_GE(rows, 200);
  EXPECT_LE(rows, 200 * 16);
  EXPECT_THAT(counters, HasSubstr(absl::StrCat("rejected=0 (sent 200 requests, ", rows, " rows)")));
  EXPECT_THAT(Line(r.out, "prometheus: "), HasSubstr(absl::StrCat("tally_rows_total ", rows)));
  EXPECT_THAT(Line(r.out, "bad requests: "), HasSubstr("10 of 10 answered 400 with a one-line error, 10 counted"));
  EXPECT_THAT(Line(r.out, "bad requests: "), HasSubstr("metrics unchanged"));
}

// Metrics returns /v1/metrics' counters and its whole body.
std::pair<json, std::string> Metrics(httplib::Client& cli) {
  auto res = cli.Get("/v1/metrics");
  if (!res || res->status != 200) return {json(), ""};
  json m = json::parse(res->body, nullptr, false);
  return {m.is_object() ? m["counters"] : json(), res->body};
}

// Verifies, driving a server from outside, that labelled requests update the
// session by their rows, and that a bad request is a 400 with a one-line
// error that only counts as rejected: updates, rows and metrics unchanged.
TEST(InferenceServerTest, BadRequestIs400AndChangesNothing) {
  ASSERT_NE(ServerBinary(), "");
  std::unique_ptr<ServerProcess> server = ServerProcess::Spawn(ServerBinary(), {"--port", "0", "--classes", "3"});
  const absl::Status listening = server->WaitUntilListening(std::chrono::seconds(120));
  ASSERT_TRUE(listening.ok()) << listening;
  httplib::Client cli("127.0.0.1", server->port());
  cli.set_read_timeout(60, 0);

  auto good = cli.Post("/predict", R"({"features": [[0.1, 0.2, 0.3, 0.4], [1, -1, 0.5, 2]], "labels": [0, 2]})",
                       "application/json");
  ASSERT_TRUE(good);
  ASSERT_EQ(good->status, 200) << good->body;
  const json answer = json::parse(good->body, nullptr, false);
  ASSERT_TRUE(answer.is_object()) << good->body;
  EXPECT_EQ(answer["predictions"].size(), 2u) << good->body;
  ASSERT_EQ(answer["scores"].size(), 2u) << good->body;
  EXPECT_EQ(answer["scores"][0].size(), 3u) << good->body;

  const auto [counters, before] = Metrics(cli);
  EXPECT_EQ(counters, json({{"updates", 1}, {"rows", 2}, {"rejected", 0}, {"compute_errors", 0}})) << before;

  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"features": [[0.1, 0.2, 0.3]], "labels": [0]})", "'features' row 0 must be a list of 4 numbers"},
      {R"({"features": [[0.1, 0.2, 0.3, 0.4]], "labels": [3]})", "'labels' must hold class ids in [0, 3), got 3"},
      {R"({"features": [[0.1, 0.2, 0.3, 0.4]], "labels": [0, 1]})", "'labels' must be a list of 1 class ids"},
      {R"({"features": [[0.1, 0.2,)", "body is not valid JSON"},
  };
  for (const auto& [body, message] : bad) {
    auto res = cli.Post("/predict", body, "application/json");
    ASSERT_TRUE(res) << body;
    EXPECT_EQ(res->status, 400) << body << " -> " << res->body;
    EXPECT_THAT(res->body, HasSubstr(message)) << body;
    EXPECT_EQ(res->body.find('\n'), res->body.size() - 1) << "not one line: " << res->body;
  }
  // Only the rejected counter moved.
  json after = json::parse(Metrics(cli).second, nullptr, false);
  ASSERT_TRUE(after.is_object());
  EXPECT_EQ(after["counters"]["rejected"], 4) << after;
  after["counters"]["rejected"] = 0;
  EXPECT_EQ(after, json::parse(before)) << before;

  auto prom = cli.Get("/metrics");
  ASSERT_TRUE(prom);
  EXPECT_THAT(prom->body, HasSubstr("\ntally_updates_total{set=\"default\"} 1\n"));
  EXPECT_THAT(prom->body, HasSubstr("\ntally_rows_total{set=\"default\"} 2\n"));
  EXPECT_THAT(prom->body, HasSubstr("\ntally_rejected_updates_total{set=\"default\"} 4\n"));

  server->Signal(SIGTERM);
  const Invocation stopped = server->Wait();
  EXPECT_EQ(stopped.exit_code, 0) << stopped;
  EXPECT_EQ(stopped.err, "");
}

// Verifies that a model file that cannot be loaded, or that does not fit the
// flags, stops the server with one clean error line.
TEST(InferenceServerTest, BadModelIsOneCleanErrorLine) {
  ASSERT_NE(ServerBinary(), "");
  const std::string missing = TestTmpDir() + "/missing_model.pt";
  EXPECT_TRUE(OneCleanErrorLine(RunBinary(ServerBinary(), {"--model", missing, "--port", "0"}), {missing}));

  const std::string saved = TestTmpDir() + "/tiny_classifier.pt";
  // Writes the tiny model (the self-test's verdict does not matter here).
  const Invocation save = RunBinary(ServerBinary(), {"--save-model", saved, "--port", "0", "--self-test", "1"});
  ASSERT_EQ(access(saved.c_str(), R_OK), 0) << save;
  EXPECT_TRUE(OneCleanErrorLine(RunBinary(ServerBinary(), {"--model", saved, "--features", "5", "--port", "0"}),
                                {saved, "shapes cannot be multiplied"}));
  EXPECT_TRUE(OneCleanErrorLine(RunBinary(ServerBinary(), {"--model", saved, "--classes", "4", "--port", "0"}),
                                {saved, "not f32[1, 4] logits"}));
  EXPECT_TRUE(OneCleanErrorLine(RunBinary(ServerBinary(), {"--port", "0", "--features"}), {"--features"}));
}

}  // namespace
}  // namespace tally::testing
