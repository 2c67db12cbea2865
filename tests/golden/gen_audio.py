#!/usr/bin/env python3
"""Golden fixtures for the source separation and enhancement metrics over waveforms.

Regenerate (needs numpy and scipy, as the other scripts here):

    /usr/bin/python3 tests/golden/gen_audio.py

Output, in the case format of tests/golden/README.md: tests/golden/fixtures/audio.json --
signal_noise_ratio(zero_mean), scale_invariant_signal_noise_ratio, scale_invariant_signal_distortion_ratio(zero_mean),
complex_scale_invariant_signal_noise_ratio(zero_mean), source_aggregated_signal_distortion_ratio(scale_invariant,
zero_mean) and permutation_invariant_training(metric, mode, eval_func, ...) over `preds` and `target`.

Every value is the published formula written here in NumPy float64 (the inputs upcast first), with the epsilon of
preds' dtype where TorchMetrics adds it; each rule cites its file in a `# rule:` comment (paths relative to the
torchmetrics repo, v1.5.2: src/torchmetrics/functional/audio/snr.py, sdr.py, pit.py; audio/*.py for the module
classes, which average the per-signal values). PIT's best permutation is an exhaustive search here, cross-checked
with scipy.optimize.linear_sum_assignment for three or more speakers. TorchMetrics itself is not used; its
docstring examples are cases, asserted to their printed values.
"""
import itertools
import os
import sys

import numpy as np
from scipy.optimize import linear_sum_assignment

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as g  # noqa: E402
from gen_fixtures import Refused, T, Suite, spec  # noqa: E402

g._NP["float16"] = np.float16

RT, AT = 1e-12, 1e-12
EPS = {"float64": np.finfo(np.float64).eps, "float32": np.finfo(np.float32).eps, "float16": np.finfo(np.float16).eps}


def db(num, den, eps):
    return 10 * np.log10((num + eps) / (den + eps))


def centred(x, axes):
    return x - x.mean(axis=axes, keepdims=True)


def snr(p, t, eps, zero_mean=False):
    # rule: snr.py signal_noise_ratio: zero-mean over time, (sum t^2 + eps) / (sum (t - p)^2 + eps) in dB
    if zero_mean:
        p, t = centred(p, -1), centred(t, -1)
    return db((t**2).sum(-1), ((t - p) ** 2).sum(-1), eps)


def si_sdr(p, t, eps, zero_mean=False, axes=(-1,)):
    # rule: sdr.py scale_invariant_signal_distortion_ratio: alpha = (<p, t> + eps) / (|t|^2 + eps),
    # (|alpha t|^2 + eps) / (|alpha t - p|^2 + eps) in dB
    if zero_mean:
        p, t = centred(p, axes), centred(t, axes)
    alpha = ((p * t).sum(axes, keepdims=True) + eps) / ((t**2).sum(axes, keepdims=True) + eps)
    s = alpha * t
    return db((s**2).sum(axes), ((s - p) ** 2).sum(axes), eps)


def c_si_snr(p, t, eps, zero_mean=False):
    # rule: snr.py complex_scale_invariant_signal_noise_ratio: [..., F, T, 2] flattened to [..., F*T*2], then SI-SDR
    return si_sdr(p.reshape(*p.shape[:-3], -1), t.reshape(*t.shape[:-3], -1), eps, zero_mean)


def sa_sdr(p, t, eps, scale_invariant=True, zero_mean=False):
    # rule: sdr.py source_aggregated_signal_distortion_ratio: zero-mean per speaker over time; one alpha over
    # [spk, time]; sums over speakers and time
    if zero_mean:
        p, t = centred(p, -1), centred(t, -1)
    if scale_invariant:
        alpha = ((p * t).sum((-1, -2), keepdims=True) + eps) / ((t**2).sum((-1, -2), keepdims=True) + eps)
        t = alpha * t
    return db((t**2).sum((-1, -2)), ((t - p) ** 2).sum((-1, -2)), eps)


INNER = {
    "signal_noise_ratio": lambda p, t, e, **kw: snr(p, t, e, **kw),
    "scale_invariant_signal_noise_ratio": lambda p, t, e: si_sdr(p, t, e, zero_mean=True),
    "scale_invariant_signal_distortion_ratio": lambda p, t, e, **kw: si_sdr(p, t, e, **kw),
    "complex_scale_invariant_signal_noise_ratio": lambda p, t, e, **kw: c_si_snr(p, t, e, **kw),
    "source_aggregated_signal_distortion_ratio": lambda p, t, e, **kw: sa_sdr(p, t, e, **kw),
}


def pit(p, t, eps, metric, mode="speaker-wise", eval_func="max", **kw):
    """PIT's best value per batch row."""
    f = INNER[metric]
    b, s = t.shape[:2]
    perms = list(itertools.permutations(range(s)))
    best = np.max if eval_func == "max" else np.min
    if mode == "permutation-wise":
        # rule: pit.py (1.9.0 passes **kwargs here too): the metric of preds[:, perm] against target, averaged
        # past the batch dim, per permutation
        scores = np.stack([f(p[:, list(q)], t, eps, **kw).reshape(b, -1).mean(-1) for q in perms], 1)
        return best(scores, 1)
    # rule: pit.py speaker-wise: table[b, i, j] = metric(preds[:, j], target[:, i]); the best mean over a permutation
    table = np.stack([np.stack([f(p[:, j], t[:, i], eps, **kw) for j in range(s)], 1) for i in range(s)], 1)
    scores = np.stack([np.mean([table[:, i, q[i]] for i in range(s)], 0) for q in perms], 1)
    out = best(scores, 1)
    if s >= 3:
        for r in range(b):
            rows, cols = linear_sum_assignment(table[r], maximize=eval_func == "max")
            assert abs(table[r][rows, cols].mean() - out[r]) <= 1e-12 * max(1.0, abs(out[r])), (table[r], out[r])
    return out


def value(metric, args, p, t):
    eps = EPS[p.dtype]
    a = dict(args)
    if metric == "permutation_invariant_training":
        inner = a.pop("metric")
        v = pit(p.f64, t.f64, eps, inner, **a)
    else:
        v = INNER[metric](p.f64, t.f64, eps, **a)
    # rule: audio/*.py: the module class keeps sum(values) and numel(values); compute is their quotient
    v = np.asarray(v, np.float64)
    return v.sum() / v.size


def gen():
    S = Suite("audio.json")
    rng = np.random.default_rng(34)

    def add(tag, metric, args, p, t, check=None):
        v = value(metric, args, p, t)
        if check is not None:
            assert abs(v - check) < 5e-5, (metric, tag, v, check)
        argtag = "".join(f"_{k}-{w}" for k, w in args.items())
        S.add(f"{metric}{argtag}__{tag}", spec(metric, args), {"preds": p, "target": t}, v,
              "numpy float64 formulas" + (", exhaustive PIT" if metric.startswith("perm") else ""), rtol=RT, atol=AT)

    # TorchMetrics' docstring examples.
    # (One signal is [1, time]: dim 0 is the batch, so that updates split by rows.)
    t4, p4 = T([[3.0, -0.5, 2.0, 7.0]], "float32"), T([[2.5, 0.0, 2.0, 8.0]], "float32")
    add("docstring_example", "signal_noise_ratio", {}, p4, t4, 16.1805)
    add("docstring_example", "scale_invariant_signal_noise_ratio", {}, p4, t4, 15.0918)
    add("docstring_example", "scale_invariant_signal_distortion_ratio", {}, p4, t4, 18.4030)
    pp = T([[[-0.0579, 0.3560, -0.9604], [-0.1719, 0.3205, 0.2951]]], "float32")
    pt = T([[[1.0958, -0.1648, 0.5228], [-0.4100, 1.1942, -0.5103]]], "float32")
    add("docstring_example", "permutation_invariant_training", {"metric": "scale_invariant_signal_distortion_ratio"},
        pp, pt, -5.1091)

    def noisy(shape, level, dtype="float32", offset=0.0):
        t = rng.standard_normal(shape) + offset
        return T(t + level * rng.standard_normal(shape), dtype), T(t, dtype)

    # Random signals: float32 and float64, one or more leading dims, 120- and 400-sample signals.
    for dtype in ("float32", "float64"):
        p, t = noisy((4, 120), 0.5, dtype)
        for zm in (False, True):
            add(f"random_4x120_{dtype}", "signal_noise_ratio", {"zero_mean": zm}, p, t)
            add(f"random_4x120_{dtype}", "scale_invariant_signal_distortion_ratio", {"zero_mean": zm}, p, t)
        add(f"random_4x120_{dtype}", "scale_invariant_signal_noise_ratio", {}, p, t)
    p, t = noisy((2, 2, 400), 0.1)
    for m in ("signal_noise_ratio", "scale_invariant_signal_noise_ratio", "scale_invariant_signal_distortion_ratio"):
        add("random_2x2x400", m, {}, p, t)
    for si in (True, False):
        for zm in (False, True):
            add("random_2x2x400", "source_aggregated_signal_distortion_ratio",
                {"scale_invariant": si, "zero_mean": zm}, p, t)
    # A signal 1e4 from zero (float64), where zero_mean's centring matters; rank-1 input (one signal).
    p, t = noisy((3, 120), 0.2, "float64", offset=1e4)
    for m in ("signal_noise_ratio", "scale_invariant_signal_distortion_ratio"):
        add("offset_1e4_float64", m, {"zero_mean": True}, p, t)
    add("offset_1e4_float64", "scale_invariant_signal_noise_ratio", {}, p, t)
    add("one_signal", "signal_noise_ratio", {}, T(p.a[:1], "float64"), T(t.a[:1], "float64"))
    add("one_signal", "scale_invariant_signal_distortion_ratio", {}, T(p.a[:1], "float64"), T(t.a[:1], "float64"))
    # Edge cases: perfect estimates (the noise is 0, eps decides), silent targets, silent estimates, one sample.
    p, t = noisy((3, 50), 0.0)
    for m in ("signal_noise_ratio", "scale_invariant_signal_distortion_ratio", "scale_invariant_signal_noise_ratio"):
        add("perfect_estimate", m, {}, p, t)
    z = T(np.zeros((2, 40)), "float32")
    p, _ = noisy((2, 40), 1.0)
    for m in ("signal_noise_ratio", "scale_invariant_signal_distortion_ratio"):
        add("silent_target", m, {}, p, z)
        add("silent_estimate", m, {}, z, p)
    add("one_sample", "signal_noise_ratio", {}, T([[0.5], [2.0]], "float32"), T([[1.0], [-1.0]], "float32"))
    # float16 inputs: float16's eps (2^-10) is added.
    p, t = noisy((4, 64), 0.3, "float16")
    add("random_float16", "signal_noise_ratio", {}, p, t)
    add("random_float16", "scale_invariant_signal_distortion_ratio", {}, p, t)
    # Complex spectrograms as [..., F, T, 2].
    p, t = noisy((3, 17, 9, 2), 0.7)
    for zm in (False, True):
        add("random_3x17x9x2", "complex_scale_invariant_signal_noise_ratio", {"zero_mean": zm}, p, t)
    p, t = noisy((2, 3, 5, 4, 2), 0.3, "float64")
    add("random_2x3x5x4x2", "complex_scale_invariant_signal_noise_ratio", {}, p, t)

    # PIT: estimates of S speakers in a shuffled order, 1 to 4 speakers, both modes, max and min.
    def shuffled(b, s, n, level=0.4, dtype="float32", extra=()):
        t = rng.standard_normal((b, s) + extra + (n,))
        p = t + level * rng.standard_normal(t.shape)
        p = np.stack([p[i][rng.permutation(s)] for i in range(b)])
        return T(p, dtype), T(t, dtype)

    for s in (1, 2, 3, 4):
        p, t = shuffled(4, s, 60)
        add(f"shuffled_{s}spk", "permutation_invariant_training", {"metric": "scale_invariant_signal_distortion_ratio"},
            p, t)
        add(f"shuffled_{s}spk", "permutation_invariant_training",
            {"metric": "signal_noise_ratio", "eval_func": "min", "zero_mean": True}, p, t)
        add(f"shuffled_{s}spk", "permutation_invariant_training",
            {"metric": "source_aggregated_signal_distortion_ratio", "mode": "permutation-wise"}, p, t)
        add(f"shuffled_{s}spk", "permutation_invariant_training",
            {"metric": "scale_invariant_signal_noise_ratio", "mode": "permutation-wise"}, p, t)
    p, t = shuffled(4, 3, 80, 0.8, "float64")
    add("shuffled_3spk_float64", "permutation_invariant_training",
        {"metric": "source_aggregated_signal_distortion_ratio", "mode": "permutation-wise", "scale_invariant": False,
         "zero_mean": True}, p, t)
    add("shuffled_3spk_float64", "permutation_invariant_training",
        {"metric": "scale_invariant_signal_distortion_ratio", "eval_func": "min", "zero_mean": True}, p, t)
    p, t = shuffled(3, 2, 2, 0.5, extra=(5, 6))
    add("shuffled_complex_2spk", "permutation_invariant_training",
        {"metric": "complex_scale_invariant_signal_noise_ratio"}, p, t)
    p, t = shuffled(3, 2, 50, extra=(3,))
    add("shuffled_extra_dim", "permutation_invariant_training",
        {"metric": "signal_noise_ratio", "mode": "permutation-wise"}, p, t)
    p, t = shuffled(2, 6, 40)
    add("shuffled_6spk", "permutation_invariant_training", {"metric": "scale_invariant_signal_noise_ratio"}, p, t)

    # Refused inputs and arguments.
    p, t = noisy((2, 10), 0.1)
    S.add("signal_noise_ratio__refused_integer_preds", "signal_noise_ratio",
          {"preds": T(np.ones((2, 10)), "int64"), "target": t}, Refused("preds"), "refused: preds must be floating")
    S.add("signal_noise_ratio__refused_shape_mismatch", "signal_noise_ratio",
          {"preds": p, "target": T(np.zeros((2, 9)), "float32")}, Refused("target"), "refused: shapes differ")
    S.add("complex_scale_invariant_signal_noise_ratio__refused_last_dim", "complex_scale_invariant_signal_noise_ratio",
          {"preds": T(np.zeros((2, 3, 3)), "float32"), "target": T(np.zeros((2, 3, 3)), "float32")},
          Refused("frequency, time, 2"), "refused: the last dim is not the real/imaginary pair")
    S.add("source_aggregated_signal_distortion_ratio__refused_no_batch_dim", "source_aggregated_signal_distortion_ratio",
          {"preds": T(np.zeros((2, 5)), "float32"), "target": T(np.zeros((2, 5)), "float32")}, Refused("spk, time"),
          "refused: [spk, time] without the batch dim")
    S.add("signal_noise_ratio__refused_rank1", "signal_noise_ratio",
          {"preds": T(np.zeros(5), "float32"), "target": T(np.zeros(5), "float32")}, Refused("[1, time]"),
          "refused: a 1-D signal (dim 0 is the batch)")
    p, t = shuffled(2, 2, 10)
    S.add("permutation_invariant_training__refused_sa_sdr_speaker_wise",
          "permutation_invariant_training(metric=source_aggregated_signal_distortion_ratio)", {"preds": p, "target": t},
          Refused("permutation-wise"), "refused: SA-SDR aggregates the speakers")
    p, t = shuffled(2, 7, 10)
    S.add("permutation_invariant_training__refused_7_speakers",
          "permutation_invariant_training(metric=signal_noise_ratio)", {"preds": p, "target": t},
          Refused("speakers"), "refused: more than 6 speakers")
    S.add("permutation_invariant_training__refused_unknown_metric",
          "permutation_invariant_training(metric=word_error_rate)", {"preds": p, "target": t}, Refused("metric"),
          "refused: not a separation metric")
    return S


def main():
    gen().write_and_report()


if __name__ == "__main__":
    main()
