#!/usr/bin/env python3
"""Golden fixtures for signal_distortion_ratio (SDR with a distortion filter, BSS Eval v4 style).

Regenerate (needs numpy, scipy and Debian's python3-mir-eval 0.7):

    /usr/bin/python3 tests/golden/gen_sdr.py

Output, in the case format of tests/golden/README.md: tests/golden/fixtures/sdr.json --
signal_distortion_ratio(use_cg_iter, filter_length, zero_mean, load_diag) and
permutation_invariant_training(metric=signal_distortion_ratio, ...) over `preds` and `target`.

Each value is computed two ways, asserted to agree:
* mir_eval: `mir_eval.separation.bss_eval_sources(target[None], preds[None], compute_permutation=False)` for
  filter_length 512 (its fixed filter length), `_bss_decomp_mtifilt(..., flen)` + `_bss_source_crit` for the others;
  with zero_mean the signals are centred here first. mir_eval projects preds onto the filter_length delayed copies
  of target and takes 10 log10(|projection|^2 / |residual|^2), which is TorchMetrics' 10 log10(coh / (1 - coh)) of
  the normalised signals (the SDR is invariant to the scale of either signal).
* NumPy: TorchMetrics' formula written here in float64 -- normalisation with its 1e-6 clamp, correlations at lags
  0..filter_length-1 as direct sums, load_diag, np.linalg.solve of the explicit Toeplitz matrix, the coherence.
The expected value is mir_eval's where mir_eval applies (`source` says which); the NumPy route alone covers
load_diag, the 1e-6 norm clamp (near-silent signals) and silent signals (mir_eval refuses all-zero signals).
The inputs are upcast to float64 first, as TorchMetrics does (sdr.py computes in float64 for every input dtype).
Each rule cites its file in a `# rule:` comment (paths relative to the torchmetrics repo, v1.5.2:
src/torchmetrics/functional/audio/sdr.py and pit.py; audio/sdr.py for the module class, which averages the
per-signal values). PIT's best permutation is an exhaustive search, cross-checked with
scipy.optimize.linear_sum_assignment for three speakers. TorchMetrics itself is not used.

Tolerances: the two routes agree to 7.2e-13 relative at worst (the 28-30 dB filtered estimates, where 1 - coh is
about 1e-3; 2.4e-13 at 20-25 dB, 1.2e-13 below 20 dB). Every case uses rtol 1e-10, atol 1e-10 (about 100 times
that: room for an implementation that correlates by FFT and solves by Cholesky or Levinson instead of LU); the
generator fails if a case's two routes differ by more than rtol / 100.

Not written (TorchMetrics' value is not well defined there): a perfect estimate (coh rounds to 1: TorchMetrics gives
inf, NaN or about 145-150 dB depending on the last bit), a silent target without load_diag (the Toeplitz matrix
is singular: torch.linalg.solve raises), and filter_length > n_fft - time + 1 with n_fft = 2^ceil(log2(2 time - 1))
(TorchMetrics' FFT correlation then wraps round to negative lags: time 300 with filter_length 800 differs from the
projection, filter_length 1024 gives NaN). filter_length 512 with time 300 is below that bound and is a case.
Tally takes dim 0 as the batch (SEMANTICS.md, audio): one signal is [1, time] and a 1-D input is refused.
"""
import itertools
import os
import sys
import warnings

import numpy as np
from scipy.linalg import toeplitz
from scipy.optimize import linear_sum_assignment
from scipy.signal import lfilter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as g  # noqa: E402
from gen_fixtures import Refused, T, Suite, spec  # noqa: E402

warnings.filterwarnings("ignore", module="mir_eval")
import mir_eval.separation as mes  # noqa: E402

g._NP["float16"] = np.float16

RT, AT = 1e-10, 1e-10
M = "signal_distortion_ratio"
WORST = {"rel": 0.0, "case": None}


class Dec(str):
    """A float argument written as a plain decimal (the spec syntax has no exponents): load_diag=0.00001."""


def sdr_numpy(p, t, filter_length=512, zero_mean=False, load_diag=None, use_cg_iter=None):
    """TorchMetrics' SDR of one signal pair (1-D float64), written from sdr.py."""
    if zero_mean:
        # rule: sdr.py signal_distortion_ratio: zero_mean subtracts each signal's mean over time
        p, t = p - p.mean(), t - t.mean()
    # rule: sdr.py: target and preds divided by max(L2 norm over time, 1e-6)
    t = t / max(np.sqrt((t * t).sum()), 1e-6)
    p = p / max(np.sqrt((p * p).sum()), 1e-6)
    n = t.size
    # rule: sdr.py _compute_autocorr_crosscorr: r_0[l] = sum_t target[t] target[t+l], b[l] = sum_t target[t] preds[t+l]
    # for l in [0, filter_length) (zero past time - 1: the FFT is zero-padded to 2^ceil(log2(2 time - 1)))
    r0 = np.zeros(filter_length)
    b = np.zeros(filter_length)
    for lag in range(min(filter_length, n)):
        r0[lag] = t[: n - lag] @ t[lag:]
        b[lag] = t[: n - lag] @ p[lag:]
    if load_diag is not None:
        # rule: sdr.py: load_diag is added to r_0[0], the Toeplitz diagonal
        r0[0] += float(load_diag)
    # rule: sdr.py: use_cg_iter needs fast-bss-eval; without it TorchMetrics warns and solves directly -- Tally always
    # solves directly, so use_cg_iter does not change the value
    h = np.linalg.solve(toeplitz(r0), b)
    coh = b @ h
    # rule: sdr.py: SDR = 10 log10(coh / (1 - coh)), coh = b . h
    with np.errstate(divide="ignore"):
        return 10 * np.log10(coh / (1 - coh))


def sdr_mir_eval(p, t, filter_length=512, zero_mean=False, **_):
    """The same SDR from mir_eval's BSS Eval projection (one source)."""
    if zero_mean:
        p, t = p - p.mean(), t - t.mean()
    if filter_length == 512:
        return mes.bss_eval_sources(t[None], p[None], compute_permutation=False)[0][0]
    return mes._bss_source_crit(*mes._bss_decomp_mtifilt(t[None], p, 0, filter_length))[0]


def per_signal(p, t, args, mir):
    """SDR of every signal [..., time] -> [...], and the route that gave it."""
    kw = {k: v for k, v in args.items()}
    lead = p.shape[:-1]
    p2, t2 = p.reshape(-1, p.shape[-1]), t.reshape(-1, t.shape[-1])
    vn = np.array([sdr_numpy(a, b, **kw) for a, b in zip(p2, t2)])
    if not mir:
        return vn.reshape(lead), "numpy float64 formula (TorchMetrics sdr.py)"
    vm = np.array([sdr_mir_eval(a, b, **kw) for a, b in zip(p2, t2)])
    rel = np.abs(vm - vn) / np.maximum(np.abs(vm), 1.0)
    i = int(np.argmax(rel))
    if rel[i] > WORST["rel"]:
        WORST.update(rel=float(rel[i]), case=(args, float(vm[i]), float(vn[i])))
    assert rel[i] <= RT / 100, (args, vm[i], vn[i], rel[i])
    src = "mir_eval " + ("bss_eval_sources" if kw.get("filter_length", 512) == 512 else "_bss_decomp_mtifilt(flen)")
    return vm.reshape(lead), src + " (= numpy float64 formula)"


def pit(p, t, args, mir, eval_func="max"):
    """PIT's best mean SDR per batch row (speaker-wise)."""
    bsz, s = t.shape[:2]
    # rule: pit.py speaker-wise: table[b, i, j] = metric(preds[:, j], target[:, i]); the best mean over a permutation
    table = np.zeros((bsz, s, s))
    src = None
    for i in range(s):
        for j in range(s):
            table[:, i, j], src = per_signal(p[:, j], t[:, i], args, mir)
    best = np.max if eval_func == "max" else np.min
    perms = list(itertools.permutations(range(s)))
    scores = np.stack([np.mean([table[:, i, q[i]] for i in range(s)], 0) for q in perms], 1)
    out = best(scores, 1)
    if s >= 3:
        for r in range(bsz):
            rows, cols = linear_sum_assignment(table[r], maximize=eval_func == "max")
            assert abs(table[r][rows, cols].mean() - out[r]) <= 1e-12 * max(1.0, abs(out[r])), (table[r], out[r])
    return out, src + ", exhaustive PIT"


def gen():
    S = Suite("sdr.json")
    rng = np.random.default_rng(512)

    def add(tag, metric, args, p, t, mir=True):
        a = dict(args)
        if metric == "permutation_invariant_training":
            a.pop("metric")
            ef = a.pop("eval_func", "max")
            v, src = pit(p.f64, t.f64, a, mir, ef)
        else:
            v, src = per_signal(p.f64, t.f64, a, mir)
        # rule: audio/sdr.py SignalDistortionRatio: sum of the per-signal values / their count
        v = np.asarray(v, np.float64)
        v = v.sum() / v.size
        argtag = "".join(f"_{k}-{w}" for k, w in args.items())
        S.add(f"{metric}{argtag}__{tag}", spec(metric, args), {"preds": p, "target": t}, v, src, rtol=RT, atol=AT)
        return v

    def q(x, d=3):
        # signals on a 1e-3 grid: short decimals in the JSON
        return np.round(x, d)

    def speechlike(shape):
        # coloured noise (AR(1), pole 0.9) plus two harmonics: a less flat spectrum than white noise
        n = shape[-1]
        x = lfilter([1.0], [1.0, -0.9], rng.standard_normal(shape), axis=-1) * 0.3
        k = np.arange(n)
        f = rng.uniform(0.01, 0.05, shape[:-1] + (1,))
        return x + 0.5 * np.sin(2 * np.pi * f * k) + 0.25 * np.sin(2 * np.pi * 2.7 * f * k + 1.0)

    def at_snr(t, snr_db):
        # white noise scaled to the given SNR of each signal
        noise = rng.standard_normal(t.shape)
        scale = np.sqrt((t**2).sum(-1, keepdims=True) / (noise**2).sum(-1, keepdims=True)) * 10 ** (-snr_db / 20)
        return t + scale * noise

    def filtered(t, taps, snr_db):
        # target through a random FIR (decaying, with a delay of 3) plus noise: the distortion filter absorbs the FIR
        h = rng.standard_normal(taps) * np.exp(-np.arange(taps) / (taps / 4))
        h = np.concatenate([np.zeros(3), h])
        y = lfilter(h, [1.0], t, axis=-1)
        return at_snr(y, snr_db)

    # TorchMetrics' docstring setting: independent random 8000-sample signals (one signal is [1, time]).
    add("docstring_setting_random_1x8000", M, {}, T(q(rng.standard_normal((1, 8000))), "float32"),
        T(q(rng.standard_normal((1, 8000))), "float32"))
    # Realistic estimates: target + white noise at -5, 5, 15 and 30 dB SNR, one per row.
    t = speechlike((4, 2000))
    p = at_snr(t, np.array([[-5.0], [5.0], [15.0], [30.0]]))
    add("noisy_snr_m5_5_15_30db_4x2000", M, {}, T(q(p), "float32"), T(q(t), "float32"))
    # A filtered, delayed estimate (16-tap FIR + 30 dB noise): high SDR, as the 512-tap filter absorbs the FIR.
    t = speechlike((2, 4000))
    add("filtered_fir16_30db_2x4000", M, {}, T(q(filtered(t, 16, 30.0)), "float32"), T(q(t), "float32"))
    # A gain on the estimate does not change the SDR (both signals are normalised).
    t = rng.standard_normal((2, 1500))
    p = at_snr(t, 8.0)
    add("gain_0.01_2x1500", M, {}, T(q(0.01 * p, 5), "float64"), T(q(t), "float64"))
    # Input dtypes: float16, float32, float64 (the values as stored, widened to float64).
    t = speechlike((2, 1000))
    p = at_snr(t, 10.0)
    for dtype in ("float16", "float32", "float64"):
        add(f"noisy_10db_2x1000_{dtype}", M, {}, T(q(p), dtype), T(q(t), dtype))
    # Leading dims: [B, spk, time] and [B, spk, channel, time]; one signal; a short signal (time < filter_length).
    t = speechlike((2, 3, 1000))
    add("batch_spk_2x3x1000", M, {}, T(q(at_snr(t, 3.0)), "float32"), T(q(t), "float32"))
    t = rng.standard_normal((2, 2, 2, 600))
    add("extra_dims_2x2x2x600", M, {}, T(q(at_snr(t, 0.0)), "float32"), T(q(t), "float32"))
    t = speechlike((1, 3000))
    add("one_signal_1x3000", M, {}, T(q(at_snr(t, 12.0)), "float64"), T(q(t), "float64"))
    t = speechlike((2, 300))
    add("time_300_below_filter_length_2x300", M, {}, T(q(at_snr(t, 6.0)), "float32"), T(q(t), "float32"))
    # One second at 16 kHz.
    t = speechlike((2, 16000))
    add("one_second_2x16000", M, {}, T(q(at_snr(t, 20.0)), "float32"), T(q(t), "float32"))
    # zero_mean with a DC offset of 1e3 on both signals (centred first; without it the DC dominates).
    t = rng.standard_normal((2, 2000))
    p = at_snr(t, 10.0)
    add("dc_offset_1e3_2x2000", M, {"zero_mean": True}, T(q(p + 1e3), "float64"), T(q(t + 1e3), "float64"))
    # filter_length 1 (the squared cosine: 10 log10(c^2 / (1 - c^2))), 16, 128, 512, 1024 on a 64-tap FIR estimate.
    t = speechlike((1, 4000))
    p = T(q(filtered(t, 64, 40.0)), "float32")
    t = T(q(t), "float32")
    for fl in (1, 16, 128, 512, 1024):
        v = add("filtered_fir64_40db_1x4000", M, {"filter_length": fl}, p, t)
        if fl == 1:
            c = (p.f64 @ t.f64.T).item() / np.linalg.norm(p.f64) / np.linalg.norm(t.f64)
            assert abs(v - 10 * np.log10(c * c / (1 - c * c))) < 1e-10, v
    # use_cg_iter: Tally solves directly, as TorchMetrics does without fast-bss-eval.
    t = speechlike((2, 1000))
    p = T(q(at_snr(t, 5.0)), "float32")
    t = T(q(t), "float32")
    v1 = add("noisy_5db_2x1000", M, {}, p, t)
    v2 = add("noisy_5db_2x1000", M, {"use_cg_iter": 10}, p, t)
    assert v1 == v2
    add("noisy_5db_2x1000", M, {"use_cg_iter": 10, "filter_length": 128, "zero_mean": True}, p, t)
    # load_diag: added to the Toeplitz diagonal (numpy route only).
    add("noisy_5db_2x1000", M, {"load_diag": Dec("0.00001")}, p, t, mir=False)
    add("noisy_5db_2x1000", M, {"load_diag": Dec("0.1"), "filter_length": 64}, p, t, mir=False)
    # A silent target row with load_diag: b = 0, so coh = 0 and the SDR is -inf (without load_diag the matrix is
    # singular). A near-silent target (norm 1e-8 < 1e-6, the clamp) with load_diag stays finite.
    z = rng.standard_normal((2, 800))
    tz = q(z.copy())
    tz[1] = 0.0
    add("silent_target_row_2x800", M, {"load_diag": Dec("0.00001")}, T(q(at_snr(z, 10.0)), "float64"),
        T(tz, "float64"), mir=False)
    tq = z / np.linalg.norm(z, axis=-1, keepdims=True) * 1e-8
    add("near_silent_target_norm_1e-8_2x800", M, {"load_diag": Dec("0.00001")}, T(q(at_snr(z, 10.0)), "float64"),
        T(tq, "float64"), mir=False)
    # preds near silent (norm 1e-8): the clamp scales coh by (1e-8 / 1e-6)^2; preds silent: coh = 0, -inf.
    pz = at_snr(z, 10.0)
    pq = pz / np.linalg.norm(pz, axis=-1, keepdims=True) * 1e-8
    add("near_silent_preds_norm_1e-8_2x800", M, {}, T(pq, "float64"), T(q(z), "float64"), mir=False)
    pz = q(pz)
    pz[0] = 0.0
    add("silent_preds_row_2x800", M, {}, T(pz, "float64"), T(q(z), "float64"), mir=False)

    # PIT over SDR: estimates of 2 and 3 speakers in a shuffled order, [B, spk, time], B = 3, time 2000.
    def shuffled(b, s, n, snr_db):
        t = speechlike((b, s, n))
        p = at_snr(t, snr_db)
        p = np.stack([p[i][rng.permutation(s)] for i in range(b)])
        return T(q(p), "float32"), T(q(t), "float32")

    PIT = "permutation_invariant_training"
    p, t = shuffled(3, 2, 2000, 5.0)
    add("shuffled_2spk_3x2x2000", PIT, {"metric": M}, p, t)
    p, t = shuffled(3, 3, 2000, 0.0)
    add("shuffled_3spk_3x3x2000", PIT, {"metric": M, "filter_length": 128}, p, t)
    # Inner arguments and eval_func min on shorter signals.
    p, t = shuffled(3, 2, 800, 5.0)
    add("shuffled_2spk_3x2x800", PIT, {"metric": M, "eval_func": "min", "filter_length": 32}, p, t)
    p, t = shuffled(3, 3, 600, 3.0)
    add("shuffled_3spk_3x3x600", PIT, {"metric": M, "zero_mean": True, "load_diag": Dec("0.001")}, p, t, mir=False)

    # Refused inputs and arguments.
    t = T(q(rng.standard_normal((2, 100))), "float32")
    S.add(f"{M}__refused_integer_preds", M, {"preds": T(np.ones((2, 100)), "int64"), "target": t},
          Refused(f"{M}: preds"), "refused: preds must be floating")
    S.add(f"{M}__refused_shape_mismatch", M, {"preds": t, "target": T(np.zeros((2, 99)), "float32")},
          Refused(f"{M}: target"), "refused: shapes differ")
    S.add(f"{M}_filter_length-0__refused", spec(M, {"filter_length": 0}), {"preds": t, "target": t},
          Refused(f"{M}: "), "refused: filter_length must be at least 1")
    S.add(f"{M}__refused_rank1", M, {"preds": T(t.a[0], "float32"), "target": T(t.a[1], "float32")},
          Refused(f"{M}: preds"), "refused: a 1-D signal (dim 0 is the batch; one signal is [1, time])")
    return S


def main():
    S = gen()
    S.write_and_report()
    args, vm, vn = WORST["case"]
    print(f"largest mir_eval vs numpy difference: {WORST['rel']:.2e} relative ({args}: {vm!r} vs {vn!r})")


if __name__ == "__main__":
    main()
