#!/usr/bin/env python3
"""Golden fixtures for the image metrics: PSNR, SSIM, MS-SSIM, UQI, total variation, SAM and FID (from features).

Regenerate (needs numpy, SciPy and scikit-image 0.19; the Debian python3-* packages work):

    /usr/bin/python3 tests/golden/gen_image.py

Output, in the case format of tests/golden/README.md: tests/golden/fixtures/image.json. Deterministic (fixed
seeds). TorchMetrics and torch are NOT imported; the rules were read from the torchmetrics v1.5.2 sources and each
carries a `# rule:` comment naming its file (paths relative to the torchmetrics repo). Specs:

  peak_signal_noise_ratio(data_range, base, reduction, dim)             inputs preds, target [N, C, H, W]
  structural_similarity_index_measure(gaussian_kernel, sigma, kernel_size, reduction, data_range, k1, k2)
  multiscale_structural_similarity_index_measure(... , betas, normalize)
  universal_image_quality_index(kernel_size, sigma, reduction)
  total_variation(reduction)                                            input img [N, C, H, W]
  spectral_angle_mapper(reduction)
  frechet_inception_distance                                            real_features, fake_features [N, D]
                                                                        or features [N, D] + real [N] bool

Where each expected value comes from (every value is float64, computed from the inputs as stored, upcast):
* PSNR: NumPy from TorchMetrics' formula (class rules: the data_range-none range is max(target.max(), 0) -
  min(target.min(), 0) over all rows); cross-checked with skimage.metrics.peak_signal_noise_ratio (base 10, dim
  none; for base b its value times ln 10 / ln b) and, everywhere, with math.fsum sums.
* SSIM: NumPy, "route A": np.pad(mode="reflect") (= torch's reflect padding) then a valid windowed sum
  (sliding_window_view + einsum) with TorchMetrics' Gaussian/uniform window; the sigma terms from the moments of the
  mean-centred images (shift invariant, so exact also at 1e3 offsets). Cross-checked against "route B":
  scipy.ndimage.correlate(mode="mirror") on the unpadded images with TorchMetrics' one-pass moments
  (E[x^2] - E[x]^2), and against skimage.metrics.structural_similarity(gaussian_weights=True, sigma,
  use_sample_covariance=False, data_range, full=True, channel_axis=0) (or gaussian_weights=False, win_size=k for
  the square uniform window): its map equals ours away from the border (skimage pads differently and crops the
  mean, TorchMetrics averages the full map) -- the interior, cropped by the pad, is asserted equal.
* MS-SSIM: the same two SSIM routes at every scale, with TorchMetrics' avg_pool2d(2) between scales.
* UQI: route A = TorchMetrics' procedure literally (F.pad(pad_h, pad_h, pad_w, pad_w) pads W by pad_h and H by
  pad_w, valid window, crop [pad_h:-pad_h, pad_w:-pad_w]); route B = the centred scipy.ndimage.correlate(mirror)
  map cropped by (2 pad_h - pad_w) rows and (2 pad_w - pad_h) columns, which is what route A works out to; for
  the default 11x11/1.5 window also skimage's SSIM map with K1 = K2 = 0 (no eps) in the interior.
* Total variation: NumPy sums, cross-checked with math.fsum.
* SAM: the angle from atan2(|t - (t.p^)p^|, t.p^) (well conditioned); cross-checked with TorchMetrics'
  arccos(clamp(dot / (|p||t|), -1, 1)).
* FID: scipy.linalg.sqrtm(cov_real @ cov_fake).real with the two-pass (np.cov) covariances; cross-checked with
  TorchMetrics' route (covariances from sum x x^T - n mu mu^T, tr sqrt = sum sqrt(eigvals(S_r S_f)).real) and
  with the symmetric route tr sqrt(S_r^1/2 S_f S_r^1/2) (eigh).
Every case is also evaluated as the golden test does -- one update, updates of 7 rows, the two halves merged --
and the three are asserted equal (data_range=none batches are built so that every batch sees the same range).

Tolerances: rtol 1e-9, atol 1e-9 (PSNR, SSIM, MS-SSIM, UQI, TV, SAM); FID rtol 1e-7, atol 1e-7. The generator fails
if a case's routes differ by more than 1/100 of its tolerance (the worst fraction per metric is printed: at most
5e-4 for the default tolerances). Widened cases (their `source` says why; listed in the summary):
* rtol = atol = 1e-6: the 1e3-offset SSIM (2), MS-SSIM (1) and UQI (1) cases. TorchMetrics' one-pass
  E[x^2] - E[x]^2 in float64 (what Tally's window sums also compute) is off the exact value by up to ~7e-9 in the
  per-image mean there (1.6e-7 in single map pixels, so their maps are not compared element-wise).
* atol = 1e-5: SAM's parallel/antiparallel pixels (2 cases): arccos of a cosine one ulp from +-1 is 1.5e-8 rad
  (exact: 0 and pi).
* rtol = atol = 1e-5: the two rank-deficient FID cases (features in a 40-dim subspace of 64; 10 rows of 32 dims).
  sqrtm, eigvals and the symmetric eigh route agree to ~2e-8 relative there (the near-zero eigenvalues of the
  singular product enter through their square roots), well inside the 1e-6 asked for keeping them.
The identical-sets FID case is written as its exact value 0.0 (sqrtm gives -1.4e-13).
TorchMetrics' docstring example for PSNR (2.5527) is a case; its SSIM (0.9219), MS-SSIM (0.9628) and UQI (0.9216)
examples use torch.rand images and are asserted statistically (to 1e-3) on numpy uniform images, not written.
"""
import json
import math
import os
import sys
import warnings

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view
from scipy import linalg, ndimage
from skimage.metrics import peak_signal_noise_ratio as sk_psnr
from skimage.metrics import structural_similarity as sk_ssim

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as g  # noqa: E402
from gen_fixtures import Refused, T, Suite, harness_chunks  # noqa: E402

warnings.filterwarnings("ignore")
np.seterr(all="ignore")

RT, AT = 1e-9, 1e-9
FRT, FAT = 1e-7, 1e-7
EPS = {"float32": float(np.finfo(np.float32).eps), "float64": float(np.finfo(np.float64).eps)}
assert EPS["float32"] == 1.1920928955078125e-07 and EPS["float64"] == 2.220446049250313e-16
WORST = {}  # metric -> (fraction of the case tolerance, case name, max abs difference)


def fmt(v):
    """Spec value: lists as [a, b], everything else as gen_fixtures writes it."""
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(fmt(x) for x in v) + "]"
    return g._fmt_arg(v)


def ispec(name, args):
    return name if not args else name + "(" + ", ".join(f"{k}={fmt(v)}" for k, v in args.items()) + ")"


def argtag(args):
    def one(v):
        if isinstance(v, (list, tuple)):
            return ",".join(str(x) for x in v)
        return "none" if v is None else str(v).lower() if isinstance(v, bool) else str(v)

    return "".join(f"_{k}-{one(v)}" for k, v in args.items())


def agree(metric, name, ref, other, rtol, atol, what):
    """Asserts |ref - other| <= (atol + rtol |ref|) / 100 (NaN and inf must match exactly); records the worst."""
    a = np.asarray(ref, np.float64).reshape(-1)
    b = np.asarray(other, np.float64).reshape(-1)
    assert a.shape == b.shape, (name, what, a.shape, b.shape)
    fin = np.isfinite(a)
    assert np.array_equal(np.isnan(a), np.isnan(b)), (name, what, a, b)
    assert np.array_equal(a[~fin & ~np.isnan(a)], b[~fin & ~np.isnan(a)]), (name, what)
    if fin.any():
        d = np.abs(a[fin] - b[fin])
        frac = float(np.max(d / (atol + rtol * np.abs(a[fin]))))
        key = (metric, "default" if (rtol, atol) in ((RT, AT), (FRT, FAT)) else "widened")
        if frac > WORST.get(key, (-1.0,))[0]:
            WORST[key] = (frac, name + " [" + what + "]", float(d.max()))
        assert frac <= 0.01, f"{name}: {what} differs by {d.max():.3e} ({frac:.3g} of the tolerance)"
    return True


def pair(v):
    return list(v) if isinstance(v, (list, tuple)) else [v, v]


# --------------------------------------------------------------------------------------------
# windows and filters
# --------------------------------------------------------------------------------------------
def gauss1d(k, s):
    # rule: src/torchmetrics/functional/image/utils.py _gaussian: dist = arange((1 - k) / 2, (1 + k) / 2, 1),
    # exp(-(dist / sigma)^2 / 2), divided by its sum
    d = np.arange(k, dtype=np.float64) - (k - 1) / 2.0
    w = np.exp(-((d / s) ** 2) / 2.0)
    return w / w.sum()


def gauss2d(ks, ss):
    # rule: src/torchmetrics/functional/image/utils.py _gaussian_kernel_2d: outer(g(ks[0], s[0]), g(ks[1], s[1])),
    # the first factor along H (rows), the second along W
    return np.outer(gauss1d(ks[0], ss[0]), gauss1d(ks[1], ss[1]))


def valid_corr(x, K):
    """Route A: valid cross-correlation (torch conv2d) of [..., Hp, Wp] with K [kh, kw]."""
    win = sliding_window_view(x, K.shape, axis=(-2, -1))
    return np.einsum("...ij,ij->...", win, K)


def mirror_corr(x, K):
    """Route B: centred correlation with mode='mirror' (= torch 'reflect' padding) of every [H, W] slice."""
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape[:-2]):
        out[idx] = ndimage.correlate(x[idx], K, mode="mirror")
    return out


def centred_moments(P, Tt, mp, mt, K):
    """Windowed means and (co)variances of the padded images P, Tt by a valid window K, the variances from the
    images less their means mp, mt (sigma terms are shift invariant: exact at large offsets)."""
    Pc, Tc = P - mp, Tt - mt
    mu_p, mu_t = valid_corr(P, K), valid_corr(Tt, K)
    mpc, mtc = valid_corr(Pc, K), valid_corr(Tc, K)
    return (mu_p, mu_t, valid_corr(Pc * Pc, K) - mpc * mpc, valid_corr(Tc * Tc, K) - mtc * mtc,
            valid_corr(Pc * Tc, K) - mpc * mtc)


def mirror_moments(p, t, K):
    """The same moments from scipy's centred correlation with mode 'mirror' (torch's reflect padding)."""
    mu_p, mu_t = mirror_corr(p, K), mirror_corr(t, K)
    return (mu_p, mu_t, mirror_corr(p * p, K) - mu_p * mu_p, mirror_corr(t * t, K) - mu_t * mu_t,
            mirror_corr(p * t, K) - mu_p * mu_t)


def rpad(x, ph, pw):
    # torch F.pad(mode="reflect") mirrors without repeating the edge = numpy "reflect"
    assert ph < x.shape[-2] and pw < x.shape[-1], "reflect padding needs pad < dim"
    return np.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), mode="reflect")


def crop(x, ph, pw):
    # x[..., ph:-ph, pw:-pw] as torch slices it (a pad of 0 gives an empty slice)
    return x[..., ph : x.shape[-2] - ph if ph else 0, pw : x.shape[-1] - pw if pw else 0]


# --------------------------------------------------------------------------------------------
# SSIM / MS-SSIM
# --------------------------------------------------------------------------------------------
def ssim_window(gaussian_kernel, sigma, kernel_size):
    ks, ss = pair(kernel_size), pair(sigma)
    # rule: src/torchmetrics/functional/image/ssim.py _ssim_update: kernel_size must be odd and positive and sigma
    # positive (both checked even when the other window is used)
    assert all(k % 2 == 1 and k > 0 for k in ks) and all(s > 0 for s in ss)
    if gaussian_kernel:
        # rule: src/torchmetrics/functional/image/ssim.py _ssim_update: the Gaussian window is
        # int(3.5 sigma + 0.5) * 2 + 1 per dim; kernel_size is not used for it
        gks = [int(3.5 * s + 0.5) * 2 + 1 for s in ss]
        K = gauss2d(gks, ss)
    else:
        # rule: src/torchmetrics/functional/image/ssim.py _ssim_update: uniform window ones(kernel_size) / prod
        K = np.ones(ks) / float(np.prod(ks))
    # rule: src/torchmetrics/functional/image/ssim.py _ssim_update: pad_h = (window_h - 1) // 2 on H,
    # pad_w = (window_w - 1) // 2 on W (F.pad(x, (pad_w, pad_w, pad_h, pad_h), mode="reflect"))
    return K, (K.shape[0] - 1) // 2, (K.shape[1] - 1) // 2


def ssim_range(p, t, data_range):
    if data_range is None:
        # rule: src/torchmetrics/functional/image/ssim.py _ssim_update: data_range None -> max(preds.max() -
        # preds.min(), target.max() - target.min()) of the tensors given to this call (one update's batch)
        return p, t, max(p.max() - p.min(), t.max() - t.min())
    if isinstance(data_range, (list, tuple)):
        # rule: src/torchmetrics/functional/image/ssim.py _ssim_update: a (lo, hi) data_range clamps preds and
        # target into [lo, hi]; the range is hi - lo
        lo, hi = data_range
        return np.clip(p, lo, hi), np.clip(t, lo, hi), hi - lo
    return p, t, float(data_range)


def ssim_parts(p, t, route="A", gaussian_kernel=True, sigma=1.5, kernel_size=11, data_range=None, k1=0.01,
               k2=0.03):
    """Per-image SSIM [N] and contrast sensitivity [N] of one batch, and the full maps."""
    K, ph, pw = ssim_window(gaussian_kernel, sigma, kernel_size)
    p, t, dr = ssim_range(p, t, data_range)
    # rule: src/torchmetrics/functional/image/ssim.py _ssim_update: c1 = (k1 data_range)^2, c2 = (k2 data_range)^2
    c1, c2 = (k1 * dr) ** 2, (k2 * dr) ** 2
    if route == "A":
        # moments of the images less their mean (padding copies, so rpad(p) - mp is rpad(p - mp) exactly)
        mp, mt = p.mean(axis=(-2, -1), keepdims=True), t.mean(axis=(-2, -1), keepdims=True)
        mu_p, mu_t, s_pp, s_tt, s_pt = centred_moments(rpad(p, ph, pw), rpad(t, ph, pw), mp, mt, K)
    else:
        # rule: src/torchmetrics/functional/image/ssim.py _ssim_update: windowed E[x], E[y], E[x^2], E[y^2], E[xy]
        # of the reflect-padded images (valid conv2d, groups = channels), sigma = E[..] - products of means
        mu_p, mu_t, s_pp, s_tt, s_pt = mirror_moments(p, t, K)
    # rule: src/torchmetrics/functional/image/ssim.py _ssim_update: sigma_pred_sq and sigma_target_sq are clamped
    # at 0; sigma_pred_target is not
    s_pp, s_tt = np.maximum(s_pp, 0.0), np.maximum(s_tt, 0.0)
    upper = 2 * s_pt + c2
    lower = s_pp + s_tt + c2
    # rule: src/torchmetrics/functional/image/ssim.py _ssim_update: map = ((2 mu_p mu_t + c1) upper) /
    # ((mu_p^2 + mu_t^2 + c1) lower); the per-image SSIM is the mean of the FULL H x W map over C, H, W (the
    # padded border is not cropped)
    smap = ((2 * mu_p * mu_t + c1) * upper) / ((mu_p * mu_p + mu_t * mu_t + c1) * lower)
    n = p.shape[0]
    sim = smap.reshape(n, -1).mean(-1)
    # rule: src/torchmetrics/functional/image/ssim.py _ssim_update: contrast sensitivity upper / lower cropped
    # [..., pad_h:-pad_h, pad_w:-pad_w] before its per-image mean (used by MS-SSIM only)
    cs = crop(upper / lower, ph, pw).reshape(n, -1).mean(-1)
    return sim, cs, smap, (ph, pw, dr)


def avg_pool2(x):
    # rule: src/torchmetrics/functional/image/ssim.py _multiscale_ssim_update: F.avg_pool2d(x, (2, 2)) between
    # scales (an odd last row/column is dropped)
    n, c, h, w = x.shape
    h2, w2 = h // 2, w // 2
    return x[:, :, : 2 * h2, : 2 * w2].reshape(n, c, h2, 2, w2, 2).mean(axis=(3, 5))


def msssim_batch(p, t, route="A", betas=(0.0448, 0.2856, 0.3001, 0.2363, 0.1333), normalize="relu", **kw):
    ks = pair(kw.get("kernel_size", 11))
    # rule: src/torchmetrics/functional/image/ssim.py _multiscale_ssim_update: H, W >= 2^len(betas) and
    # H // max(1, len(betas) - 1)^2 > kernel_size[0] - 1 (W with kernel_size[1]) -- kernel_size, not the Gaussian
    # window, even with gaussian_kernel=True
    div = max(1, len(betas) - 1) ** 2
    assert p.shape[-1] >= 2 ** len(betas) and p.shape[-2] >= 2 ** len(betas)
    assert p.shape[-2] // div > ks[0] - 1 and p.shape[-1] // div > ks[1] - 1
    mcs = []
    sim = None
    for _ in range(len(betas)):
        # rule: src/torchmetrics/functional/image/ssim.py _multiscale_ssim_update: each scale calls _ssim_update
        # with the same data_range argument: none -> the range of this scale's pooled batch; (lo, hi) -> this
        # scale's pooled (unclamped) images are clamped again (pooling acts on the unclamped images)
        sim, cs, _, _ = ssim_parts(p, t, route, **kw)
        if normalize == "relu":
            # rule: src/torchmetrics/functional/image/ssim.py _get_normalized_sim_and_cs: relu of the per-image
            # sim and cs (means), not of the maps
            sim, cs = np.maximum(sim, 0.0), np.maximum(cs, 0.0)
        mcs.append(cs)
        p, t = avg_pool2(p), avg_pool2(t)
    # rule: src/torchmetrics/functional/image/ssim.py _multiscale_ssim_update: the last scale's SSIM replaces its cs
    mcs[-1] = sim
    st = np.stack(mcs)
    if normalize == "simple":
        # rule: src/torchmetrics/functional/image/ssim.py _multiscale_ssim_update: normalize="simple" -> (x + 1) / 2
        st = (st + 1) / 2
    # rule: src/torchmetrics/functional/image/ssim.py _multiscale_ssim_update: prod over scales of x ** beta
    # (a negative x with normalize=none gives NaN)
    return np.prod(st ** np.asarray(betas, np.float64)[:, None], axis=0)


def reduce_(v, reduction):
    # rule: src/torchmetrics/utilities/distributed.py reduce: elementwise_mean -> mean, sum -> sum, none -> as is
    v = np.asarray(v, np.float64)
    if reduction == "elementwise_mean":
        return v.mean()
    if reduction == "sum":
        return v.sum()
    assert reduction in (None, "none")
    return v


def per_harness(n, fn):
    """fn(a, b) -> the values of rows a..b (row-major) as one update; asserts every harness split gives them."""
    full = np.asarray(fn(0, n), np.float64)
    rows = full.reshape(n, -1)
    for a, b in harness_chunks(n):
        part = np.asarray(fn(a, b), np.float64).reshape(b - a, -1)
        assert np.allclose(part, rows[a:b], rtol=1e-13, atol=1e-13, equal_nan=True), \
            "an update-level decision (data_range=none) differs between harness batches; fix the data"
    return full


# --------------------------------------------------------------------------------------------
# UQI, TV, SAM, PSNR, FID
# --------------------------------------------------------------------------------------------
def uqi_map(p, t, ks, ss, eps, route="A"):
    ks, ss = pair(ks), pair(ss)
    # rule: src/torchmetrics/functional/image/uqi.py _uqi_compute: kernel_size odd positive, sigma positive; the
    # window is the Gaussian of size kernel_size (no 3.5 sigma rule here)
    assert all(k % 2 == 1 and k > 0 for k in ks) and all(s > 0 for s in ss)
    K = gauss2d(ks, ss)
    ph, pw = (ks[0] - 1) // 2, (ks[1] - 1) // 2
    if route == "A":
        # rule: src/torchmetrics/functional/image/uqi.py _uqi_compute: F.pad(x, (pad_h, pad_h, pad_w, pad_w),
        # mode="reflect") -- the last dim (W) gets pad_h and H gets pad_w -- then a valid window
        P = np.pad(p, ((0, 0), (0, 0), (pw, pw), (ph, ph)), mode="reflect")
        Tt = np.pad(t, ((0, 0), (0, 0), (pw, pw), (ph, ph)), mode="reflect")
        mp, mt = p.mean(axis=(-2, -1), keepdims=True), t.mean(axis=(-2, -1), keepdims=True)
        mu_p, mu_t, s_pp, s_tt, s_pt = centred_moments(P, Tt, mp, mt, K)
    else:
        mu_p, mu_t, s_pp, s_tt, s_pt = mirror_moments(p, t, K)
    # rule: src/torchmetrics/functional/image/uqi.py _uqi_compute: sigma_pred_sq, sigma_target_sq clamped at 0
    s_pp, s_tt = np.maximum(s_pp, 0.0), np.maximum(s_tt, 0.0)
    # rule: src/torchmetrics/functional/image/uqi.py _uqi_compute: uqi = (2 mu_p mu_t)(2 s_pt) /
    # ((mu_p^2 + mu_t^2)(s_pp + s_tt) + eps), eps = torch.finfo(input dtype).eps
    m = (2 * mu_p * mu_t) * (2 * s_pt) / ((mu_p * mu_p + mu_t * mu_t) * (s_pp + s_tt) + eps)
    if route == "A":
        # rule: src/torchmetrics/functional/image/uqi.py _uqi_compute: the map is cropped [pad_h:-pad_h, pad_w:-pad_w]
        return crop(m, ph, pw)
    # the same map from the centred one: rows 2 pad_h - pad_w .. , columns 2 pad_w - pad_h .. (worked out from the
    # swapped padding; asserted against route A)
    r0, c0 = 2 * ph - pw, 2 * pw - ph
    assert r0 >= 0 and c0 >= 0
    return m[..., r0 : m.shape[-2] - r0, c0 : m.shape[-1] - c0]


def tv_per_image(x):
    # rule: src/torchmetrics/functional/image/tv.py _total_variation_update: per image
    # sum |x[..., 1:, :] - x[..., :-1, :]| + sum |x[..., :, 1:] - x[..., :, :-1]| over C, H, W
    return np.abs(np.diff(x, axis=2)).sum((1, 2, 3)) + np.abs(np.diff(x, axis=3)).sum((1, 2, 3))


def tv_fsum(x):
    return np.array([math.fsum(np.abs(np.diff(im, axis=1)).ravel()) + math.fsum(np.abs(np.diff(im, axis=2)).ravel())
                     for im in x])


def sam_atan2(p, t):
    """Angle between preds and target along dim 1, [N, H, W], from atan2 (exact; NaN for a zero vector)."""
    pn = np.sqrt((p * p).sum(1))
    tn = np.sqrt((t * t).sum(1))
    u = p / pn[:, None]
    along = (t * u).sum(1)
    rej = np.sqrt(((t - along[:, None] * u) ** 2).sum(1))
    ang = np.arctan2(rej, along)
    return np.where((pn == 0) | (tn == 0), np.nan, ang)


def sam_acos(p, t):
    # rule: src/torchmetrics/functional/image/sam.py _sam_compute: arccos(clamp(sum_c(p t) / (|p| |t|), -1, 1)) per
    # pixel (norms over the channel dim; 0 / 0 -> NaN)
    return np.arccos(np.clip((p * t).sum(1) / (np.sqrt((p * p).sum(1)) * np.sqrt((t * t).sum(1))), -1, 1))


def psnr_range(p, t, data_range):
    if data_range is None:
        # rule: src/torchmetrics/image/psnr.py PeakSignalNoiseRatio: data_range None -> min_target/max_target states
        # start at 0.0 and track target only over all updates: range = max(target.max(), 0) - min(target.min(), 0)
        return p, t, max(t.max(), 0.0) - min(t.min(), 0.0)
    if isinstance(data_range, (list, tuple)):
        # rule: src/torchmetrics/image/psnr.py PeakSignalNoiseRatio: (lo, hi) clamps preds and target, range hi - lo
        lo, hi = data_range
        return np.clip(p, lo, hi), np.clip(t, lo, hi), hi - lo
    return p, t, float(data_range)


def psnr_values(p, t, data_range, base, dim, fsum=False):
    p, t, dr = psnr_range(p, t, data_range)
    if dim is None:
        # rule: src/torchmetrics/functional/image/psnr.py _psnr_update: dim None -> one sum of squared errors over
        # every element and its count
        d = (p - t).ravel()
        sse = math.fsum(d * d) if fsum else float((d * d).sum())
        n = d.size
    else:
        dims = tuple([dim] if isinstance(dim, int) else dim)
        # rule: src/torchmetrics/image/psnr.py PeakSignalNoiseRatio: with dim, one sse per remaining index per update,
        # flattened and concatenated over updates (row order); count = prod of the reduced sizes
        assert 0 not in dims, "dim 0 would mix rows across updates"
        d2 = (p - t) ** 2
        if fsum:
            moved = np.moveaxis(d2, dims, list(range(d2.ndim - len(dims), d2.ndim)))
            flat = moved.reshape(moved.shape[: d2.ndim - len(dims)] + (-1,))
            sse = np.array([math.fsum(r) for r in flat.reshape(-1, flat.shape[-1])])
        else:
            sse = d2.sum(axis=dims).reshape(-1)
        n = int(np.prod([p.shape[k] for k in dims]))
    # rule: src/torchmetrics/functional/image/psnr.py _psnr_compute: (2 ln(range) - ln(sse / n)) * 10 / ln(base)
    return (2 * np.log(dr) - np.log(np.asarray(sse, np.float64) / n)) * (10 / math.log(base)), dr


def fid_routes(real, fake):
    """FID three ways: sqrtm (expected), TorchMetrics' one-pass covariance + eigvals, symmetric eigh."""
    nr, nf = real.shape[0], fake.shape[0]
    # rule: src/torchmetrics/image/fid.py FrechetInceptionDistance.compute: fewer than 2 real or fake rows raises
    assert nr >= 2 and nf >= 2
    mr, mf = real.mean(0), fake.mean(0)
    cr, cf = np.cov(real, rowvar=False, ddof=1), np.cov(fake, rowvar=False, ddof=1)
    cr, cf = np.atleast_2d(cr), np.atleast_2d(cf)
    a = float(((mr - mf) ** 2).sum())
    # rule: src/torchmetrics/image/fid.py _compute_fid: |mu_r - mu_f|^2 + tr S_r + tr S_f - 2 tr sqrt(S_r S_f)
    ref = a + np.trace(cr) + np.trace(cf) - 2 * float(np.trace(linalg.sqrtm(cr @ cf)).real)
    # rule: src/torchmetrics/image/fid.py FrechetInceptionDistance: float64 sums; mean = sum / n;
    # cov = (sum x x^T - n mu mu^T) / (n - 1); tr sqrt = eigvals(S_r S_f).sqrt().real.sum()
    sr, sf = real.sum(0), fake.sum(0)
    mr1, mf1 = sr / nr, sf / nf
    cr1 = (real.T @ real - nr * np.outer(mr1, mr1)) / (nr - 1)
    cf1 = (fake.T @ fake - nf * np.outer(mf1, mf1)) / (nf - 1)
    ev = np.linalg.eigvals(cr1 @ cf1).astype(np.complex128)
    tm = float(((mr1 - mf1) ** 2).sum() + np.trace(cr1) + np.trace(cf1) - 2 * np.sqrt(ev).real.sum())
    w, v = np.linalg.eigh(cr)
    half = (v * np.sqrt(np.maximum(w, 0))) @ v.T
    ws = np.linalg.eigvalsh(half @ cf @ half)
    sym = a + np.trace(cr) + np.trace(cf) - 2 * float(np.sqrt(np.maximum(ws, 0)).sum())
    return float(ref), tm, float(sym)


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------
def q(x, grid=100):
    """Values on a 1/grid lattice: short decimals in the JSON."""
    return np.round(np.asarray(x) * grid) / grid


def smooth(rng, shape, s=1.5):
    """Smooth random images in [0, 1] (Gaussian-filtered noise, each image/channel rescaled)."""
    x = ndimage.gaussian_filter(rng.standard_normal(shape), sigma=(0, 0, s, s), mode="wrap")
    lo = x.min(axis=(-2, -1), keepdims=True)
    hi = x.max(axis=(-2, -1), keepdims=True)
    return (x - lo) / (hi - lo)


def plant01(x, block=1):
    """Every image gets an aligned block of 0.0 and one of 1.0 (channel 0): each batch's range is exactly 1, also
    after `log2(block)` 2x2 poolings."""
    x = x.copy()
    x[:, 0, :block, :block] = 0.0
    x[:, 0, :block, block : 2 * block] = 1.0
    return x


def noisy_pair(rng, shape, noise=0.1, block=1, clip=True):
    t = q(smooth(rng, shape))
    p = t + noise * rng.standard_normal(shape)
    p = q(np.clip(p, 0, 1) if clip else p)
    if block:
        t, p = plant01(t, block), plant01(p, block)
    return p, t


# --------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------
def gen():
    S = Suite("image.json")
    rng = np.random.default_rng(20241)

    # ---------------------------------------------------------------- PSNR
    PS = "peak_signal_noise_ratio"

    def psnr(tag, args, p, t, rt=RT, at=AT, note=""):
        a = dict(args)
        dr, base = a.get("data_range"), a.get("base", 10.0)
        red, dim = a.get("reduction", "elementwise_mean"), a.get("dim")
        name = f"{PS}{argtag(args)}__{tag}"
        P, Tt = p.f64, t.f64
        vals, rng_used = psnr_values(P, Tt, dr, base, dim)
        v2, _ = psnr_values(P, Tt, dr, base, dim, fsum=True)
        agree(PS, name, vals, v2, rt, at, "math.fsum sse")
        src = "numpy TorchMetrics formula (= math.fsum route)"
        if dim is None and base == 10.0:
            pc, tc, _ = psnr_range(P, Tt, dr)
            sk = sk_psnr(tc, pc, data_range=rng_used)
            agree(PS, name, vals, sk, rt, at, "skimage")
            src = "skimage.metrics.peak_signal_noise_ratio (= numpy formula, math.fsum)"
        elif dim is None:
            pc, tc, _ = psnr_range(P, Tt, dr)
            sk = sk_psnr(tc, pc, data_range=rng_used) * math.log(10) / math.log(base)
            agree(PS, name, vals, sk, rt, at, "skimage")
            src = "skimage.metrics.peak_signal_noise_ratio * ln 10 / ln base (= numpy formula)"
        # harness: data_range none uses the running min/max of target over all updates (order free); with dim the
        # per-index values are concatenated in row order, so every split gives the same list
        if dim is not None:
            per_harness(P.shape[0], lambda i, j: psnr_values(P[i:j], Tt[i:j], dr, base, dim)[0])
        # rule: src/torchmetrics/image/psnr.py PeakSignalNoiseRatio.compute: reduction applies to the per-index
        # values; with dim None the value is a scalar and reduction changes nothing
        v = reduce_(vals, red) if dim is not None else float(vals)
        S.add(name, ispec(PS, args), {"preds": p, "target": t}, v, src + note, rtol=rt, atol=at)
        return v

    # TorchMetrics' docstring example (2.5527), as one 1x1x2x2 image
    v = psnr("docstring_example_1x1x2x2", {}, T([[[[0.0, 1.0], [2.0, 3.0]]]], "float32"),
             T([[[[3.0, 2.0], [1.0, 0.0]]]], "float32"))
    assert round(v, 4) == 2.5527, v
    # data_range none: range from 0 (the class's states start at 0.0), target in [0.2, 0.9] -> range 0.9
    t = q(0.2 + 0.7 * smooth(rng, (4, 1, 16, 16)))
    p = q(np.clip(t + 0.05 * rng.standard_normal(t.shape), 0.2, 0.9))
    t[0, 0, 0, 0], t[1, 0, 0, 0] = 0.2, 0.9
    v = psnr("target_0.2_0.9_range_from_zero_quirk", {}, T(p, "float32"), T(t, "float32"))
    vf = 10 * np.log10(0.7 ** 2 / np.mean((p.astype(np.float32).astype(np.float64)
                                            - t.astype(np.float32).astype(np.float64)) ** 2))
    assert abs(v - vf) > 1.0  # the functional's max - min range would give another value
    # target with values 0 and 1: range 1 either way
    p, t = noisy_pair(rng, (3, 3, 16, 16))
    psnr("target_spans_0_1_3ch", {}, T(p, "float64"), T(t, "float64"))
    # negative target in [-0.8, -0.1]: range = 0 - (-0.8) (quirk)
    tn = -q(0.1 + 0.7 * smooth(rng, (3, 1, 12, 12)))
    pn = q(tn + 0.05 * rng.standard_normal(tn.shape))
    psnr("negative_target_range_from_zero_quirk", {}, T(pn, "float64"), T(tn, "float64"))
    # data_range as a float
    p, t = noisy_pair(rng, (5, 1, 24, 20), noise=0.08)
    psnr("5x1x24x20", {"data_range": 1.0}, T(p, "float32"), T(t, "float32"))
    t8 = np.round(255 * smooth(rng, (2, 3, 16, 16)))
    p8 = np.clip(np.round(t8 + 12 * rng.standard_normal(t8.shape)), 0, 255)
    psnr("8bit_values_2x3x16x16", {"data_range": 255.0}, T(p8, "float32"), T(t8, "float32"))
    # data_range as a list: clamps preds and target
    p, t = noisy_pair(rng, (4, 1, 16, 16), noise=0.2, clip=False)
    t = q(t * 1.2 - 0.1)
    assert (p < 0).any() and (p > 1).any() and (t < 0).any() and (t > 1).any()
    psnr("values_outside_clamped", {"data_range": [0.0, 1.0]}, T(p, "float64"), T(t, "float64"))
    psnr("values_outside_clamped", {"data_range": [0.25, 0.75]}, T(p, "float64"), T(t, "float64"))
    # base 2
    p, t = noisy_pair(rng, (3, 1, 16, 16))
    psnr("3x1x16x16", {"data_range": 1.0, "base": 2.0}, T(p, "float64"), T(t, "float64"))
    psnr("3x1x16x16", {"base": 2.0}, T(p, "float64"), T(t, "float64"))
    # identical images: sse 0 -> inf
    psnr("identical_inf", {}, T(t, "float32"), T(t, "float32"))
    psnr("identical_inf", {"data_range": 1.0}, T(t, "float64"), T(t, "float64"))
    # reduction with dim none changes nothing
    psnr("3x1x16x16_no_effect", {"reduction": "sum"}, T(p, "float64"), T(t, "float64"))
    # dim: one PSNR per image (dim=[1, 2, 3]), 9 images (batches of 7), each reduction
    p, t = noisy_pair(rng, (9, 1, 12, 12))
    p[2] = q(np.clip(t[2] + 0.3 * rng.standard_normal(t[2].shape), 0, 1))
    for red in ("elementwise_mean", "sum", "none"):
        psnr("9x1x12x12", {"data_range": 1.0, "dim": [1, 2, 3], "reduction": red}, T(p, "float32"),
             T(t, "float32"))
    # dim=1: one PSNR per pixel; dim=[2, 3]: per (image, channel); dim=3: per row
    p, t = noisy_pair(rng, (2, 3, 5, 4))
    psnr("per_pixel_2x3x5x4", {"data_range": 1.0, "dim": 1, "reduction": "none"}, T(p, "float64"),
         T(t, "float64"))
    p, t = noisy_pair(rng, (3, 3, 8, 8))
    psnr("per_channel_3x3x8x8", {"data_range": 1.0, "dim": [2, 3], "reduction": "none"}, T(p, "float64"),
         T(t, "float64"))
    psnr("per_row_3x3x8x8", {"data_range": [0.0, 1.0], "dim": 3}, T(p, "float64"), T(t, "float64"))
    # dim with one identical image: that entry inf, the mean inf
    p, t = noisy_pair(rng, (3, 1, 8, 8))
    p[1] = t[1]
    psnr("one_identical_image_inf", {"data_range": 1.0, "dim": [1, 2, 3], "reduction": "none"}, T(p, "float64"),
         T(t, "float64"))
    psnr("one_identical_image_inf", {"data_range": 1.0, "dim": [1, 2, 3]}, T(p, "float64"), T(t, "float64"))
    # offsets of 1e3: data_range none -> max(target) - 0 (quirk); data_range 1.0
    p, t = noisy_pair(rng, (4, 1, 12, 12))
    psnr("offset_1e3_range_from_zero_quirk", {}, T(p + 1e3, "float64"), T(t + 1e3, "float64"))
    psnr("offset_1e3", {"data_range": 1.0}, T(p + 1e3, "float32"), T(t + 1e3, "float32"))
    # an all-zero target: range 0 -> ln 0 -> -inf
    pz = q(0.1 * np.abs(rng.standard_normal((2, 1, 6, 6))))
    psnr("zero_target_range_0_minus_inf_quirk", {}, T(pz, "float64"), T(np.zeros_like(pz), "float64"))
    # refused: dim without data_range
    S.add(f"{PS}_dim-1,2,3__refused_no_data_range", ispec(PS, {"dim": [1, 2, 3]}),
          {"preds": T(p, "float32"), "target": T(t, "float32")}, Refused("data_range"),
          "refused: dim given without data_range (TorchMetrics raises ValueError)")

    # ---------------------------------------------------------------- SSIM
    SS = "structural_similarity_index_measure"

    def ssim(tag, args, p, t, rt=RT, at=AT, note="", maps=True):
        a = dict(args)
        red = a.pop("reduction", "elementwise_mean")
        name = f"{SS}{argtag(args)}__{tag}"
        P, Tt = p.f64, t.f64
        simA, _, mapA, (ph, pw, dr) = ssim_parts(P, Tt, "A", **a)
        simB, _, mapB, _ = ssim_parts(P, Tt, "B", **a)
        if maps:
            agree(SS, name, mapA, mapB, rt, at, "route B map (mirror correlate, one-pass moments)")
        agree(SS, name, simA, simB, rt, at, "route B")
        src = "numpy (reflect pad + valid window, centred moments) = scipy.ndimage.correlate(mirror) one-pass"
        gk = a.get("gaussian_kernel", True)
        sg, ks = pair(a.get("sigma", 1.5)), pair(a.get("kernel_size", 11))
        if maps and ((gk and sg[0] == sg[1]) or (not gk and ks[0] == ks[1])):
            pc, tc, _ = ssim_range(P, Tt, a.get("data_range"))
            skw = dict(K1=a.get("k1", 0.01), K2=a.get("k2", 0.03), use_sample_covariance=False, data_range=dr,
                       full=True, channel_axis=0)
            skw.update(gaussian_weights=True, sigma=sg[0]) if gk else skw.update(gaussian_weights=False,
                                                                                  win_size=ks[0])
            for i in range(P.shape[0]):
                _, smap = sk_ssim(pc[i], tc[i], **skw)
                agree(SS, name, crop(mapA[i], ph, pw), crop(smap, ph, pw), rt, at, "skimage map interior")
            src += "; map interior = skimage structural_similarity(full=True)"
        vals = per_harness(P.shape[0], lambda i, j: ssim_parts(P[i:j], Tt[i:j], "A", **a)[0])
        # rule: src/torchmetrics/image/ssim.py StructuralSimilarityIndexMeasure: elementwise_mean = sum of per-image
        # values / images; sum; none = the per-image values of all updates concatenated
        v = reduce_(vals, red)
        S.add(name, ispec(SS, args), {"preds": p, "target": t}, v, src + note, rtol=rt, atol=at)
        return v

    p, t = noisy_pair(rng, (4, 1, 16, 16))
    ssim("4x1x16x16", {}, T(p, "float32"), T(t, "float32"))
    p, t = noisy_pair(rng, (9, 1, 16, 16), noise=0.15)
    ssim("9x1x16x16_batches", {}, T(p, "float64"), T(t, "float64"))
    ssim("9x1x16x16_batches", {"reduction": "none"}, T(p, "float64"), T(t, "float64"))
    ssim("9x1x16x16_batches", {"reduction": "sum"}, T(p, "float64"), T(t, "float64"))
    p, t = noisy_pair(rng, (3, 3, 24, 20), noise=0.12)
    ssim("3x3x24x20", {}, T(p, "float32"), T(t, "float32"))
    ssim("3x3x24x20", {"reduction": "none"}, T(p, "float32"), T(t, "float32"))
    p, t = noisy_pair(rng, (2, 1, 12, 12))
    ssim("2x1x12x12_smallest_for_pad_5", {}, T(p, "float64"), T(t, "float64"))
    p, t = noisy_pair(rng, (4, 1, 16, 16), noise=0.2, block=0)
    ssim("4x1x16x16", {"data_range": 1.0}, T(p, "float32"), T(t, "float32"))
    ssim("4x1x16x16", {"data_range": 2.0}, T(p, "float64"), T(t, "float64"))
    # data_range as a list clamps preds and target
    p, t = noisy_pair(rng, (3, 1, 16, 16), noise=0.25, block=0, clip=False)
    t = q(1.2 * t - 0.1)
    assert (p < 0).any() and (p > 1).any() and (t < 0).any() and (t > 1).any()
    ssim("values_outside_clamped", {"data_range": [0.0, 1.0]}, T(p, "float64"), T(t, "float64"))
    ssim("values_outside_clamped", {"data_range": [-1.0, 1.0]}, T(p, "float32"), T(t, "float32"))
    ssim("values_outside_clamped", {"data_range": [0.25, 0.75], "reduction": "none"}, T(p, "float64"),
         T(t, "float64"))
    t8 = np.round(255 * smooth(rng, (2, 3, 16, 16)))
    p8 = np.clip(np.round(t8 + 20 * rng.standard_normal(t8.shape)), 0, 255)
    ssim("8bit_values_2x3x16x16", {"data_range": 255.0}, T(p8, "float32"), T(t8, "float32"))
    # windows
    p, t = noisy_pair(rng, (3, 1, 16, 16))
    ssim("window_5", {"sigma": 0.5}, T(p, "float64"), T(t, "float64"))
    ssim("kernel_size_ignored_window_9", {"sigma": 1.0, "kernel_size": 5}, T(p, "float64"), T(t, "float64"))
    ssim("anisotropic_window_11x7", {"sigma": [1.5, 0.75]}, T(p, "float64"), T(t, "float64"))
    ssim("anisotropic_window_7x11", {"sigma": [0.75, 1.5], "kernel_size": [3, 5]}, T(p, "float32"),
         T(t, "float32"))
    ssim("uniform_7x7", {"gaussian_kernel": False, "kernel_size": 7}, T(p, "float64"), T(t, "float64"))
    ssim("uniform_11x11", {"gaussian_kernel": False}, T(p, "float32"), T(t, "float32"))
    ssim("uniform_5x3", {"gaussian_kernel": False, "kernel_size": [5, 3], "data_range": 1.0}, T(p, "float64"),
         T(t, "float64"))
    ssim("k1_k2", {"k1": 0.02, "k2": 0.05}, T(p, "float64"), T(t, "float64"))
    # identical images -> 1; constant images
    ssim("identical_1", {}, T(t, "float32"), T(t, "float32"))
    c = np.full((2, 1, 12, 12), 0.4)
    v = ssim("constant_equal_1", {"data_range": 1.0}, T(c, "float64"), T(c, "float64"))
    assert abs(v - 1.0) < 1e-15
    ssim("constant_0.2_vs_0.6_luminance_only", {"data_range": 1.0}, T(c * 0.5, "float64"), T(c * 1.5, "float64"))
    # anticorrelated: negative SSIM
    v = ssim("anticorrelated_negative", {}, T(1.0 - t, "float64"), T(t, "float64"))
    assert v < 0
    # offsets of 1e3 (data_range given): exact (centred) moments vs TorchMetrics' one-pass -> wider tolerance
    p, t = noisy_pair(rng, (3, 1, 16, 16), noise=0.1, block=0)
    note = ("; tolerance 1e-6: TorchMetrics' one-pass E[x^2]-E[x]^2 in float64 at 1e3 offsets is off the exact"
            " value by up to ~1e-8 (1e-7 in single map pixels)")
    ssim("offset_1e3", {"data_range": 1.0}, T(p + 1e3, "float64"), T(t + 1e3, "float64"), 1e-6, 1e-6, note,
         maps=False)
    ssim("offset_1e3", {"data_range": 1.0, "gaussian_kernel": False, "kernel_size": 7},
         T(p + 1e3, "float32"), T(t + 1e3, "float32"), 1e-6, 1e-6, note, maps=False)
    # refused
    S.add(f"{SS}_kernel_size-4__refused_even", ispec(SS, {"kernel_size": 4}),
          {"preds": T(p, "float32"), "target": T(t, "float32")}, Refused("kernel_size"),
          "refused: kernel_size must be odd and positive (checked even with gaussian_kernel=true)")
    S.add(f"{SS}_sigma-0.0__refused", ispec(SS, {"sigma": 0.0}),
          {"preds": T(p, "float32"), "target": T(t, "float32")}, Refused("sigma"),
          "refused: sigma must be positive")
    S.add(f"{SS}__refused_integer_images", SS,
          {"preds": T(np.round(255 * p), "int64"), "target": T(np.round(255 * t), "int64")},
          Refused("floating"), "refused: integer images (TorchMetrics' conv2d/pad fails on them)")

    # ---------------------------------------------------------------- MS-SSIM
    MS = "multiscale_structural_similarity_index_measure"

    def msssim(tag, args, p, t, rt=RT, at=AT, note=""):
        a = dict(args)
        red = a.pop("reduction", "elementwise_mean")
        if "betas" in a:
            a["betas"] = tuple(a["betas"])
        name = f"{MS}{argtag(args)}__{tag}"
        P, Tt = p.f64, t.f64
        vA = msssim_batch(P, Tt, "A", **a)
        vB = msssim_batch(P, Tt, "B", **a)
        agree(MS, name, vA, vB, rt, at, "route B")
        vals = per_harness(P.shape[0], lambda i, j: msssim_batch(P[i:j], Tt[i:j], "A", **a))
        # rule: src/torchmetrics/image/ssim.py MultiScaleStructuralSimilarityIndexMeasure: mean = sum / images, sum,
        # none = per-image values concatenated
        v = reduce_(vals, red)
        S.add(name, ispec(MS, args), {"preds": p, "target": t}, v,
              "numpy: SSIM route A per scale + avg_pool2d (= route B, scipy.ndimage.correlate(mirror) one-pass)"
              + note, rtol=rt, atol=at)
        return v

    # the default 5 betas need H, W >= 176 with kernel 11: one image; data_range none -> each scale's range is
    # that of the pooled image (shrinks with the scale: quirk)
    t = q(smooth(rng, (1, 1, 176, 176), s=3.0))
    p = q(np.clip(t + 0.08 * rng.standard_normal(t.shape), 0, 1))
    ranges = []
    pp, tt = p.copy(), t.copy()
    for _ in range(5):
        ranges.append(max(pp.max() - pp.min(), tt.max() - tt.min()))
        pp, tt = avg_pool2(pp), avg_pool2(tt)
    assert ranges[-1] < 0.9 * ranges[0], ranges
    msssim("1x1x176x176_default_betas_range_per_scale_quirk", {}, T(p, "float32"), T(t, "float32"))
    # two scales, default window (H >= 12 for the second scale's padding)
    p, t = noisy_pair(rng, (4, 1, 24, 24), noise=0.1, block=0)
    msssim("4x1x24x24", {"betas": [0.5, 0.5], "data_range": 1.0}, T(p, "float32"), T(t, "float32"))
    for red in ("sum", "none"):
        msssim("4x1x24x24", {"betas": [0.5, 0.5], "data_range": 1.0, "reduction": red}, T(p, "float32"),
               T(t, "float32"))
    msssim("4x1x24x24", {"betas": [0.5, 0.5], "data_range": 1.0, "normalize": "simple"}, T(p, "float64"),
           T(t, "float64"))
    msssim("4x1x24x24", {"betas": [0.5, 0.5], "data_range": 1.0, "normalize": None}, T(p, "float64"),
           T(t, "float64"))
    msssim("4x1x24x24_identical_1", {"betas": [0.5, 0.5], "data_range": 1.0}, T(t, "float64"), T(t, "float64"))
    # three scales, kernel_size 3 / sigma 0.5 (Gaussian window 5), 9 images with aligned 4x4 blocks of 0 and 1 so that
    # every batch's range is 1 at every scale (data_range none)
    p, t = noisy_pair(rng, (9, 1, 16, 16), noise=0.1, block=4)
    w3 = {"betas": [0.3, 0.3, 0.4], "kernel_size": 3, "sigma": 0.5}
    msssim("9x1x16x16_blocks_batches", w3, T(p, "float32"), T(t, "float32"))
    msssim("9x1x16x16_blocks_batches", {**w3, "reduction": "none"}, T(p, "float64"), T(t, "float64"))
    msssim("9x1x16x16_blocks_batches", {**w3, "gaussian_kernel": False}, T(p, "float64"), T(t, "float64"))
    msssim("9x1x16x16_blocks_batches", {**w3, "sigma": [0.5, 0.75], "k1": 0.02, "k2": 0.05}, T(p, "float64"),
           T(t, "float64"))
    # three channels, odd sizes (pooling drops the last row/column)
    p, t = noisy_pair(rng, (3, 3, 25, 23), noise=0.12, block=0)
    msssim("3x3x25x23_odd", {"betas": [0.5, 0.5], "data_range": 1.0}, T(p, "float64"), T(t, "float64"))
    msssim("3x3x25x23_odd", {"betas": [0.3, 0.3, 0.4], "kernel_size": 3, "sigma": 0.5, "data_range": 1.0},
           T(p, "float32"), T(t, "float32"))
    # anticorrelated: cs < 0 -> relu 0 -> 0; normalize none -> negative ** beta = NaN (quirk)
    p, t = noisy_pair(rng, (2, 1, 24, 24), noise=0.05, block=0)
    v = msssim("anticorrelated_relu_0", {"betas": [0.5, 0.5], "data_range": 1.0}, T(1.0 - p, "float64"),
               T(t, "float64"))
    assert v == 0.0
    v = msssim("anticorrelated_nan_quirk", {"betas": [0.5, 0.5], "data_range": 1.0, "normalize": None},
               T(1.0 - p, "float64"), T(t, "float64"))
    assert np.isnan(v)
    msssim("anticorrelated", {"betas": [0.5, 0.5], "data_range": 1.0, "normalize": "simple"},
           T(1.0 - p, "float64"), T(t, "float64"))
    # data_range list: each scale clamps the pooled UNCLAMPED images (clamp after pooling: quirk)
    p, t = noisy_pair(rng, (3, 1, 24, 24), noise=0.3, block=0, clip=False)
    t = q(1.3 * t - 0.15)
    a2 = {"betas": [0.5, 0.5], "data_range": [0.0, 1.0]}
    v = msssim("values_outside_clamp_per_scale_quirk", a2, T(p, "float64"), T(t, "float64"))
    # pooling the clamped images instead gives another value
    pc, tc = np.clip(p, 0, 1), np.clip(t, 0, 1)
    s1 = ssim_parts(pc, tc, "A", data_range=1.0)[1]
    s2 = ssim_parts(avg_pool2(pc), avg_pool2(tc), "A", data_range=1.0)[0]
    alt = np.mean(np.sqrt(np.maximum(s1, 0)) * np.sqrt(np.maximum(s2, 0)))
    assert abs(alt - v) > 1e-6, (alt, v)
    # offsets of 1e3
    p, t = noisy_pair(rng, (2, 1, 24, 24), noise=0.1, block=0)
    msssim("offset_1e3", {"betas": [0.5, 0.5], "data_range": 1.0}, T(p + 1e3, "float64"), T(t + 1e3, "float64"),
           1e-6, 1e-6, "; tolerance 1e-6: one-pass moments at 1e3 offsets (see the SSIM offset cases)")

    # ---------------------------------------------------------------- UQI
    UQ = "universal_image_quality_index"

    def uqi(tag, args, p, t, rt=RT, at=AT, note="", quirk_mean=False, maps=True):
        a = dict(args)
        ks, ss = a.get("kernel_size", [11, 11]), a.get("sigma", [1.5, 1.5])
        red = a.get("reduction", "elementwise_mean")
        name = f"{UQ}{argtag(args)}__{tag}"
        P, Tt = p.f64, t.f64
        eps = EPS[p.dtype]
        mA = uqi_map(P, Tt, ks, ss, eps, "A")
        mB = uqi_map(P, Tt, ks, ss, eps, "B")
        if maps:
            agree(UQ, name, mA, mB, rt, at, "route B (centred mirror map, derived crop)")
        else:
            # the crop geometry is still checked at 1/100 of a loose bound; the values by their mean below
            assert np.allclose(mA, mB, rtol=1e-5, atol=1e-5)
            agree(UQ, name, mA.mean(), mB.mean(), rt, at, "route B mean (one-pass moments)")
        src = "numpy TorchMetrics procedure (swapped pads, valid window, crop) = scipy.ndimage.correlate(mirror)"
        if maps and list(ks) == [11, 11] and list(ss) == [1.5, 1.5]:
            m0 = uqi_map(P, Tt, ks, ss, 0.0, "A")
            for i in range(P.shape[0]):
                _, smap = sk_ssim(P[i], Tt[i], K1=0.0, K2=0.0, gaussian_weights=True, sigma=1.5, data_range=1.0,
                                  use_sample_covariance=False, full=True, channel_axis=0)
                agree(UQ, name, m0[i], crop(smap, 5, 5), rt, at, "skimage SSIM K1=K2=0 interior (eps 0)")
            src += "; without eps = skimage structural_similarity(K1=0, K2=0) interior"
        per_harness(P.shape[0], lambda i, j: uqi_map(P[i:j], Tt[i:j], ks, ss, eps, "A").reshape(j - i, -1))
        n, c, h, w = P.shape
        if red == "elementwise_mean":
            # rule: src/torchmetrics/image/uqi.py UniversalImageQualityIndex.update: sum of the map / numel with
            # numel = N C (H - kernel_size[0] + 1)(W - kernel_size[1] + 1) -- the map's own size only for square
            # kernels (quirk for non-square ones)
            numel = n * c * (h - ks[0] + 1) * (w - ks[1] + 1)
            assert quirk_mean == (numel != mA.size)
            v = mA.sum() / numel
        else:
            # rule: src/torchmetrics/image/uqi.py UniversalImageQualityIndex.compute: sum; none = the whole map
            # [N, C, H', W'] of all stored images
            v = reduce_(mA, red)
        S.add(name, ispec(UQ, args), {"preds": p, "target": t}, v, src + note, rtol=rt, atol=at)
        return v

    p, t = noisy_pair(rng, (4, 1, 16, 16), noise=0.1, block=0)
    uqi("4x1x16x16_eps_float32", {}, T(p, "float32"), T(t, "float32"))
    uqi("4x1x16x16_eps_float64", {}, T(p, "float64"), T(t, "float64"))
    uqi("4x1x16x16", {"reduction": "sum"}, T(p, "float64"), T(t, "float64"))
    uqi("4x1x16x16_map_6x6", {"reduction": "none"}, T(p, "float32"), T(t, "float32"))
    p, t = noisy_pair(rng, (9, 1, 16, 16), noise=0.15, block=0)
    uqi("9x1x16x16_batches", {}, T(p, "float64"), T(t, "float64"))
    p, t = noisy_pair(rng, (2, 3, 16, 16), noise=0.1, block=0)
    uqi("2x3x16x16", {"kernel_size": [7, 7], "sigma": [1.0, 1.0]}, T(p, "float32"), T(t, "float32"))
    uqi("2x3x16x16_map_10x10", {"kernel_size": [7, 7], "sigma": [1.0, 1.0], "reduction": "none"},
        T(p, "float64"), T(t, "float64"))
    p, t = noisy_pair(rng, (3, 3, 24, 20), noise=0.1, block=0)
    uqi("3x3x24x20", {}, T(p, "float64"), T(t, "float64"))
    # non-square kernel: W padded by pad_h, H by pad_w, crop [pad_h:-pad_h, pad_w:-pad_w]
    p, t = noisy_pair(rng, (2, 1, 16, 14), noise=0.1, block=0)
    uqi("2x1x16x14_numel_quirk", {"kernel_size": [5, 3], "sigma": [1.0, 0.8]}, T(p, "float64"), T(t, "float64"),
        quirk_mean=True)
    uqi("2x1x16x14_map_10x14", {"kernel_size": [5, 3], "sigma": [1.0, 0.8], "reduction": "none"},
        T(p, "float64"), T(t, "float64"))
    uqi("2x1x16x14", {"kernel_size": [3, 5], "sigma": [0.8, 1.0], "reduction": "sum"}, T(p, "float32"),
        T(t, "float32"))
    # identical images: 1 - eps / ((2 mu^2)(2 sigma^2) + eps) per pixel; zeros: 0 (the eps avoids 0 / 0)
    v = uqi("identical_float32_eps", {}, T(t, "float32"), T(t, "float32"))
    assert 1e-8 < 1 - v < 1e-4, v
    uqi("zeros_0", {}, T(np.zeros((2, 1, 12, 12)), "float32"), T(np.zeros((2, 1, 12, 12)), "float32"))
    # offsets of 1e3
    p, t = noisy_pair(rng, (2, 1, 16, 16), noise=0.1, block=0)
    uqi("offset_1e3", {}, T(p + 1e3, "float64"), T(t + 1e3, "float64"), 1e-6, 1e-6,
        "; tolerance 1e-6: one-pass moments at 1e3 offsets (see the SSIM offset cases)", maps=False)

    # ---------------------------------------------------------------- total variation
    TV = "total_variation"

    def tv(tag, args, x):
        name = f"{TV}{argtag(args)}__{tag}"
        X = x.f64
        vals = tv_per_image(X)
        agree(TV, name, vals, tv_fsum(X), RT, AT, "math.fsum")
        red = args.get("reduction", "sum")
        # rule: src/torchmetrics/image/tv.py TotalVariation.compute: sum (over images), mean (sum / images), none
        # (per-image values of all updates concatenated)
        v = vals.sum() if red == "sum" else vals.sum() / len(vals) if red == "mean" else vals
        S.add(name, ispec(TV, args), {"img": x}, v, "numpy sums of |differences| (= math.fsum)", rtol=RT, atol=AT)

    x = q(smooth(rng, (4, 1, 16, 16)) + 0.05 * rng.standard_normal((4, 1, 16, 16)))
    tv("4x1x16x16", {}, T(x, "float32"))
    tv("4x1x16x16", {"reduction": "mean"}, T(x, "float32"))
    x = q(smooth(rng, (9, 1, 12, 12)))
    tv("9x1x12x12_batches", {"reduction": "none"}, T(x, "float64"))
    tv("9x1x12x12_batches", {"reduction": "mean"}, T(x, "float64"))
    x = q(smooth(rng, (3, 3, 24, 20)) * 2 - 1)
    tv("3x3x24x20_signed", {}, T(x, "float64"))
    tv("constant_0", {"reduction": "none"}, T(np.full((2, 3, 8, 8), 0.7), "float64"))
    tv("8bit_values", {}, T(np.round(255 * smooth(rng, (2, 3, 16, 16))), "float32"))
    tv("offset_1e3", {"reduction": "mean"}, T(q(smooth(rng, (3, 1, 12, 12))) + 1e3, "float64"))

    # ---------------------------------------------------------------- SAM
    SA = "spectral_angle_mapper"

    def sam(tag, args, p, t, rt=RT, at=AT, note=""):
        name = f"{SA}{argtag(args)}__{tag}"
        P, Tt = p.f64, t.f64
        ang = sam_atan2(P, Tt)
        agree(SA, name, ang, sam_acos(P, Tt), rt, at, "TorchMetrics arccos route")
        red = args.get("reduction", "elementwise_mean")
        # rule: src/torchmetrics/image/sam.py SpectralAngleMapper: mean = sum of angles / (N H W), sum, none = the
        # [N, H, W] angles of all stored images
        v = reduce_(ang, red)
        S.add(name, ispec(SA, args), {"preds": p, "target": t}, v,
              "numpy atan2 angle (= arccos(clamp(cos)) route)" + note, rtol=rt, atol=at)
        return v

    t = q(0.05 + smooth(rng, (4, 3, 16, 16)))
    p = q(np.abs(t + 0.15 * rng.standard_normal(t.shape)))
    sam("4x3x16x16", {}, T(p, "float32"), T(t, "float32"))
    sam("4x3x16x16", {"reduction": "sum"}, T(p, "float64"), T(t, "float64"))
    sam("2x3x5x4", {"reduction": "none"}, T(p[:2, :, :5, :4], "float64"), T(t[:2, :, :5, :4], "float64"))
    t = q(0.05 + smooth(rng, (3, 2, 12, 12)))
    p = q(np.abs(t + 0.2 * rng.standard_normal(t.shape)))
    sam("2_channels", {}, T(p, "float64"), T(t, "float64"))
    t = q(0.05 + smooth(rng, (2, 8, 12, 12)))
    p = q(np.abs(t + 0.1 * rng.standard_normal(t.shape)))
    sam("8_bands", {}, T(p, "float64"), T(t, "float64"))
    t = q(0.05 + smooth(rng, (9, 3, 8, 8)))
    p = q(np.abs(t + 0.2 * rng.standard_normal(t.shape)))
    sam("9x3x8x8_batches", {}, T(p, "float32"), T(t, "float32"))
    t = q(2 * smooth(rng, (3, 4, 8, 8)) - 1)
    p = q(2 * smooth(rng, (3, 4, 8, 8)) - 1)
    v = sam("signed_values_wide_angles", {}, T(p, "float64"), T(t, "float64"))
    assert sam_atan2(p, t).max() > 2.5
    # parallel (p = 2 t) and antiparallel (p = -t) pixels: 0 and pi; arccos near +-1 turns an ulp of the cosine into
    # ~2e-8 rad, so atol 1e-5
    t = q(0.05 + smooth(rng, (2, 3, 4, 4)))
    p = 2.0 * t
    p[1] = -t[1]
    sam("parallel_antiparallel_0_pi", {"reduction": "none"}, T(p, "float64"), T(t, "float64"), RT, 1e-5,
        "; atol 1e-5: arccos(1 - ulp) = 1.5e-8 (TorchMetrics' route gives 0 to ~3e-8 here)")
    sam("parallel_antiparallel_0_pi", {}, T(p, "float32"), T(t, "float32"), RT, 1e-5,
        "; atol 1e-5: arccos(1 - ulp) = 1.5e-8 (TorchMetrics' route gives 0 to ~3e-8 here)")
    # a zero pixel: 0 / 0 -> NaN (the mean is NaN too)
    t = q(0.05 + smooth(rng, (2, 3, 4, 4)))
    p = q(np.abs(t + 0.1 * rng.standard_normal(t.shape)))
    p[0, :, 1, 2] = 0.0
    sam("zero_pixel_nan", {"reduction": "none"}, T(p, "float64"), T(t, "float64"))
    sam("zero_pixel_nan", {}, T(p, "float64"), T(t, "float64"))
    S.add(f"{SA}__refused_one_channel", SA,
          {"preds": T(p[:, :1], "float32"), "target": T(t[:, :1], "float32")}, Refused("more than one channel"),
          "refused: one channel (TorchMetrics raises ValueError)")

    # ---------------------------------------------------------------- FID
    FI = "frechet_inception_distance"

    def fid(tag, real, fake, dtype="float64", form="pair", rt=FRT, at=FAT, note="", order=None, exact=None):
        R = real.astype(getattr(np, dtype)).astype(np.float64)
        Fk = fake.astype(getattr(np, dtype)).astype(np.float64)
        name = f"{FI}__{tag}"
        ref, tm, sym = fid_routes(R, Fk)
        agree(FI, name, ref, tm, rt, at, "TorchMetrics one-pass cov + eigvals")
        agree(FI, name, ref, sym, rt, at, "symmetric eigh route")
        if form == "pair":
            assert real.shape[0] == fake.shape[0]
            inputs = {"real_features": T(real, dtype), "fake_features": T(fake, dtype)}
        else:
            # rows interleaved in `order`; real[i] says which distribution row i belongs to
            feats = np.concatenate([real, fake])
            is_real = np.concatenate([np.ones(len(real), bool), np.zeros(len(fake), bool)])
            if order is not None:
                feats, is_real = feats[order], is_real[order]
            inputs = {"features": T(feats, dtype), "real": T(is_real, "bool")}
        # rule: src/torchmetrics/image/fid.py FrechetInceptionDistance.update: the states are float64 sums (sum x,
        # sum x x^T, count) per distribution, so every split of the rows gives the same state
        src = "scipy.linalg.sqrtm (= TorchMetrics eigvals route and tr sqrt(S_r^1/2 S_f S_r^1/2))" + note
        if exact is not None:
            # identical real and fake rows: the FID is 0 exactly (sqrtm gives ~1e-13), written as 0.0
            agree(FI, name, exact, ref, rt, at, "exact value")
            ref, src = exact, "exact 0 (identical sets); " + src
        S.add(name, FI, inputs, ref, src, rtol=rt, atol=at)
        return ref

    def feats(n, d, mean=0.0, scale=1.0, mix=None):
        z = rng.standard_normal((n, d))
        a = mix if mix is not None else np.eye(d)
        return np.round(mean + scale * z @ a, 4)

    A4 = rng.standard_normal((4, 4)) * 0.5 + np.eye(4)
    fid("D2_N3_smallest", feats(3, 2), feats(3, 2, 0.5))
    fid("D4_N50_shifted_means", feats(50, 4, 0.0, 1.0, A4), feats(50, 4, 0.7, 1.0, A4))
    v = fid("D8_N200_same_distribution", feats(200, 8), feats(200, 8))
    assert 0 < v < 1.0
    r = feats(60, 6, 0.0, 1.0, rng.standard_normal((6, 6)))
    v = fid("D6_N60_identical_sets_0", r, r, exact=0.0)
    assert abs(v) < 1e-9
    fid("D16_N120_scaled_cov", feats(120, 16), feats(120, 16, 0.0, 1.7))
    A32 = rng.standard_normal((32, 32)) / 4 + np.eye(32)
    fid("D32_N100_correlated", feats(100, 32, 0.0, 1.0, A32), feats(100, 32, 0.2, 1.0, A32.T))
    fid("D64_N100", feats(100, 64), feats(100, 64, 0.1, 1.2))
    B = rng.standard_normal((8, 8)) * 0.3 + np.eye(8)
    r8, f8 = feats(80, 8, 0.0, 1.0, B), feats(80, 8, 0.3, 1.1, B)
    fid("D8_N80_offset_1e3", r8 + 1e3, f8 + 1e3)
    fid("D8_N80_offset_1e3_float32", np.round(r8 + 1e3, 3), np.round(f8 + 1e3, 3), dtype="float32")
    fid("D16_N40_float32", feats(40, 16, 0.0, 0.5), feats(40, 16, 0.1, 0.6), dtype="float32")
    # one features tensor with a `real` mask: unequal counts, rows interleaved
    fid("features_real_mask_D4_12_real_18_fake", feats(12, 4, 0.0, 1.0, A4), feats(18, 4, 0.4, 0.8),
        form="mask", order=rng.permutation(30))
    fid("features_real_mask_D8_61_rows", feats(25, 8), feats(36, 8, -0.2, 1.3), form="mask",
        order=rng.permutation(61))
    fid("features_real_mask_D2_3_real_rows", feats(3, 2), feats(40, 2, 0.5), form="mask",
        order=rng.permutation(43))
    # rank-deficient covariances: features in a 40-dim subspace of 64 (N > D), and N < D (rank N - 1)
    Z = rng.integers(-8, 9, size=(100, 40)) / 4.0
    Mx = rng.integers(-2, 3, size=(40, 64)).astype(np.float64)
    Z2 = rng.integers(-8, 9, size=(100, 40)) / 4.0
    try:
        fid("D64_N100_rank40_subspace", Z @ Mx, Z2 @ Mx + 0.25, rt=1e-5, at=1e-5,
            note="; rtol 1e-5: sqrtm of a singular product; the routes agree to ~2e-8 relative")
    except AssertionError as e:
        print("dropped D64_N100_rank40_subspace:", e)
    try:
        fid("D32_N10_fewer_rows_than_dims", feats(10, 32), feats(10, 32, 0.3), rt=1e-5, at=1e-5,
            note="; rtol 1e-5: sqrtm of a singular product; the routes agree to ~2e-8 relative")
    except AssertionError as e:
        print("dropped D32_N10_fewer_rows_than_dims:", e)
    S.add(f"{FI}__refused_one_real_row", FI,
          {"features": T(feats(6, 3), "float64"), "real": T(np.array([1, 0, 0, 0, 0, 0], bool), "bool")},
          Refused("more than one sample"), "refused: fewer than 2 real rows (TorchMetrics raises RuntimeError)")
    return S


def docstring_settings():
    """TorchMetrics' docstring examples use torch.rand images, so their printed values can only be matched
    statistically: SSIM of rand([3, 3, 256, 256]) vs 0.75 x itself is 0.9219, MS-SSIM (data_range=1.0) 0.9628, UQI of
    rand([16, 1, 16, 16]) (float32) 0.9216. Asserted to 1e-3 with numpy uniform images (not fixtures)."""
    rng = np.random.default_rng(7)
    p = rng.random((3, 3, 256, 256))
    v = ssim_parts(p, 0.75 * p, "A")[0].mean()
    assert abs(v - 0.9219) < 1e-3, v
    v2 = msssim_batch(p, 0.75 * p, "A", data_range=1.0).mean()
    assert abs(v2 - 0.9628) < 1e-3, v2
    p = rng.random((16, 1, 16, 16))
    v3 = uqi_map(p, 0.75 * p, [11, 11], [1.5, 1.5], EPS["float32"]).mean()
    assert abs(v3 - 0.9216) < 1e-3, v3
    print(f"docstring settings: SSIM {v:.5f} (0.9219), MS-SSIM {v2:.5f} (0.9628), UQI {v3:.5f} (0.9216)")


def main():
    docstring_settings()
    S = gen()
    S.write_and_report()
    counts = {}
    for c in S.cases:
        m = c["metric"].split("(")[0]
        k = "refused" if "error" in c else "value"
        counts.setdefault(m, {"value": 0, "refused": 0})[k] += 1
    for m, c in counts.items():
        print(f"  {m}: {c['value']} cases + {c['refused']} refused")
    print("largest difference between two routes, as a fraction of the case tolerance (limit 0.01):")
    for (m, kind), (frac, case, d) in sorted(WORST.items()):
        print(f"  {m} ({kind} tolerance): {frac:.2e} (max abs {d:.2e}) in {case}")
    print("widened tolerances:")
    for c in S.cases:
        if "error" not in c and (c["rtol"], c["atol"]) not in ((RT, AT), (FRT, FAT)):
            print(f"  {c['name']}: rtol {c['rtol']}, atol {c['atol']}")
    sizes = sorted(((len(json.dumps(c)), c["name"]) for c in S.cases), reverse=True)[:3]
    print("largest cases:", ", ".join(f"{n} ({b // 1024} KiB)" for b, n in sizes))


if __name__ == "__main__":
    main()
