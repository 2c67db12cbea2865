// Parity of the TorchScript backend with the eager executor over the whole
// metric registry and the benchmark collections: for every metric and every
// input form it accepts, with composite ops fused (Tally's operators called
// from TorchScript) and decomposed (pure ATen), the same random batches —
// an empty one among them — give the same states after every update (exact
// for integer states, 1e-12 relative for floats), the same Compute results
// or the same error, the same merged states and the same reset. The lowered
// update plans also run on `meta`.
#include <ATen/ATen.h>

#include <ostream>
#include <string>
#include <vector>

#include <cctype>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/exec/torchscript/plan.h"
#include "engine/ir/graph.h"
#include "engine/runtime/compiler.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "tests/testlib/random_inputs.h"

namespace tally {
namespace {

using ::tally::testing::Close;
using ::tally::testing::Form;

struct Case {
  std::string name;
  std::vector<std::string> specs;
  Form form;
  passes::FusePolicy policy;
};

std::string Identifier(const std::string& s) {
  std::string out;
  for (char ch : s) out.push_back(std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_');
  return out;
}

const std::vector<std::string> kClsCollection = {
    "multiclass_accuracy(num_classes=10)", "multiclass_precision(num_classes=10, average=macro)",
    "multiclass_recall(num_classes=10, average=macro)", "multiclass_f1_score(num_classes=10, average=macro)",
    "multiclass_confusion_matrix(num_classes=10)"};
const std::vector<std::string> kRegCollection = {"mean_squared_error", "mean_absolute_error", "r2_score",
                                                 "pearson_corrcoef", "concordance_corrcoef"};

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (passes::FusePolicy policy : {passes::FusePolicy::kFused, passes::FusePolicy::kReference}) {
    const std::string suffix = policy == passes::FusePolicy::kFused ? "_fused" : "_reference";
    CompileOptions co;
    co.fuse_policy = policy;
    for (const auto& m : metrics::AllMetrics()) {
      std::vector<std::string> specs = testing::SpecsFor(m);
      for (size_t k = 0; k < specs.size(); ++k) {
        const std::string variant = k == 0 ? "" : absl::StrCat("_variant", k);
        for (const Form& form : testing::FormsFor(m)) {
          if (!testing::CompileModuleFor({specs[k]}, form, co).ok()) continue;  // a form the metric does not take
          cases.push_back(
              {Identifier(absl::StrCat(m.name, variant, "_", form.name, suffix)), {specs[k]}, form, policy});
        }
      }
    }
    for (const char* f : {"mc_f", "mc_i", "mc_bad"}) {
      cases.push_back({absl::StrCat("cls_collection_", f, suffix), kClsCollection, Form{f, 10}, policy});
    }
    cases.push_back({absl::StrCat("reg_collection_reg1", suffix), kRegCollection, Form{"reg1"}, policy});
  }
  return cases;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

// Only the inputs a program takes (as `tally eval` feeds them).
NamedTensors Used(const Program& p, const NamedTensors& batch) {
  NamedTensors out;
  for (const auto& [k, t] : batch)
    if (p.module().update->FindParam(k) != nullptr) out.emplace_back(k, t);
  return out;
}

class ParityTest : public ::testing::TestWithParam<Case> {
 protected:
  std::unique_ptr<Program> Make(exec::Backend backend) {
    CompileOptions co;
    co.fuse_policy = GetParam().policy;
    co.backend = backend;
    // The TorchScript side also checks every result against its planned
    // dtype, rank and device.
    co.checked = backend == exec::Backend::kTorchScript;
    auto p = testing::CompileFor(GetParam().specs, GetParam().form, co);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? std::move(*p) : nullptr;
  }
};

void ExpectSameStates(const Program& eager, const Program& ts, const std::string& when) {
  ASSERT_EQ(eager.states().size(), ts.states().size());
  for (size_t i = 0; i < eager.states().size(); ++i) {
    EXPECT_TRUE(Close(eager.states()[i], ts.states()[i])) << when << ": state " << eager.module().states[i].name;
  }
}

void ExpectSameCompute(const Program& eager, const Program& ts, const std::string& when) {
  auto a = eager.Compute();
  auto b = ts.Compute();
  ASSERT_EQ(a.ok(), b.ok()) << when << ": eager " << a.status() << ", torchscript " << b.status();
  if (!a.ok()) {
    EXPECT_EQ(a.status(), b.status()) << when;
    return;
  }
  ASSERT_EQ(a->size(), b->size());
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].first, (*b)[i].first);
    EXPECT_TRUE(Close((*a)[i].second, (*b)[i].second)) << when << ": result " << (*a)[i].first;
  }
}

TEST_P(ParityTest, SameStatesResultsMergesAndResets) {
  // Verifies the parity described at the top of this file for one case.
  const Case& c = GetParam();
  auto eager = Make(exec::Backend::kEager);
  auto ts = Make(exec::Backend::kTorchScript);
  ASSERT_TRUE(eager && ts);
  EXPECT_EQ(ts->options().backend, exec::Backend::kTorchScript);
  at::Generator gen = at::detail::createCPUGenerator(20240611);
  int step = 0;
  for (int64_t n : {6, 0, 9, 1, 17}) {
    NamedTensors batch = Used(*eager, testing::MakeBatch(c.form, n, gen));
    absl::Status se = eager->Update(batch);
    absl::Status st = ts->Update(batch);
    ASSERT_EQ(se, st) << "batch " << step;
    ExpectSameStates(*eager, *ts, absl::StrCat("after batch ", step++, " (", n, " rows)"));
  }
  ExpectSameCompute(*eager, *ts, "compute");

  // Merging another shard goes through the (custom) merge plans.
  auto eager_b = Make(exec::Backend::kEager);
  auto ts_b = Make(exec::Backend::kTorchScript);
  ASSERT_TRUE(eager_b && ts_b);
  for (int64_t n : {5, 11}) {
    NamedTensors batch = Used(*eager, testing::MakeBatch(c.form, n, gen));
    ASSERT_TRUE(eager_b->Update(batch).ok());
    ASSERT_TRUE(ts_b->Update(batch).ok());
  }
  ASSERT_TRUE(eager->Merge(*eager_b).ok());
  ASSERT_TRUE(ts->Merge(*ts_b).ok());
  ExpectSameStates(*eager, *ts, "after merge");
  ExpectSameCompute(*eager, *ts, "compute after merge");

  ASSERT_TRUE(eager->Reset().ok());
  ASSERT_TRUE(ts->Reset().ok());
  ExpectSameStates(*eager, *ts, "after reset");
  ExpectSameCompute(*eager, *ts, "compute after reset");
}

TEST_P(ParityTest, LoweredUpdateRunsOnMeta) {
  // Verifies that the lowered plans run on meta tensors (which cannot be
  // read on the host): the TorchScript update is sync-free too.
  const Case& c = GetParam();
  CompileOptions co;
  co.device = ir::Device{"meta"};
  co.fuse_policy = c.policy;
  co.backend = exec::Backend::kTorchScript;
  auto p = testing::CompileFor(c.specs, c.form, co);
  ASSERT_TRUE(p.ok()) << p.status();
  at::Generator gen = at::detail::createCPUGenerator(7);
  for (int64_t n : {4, 0}) {
    NamedTensors meta;
    for (const auto& [k, t] : Used(**p, testing::MakeBatch(c.form, n, gen))) meta.emplace_back(k, t.to(at::kMeta));
    absl::Status st = (*p)->Update(meta);
    ASSERT_TRUE(st.ok()) << st;
  }
  for (const auto& s : (*p)->states()) EXPECT_TRUE(s.is_meta());
}

INSTANTIATE_TEST_SUITE_P(Registry, ParityTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

TEST(ParityCoverage, EveryMetricHasACase) {
  // Verifies that the parametrized cases cover every registered metric under
  // both fusion policies.
  std::vector<Case> cases = AllCases();
  for (const auto& m : metrics::AllMetrics()) {
    for (const char* suffix : {"_fused", "_reference"}) {
      bool found = false;
      for (const Case& c : cases) {
        found |= c.specs.size() == 1 && c.specs[0] == testing::SpecFor(m) && absl::EndsWith(c.name, suffix);
      }
      EXPECT_TRUE(found) << m.name << suffix;
    }
  }
}

TEST(TorchScriptProgram, ExplicitInputTransfersRunTheSame) {
  // Verifies parity with --transfer-inputs (one visible transfer node per
  // input, lowered to aten::to on the planned device).
  CompileOptions co;
  co.transfer_inputs = true;
  Form form{"mc_f", 10};
  std::vector<std::unique_ptr<Program>> p;
  for (exec::Backend b : {exec::Backend::kEager, exec::Backend::kTorchScript}) {
    co.backend = b;
    auto prog = testing::CompileFor(kClsCollection, form, co);
    ASSERT_TRUE(prog.ok()) << prog.status();
    p.push_back(std::move(*prog));
  }
  bool has_transfer = false;
  for (const auto& n : p[1]->module().update->nodes()) has_transfer |= n->op() == "transfer";
  EXPECT_TRUE(has_transfer);
  at::Generator gen = at::detail::createCPUGenerator(3);
  for (int64_t n : {8, 0, 3}) {
    NamedTensors batch = testing::MakeBatch(form, n, gen);
    ASSERT_TRUE(p[0]->Update(batch).ok());
    ASSERT_TRUE(p[1]->Update(batch).ok());
  }
  ExpectSameStates(*p[0], *p[1], "with transfers");
  ExpectSameCompute(*p[0], *p[1], "with transfers");
}

TEST(TorchScriptProgram, MovesWithProgramTo) {
  // Verifies that Program::To keeps the backend (and recompiles the plans
  // for meta, where they still run).
  CompileOptions co;
  co.backend = exec::Backend::kTorchScript;
  auto p = testing::CompileFor(kRegCollection, Form{"reg1"}, co);
  ASSERT_TRUE(p.ok()) << p.status();
  auto meta = (*p)->To(ir::Device{"meta"});
  ASSERT_TRUE(meta.ok()) << meta.status();
  EXPECT_EQ((*meta)->options().backend, exec::Backend::kTorchScript);
  at::Generator gen = at::detail::createCPUGenerator(4);
  NamedTensors batch;
  for (const auto& [k, t] : testing::MakeBatch(Form{"reg1"}, 6, gen)) batch.emplace_back(k, t.to(at::kMeta));
  ASSERT_TRUE((*meta)->Update(batch).ok());
  for (const auto& s : (*meta)->states()) EXPECT_TRUE(s.is_meta());
}

TEST(TorchScriptPlan, UnknownOpIsUnimplemented) {
  // Verifies that an op without a lowering is a clear Unimplemented error
  // naming the op, not a crash.
  ir::Graph g("update");
  ir::Value* x = g.AddParam("x", ir::TensorType{ir::DType::kFloat32, {ir::Dim::Symbol("N")}, ir::Device{}});
  ir::Node* n = g.AddNode("frobnicate", {x}, {}, {x->type()});
  g.AddReturn("y", n->output());
  auto plan = exec::torchscript::CreatePlan(g);
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(std::string(plan.status().message()).find("frobnicate"), std::string::npos) << plan.status();
}

TEST(TorchScriptPlan, ErrorsInsideTheGraphAreStatuses) {
  // Verifies that an ATen error raised inside the TorchScript interpreter
  // comes back as one line naming the graph, not the interpreter's banner.
  ir::Graph g("update");
  ir::TensorType t{ir::DType::kFloat32, {ir::Dim::Fixed(3)}, ir::Device{}};
  ir::Value* x = g.AddParam("x", t);
  ir::Node* n = g.AddNode("reshape", {x}, {{"shape", std::vector<int64_t>{3}}}, {t});
  g.AddReturn("y", n->output());
  auto plan = exec::torchscript::CreatePlan(g);
  ASSERT_TRUE(plan.ok()) << plan.status();
  auto out = (*plan)->Run({at::ones({4})}, false);
  ASSERT_FALSE(out.ok());
  std::string msg(out.status().message());
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_NE(msg.find("update: "), std::string::npos) << msg;
  EXPECT_EQ(msg.find("The following operation failed"), std::string::npos) << msg;
}

TEST(TorchScriptPlan, CheckedModeComparesResultsWithThePlan) {
  // Verifies that checked mode reports a result whose dtype differs from
  // the planned one (the IR claims f64, the graph computes f32).
  ir::Graph g("update");
  ir::TensorType f32{ir::DType::kFloat32, {ir::Dim::Fixed(3)}, ir::Device{}};
  ir::TensorType f64{ir::DType::kFloat64, {ir::Dim::Fixed(3)}, ir::Device{}};
  ir::Value* x = g.AddParam("x", f32);
  ir::Node* n = g.AddNode("neg", {x}, {}, {f64});
  g.AddReturn("y", n->output());
  auto plan = exec::torchscript::CreatePlan(g);
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_TRUE((*plan)->Run({at::ones({3})}, false).ok());
  auto checked = (*plan)->Run({at::ones({3})}, true);
  ASSERT_FALSE(checked.ok());
  EXPECT_NE(std::string(checked.status().message()).find("planned f64[3]@cpu"), std::string::npos) << checked.status();
}

}  // namespace
}  // namespace tally
