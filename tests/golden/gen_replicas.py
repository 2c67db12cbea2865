#!/usr/bin/env python3
"""Golden fixtures for slices (`num_groups` on any metric) and bootstrap intervals (`num_bootstraps`).

Regenerate (needs numpy and scikit-learn, as gen_fixtures.py):

    /usr/bin/python3 tests/golden/gen_replicas.py

Output: tests/golden/fixtures/replicas.json, in the format of tests/golden/README.md.

Slices: each group's value is the metric on that group's rows alone -- scikit-learn (roc_auc_score,
average_precision_score, f1_score, confusion_matrix, mean_squared_error, mean_absolute_error) or the binned
TorchMetrics algorithm of gen_fixtures.py on the group's rows; `overall=true` adds the value over all rows as the
second item of a tuple.

Bootstrap: TorchMetrics' BootStrapper outputs (mean, std with ddof=1, quantile by linear interpolation) over
B = 2000 replicas, each row counted a Poisson(1) number of times (numpy's own generator, so the draws differ from
Tally's counter-based ones): the expected values carry a Monte-Carlo tolerance, six times the standard error of the
difference of two independent bootstraps (the larger of the errors of the mean, the std and each quantile). The
replica values are the weighted forms of gen_weighted.py (a row drawn k times weighs k).
"""
import os
import sys

import numpy as np
from sklearn import metrics as skm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as gf  # noqa: E402
import gen_weighted as gw  # noqa: E402
from gen_fixtures import T  # noqa: E402

SK = "sklearn.metrics"


def spec(name, **args):
    return gf.spec(name, args)


def per_group(fn, g, G, *arrays):
    return [fn(*(a[g == k] for a in arrays)) for k in range(G)]


def gen_slices(S, rng):
    n, G = 400, 4
    t = rng.integers(0, 2, n)
    p = gf._nudge(np.round(np.clip(0.35 * t + 0.65 * rng.random(n), 0, 1), 4))
    g = rng.integers(0, G, n)
    ins = {"preds": T(p, "float32"), "target": T(t, "int64"), "groups": T(g, "int64")}
    p32 = p.astype(np.float32).astype(np.float64)
    auroc = per_group(lambda y, s: skm.roc_auc_score(y, s), g, G, t, p32)
    S.add("binary_auroc__groups", spec("binary_auroc", num_groups=G), ins, auroc, f"{SK}.roc_auc_score per group",
          rtol=1e-5, atol=1e-6)
    S.add("binary_auroc__groups_overall", spec("binary_auroc", num_groups=G, overall=True), ins,
          [auroc, skm.roc_auc_score(t, p32)], f"{SK}.roc_auc_score per group and over all rows", rtol=1e-5,
          atol=1e-6)
    S.add("binary_average_precision__groups", spec("binary_average_precision", num_groups=G), ins,
          per_group(lambda y, s: skm.average_precision_score(y, s), g, G, t, p32),
          f"{SK}.average_precision_score per group", rtol=1e-5, atol=1e-6)
    thr = gf._torch_linspace_f32(200)
    S.add("binary_auroc_thresholds-200__groups", spec("binary_auroc", thresholds=200, num_groups=G), ins,
          per_group(lambda y, s: gf.binned_auroc(s, y, thr), g, G, t, p32),
          "TorchMetrics binned AUROC (gen_fixtures.binned_auroc) per group", rtol=1e-5, atol=1e-6)

    C = 5
    logits = np.round(rng.normal(size=(n, C)), 4)
    y = rng.integers(0, C, n)
    logits[np.arange(n), y] += 0.8
    yhat = logits.astype(np.float32).argmax(1)
    ins_mc = {"preds": T(logits, "float32"), "target": T(y, "int64"), "groups": T(g, "int64")}
    S.add("multiclass_f1_score_macro__groups", spec("multiclass_f1_score", num_classes=C, average="macro",
                                                      num_groups=G), ins_mc,
          per_group(lambda a, b: skm.f1_score(a, b, average="macro", labels=range(C), zero_division=0), g, G, y,
                    yhat), f"{SK}.f1_score(average='macro') per group")
    S.add("multiclass_confusion_matrix__groups", spec("multiclass_confusion_matrix", num_classes=C, num_groups=G),
          ins_mc, per_group(lambda a, b: skm.confusion_matrix(a, b, labels=range(C)), g, G, y, yhat),
          f"{SK}.confusion_matrix per group")

    r = np.round(rng.normal(size=n), 4)
    rt = np.round(r + rng.normal(size=n), 4)
    ins_r = {"preds": T(r, "float32"), "target": T(rt, "float32"), "groups": T(g, "int64")}
    r32, rt32 = r.astype(np.float32).astype(np.float64), rt.astype(np.float32).astype(np.float64)
    S.add("mean_squared_error__groups", spec("mean_squared_error", num_groups=G), ins_r,
          per_group(lambda a, b: skm.mean_squared_error(a, b), g, G, rt32, r32), f"{SK}.mean_squared_error per group",
          rtol=1e-9, atol=1e-12)
    S.add("mean_absolute_error__groups_overall", spec("mean_absolute_error", num_groups=G, overall=True), ins_r,
          [per_group(lambda a, b: skm.mean_absolute_error(a, b), g, G, rt32, r32),
           skm.mean_absolute_error(rt32, r32)], f"{SK}.mean_absolute_error per group and over all rows", rtol=1e-9,
          atol=1e-12)

    refuse = gf.Suite.add
    refuse(S, "refused_group_out_of_range", spec("binary_auroc", num_groups=3), ins,
           gf.Refused(f"groups: {int((g == 3).sum())} group ids outside [0, 3)"), "the deferred check on groups")
    refuse(S, "refused_no_groups_input", spec("mean_squared_error", num_groups=2),
           {"preds": ins_r["preds"], "target": ins_r["target"]},
           gf.Refused("num_groups needs the input 'groups'"), "a sliced metric reads groups")


def bootstrap(S, name, metric, ins, replica_value, n, B, quantiles, rng, src):
    """Reference BootStrapper outputs from numpy Poisson(1) row weights, with a Monte-Carlo tolerance."""
    vals = np.array([replica_value(rng.poisson(1.0, n).astype(np.float64)) for _ in range(B)])
    mean, std = vals.mean(), vals.std(ddof=1)
    qs = [float(np.quantile(vals, q)) for q in quantiles]
    # Standard errors of one bootstrap's estimates: the mean, the std, and each quantile (normal density at it).
    se = [std / np.sqrt(B), std / np.sqrt(2.0 * (B - 1))]
    for q in quantiles:
        z = np.sqrt(2.0) * erfinv(2.0 * q - 1.0)
        se.append(std * np.sqrt(q * (1.0 - q) / B) / (np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi)))
    atol = 6.0 * np.sqrt(2.0) * max(se)
    S.add(name, metric, ins, [mean, std, qs], src + f"; B={B} numpy Poisson(1) weights, atol = 6 * sqrt(2) * "
          "the largest Monte-Carlo standard error", rtol=0.0, atol=float(atol))


def erfinv(y):
    """Inverse error function by Newton's method on math.erf (numpy has none; scipy is not needed for this)."""
    import math
    x = 0.0
    for _ in range(60):
        x -= (math.erf(x) - y) / (2.0 / math.sqrt(math.pi) * math.exp(-x * x))
    return x


def gen_bootstrap(S, rng):
    n, B, Q = 2000, 2000, [0.05, 0.5, 0.95]
    t = rng.integers(0, 2, n)
    p = gf._nudge(np.round(np.clip(0.3 * t + 0.7 * rng.random(n), 0, 1), 4))
    p32 = p.astype(np.float32).astype(np.float64)
    ids = np.arange(n, dtype=np.int64)
    ins = {"preds": T(p, "float32"), "target": T(t, "int64"), "row_id": T(ids, "int64")}
    thr = gf._torch_linspace_f32(200)
    bootstrap(S, "binary_auroc_thresholds-200__bootstrap_2000",
              spec("binary_auroc", thresholds=200, num_bootstraps=B, seed=7, quantile=Q), ins,
              lambda w: gw.weighted_binned_auroc(p32, t, w, thr), n, B, Q, rng,
              "TorchMetrics binned AUROC with row weights (gen_weighted.weighted_binned_auroc)")
    yhat = (p32 > 0.5).astype(np.int64)
    bootstrap(S, "binary_accuracy__bootstrap_2000", spec("binary_accuracy", num_bootstraps=B, seed=3, quantile=Q), ins,
              lambda w: skm.accuracy_score(t, yhat, sample_weight=w), n, B, Q, rng,
              f"{SK}.accuracy_score(sample_weight)")
    r = np.round(rng.normal(size=n), 4)
    rt = np.round(r + rng.normal(size=n), 4)
    r32, rt32 = r.astype(np.float32).astype(np.float64), rt.astype(np.float32).astype(np.float64)
    ins_r = {"preds": T(r, "float32"), "target": T(rt, "float32"), "row_id": T(ids, "int64")}
    bootstrap(S, "mean_squared_error__bootstrap_2000",
              spec("mean_squared_error", num_bootstraps=B, seed=11, quantile=Q), ins_r,
              lambda w: skm.mean_squared_error(rt32, r32, sample_weight=w), n, B, Q, rng,
              f"{SK}.mean_squared_error(sample_weight)")
    # The moments metrics, at a mean of 1e6 (float64 inputs): R2 by sklearn's weighted form, Pearson's r from the
    # weighted covariance (numpy.cov with frequency weights).
    m = 1e6 + 3.0 * rng.normal(size=n)
    mp = m + rng.normal(size=n)
    ins_m = {"preds": T(mp, "float64"), "target": T(m, "float64"), "row_id": T(ids, "int64")}
    bootstrap(S, "r2_score__bootstrap_2000", spec("r2_score", num_bootstraps=B, seed=5, quantile=Q), ins_m,
              lambda w: skm.r2_score(m, mp, sample_weight=w), n, B, Q, rng, f"{SK}.r2_score(sample_weight)")

    def weighted_pearson(w):
        c = np.cov(mp, m, fweights=w.astype(np.int64))
        return c[0, 1] / np.sqrt(c[0, 0] * c[1, 1])

    bootstrap(S, "pearson_corrcoef__bootstrap_2000", spec("pearson_corrcoef", num_bootstraps=B, seed=9, quantile=Q),
              ins_m, weighted_pearson, n, B, Q, rng, "numpy.cov(fweights) correlation")


def main():
    rng = np.random.default_rng(4242)
    S = gf.TreeSuite("replicas.json")
    gen_slices(S, rng)
    gen_bootstrap(S, rng)
    path, k = S.write()
    print(f"wrote {k} cases to {path}")


if __name__ == "__main__":
    main()
