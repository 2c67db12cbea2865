// Build smoke test: the LibTorch C++ API include path
// (-isystem /usr/include/torch/csrc/api/include) and TorchScript headers work.
#include <torch/csrc/jit/testing/file_check.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace {

TEST(TorchApiSmoke, TensorOps) {
  torch::Tensor x = torch::ones({2, 3});
  torch::Tensor y = torch::matmul(x, torch::ones({3, 2}));
  EXPECT_EQ(y.sizes(), (torch::IntArrayRef{2, 2}));
  EXPECT_FLOAT_EQ(y.sum().item<float>(), 12.0f);
  EXPECT_THAT(std::string(c10::toString(y.scalar_type())), ::testing::StrEq("Float"));
}

TEST(TorchApiSmoke, FileCheckRunsOnString) {
  const std::string text = "graph():\n  %a = aten::add(%x, %y)\n  return (%a)\n";
  torch::jit::testing::FileCheck().check("aten::add")->check_next("return")->run(text);
  EXPECT_ANY_THROW(torch::jit::testing::FileCheck().check("aten::mul")->run(text));
}

}  // namespace
