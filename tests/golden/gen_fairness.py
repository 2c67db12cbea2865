#!/usr/bin/env python3
"""Golden fixtures for the group fairness metrics (the `groups` input, one int id per row).

Regenerate (needs numpy and scikit-learn, as gen_fixtures.py):

    /usr/bin/python3 tests/golden/gen_fairness.py

Output: tests/golden/fixtures/fairness.json, in the format of tests/golden/README.md.

binary_groups_stat_rates, demographic_parity, equal_opportunity and binary_fairness follow TorchMetrics 1.5.2's
published algorithm (src/torchmetrics/functional/classification/group_fairness.py): each group's tp, fp, tn, fn
after the binary label decision; rates are the counts over their sum; demographic parity is min/max of the
positivity rates (tp + fp) / n, equal opportunity min/max of tp / (tp + fn), both with _safe_divide (0 where
undefined) and argmin/argmax (the first group of a tie). Each group's counts come from scikit-learn's
confusion_matrix on that group's rows alone (TorchMetrics itself is not used). Tally's documented forms
(metrics/classification/group_fairness.cc): the rates are a [G, 4] tensor (a group without rows is a row of
NaN), the ratios a tuple (ratio, low group id, high group id) over the groups with rows.

The binary stat family with num_groups (Tally's slices): each group's value is the metric on that group's rows
alone, from scikit-learn (with sample_weight for the weighted cases), and overall=true adds the value over all rows.
"""
import os
import sys

import numpy as np
from sklearn import metrics as skm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as gf  # noqa: E402
from gen_fixtures import T  # noqa: E402

SRC = "TorchMetrics 1.5.2 group_fairness algorithm over sklearn.metrics.confusion_matrix per group"


def group_counts(t, yhat, groups, num_groups, ignore_index=None):
    """[G, 4] tp, fp, tn, fn per group and [G] rows (ignored ones included)."""
    c = np.zeros((num_groups, 4), np.float64)
    rows = np.zeros(num_groups, np.int64)
    for g in range(num_groups):
        sel = groups == g
        rows[g] = sel.sum()
        tg, hg = t[sel].reshape(-1), yhat[sel].reshape(-1)
        if ignore_index is not None:
            # rule: ignored elements count in no statistic -- _binary_stat_scores_format sets their target to -1
            keep = tg != ignore_index
            tg, hg = tg[keep], hg[keep]
        if tg.size:
            tn, fp, fn, tp = skm.confusion_matrix(tg, hg, labels=[0, 1]).ravel()
            c[g] = [tp, fp, tn, fn]
    return c, rows


def stat_rates(c):
    with np.errstate(all="ignore"):
        # rule: each group's [tp, fp, tn, fn] / their sum; 0/0 is NaN -- BinaryGroupStatRates.compute
        return c / c.sum(axis=1, keepdims=True)


def disparity(rate, has_rows):
    """(min/max, argmin, argmax) over the groups with rows; (nan, -1, -1) without any."""
    idx = np.flatnonzero(has_rows)
    if idx.size == 0:
        return [float("nan"), -1, -1]
    r = rate[idx]
    lo, hi = idx[int(np.argmin(r))], idx[int(np.argmax(r))]
    return [float(gf.sdiv(rate[lo], rate[hi])), int(lo), int(hi)]


def dp(c, rows):
    # rule: positivity rate = (tp + fp) / (tp + fp + tn + fn), _safe_divide -- _compute_binary_demographic_parity
    return disparity(gf.sdiv(c[:, 0] + c[:, 1], c.sum(axis=1)), rows > 0)


def eo(c, rows):
    # rule: true positive rate = tp / (tp + fn), _safe_divide -- _compute_binary_equal_opportunity
    return disparity(gf.sdiv(c[:, 0], c[:, 0] + c[:, 3]), rows > 0)


def spec(name, **args):
    return gf.spec(name, args)


def gen(S, rng):
    # 3 groups, probabilities, every group present.
    n, G = 60, 3
    t = rng.integers(0, 2, n)
    p = gf._nudge(np.round(0.4 * t + 0.6 * rng.random(n), 3))
    g = rng.integers(0, G, n)
    g[:G] = np.arange(G)
    yhat = gf.tm_threshold(p.astype(np.float32), 0.5)
    ins = {"preds": T(p, "float32"), "target": T(t, "int64"), "groups": T(g, "int64")}
    c, rows = group_counts(t, yhat, g, G)
    S.add("stat_rates_probs", spec("binary_groups_stat_rates", num_groups=G), ins, stat_rates(c), SRC)
    S.add("equal_opportunity_probs", spec("equal_opportunity", num_groups=G), ins, eo(c, rows), SRC)
    S.add("fairness_eo_probs", spec("binary_fairness", num_groups=G, task="equal_opportunity"), ins, eo(c, rows), SRC)
    S.add("fairness_all_probs", spec("binary_fairness", num_groups=G), ins, [dp(c, rows), eo(c, rows)], SRC)
    # demographic parity: a target of zeros, so every row counts (ignore_index=0 would drop them all).
    zeros = np.zeros(n, np.int64)
    cz, rz = group_counts(zeros, yhat, g, G)
    dp_ins = {"preds": ins["preds"], "groups": ins["groups"]}
    S.add("demographic_parity_probs", spec("demographic_parity", num_groups=G), dp_ins, dp(cz, rz), SRC)
    S.add("fairness_dp_probs", spec("binary_fairness", num_groups=G, task="demographic_parity"), ins, dp(cz, rz),
          SRC)
    cz0, rz0 = group_counts(zeros, yhat, g, G, ignore_index=0)
    S.add("demographic_parity_ignore_index_0", spec("demographic_parity", num_groups=G, ignore_index=0), dp_ins,
          dp(cz0, rz0), SRC)
    S.add("threshold_0.7", spec("binary_groups_stat_rates", num_groups=G, threshold=0.7), ins,
          stat_rates(group_counts(t, gf.tm_threshold(p.astype(np.float32), 0.7), g, G)[0]), SRC)

    # Logits (every row outside [0, 1], so every batch is sigmoided), ignore_index=-1 targets.
    lg = np.round(rng.choice([-1, 1], n) * rng.uniform(1.5, 4.0, n), 3)
    ti = t.copy()
    ti[rng.choice(n, 8, replace=False)] = -1
    yl = gf.tm_threshold(lg.astype(np.float32), 0.5)
    ins_l = {"preds": T(lg, "float32"), "target": T(ti, "int64"), "groups": T(g, "int64")}
    c, rows = group_counts(ti, yl, g, G, ignore_index=-1)
    S.add("stat_rates_logits_ignore_index", spec("binary_groups_stat_rates", num_groups=G, ignore_index=-1), ins_l,
          stat_rates(c), SRC)
    S.add("fairness_all_logits_ignore_index", spec("binary_fairness", num_groups=G, ignore_index=-1), ins_l,
          [dp(c, rows), eo(c, rows)], SRC)

    # Int label preds, a group without rows (id 2 of 4) and one without positives (EO rate 0: the low group).
    n = 40
    t = rng.integers(0, 2, n)
    h = rng.integers(0, 2, n)
    g = rng.choice([0, 1, 3], n)
    g[:3] = [0, 1, 3]
    t[g == 3] = 0
    ins = {"preds": T(h, "int64"), "target": T(t, "int64"), "groups": T(g, "int64")}
    c, rows = group_counts(t, h, g, 4)
    assert rows[2] == 0
    S.add("stat_rates_absent_group", spec("binary_groups_stat_rates", num_groups=4), ins, stat_rates(c), SRC)
    S.add("equal_opportunity_absent_group", spec("equal_opportunity", num_groups=4), ins, eo(c, rows), SRC)
    assert eo(c, rows)[1] == 3
    cz, rz = group_counts(np.zeros(n, np.int64), h, g, 4)
    S.add("demographic_parity_absent_group", spec("demographic_parity", num_groups=4),
          {"preds": ins["preds"], "groups": ins["groups"]}, dp(cz, rz), SRC)

    # (N, 3) preds: every element of a row counts in the row's group.
    n = 30
    t = rng.integers(0, 2, (n, 3))
    p = gf._nudge(np.round(0.4 * t + 0.6 * rng.random((n, 3)), 3))
    g = rng.integers(0, 2, n)
    g[:2] = [0, 1]
    ym = gf.tm_threshold(p.astype(np.float32), 0.5)
    ins = {"preds": T(p, "float32"), "target": T(t, "int64"), "groups": T(g, "int64")}
    c, rows = group_counts(t, ym, g, 2)
    S.add("stat_rates_multidim", spec("binary_groups_stat_rates", num_groups=2), ins, stat_rates(c), SRC)
    S.add("fairness_all_multidim", spec("binary_fairness", num_groups=2), ins, [dp(c, rows), eo(c, rows)], SRC)

    # Many groups, few rows each (large G at small N): 1,000 groups over 3,000 rows, some empty.
    n, G = 3000, 1000
    t = rng.integers(0, 2, n)
    p = gf._nudge(np.round(0.3 * t + 0.7 * rng.random(n), 3))
    g = rng.integers(0, G, n)
    yhat = gf.tm_threshold(p.astype(np.float32), 0.5)
    ins = {"preds": T(p, "float32"), "target": T(t, "int64"), "groups": T(g, "int64")}
    c, rows = group_counts(t, yhat, g, G)
    assert (rows == 0).any()
    S.add("stat_rates_1000_groups", spec("binary_groups_stat_rates", num_groups=G), ins, stat_rates(c), SRC)
    S.add("fairness_all_1000_groups", spec("binary_fairness", num_groups=G), ins, [dp(c, rows), eo(c, rows)], SRC)

    # Refused: a group id outside [0, G) (a deferred check naming the input), float ids, a missing num_groups.
    bad = g.copy()
    bad[5] = G
    refuse = gf.Suite.add  # TreeSuite.add takes values only
    refuse(S, "refused_group_out_of_range", spec("binary_groups_stat_rates", num_groups=G),
          {**ins, "groups": T(bad, "int64")}, gf.Refused(f"groups: 1 group ids outside [0, {G})"), SRC)
    refuse(S, "refused_float_groups", spec("binary_groups_stat_rates", num_groups=G), {**ins, "groups": T(g, "float32")},
          gf.Refused("groups: expected integer group ids"), SRC)
    refuse(S, "refused_no_num_groups", "equal_opportunity", ins, gf.Refused("missing required argument 'num_groups'"),
          SRC)


# The binary stat family per group (num_groups=G): each group's value is the metric on that group's rows alone
# (scikit-learn on the group's rows, TorchMetrics' zero_division=0), and overall=true adds the value over every row.
STAT = {
    "binary_accuracy": (lambda y, h, **k: skm.accuracy_score(y, h, **k), 0.0),
    "binary_precision": (lambda y, h, **k: skm.precision_score(y, h, zero_division=0, **k), 0.0),
    "binary_recall": (lambda y, h, **k: skm.recall_score(y, h, zero_division=0, **k), 0.0),
    "binary_f1_score": (lambda y, h, **k: skm.f1_score(y, h, zero_division=0, **k), 0.0),
    "binary_fbeta_score": (lambda y, h, **k: skm.fbeta_score(y, h, beta=2.0, zero_division=0, **k), 0.0),
    "binary_specificity": (lambda y, h, **k: skm.recall_score(y, h, pos_label=0, zero_division=0, **k), 0.0),
    # rule: hamming = 1 - accuracy, and accuracy on no rows is _safe_divide's 0, so an empty group gives 1
    "binary_hamming_distance": (lambda y, h, **k: skm.hamming_loss(y, h, **k), 1.0),
}


def stat_scores(y, h, sample_weight=None):
    tn, fp, fn, tp = skm.confusion_matrix(y, h, labels=[0, 1], sample_weight=sample_weight).ravel()
    return np.array([tp, fp, tn, fn, tp + fn], np.float64)


def per_group(fn, empty, t, yhat, g, G, w=None):
    out = []
    for k in range(G):
        sel = g == k
        if not sel.any():
            out.append(empty)
        else:
            out.append(fn(t[sel], yhat[sel], **({} if w is None else {"sample_weight": w[sel]})))
    return np.array(out, np.float64)


def gen_slices(S, rng):
    n, G = 70, 4
    t = rng.integers(0, 2, n)
    p = gf._nudge(np.round(0.4 * t + 0.6 * rng.random(n), 3))
    g = rng.choice([0, 1, 3], n)
    g[:3] = [0, 1, 3]
    yhat = gf.tm_threshold(p.astype(np.float32), 0.5)
    w = np.round(rng.uniform(0.1, 3.0, n), 3)
    w[:2] = 0.0
    ins = {"preds": T(p, "float32"), "target": T(t, "int64"), "groups": T(g, "int64")}
    ins_w = {**ins, "weight": T(w, "float32")}
    w = ins_w["weight"].f64
    src = "sklearn.metrics on each group's rows alone (zero_division=0); an empty group gives the no-row value"
    for metric, (fn, empty) in STAT.items():
        extra = {"beta": 2.0} if "fbeta" in metric else {}
        per = per_group(fn, empty, t, yhat, g, G)
        S.add(f"{metric}__groups", spec(metric, **extra, num_groups=G), ins, per, src)
        S.add(f"{metric}__groups_overall", spec(metric, **extra, num_groups=G, overall=True), ins,
              [per, fn(t, yhat)], src)
        S.add(f"{metric}__groups_weighted", spec(metric, **extra, num_groups=G), ins_w,
              per_group(fn, empty, t, yhat, g, G, w), src + ", with sample_weight")
    per = per_group(stat_scores, np.zeros(5), t, yhat, g, G)
    S.add("binary_stat_scores__groups_overall", spec("binary_stat_scores", num_groups=G, overall=True), ins,
          [per, stat_scores(t, yhat)], src)
    refuse = gf.Suite.add
    refuse(S, "refused_overall_without_groups", spec("binary_accuracy", overall=True), ins,
           gf.Refused("overall=true needs num_groups"), src)
    refuse(S, "refused_groups_samplewise",
           spec("binary_accuracy", num_groups=G, multidim_average="samplewise"),
           {"preds": T(p.reshape(-1, 2), "float32"), "target": T(t.reshape(-1, 2), "int64"),
            "groups": T(g[: n // 2], "int64")},
           gf.Refused("num_groups is not supported with multidim_average='samplewise'"), src)


def main():
    rng = np.random.default_rng(3131)
    S = gf.TreeSuite("fairness.json")
    gen(S, rng)
    gen_slices(S, rng)
    path, k = S.write()
    print(f"wrote {k} cases to {path}")


if __name__ == "__main__":
    main()
