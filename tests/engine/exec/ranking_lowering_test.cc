// Per-op parity of the ranking ops' TorchScript lowerings (bucketize, cumsum,
// topk, argsort, and linspace, which makes calibration's bin boundaries) with
// their eager kernels: the same results bit for bit on
// the CPU (also for an empty batch), meta results of the planned shapes on
// `meta`, and cumsum's off-host branch — the fixed-order scan loop, which
// this CPU-only machine never takes by itself — equal to ops::CumsumScan.
#include <ATen/ATen.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/exec/torchscript/lowering.h"
#include "engine/exec/torchscript/plan.h"
#include "engine/ir/aten_types.h"
#include "engine/ir/graph.h"
#include "gtest/gtest.h"
#include "ops/kernels.h"
#include "ops/op_registry.h"

namespace tally {
namespace {

struct OpCase {
  std::string name;
  std::string op;
  std::vector<std::string> inputs;  // types without the device, `N` = rows
  ir::AttrMap attrs;
};

std::vector<OpCase> Cases() {
  return {
      {"bucketize", "bucketize", {"f32[N,2]", "f32[5]"}, {}},
      {"bucketize_right_mixed", "bucketize", {"i64[N]", "f64[4]"}, {{"right", true}}},
      {"cumsum_f32", "cumsum", {"f32[N,3]"}, {{"dim", int64_t{0}}}},
      {"cumsum_f64_inner", "cumsum", {"f64[N,3]"}, {{"dim", int64_t{-1}}}},
      {"cumsum_i32", "cumsum", {"i32[N]"}, {{"dim", int64_t{0}}}},
      {"cumsum_bool", "cumsum", {"i1[N,2]"}, {{"dim", int64_t{0}}}},
      {"topk", "topk", {"f32[N,5]"}, {{"k", int64_t{2}}}},
      {"topk_smallest_unsorted", "topk", {"i64[N,5]"}, {{"k", int64_t{3}}, {"largest", false}, {"sorted", false}}},
      {"argsort", "argsort", {"f32[N]"}, {{"dim", int64_t{0}}}},
      {"argsort_descending", "argsort", {"f64[N,3]"}, {{"dim", int64_t{0}}, {"descending", true}}},
      {"argsort_unstable", "argsort", {"i64[N,3]"}, {{"dim", int64_t{1}}, {"stable", false}}},
      {"linspace",
       "linspace",
       {},
       {{"start", 0.0}, {"end", 1.0}, {"steps", int64_t{16}}, {"dtype", std::string("f32")}}},
  };
}

// OneNodeGraph holds `op` over parameters of `inputs` on `device`, returning
// every result.
std::unique_ptr<ir::Graph> OneNodeGraph(const OpCase& c, const std::string& device) {
  auto g = std::make_unique<ir::Graph>(c.name);
  std::vector<ir::Value*> params;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    auto t = ir::ParseTensorType(absl::StrCat(c.inputs[i], "@", device));
    EXPECT_TRUE(t.ok()) << t.status();
    params.push_back(g->AddParam(absl::StrCat("in", i), *t));
  }
  auto n = ops::Build(*g, c.op, params, c.attrs, ir::Device{device});
  EXPECT_TRUE(n.ok()) << n.status();
  if (!n.ok()) return nullptr;
  for (size_t i = 0; i < (*n)->outputs().size(); ++i) g->AddReturn(absl::StrCat("r", i), (*n)->output(i));
  return g;
}

// Inputs of the graph's parameter types with N = rows: small integers (many
// ties) or normal floats; boundaries ascending.
std::vector<at::Tensor> Inputs(const ir::Graph& g, int64_t rows, const std::string& device, at::Generator& gen) {
  std::vector<at::Tensor> out;
  for (ir::Value* p : g.params()) {
    const ir::TensorType& t = p->type();
    std::vector<int64_t> sizes;
    for (const ir::Dim& d : t.shape) sizes.push_back(d.is_symbolic() ? rows : d.size);
    auto opts = at::TensorOptions().dtype(ir::ToScalarType(t.dtype));
    if (device == "meta") {
      out.push_back(at::empty(sizes, opts.device(at::kMeta)));
      continue;
    }
    at::Tensor x = ir::IsFloating(t.dtype)       ? at::randn(sizes, gen, opts)
                   : t.dtype == ir::DType::kBool ? at::randint(0, 2, sizes, gen, opts.dtype(at::kLong)).to(at::kBool)
                                                 : at::randint(-3, 4, sizes, gen, opts);
    if (p != g.params()[0]) x = std::get<0>(at::sort(x));  // bucketize boundaries
    out.push_back(x);
  }
  return out;
}

// Verifies that every ranking op's lowering gives its eager kernel's results
// exactly, with the planned dtypes, for 9 rows, 1 row and an empty batch.
TEST(RankingLowering, MatchesTheEagerKernelsBitForBit) {
  at::Generator gen = at::detail::createCPUGenerator(11);
  for (const OpCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<ir::Graph> g = OneNodeGraph(c, "cpu");
    ASSERT_NE(g, nullptr);
    auto plan = exec::torchscript::CreatePlan(*g);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const ir::Node& node = *g->nodes().front();
    for (int64_t rows : {9, 1, 0}) {
      std::vector<at::Tensor> in = Inputs(*g, rows, "cpu", gen);
      std::vector<at::Tensor> want(node.outputs().size());
      ops::FindKernel(c.op)(node, in.data(), want.data());
      auto got = (*plan)->Run(in, /*checked=*/true);
      ASSERT_TRUE(got.ok()) << got.status();
      ASSERT_EQ(got->size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ((*got)[i].scalar_type(), want[i].scalar_type()) << "result " << i << ", rows " << rows;
        EXPECT_TRUE(at::equal((*got)[i], want[i])) << "result " << i << ", rows " << rows << "\n"
                                                   << (*got)[i] << "\nvs\n"
                                                   << want[i];
      }
    }
  }
}

// Verifies that the lowered ops run on `meta` inputs and give meta results of
// the planned dtypes and sizes (no value is read on the host).
TEST(RankingLowering, RunsOnMeta) {
  at::Generator gen = at::detail::createCPUGenerator(12);
  for (const OpCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    std::unique_ptr<ir::Graph> g = OneNodeGraph(c, "meta");
    ASSERT_NE(g, nullptr);
    auto plan = exec::torchscript::CreatePlan(*g);
    ASSERT_TRUE(plan.ok()) << plan.status();
    for (int64_t rows : {6, 0}) {
      auto got = (*plan)->Run(Inputs(*g, rows, "meta", gen), /*checked=*/true);
      ASSERT_TRUE(got.ok()) << got.status();
      const ir::Node& node = *g->nodes().front();
      for (size_t i = 0; i < got->size(); ++i) {
        const at::Tensor& t = (*got)[i];
        EXPECT_TRUE(t.is_meta()) << "result " << i;
        const ir::TensorType& want = node.output(i)->type();
        for (int64_t d = 0; d < want.rank(); ++d) {
          EXPECT_EQ(t.size(d), want.shape[d].is_symbolic() ? rows : want.shape[d].size) << "result " << i;
        }
      }
    }
  }
}

// Verifies cumsum's off-host branch: with the device test forced to "not on
// the host", the lowered graph runs the scan loop and gives exactly what
// ops::CumsumScan gives, at lengths around powers of two and along an inner
// dim.
TEST(RankingLowering, CumsumScanBranchMatchesTheKernelScan) {
  namespace jit = torch::jit;
  for (int64_t dim : {0, 1}) {
    OpCase c{"cumsum_scan", "cumsum", {"f64[N,3]"}, {{"dim", dim}}};
    std::unique_ptr<ir::Graph> g = OneNodeGraph(c, "cpu");
    ASSERT_NE(g, nullptr);
    auto lowered = exec::torchscript::LowerGraph(*g, exec::torchscript::LoweringOptions{});
    ASSERT_TRUE(lowered.ok()) << lowered.status();
    std::shared_ptr<jit::Graph> jg = *lowered;
    jit::Node* branch = nullptr;
    for (jit::Node* n : jg->nodes())
      if (n->kind() == c10::prim::If) branch = n;
    ASSERT_NE(branch, nullptr) << *jg;
    {
      jit::WithInsertPoint guard(branch);
      branch->replaceInput(0, jg->insertConstant(false));
    }
    jit::GraphExecutor executor(jg, "cumsum_scan", jit::ExecutorExecutionMode::SIMPLE);
    at::Generator gen = at::detail::createCPUGenerator(13);
    for (int64_t rows : {0, 1, 2, 3, 7, 8, 9, 16, 17, 33}) {
      at::Tensor x = at::randn({rows, 3}, gen, at::kDouble);
      jit::Stack stack{x};
      executor.run(stack);
      ASSERT_EQ(stack.size(), 1u);
      at::Tensor got = stack[0].toTensor();
      EXPECT_TRUE(at::equal(got, ops::CumsumScan(x, dim))) << "dim " << dim << ", rows " << rows;
      EXPECT_TRUE(at::allclose(got, at::cumsum(x, dim), 1e-12, 1e-12)) << "dim " << dim << ", rows " << rows;
    }
  }
}

}  // namespace
}  // namespace tally
