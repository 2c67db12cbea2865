// The Fréchet distance between the feature distributions of real and
// generated images, as TorchMetrics 1.5.2's FrechetInceptionDistance
// computes it from the network's features (the network itself runs in the
// caller's server: no weights can be fetched here):
//   frechet_inception_distance()
// over real_features and fake_features [N, D] (one row each per update),
// or features [N, D] with a bool `real` [N] (any mix of the two, as
// TorchMetrics' update(imgs, real) allows). Per distribution the states
// are float64 sums: the features, their D x D co-moments x xᵀ (a matmul per
// update) and the rows, which merge exactly. At finalize
//   mu = sum / n,   Sigma = (sum x xᵀ - n mu muᵀ) / (n - 1),
//   FID = |mu_r - mu_f|² + tr Sigma_r + tr Sigma_f - 2 tr sqrtm(Sigma_r Sigma_f)
// with tr sqrtm as TorchMetrics takes it: the real parts of the square roots
// of the eigenvalues of the product (trace_sqrt), all in float64. Fewer
// than two rows of either kind is refused at compute.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/registry.h"
#include "metrics/regression/operands.h"
#include "ops/attrs.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ops::Expr;

// Moments are one distribution's states.
struct Moments {
  State sum, comoments, rows;
};

Moments AddMoments(MetricBuilder& b, const std::string& kind, int64_t d) {
  return {b.AddState(kind + "_features_sum", DType::kFloat64, {d}, ir::Reducer::kSum),
          b.AddState(kind + "_features_cov_sum", DType::kFloat64, {d, d}, ir::Reducer::kSum),
          b.AddState(kind + "_features_num_samples", DType::kInt64, {}, ir::Reducer::kSum)};
}

// Accumulate adds rows x [N, D] (float64; zero rows for those left out)
// and their count.
void AccumulateMoments(MetricBuilder& b, const Moments& m, Expr x, Expr rows) {
  b.Accumulate(m.sum, ops::Sum(x, {0}));
  b.Accumulate(m.comoments, ops::Matmul(ops::Transpose(x, 0, 1), x));
  b.Accumulate(m.rows, rows);
}

// Features declares one [N, D] feature input, floating; D, or 0 (the
// builder poisoned).
int64_t DeclareFeatures(MetricBuilder& b, const std::string& name, Expr& out) {
  const dsl::InputSpec* spec = b.FindInput(name);
  out = b.Input(name);
  if (!b.ok()) return 0;
  if (spec->shape.size() != 2 || !ir::IsFloating(spec->dtype)) {
    b.FailInput(name, absl::StrCat("expected floating features [N, D], got ", ir::DTypeName(spec->dtype), " ",
                                   ShapeText(spec->shape)));
    return 0;
  }
  out = F64(out);
  return spec->shape[1];
}

absl::StatusOr<dsl::Metric> Build(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  MetricBuilder b(args.metric_name(), sig, device);
  Expr real_x, fake_x, real_rows, fake_rows;
  int64_t d = 0;
  if (b.FindInput("features") != nullptr) {
    Expr x;
    d = DeclareFeatures(b, "features", x);
    const dsl::InputSpec* flag = b.FindInput("real");
    Expr real = b.RawInput("real");
    if (!b.ok()) return b.status();
    if (flag->dtype != DType::kBool || flag->shape.size() != 1) {
      b.FailInput("real", absl::StrCat("expected bool [N] (true for a real image's row), got ",
                                       ir::DTypeName(flag->dtype), " ", ShapeText(flag->shape)));
      return b.status();
    }
    Expr is_real = ops::Unsqueeze(F64(real), 1);
    real_x = x * is_real;
    fake_x = x * (1.0 - is_real);
    real_rows = ops::Sum(ops::Cast(real, DType::kInt64));
    fake_rows = ops::Sum(ops::Cast(!real, DType::kInt64));
  } else {
    d = DeclareFeatures(b, "real_features", real_x);
    const int64_t fake_d = DeclareFeatures(b, "fake_features", fake_x);
    if (!b.ok()) return b.status();
    if (fake_d != d) {
      b.FailInput("fake_features", absl::StrCat("has ", fake_d, " features, real_features ", d));
      return b.status();
    }
    real_rows = ops::Size(real_x, 0);
    fake_rows = ops::Size(fake_x, 0);
  }
  const Moments real = AddMoments(b, "real", d), fake = AddMoments(b, "fake", d);
  AccumulateMoments(b, real, real_x, real_rows);
  AccumulateMoments(b, fake, fake_x, fake_rows);

  struct Distribution {
    Expr mean, covariance, trace;
  };
  auto distribution = [&b, d](const Moments& m) {
    Expr n = F64(b.Read(m.rows));
    Expr mean = ops::Unsqueeze(b.Read(m.sum) / n, 0);  // [1, D]
    Expr covariance = (b.Read(m.comoments) - n * ops::Matmul(ops::Transpose(mean, 0, 1), mean)) / (n - 1.0);
    Expr index = ops::Arange(covariance, d);
    Expr diagonal = ops::Unsqueeze(index, 1) == ops::Unsqueeze(index, 0);
    return Distribution{ops::Squeeze(mean, 0), covariance, ops::Sum(ops::Where(diagonal, covariance, 0.0))};
  };
  const Distribution r = distribution(real), f = distribution(fake);
  Expr gap = r.mean - f.mean;
  Expr fid = ops::Sum(gap * gap) + r.trace + f.trace - 2.0 * ops::TraceSqrt(ops::Matmul(r.covariance, f.covariance));
  Expr few = ops::Cast(b.Read(real.rows) < 2.0 || b.Read(fake.rows) < 2.0, DType::kInt64);
  b.Output(b.Op(
      ops::OpId::kAssertZero, {few, fid},
      ops::ToAttrMap(ops::AssertZeroAttrs::WholeState(absl::StrCat(
          args.metric_name(), ": more than one sample is required for both the real and the fake distributions")))));
  return b.Finish();
}

}  // namespace

void RegisterFrechetMetrics(std::vector<MetricInfo>& out) {
  out.push_back({"frechet_inception_distance", "image", {"real_features", "fake_features", "features", "real"}, Build});
}

}  // namespace tally::metrics
