// Exported TorchScript modules, saved and loaded back with torch::jit::load:
// for every metric of the registry they give the numbers (or the deferred
// check errors) of the eager program they were exported from; merge_state
// folds a separately loaded module in; reset restores the initial states;
// bad inputs raise errors naming the metric and the input and change
// nothing; every state is a registered buffer; the update runs on meta and
// reads no value on the host; nothing of Tally is needed to run them.
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/script.h>

#include <cctype>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/exec/torchscript/lowering.h"
#include "engine/exec/torchscript/module_builder.h"
#include "engine/exec/torchscript/module_export.h"
#include "engine/runtime/compiler.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"
#include "ops/meta_kernels.h"
#include "ops/op_registry.h"
#include "tests/testlib/random_inputs.h"

namespace tally {
namespace {

using ::tally::testing::Close;
using ::tally::testing::Form;

std::string TmpPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return absl::StrCat(dir ? dir : "/tmp", "/", name);
}

std::string Identifier(const std::string& s) {
  std::string out;
  for (char ch : s) out.push_back(std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_');
  return out;
}

CompileOptions Reference() {
  CompileOptions co;
  co.fuse_policy = passes::FusePolicy::kReference;
  return co;
}

// Exported holds an eager program and the module exported from the same
// compiled plans, loaded back from disk.
struct Exported {
  std::unique_ptr<Program> program;
  torch::jit::Module module;
  std::vector<std::string> inputs;  // update's parameters in order
};

absl::StatusOr<Exported> ExportAndLoad(const std::vector<std::string>& specs, const Form& form,
                                       const std::string& file) {
  auto c = testing::CompileModuleFor(specs, form, Reference());
  if (!c.ok()) return c.status();
  Exported e;
  for (ir::Value* p : c->module->update->params()) e.inputs.push_back(p->name());
  std::string path = TmpPath(file);
  absl::Status st = exec::torchscript::ExportModule(*c->module, ir::Device{}, path);
  if (!st.ok()) return st;
  auto p = testing::CompileFor(specs, form, Reference());
  if (!p.ok()) return p.status();
  e.program = std::move(*p);
  e.module = torch::jit::load(path);
  // LibTorch 2.x's profiling executor hands the edit distance's tensor loop
  // to the TensorExpr fuser, whose LLVM compile of each profiled shape takes
  // minutes here (docs/design.md, Execution); the values are what is tested.
  torch::jit::setTensorExprFuserEnabled(false);
  return e;
}

std::vector<c10::IValue> Args(const Exported& e, const NamedTensors& batch) {
  std::vector<c10::IValue> args;
  for (const std::string& name : e.inputs) {
    for (const auto& [k, t] : batch)
      if (k == name) args.emplace_back(t);
  }
  return args;
}

NamedTensors Used(const Exported& e, const NamedTensors& batch) {
  NamedTensors out;
  for (const auto& [k, t] : batch)
    if (std::find(e.inputs.begin(), e.inputs.end(), k) != e.inputs.end()) out.emplace_back(k, t);
  return out;
}

// Update feeds one batch to both.
void Update(Exported& e, const NamedTensors& batch) {
  ASSERT_TRUE(e.program->Update(Used(e, batch)).ok());
  e.module.get_method("update")(Args(e, batch));
}

// ExpectSameCompute compares Program::Compute with the module's compute():
// the same values, or the program's error inside the module's exception.
void ExpectSameCompute(Exported& e, const std::string& when) {
  auto want = e.program->Compute();
  c10::IValue got;
  std::string error;
  try {
    got = e.module.get_method("compute")({});
  } catch (const std::exception& ex) {
    error = ex.what();
  }
  if (!want.ok()) {
    EXPECT_NE(error.find(std::string(want.status().message())), std::string::npos)
        << when << ": wanted " << want.status() << "\ngot: " << error.substr(0, 400);
    return;
  }
  ASSERT_TRUE(error.empty()) << when << ": " << error.substr(0, 400);
  c10::Dict<c10::IValue, c10::IValue> dict = got.toGenericDict();
  ASSERT_EQ(dict.size(), want->size()) << when;
  for (const auto& [label, value] : *want) {
    ASSERT_TRUE(dict.contains(label)) << when << ": " << label;
    EXPECT_TRUE(Close(value, dict.at(label).toTensor())) << when << ": " << label;
  }
}

struct Case {
  std::string name;
  std::vector<std::string> specs;
  Form form;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (const auto& m : metrics::AllMetrics()) {
    std::vector<std::string> specs = testing::SpecsFor(m);
    for (size_t k = 0; k < specs.size(); ++k) {
      const std::string variant = k == 0 ? "" : absl::StrCat("_variant", k);
      for (const Form& form : testing::FormsFor(m)) {
        if (!testing::CompileModuleFor({specs[k]}, form, Reference()).ok()) continue;
        cases.push_back({Identifier(absl::StrCat(m.name, variant, "_", form.name)), {specs[k]}, form});
      }
    }
  }
  cases.push_back(
      {"cls_collection",
       {"multiclass_accuracy(num_classes=10)", "multiclass_precision(num_classes=10, average=macro)",
        "multiclass_recall(num_classes=10, average=macro)", "multiclass_f1_score(num_classes=10, average=macro)",
        "multiclass_confusion_matrix(num_classes=10)"},
       Form{"mc_f", 10}});
  cases.push_back({"reg_collection",
                   {"mean_squared_error", "mean_absolute_error", "r2_score", "pearson_corrcoef", "concordance_corrcoef",
                    "spearman_corrcoef"},
                   Form{"reg1"}});
  return cases;
}

class ExportTest : public ::testing::TestWithParam<Case> {};

TEST_P(ExportTest, LoadedModuleMatchesTheProgram) {
  // Verifies the round trip for one case: batches (an empty one among them)
  // give the program's results or its deferred-check error; merge_state of a
  // separately loaded module equals Program::Merge; reset restores the
  // initial results.
  const Case& c = GetParam();
  auto a = ExportAndLoad(c.specs, c.form, c.name + ".pt");
  ASSERT_TRUE(a.ok()) << a.status();
  at::Generator gen = at::detail::createCPUGenerator(99);
  for (int64_t n : {7, 0, 12, 1}) Update(*a, testing::MakeBatch(c.form, n, gen));
  ExpectSameCompute(*a, "after 4 batches");

  auto b = ExportAndLoad(c.specs, c.form, c.name + "_b.pt");
  ASSERT_TRUE(b.ok()) << b.status();
  for (int64_t n : {5, 9}) Update(*b, testing::MakeBatch(c.form, n, gen));
  ASSERT_TRUE(a->program->Merge(*b->program).ok());
  a->module.get_method("merge_state")({b->module._ivalue()});
  ExpectSameCompute(*a, "after merge_state");

  ASSERT_TRUE(a->program->Reset().ok());
  a->module.get_method("reset")({});
  ExpectSameCompute(*a, "after reset");
}

INSTANTIATE_TEST_SUITE_P(Registry, ExportTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

const std::vector<std::string> kCls = {"multiclass_accuracy(num_classes=3)", "multiclass_f1_score(num_classes=3)"};

std::vector<at::Tensor> Buffers(const torch::jit::Module& m) {
  std::vector<at::Tensor> out;
  for (const auto& b : m.named_buffers()) out.push_back(b.value.clone());
  return out;
}

TEST(Export, BadInputsRaiseNamingMetricAndInputAndChangeNothing) {
  // Verifies the boundary checks of the exported update: dtype, rank, a
  // fixed dim, inconsistent row counts, each an error naming the metric and
  // the input, with every buffer unchanged.
  auto e = ExportAndLoad(kCls, Form{"mc_f"}, "bad_inputs.pt");
  ASSERT_TRUE(e.ok()) << e.status();
  at::Generator gen = at::detail::createCPUGenerator(5);
  Update(*e, testing::MakeBatch(Form{"mc_f"}, 6, gen));
  std::vector<at::Tensor> before = Buffers(e->module);
  at::Tensor preds = at::randn({4, 3}), target = at::randint(0, 3, {4}, at::kLong);
  struct Bad {
    at::Tensor preds, target;
    std::vector<std::string> words;
  };
  std::vector<Bad> bad = {
      {preds.to(at::kDouble), target, {"input 'preds'", "wrong dtype", "f32[N,3]"}},
      {preds, target.to(at::kInt), {"input 'target'", "wrong dtype", "i64[N]"}},
      {preds.reshape({12}), target, {"input 'preds'", "wrong rank", "got rank 1"}},
      {at::randn({4, 5}), target, {"input 'preds'", "wrong size of dim 1", "got 5"}},
      {preds, at::randint(0, 3, {3}, at::kLong), {"input 'target' has 3 rows", "another input has 4"}},
  };
  for (const Bad& b : bad) {
    std::string error;
    try {
      e->module.get_method("update")({b.preds, b.target});
    } catch (const std::exception& ex) {
      error = ex.what();
    }
    ASSERT_FALSE(error.empty()) << b.words[0];
    EXPECT_NE(error.find(absl::StrCat(e->program->metric_names(), ": input")), std::string::npos) << error;
    for (const std::string& w : b.words) EXPECT_NE(error.find(w), std::string::npos) << w << " in " << error;
    std::vector<at::Tensor> after = Buffers(e->module);
    ASSERT_EQ(before.size(), after.size());
    for (size_t i = 0; i < before.size(); ++i) EXPECT_TRUE(at::equal(before[i], after[i])) << b.words[0];
  }
}

TEST(Export, DeferredCheckNamesMetricInputAndCount) {
  // Verifies that compute() raises for a deferred check counter above zero,
  // naming the metric, the input and the count.
  auto e = ExportAndLoad({"mean(nan_strategy=error)"}, Form{"agg"}, "deferred.pt");
  ASSERT_TRUE(e.ok()) << e.status();
  e->module.get_method("update")({at::tensor({1.0f, NAN, 2.0f, NAN})});
  std::string error;
  try {
    e->module.get_method("compute")({});
  } catch (const std::exception& ex) {
    error = ex.what();
  }
  EXPECT_NE(error.find("mean: value: 2 NaN values (nan_strategy=error)"), std::string::npos) << error;
}

TEST(Export, EveryStateIsARegisteredBuffer) {
  // Verifies that the states are buffers (what module.to(device) moves),
  // not plain attributes, and that states() lists them by state name.
  auto c = testing::CompileModuleFor({"pearson_corrcoef", "spearman_corrcoef", "mean_squared_error"}, Form{"reg1"},
                                     Reference());
  ASSERT_TRUE(c.ok()) << c.status();
  auto built = exec::torchscript::BuildTorchModule(*c->module, ir::Device{});
  ASSERT_TRUE(built.ok()) << built.status();
  std::string path = TmpPath("buffers.pt");
  built->save(path);
  torch::jit::Module m = torch::jit::load(path);
  const auto& states = c->module->states;
  EXPECT_EQ(m.named_buffers().size(), states.size());
  const c10::ClassTypePtr& type = m.type();
  size_t tensors = 0;
  for (size_t i = 0; i < type->numAttributes(); ++i) {
    if (!type->getAttribute(i)->isSubtypeOf(*c10::TensorType::get())) continue;
    ++tensors;
    EXPECT_TRUE(type->is_buffer(i)) << type->getAttributeName(i);
  }
  EXPECT_EQ(tensors, states.size());
  c10::Dict<c10::IValue, c10::IValue> d = m.get_method("states")({}).toGenericDict();
  ASSERT_EQ(d.size(), states.size());
  for (size_t i = 0; i < states.size(); ++i) {
    ASSERT_TRUE(d.contains(states[i].name)) << states[i].name;
    EXPECT_TRUE(
        d.at(states[i].name).toTensor().is_same(m.attr(exec::torchscript::BufferName(*c->module, i)).toTensor()));
  }
}

TEST(Export, UpdateRunsOnMetaBuffers) {
  // Verifies that with every buffer on meta the exported update runs on meta
  // inputs (so it reads no value on the host) and keeps the states there;
  // reset keeps them there too. (LibTorch's C++ Module::to cannot swap CPU
  // data for meta in place, so the buffers are reassigned one by one; the
  // Python test moves them with module.to('meta').)
  ops::EnsureMetaKernels();  // where/logical_*/... on meta, as Tally's eager kernels have them
  for (const auto& [specs, form] : std::vector<std::pair<std::vector<std::string>, Form>>{
           {kCls, Form{"mc_f"}},
           {{"pearson_corrcoef", "spearman_corrcoef", "r2_score"}, Form{"reg1"}},
           {{"binary_f1_score", "binary_matthews_corrcoef"}, Form{"bin_f"}},
           {{"multilabel_accuracy(num_labels=3)"}, Form{"ml_f"}}}) {
    SCOPED_TRACE(specs[0]);
    auto e = ExportAndLoad(specs, form, "meta.pt");
    ASSERT_TRUE(e.ok()) << e.status();
    for (const auto& b : e->module.named_buffers()) e->module.register_buffer(b.name, b.value.to(at::kMeta));
    at::Generator gen = at::detail::createCPUGenerator(3);
    for (int64_t n : {5, 0}) {
      std::vector<c10::IValue> args;
      for (const c10::IValue& v : Args(*e, testing::MakeBatch(form, n, gen)))
        args.emplace_back(v.toTensor().to(at::kMeta));
      e->module.get_method("update")(args);
    }
    for (const auto& b : e->module.named_buffers()) EXPECT_TRUE(b.value.is_meta()) << b.name;
    e->module.get_method("reset")({});
    for (const auto& b : e->module.named_buffers()) EXPECT_TRUE(b.value.is_meta()) << b.name;
  }
}

TEST(Export, ModulesNeedNothingOfTallyAndUpdatesReadNoHostValues) {
  // Verifies that no method of a loaded module calls a tally:: operator and
  // that the update has no host read (item, Int, nonzero, ...).
  auto e = ExportAndLoad({"multiclass_accuracy(num_classes=3)", "multiclass_cohen_kappa(num_classes=3)"}, Form{"mc_f"},
                         "pure.pt");
  ASSERT_TRUE(e.ok()) << e.status();
  for (const char* method : {"update", "compute", "reset", "merge_state"}) {
    std::string text = torch::jit::toGraphFunction(e->module.get_method(method).function()).graph()->toString();
    EXPECT_EQ(text.find("tally::"), std::string::npos) << method;
    if (std::string(method) != "update") continue;
    for (const char* host : {"aten::item", "aten::Int(", "aten::Float(", "aten::nonzero", "aten::masked_select",
                             "aten::bincount", "aten::_local_scalar_dense"}) {
      EXPECT_EQ(text.find(host), std::string::npos) << host;
    }
  }
}

TEST(Export, RejectsCompositeOps) {
  // Verifies that a module compiled with fused composite ops is refused
  // (it would need Tally's operators to run).
  auto c = testing::CompileModuleFor(kCls, Form{"mc_f"}, CompileOptions{});
  ASSERT_TRUE(c.ok()) << c.status();
  absl::Status st = exec::torchscript::ExportModule(*c->module, ir::Device{}, TmpPath("fused.pt"));
  EXPECT_EQ(st.code(), absl::StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(std::string(st.message()).find("kReference"), std::string::npos) << st;
}

TEST(Export, MergeStateRefusesOtherMetrics) {
  // Verifies that merge_state checks the other module's fingerprint.
  auto a = ExportAndLoad(kCls, Form{"mc_f"}, "merge_a.pt");
  auto b = ExportAndLoad({"multiclass_recall(num_classes=3)"}, Form{"mc_f"}, "merge_b.pt");
  ASSERT_TRUE(a.ok() && b.ok());
  std::string error;
  try {
    a->module.get_method("merge_state")({b->module._ivalue()});
  } catch (const std::exception& ex) {
    error = ex.what();
  }
  EXPECT_NE(error.find("cannot merge a module of different metrics"), std::string::npos) << error;
}

TEST(Lowering, EveryRegisteredOpHasALowering) {
  // Verifies that the lowering table (with the generic composite entry)
  // covers every op of the op table.
  for (const auto& [name, def] : ops::Registry()) {
    EXPECT_NE(exec::torchscript::FindOpLowering(name), nullptr) << name;
  }
}

}  // namespace
}  // namespace tally
