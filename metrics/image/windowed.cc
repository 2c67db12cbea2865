// Image scores from windowed statistics, with TorchMetrics 1.5.2's names,
// arguments and values:
//   structural_similarity_index_measure(gaussian_kernel=True, sigma=1.5,
//       kernel_size=11, reduction="elementwise_mean", data_range=None,
//       k1=0.01, k2=0.03)
//   multiscale_structural_similarity_index_measure(the same, betas=(0.0448,
//       0.2856, 0.3001, 0.2363, 0.1333), normalize="relu")
//   universal_image_quality_index(kernel_size=(11, 11), sigma=(1.5, 1.5),
//       reduction="elementwise_mean")
// Images are [N, C, H, W], computed in float64. The windowed means of x,
// y, x², y² and xy are depthwise_conv2d ops: a column window, then a row
// window (the Gaussian and uniform windows are outer products, so two
// passes of k taps replace one of k² — the same sums to rounding), over the
// reflection padding TorchMetrics adds. As TorchMetrics does:
//   SSIM: the window of a Gaussian is int(3.5 sigma + 0.5) * 2 + 1 wide
//     whatever kernel_size says; each image's value is the mean of its
//     whole map, the padded border included; without data_range each
//     update's range is the larger of preds' and target's (max - min);
//   MS-SSIM: per scale the SSIM and the contrast sensitivity (its map
//     cropped by the padding), 2x2 average pooling between scales (a
//     stride-2 window of 1/4), the range measured (or the clamp applied)
//     at each scale;
//   UQI: a Gaussian window of kernel_size, the padding of width and height
//     swapped (F.pad's order), the map cropped by the padding, eps the
//     input dtype's, and the mean divided by N C (H - kh + 1) (W - kw + 1)
//     (the map's size for square windows only).
// A crop is a one-hot window (1 x + 0 y is x). The states are sums and
// counts, or each image's values with reduction=none.
#include <array>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/dsl/builder.h"
#include "metrics/common.h"
#include "metrics/epsilon.h"
#include "metrics/image/images.h"
#include "metrics/registry.h"
#include "support/status_macros.h"

namespace tally::metrics {
namespace {

using dsl::MetricBuilder;
using dsl::State;
using ir::DType;
using ops::Expr;

// Window is a separable window: its column and row weights and the
// reflection padding added before it, per spatial dim.
struct Window {
  std::vector<double> column, row;
  int64_t pad_h = 0, pad_w = 0;
};

// Gaussian is TorchMetrics' _gaussian: exp(-(d / sigma)^2 / 2) at the
// offsets d from the centre, normalized to sum 1.
std::vector<double> Gaussian(int64_t size, double sigma) {
  std::vector<double> g(size);
  double sum = 0;
  for (int64_t i = 0; i < size; ++i) {
    const double d = (1.0 - static_cast<double>(size)) / 2.0 + static_cast<double>(i);
    g[i] = std::exp(-std::pow(d / sigma, 2) / 2.0);
    sum += g[i];
  }
  for (double& v : g) v /= sum;
  return g;
}

// Moments is the windowed mean of x [N, C, H, W].
Expr Moments(Expr x, const Window& w) {
  const int64_t kh = static_cast<int64_t>(w.column.size()), kw = static_cast<int64_t>(w.row.size());
  Expr column = ops::Reshape(ops::Dense(x, w.column, DType::kFloat64), {kh, 1});
  Expr row = ops::Reshape(ops::Dense(x, w.row, DType::kFloat64), {1, kw});
  return ops::DepthwiseConv2d(ops::DepthwiseConv2d(x, column, 1, w.pad_h, 0), row, 1, 0, w.pad_w);
}

// Crop drops `h` rows and `w` columns on each side: a one-hot window.
Expr Crop(Expr x, int64_t h, int64_t w) {
  std::vector<double> hot((2 * h + 1) * (2 * w + 1), 0.0);
  hot[h * (2 * w + 1) + w] = 1.0;
  return ops::DepthwiseConv2d(x, ops::Reshape(ops::Dense(x, hot, DType::kFloat64), {2 * h + 1, 2 * w + 1}));
}

// Maps are the windowed statistics' maps of preds and target.
struct Maps {
  Expr mean_p2, mean_t2, mean_pt;  // mu_p^2, mu_t^2, mu_p mu_t
  Expr var_p, var_t, covariance;   // clamped at 0 (not the covariance)
};

Maps StatisticsOf(Expr p, Expr t, const Window& w) {
  Expr mp = Moments(p, w), mt = Moments(t, w);
  Maps m;
  m.mean_p2 = mp * mp;
  m.mean_t2 = mt * mt;
  m.mean_pt = mp * mt;
  m.var_p = ops::Clamp(Moments(p * p, w) - m.mean_p2, 0.0, std::nullopt);
  m.var_t = ops::Clamp(Moments(t * t, w) - m.mean_t2, 0.0, std::nullopt);
  m.covariance = Moments(p * t, w) - m.mean_pt;
  return m;
}

// ImageMean is the mean of each image's map: [N].
Expr ImageMean(Expr map) {
  return ops::Sum(map, {1, 2, 3}) / F64(ops::Size(map, 1) * ops::Size(map, 2) * ops::Size(map, 3));
}

// SsimArgs are SSIM's arguments (MS-SSIM adds its own).
struct SsimArgs {
  bool gaussian = true;
  std::array<double, 2> sigma{1.5, 1.5};
  std::array<int64_t, 2> kernel{11, 11};
  DataRange range;
  double k1 = 0.01, k2 = 0.03;
  std::string reduction;
  Window window;
};

// ReadKernel reads kernel_size: odd positive ints, a number or a pair.
absl::StatusOr<std::array<int64_t, 2>> ReadKernel(SpecArgs& args, int64_t fallback) {
  TALLY_ASSIGN_OR_RETURN(const auto k, ReadPair(args, "kernel_size", static_cast<double>(fallback)));
  std::array<int64_t, 2> out;
  for (int i = 0; i < 2; ++i) {
    out[i] = static_cast<int64_t>(k[i]);
    if (static_cast<double>(out[i]) != k[i] || out[i] <= 0 || out[i] % 2 == 0) {
      return args.InvalidArgument(absl::StrCat("kernel_size must be odd and positive, got [", k[0], ", ", k[1], "]"));
    }
  }
  return out;
}

absl::StatusOr<std::array<double, 2>> ReadSigma(SpecArgs& args) {
  TALLY_ASSIGN_OR_RETURN(const auto s, ReadPair(args, "sigma", 1.5));
  if (!(s[0] > 0 && s[1] > 0)) {
    return args.InvalidArgument(absl::StrCat("sigma must be positive, got [", s[0], ", ", s[1], "]"));
  }
  return s;
}

absl::StatusOr<SsimArgs> ReadSsimArgs(SpecArgs& args) {
  SsimArgs a;
  TALLY_ASSIGN_OR_RETURN(a.gaussian, args.GetBool("gaussian_kernel", true));
  TALLY_ASSIGN_OR_RETURN(a.sigma, ReadSigma(args));
  TALLY_ASSIGN_OR_RETURN(a.kernel, ReadKernel(args, 11));
  TALLY_ASSIGN_OR_RETURN(a.reduction, ReadReduction(args));
  TALLY_ASSIGN_OR_RETURN(a.range, ReadDataRange(args));
  TALLY_ASSIGN_OR_RETURN(a.k1, args.GetDouble("k1", 0.01));
  TALLY_ASSIGN_OR_RETURN(a.k2, args.GetDouble("k2", 0.03));
  for (int i = 0; i < 2; ++i) {
    // A Gaussian's width comes from sigma alone (TorchMetrics' rule).
    const int64_t size = a.gaussian ? static_cast<int64_t>(3.5 * a.sigma[i] + 0.5) * 2 + 1 : a.kernel[i];
    std::vector<double> weights =
        a.gaussian ? Gaussian(size, a.sigma[i]) : std::vector<double>(size, 1.0 / static_cast<double>(size));
    (i == 0 ? a.window.column : a.window.row) = std::move(weights);
    (i == 0 ? a.window.pad_h : a.window.pad_w) = (size - 1) / 2;
  }
  return a;
}

// FitsWindow checks that the images take the window's reflection padding.
bool FitsWindow(MetricBuilder& b, const std::vector<int64_t>& shape, const Window& w) {
  if (w.pad_h < shape[2] && w.pad_w < shape[3]) return true;
  b.FailInput("preds",
              absl::StrCat("images of ", shape[2], " x ", shape[3], " are too small for a window of ", w.column.size(),
                           " x ", w.row.size(), " (reflection padding ", w.pad_h, ", ", w.pad_w, ")"));
  return false;
}

// RangeOf is the data range of one update: the given one, or the larger of
// preds' and target's max - min.
Expr RangeOf(const DataRange& range, Expr p, Expr t) {
  if (range.range) return ops::Scalar(p, *range.range);
  return ops::Maximum(ops::Max(p) - ops::Min(p), ops::Max(t) - ops::Min(t));
}

// Ssim is each image's SSIM and, with `cs`, its contrast sensitivity, of
// preds and target already clamped.
struct SsimValues {
  Expr ssim, cs;  // [N]
};
// `cs_size` is the images' [H, W] when the contrast sensitivity is wanted.
SsimValues Ssim(const SsimArgs& a, Expr p, Expr t, std::optional<std::array<int64_t, 2>> cs_size = std::nullopt) {
  Expr range = RangeOf(a.range, p, t);
  Expr c1 = (a.k1 * range) * (a.k1 * range), c2 = (a.k2 * range) * (a.k2 * range);
  Maps m = StatisticsOf(p, t, a.window);
  Expr upper = 2.0 * m.covariance + c2;
  Expr lower = m.var_p + m.var_t + c2;
  Expr map = ((2.0 * m.mean_pt + c1) * upper) / ((m.mean_p2 + m.mean_t2 + c1) * lower);
  SsimValues v{ImageMean(map), Expr()};
  if (cs_size) {
    // TorchMetrics' crop [pad:-pad] of a 0 padding, or of a map no larger
    // than twice the padding, is empty: NaN.
    const Window& w = a.window;
    const bool empty = w.pad_h == 0 || w.pad_w == 0 || (*cs_size)[0] <= 2 * w.pad_h || (*cs_size)[1] <= 2 * w.pad_w;
    v.cs =
        empty ? ops::FullLike(v.ssim, std::nan(""), DType::kFloat64) : ImageMean(Crop(upper / lower, w.pad_h, w.pad_w));
  }
  return v;
}

absl::StatusOr<dsl::Metric> BuildSsim(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(const SsimArgs a, ReadSsimArgs(args));
  for (const char* unsupported : {"return_full_image", "return_contrast_sensitivity"}) {
    TALLY_ASSIGN_OR_RETURN(const bool on, args.GetBool(unsupported, false));
    if (on) return args.InvalidArgument(absl::StrCat(unsupported, "=true is not supported (a map per image)"));
  }
  MetricBuilder b(args.metric_name(), sig, device);
  Images in;
  if (!ReadImages(b, /*integers=*/false, in) || !FitsWindow(b, in.shape, a.window)) return b.status();
  OutputReduced(b, a.reduction, Ssim(a, Clamped(in.preds, a.range), Clamped(in.target, a.range)).ssim);
  return b.Finish();
}

absl::StatusOr<dsl::Metric> BuildMsSsim(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(const SsimArgs a, ReadSsimArgs(args));
  TALLY_ASSIGN_OR_RETURN(const std::vector<double> betas,
                         args.GetDoubleList("betas", std::vector<double>{0.0448, 0.2856, 0.3001, 0.2363, 0.1333}));
  TALLY_ASSIGN_OR_RETURN(const std::string normalize, args.GetEnum("normalize", {"relu", "simple", "none"}, "relu"));
  if (betas.empty()) return args.InvalidArgument("betas must not be empty");
  MetricBuilder b(args.metric_name(), sig, device);
  Images in;
  if (!ReadImages(b, /*integers=*/false, in)) return b.status();
  // TorchMetrics' size rules, from kernel_size (not the Gaussian's width).
  const int64_t scales = static_cast<int64_t>(betas.size());
  const int64_t smallest = int64_t{1} << scales;
  const int64_t divisor = std::max<int64_t>(1, scales - 1) * std::max<int64_t>(1, scales - 1);
  for (int i = 0; i < 2; ++i) {
    const int64_t size = in.shape[2 + i];
    const char* dim = i == 0 ? "height" : "width";
    if (size < smallest || size / divisor <= a.kernel[i] - 1) {
      b.FailInput("preds", absl::StrCat("image ", dim, " ", size, " is too small for ", scales, " scales: at least ",
                                        smallest, " and more than ", (a.kernel[i] - 1) * divisor));
      return b.status();
    }
  }
  // Each scale's padding must fit its pooled images.
  std::vector<int64_t> shape = in.shape;
  for (int64_t s = 0; s < scales; ++s) {
    if (!FitsWindow(b, shape, a.window)) return b.status();
    shape[2] /= 2;
    shape[3] /= 2;
  }
  Expr p = in.preds, t = in.target;
  std::array<int64_t, 2> size{in.shape[2], in.shape[3]};
  Expr pool = ops::Reshape(ops::Dense(p, {0.25, 0.25, 0.25, 0.25}, DType::kFloat64), {2, 2});
  std::vector<Expr> values;  // per scale, [N]
  for (int64_t s = 0; s < scales; ++s) {
    // The clamp acts inside each scale; the pooling on the images as given.
    const bool last = s + 1 == scales;
    SsimValues v = Ssim(a, Clamped(p, a.range), Clamped(t, a.range),
                        last ? std::nullopt : std::optional<std::array<int64_t, 2>>(size));
    // The last scale's SSIM stands in for its contrast sensitivity.
    Expr value = last ? v.ssim : v.cs;
    if (normalize == "relu") value = ops::Maximum(value, ops::Scalar(value, 0.0));
    values.push_back(value);
    if (!last) {
      p = ops::DepthwiseConv2d(p, pool, 2);
      t = ops::DepthwiseConv2d(t, pool, 2);
      size = {size[0] / 2, size[1] / 2};
    }
  }
  Expr product;
  for (int64_t s = 0; s < scales; ++s) {
    Expr x = normalize == "simple" ? (values[s] + 1.0) / 2.0 : values[s];
    Expr weighted = ops::Pow(x, ops::Scalar(x, betas[s]));
    product = s == 0 ? weighted : product * weighted;
  }
  OutputReduced(b, a.reduction, product);
  return b.Finish();
}

absl::StatusOr<dsl::Metric> BuildUqi(SpecArgs& args, const dsl::Signature& sig, const ir::Device& device) {
  TALLY_ASSIGN_OR_RETURN(const auto kernel, ReadKernel(args, 11));
  TALLY_ASSIGN_OR_RETURN(const auto sigma, ReadSigma(args));
  TALLY_ASSIGN_OR_RETURN(const std::string reduction, ReadReduction(args));
  if (kernel[0] == 1 || kernel[1] == 1) {
    return args.InvalidArgument("kernel_size 1 leaves TorchMetrics' crop of the padding empty");
  }
  const int64_t ph = (kernel[0] - 1) / 2, pw = (kernel[1] - 1) / 2;
  // F.pad(x, (ph, ph, pw, pw)) pads the width by ph and the height by pw.
  Window w{Gaussian(kernel[0], sigma[0]), Gaussian(kernel[1], sigma[1]), pw, ph};
  MetricBuilder b(args.metric_name(), sig, device);
  Images in;
  if (!ReadImages(b, /*integers=*/false, in) || !FitsWindow(b, in.shape, w)) return b.status();
  if (in.shape[2] + 2 * pw - kernel[0] + 1 <= 2 * ph || in.shape[3] + 2 * ph - kernel[1] + 1 <= 2 * pw) {
    b.FailInput("preds", absl::StrCat("images of ", in.shape[2], " x ", in.shape[3], " leave nothing after the crop"));
    return b.status();
  }
  Maps m = StatisticsOf(in.preds, in.target, w);
  const double eps = EpsilonOf(in.dtype);
  Expr upper = 2.0 * m.covariance;
  Expr lower = m.var_p + m.var_t;
  Expr map = Crop(((2.0 * m.mean_pt) * upper) / ((m.mean_p2 + m.mean_t2) * lower + eps), ph, pw);
  if (reduction == "none") {
    const int64_t h = in.shape[2] + 2 * pw - kernel[0] + 1 - 2 * ph, wd = in.shape[3] + 2 * ph - kernel[1] + 1 - 2 * pw;
    OutputReduced(b, reduction, map, {in.shape[1], h, wd});
    return b.Finish();
  }
  State sum = b.AddState("sum_uqi", DType::kFloat64, {}, ir::Reducer::kSum);
  b.Accumulate(sum, ops::Sum(map));
  if (reduction == "sum") {
    b.Output(b.Read(sum));
    return b.Finish();
  }
  // TorchMetrics' count: the map's size for square windows only.
  State numel = b.AddState("numel", DType::kInt64, {}, ir::Reducer::kSum);
  const double per_image =
      static_cast<double>(in.shape[1] * (in.shape[2] - kernel[0] + 1) * (in.shape[3] - kernel[1] + 1));
  b.Accumulate(numel, ops::Cast(F64(ops::Size(map, 0)) * per_image, DType::kInt64));
  b.Output(b.Read(sum) / F64(b.Read(numel)));
  return b.Finish();
}

}  // namespace

void RegisterWindowedImageMetrics(std::vector<MetricInfo>& out) {
  out.push_back({"structural_similarity_index_measure", "image", {"preds", "target"}, BuildSsim});
  out.push_back({"multiscale_structural_similarity_index_measure", "image", {"preds", "target"}, BuildMsSsim});
  out.push_back({"universal_image_quality_index", "image", {"preds", "target"}, BuildUqi});
}

}  // namespace tally::metrics
