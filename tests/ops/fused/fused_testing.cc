#include "tests/ops/fused/fused_testing.h"

#include <algorithm>

#include "engine/ir/printer.h"
#include "gtest/gtest.h"

namespace tally::testing {

std::vector<at::Tensor> StatesOf(const std::vector<std::string>& specs, const NamedTensors& inputs,
                                 passes::FusePolicy policy, int64_t batch, std::string* ir) {
  auto sig = tally::SignatureOf(inputs);
  EXPECT_TRUE(sig.ok()) << sig.status();
  if (!sig.ok()) return {};
  auto entries = tally::BuildEntries(specs, *sig, ir::Device{});
  EXPECT_TRUE(entries.ok()) << entries.status();
  if (!entries.ok()) return {};
  CompileOptions co;
  co.fuse_policy = policy;
  auto prog = Compile(*entries, co);
  EXPECT_TRUE(prog.ok()) << prog.status();
  if (!prog.ok()) return {};
  if (ir != nullptr) *ir = ir::PrintModule((*prog)->module());
  const int64_t n = inputs[0].second.size(0);
  for (int64_t s = 0; s < n || s == 0; s += batch) {
    const int64_t len = std::min(batch, n - s);
    NamedTensors part;
    for (const auto& [k, t] : inputs) part.emplace_back(k, t.narrow(0, s, len));
    EXPECT_TRUE((*prog)->Update(part).ok());
    if (n == 0) break;
  }
  return (*prog)->states();
}

}  // namespace tally::testing
