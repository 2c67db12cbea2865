// Tests of the fused reg_stats kernel against its ATen decomposition (the
// reference path, FusePolicy::kReference): every regression metric that takes
// its partials from reg_stats, alone and in collections, on float32, float64
// and mixed inputs of shape [N] and [N, 3], centred and offset by 1e4 and
// 1e6, in one batch (several blocks and threads), in batches of 7 and merged
// from parts; constant columns (exact zeros), NaNs, empty batches; and the
// kernel itself: its result order, thread-count independence, Meta.
//
// The contract is a tolerance (ops/fused/reg_stats.h): M2s and error sums to
// 1e-12 relative, the two-double means to 1e-12 of the data's spread, the
// co-moment to 1e-12 of √(M2_preds·M2_target); exact zeros stay exact.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/InferenceMode.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/tally.h"
#include "engine/runtime/compiler.h"
#include "gtest/gtest.h"
#include "ops/fused/reg_stats.h"

namespace tally {
namespace {

constexpr double kTol = 1e-12;

const std::vector<std::string> kFive = {"mean_squared_error", "mean_absolute_error", "r2_score", "pearson_corrcoef",
                                        "concordance_corrcoef"};

// --- data --------------------------------------------------------------------

struct DataCase {
  at::ScalarType preds = at::kFloat, target = at::kFloat;
  bool two_dim = false;  // [N, 3] instead of [N]
  double offset = 0;
};

std::string DataName(const DataCase& c) {
  auto dt = [](at::ScalarType s) { return s == at::kFloat ? "f32" : s == at::kDouble ? "f64" : "i32"; };
  std::string off = c.offset == 0 ? "0" : c.offset == 1e4 ? "1e4" : "1e6";
  return absl::StrCat(dt(c.preds), dt(c.target), c.two_dim ? "_Nx3" : "_N", "_off", off);
}

// MakeInputs draws correlated (target, preds = target + noise) columns with
// different spreads, offset by `c.offset`.
NamedTensors MakeInputs(const DataCase& c, int64_t n, uint64_t seed) {
  at::Generator gen = at::detail::createCPUGenerator(seed);
  std::vector<int64_t> shape = c.two_dim ? std::vector<int64_t>{n, 3} : std::vector<int64_t>{n};
  at::Tensor scale = c.two_dim ? at::tensor({1.0, 30.0, 0.01}, at::kDouble) : at::tensor(2.0, at::kDouble);
  at::Tensor target = at::randn(shape, gen, at::kDouble) * scale + c.offset;
  at::Tensor preds = target + at::randn(shape, gen, at::kDouble) * scale * 0.3;
  return {{"preds", preds.to(c.preds)}, {"target", target.to(c.target)}};
}

NamedTensors Rows(const NamedTensors& in, int64_t start, int64_t len) {
  NamedTensors out;
  for (const auto& [k, t] : in) out.emplace_back(k, t.narrow(0, start, len));
  return out;
}

// --- programs ------------------------------------------------------------------

std::unique_ptr<Program> MakeProgram(const std::vector<std::string>& specs, const NamedTensors& like,
                                     passes::FusePolicy policy) {
  auto sig = tally::SignatureOf(like);
  EXPECT_TRUE(sig.ok()) << sig.status();
  if (!sig.ok()) return nullptr;
  auto entries = tally::BuildEntries(specs, *sig, ir::Device{});
  EXPECT_TRUE(entries.ok()) << entries.status();
  if (!entries.ok()) return nullptr;
  CompileOptions co;
  co.fuse_policy = policy;
  auto prog = Compile(*entries, co);
  EXPECT_TRUE(prog.ok()) << prog.status();
  return prog.ok() ? std::move(*prog) : nullptr;
}

// Feed updates `p` with rows [start, start + len) in batches of `batch` (0:
// one batch).
void Feed(Program& p, const NamedTensors& in, int64_t start, int64_t len, int64_t batch) {
  if (batch == 0) batch = std::max<int64_t>(len, 1);
  for (int64_t s = 0; s < len; s += batch) {
    absl::Status st = p.Update(Rows(in, start + s, std::min(batch, len - s)));
    ASSERT_TRUE(st.ok()) << st;
  }
}

// --- comparison ----------------------------------------------------------------

std::vector<double> Values(const at::Tensor& t) {
  at::Tensor d = t.to(at::kDouble).contiguous().reshape({-1});
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

// Close is |got − want| <= tol (NaN only against NaN; infinities exactly).
bool Close(double got, double want, double tol) {
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got);
  if (std::isinf(want) || std::isinf(got)) return got == want;
  return std::fabs(got - want) <= tol;
}

// ExpectSameStates checks `got` (fused) against `want` (reference) under the
// kernel's contract. States are found by the names MomentGroup and the error
// metrics give them.
void ExpectSameStates(const Program& got, const Program& want, const std::string& what) {
  const ir::Module& m = want.module();
  auto state = [&](const Program& p, const std::string& name) {
    int i = m.StateIndex(name);
    return i < 0 ? std::vector<double>{} : Values(p.states()[i]);
  };
  for (const ir::StateDecl& s : m.states) {
    const std::string& name = s.name;
    std::vector<double> g = state(got, name), w = state(want, name);
    ASSERT_EQ(g.size(), w.size()) << what << ": " << name;
    size_t dot = name.find('.');
    std::string metric = name.substr(0, dot + 1), field = name.substr(dot + 1);
    if (field.rfind("mean_lo_", 0) == 0) continue;  // with its mean
    for (size_t j = 0; j < w.size(); ++j) {
      std::string where = absl::StrCat(what, ": ", name, "[", j, "] got ", g[j], " want ", w[j]);
      if (field == "n" || field == "total") {
        EXPECT_EQ(g[j], w[j]) << where;
      } else if (field.rfind("mean_", 0) == 0) {
        // hi + lo, compared as two doubles; within 1e-12 of the spread, and
        // exactly for a constant column (M2 = 0).
        std::string var = field.substr(5);
        double glo = state(got, metric + "mean_lo_" + var)[j], wlo = state(want, metric + "mean_lo_" + var)[j];
        double m2 = state(want, metric + "m2_" + var)[j], n = state(want, metric + "n")[0];
        double spread = std::sqrt(m2 / std::max(n, 1.0));
        if (std::isnan(w[j]) || std::isnan(wlo)) {
          EXPECT_TRUE(std::isnan(g[j] + glo)) << where;
        } else if (m2 == 0) {
          EXPECT_EQ(g[j], w[j]) << where;
          EXPECT_EQ(glo, wlo) << where << " (lo)";
        } else {
          EXPECT_LE(std::fabs((g[j] - w[j]) + (glo - wlo)), kTol * spread) << where << " lo " << glo << " vs " << wlo;
        }
      } else if (field.rfind("c_", 0) == 0) {
        double scale = std::sqrt(state(want, metric + "m2_preds")[j] * state(want, metric + "m2_target")[j]);
        EXPECT_TRUE(Close(g[j], w[j], kTol * scale)) << where;
      } else {
        // m2_*, rss, sum_squared_error, sum_abs_error.
        EXPECT_TRUE(Close(g[j], w[j], kTol * std::fabs(w[j]))) << where;
      }
    }
  }
}

void ExpectSameResults(const Program& got, const Program& want, const std::string& what) {
  auto g = got.Compute();
  auto w = want.Compute();
  ASSERT_TRUE(g.ok() && w.ok()) << g.status() << w.status();
  ASSERT_EQ(g->size(), w->size());
  for (size_t i = 0; i < w->size(); ++i) {
    std::vector<double> gv = Values((*g)[i].second), wv = Values((*w)[i].second);
    ASSERT_EQ(gv.size(), wv.size());
    for (size_t j = 0; j < wv.size(); ++j) {
      EXPECT_TRUE(Close(gv[j], wv[j], kTol * std::max(1.0, std::fabs(wv[j]))))
          << what << ": " << (*w)[i].first << "[" << j << "] got " << gv[j] << " want " << wv[j];
    }
  }
}

// Compare runs a fused and a reference program of `specs` over the same rows
// (`feed(program, policy)`) and checks states and results.
template <typename FeedFn>
void Compare(const std::vector<std::string>& specs, const NamedTensors& in, const std::string& what, FeedFn feed) {
  auto fused = MakeProgram(specs, in, passes::FusePolicy::kFused);
  auto ref = MakeProgram(specs, in, passes::FusePolicy::kReference);
  ASSERT_TRUE(fused && ref);
  feed(*fused, passes::FusePolicy::kFused);
  feed(*ref, passes::FusePolicy::kReference);
  ExpectSameStates(*fused, *ref, what);
  ExpectSameResults(*fused, *ref, what);
}

// CompareAllWays checks one batch, batches of 7 (on the first `small` rows)
// and a merge of two programs fed uneven parts.
void CompareAllWays(const std::vector<std::string>& specs, const NamedTensors& in, const std::string& what,
                    int64_t small = 400) {
  int64_t n = in[0].second.size(0);
  Compare(specs, in, what + " one batch", [&](Program& p, passes::FusePolicy) { Feed(p, in, 0, n, 0); });
  small = std::min(small, n);
  Compare(specs, in, what + " batches of 7", [&](Program& p, passes::FusePolicy) { Feed(p, in, 0, small, 7); });
  Compare(specs, in, what + " merged", [&](Program& p, passes::FusePolicy policy) {
    auto other = MakeProgram(specs, in, policy);
    ASSERT_TRUE(other);
    int64_t third = n / 3;
    Feed(p, in, 0, third, 0);
    Feed(*other, in, third, n - third, 997);
    ASSERT_TRUE(p.Merge(*other).ok());
  });
}

// --- fused vs reference, per metric and per collection -------------------------

struct Case {
  std::vector<std::string> specs;
  DataCase data;
  int64_t rows;
};

class RegStatsTest : public ::testing::TestWithParam<Case> {};

TEST_P(RegStatsTest, FusedEqualsReference) {
  // Verifies that the fused kernel's states and results equal the reference
  // path's within the contract, in one batch (several blocks and, from 16K
  // rows, threads), in batches of 7, and merged from uneven parts.
  const Case& c = GetParam();
  NamedTensors in = MakeInputs(c.data, c.rows, 5);
  CompareAllWays(c.specs, in, absl::StrCat(absl::StrJoin(c.specs, "+"), " on ", DataName(c.data)));
}

std::vector<Case> Cases() {
  std::vector<Case> out;
  std::vector<std::string> six = kFive;
  six.push_back("explained_variance");
  std::vector<DataCase> all;
  for (auto [p, t] :
       {std::pair{at::kFloat, at::kFloat}, std::pair{at::kDouble, at::kDouble}, std::pair{at::kFloat, at::kDouble}}) {
    for (bool two_dim : {false, true}) {
      for (double offset : {0.0, 1e4, 1e6}) all.push_back({p, t, two_dim, offset});
    }
  }
  for (const DataCase& d : all) {
    int64_t rows = d.two_dim ? 12001 : 40001;
    out.push_back({kFive, d, rows});
    out.push_back({six, d, rows});
  }
  std::vector<std::string> each = {"mean_squared_error",   "mean_squared_error(squared=false)",
                                   "mean_absolute_error",  "r2_score",
                                   "r2_score(adjusted=3)", "explained_variance",
                                   "pearson_corrcoef",     "concordance_corrcoef"};
  std::vector<std::string> columns = {"mean_squared_error(num_outputs=3)", "mean_absolute_error(num_outputs=3)",
                                      "r2_score(multioutput=raw_values)",
                                      "explained_variance(multioutput=variance_weighted)"};
  for (const DataCase& d : {DataCase{at::kFloat, at::kFloat, false, 1e4}, DataCase{at::kDouble, at::kDouble, true, 1e6},
                            DataCase{at::kFloat, at::kDouble, true, 0}, DataCase{at::kInt, at::kInt, false, 0}}) {
    for (const std::string& s : each) out.push_back({{s}, d, 20001});
    if (d.two_dim) {
      for (const std::string& s : columns) out.push_back({{s}, d, 20001});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Fused, RegStatsTest, ::testing::ValuesIn(Cases()),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           std::string name =
                               absl::StrCat(i.index, "_",
                                            i.param.specs.size() == 1 ? i.param.specs[0]
                                                                      : absl::StrCat(i.param.specs.size(), "_metrics"),
                                            "_", DataName(i.param.data));
                           for (char& ch : name)
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           return name;
                         });

// --- edge cases ----------------------------------------------------------------

std::vector<std::string> SixMetrics() {
  std::vector<std::string> six = kFive;
  six.push_back("explained_variance");
  return six;
}

TEST(RegStatsEdgeTest, ConstantColumnsKeepExactZeros) {
  // Verifies the constant-column rule on the fused path: a constant preds,
  // target or error column (in blocks, batches of 7 and merges) has its value
  // as the mean and exactly 0 as M2 and co-moment, like the reference, so
  // pearson is NaN and explained_variance 1 exactly where TorchMetrics says.
  for (at::ScalarType dtype : {at::kFloat, at::kDouble}) {
    for (double offset : {0.0, 1e4}) {
      int64_t n = 20001;
      at::Generator gen = at::detail::createCPUGenerator(3);
      // Multiples of 1/64: target + 0.5 is exact in float32 too.
      at::Tensor target = (at::randn({n, 3}, gen, at::kDouble) * 64).round() / 64 + offset;
      at::Tensor preds = target + at::randn({n, 3}, gen, at::kDouble);
      preds.select(1, 0).fill_(offset + 0.1);               // constant preds
      target.select(1, 1).fill_(offset - 0.3);              // constant target
      preds.select(1, 2).copy_(target.select(1, 2) + 0.5);  // constant error
      NamedTensors in = {{"preds", preds.to(dtype)}, {"target", target.to(dtype)}};
      std::string what = absl::StrCat("constant columns ", dtype == at::kFloat ? "f32" : "f64", " offset ", offset);
      CompareAllWays(SixMetrics(), in, what);
      auto fused = MakeProgram({"pearson_corrcoef", "explained_variance(multioutput=raw_values)"}, in,
                               passes::FusePolicy::kFused);
      ASSERT_TRUE(fused);
      Feed(*fused, in, 0, n, 0);
      auto r = fused->Compute();
      ASSERT_TRUE(r.ok()) << r.status();
      std::vector<double> pearson = Values((*r)[0].second), ev = Values((*r)[1].second);
      EXPECT_TRUE(std::isnan(pearson[0]) && std::isnan(pearson[1])) << what;
      EXPECT_EQ(ev[2], 1.0) << what;
      // The 1-D form: constant preds.
      NamedTensors one = {{"preds", preds.select(1, 0).contiguous().to(dtype)},
                          {"target", target.select(1, 0).contiguous().to(dtype)}};
      CompareAllWays(SixMetrics(), one, what + " 1-D");
    }
  }
}

TEST(RegStatsEdgeTest, NaNsPoisonTheirColumnAsInTheReference) {
  // Verifies that a NaN makes the statistics it enters NaN on both paths
  // (and leaves the other columns and variables alone).
  for (bool two_dim : {false, true}) {
    NamedTensors in = MakeInputs({at::kFloat, at::kFloat, two_dim, 1e4}, 30001, 9);
    at::Tensor preds = in[0].second.clone(), target = in[1].second.clone();
    if (two_dim) {
      preds[300][1] = NAN;
      target[25000][2] = NAN;
    } else {
      preds[300] = NAN;
    }
    in = {{"preds", preds}, {"target", target}};
    CompareAllWays(SixMetrics(), in, two_dim ? "NaN in columns 1 and 2" : "NaN");
  }
}

TEST(RegStatsEdgeTest, EmptyBatchesGiveZerosAndChangeNothing) {
  // Verifies that an empty batch gives zero partials (states equal to the
  // reference's) and that empty batches between real ones leave the fused
  // states bit-identical.
  for (bool two_dim : {false, true}) {
    NamedTensors in = MakeInputs({at::kFloat, at::kDouble, two_dim, 1e4}, 100, 2);
    Compare(SixMetrics(), in, "empty",
            [&](Program& p, passes::FusePolicy) { ASSERT_TRUE(p.Update(Rows(in, 0, 0)).ok()); });
    auto plain = MakeProgram(SixMetrics(), in, passes::FusePolicy::kFused);
    auto gaps = MakeProgram(SixMetrics(), in, passes::FusePolicy::kFused);
    ASSERT_TRUE(plain && gaps);
    Feed(*plain, in, 0, 100, 7);
    for (int64_t s = 0; s < 100; s += 7) {
      ASSERT_TRUE(gaps->Update(Rows(in, s, 0)).ok());
      ASSERT_TRUE(gaps->Update(Rows(in, s, std::min<int64_t>(7, 100 - s))).ok());
    }
    ASSERT_TRUE(gaps->Update(Rows(in, 0, 0)).ok());
    for (size_t i = 0; i < plain->states().size(); ++i) {
      EXPECT_TRUE(at::equal(plain->states()[i], gaps->states()[i])) << plain->module().states[i].name;
    }
  }
}

TEST(RegStatsEdgeTest, CollectionRunsOneFusedKernel) {
  // Verifies that the regression metrics of a collection share one reg_stats
  // node (cse), which the fuse pass keeps on CPU: one kernel per update.
  NamedTensors in = MakeInputs({at::kFloat, at::kFloat, false, 0}, 10, 1);
  auto fused = MakeProgram(SixMetrics(), in, passes::FusePolicy::kFused);
  auto ref = MakeProgram(SixMetrics(), in, passes::FusePolicy::kReference);
  ASSERT_TRUE(fused && ref);
  EXPECT_EQ(fused->num_update_kernels(), 1);
  EXPECT_GT(ref->num_update_kernels(), 30);
  // States stay per metric.
  EXPECT_GE(fused->module().StateIndex("pearson_corrcoef.m2_preds"), 0);
  EXPECT_GE(fused->module().StateIndex("concordance_corrcoef.m2_preds"), 0);
}

// --- the kernel ------------------------------------------------------------------

TEST(RegStatsKernel, ResultsComeInTheDocumentedOrder) {
  // Verifies the result order on a hand-checked example: preds 1..4, target 2.
  auto r = ops::fused::RegStatsCpu(at::tensor({1.0f, 2.0f, 3.0f, 4.0f}), at::tensor({2.0f, 2.0f, 2.0f, 2.0f}), true);
  ASSERT_EQ(r.size(), static_cast<size_t>(ops::fused::kRegStatsOutputs));
  EXPECT_EQ(r[0].item<int64_t>(), 4);
  // error = target − preds = 1, 0, −1, −2: mean −0.5, M2 5.
  const std::vector<double> want = {2.5, 0, 5, 2, 0, 0, -0.5, 0, 5, 0, 6, 4, 6, 4};
  for (size_t k = 1; k < r.size(); ++k) {
    EXPECT_EQ(r[k].scalar_type(), at::kDouble);
    EXPECT_EQ(r[k].dim(), k <= 12 ? 1 : 0) << k;
    EXPECT_DOUBLE_EQ(r[k].sum().item<double>(), want[k - 1]) << "result " << k;
  }
}

TEST(RegStatsKernel, ResultDoesNotDependOnTheThreadCount) {
  // Verifies that blocks and chunks fold in row order whatever the threads:
  // 1 and 2 threads give bit-identical results.
  NamedTensors in = MakeInputs({at::kFloat, at::kFloat, false, 1e6}, 200003, 4);
  int threads = at::get_num_threads();
  at::set_num_threads(1);
  auto one = ops::fused::RegStatsCpu(in[0].second, in[1].second, true);
  at::set_num_threads(2);
  auto two = ops::fused::RegStatsCpu(in[0].second, in[1].second, true);
  at::set_num_threads(threads);
  for (size_t k = 0; k < one.size(); ++k) EXPECT_TRUE(at::equal(one[k], two[k])) << "result " << k;
}

TEST(RegStatsKernel, RunsOnMetaThroughTheDispatcher) {
  // Verifies that the registered tally::reg_stats operator has a Meta kernel
  // with the planned result shapes (so the meta-execution proof covers it).
  auto op = c10::Dispatcher::singleton()
                .findSchemaOrThrow("tally::reg_stats", "")
                .typed<std::vector<at::Tensor>(const at::Tensor&, const at::Tensor&, bool)>();
  c10::InferenceMode guard;
  auto meta = at::TensorOptions().device(at::kMeta);
  auto r = op.call(at::empty({9, 4}, meta.dtype(at::kFloat)), at::empty({9, 4}, meta.dtype(at::kDouble)), true);
  ASSERT_EQ(r.size(), static_cast<size_t>(ops::fused::kRegStatsOutputs));
  for (size_t k = 0; k < r.size(); ++k) {
    EXPECT_TRUE(r[k].is_meta()) << k;
    EXPECT_EQ(r[k].scalar_type(), k == 0 ? at::kLong : at::kDouble) << k;
    EXPECT_EQ(r[k].sizes(), (k == 0 || k > 12) ? std::vector<int64_t>{} : std::vector<int64_t>{4}) << k;
  }
  auto one_dim = op.call(at::empty({0}, meta.dtype(at::kFloat)), at::empty({0}, meta.dtype(at::kFloat)), false);
  EXPECT_EQ(one_dim[1].sizes(), (std::vector<int64_t>{1}));
}

TEST(RegStatsKernel, SkippedErrorMomentsAreZerosAndChangeNothingElse) {
  // Verifies error_moments=false (set by `fuse` when no metric reads them):
  // results 7..9 are zeros and every other result is bit-identical, for one
  // column and for several.
  for (bool two_dim : {false, true}) {
    const int d = two_dim ? 3 : 1;
    NamedTensors in = MakeInputs({at::kFloat, at::kDouble, two_dim, 1e4}, 70001, 5);
    auto all = ops::fused::RegStatsCpu(in[0].second, in[1].second, true);
    auto pruned = ops::fused::RegStatsCpu(in[0].second, in[1].second, false);
    ASSERT_EQ(all.size(), pruned.size());
    for (size_t k = 0; k < all.size(); ++k) {
      if (k >= 7 && k <= 9) {
        EXPECT_TRUE(at::equal(pruned[k], at::zeros_like(all[k]))) << "d=" << d << " result " << k;
        // (The low part of the mean, result 8, may be exactly 0.)
        if (k != 8) {
          EXPECT_NE(all[k].abs().sum().item<double>(), 0.0) << "d=" << d << " result " << k;
        }
      } else {
        EXPECT_TRUE(at::equal(pruned[k], all[k])) << "d=" << d << " result " << k;
      }
    }
  }
}

TEST(RegStatsKernel, RejectsMismatchedInputs) {
  // Verifies the kernel's own checks (the op table rejects these earlier).
  EXPECT_THROW(ops::fused::RegStatsCpu(at::zeros({4}), at::zeros({5}), true), c10::Error);
  EXPECT_THROW(ops::fused::RegStatsCpu(at::zeros({4}, at::kLong), at::zeros({4}, at::kLong), true), c10::Error);
  EXPECT_THROW(ops::fused::RegStatsCpu(at::zeros({4, 2, 2}), at::zeros({4, 2, 2}), true), c10::Error);
}

// --- moments_merge ---------------------------------------------------------------

// Equal is at::equal with NaN equal to NaN.
bool Equal(const at::Tensor& a, const at::Tensor& b) {
  return a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() &&
         at::equal(at::nan_to_num(a, 1e300), at::nan_to_num(b, 1e300)) && at::equal(a.isnan(), b.isnan());
}

TEST(MomentsMergeTest, FusedFoldIsBitIdenticalToItsDecomposition) {
  // Verifies that the fused moments_merge kernel performs the merge graph's
  // operations exactly: the same states (loaded into a fused and a reference
  // program) merge to bit-identical states, for full, empty and NaN sides.
  NamedTensors in = MakeInputs({at::kFloat, at::kFloat, true, 1e6}, 3000, 8);
  NamedTensors nan_in = MakeInputs({at::kFloat, at::kFloat, true, 1e4}, 300, 9);
  nan_in[0].second[7][2] = NAN;
  std::vector<std::string> specs = SixMetrics();
  // Side contents: rows [0, 1000), [1000, 3000), none, and NaN rows.
  auto state_of = [&](int which) {
    auto p = MakeProgram(specs, in, passes::FusePolicy::kFused);
    if (which == 0) Feed(*p, in, 0, 1000, 0);
    if (which == 1) Feed(*p, in, 1000, 2000, 0);
    if (which == 3) Feed(*p, nan_in, 0, 300, 0);
    auto bytes = p->SaveState();
    EXPECT_TRUE(bytes.ok());
    return *bytes;
  };
  std::vector<std::string> saved = {state_of(0), state_of(1), state_of(2), state_of(3)};
  for (int a = 0; a < 4; ++a) {
    for (int b = 0; b < 4; ++b) {
      std::vector<at::Tensor> merged[2];
      for (auto policy : {passes::FusePolicy::kFused, passes::FusePolicy::kReference}) {
        auto pa = MakeProgram(specs, in, policy), pb = MakeProgram(specs, in, policy);
        ASSERT_TRUE(pa->LoadState(saved[a]).ok() && pb->LoadState(saved[b]).ok());
        ASSERT_TRUE(pa->Merge(*pb).ok());
        merged[policy == passes::FusePolicy::kFused ? 0 : 1] = pa->states();
      }
      auto probe = MakeProgram(specs, in, passes::FusePolicy::kFused);
      for (size_t i = 0; i < merged[0].size(); ++i) {
        EXPECT_TRUE(Equal(merged[0][i], merged[1][i]))
            << "sides " << a << ", " << b << ": " << probe->module().states[i].name << "\n"
            << merged[0][i] << "\nvs\n"
            << merged[1][i];
      }
    }
  }
}

TEST(MomentsMergeTest, RunsOnMetaThroughTheDispatcher) {
  // Verifies that the registered tally::moments_merge operator has a Meta
  // kernel returning one side's shapes.
  auto op = c10::Dispatcher::singleton()
                .findSchemaOrThrow("tally::moments_merge", "")
                .typed<std::vector<at::Tensor>(at::TensorList, int64_t, at::IntArrayRef)>();
  c10::InferenceMode guard;
  auto meta = at::TensorOptions().device(at::kMeta);
  std::vector<at::Tensor> states;
  for (int side = 0; side < 2; ++side) {
    states.push_back(at::empty({}, meta.dtype(at::kLong)));
    for (int k = 0; k < 7; ++k) states.push_back(at::empty({3}, meta.dtype(at::kDouble)));
  }
  auto r = op.call(states, 2, std::vector<int64_t>{0, 1});
  ASSERT_EQ(r.size(), 8u);
  EXPECT_TRUE(r[0].is_meta());
  EXPECT_EQ(r[0].scalar_type(), at::kLong);
  EXPECT_EQ(r[7].sizes(), (std::vector<int64_t>{3}));
}

}  // namespace
}  // namespace tally
