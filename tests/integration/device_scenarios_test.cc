// The seed scenarios of docs/design.md's field bugs, run for real on the test
// device (tests/testlib/test_device.h): on cpu under Bazel, on cuda:0 by
// scripts/gpu-check. Each compares the device's values with a cpu program's
// on the same rows:
// - concordance/pearson states are born on the device and stay there;
// - the ranking ops (sort, cumsum, searchsorted, bucketize) keep the placed
//   device, and an input on a second device is the boundary error;
// - updates of multiclass_accuracy and of a classification collection never
//   sync with the host (on CUDA, c10's sync debug mode makes a sync fatal);
// - retrieval at world size 2, synced over Gloo with the states on the
//   device (gpu-check runs it alone: CUDA must not be initialised before the
//   ranks fork);
// - a TorchScript module exported for the device, loaded back onto it.
#include <ATen/ATen.h>
#include <torch/script.h>

#if defined(TALLY_WITH_CUDA)
#include <c10/cuda/CUDAFunctions.h>
#endif

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "api/tally.h"
#include "engine/dist/gloo_group.h"
#include "engine/dist/launch.h"
#include "engine/dist/sync.h"
#include "engine/ir/aten_types.h"
#include "engine/runtime/compiler.h"
#include "engine/runtime/results.h"
#include "gtest/gtest.h"
#include "tests/testlib/test_device.h"

namespace tally {
namespace {

using testing::TestDevice;

c10::Device Dev() { return *ir::ToDevice(TestDevice()); }

NamedTensors On(const NamedTensors& in, c10::Device d) {
  NamedTensors out;
  for (const auto& [k, t] : in) out.emplace_back(k, t.to(d));
  return out;
}

absl::StatusOr<std::unique_ptr<Program>> Make(const std::vector<std::string>& specs, const NamedTensors& like,
                                              const ir::Device& device) {
  NamedTensors cpu;
  for (const auto& [k, t] : like) cpu.emplace_back(k, t.to(at::kCPU));
  auto sig = SignatureOf(cpu);
  if (!sig.ok()) return sig.status();
  auto entries = BuildEntries(specs, *sig, device);
  if (!entries.ok()) return entries.status();
  CompileOptions co;
  co.device = device;
  return Compile(*entries, co);
}

// SameAsCpu: every value of `got` (computed on the test device) is on that
// device and equals `want` (cpu's) to float rounding.
void ExpectSameAsCpu(const NamedTensors& got, const NamedTensors& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first);
    EXPECT_EQ(got[i].second.device(), Dev()) << got[i].first;
    at::Tensor g = got[i].second.to(at::kCPU).to(at::kDouble), w = want[i].second.to(at::kDouble);
    ASSERT_EQ(g.sizes(), w.sizes()) << got[i].first;
    EXPECT_TRUE(at::allclose(g, w, 1e-5, 1e-6, /*equal_nan=*/true)) << got[i].first << ": " << g << "\ncpu: " << w;
  }
}

// RunBoth updates a program on the test device and one on cpu with the same
// batches, and checks they compute the same values.
void RunBoth(const std::vector<std::string>& specs, const std::vector<NamedTensors>& batches) {
  auto on_dev = Make(specs, batches.front(), TestDevice());
  auto on_cpu = Make(specs, batches.front(), ir::Device{"cpu"});
  ASSERT_TRUE(on_dev.ok()) << on_dev.status();
  ASSERT_TRUE(on_cpu.ok()) << on_cpu.status();
  for (const NamedTensors& b : batches) {
    ASSERT_TRUE((*on_dev)->Update(On(b, Dev())).ok());
    ASSERT_TRUE((*on_cpu)->Update(b).ok());
  }
  for (const at::Tensor& s : (*on_dev)->states()) EXPECT_EQ(s.device(), Dev());
  auto got = (*on_dev)->Compute();
  auto want = (*on_cpu)->Compute();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_TRUE(want.ok()) << want.status();
  ExpectSameAsCpu(*got, *want);
}

NamedTensors Regression(int64_t n, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  at::Tensor target = at::randn({n}, gen) + 3.0;
  return {{"preds", target + at::randn({n}, gen) * 0.3}, {"target", target}};
}

NamedTensors Classes(int64_t n, int64_t c, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return {{"preds", at::randn({n, c}, gen)}, {"target", at::randint(0, c, {n}, gen, at::kLong)}};
}

NamedTensors Ranking(int64_t n, int64_t queries, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  return {{"preds", at::rand({n}, gen)},
          {"target", at::randint(0, 2, {n}, gen, at::kLong)},
          {"indexes", at::randint(0, queries, {n}, gen, at::kLong)}};
}

TEST(DeviceScenarios, ConcordanceAndPearsonStatesAreBornOnTheDevice) {
  // Verifies the "Encountered different devices" bug cannot happen: every
  // state exists on the device before the first update and stays there.
  auto p = Make({"concordance_corrcoef", "pearson_corrcoef"}, Regression(8, 1), TestDevice());
  ASSERT_TRUE(p.ok()) << p.status();
  for (const at::Tensor& s : (*p)->states()) EXPECT_EQ(s.device(), Dev());
  RunBoth({"concordance_corrcoef", "pearson_corrcoef"}, {Regression(100, 1), Regression(37, 2), Regression(1, 3)});
}

TEST(DeviceScenarios, RankingOpsKeepThePlacedDevice) {
  // Verifies the _cumsum-lands-on-cuda:0 bug: exact AUROC/AP, the ROC curve
  // and retrieval (sort, cumsum, searchsorted, bucketize) compute on the
  // device they were placed on, with cpu's values.
  at::Generator gen = at::detail::createCPUGenerator(4);
  std::vector<NamedTensors> binary;
  for (int64_t n : {200, 33}) {
    binary.push_back({{"preds", at::rand({n}, gen)}, {"target", at::randint(0, 2, {n}, gen, at::kLong)}});
  }
  RunBoth({"binary_auroc", "binary_average_precision", "binary_auroc(thresholds=50)"}, binary);
  RunBoth({"retrieval_average_precision", "retrieval_reciprocal_rank", "retrieval_normalized_dcg",
           "retrieval_precision(top_k=3)"},
          {Ranking(300, 20, 5), Ranking(41, 20, 6)});
}

TEST(DeviceScenarios, AnInputOnASecondDeviceIsTheBoundaryError) {
  // Verifies the Composer bug (inputs on two devices): a batch on a second
  // device (cpu for an accelerator, meta for cpu) is refused before any
  // state changes, with an error naming the input and both devices.
  const c10::Device second = testing::OnAccelerator() ? c10::Device(at::kCPU) : c10::Device(at::kMeta);
  NamedTensors batch = Classes(16, 4, 7);
  auto p = Make({"multiclass_accuracy(num_classes=4)"}, batch, TestDevice());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*p)->Update(On(batch, Dev())).ok());
  auto before = (*p)->Compute();
  ASSERT_TRUE(before.ok());
  NamedTensors mixed = On(batch, Dev());
  mixed[1].second = batch[1].second.to(second);
  absl::Status st = (*p)->Update(mixed);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(absl::StrContains(st.message(), "target")) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), second.str())) << st;
  EXPECT_TRUE(absl::StrContains(st.message(), TestDevice().name)) << st;
  auto after = (*p)->Compute();
  ASSERT_TRUE(after.ok());
  EXPECT_TRUE(at::equal(before->front().second, after->front().second));
}

// HostSyncsFatal: while alive on a CUDA device, any host sync throws (c10's
// sync debug mode at error level). active() says whether it is armed: never
// on cpu, or in a build whose torch has no CUDA.
class HostSyncsFatal {
 public:
  HostSyncsFatal() {
#if defined(TALLY_WITH_CUDA)
    if (Dev().is_cuda()) {
      previous_ = static_cast<int>(c10::cuda::warning_state().get_sync_debug_mode());
      c10::cuda::warning_state().set_sync_debug_mode(c10::cuda::SyncDebugMode::L_ERROR);
      active_ = true;
    }
#endif
  }
  ~HostSyncsFatal() {
#if defined(TALLY_WITH_CUDA)
    if (active_) c10::cuda::warning_state().set_sync_debug_mode(static_cast<c10::cuda::SyncDebugMode>(previous_));
#endif
  }
  bool active() const { return active_; }

 private:
  bool active_ = false;
  int previous_ = 0;
};

TEST(DeviceScenarios, UpdatesNeverSyncWithTheHost) {
  // Verifies the multiclass_accuracy host-sync bug on real hardware: with
  // every host sync fatal, updates of multiclass_accuracy and of a whole
  // classification collection (the fused confusion kernels, binned curves,
  // calibration, the deferred input checks) run, and give cpu's values.
  const std::vector<std::string> collection = {
      "multiclass_accuracy(num_classes=10)",
      "multiclass_precision(num_classes=10, average=macro)",
      "multiclass_recall(num_classes=10, average=macro)",
      "multiclass_f1_score(num_classes=10, average=macro)",
      "multiclass_confusion_matrix(num_classes=10)",
      "multiclass_auroc(num_classes=10, thresholds=100)",
      "multiclass_calibration_error(num_classes=10)",
  };
  for (const auto& specs : {std::vector<std::string>{"multiclass_accuracy(num_classes=10)"}, collection}) {
    std::vector<NamedTensors> batches = {Classes(512, 10, 1), Classes(3, 10, 2), Classes(1000, 10, 3)};
    std::vector<NamedTensors> on_dev;
    for (const auto& b : batches) on_dev.push_back(On(b, Dev()));  // copies in before syncs are fatal
    auto dev = Make(specs, batches.front(), TestDevice());
    auto cpu = Make(specs, batches.front(), ir::Device{"cpu"});
    ASSERT_TRUE(dev.ok()) << dev.status();
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    {
      HostSyncsFatal fatal;
      std::cout << "host syncs fatal: " << (fatal.active() ? "on" : "off") << " (" << specs.size() << " metrics)\n";
      for (int round = 0; round < 3; ++round) {
        for (const auto& b : on_dev) {
          absl::Status st = (*dev)->Update(b);
          ASSERT_TRUE(st.ok()) << "round " << round << ": " << st;
        }
      }
      if (fatal.active()) {
        // The mode is live: a deliberate host read is refused.
        EXPECT_ANY_THROW((void)on_dev.front()[0].second.sum().item<float>());
      }
    }
    for (int round = 0; round < 3; ++round) {
      for (const auto& b : batches) ASSERT_TRUE((*cpu)->Update(b).ok());
    }
    auto got = (*dev)->Compute();
    auto want = (*cpu)->Compute();
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(want.ok()) << want.status();
    ExpectSameAsCpu(*got, *want);
  }
}

TEST(DeviceScenarios, RetrievalAtWorldSizeTwoOverGloo) {
  // Verifies sync with the states on the device: two forked ranks, each fed
  // its shard on the test device, synced over Gloo, give one cpu process's
  // values over every row (queries split across the ranks included).
  const std::vector<std::string> specs = {"retrieval_average_precision", "retrieval_reciprocal_rank",
                                          "retrieval_normalized_dcg", "retrieval_precision(top_k=3)"};
  const NamedTensors rows = Ranking(401, 37, 9);
  auto reference = Make(specs, rows, ir::Device{"cpu"});
  ASSERT_TRUE(reference.ok()) << reference.status();
  ASSERT_TRUE((*reference)->Update(rows).ok());
  auto want = (*reference)->Compute();
  ASSERT_TRUE(want.ok()) << want.status();
  const std::string device = TestDevice().name;
  auto outcomes =
      dist::RunRanks(2, dist::LaunchOptions{}, [&](const dist::Rendezvous& rv) -> absl::StatusOr<std::string> {
        auto group = dist::ConnectGloo(rv);
        if (!group.ok()) return group.status();
        auto [begin, end] = dist::ShardRange(rows.front().second.size(0), rv.world_size, rv.rank);
        NamedTensors shard;
        for (const auto& [k, t] : rows) shard.emplace_back(k, t.slice(0, begin, end));
        auto p = Make(specs, shard, ir::Device{device});
        if (!p.ok()) return p.status();
        if (absl::Status st = (*p)->Update(On(shard, Dev())); !st.ok()) return st;
        if (auto synced = dist::Sync(**p, (*group)->pg()); !synced.ok()) return synced.status();
        auto got = (*p)->Compute();
        if (!got.ok()) return got.status();
        std::string out;
        for (size_t i = 0; i < got->size(); ++i) {
          at::Tensor g = (*got)[i].second;
          const bool same = g.device() == Dev() &&
                            at::allclose(g.to(at::kCPU).to(at::kDouble), (*want)[i].second.to(at::kDouble), 1e-5, 1e-6);
          absl::StrAppend(&out, same ? "ok " : "MISMATCH ", (*got)[i].first, " on ", g.device().str(), "\n");
        }
        return out;
      });
  ASSERT_TRUE(outcomes.ok()) << outcomes.status();
  for (const dist::RankOutcome& r : *outcomes) {
    ASSERT_TRUE(r.status.ok()) << "rank " << r.rank << ": " << r.status;
    EXPECT_FALSE(absl::StrContains(r.output, "MISMATCH")) << "rank " << r.rank << ":\n" << r.output;
    EXPECT_EQ(r.output.find("ok "), 0u) << r.output;
  }
}

TEST(DeviceScenarios, TorchScriptExportRunsOnTheDevice) {
  // Verifies that a module exported for the device loads back onto it with
  // every buffer there, and that its update/compute give the eager
  // program's values.
  const std::vector<std::string> specs = {"multiclass_accuracy(num_classes=5)",
                                          "multiclass_f1_score(num_classes=5, average=macro)",
                                          "multiclass_auroc(num_classes=5, thresholds=20)"};
  std::vector<NamedTensors> batches = {Classes(64, 5, 11), Classes(9, 5, 12)};
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = absl::StrCat(tmp ? tmp : "/tmp", "/device_scenarios_export_", getpid(), ".pt");
  ExportOptions eo;
  eo.device = TestDevice();
  eo.out = path;
  auto summary = Export(specs, batches.front(), eo);
  ASSERT_TRUE(summary.ok()) << summary.status();
  torch::jit::Module m = torch::jit::load(path, Dev());
  std::remove(path.c_str());
  for (const at::Tensor& b : m.buffers()) EXPECT_EQ(b.device(), Dev());
  std::vector<std::string> params;
  for (const c10::Argument& a : m.get_method("update").function().getSchema().arguments()) {
    if (a.name() != "self") params.push_back(a.name());
  }
  auto eager = Make(specs, batches.front(), TestDevice());
  ASSERT_TRUE(eager.ok()) << eager.status();
  for (const NamedTensors& b : batches) {
    NamedTensors on_dev = On(b, Dev());
    ASSERT_TRUE((*eager)->Update(on_dev).ok());
    std::vector<c10::IValue> args;
    for (const std::string& name : params) {
      for (const auto& [k, t] : on_dev)
        if (k == name) args.emplace_back(t);
    }
    ASSERT_EQ(args.size(), params.size());
    m.get_method("update")(args);
  }
  auto want = (*eager)->Compute();
  ASSERT_TRUE(want.ok()) << want.status();
  c10::Dict<c10::IValue, c10::IValue> got = m.get_method("compute")({}).toGenericDict();
  NamedTensors got_named;
  for (const auto& [label, value] : *want) {
    ASSERT_TRUE(got.contains(label)) << label;
    got_named.emplace_back(label, got.at(label).toTensor());
  }
  NamedTensors want_cpu;
  for (const auto& [label, value] : *want) want_cpu.emplace_back(label, value.to(at::kCPU));
  ExpectSameAsCpu(got_named, want_cpu);
}

}  // namespace
}  // namespace tally
