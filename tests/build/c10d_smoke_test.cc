// Build smoke test: torch.distributed's C++ core (c10d) with Gloo is usable
// from Debian's libtorch (USE_C10D_GLOO comes from @system//:c10d).
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "engine/dist/c10d_compat.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace {

TEST(C10dSmoke, CreateGlooDeviceForLoopback) {
  bool threw = false;
  std::string what;
  try {
    auto device = c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
    EXPECT_NE(device, nullptr);
  } catch (const std::exception& e) {
    threw = true;
    what = e.what();
  }
  EXPECT_FALSE(threw) << what;
}

// One rank: a TCPStore server on an ephemeral loopback port and a Gloo group
// of size 1 whose allreduce leaves the tensor unchanged.
TEST(C10dSmoke, SingleRankAllreduce) {
  c10d::TCPStoreOptions opts = tally::dist::compat::TcpStoreOptions();
  opts.port = 0;
  opts.isServer = true;
  opts.numWorkers = 1;
  opts.timeout = std::chrono::milliseconds(10000);
  auto store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", opts);
  store->set("k", std::vector<uint8_t>{1, 2, 3});
  EXPECT_EQ(store->get("k"), (std::vector<uint8_t>{1, 2, 3}));

  auto options = c10d::ProcessGroupGloo::Options::create();
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  c10d::ProcessGroupGloo pg(store, /*rank=*/0, /*size=*/1, options);
  std::vector<at::Tensor> tensors{at::arange(4, at::kFloat)};
  pg.allreduce(tensors)->wait();
  EXPECT_FLOAT_EQ(tensors[0].sum().item<float>(), 6.0f);
}

}  // namespace
