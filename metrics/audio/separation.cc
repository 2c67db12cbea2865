// Source separation and enhancement metrics over waveforms, with
// TorchMetrics' functional names, arguments and values (1.5.2; PIT's
// permutation-wise keyword arguments as 1.9 passes them):
//   signal_noise_ratio(zero_mean=False)                 preds, target [..., time]
//   scale_invariant_signal_noise_ratio                  [..., time]
//   scale_invariant_signal_distortion_ratio(zero_mean=False)
//   complex_scale_invariant_signal_noise_ratio(zero_mean=False)
//                                                       [..., frequency, time, 2]
//   source_aggregated_signal_distortion_ratio(scale_invariant=True, zero_mean=False)
//                                                       [..., spk, time]
//   signal_distortion_ratio(use_cg_iter=None, filter_length=512, zero_mean=False, load_diag=None)
//                                                       [..., time]
//   permutation_invariant_training(metric, mode='speaker-wise', eval_func='max', ...)
//                                                       [batch, spk, ...]
// Every metric is the mean of per-signal values in dB: a float64 sum and an
// int64 count, fixed-size and exact to merge. Values are computed in
// float64 with the epsilon of preds' dtype, as TorchMetrics adds it; SNR
// and the SI- forms by the signal_ratio op (ops/fused/signal_ratio.h), which
// reads the signals once and copies none, PIT's tables as graphs. SDR
// solves for a distortion filter per signal (the sdr op, ops/fused/sdr.h);
// use_cg_iter (TorchMetrics' conjugate gradient, which needs fast-bss-eval
// and falls back to the direct solve without it) is accepted and solved
// directly: the exact filter.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/epsilon.h"
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

enum class Kind { kSnr, kSiSnr, kSiSdr, kComplexSiSnr, kSaSdr, kSdr };

// The PIT inner metrics, by name.
constexpr absl::string_view kInnerNames[] = {"signal_noise_ratio",
                                             "scale_invariant_signal_noise_ratio",
                                             "scale_invariant_signal_distortion_ratio",
                                             "complex_scale_invariant_signal_noise_ratio",
                                             "source_aggregated_signal_distortion_ratio",
                                             "signal_distortion_ratio"};
constexpr Kind kInnerKinds[] = {Kind::kSnr, Kind::kSiSnr, Kind::kSiSdr, Kind::kComplexSiSnr, Kind::kSaSdr, Kind::kSdr};

// More speakers than this make PIT's table of permutations too large.
constexpr int64_t kMaxSpeakers = 6;

// The arguments of one metric kind.
struct Options {
  Kind kind = Kind::kSnr;
  bool zero_mean = false;
  bool scale_invariant = true;  // SA-SDR only
  int64_t filter_length = 512;  // SDR only
  double load_diag = 0.0;       // SDR only
  double eps = std::numeric_limits<float>::epsilon();
};

absl::Status ReadOptions(SpecArgs& args, Options& o) {
  if (o.kind == Kind::kSiSnr) {
    o.zero_mean = true;  // SI-SNR is SI-SDR of zero-mean signals
  } else {
    TALLY_ASSIGN_OR_RETURN(o.zero_mean, args.GetBool("zero_mean", false));
  }
  if (o.kind == Kind::kSaSdr) {
    TALLY_ASSIGN_OR_RETURN(o.scale_invariant, args.GetBool("scale_invariant", true));
  }
  if (o.kind == Kind::kSdr) {
    TALLY_ASSIGN_OR_RETURN(o.filter_length, args.GetInt("filter_length", 512));
    if (o.filter_length < 1) {
      return args.InvalidArgument(absl::StrCat("filter_length must be >= 1, got ", o.filter_length));
    }
    TALLY_ASSIGN_OR_RETURN(const std::optional<double> load_diag, args.GetOptionalDouble("load_diag"));
    o.load_diag = load_diag.value_or(0.0);
    TALLY_ASSIGN_OR_RETURN(const std::optional<int64_t> iterations, args.GetOptionalInt("use_cg_iter"));
    if (iterations.has_value() && *iterations < 1) {
      return args.InvalidArgument(absl::StrCat("use_cg_iter must be >= 1 or None, got ", *iterations));
    }
  }
  return absl::OkStatus();
}

// The trailing dims `signal` of a rank-`rank` tensor.
std::vector<int64_t> Last(int64_t rank, int64_t signal) {
  std::vector<int64_t> dims(signal);
  std::iota(dims.begin(), dims.end(), rank - signal);
  return dims;
}

// Centered subtracts the mean over `dims` (torch.mean, keepdim).
Expr Centered(Expr x, const std::vector<int64_t>& dims, int64_t count) {
  return x - ops::Sum(x, dims, true) / static_cast<double>(count);
}

// Decibels is 10 log10((num + eps) / (den + eps)).
Expr Decibels(Expr num, Expr den, double eps) { return ops::Log((num + eps) / (den + eps)) * (10.0 / std::log(10.0)); }

// The signal geometry of a rank-`rank` input (after PIT's broadcast): the
// dims a value sums over, and the dims zero_mean centres over.
struct Geometry {
  std::vector<int64_t> sum_dims;
  std::vector<int64_t> mean_dims;
  int64_t mean_count = 1;
};

// SignalDims is how many trailing dims one value reads: time; frequency,
// time and the real/imaginary pair; or speakers and time.
int64_t SignalDims(Kind kind) {
  if (kind == Kind::kComplexSiSnr) return 3;
  if (kind == Kind::kSaSdr) return 2;
  return 1;
}

Geometry GeometryOf(Kind kind, const std::vector<int64_t>& shape) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  Geometry g;
  g.sum_dims = Last(rank, SignalDims(kind));
  // C-SI-SNR flattens frequency, time and the pair before SI-SDR, so its
  // mean is over all three; SA-SDR centres each speaker over time.
  g.mean_dims = kind == Kind::kSaSdr ? Last(rank, 1) : g.sum_dims;
  for (int64_t d : g.mean_dims) g.mean_count *= shape[d];
  return g;
}

// Values are the per-signal values of `kind` in dB, preds and target in
// float64 (broadcast against each other by PIT), of rank `shape.size()`.
Expr Values(const Options& o, const std::vector<int64_t>& shape, Expr preds, Expr target) {
  if (o.kind == Kind::kSdr) {
    // The op pairs signals of one shape: PIT's broadcast made explicit
    // (adding zeros is exact).
    Expr p = preds + ops::FullLike(target, 0.0, DType::kFloat64);
    Expr t = target + ops::FullLike(preds, 0.0, DType::kFloat64);
    ops::SdrAttrs attrs;
    attrs.filter_length = o.filter_length;
    attrs.zero_mean = o.zero_mean;
    attrs.load_diag = o.load_diag;
    return preds.builder()->Op(ops::OpId::kSdr, {p, t}, ops::ToAttrMap(attrs));
  }
  const Geometry g = GeometryOf(o.kind, shape);
  if (o.zero_mean) {
    preds = Centered(preds, g.mean_dims, g.mean_count);
    target = Centered(target, g.mean_dims, g.mean_count);
  }
  const double eps = o.eps;
  if (o.kind == Kind::kSnr || (o.kind == Kind::kSaSdr && !o.scale_invariant)) {
    Expr noise = target - preds;
    return Decibels(ops::Sum(target * target, g.sum_dims), ops::Sum(noise * noise, g.sum_dims), eps);
  }
  // The scale-invariant forms: target scaled by its projection coefficient
  // (one for all speakers in SA-SDR).
  // (|alpha t|^2 is alpha^2 |t|^2: one pass fewer over the signals.)
  Expr energy = ops::Sum(target * target, g.sum_dims, true);
  Expr alpha = (ops::Sum(preds * target, g.sum_dims, true) + eps) / (energy + eps);
  Expr noise = alpha * target - preds;
  Expr scaled_energy = alpha * alpha * energy;
  for (size_t k = 0; k < g.sum_dims.size(); ++k) scaled_energy = ops::Squeeze(scaled_energy, -1);
  return Decibels(scaled_energy, ops::Sum(noise * noise, g.sum_dims), eps);
}

// CheckShape refuses a shape `kind` has no value for; `lead` dims (the
// batch; PIT's batch and speakers) come first.
bool CheckShape(MetricBuilder& b, Kind kind, const std::vector<int64_t>& shape, int64_t lead) {
  const int64_t rank = static_cast<int64_t>(shape.size());
  const int64_t need = lead + SignalDims(kind);
  if (kind == Kind::kComplexSiSnr && (rank < need || shape.back() != 2)) {
    b.FailInput("preds",
                absl::StrCat("expected shape [batch, ..., frequency, time, 2] (real and imaginary parts), got ",
                             ShapeText(shape)));
  } else if (kind == Kind::kSaSdr && rank < need) {
    b.FailInput("preds", absl::StrCat("expected shape [batch, ..., spk, time], got ", ShapeText(shape)));
  } else if (rank < need) {
    b.FailInput("preds",
                absl::StrCat("expected shape [batch, ..., time] (one signal is [1, time]), got ", ShapeText(shape)));
  }
  return b.ok();
}

// ReadSignals declares preds and target of one shape, preds floating point.
bool ReadSignals(MetricBuilder& b, Operands& in) {
  if (!ReadOperands(b, in)) return false;
  if (!ir::IsFloating(in.preds_dtype)) {
    b.FailInput("preds", absl::StrCat("expected a floating-point tensor, got ", ir::DTypeName(in.preds_dtype)));
  }
  return b.ok();
}

// AccumulateMean keeps the sum and count of `values` and outputs their mean
// (NaN before any value, as TorchMetrics' 0 / 0).
absl::StatusOr<dsl::Metric> AccumulateMean(MetricBuilder& b, Expr values) {
  State sum = b.AddState("sum_value", DType::kFloat64, {}, ir::Reducer::kSum);
  State total = b.AddState("total", DType::kInt64, {}, ir::Reducer::kSum);
  b.Accumulate(sum, ops::Sum(values));
  b.Accumulate(total, ops::Sum(ops::FullLike(values, 1.0, DType::kInt64)));
  b.Output(b.Read(sum) / F64(b.Read(total)));
  return b.Finish();
}

absl::StatusOr<dsl::Metric> Build(Kind kind, SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  Options o;
  o.kind = kind;
  TALLY_RETURN_IF_ERROR(ReadOptions(args, o));
  MetricBuilder b(args.metric_name(), sig, device);
  Operands in;
  // Dim 0 is the batch, so that updates split and merge by rows: one signal
  // is [1, time].
  if (!ReadSignals(b, in) || !CheckShape(b, kind, in.shape, 1)) return b.status();
  o.eps = EpsilonOf(in.preds_dtype);
  // SA-SDR's zero_mean centres each speaker, not the whole signal: that
  // one form, and SDR, stay graphs.
  if (kind == Kind::kSdr || (kind == Kind::kSaSdr && o.zero_mean)) {
    return AccumulateMean(b, Values(o, in.shape, F64(in.preds), F64(in.target)));
  }
  // The others read the signals once, as they are (ops/fused/signal_ratio.h);
  // signals of two dtypes meet in float64.
  Expr preds = in.preds, target = in.target;
  if (in.preds_dtype != in.target_dtype) {
    preds = F64(preds);
    target = F64(target);
  }
  ops::SignalRatioAttrs attrs;
  attrs.signal_dims = SignalDims(kind);
  attrs.scale_invariant = kind != Kind::kSnr && (kind != Kind::kSaSdr || o.scale_invariant);
  attrs.zero_mean = o.zero_mean;
  attrs.eps = o.eps;
  return AccumulateMean(b, preds.builder()->Op(ops::OpId::kSignalRatio, {preds, target}, ops::ToAttrMap(attrs)));
}

// Permutations lists every permutation of [0, n) in itertools' order.
std::vector<std::vector<int64_t>> Permutations(int64_t n) {
  std::vector<int64_t> p(n);
  std::iota(p.begin(), p.end(), 0);
  std::vector<std::vector<int64_t>> out;
  do out.push_back(p);
  while (std::next_permutation(p.begin(), p.end()));
  return out;
}

// PermutationMatrices is the constant [P, S, S] of one-hot rows: entry
// (k, t, p) is 1 when permutation k pairs target speaker t with preds
// speaker p.
Expr PermutationMatrices(Expr like, const std::vector<std::vector<int64_t>>& perms, int64_t s) {
  std::vector<double> values(perms.size() * s * s, 0.0);
  for (size_t k = 0; k < perms.size(); ++k) {
    for (int64_t t = 0; t < s; ++t) values[(k * s + t) * s + perms[k][t]] = 1.0;
  }
  return ops::Reshape(ops::Dense(like, values, DType::kFloat64), {static_cast<int64_t>(perms.size()), s, s});
}

// MeanPast0 is the mean over every dim but the first.
Expr MeanPast0(Expr x, const std::vector<int64_t>& shape) {
  std::vector<int64_t> dims;
  int64_t count = 1;
  for (int64_t d = 1; d < static_cast<int64_t>(shape.size()); ++d) {
    dims.push_back(d);
    count *= shape[d];
  }
  return dims.empty() ? x : ops::Sum(x, dims) / static_cast<double>(count);
}

absl::StatusOr<dsl::Metric> BuildPit(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(std::string mode, args.GetEnum("mode", {"speaker-wise", "permutation-wise"}, "speaker-wise"));
  TALLY_ASSIGN_OR_RETURN(std::string eval_func, args.GetEnum("eval_func", {"max", "min"}, "max"));
  TALLY_ASSIGN_OR_RETURN(std::string inner, args.GetEnum("metric", kInnerNames));
  Options o;
  o.kind = kInnerKinds[std::find(std::begin(kInnerNames), std::end(kInnerNames), inner) - std::begin(kInnerNames)];
  TALLY_RETURN_IF_ERROR(ReadOptions(args, o));
  const bool speaker_wise = mode == "speaker-wise";
  if (speaker_wise && o.kind == Kind::kSaSdr) {
    return args.InvalidArgument(
        "source_aggregated_signal_distortion_ratio aggregates the speakers: use mode=permutation-wise");
  }
  MetricBuilder b(args.metric_name(), sig, device);
  Operands in;
  if (!ReadSignals(b, in)) return b.status();
  const std::vector<int64_t>& shape = in.shape;
  // Speaker-wise pairs one signal per (batch, speaker): no dims beside them.
  if (speaker_wise && in.rank() != 2 + SignalDims(o.kind)) {
    b.FailInput("preds", absl::StrCat("speaker-wise ", inner, " expects shape [batch, spk, ",
                                      o.kind == Kind::kComplexSiSnr ? "frequency, time, 2" : "time", "], got ",
                                      ShapeText(shape)));
    return b.status();
  }
  // Permutation-wise, the inner metric reads [batch, spk, ...] whole.
  if (!CheckShape(b, o.kind, shape, speaker_wise ? 2 : 1)) return b.status();
  const int64_t s = shape[1];
  if (s > kMaxSpeakers) {
    b.FailInput("preds", absl::StrCat("has ", s, " speakers; at most ", kMaxSpeakers, " are searched"));
    return b.status();
  }
  o.eps = EpsilonOf(in.preds_dtype);
  const std::vector<std::vector<int64_t>> perms = Permutations(s);
  Expr preds = F64(in.preds), target = F64(in.target);
  Expr perm = PermutationMatrices(preds, perms, s);
  auto better = [&](Expr a, Expr c) { return eval_func == "max" ? ops::Maximum(a, c) : ops::Minimum(a, c); };
  Expr best;
  if (speaker_wise) {
    // The [batch, target spk, preds spk] table of values, by broadcasting.
    std::vector<int64_t> pair_shape = shape;
    pair_shape.insert(pair_shape.begin() + 2, s);
    Expr table = Values(o, pair_shape, ops::Unsqueeze(preds, 1), ops::Unsqueeze(target, 2));
    // Each permutation's mean, [batch, P]: the one-hot rows pick its pairs
    // (adding zeros leaves the picked sum exact).
    Expr scores = ops::Sum(ops::Unsqueeze(table, 1) * perm, {2, 3}) / static_cast<double>(s);
    best = eval_func == "max" ? ops::Max(scores, {1}) : ops::Min(scores, {1});
  } else {
    // Each permutation reorders preds' speakers: x·1 + 0 picks a speaker
    // exactly; the inner value is then averaged past the batch dim.
    std::vector<int64_t> value_shape(shape.begin(), shape.end() - SignalDims(o.kind));
    for (size_t k = 0; k < perms.size(); ++k) {
      Expr onehot = ops::Select(perm, 0, static_cast<int64_t>(k));
      for (int64_t d = 2; d < in.rank(); ++d) onehot = ops::Unsqueeze(onehot, -1);
      Expr permuted = ops::Sum(ops::Unsqueeze(preds, 1) * onehot, {2});
      Expr score = MeanPast0(Values(o, shape, permuted, target), value_shape);
      best = k == 0 ? score : better(best, score);
    }
  }
  return AccumulateMean(b, best);
}

}  // namespace

void RegisterSeparationMetrics(std::vector<MetricInfo>& out) {
  const std::vector<std::string> inputs = {"preds", "target"};
  for (size_t i = 0; i < std::size(kInnerNames); ++i) {
    out.push_back({std::string(kInnerNames[i]), "audio", inputs, Bound(Build, kInnerKinds[i])});
  }
  out.push_back({"permutation_invariant_training", "audio", inputs, BuildPit});
}

}  // namespace tally::metrics
