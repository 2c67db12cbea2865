#!/usr/bin/env python3
"""Golden fixtures for the TorchMetrics 1.5.2 regression metrics of metrics/regression_extra.cc.

Writes fixtures/regression_extra.json in the case format of gen_fixtures.py (README.md). Every expected
value comes from scikit-learn, SciPy or hand-written numpy following TorchMetrics' rules (each cited in a
`# rule:` comment); TorchMetrics itself is not used. Run with /usr/bin/python3 (numpy, scipy, scikit-learn).

Input names: preds and target. TorchMetrics names the second input `targets` in minkowski_distance and
tweedie_deviance_score, and kl_divergence's inputs `p`, `q`: here p = preds, q = target (the functional
API's positional order).
"""
import math
import os
import sys

import numpy as np
from scipy import special, stats
from scipy.spatial import distance
from sklearn import metrics as skm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as gf  # noqa: E402
from gen_fixtures import T, Suite, _argtag, _close, spec  # noqa: E402

EPS_PCT = 1.17e-06  # smape / wmape clamp
F32_EPS = float(np.finfo(np.float32).eps)
F64_EPS = float(np.finfo(np.float64).eps)


def _flat(x):
    return np.asarray(x, dtype=np.float64).reshape(-1)


# --------------------------------------------------------------------------------------------
# references
# --------------------------------------------------------------------------------------------
def ref_msle(p, t, **_):
    p, t = _flat(p), _flat(t)
    # rule: mean over ALL elements of (log1p(p) - log1p(t))^2; no domain check (NaN below -1) -- src/torchmetrics/functional/regression/log_mse.py
    with np.errstate(all="ignore"):
        v = float(np.mean((np.log1p(p) - np.log1p(t)) ** 2))
    if p.min() >= 0 and t.min() >= 0:
        _close(v, skm.mean_squared_log_error(t, p))
        return v, "sklearn.metrics.mean_squared_log_error on flattened inputs"
    return v, "hand-computed (numpy log1p): torchmetrics has no domain check (sklearn raises for negatives)"


def ref_smape(p, t, **_):
    p, t = _flat(p), _flat(t)
    # rule: 2 * mean(|p - t| / max(|t| + |p|, 1.17e-6)) over all elements -- src/torchmetrics/functional/regression/symmetric_mape.py
    v = float(2 * np.mean(np.abs(p - t) / np.maximum(np.abs(t) + np.abs(p), EPS_PCT)))
    return v, "hand-computed (numpy): 2*|p-t|/max(|t|+|p|, 1.17e-6), mean over all elements"


def ref_wmape(p, t, **_):
    p, t = _flat(p), _flat(t)
    # rule: sum|p - t| / max(sum|t|, 1.17e-6) -- src/torchmetrics/functional/regression/wmape.py
    v = float(np.sum(np.abs(p - t)) / max(np.sum(np.abs(t)), EPS_PCT))
    return v, "hand-computed (numpy): sum|p-t| / max(sum|t|, 1.17e-6)"


def ref_rse(p, t, squared=True, eps=F32_EPS):
    p2 = p.reshape(p.shape[0], -1) if p.ndim == 1 else p
    t2 = t.reshape(t.shape[0], -1) if t.ndim == 1 else t
    rss = np.sum((t2 - p2) ** 2, axis=0)
    tss = np.sum((t2 - t2.mean(axis=0)) ** 2, axis=0)
    # rule: per output rss / clamp(tss, min=finfo(dtype).eps); sqrt if squared=False; mean over outputs -- src/torchmetrics/functional/regression/rse.py
    rse = rss / np.maximum(tss, eps)
    ok = tss > eps
    if ok.any():
        r2 = np.atleast_1d(skm.r2_score(t2, p2, multioutput="raw_values"))
        _close(rse[ok], 1 - r2[ok])
    if not squared:
        rse = np.sqrt(rse)
    return float(np.mean(rse)), f"1 - sklearn.metrics.r2_score(raw_values) per output (rss/max(tss, eps={eps:.3g})), squared={squared}, mean"


def ref_minkowski(p, t, p_exp=2.0):
    a, b = _flat(p), _flat(t)
    # rule: (sum |p - t|^p)^(1/p) over all elements -- src/torchmetrics/functional/regression/minkowski.py
    v = float(distance.minkowski(a, b, p_exp)) if len(a) else 0.0
    _close(v, float(np.sum(np.abs(a - b) ** p_exp) ** (1.0 / p_exp)), tol=1e-7)
    return v, f"scipy.spatial.distance.minkowski(p={p_exp}) on flattened inputs"


def ref_tweedie(p, t, power=0.0):
    a, b = _flat(p), _flat(t)
    # rule: mean deviance; power 0 normal, 1 poisson (xlogy), 2 gamma, else the general formula with max(t,0) -- src/torchmetrics/functional/regression/tweedie_deviance.py
    v = float(skm.mean_tweedie_deviance(b, a, power=power))
    return v, f"sklearn.metrics.mean_tweedie_deviance(power={power}) on flattened inputs"


def ref_tweedie_series(p, t, power):
    """float64 deviance through mpmath-free higher precision: np.longdouble with log1p, for offsets."""
    a = np.asarray(p, dtype=np.longdouble).reshape(-1)
    b = np.asarray(t, dtype=np.longdouble).reshape(-1)
    r = (b - a) / a
    if power == 1:
        d = 2 * a * ((1 + r) * np.log1p(r) - r)
    else:
        d = 2 * (r - np.log1p(r))
    return float(np.mean(d))


def ref_csi(p, t, threshold, keep_sequence_dim=None, dtype="float64"):
    # rule: binarize preds/target with >= threshold (torch compares a float32 tensor in float32, ints promote to float32) -- src/torchmetrics/functional/regression/csi.py
    if dtype == "float64":
        pb, tb = p >= threshold, t >= threshold
    else:
        thr = np.float32(threshold)
        pb, tb = p.astype(np.float32) >= thr, t.astype(np.float32) >= thr
    if keep_sequence_dim is None or p.ndim == 1:
        # rule: 1-D input with keep_sequence_dim=0 sums over dim=() = every element (QUIRK) -- src/torchmetrics/functional/regression/csi.py
        dims = None
    else:
        dims = tuple(i for i in range(p.ndim) if i != keep_sequence_dim)
    hits = np.sum(pb & tb, axis=dims)
    misses = np.sum(~pb & tb, axis=dims)
    fa = np.sum(pb & ~tb, axis=dims)
    den = hits + misses + fa
    # rule: _safe_divide(hits, hits + misses + false_alarms): 0/0 -> 0 -- src/torchmetrics/functional/regression/csi.py
    v = np.where(den == 0, 0.0, hits / np.where(den == 0, 1, den))
    if dims is None:
        tp = np.sum(pb & tb)
        _close(float(v), skm.jaccard_score(tb.reshape(-1), pb.reshape(-1), zero_division=0) if (pb | tb).any() else 0.0)
        return float(v), "sklearn.metrics.jaccard_score on the >= threshold binarization (CSI = tp/(tp+fn+fp))"
    return v, f"hand-computed (numpy): hits/(hits+misses+false_alarms) over dims {dims}"


def ref_kl(p, q, log_prob=False, reduction="mean"):
    if log_prob:
        # rule: sum_j exp(p)*(p - q) per row -- src/torchmetrics/functional/regression/kl_divergence.py
        m = np.sum(special.rel_entr(np.exp(p), np.exp(q)), axis=1)
        src = "scipy.special.rel_entr(exp(p), exp(q)) summed per row"
    else:
        # rule: rows normalised to sum 1, then sum_j xlogy(p, p/q) (0 where p == 0) per row -- src/torchmetrics/functional/regression/kl_divergence.py
        m = np.array([stats.entropy(pr, qr) for pr, qr in zip(p, q)])
        _close(m, np.sum(special.rel_entr(p / p.sum(1, keepdims=True), q / q.sum(1, keepdims=True)), axis=1))
        src = "scipy.stats.entropy(p_row, q_row) per row"
    # rule: reduction mean = sum/N, sum, none = per-row values -- src/torchmetrics/functional/regression/kl_divergence.py
    if reduction == "sum":
        return float(np.sum(m)), src + ", sum"
    if reduction == "mean":
        return float(np.sum(m) / len(m)), src + ", mean"
    return m, src + ", none"


def _kendall_a(x, y):
    dx = np.sign(x[:, None] - x[None, :])
    dy = np.sign(y[:, None] - y[None, :])
    s = np.triu(dx * dy, 1)
    return int(np.sum(s > 0)), int(np.sum(s < 0))


def ref_kendall(p, t, variant="b", t_test=False, alternative="two-sided"):
    taus, pvals = [], []
    cols = [(p, t)] if p.ndim == 1 else [(p[:, j], t[:, j]) for j in range(p.shape[1])]
    for x, y in cols:
        n = len(x)
        if variant == "a":
            c, d = _kendall_a(x, y)
            # rule: TorchMetrics' tau_a = (C - D) / (C + D) (untied pairs) -- src/torchmetrics/functional/regression/kendall.py (_calculate_tau)
            tau = (c - d) / (c + d) if c + d else float("nan")
            # rule: variant a t-value = 3(C - D) / sqrt(n(n-1)(2n+5)/2), normal cdf -- src/torchmetrics/functional/regression/kendall.py (_calculate_p_value)
            z = 3 * (c - d) / math.sqrt(n * (n - 1) * (2 * n + 5) / 2) if n > 1 else float("nan")
            if alternative == "two-sided":
                pv = 2 * stats.norm.cdf(-abs(z))
            elif alternative == "greater":
                pv = stats.norm.cdf(-z)
            else:
                pv = stats.norm.cdf(z)
        else:
            # rule: tau_b / tau_c and the tie-corrected asymptotic p-value as scipy -- src/torchmetrics/functional/regression/kendall.py
            if n < 2 or np.all(x == x[0]) or np.all(y == y[0]):
                tau, pv = float("nan"), float("nan")
            else:
                r = stats.kendalltau(x, y, variant=variant, method="asymptotic", alternative=alternative)
                tau, pv = float(r[0]), float(r[1])
        # rule: tau clamped to [-1, 1] -- src/torchmetrics/functional/regression/kendall.py
        taus.append(float(np.clip(tau, -1, 1)) if not math.isnan(tau) else tau)
        pvals.append(float(pv))
    src = ("hand-computed (numpy pair counts, tau_a = (C-D)/(C+D)) + scipy.stats.norm.cdf" if variant == "a"
           else f"scipy.stats.kendalltau(variant={variant!r}, method='asymptotic', alternative={alternative!r})")
    tau = taus[0] if p.ndim == 1 else np.array(taus)
    pv = pvals[0] if p.ndim == 1 else np.array(pvals)
    if t_test:
        return [tau, pv], src + " -> (tau, p_value)"
    return tau, src


# --------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------
def gen():
    S = Suite("regression_extra.json")
    rng = np.random.default_rng(5150)

    def add(name, metric, args, p, t, fn, rtol=gf.RTOL, atol=gf.ATOL, **fkw):
        v, src = fn(p.f64, t.f64, **fkw)
        S.add(name, spec(metric, args), {"preds": p, "target": t}, v, src, rtol=rtol, atol=atol)

    N = 40
    t = np.round(rng.gamma(2.0, 1.5, N) + 0.05, 3)  # positive
    p = np.round(np.abs(t + rng.normal(0.1, 0.6, N)) + 0.01, 3)
    t2 = np.round(rng.gamma(2.0, [1.0, 3.0, 0.5], (20, 3)) + 0.05, 2)
    p2 = np.round(np.abs(t2 + rng.normal(0, [0.5, 1.5, 0.4], (20, 3))) + 0.01, 2)
    h6_t = 1e6 + np.round(rng.normal(0, 0.5, N), 4)
    h6_p = h6_t + np.round(rng.normal(0, 0.25, N), 4)
    zero_t = t.copy()
    zero_t[::5] = 0.0
    neg_t = np.round(rng.normal(0, 1.0, N), 3)
    neg_p = np.round(neg_t + rng.normal(0, 0.4, N), 3)
    small_neg_t = np.round(rng.uniform(-0.9, 1.5, N), 3)  # inside log1p's domain
    small_neg_p = np.round(rng.uniform(-0.9, 1.5, N), 3)
    ties_t = rng.integers(0, 4, N).astype(np.float64)
    ties_p = np.clip(ties_t + rng.integers(-1, 2, N), 0, 4).astype(np.float64)
    const_t = np.full(12, 2.5)
    const_p = np.round(2.5 + rng.normal(0, 0.5, 12), 3)
    int_t = rng.integers(1, 9, N)
    int_p = np.clip(int_t + rng.integers(-2, 3, N), 1, None)

    scen = {
        "base_f32": (T(p, "float32"), T(t, "float32")),
        "base_f64": (T(p, "float64"), T(t, "float64")),
        "offset1e6_f64": (T(h6_p, "float64"), T(h6_t, "float64")),
        "offset1e6_f32": (T(h6_p, "float32"), T(h6_t, "float32")),
        "zeros_in_target": (T(p, "float64"), T(zero_t, "float64")),
        "ties_f32": (T(ties_p, "float32"), T(ties_t, "float32")),
        "constant_target": (T(const_p, "float32"), T(const_t, "float32")),
        "constant_both_equal": (T(const_t, "float64"), T(const_t, "float64")),
        "perfect": (T(t, "float64"), T(t, "float64")),
        "int64": (T(int_p, "int64"), T(int_t, "int64")),
        "one_row": (T([2.5], "float32"), T([3.0], "float32")),
        "2d_f32": (T(p2, "float32"), T(t2, "float32")),
        "2d_f64": (T(p2, "float64"), T(t2, "float64")),
    }
    signed = {
        "negative_values": (T(neg_p, "float64"), T(neg_t, "float64")),
    }

    # --- mean_squared_log_error, smape, wmape, minkowski, tweedie(power=0): any data ---------------------
    for tag, (pp, tt) in {**scen, **signed}.items():
        for metric, args, fn, fkw in [
            ("symmetric_mean_absolute_percentage_error", {}, ref_smape, {}),
            ("weighted_mean_absolute_percentage_error", {}, ref_wmape, {}),
            ("minkowski_distance", {"p": 2.0}, ref_minkowski, {"p_exp": 2.0}),
            ("tweedie_deviance_score", {}, ref_tweedie, {}),
        ]:
            add(f"{metric}{_argtag(args)}__{tag}", metric, args, pp, tt, fn, **fkw)
    for tag, (pp, tt) in scen.items():
        add(f"mean_squared_log_error__{tag}", "mean_squared_log_error", {}, pp, tt, ref_msle)
    add("mean_squared_log_error__values_in_minus1_0", "mean_squared_log_error", {}, T(small_neg_p, "float64"), T(small_neg_t, "float64"), ref_msle)
    add("mean_squared_log_error__below_minus1_is_nan", "mean_squared_log_error", {}, T(neg_p, "float64"), T(neg_t, "float64"), ref_msle)
    add("mean_squared_log_error__tiny_values", "mean_squared_log_error", {}, T([1e-12, 2e-9, 0.0, 3e-10], "float64"),
        T([0.0, 1e-9, 1e-12, 3.1e-10], "float64"), ref_msle, rtol=1e-6, atol=1e-30)
    # smape / wmape edge cases: zeros on both sides, tiny targets
    zz_p = np.array([0.0, 0.0, 1.0, -2.0, 1e-7])
    zz_t = np.array([0.0, 1.0, 0.0, 2.0, -1e-7])
    for metric, fn in [("symmetric_mean_absolute_percentage_error", ref_smape), ("weighted_mean_absolute_percentage_error", ref_wmape)]:
        add(f"{metric}__zeros_and_tiny", metric, {}, T(zz_p, "float64"), T(zz_t, "float64"), fn)
        add(f"{metric}__all_zero", metric, {}, T(np.zeros(5), "float64"), T(np.zeros(5), "float64"), fn)
    add("weighted_mean_absolute_percentage_error__zero_target_clamp", "weighted_mean_absolute_percentage_error", {},
        T([0.5, -0.25], "float64"), T([0.0, 0.0], "float64"), ref_wmape)
    # minkowski p values
    for pe, args in [(1, {"p": 1}), (1.5, {"p": 1.5}), (3, {"p": 3}), (4.0, {"p": 4.0})]:
        for tag in ("base_f32", "2d_f64", "negative_values"):
            pp, tt = {**scen, **signed}[tag]
            add(f"minkowski_distance{_argtag(args)}__{tag}", "minkowski_distance", args, pp, tt, ref_minkowski, p_exp=float(pe))
    add("minkowski_distance_p-3__3d", "minkowski_distance", {"p": 3}, T(rng.normal(0, 1, (6, 2, 3)).round(3), "float64"),
        T(rng.normal(0, 1, (6, 2, 3)).round(3), "float64"), ref_minkowski, p_exp=3.0)

    # --- relative_squared_error ---------------------------------------------------------------------------
    for tag, (pp, tt) in {**scen, **signed}.items():
        if tag == "one_row" or tag.startswith("constant"):
            continue
        eps = F64_EPS if pp.dtype == "float64" or tt.dtype == "float64" else F32_EPS
        for args in ({}, {"squared": False}):
            add(f"relative_squared_error{_argtag(args)}__{tag}", "relative_squared_error", args, pp, tt, ref_rse, eps=eps, **args)
    for tag in ("2d_f32", "2d_f64"):
        pp, tt = scen[tag]
        eps = F64_EPS if tag.endswith("f64") else F32_EPS
        add(f"relative_squared_error_num_outputs-3__{tag}", "relative_squared_error", {"num_outputs": 3}, pp, tt, ref_rse, eps=eps)
    # constant target: tss = 0 -> rss / eps (eps of the input dtype)
    add("relative_squared_error__constant_target_f32_eps", "relative_squared_error", {}, *scen["constant_target"], ref_rse, eps=F32_EPS)
    add("relative_squared_error__constant_target_f64_eps", "relative_squared_error", {}, T(const_p, "float64"), T(const_t, "float64"), ref_rse, eps=F64_EPS)
    add("relative_squared_error__constant_both_equal", "relative_squared_error", {}, *scen["constant_both_equal"], ref_rse, eps=F64_EPS)
    t2c = t2.copy()
    t2c[:, 1] = 3.0
    add("relative_squared_error__2d_const_col1_f64", "relative_squared_error", {}, T(p2, "float64"), T(t2c, "float64"), ref_rse, eps=F64_EPS)
    add("relative_squared_error__one_row", "relative_squared_error", {}, T([2.5], "float64"), T([3.0], "float64"), ref_rse, eps=F64_EPS)

    # --- tweedie_deviance_score ---------------------------------------------------------------------------
    pos = {k: scen[k] for k in ("base_f32", "base_f64", "int64", "2d_f64", "one_row", "perfect", "constant_target")}
    for power in (1, 1.0, 1.5, 2, 2.0, 3, 3.0, 2.5, -1.0, -0.5, 0.0):
        for tag, (pp, tt) in pos.items():
            if power in (1.0, 2.0, 3.0) and isinstance(power, float) and tag not in ("base_f64",):
                continue  # the float spelling of an int power: one case
            args = {"power": power}
            add(f"tweedie_deviance_score{_argtag(args)}__{tag}", "tweedie_deviance_score", args, pp, tt, ref_tweedie, power=power)
    for power in (1, 1.5):
        args = {"power": power}
        add(f"tweedie_deviance_score{_argtag(args)}__zeros_in_target", "tweedie_deviance_score", args, *scen["zeros_in_target"], ref_tweedie, power=power)
    for power in (-1.0,):
        args = {"power": power}
        add(f"tweedie_deviance_score{_argtag(args)}__negative_target", "tweedie_deviance_score", args,
            T(np.abs(neg_p) + 0.1, "float64"), T(neg_t, "float64"), ref_tweedie, power=power)
    # offsets: powers 1 and 2 keep their digits far from zero (sklearn's float64 formula cancels there:
    # the reference is the long-double log1p form, cross-checked against sklearn loosely)
    for power in (1, 2):
        for tag in ("offset1e6_f64", "offset1e6_f32"):
            pp, tt = scen[tag]
            v = ref_tweedie_series(pp.f64, tt.f64, power)
            sk = float(skm.mean_tweedie_deviance(tt.f64, pp.f64, power=power))
            assert abs(v - sk) <= 1e-3 * abs(v), (v, sk)
            S.add(f"tweedie_deviance_score_power-{power}__{tag}", spec("tweedie_deviance_score", {"power": power}),
                  {"preds": pp, "target": tt}, v,
                  "hand-computed (numpy long double): 2p((1+r)log1p(r)-r) / 2(r-log1p(r)), r=(t-p)/p; agrees with sklearn.metrics.mean_tweedie_deviance to 1e-3",
                  rtol=1e-6, atol=1e-20)
    # (the general-power formula cancels at 1e6 in float64 in TorchMetrics, sklearn and Tally alike: no case)

    # --- critical_success_index -------------------------------------------------------------------------
    def add_csi(name, args, pp, tt):
        v, src = ref_csi(pp.f64 if pp.dtype == "float64" else pp.a, tt.f64 if tt.dtype == "float64" else tt.a,
                         args["threshold"], args.get("keep_sequence_dim"), dtype="float64" if pp.dtype == "float64" else "float32")
        S.add(name, spec("critical_success_index", args), {"preds": pp, "target": tt}, v, src)

    for tag in ("base_f32", "base_f64", "int64", "ties_f32", "2d_f32", "2d_f64", "one_row", "negative_values", "constant_target"):
        pp, tt = {**scen, **signed}[tag]
        for thr in (0.5, 2.0, 3.0):
            args = {"threshold": thr}
            add_csi(f"critical_success_index{_argtag(args)}__{tag}", args, pp, tt)
    add_csi("critical_success_index_threshold-100.0__nothing_above", {"threshold": 100.0}, *scen["base_f64"])
    add_csi("critical_success_index_threshold-3__int_threshold", {"threshold": 3}, *scen["int64"])
    # float32 tie at the threshold: float32(0.3) >= float32(0.3) is true, in float64 0.3f < 0.3
    tie = np.array([0.3, 0.1, 0.3, 0.7, 0.2, 0.3])
    add_csi("critical_success_index_threshold-0.3__tie_f32", {"threshold": 0.3}, T(tie, "float32"), T(tie[::-1].copy(), "float32"))
    add_csi("critical_success_index_threshold-0.3__tie_f64", {"threshold": 0.3}, T(tie, "float64"), T(tie[::-1].copy(), "float64"))
    seq_p = np.round(rng.gamma(2.0, 1.0, (9, 4, 3)), 2)
    seq_t = np.round(np.abs(seq_p + rng.normal(0, 1.0, (9, 4, 3))), 2)
    for k in (0, 1, 2):
        args = {"threshold": 2.0, "keep_sequence_dim": k}
        add_csi(f"critical_success_index{_argtag(args)}__9x4x3", args, T(seq_p, "float32"), T(seq_t, "float32"))
    for k in (0, 1):
        args = {"threshold": 2.0, "keep_sequence_dim": k}
        add_csi(f"critical_success_index{_argtag(args)}__2d_f64", args, *scen["2d_f64"])
    args = {"threshold": 2.0, "keep_sequence_dim": 0}
    add_csi("critical_success_index_threshold-2.0_keep_sequence_dim-0__QUIRK_1d_sums_everything", args, *scen["base_f64"])
    args = {"threshold": 2.0, "keep_sequence_dim": None}
    add_csi("critical_success_index_threshold-2.0_keep_sequence_dim-None__base_f64", args, *scen["base_f64"])

    # --- kl_divergence ----------------------------------------------------------------------------------
    P = np.round(rng.dirichlet(np.ones(4), 15), 4) + 1e-3
    Q = np.round(rng.dirichlet(np.ones(4) * 2, 15), 4) + 1e-3
    Pu = np.round(rng.uniform(0.1, 5.0, (15, 4)), 3)  # unnormalised
    Qu = np.round(rng.uniform(0.1, 5.0, (15, 4)), 3)
    Pz = P.copy()
    Pz[::3, 1] = 0.0  # zeros in p: xlogy -> 0
    Qz = Q.copy()
    Qz[2, 3] = 0.0  # q = 0 where p > 0: inf
    lp = np.log(P / P.sum(1, keepdims=True))
    lq = np.log(Q / Q.sum(1, keepdims=True))
    kl_sets = {
        "probs_f64": (T(P, "float64"), T(Q, "float64")),
        "probs_f32": (T(P, "float32"), T(Q, "float32")),
        "unnormalised": (T(Pu, "float64"), T(Qu, "float64")),
        "zeros_in_p": (T(Pz, "float64"), T(Q, "float64")),
        "int_counts": (T(rng.integers(1, 9, (15, 4)), "int64"), T(rng.integers(1, 9, (15, 4)), "int64")),
        "identical": (T(P, "float64"), T(P, "float64")),
        "one_row": (T(P[:1], "float64"), T(Q[:1], "float64")),
    }
    for tag, (pp, qq) in kl_sets.items():
        for red in (None, "mean", "sum", "none"):
            args = {} if red is None else {"reduction": red}
            fkw = {} if red is None else {"reduction": red}
            add(f"kl_divergence{_argtag(args)}__{tag}", "kl_divergence", args, pp, qq, ref_kl, **fkw)
    for red in ("mean", "none"):
        args = {"reduction": red}
        add(f"kl_divergence{_argtag(args)}__zero_in_q_is_inf", "kl_divergence", args, T(P, "float64"), T(Qz, "float64"), ref_kl, reduction=red)
    for red in (None, "sum", "none"):
        args = {"log_prob": True} if red is None else {"log_prob": True, "reduction": red}
        fkw = {"log_prob": True} if red is None else {"log_prob": True, "reduction": red}
        add(f"kl_divergence{_argtag(args)}__log_probs_f64", "kl_divergence", args, T(lp, "float64"), T(lq, "float64"), ref_kl, **fkw)
    add("kl_divergence_log_prob-True__log_probs_f32", "kl_divergence", {"log_prob": True}, T(lp, "float32"), T(lq, "float32"), ref_kl, log_prob=True)
    add("kl_divergence_log_prob-False__probs_f64", "kl_divergence", {"log_prob": False}, *kl_sets["probs_f64"], ref_kl)
    add("kl_divergence_reduction-None__probs_f64", "kl_divergence", {"reduction": None}, *kl_sets["probs_f64"], ref_kl, reduction="none")

    # --- kendall_rank_corrcoef --------------------------------------------------------------------------
    kt = rng.normal(0, 1, 30).round(3)
    kp = (0.6 * kt + rng.normal(0, 0.8, 30)).round(3)
    kt_ties = rng.integers(0, 5, 30).astype(np.float64)
    kp_ties = np.clip(kt_ties + rng.integers(-1, 2, 30), 0, 5).astype(np.float64)
    k2t = rng.normal(0, 1, (25, 3)).round(2)
    k2p = (k2t * [0.9, -0.5, 0.0] + rng.normal(0, 0.7, (25, 3))).round(1)  # rounding: ties
    kbig_t = rng.normal(0, 1, 400).round(2)
    kbig_p = (0.3 * kbig_t + rng.normal(0, 1, 400)).round(1)
    ksets = {
        "base_f32": (T(kp, "float32"), T(kt, "float32")),
        "base_f64": (T(kp, "float64"), T(kt, "float64")),
        "ties_f64": (T(kp_ties, "float64"), T(kt_ties, "float64")),
        "ties_int64": (T(kp_ties, "int64"), T(kt_ties, "int64")),
        "2d_ties_f64": (T(k2p, "float64"), T(k2t, "float64")),
        "n400_ties_f32": (T(kbig_p, "float32"), T(kbig_t, "float32")),
        "offset1e6_f64": (T(h6_p, "float64"), T(h6_t, "float64")),
        "reversed": (T(-kt, "float64"), T(kt, "float64")),
        "two_rows": (T([1.0, 2.0], "float64"), T([3.0, 1.0], "float64")),
        "one_row": (T([1.0], "float64"), T([2.0], "float64")),
        "constant_target": (T(kp, "float64"), T(np.full(30, 2.0), "float64")),
    }
    for tag, (pp, tt) in ksets.items():
        for args in ({}, {"variant": "a"}, {"variant": "b"}, {"variant": "c"}):
            fkw = dict(args)
            if args == {"variant": "b"} and tag not in ("base_f64", "ties_f64"):
                continue
            add(f"kendall_rank_corrcoef{_argtag(args)}__{tag}", "kendall_rank_corrcoef", args, pp, tt, ref_kendall, **fkw)
        for variant in ("a", "b", "c"):
            for alt in (None, "two-sided", "less", "greater"):
                if tag not in ("base_f64", "ties_f64", "2d_ties_f64", "n400_ties_f32", "one_row", "two_rows") and alt is not None:
                    continue
                args = {"variant": variant, "t_test": True}
                if alt is not None:
                    args["alternative"] = alt
                add(f"kendall_rank_corrcoef{_argtag(args)}__{tag}", "kendall_rank_corrcoef", args, pp, tt, ref_kendall,
                    variant=variant, t_test=True, alternative=alt or "two-sided", rtol=1e-5, atol=1e-7)
    add("kendall_rank_corrcoef_t_test-False_alternative-less__base_f64", "kendall_rank_corrcoef",
        {"t_test": False, "alternative": "less"}, *ksets["base_f64"], ref_kendall)
    return S


def main():
    gen().write_and_report()


if __name__ == "__main__":
    main()
