// Tests of `tally bench --format json`'s lines (tools/tally/bench.h): every
// string is escaped, so a skipped workload's reason with quotes and
// backslashes still makes one valid JSON object; keys, their order and the
// numbers' text stay as docs/cli.md shows them.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/tally/bench.h"

namespace tally::tools {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Keys(const nlohmann::ordered_json& j) {
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  return keys;
}

// Verifies that a skipped workload whose reason holds a quote, a backslash
// and a newline is one line of valid JSON that reads back as written.
TEST(BenchJsonTest, SkippedReasonWithQuotesAndBackslashesIsValidJson) {
  const std::string why = "needs \"cuda:0\" at C:\\gpu\\0\nsecond line";
  const std::string line = BenchSkippedToJson("cls_large", "torch\"script", why);
  EXPECT_EQ(line.find('\n'), std::string::npos) << line;
  auto j = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << line;
  EXPECT_THAT(Keys(j), ElementsAre("workload", "backend", "skipped"));
  EXPECT_EQ(j["workload"], "cls_large");
  EXPECT_EQ(j["backend"], "torch\"script");
  EXPECT_EQ(j["skipped"], why);
  EXPECT_EQ(BenchSkippedToJson("acc_small", "eager", "no GPU"),
            R"({"workload": "acc_small", "backend": "eager", "skipped": "no GPU"})");
}

// Verifies a result's object: escaped strings, the fields present in
// docs/cli.md's order, numbers printed as before.
TEST(BenchJsonTest, ResultKeepsItsKeysAndNumbers) {
  BenchResult r;
  r.workload = "odd\"name\\";
  r.backend = "eager";
  r.us_per_update = 12.5;
  r.state_bytes = 1234567890.0;
  r.aten_calls_per_update = 7;
  const std::string line = BenchToJson(r);
  EXPECT_THAT(line, ::testing::HasSubstr(R"("us_per_update": 12.5, "state_bytes": 1234567890, )"));
  auto j = nlohmann::ordered_json::parse(line, nullptr, /*allow_exceptions=*/false);
  ASSERT_FALSE(j.is_discarded()) << line;
  EXPECT_THAT(Keys(j), ElementsAre("workload", "backend", "us_per_update", "state_bytes", "aten_calls_per_update"));
  EXPECT_EQ(j["workload"], "odd\"name\\");
  EXPECT_EQ(j["aten_calls_per_update"], 7);
}

}  // namespace
}  // namespace tally::tools
