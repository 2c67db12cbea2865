// Tests of `tally inspect`'s memory line: fixed-size states report their
// bytes once, exact (cat) states report bytes per accumulated row, and a
// binned variant's memory does not grow with rows.
#include <string>

#include "absl/strings/match.h"
#include "api/tally.h"
#include "gtest/gtest.h"

namespace tally {
namespace {

std::string MemoryLine(const std::string& spec) {
  tally::InspectOptions o;
  auto text = tally::Inspect({spec}, {}, o);
  EXPECT_TRUE(text.ok()) << text.status();
  if (!text.ok()) return "";
  size_t at = text->find("memory: ");
  return at == std::string::npos ? "" : text->substr(at, text->find('\n', at) - at);
}

TEST(InspectMemory, ReportsBytesPerAccumulatedRow) {
  // Verifies the numbers: retrieval keeps indexes (8) + preds (4) + target
  // (8) per row; binned AUROC keeps a 2 x 101 int64 histogram (targets by
  // thresholds below the score) and nothing per row; the exact form keeps
  // preds (4) and one byte of target per row; exact16 keeps 2 x 65,536
  // counts and nothing per row. Each also keeps two i64 deferred-check
  // counters (targets outside {0, 1}, NaN scores).
  EXPECT_TRUE(absl::StrContains(MemoryLine("retrieval_recall(top_k=10)"), "20 bytes per accumulated row"));
  std::string binned = MemoryLine("binary_auroc(thresholds=100)");
  EXPECT_TRUE(absl::StrContains(binned, "0 bytes per accumulated row")) << binned;
  EXPECT_TRUE(absl::StrContains(binned, "1632 bytes of fixed-size states")) << binned;  // + two i64 check counters
  std::string exact = MemoryLine("binary_auroc");
  EXPECT_TRUE(absl::StrContains(exact, " 5 bytes per accumulated row")) << exact;
  std::string exact16 = MemoryLine("binary_auroc(thresholds=exact16)");
  EXPECT_TRUE(absl::StrContains(exact16, "1048592 bytes of fixed-size states, 0 bytes per accumulated row")) << exact16;
}

}  // namespace
}  // namespace tally
