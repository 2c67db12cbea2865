#include "tests/engine/dist/dist_testing.h"

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "tests/testlib/random_inputs.h"

namespace tally::testing {

int64_t Rows(const NamedTensors& inputs) {
  for (const auto& [name, t] : inputs) {
    if (t.dim() > 0) return t.size(0);
  }
  return 0;
}

NamedTensors Used(const Program& p, const NamedTensors& inputs) {
  NamedTensors out;
  for (const auto& [k, t] : inputs) {
    if (p.module().update->FindParam(k) != nullptr) out.emplace_back(k, t);
  }
  return out;
}

absl::Status FeedRows(Program& p, const NamedTensors& inputs, int64_t begin, int64_t end, int64_t batch) {
  for (int64_t start = begin; start < end; start += batch) {
    int64_t len = std::min(batch, end - start);
    NamedTensors b;
    for (const auto& [k, t] : inputs) b.emplace_back(k, t.dim() == 0 ? t : t.narrow(0, start, len));
    absl::Status st = p.Update(b);
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

std::string CompareResults(const NamedTensors& got, const NamedTensors& want, double rel) {
  if (got.size() != want.size()) return absl::StrCat(got.size(), " results, expected ", want.size());
  std::string out;
  int shown = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i].first != want[i].first)
      return absl::StrCat("result ", i, " is '", got[i].first, "', expected '", want[i].first, "'");
    ::testing::AssertionResult same = Close(got[i].second, want[i].second, rel);
    if (!same && shown++ < 5) absl::StrAppend(&out, got[i].first, ": ", same.message(), "\n");
  }
  return out;
}

}  // namespace tally::testing
