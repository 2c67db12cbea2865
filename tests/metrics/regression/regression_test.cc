// Tests of the regression metrics (metrics/regression/regression.cc): values against
// references computed here with plain long-double loops (two-pass moments),
// batching and merge invariance, large offsets, empty batches, one row, bad
// inputs, and sync-freedom (every update runs on `meta`).
#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "api/tally.h"
#include "engine/runtime/compiler.h"
#include "engine/runtime/program.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/registry.h"

namespace tally {
namespace {

using ::testing::HasSubstr;
using LD = long double;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// --- data -------------------------------------------------------------------

// Matrix is row-major data for one input: shape [n] (one_dim) or [n, d].
struct Matrix {
  int64_t n = 0, d = 1;
  bool one_dim = true;
  std::vector<double> v;
  double at(int64_t i, int64_t j) const { return v[i * d + j]; }
  std::vector<LD> Col(int64_t j) const {
    std::vector<LD> c(n);
    for (int64_t i = 0; i < n; ++i) c[i] = at(i, j);
    return c;
  }
};

Matrix Make(int64_t n, int64_t d, bool one_dim, std::vector<double> v) { return Matrix{n, d, one_dim, std::move(v)}; }

// RoundToFloat keeps only the float32 value of every element, so that the
// references see exactly what a float32 tensor holds.
Matrix RoundToFloat(Matrix m) {
  for (double& x : m.v) x = static_cast<float>(x);
  return m;
}

at::Tensor ToTensor(const Matrix& m, at::ScalarType dtype = at::kDouble) {
  std::vector<int64_t> shape = m.one_dim ? std::vector<int64_t>{m.n} : std::vector<int64_t>{m.n, m.d};
  return at::tensor(m.v, at::kDouble).reshape(shape).to(dtype);
}

// Pair is a data set: preds and target of the same shape.
struct Pair {
  Matrix preds, target;
};

// Noisy returns target ~ offset + N(0, scale), preds = slope·target + noise.
Pair Noisy(uint64_t seed, int64_t n, int64_t d, bool one_dim, double offset = 0, double scale = 1, double noise = 0.5) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> g(0.0, 1.0);
  Pair p{Make(n, d, one_dim, {}), Make(n, d, one_dim, {})};
  for (int64_t i = 0; i < n * d; ++i) {
    double dev = scale * (g(rng) + 0.3 * static_cast<double>(i % d));
    p.target.v.push_back(offset + dev);
    p.preds.v.push_back(offset + 0.8 * dev + noise * scale * g(rng) + 0.1 * scale);
  }
  return p;
}

const Pair& Data(const std::string& name) {
  static const auto* sets = new std::map<std::string, Pair>{
      {"1d", Noisy(1, 53, 1, true)},
      {"2d", Noisy(2, 41, 3, false)},
      {"2d1", Noisy(3, 30, 1, false)},
      {"cos", Noisy(4, 23, 5, false)},
      {"ties", Pair{Make(16, 1, true, {1, 2, 2, 3, 0, 4, 4, 4, 1, 2, 3, 3, 0, 1, 4, 2}),
                    Make(16, 1, true, {0, 2, 1, 3, 0, 4, 3, 4, 1, 1, 3, 4, 1, 0, 4, 2})}},
  };
  return sets->at(name);
}

// --- references (long double, two-pass) ---------------------------------------

// Expected is a reference result: a scalar (shape {}) or a vector.
struct Expected {
  std::vector<double> values;
  std::vector<int64_t> shape;
};

Expected Scalar(LD v) { return {{static_cast<double>(v)}, {}}; }
Expected Vector(const std::vector<LD>& v) {
  Expected e;
  for (LD x : v) e.values.push_back(static_cast<double>(x));
  e.shape = {static_cast<int64_t>(v.size())};
  return e;
}
// PerOutput returns a scalar for 1-D inputs (or when `squeeze`), else a vector.
Expected PerOutput(const std::vector<LD>& v, bool one_dim, bool squeeze = false) {
  return one_dim || (squeeze && v.size() == 1) ? Scalar(v[0]) : Vector(v);
}

LD Mean(const std::vector<LD>& x) {
  LD s = 0;
  for (LD v : x) s += v;
  return s / static_cast<LD>(x.size());
}
LD CentredProduct(const std::vector<LD>& x, const std::vector<LD>& y) {
  LD mx = Mean(x), my = Mean(y), s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += (x[i] - mx) * (y[i] - my);
  return s;
}
LD Clamp1(LD v) { return std::isnan(v) ? v : std::min<LD>(1, std::max<LD>(-1, v)); }

Expected RefMeanError(const Pair& in, bool squared_error, bool root, int64_t num_outputs) {
  const Matrix &p = in.preds, &t = in.target;
  auto err = [&](int64_t i, int64_t j) {
    LD d = static_cast<LD>(p.at(i, j)) - t.at(i, j);
    return squared_error ? d * d : std::fabs(d);
  };
  auto finish = [&](LD sum, LD count) { return root ? std::sqrt(sum / count) : sum / count; };
  if (num_outputs == 1) {
    LD s = 0;
    for (int64_t i = 0; i < p.n; ++i)
      for (int64_t j = 0; j < p.d; ++j) s += err(i, j);
    return Scalar(finish(s, static_cast<LD>(p.n * p.d)));
  }
  std::vector<LD> out;
  for (int64_t j = 0; j < p.d; ++j) {
    LD s = 0;
    for (int64_t i = 0; i < p.n; ++i) s += err(i, j);
    out.push_back(finish(s, p.n));
  }
  return Vector(out);
}

Expected RefMape(const Pair& in) {
  LD s = 0;
  for (size_t k = 0; k < in.preds.v.size(); ++k) {
    LD t = in.target.v[k];
    s += std::fabs(static_cast<LD>(in.preds.v[k]) - t) / std::max<LD>(std::fabs(t), 1.17e-6L);
  }
  return Scalar(s / static_cast<LD>(in.preds.v.size()));
}

// Reduce applies multioutput to per-column scores with variance weights.
Expected Reduce(const std::string& multioutput, const std::vector<LD>& raw, const std::vector<LD>& w, bool one_dim,
                std::function<LD(LD)> adjust) {
  if (multioutput == "raw_values") {
    std::vector<LD> a;
    for (LD r : raw) a.push_back(adjust(r));
    return PerOutput(a, one_dim);
  }
  LD r = 0;
  if (multioutput == "uniform_average") {
    for (LD x : raw) r += x;
    r /= static_cast<LD>(raw.size());
  } else {
    LD ws = 0;
    for (LD x : w) ws += x;
    for (size_t j = 0; j < raw.size(); ++j) r += w[j] / ws * raw[j];
  }
  return Scalar(adjust(r));
}

Expected RefR2(const Pair& in, int64_t adjusted, const std::string& multioutput) {
  std::vector<LD> raw, tss_all;
  LD n = in.target.n;
  for (int64_t j = 0; j < in.target.d; ++j) {
    std::vector<LD> t = in.target.Col(j), p = in.preds.Col(j);
    LD rss = 0;
    for (size_t i = 0; i < t.size(); ++i) rss += (t[i] - p[i]) * (t[i] - p[i]);
    LD tss = CentredProduct(t, t);
    raw.push_back(rss <= 1e-4L ? 1 : tss <= 1e-4L ? 0 : 1 - rss / tss);
    tss_all.push_back(tss);
  }
  auto adjust = [&](LD r) {
    if (n < 2) return static_cast<LD>(kNaN);
    if (adjusted == 0 || adjusted >= n - 1) return r;
    return 1 - (1 - r) * (n - 1) / (n - adjusted - 1);
  };
  return Reduce(multioutput, raw, tss_all, in.target.one_dim, adjust);
}

Expected RefExplainedVariance(const Pair& in, const std::string& multioutput) {
  std::vector<LD> scores, dens;
  for (int64_t j = 0; j < in.target.d; ++j) {
    std::vector<LD> t = in.target.Col(j), p = in.preds.Col(j), e(t.size());
    for (size_t i = 0; i < t.size(); ++i) e[i] = t[i] - p[i];
    LD n = t.size();
    LD num = CentredProduct(e, e) / n, den = CentredProduct(t, t) / n;
    scores.push_back(num == 0 ? 1 : den == 0 ? 0 : 1 - num / den);
    dens.push_back(den);
  }
  return Reduce(multioutput, scores, dens, in.target.one_dim, [](LD r) { return r; });
}

Expected RefPearson(const Pair& in) {
  std::vector<LD> out;
  for (int64_t j = 0; j < in.target.d; ++j) {
    std::vector<LD> p = in.preds.Col(j), t = in.target.Col(j);
    LD sxy = CentredProduct(p, t), sxx = CentredProduct(p, p), syy = CentredProduct(t, t);
    out.push_back(p.size() < 2 ? kNaN : Clamp1(sxy / std::sqrt(sxx * syy)));
  }
  return PerOutput(out, in.target.one_dim, /*squeeze=*/true);
}

Expected RefConcordance(const Pair& in) {
  std::vector<LD> out;
  for (int64_t j = 0; j < in.target.d; ++j) {
    std::vector<LD> p = in.preds.Col(j), t = in.target.Col(j);
    LD n1 = static_cast<LD>(p.size()) - 1;
    LD vx = CentredProduct(p, p) / n1, vy = CentredProduct(t, t) / n1, cov = CentredProduct(p, t) / n1;
    LD dm = Mean(p) - Mean(t);
    out.push_back(p.size() < 2 || vx == 0 || vy == 0 ? kNaN : 2 * cov / (vx + vy + dm * dm));
  }
  return PerOutput(out, in.target.one_dim);
}

// Ranks gives 1-based ranks, ties sharing their mean rank.
std::vector<LD> Ranks(const std::vector<LD>& x) {
  std::vector<size_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<LD> r(x.size());
  for (size_t i = 0; i < idx.size();) {
    size_t k = i;
    while (k + 1 < idx.size() && x[idx[k + 1]] == x[idx[i]]) ++k;
    LD avg = (static_cast<LD>(i + 1) + static_cast<LD>(k + 1)) / 2;
    for (size_t m = i; m <= k; ++m) r[idx[m]] = avg;
    i = k + 1;
  }
  return r;
}

Expected RefSpearman(const Pair& in) {
  std::vector<LD> out;
  for (int64_t j = 0; j < in.target.d; ++j) {
    std::vector<LD> rp = Ranks(in.preds.Col(j)), rt = Ranks(in.target.Col(j));
    LD n = rp.size();
    LD cov = CentredProduct(rp, rt) / n;
    LD sp = std::sqrt(CentredProduct(rp, rp) / n), st = std::sqrt(CentredProduct(rt, rt) / n);
    out.push_back(Clamp1(cov / (sp * st + 1e-6L)));
  }
  return PerOutput(out, in.target.one_dim);
}

Expected RefCosine(const Pair& in, const std::string& reduction) {
  std::vector<LD> sims;
  for (int64_t i = 0; i < in.preds.n; ++i) {
    LD dot = 0, pp = 0, tt = 0;
    for (int64_t j = 0; j < in.preds.d; ++j) {
      LD p = in.preds.at(i, j), t = in.target.at(i, j);
      dot += p * t;
      pp += p * p;
      tt += t * t;
    }
    sims.push_back(dot / (std::sqrt(pp) * std::sqrt(tt)));
  }
  if (reduction == "none") return Vector(sims);
  LD s = 0;
  for (LD v : sims) s += v;
  return Scalar(reduction == "sum" ? s : s / static_cast<LD>(sims.size()));
}

// LogCoshL is log(cosh(x)) without cancellation: log1p(u) − log1p(−u) with
// u = tanh²(x/2) for |x| ≤ 1, and |x| + log1p(e^−2|x|) − log 2 above.
LD LogCoshL(LD x) {
  LD a = std::fabs(x);
  if (a > 1) return a + std::log1p(std::exp(-2 * a)) - std::log(2.0L);
  LD u = std::tanh(a / 2);
  u *= u;
  return std::log1p(u) - std::log1p(-u);
}

Expected RefLogCosh(const Pair& in) {
  std::vector<LD> out;
  for (int64_t j = 0; j < in.target.d; ++j) {
    LD s = 0;
    for (int64_t i = 0; i < in.target.n; ++i) s += LogCoshL(static_cast<LD>(in.preds.at(i, j)) - in.target.at(i, j));
    out.push_back(s / static_cast<LD>(in.target.n));
  }
  return PerOutput(out, in.target.one_dim, /*squeeze=*/true);
}

// --- running metrics -------------------------------------------------------------

NamedTensors Inputs(const at::Tensor& p, const at::Tensor& t) { return {{"preds", p}, {"target", t}}; }

absl::StatusOr<at::Tensor> Eval(const std::string& spec, const at::Tensor& p, const at::Tensor& t,
                                int64_t batch_size = 0) {
  tally::EvalOptions opts;
  opts.batch_size = batch_size;
  auto r = tally::Evaluate({spec}, Inputs(p, t), opts);
  if (!r.ok()) return r.status();
  return (*r)[0].value.to(at::kDouble);
}

absl::StatusOr<std::unique_ptr<Program>> MakeProgram(const std::vector<std::string>& specs, const NamedTensors& like,
                                                     ir::Device device = {}) {
  auto sig = tally::SignatureOf(like);
  if (!sig.ok()) return sig.status();
  auto entries = tally::BuildEntries(specs, *sig, device);
  if (!entries.ok()) return entries.status();
  CompileOptions co;
  co.device = device;
  return Compile(*entries, co);
}

at::Tensor Rows(const at::Tensor& t, int64_t start, int64_t len) { return t.narrow(0, start, len); }

// Table makes a [rows, v.size()/rows] tensor of `dtype` from row-major values.
at::Tensor Table(std::vector<double> v, int64_t rows, at::ScalarType dtype = at::kDouble) {
  int64_t cols = static_cast<int64_t>(v.size()) / rows;
  return at::tensor(v, at::kDouble).reshape({rows, cols}).to(dtype);
}

// Near compares a result with a reference element-wise:
// |got − want| ≤ atol + rtol·|want|, NaN only against NaN, same shape.
::testing::AssertionResult Near(const at::Tensor& got_in, const Expected& want, double rtol, double atol = 0) {
  at::Tensor got = got_in.to(at::kDouble).contiguous();
  std::vector<int64_t> shape(got.sizes().begin(), got.sizes().end());
  if (shape != want.shape) {
    return ::testing::AssertionFailure() << "shape [" << absl::StrJoin(shape, ",") << "], expected ["
                                         << absl::StrJoin(want.shape, ",") << "]";
  }
  const double* g = got.data_ptr<double>();
  for (size_t i = 0; i < want.values.size(); ++i) {
    double w = want.values[i];
    bool ok = std::isnan(w) ? std::isnan(g[i]) : std::fabs(g[i] - w) <= atol + rtol * std::fabs(w);
    if (!ok) {
      return ::testing::AssertionFailure()
             << "element " << i << ": got " << absl::StrCat(g[i]) << ", expected " << absl::StrCat(w) << " (rel err "
             << std::fabs(g[i] - w) / std::fabs(w) << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

Expected FromTensor(const at::Tensor& t_in) {
  at::Tensor t = t_in.to(at::kDouble).contiguous();
  Expected e;
  e.shape.assign(t.sizes().begin(), t.sizes().end());
  e.values.assign(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  return e;
}

// ExpectSameStates checks that two programs of one module hold the same
// states to `rtol`. A two-double mean (mean_<v> = hi, mean_lo_<v> = lo) is
// compared as hi + lo: how the value splits depends on the merge order.
void ExpectSameStates(const Program& got, const Program& want, double rtol, const std::string& what) {
  const auto& states = want.module().states;
  auto index = [&](const std::string& name) { return want.module().StateIndex(name); };
  for (size_t i = 0; i < states.size(); ++i) {
    const std::string& name = states[i].name;
    at::Tensor g = got.states()[i].to(at::kDouble), w = want.states()[i].to(at::kDouble);
    if (name.find(".mean_lo_") != std::string::npos) continue;
    size_t pos = name.find(".mean_");
    if (pos != std::string::npos) {
      std::string lo = name.substr(0, pos) + ".mean_lo_" + name.substr(pos + 6);
      if (index(lo) >= 0) {
        g = g + got.states()[index(lo)].to(at::kDouble);
        w = w + want.states()[index(lo)].to(at::kDouble);
      }
    }
    EXPECT_TRUE(Near(g, FromTensor(w), rtol, rtol)) << what << ": state " << name;
  }
}

// --- the case table -----------------------------------------------------------

// Case is one metric spec over one data set with its reference.
struct Case {
  std::string spec;
  std::string data;
  std::function<Expected(const Pair&)> ref;
};

std::vector<Case> Cases() {
  std::vector<Case> c;
  auto add = [&](std::string spec, std::vector<std::string> data, std::function<Expected(const Pair&)> ref) {
    for (auto& d : data) c.push_back({spec, d, ref});
  };
  const std::vector<std::string> all = {"1d", "2d", "2d1"};
  add("mean_squared_error", all, [](const Pair& p) { return RefMeanError(p, true, false, 1); });
  add("mean_squared_error(squared=false)", all, [](const Pair& p) { return RefMeanError(p, true, true, 1); });
  add("mean_squared_error(num_outputs=3)", {"2d"}, [](const Pair& p) { return RefMeanError(p, true, false, 3); });
  add("mean_squared_error(squared=false, num_outputs=3)", {"2d"},
      [](const Pair& p) { return RefMeanError(p, true, true, 3); });
  add("mean_absolute_error", all, [](const Pair& p) { return RefMeanError(p, false, false, 1); });
  add("mean_absolute_error(num_outputs=3)", {"2d"}, [](const Pair& p) { return RefMeanError(p, false, false, 3); });
  add("mean_absolute_percentage_error", all, RefMape);
  for (std::string mo : {"uniform_average", "raw_values", "variance_weighted"}) {
    add(absl::StrCat("r2_score(multioutput=", mo, ")"), all, [mo](const Pair& p) { return RefR2(p, 0, mo); });
    add(absl::StrCat("explained_variance(multioutput=", mo, ")"), all,
        [mo](const Pair& p) { return RefExplainedVariance(p, mo); });
    for (int adj : {1, 5, 40}) {
      add(absl::StrCat("r2_score(adjusted=", adj, ", multioutput=", mo, ")"), {"1d", "2d"},
          [mo, adj](const Pair& p) { return RefR2(p, adj, mo); });
    }
  }
  add("r2_score", all, [](const Pair& p) { return RefR2(p, 0, "uniform_average"); });
  add("explained_variance", all, [](const Pair& p) { return RefExplainedVariance(p, "uniform_average"); });
  add("pearson_corrcoef", all, RefPearson);
  add("pearson_corrcoef(num_outputs=3)", {"2d"}, RefPearson);
  add("concordance_corrcoef", all, RefConcordance);
  add("concordance_corrcoef(num_outputs=1)", {"1d"}, RefConcordance);
  add("spearman_corrcoef", {"1d", "2d", "2d1", "ties"}, RefSpearman);
  add("spearman_corrcoef(num_outputs=3)", {"2d"}, RefSpearman);
  add("log_cosh_error", all, RefLogCosh);
  add("log_cosh_error(num_outputs=3)", {"2d"}, RefLogCosh);
  add("cosine_similarity", {"cos", "2d", "2d1"}, [](const Pair& p) { return RefCosine(p, "sum"); });
  for (std::string red : {"sum", "mean", "none"}) {
    add(absl::StrCat("cosine_similarity(reduction=", red, ")"), {"cos"},
        [red](const Pair& p) { return RefCosine(p, red); });
  }
  return c;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.spec << " on " << c.data; }

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  std::string name = absl::StrCat(info.param.spec, "_", info.param.data);
  for (char& ch : name)
    if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return absl::StrCat(name, "_", info.index);
}

class RegressionCaseTest : public ::testing::TestWithParam<Case> {};

TEST_P(RegressionCaseTest, MatchesReference) {
  // Verifies that the metric, fed all rows in float64, equals the long-double
  // two-pass reference to 1e-12 relative.
  const Case& c = GetParam();
  const Pair& d = Data(c.data);
  auto got = Eval(c.spec, ToTensor(d.preds), ToTensor(d.target));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(Near(*got, c.ref(d), 1e-12, 1e-15));
}

TEST_P(RegressionCaseTest, IsInvariantToBatchSize) {
  // Verifies that batches of 1 and 7 rows give the one-batch result to 1e-13
  // relative.
  const Case& c = GetParam();
  const Pair& d = Data(c.data);
  at::Tensor p = ToTensor(d.preds), t = ToTensor(d.target);
  auto all = Eval(c.spec, p, t);
  ASSERT_TRUE(all.ok()) << all.status();
  for (int64_t batch : {1, 7}) {
    auto got = Eval(c.spec, p, t, batch);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(Near(*got, FromTensor(*all), 1e-13, 1e-15)) << "batch_size " << batch;
  }
}

TEST_P(RegressionCaseTest, MergeOfHalvesEqualsOnePass) {
  // Verifies that two programs fed the two halves and merged hold the same
  // states (to 1e-12 relative) and compute the same value as one program fed
  // every row, and that merging an untouched program changes nothing.
  const Case& c = GetParam();
  const Pair& d = Data(c.data);
  at::Tensor p = ToTensor(d.preds), t = ToTensor(d.target);
  auto one = MakeProgram({c.spec}, Inputs(p, t));
  auto first = MakeProgram({c.spec}, Inputs(p, t));
  auto second = MakeProgram({c.spec}, Inputs(p, t));
  auto untouched = MakeProgram({c.spec}, Inputs(p, t));
  ASSERT_TRUE(one.ok() && first.ok() && second.ok() && untouched.ok()) << one.status();
  int64_t n = p.size(0), half = n / 3;  // uneven parts
  ASSERT_TRUE((*one)->Update(Inputs(p, t)).ok());
  ASSERT_TRUE((*first)->Update(Inputs(Rows(p, 0, half), Rows(t, 0, half))).ok());
  ASSERT_TRUE((*second)->Update(Inputs(Rows(p, half, n - half), Rows(t, half, n - half))).ok());
  ASSERT_TRUE((*first)->Merge(**second).ok());
  ASSERT_TRUE((*first)->Merge(**untouched).ok());
  ExpectSameStates(**first, **one, 1e-12, c.spec);
  auto want = (*one)->Compute();
  auto got = (*first)->Compute();
  ASSERT_TRUE(want.ok() && got.ok()) << want.status() << got.status();
  EXPECT_TRUE(Near((*got)[0].second, FromTensor((*want)[0].second), 1e-12, 1e-15));
  // An empty program merged with a full one takes the full one's states.
  ASSERT_TRUE((*untouched)->Merge(**one).ok());
  auto again = (*untouched)->Compute();
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(Near((*again)[0].second, FromTensor((*want)[0].second), 0, 0));
}

TEST_P(RegressionCaseTest, EmptyBatchesChangeNothing) {
  // Verifies that empty batches (N = 0) between real ones leave the result
  // exactly as without them.
  const Case& c = GetParam();
  const Pair& d = Data(c.data);
  at::Tensor p = ToTensor(d.preds), t = ToTensor(d.target);
  auto want = Eval(c.spec, p, t, 7);
  auto prog = MakeProgram({c.spec}, Inputs(p, t));
  ASSERT_TRUE(want.ok() && prog.ok()) << want.status() << prog.status();
  int64_t n = p.size(0);
  ASSERT_TRUE((*prog)->Update(Inputs(Rows(p, 0, 0), Rows(t, 0, 0))).ok());
  for (int64_t s = 0; s < n; s += 7) {
    int64_t len = std::min<int64_t>(7, n - s);
    ASSERT_TRUE((*prog)->Update(Inputs(Rows(p, s, len), Rows(t, s, len))).ok());
    ASSERT_TRUE((*prog)->Update(Inputs(Rows(p, s, 0), Rows(t, s, 0))).ok());
  }
  auto got = (*prog)->Compute();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(Near((*got)[0].second, FromTensor(*want), 0, 0));
}

TEST_P(RegressionCaseTest, UpdateRunsOnMeta) {
  // Verifies that the update (and the fold of custom-merge states) runs on
  // meta tensors, which cannot be read on the host: the update never syncs.
  const Case& c = GetParam();
  const Pair& d = Data(c.data);
  auto meta = at::TensorOptions().dtype(at::kFloat).device(at::kMeta);
  std::vector<int64_t> shape =
      d.preds.one_dim ? std::vector<int64_t>{d.preds.n} : std::vector<int64_t>{d.preds.n, d.preds.d};
  at::Tensor p = at::empty(shape, meta), t = at::empty(shape, meta);
  auto prog = MakeProgram({c.spec}, Inputs(p, t), ir::Device{"meta"});
  ASSERT_TRUE(prog.ok()) << prog.status();
  absl::Status first = (*prog)->Update(Inputs(p, t));
  ASSERT_TRUE(first.ok()) << first;
  absl::Status second = (*prog)->Update(Inputs(p, t));
  EXPECT_TRUE(second.ok()) << second;
  for (const at::Tensor& s : (*prog)->states()) EXPECT_TRUE(s.is_meta());
}

INSTANTIATE_TEST_SUITE_P(Regression, RegressionCaseTest, ::testing::ValuesIn(Cases()), CaseName);

// --- numerical stability -----------------------------------------------------------

struct OffsetCase {
  std::string spec;
  std::function<Expected(const Pair&)> ref;
};

TEST(RegressionOffsetTest, KeepsNineDigitsFarFromZero) {
  // Verifies that pearson, r2, concordance and explained_variance keep at
  // least 9 significant digits on data offset by 1e4 and 1e6 (float64, and
  // float32 with the reference computed from the float32 values), in one
  // batch, batches of 7 and batches of 1. TorchMetrics' float32 one-pass
  // states give Pearson −1.0 on such data.
  const std::vector<OffsetCase> cases = {
      {"pearson_corrcoef", RefPearson},
      {"concordance_corrcoef", RefConcordance},
      {"r2_score", [](const Pair& p) { return RefR2(p, 0, "uniform_average"); }},
      {"explained_variance", [](const Pair& p) { return RefExplainedVariance(p, "uniform_average"); }},
      {"r2_score(multioutput=raw_values)", [](const Pair& p) { return RefR2(p, 0, "raw_values"); }},
  };
  for (double offset : {1e4, 1e6}) {
    for (at::ScalarType dtype : {at::kDouble, at::kFloat}) {
      for (bool one_dim : {true, false}) {
        // Spread of 0.05 at 1e4 and 1.0 at 1e6: many float32 steps either way.
        Pair d = Noisy(offset == 1e4 ? 11 : 12, 200, one_dim ? 1 : 2, one_dim, offset, offset == 1e4 ? 0.05 : 1.0);
        if (dtype == at::kFloat) d = Pair{RoundToFloat(d.preds), RoundToFloat(d.target)};
        for (const OffsetCase& c : cases) {
          Expected want = c.ref(d);
          for (double w : want.values) ASSERT_GT(std::fabs(w), 0.1) << c.spec << ": degenerate test data";
          for (int64_t batch : {0, 7, 1}) {
            auto got = Eval(c.spec, ToTensor(d.preds, dtype), ToTensor(d.target, dtype), batch);
            ASSERT_TRUE(got.ok()) << got.status();
            EXPECT_TRUE(Near(*got, want, 1e-9)) << c.spec << " offset " << offset << " " << c10::toString(dtype)
                                                << (one_dim ? " 1-D" : " 2-D") << " batch " << batch;
          }
        }
      }
    }
  }
}

TEST(RegressionOffsetTest, MergeAtLargeOffsetMatchesOnePassToTwelveDigits) {
  // Verifies that merging shards of data at offset 1e6 gives the moments of
  // one pass to 1e-12 relative, even with very uneven shard sizes.
  Pair d = Noisy(21, 301, 1, true, 1e6, 0.3);
  at::Tensor p = ToTensor(d.preds), t = ToTensor(d.target);
  for (const std::string spec : {"pearson_corrcoef", "r2_score", "explained_variance", "concordance_corrcoef"}) {
    auto one = MakeProgram({spec}, Inputs(p, t));
    ASSERT_TRUE(one.ok()) << one.status();
    ASSERT_TRUE((*one)->Update(Inputs(p, t)).ok());
    auto merged = MakeProgram({spec}, Inputs(p, t));
    ASSERT_TRUE(merged.ok());
    for (int64_t start = 0, len = 1; start < p.size(0); start += len, len = len * 3 + 1) {
      int64_t l = std::min<int64_t>(len, p.size(0) - start);
      auto shard = MakeProgram({spec}, Inputs(p, t));
      ASSERT_TRUE(shard.ok());
      ASSERT_TRUE((*shard)->Update(Inputs(Rows(p, start, l), Rows(t, start, l))).ok());
      ASSERT_TRUE((*merged)->Merge(**shard).ok());
    }
    ExpectSameStates(**merged, **one, 1e-13, spec);
  }
}

TEST(RegressionTest, LogCoshIsAccurateForTinyAndHugeDifferences) {
  // Verifies that log_cosh_error keeps ~12 digits for differences of 1e-7
  // (where log(cosh) cancels) and stays finite for 1000 (where e^d overflows).
  for (double scale : {1e-7, 1e-3, 0.03, 0.05, 1000.0}) {
    Matrix p = Make(6, 1, true, {1, -2, 3, 0.5, -0.25, 2});
    for (double& v : p.v) v *= scale;
    Pair d{p, Make(6, 1, true, std::vector<double>(6, 0.0))};
    auto got = Eval("log_cosh_error", ToTensor(d.preds), ToTensor(d.target));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_TRUE(Near(*got, RefLogCosh(d), 1e-12)) << "scale " << scale;
  }
}

// --- edge behaviours ------------------------------------------------------------------

TEST(RegressionTest, OnlyEmptyBatchesGiveTorchMetricsEmptyResults) {
  // Verifies the results after only empty batches: 0/0 = NaN for the means and
  // correlations, 0 for cosine_similarity's sum, an empty vector for its none.
  at::Tensor p1 = at::zeros({0}, at::kDouble), p2 = at::zeros({0, 3}, at::kDouble);
  struct Want {
    std::string spec;
    bool two_d;
    Expected value;
  };
  const std::vector<Want> wants = {
      {"mean_squared_error", false, Scalar(kNaN)},
      {"mean_absolute_error", false, Scalar(kNaN)},
      {"mean_absolute_percentage_error", false, Scalar(kNaN)},
      {"r2_score", false, Scalar(kNaN)},
      {"explained_variance", false, Scalar(kNaN)},
      {"pearson_corrcoef", false, Scalar(kNaN)},
      {"concordance_corrcoef", false, Scalar(kNaN)},
      {"spearman_corrcoef", false, Scalar(kNaN)},
      {"log_cosh_error", false, Scalar(kNaN)},
      {"mean_squared_error(num_outputs=3)", true, Vector({kNaN, kNaN, kNaN})},
      {"pearson_corrcoef", true, Vector({kNaN, kNaN, kNaN})},
      {"cosine_similarity", true, Scalar(0)},
      {"cosine_similarity(reduction=mean)", true, Scalar(kNaN)},
      {"cosine_similarity(reduction=none)", true, Expected{{}, {0}}},
  };
  for (const Want& w : wants) {
    at::Tensor p = w.two_d ? p2 : p1;
    auto got = Eval(w.spec, p, p.clone());
    ASSERT_TRUE(got.ok()) << w.spec << ": " << got.status();
    EXPECT_TRUE(Near(*got, w.value, 0)) << w.spec;
  }
}

TEST(RegressionTest, OneRowFollowsTorchMetrics) {
  // Verifies one-row results: Pearson and concordance NaN (n − 1 = 0),
  // spearman 0 (its +1e-6), explained_variance 1 (0 == 0 variances), r2 NaN
  // (TorchMetrics raises; see regression.cc), and plain errors.
  at::Tensor p = at::tensor({2.5}, at::kDouble), t = at::tensor({3.0}, at::kDouble);
  const std::vector<std::pair<std::string, double>> wants = {
      {"pearson_corrcoef", kNaN},
      {"concordance_corrcoef", kNaN},
      {"spearman_corrcoef", 0.0},
      {"explained_variance", 1.0},
      {"r2_score", kNaN},
      {"r2_score(adjusted=1)", kNaN},
      {"mean_squared_error", 0.25},
      {"mean_absolute_error", 0.5},
      {"mean_absolute_percentage_error", 0.5 / 3},
      {"log_cosh_error", std::log(std::cosh(0.5))},
  };
  for (const auto& [spec, want] : wants) {
    auto got = Eval(spec, p, t);
    ASSERT_TRUE(got.ok()) << spec << ": " << got.status();
    EXPECT_TRUE(Near(*got, Scalar(want), 1e-14)) << spec;
  }
  auto cos = Eval("cosine_similarity", Table({1, 2}, 1), Table({2, 1}, 1));
  ASSERT_TRUE(cos.ok()) << cos.status();
  EXPECT_TRUE(Near(*cos, Scalar(0.8), 1e-15));
}

TEST(RegressionTest, ConstantColumnsGiveTorchMetricsExactZeroResults) {
  // Verifies that a constant column is seen as exactly constant even when its
  // value is not exact in binary (0.1) and it arrives in several batches:
  // Pearson and concordance NaN, explained_variance 0 (den == 0, num != 0),
  // r2 0 (tss ≈ 0, rss > 1e-4), spearman 0.
  Matrix target = Make(13, 1, true, std::vector<double>(13, 0.1));
  Pair d{Noisy(5, 13, 1, true).preds, target};
  at::Tensor p = ToTensor(d.preds), t = ToTensor(d.target);
  const std::vector<std::pair<std::string, double>> wants = {
      {"pearson_corrcoef", kNaN}, {"concordance_corrcoef", kNaN}, {"explained_variance", 0.0},
      {"r2_score", 0.0},          {"spearman_corrcoef", 0.0},
  };
  for (const auto& [spec, want] : wants) {
    for (int64_t batch : {0, 1, 4}) {
      auto got = Eval(spec, p, t, batch);
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE(Near(*got, Scalar(want), 0)) << spec << " batch " << batch;
      // Both sides constant and equal: explained_variance 1, r2 1.
      if (spec == "explained_variance" || spec == "r2_score") {
        auto same = Eval(spec, t, t, batch);
        ASSERT_TRUE(same.ok());
        EXPECT_TRUE(Near(*same, Scalar(1.0), 0)) << spec << " preds == target, batch " << batch;
      }
    }
  }
}

TEST(RegressionTest, R2FollowsTorchMetricsToleranceAndAdjustedRules) {
  // Verifies r2's TorchMetrics rules: rss ≤ 1e-4 scores 1 even for bad
  // predictions; adjusted ≥ n − 1 falls back to plain r2.
  at::Tensor t = at::tensor({0.001, 0.002, 0.003, 0.004}, at::kDouble);
  at::Tensor p = at::tensor({0.004, 0.003, 0.002, 0.001}, at::kDouble);
  auto quirk = Eval("r2_score", p, t);
  ASSERT_TRUE(quirk.ok());
  EXPECT_TRUE(Near(*quirk, Scalar(1.0), 0));
  const Pair& d = Data("1d");  // n = 53
  auto plain = Eval("r2_score", ToTensor(d.preds), ToTensor(d.target));
  ASSERT_TRUE(plain.ok());
  for (int adj : {52, 60}) {
    auto got = Eval(absl::StrCat("r2_score(adjusted=", adj, ")"), ToTensor(d.preds), ToTensor(d.target));
    ASSERT_TRUE(got.ok());
    EXPECT_TRUE(Near(*got, FromTensor(*plain), 0)) << "adjusted " << adj;
  }
  auto adj51 = Eval("r2_score(adjusted=51)", ToTensor(d.preds), ToTensor(d.target));
  ASSERT_TRUE(adj51.ok());
  EXPECT_TRUE(Near(*adj51, RefR2(d, 51, "uniform_average"), 1e-12));
}

TEST(RegressionTest, CosineSimilarityZeroRowIsNaN) {
  // Verifies that a zero row gives NaN (0/0) for that row, which propagates
  // into sum and mean, as TorchMetrics.
  at::Tensor p = Table({1, 2, 0, 0, 3, -1}, 3);
  at::Tensor t = Table({1, 1, 1, 2, 3, -1}, 3);
  auto none = Eval("cosine_similarity(reduction=none)", p, t);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(Near(*none, Vector({3.0L / std::sqrt(10.0L), kNaN, 1.0L}), 1e-15));
  for (const char* spec : {"cosine_similarity", "cosine_similarity(reduction=mean)"}) {
    auto got = Eval(spec, p, t);
    ASSERT_TRUE(got.ok());
    EXPECT_TRUE(Near(*got, Scalar(kNaN), 0)) << spec;
  }
}

TEST(RegressionTest, MapeClampsSmallTargets) {
  // Verifies MAPE's 1.17e-6 floor on |target| (a zero target gives |p|/1.17e-6).
  at::Tensor t = at::tensor({0.0, 1.0, -2.0, 1e-7}, at::kDouble);
  at::Tensor p = at::tensor({0.5, 1.1, -1.5, 2e-7}, at::kDouble);
  auto got = Eval("mean_absolute_percentage_error", p, t);
  ASSERT_TRUE(got.ok());
  LD want = (0.5L / 1.17e-6L + 0.1L / 1 + 0.5L / 2 + 1e-7L / 1.17e-6L) / 4;
  EXPECT_TRUE(Near(*got, Scalar(want), 1e-12));
}

TEST(RegressionTest, IntegerInputsAreCastToFloat) {
  // Verifies that int64 and int32 inputs give the results of their float64
  // values, for every metric.
  const Pair& d = Data("ties");
  for (const char* spec :
       {"mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error", "r2_score", "explained_variance",
        "pearson_corrcoef", "concordance_corrcoef", "spearman_corrcoef", "log_cosh_error"}) {
    auto want = Eval(spec, ToTensor(d.preds), ToTensor(d.target));
    ASSERT_TRUE(want.ok()) << want.status();
    for (at::ScalarType it : {at::kLong, at::kInt}) {
      auto got = Eval(spec, ToTensor(d.preds, it), ToTensor(d.target, it));
      ASSERT_TRUE(got.ok()) << spec << ": " << got.status();
      EXPECT_TRUE(Near(*got, FromTensor(*want), 0)) << spec;
    }
  }
  at::Tensor pc = Table({1, 2, 3, 4}, 2, at::kLong), tc = Table({2, 2, 3, 5}, 2, at::kLong);
  auto cos = Eval("cosine_similarity", pc, tc);
  ASSERT_TRUE(cos.ok()) << cos.status();
  EXPECT_TRUE(
      Near(*cos, RefCosine(Pair{Make(2, 2, false, {1, 2, 3, 4}), Make(2, 2, false, {2, 2, 3, 5})}, "sum"), 1e-15));
}

TEST(RegressionTest, ColumnOutputsHaveTorchMetricsShapes) {
  // Verifies result shapes for (N, 1) inputs: pearson and log_cosh squeeze to
  // a scalar (TorchMetrics squeezes), r2 raw_values, concordance and spearman
  // keep [1]; mse with num_outputs=1 flattens to a scalar.
  const Pair& d = Data("2d1");
  const std::vector<std::pair<std::string, std::vector<int64_t>>> wants = {
      {"pearson_corrcoef", {}},
      {"log_cosh_error", {}},
      {"r2_score(multioutput=raw_values)", {1}},
      {"concordance_corrcoef", {1}},
      {"spearman_corrcoef", {1}},
      {"r2_score", {}},
      {"mean_squared_error", {}},
      {"explained_variance(multioutput=raw_values)", {1}},
  };
  for (const auto& [spec, shape] : wants) {
    auto got = Eval(spec, ToTensor(d.preds), ToTensor(d.target));
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(std::vector<int64_t>(got->sizes().begin(), got->sizes().end()), shape) << spec;
  }
}

TEST(RegressionTest, CollectionOfAllMetricsMatchesEachAlone) {
  // Verifies that compiling every regression metric into one program (shared
  // inputs, CSE across metrics) gives each metric's own result.
  const Pair& d = Data("2d");
  at::Tensor p = ToTensor(d.preds), t = ToTensor(d.target);
  std::vector<std::string> specs = {"mean_squared_error",
                                    "mean_absolute_error",
                                    "mean_absolute_percentage_error",
                                    "r2_score",
                                    "explained_variance",
                                    "pearson_corrcoef",
                                    "concordance_corrcoef",
                                    "spearman_corrcoef",
                                    "cosine_similarity",
                                    "log_cosh_error",
                                    "r2_score(multioutput=raw_values)"};
  tally::EvalOptions opts;
  opts.batch_size = 5;
  auto together = tally::Evaluate(specs, Inputs(p, t), opts);
  ASSERT_TRUE(together.ok()) << together.status();
  for (size_t i = 0; i < specs.size(); ++i) {
    auto alone = Eval(specs[i], p, t, 5);
    ASSERT_TRUE(alone.ok());
    EXPECT_TRUE(Near((*together)[i].value, FromTensor(*alone), 0)) << specs[i];
  }
}

// --- bad input -------------------------------------------------------------------------

struct BadCase {
  std::string spec;
  at::Tensor preds, target;
  std::vector<std::string> substrings;  // the error must contain each
};

TEST(RegressionTest, BadInputsAreErrorsNamingMetricAndInput) {
  // Verifies that shape, rank, dtype and num_outputs mismatches are host-side
  // build errors that name the metric and the input.
  auto f = [](std::vector<int64_t> shape) { return at::zeros(shape, at::kFloat); };
  const std::vector<std::string> all = {
      "mean_squared_error", "mean_absolute_error", "mean_absolute_percentage_error", "r2_score",
      "explained_variance", "pearson_corrcoef",    "concordance_corrcoef",           "spearman_corrcoef",
      "cosine_similarity",  "log_cosh_error"};
  std::vector<BadCase> cases;
  for (const std::string& m : all) {
    cases.push_back({m, f({8, 3}), f({8, 2}), {m + ": target: shape [8, 2] does not match preds shape [8, 3]"}});
    cases.push_back({m, f({8}), f({7}), {m + ": target:", "[7]", "[8]"}});
    cases.push_back({m, at::zeros({8, 2}, at::kBool), f({8, 2}), {m + ": preds: expected a numeric tensor, got bool"}});
  }
  for (const char* m : {"r2_score", "explained_variance", "pearson_corrcoef", "concordance_corrcoef",
                        "spearman_corrcoef", "log_cosh_error"}) {
    cases.push_back({m, f({4, 2, 2}), f({4, 2, 2}), {std::string(m) + ": preds: expected shape [N] or [N, d]"}});
  }
  cases.push_back({"cosine_similarity", f({8}), f({8}), {"cosine_similarity: preds: expected a 2-D tensor"}});
  cases.push_back({"cosine_similarity", f({8, 2, 2}), f({8, 2, 2}), {"cosine_similarity: preds:"}});
  cases.push_back({"mean_squared_error(num_outputs=2)",
                   f({8, 3}),
                   f({8, 3}),
                   {"mean_squared_error: preds: num_outputs=2 expects shape [N, 2], got [8, 3]"}});
  cases.push_back(
      {"mean_absolute_error(num_outputs=3)", f({8}), f({8}), {"mean_absolute_error: preds: num_outputs=3"}});
  cases.push_back({"pearson_corrcoef(num_outputs=1)",
                   f({8, 3}),
                   f({8, 3}),
                   {"pearson_corrcoef: preds: num_outputs=1 expects shape [N] or [N, 1], got [8, 3]"}});
  cases.push_back({"spearman_corrcoef(num_outputs=2)", f({8}), f({8}), {"spearman_corrcoef: preds: num_outputs=2"}});
  cases.push_back({"log_cosh_error(num_outputs=4)", f({8, 3}), f({8, 3}), {"log_cosh_error: preds: num_outputs=4"}});
  cases.push_back({"mean_squared_error", f({}), f({}), {"mean_squared_error: preds: expected at least one dim"}});
  // Bad arguments name the metric.
  cases.push_back({"r2_score(adjusted=-1)", f({8}), f({8}), {"r2_score: adjusted must be an integer >= 0"}});
  cases.push_back({"r2_score(adjusted=1.5)", f({8}), f({8}), {"r2_score:", "adjusted"}});
  cases.push_back({"r2_score(multioutput=mean)", f({8}), f({8}), {"r2_score:", "multioutput"}});
  cases.push_back({"explained_variance(multioutput=x)", f({8}), f({8}), {"explained_variance:", "multioutput"}});
  cases.push_back({"cosine_similarity(reduction=max)", f({8, 2}), f({8, 2}), {"cosine_similarity:", "reduction"}});
  cases.push_back({"mean_squared_error(num_outputs=0)", f({8}), f({8}), {"mean_squared_error: num_outputs must be"}});
  cases.push_back({"pearson_corrcoef(num_outputs=0)", f({8}), f({8}), {"pearson_corrcoef: num_outputs must be"}});
  cases.push_back({"mean_absolute_error(squared=false)", f({8}), f({8}), {"mean_absolute_error:", "squared"}});
  for (const BadCase& c : cases) {
    auto sig = tally::SignatureOf(Inputs(c.preds, c.target));
    ASSERT_TRUE(sig.ok());
    auto entries = tally::BuildEntries({c.spec}, *sig, ir::Device{});
    ASSERT_FALSE(entries.ok()) << c.spec;
    EXPECT_EQ(entries.status().code(), absl::StatusCode::kInvalidArgument) << c.spec;
    for (const std::string& s : c.substrings) EXPECT_THAT(std::string(entries.status().message()), HasSubstr(s));
  }
}

TEST(RegressionTest, RowCountMismatchAtUpdateIsAnErrorAndChangesNothing) {
  // Verifies that a batch whose preds and target disagree on N is rejected by
  // Update (naming the metric and input) and leaves the states untouched.
  const Pair& d = Data("1d");
  at::Tensor p = ToTensor(d.preds), t = ToTensor(d.target);
  auto prog = MakeProgram({"pearson_corrcoef"}, Inputs(p, t));
  ASSERT_TRUE(prog.ok());
  ASSERT_TRUE((*prog)->Update(Inputs(Rows(p, 0, 20), Rows(t, 0, 20))).ok());
  absl::Status bad = (*prog)->Update(Inputs(Rows(p, 20, 5), Rows(t, 20, 6)));
  EXPECT_THAT(std::string(bad.message()), HasSubstr("pearson_corrcoef"));
  EXPECT_THAT(std::string(bad.message()), HasSubstr("target"));
  ASSERT_TRUE((*prog)->Update(Inputs(Rows(p, 20, p.size(0) - 20), Rows(t, 20, p.size(0) - 20))).ok());
  auto got = (*prog)->Compute();
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(Near((*got)[0].second, RefPearson(d), 1e-12));
}

}  // namespace
}  // namespace tally
