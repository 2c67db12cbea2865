#!/usr/bin/env python3
"""Golden fixtures for hinge loss, the multilabel ranking metrics and the curves' operating points
(TorchMetrics 1.5.2 semantics) -> fixtures/classification_extra.json.

    /usr/bin/python3 tests/golden/gen_classification_extra.py

Expected values come from scikit-learn (hinge_loss, coverage_error, label_ranking_average_precision_score,
label_ranking_loss, roc_curve, precision_recall_curve through gen_fixtures' curve helpers) with TorchMetrics'
rules applied in a few lines of numpy; TorchMetrics itself is not used. Each rule cites the torchmetrics file it
was read from (`cls/` = src/torchmetrics/functional/classification/). Deliberate differences from TorchMetrics
(documented in SEMANTICS.md, "Hinge loss, multilabel ranking and operating points"): where TorchMetrics raises (a class without any kept element, a NaN recall
among the qualifying points, a multiclass hinge call whose rows are all ignored) Tally returns NaN; the generator
emits no such case. Ranking-loss ties follow the stable order torch's CPU argsort gives rows of up to 16 labels.
"""
import os
import sys

import numpy as np
from sklearn import metrics as skm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as gf  # noqa: E402
from gen_fixtures import T, Suite, spec  # noqa: E402

F32 = np.float32


# --------------------------------------------------------------------------------------------
# hinge loss
# --------------------------------------------------------------------------------------------
def hinge_expected(task, preds, target, C=None, squared=False, mode="crammer-singer", ignore_index=None):
    if task == "binary":
        p, t = gf._co_prepare("binary", preds, target, 1, ignore_index)
        p = p.astype(np.float64)
        y = np.where(t == 1, 1, -1)
        # rule: margin = preds for target 1, -preds for target 0; measure = clamp(1 - margin, 0) (squared with
        # `squared`), mean over kept elements -- cls/hinge.py (_binary_hinge_loss_update)
        m = np.clip(1 - y * p, 0, None)
        if not squared and len(np.unique(y)) == 2:  # sklearn's LabelBinarizer needs both classes
            gf._close(skm.hinge_loss(y, p), m.mean())
        return (m ** 2).mean() if squared else m.mean()
    p, t = gf._co_prepare("multiclass", preds, target, C, ignore_index)  # rule: softmax if any kept score outside [0,1]
    p = p.astype(np.float64)
    onehot = np.eye(C, dtype=bool)[t]
    if mode == "crammer-singer":
        # rule: margin = p[target] - max over the other classes; clamp(1 - margin, 0) -- cls/hinge.py
        # (_multiclass_hinge_loss_update)
        margin = p[onehot] - np.where(onehot, -np.inf, p).max(1)
        m = np.clip(1 - margin, 0, None)
        if not squared:
            gf._close(skm.hinge_loss(t, p, labels=np.arange(C)), m.mean())
        return (m ** 2).mean() if squared else m.mean()
    # rule: one-vs-all: every class is the binary hinge of its column, a [C] result -- cls/hinge.py
    m = np.clip(1 - np.where(onehot, p, -p), 0, None)
    if not squared:
        for c in range(C):
            if onehot[:, c].all() or not onehot[:, c].any():
                continue  # sklearn's LabelBinarizer needs both classes
            gf._close(skm.hinge_loss(np.where(onehot[:, c], 1, -1), p[:, c]), m[:, c].mean())
    return (m ** 2).mean(0) if squared else m.mean(0)


# --------------------------------------------------------------------------------------------
# multilabel ranking
# --------------------------------------------------------------------------------------------
def _ranking_rows(preds, target, L, ignore_index):
    p, t = gf._co_prepare("multilabel", preds, target, L, None)  # rule: sigmoid if ANY element outside [0,1]
    t = t.copy()
    p = p.astype(np.float64)
    ign = (t == ignore_index) if ignore_index is not None else np.zeros(t.shape, bool)
    # rule: ignored elements get score and target -4 * num_labels -- cls/confusion_matrix.py
    # (_multilabel_confusion_matrix_format), used by cls/ranking.py
    p[ign] = -4 * L
    t[ign] = -4 * L
    return p, t, ign


def coverage_expected(preds, target, L, ignore_index=None):
    p, t, ign = _ranking_rows(preds, target, L, ignore_index)
    # rule: coverage = #(preds >= min over target != 0 of preds); no relevant label -> 0 (preds of target-0
    # labels are offset by |min| + 10) -- cls/ranking.py (_multilabel_coverage_error_update)
    rows = ~ign.any(1)
    cov = np.zeros(len(p))
    if rows.any():
        y = t[rows] == 1
        per = np.array([skm.coverage_error(y[i:i + 1], p[rows][i:i + 1]) for i in range(y.shape[0])])
        cov[rows] = per
    # rule: QUIRK an ignored element (score -4 L, target != 0) is the row's minimum "relevant" score: coverage L
    cov[~rows] = L
    hand = np.array([(r >= np.min(np.where(tt != 0, r, np.inf))).sum() for r, tt in zip(p, t)])
    gf._close(cov, hand)
    return cov.mean() if len(cov) else np.nan


def lrap_expected(preds, target, L, ignore_index=None):
    p, t, ign = _ranking_rows(preds, target, L, ignore_index)
    out = []
    for r, tt, ig in zip(p, t, ign):
        rel = tt == 1
        # rule: a row with no relevant label or all num_labels relevant scores 1; else mean over relevant labels of
        # rank among relevant / rank among all (ranks: max method on -preds) -- cls/ranking.py
        # (_multilabel_ranking_average_precision_update)
        if rel.sum() == 0 or rel.sum() == L:
            out.append(1.0)
            continue
        keep = ~ig  # ignored elements score -4 L: below every kept one, never relevant
        if rel.sum() == keep.sum():
            out.append(1.0)
            continue
        out.append(skm.label_ranking_average_precision_score(rel[keep][None], r[keep][None]))
    return np.mean(out) if out else np.nan


def ranking_loss_expected(preds, target, L, ignore_index=None):
    p, t, ign = _ranking_rows(preds, target, L, ignore_index)
    rel = (t == 1).astype(np.int64)
    nrel = rel.sum(1)
    # rule: rows with 0 or num_labels relevant labels add 0 but count in the mean; an ignored element is an
    # irrelevant label (ranked last); loss = (sum over relevant of (L - inverse) - nrel(nrel+1)/2) / (nrel (L -
    # nrel)) with inverse = argsort(argsort(preds)) -- cls/ranking.py (_multilabel_ranking_loss_update)
    hand = np.zeros(len(p))
    for i in range(len(p)):
        if not 0 < nrel[i] < L:
            continue
        inverse = np.argsort(np.argsort(p[i], kind="stable"), kind="stable")  # rule: ties in index order (L <= 16)
        hand[i] = ((L - inverse) * rel[i]).sum() - 0.5 * nrel[i] * (nrel[i] + 1)
        hand[i] /= nrel[i] * (L - nrel[i])
    total = hand.sum() / len(p) if len(p) else 0.0
    ties = any(len(np.unique(r)) < L for r in p)
    if not ties and len(p):
        gf._close(skm.label_ranking_loss(rel, p), total)
    return total, ties


# --------------------------------------------------------------------------------------------
# operating points of the curves
# --------------------------------------------------------------------------------------------
MIN_ARG = {"recall_at_fixed_precision": "min_precision", "precision_at_fixed_recall": "min_recall",
           "sensitivity_at_specificity": "min_specificity", "specificity_at_sensitivity": "min_sensitivity"}


def _pick_pr(kind, prec, rec, thr, minv, cmp_f64):
    # rule: the closing (precision 1, recall 0) point is left out (zip to the thresholds' length) --
    # cls/recall_fixed_precision.py (_recall_at_precision), cls/precision_fixed_recall.py (_precision_at_recall)
    n = len(thr)
    prec, rec = prec[:n], rec[:n]
    if kind == "recall_at_fixed_precision":
        # rule: precision >= min_precision compared in float32, or float64 when the thresholds are float64 (vstack
        # promotes); lexicographic max of (recall, precision, threshold) -- cls/recall_fixed_precision.py (_lexargmax)
        q = prec.astype(np.float64) >= minv if cmp_f64 else prec.astype(F32) >= F32(minv)
        key, tie = rec, prec
    else:
        # rule: recall >= min_recall (float32 tensor vs Python float); max of (precision, recall, threshold)
        # tuples -- cls/precision_fixed_recall.py (_precision_at_recall)
        q = rec.astype(F32) >= F32(minv)
        key, tie = prec, rec
    if not q.any():
        return 0.0, 1e6
    assert not np.isnan(key[q]).any(), "NaN among qualifying points (TorchMetrics raises)"
    order = sorted(np.nonzero(q)[0], key=lambda i: (key[i], tie[i], thr[i]))
    best = order[-1]
    # rule: a best value of 0 reports threshold 1e6 -- cls/recall_fixed_precision.py
    return float(key[best]), (1e6 if key[best] == 0 else float(thr[best]))


def _pick_roc(kind, fpr, tpr, thr, minv):
    spec_ = (F32(1) - fpr.astype(F32)).astype(F32)  # rule: specificity = 1 - fpr -- cls/sensitivity_specificity.py
    if kind == "sensitivity_at_specificity":
        q, key = spec_ >= F32(minv), tpr
    else:
        q, key = tpr.astype(F32) >= F32(minv), spec_
    # rule: no qualifying point -> (0, 1e6); else torch.argmax (first maximum, ROC order) among the qualifying
    # points -- cls/sensitivity_specificity.py, cls/specificity_sensitivity.py
    if not q.any():
        return 0.0, 1e6
    idx = np.nonzero(q)[0]
    best = idx[np.argmax(key[idx])]
    return float(key[best]), float(thr[best])


def fixed_expected(kind, task, preds, target, C, minv, thr=None, ignore_index=None):
    p, t = gf._co_prepare(task, preds, target, C, ignore_index)
    roc = kind in ("sensitivity_at_specificity", "specificity_at_sensitivity")

    def one(s, y, recall_one=None):
        assert thr is not None or len(y) > 0, "a class without kept elements (TorchMetrics raises)"
        if thr is not None:
            if roc:
                fpr, tpr = gf._co_binned("roc", s, y, thr)
                return _pick_roc(kind, fpr, tpr, thr[::-1], minv)
            prec, rec = gf._co_binned("prc", s, y, thr)
            return _pick_pr(kind, prec, rec, thr, minv, False)
        if roc:
            return _pick_roc(kind, *gf._co_roc_exact(y, s), minv)
        prec, rec, th = gf._co_prc_exact(y, s, recall_one=recall_one)
        return _pick_pr(kind, prec, rec, th, minv, s.dtype == np.float64)

    if task == "binary":
        return list(one(p, t))
    vals, thrs = [], []
    for c in range(C):
        if task == "multiclass":
            v = one(p[:, c], (t == c).astype(np.int64), recall_one=(len(t) == 0 or (t == 0).all()))
        else:
            keep = t[:, c] != ignore_index if ignore_index is not None else np.ones(len(t), bool)
            v = one(p[keep, c], t[keep, c])
        vals.append(v[0])
        thrs.append(v[1])
    return [np.array(vals), np.array(thrs)]


# --------------------------------------------------------------------------------------------
def _check_ml(p, t):
    gf._cm_check_data("multilabel", p, t, None, [])


def gen():
    S = gf.TreeSuite("classification_extra.json")
    rng = np.random.default_rng(2024)
    sk_h = "sklearn.metrics.hinge_loss + TorchMetrics rules"
    hand = "hand-written numpy (TorchMetrics rules)"

    # ---- binary hinge
    N = 30
    t = rng.integers(0, 2, N)
    prob = np.round(0.35 * t + 0.65 * rng.random(N), 2)
    mag = 1.05 + np.abs(rng.normal(0, 1.5, N))  # every logit outside [0, 1]: every chunk sigmoids
    logit = np.where(rng.random(N) < np.where(t == 1, 0.75, 0.3), 1, -1) * mag
    t_ign = np.where(rng.random(N) < 0.2, -1, t)
    binary = [
        ("prob_f32", T(prob, "float32"), T(t, "int64"), {}),
        ("prob_f64", T(prob, "float64"), T(t, "int64"), {}),
        ("logit_f32", T(logit, "float32"), T(t, "int32"), {}),
        ("ignore-1", T(prob, "float32"), T(t_ign, "int64"), {"ignore_index": -1}),
        ("logit_ignore-1", T(logit, "float32"), T(t_ign, "int64"), {"ignore_index": -1}),
        ("ignore0_real_class", T(prob, "float32"), T(t, "int64"), {"ignore_index": 0}),
        ("all_positive", T(prob, "float32"), T(np.ones(N), "int64"), {}),
        ("all_negative", T(logit, "float32"), T(np.zeros(N), "int64"), {}),
        ("one_row", T(prob[:1], "float32"), T(t[:1], "int64"), {}),
        ("multidim_10x3", T(np.round(rng.random((10, 3)), 2), "float32"), T(rng.integers(0, 2, (10, 3)), "int64"), {}),
    ]
    for tag, pr, tt, extra in binary:
        gf._co_check_binary(pr.a, tt.a, extra.get("ignore_index"), [])
        for sq in (None, True):
            args = dict(extra)
            if sq:
                args = {"squared": True, **extra}
            exp = hinge_expected("binary", pr.a, tt.a, squared=bool(sq), ignore_index=extra.get("ignore_index"))
            S.add(f"binary_hinge_loss_sq-{bool(sq)}__{tag}", spec("binary_hinge_loss", args),
                  {"preds": pr, "target": tt}, exp, sk_h if not sq else hand)

    # ---- multiclass hinge
    C, N = 4, 30
    t = rng.integers(0, C, N)
    prob = gf.mc_scores(rng, t, C)
    logit = rng.normal(0, 1.5, (N, C)) + 1.2 * np.eye(C)[t]
    logit[:, 0] = np.where(logit[:, 0] >= 0, logit[:, 0] + 1.1, logit[:, 0] - 0.1)  # every row outside [0, 1]
    t_absent = np.where(t == 3, 1, t)
    t_ign = np.where(rng.random(N) < 0.2, -1, t)
    t_ign[0] = t[0]
    p3, t3 = rng.dirichlet(np.ones(3), (12, 2)).transpose(0, 2, 1), rng.integers(0, 3, (12, 2))
    multiclass = [
        ("prob_f32", T(prob, "float32"), T(t, "int64"), C, {}),
        ("prob_f64", T(prob, "float64"), T(t, "int64"), C, {}),
        ("logit_f32", T(logit, "float32"), T(t, "int64"), C, {}),
        ("absent_class3", T(prob, "float32"), T(t_absent, "int64"), C, {}),
        ("ignore-1", T(prob, "float32"), T(t_ign, "int64"), C, {"ignore_index": -1}),
        ("logit_ignore-1", T(logit, "float32"), T(t_ign, "int64"), C, {"ignore_index": -1}),
        ("ignore2_real_class", T(prob, "float32"), T(t, "int64"), C, {"ignore_index": 2}),
        ("one_row", T(logit[:1], "float32"), T(t[:1], "int64"), C, {}),
        ("multidim_12x3x2", T(p3, "float32"), T(t3, "int64"), 3, {}),
    ]
    for tag, pr, tt, nc, extra in multiclass:
        gf._cm_check_data("multiclass", pr.a, tt.a, extra.get("ignore_index"), [])
        for mode in (None, "one-vs-all"):
            for sq in (False, True):
                args = {"num_classes": nc}
                if sq:
                    args["squared"] = True
                if mode:
                    args["multiclass_mode"] = mode
                args.update(extra)
                exp = hinge_expected("multiclass", pr.a, tt.a, nc, sq, mode or "crammer-singer", extra.get("ignore_index"))
                S.add(f"multiclass_hinge_loss_mode-{mode or 'default'}_sq-{sq}__{tag}",
                      spec("multiclass_hinge_loss", args), {"preds": pr, "target": tt}, exp,
                      hand if sq else sk_h)
    # crammer-singer spelled out (quoted, as a user may write it)
    S.add("multiclass_hinge_loss_mode-crammer-singer__prob_f32",
          spec("multiclass_hinge_loss", {"num_classes": C, "multiclass_mode": gf.Quoted("crammer-singer")}),
          {"preds": T(prob, "float32"), "target": T(t, "int64")}, hinge_expected("multiclass", prob.astype(F32), t, C),
          sk_h)

    # ---- multilabel ranking
    L, N = 5, 30
    tl = rng.integers(0, 2, (N, L))
    tl[0] = 0  # a row without relevant labels
    tl[1] = 1  # a row with every label relevant
    tl[:, 4] = 0  # a label never relevant
    mprob = rng.random((N, L)) * 0.7 + 0.3 * tl
    mlogit = rng.normal(0, 1.5, (N, L)) + 1.5 * (2 * tl - 1)
    mlogit[:, 0] = np.where(mlogit[:, 0] >= 0, mlogit[:, 0] + 1.1, mlogit[:, 0] - 0.1)
    tied = np.round(mprob, 1)
    tl_ign = np.where(rng.random((N, L)) < 0.15, -1, tl)
    tl_ign[2] = [1, 1, 1, 0, -1]  # every kept label relevant but one ignored
    tl_ign[3] = [-1, -1, -1, -1, -1]
    ml3, tl3 = np.round(rng.random((12, 3, 2)), 2), rng.integers(0, 2, (12, 3, 2))
    ranking = [
        ("prob_f32", T(mprob, "float32"), T(tl, "int64"), L, {}),
        ("prob_f64", T(mprob, "float64"), T(tl, "int64"), L, {}),
        ("logit_f32", T(mlogit, "float32"), T(tl, "int64"), L, {}),
        ("ties_f32", T(tied, "float32"), T(tl, "int64"), L, {}),
        ("ignore-1_QUIRK", T(mprob, "float32"), T(tl_ign, "int64"), L, {"ignore_index": -1}),
        ("ties_ignore-1_QUIRK", T(tied, "float32"), T(tl_ign, "int64"), L, {"ignore_index": -1}),
        ("all_relevant", T(mprob, "float32"), T(np.ones((N, L)), "int64"), L, {}),
        ("none_relevant", T(mprob, "float32"), T(np.zeros((N, L)), "int64"), L, {}),
        ("one_row", T(mprob[5:6], "float32"), T(tl[5:6], "int64"), L, {}),
        ("multidim_12x3x2", T(ml3, "float32"), T(tl3, "int64"), 3, {}),
    ]
    for tag, pr, tt, nl, extra in ranking:
        _check_ml(pr.a, tt.a)
        ii = extra.get("ignore_index")
        args = {"num_labels": nl, **extra}
        inputs = {"preds": pr, "target": tt}
        S.add(f"multilabel_coverage_error__{tag}", spec("multilabel_coverage_error", args), inputs,
              coverage_expected(pr.a, tt.a, nl, ii), "sklearn.metrics.coverage_error + TorchMetrics rules")
        S.add(f"multilabel_ranking_average_precision__{tag}", spec("multilabel_ranking_average_precision", args),
              inputs, lrap_expected(pr.a, tt.a, nl, ii),
              "sklearn.metrics.label_ranking_average_precision_score + TorchMetrics rules")
        loss, ties = ranking_loss_expected(pr.a, tt.a, nl, ii)
        S.add(f"multilabel_ranking_loss__{tag}", spec("multilabel_ranking_loss", args), inputs, loss,
              hand if ties else "sklearn.metrics.label_ranking_loss + TorchMetrics rules")

    # ---- operating points
    thr_forms = [(None, None), ("5", gf._torch_linspace_f32(5)), ("11", gf._torch_linspace_f32(11)),
                 ("[0.1, 0.25, 0.5, 0.8]", np.array([0.1, 0.25, 0.5, 0.8], F32)),
                 ("[0.8, 0.1, 0.5, 0.3]", np.array([0.8, 0.1, 0.5, 0.3], F32))]
    src_exact = "sklearn.metrics.roc_curve / precision_recall_curve + TorchMetrics selection rules (numpy)"

    def add_fixed(task, tag, pr, tt, nc, extra, forms, mins=(0.5, 0.7, 0.9)):
        ii = extra.get("ignore_index")
        for kind, arg in MIN_ARG.items():
            for minv in mins:
                for thr_arg, thr in forms:
                    args = {}
                    if task == "multiclass":
                        args["num_classes"] = nc
                    if task == "multilabel":
                        args["num_labels"] = nc
                    args[arg] = minv
                    if thr_arg is not None:
                        args["thresholds"] = thr_arg
                    args.update(extra)
                    metric = f"{task}_{kind}"
                    exp = fixed_expected(kind, task, pr.a, tt.a, nc, minv, thr, ii)
                    S.add(f"{metric}_min-{minv}_thr-{gf._cm_thr_tag(thr_arg)}__{tag}", spec(metric, args),
                          {"preds": pr, "target": tt}, exp, src_exact if thr is None else hand)

    N = 40
    t = rng.integers(0, 2, N)
    prob = np.round(0.3 * t + 0.7 * rng.random(N), 2)  # ties, also between positives and negatives
    mag = 1.05 + np.abs(rng.normal(0, 1.5, N))
    logit = np.where(rng.random(N) < np.where(t == 1, 0.75, 0.3), 1, -1) * mag
    t_ign = np.where(rng.random(N) < 0.2, -1, t)
    # precision exactly 0.7 / 0.5 at some threshold: 7 positives above 3 negatives, then 3 and 7
    p_exact = np.array([0.95] * 7 + [0.9] * 3 + [0.6] * 3 + [0.55] * 7 + [0.2] * 5)
    t_exact = np.array([1] * 7 + [0] * 3 + [1] * 3 + [0] * 7 + [0, 1, 0, 1, 0])
    binary = [
        ("prob_f32", T(prob, "float32"), T(t, "int64"), {}),
        ("prob_f64", T(prob, "float64"), T(t, "int64"), {}),
        ("logit_f32", T(logit, "float32"), T(t, "int64"), {}),
        ("ignore-1", T(prob, "float32"), T(t_ign, "int64"), {"ignore_index": -1}),
        ("precision_tie_0.7_f32", T(p_exact, "float32"), T(t_exact, "int64"), {}),
        ("precision_tie_0.7_f64", T(p_exact, "float64"), T(t_exact, "int64"), {}),
        ("all_negative", T(prob, "float32"), T(np.zeros(N), "int64"), {}),
        ("all_positive", T(prob, "float32"), T(np.ones(N), "int64"), {}),
        ("one_tie_group", T(np.full(N, 0.5), "float32"), T(t, "int64"), {}),
        ("one_row", T(prob[:1], "float32"), T(np.ones(1), "int64"), {}),
        ("multidim_10x3", T(np.round(rng.random((10, 3)), 1), "float32"), T(rng.integers(0, 2, (10, 3)), "int64"), {}),
    ]
    for tag, pr, tt, extra in binary:
        gf._co_check_binary(pr.a, tt.a, extra.get("ignore_index"), [f for _, f in thr_forms])
        forms = thr_forms if tag in ("prob_f32", "logit_f32", "precision_tie_0.7_f32", "all_negative") else thr_forms[:2]
        add_fixed("binary", tag, pr, tt, 1, extra, forms)
    # min_* = 0 and 1: the boundaries
    pr, tt = T(prob, "float32"), T(t, "int64")
    add_fixed("binary", "prob_f32_bounds", pr, tt, 1, {}, thr_forms[:2], mins=(0.0, 1.0))

    C, N = 4, 30
    t = rng.integers(0, C, N)
    prob = np.round(rng.random((N, C)) * 0.7 + 0.3 * np.eye(C)[t], 2)
    logit = rng.normal(0, 1.5, (N, C)) + 1.2 * np.eye(C)[t]
    logit[:, 0] = np.where(logit[:, 0] >= 0, logit[:, 0] + 1.1, logit[:, 0] - 0.1)
    t_absent = np.where(t == 3, 1, t)  # class 3 never a target
    t_ign = np.where(rng.random(N) < 0.2, -1, t)
    p3, t3 = np.round(rng.random((12, 3, 2)), 1), rng.integers(0, 3, (12, 2))
    multiclass = [
        ("prob_f32", T(prob, "float32"), T(t, "int64"), C, {}),
        ("prob_f64", T(prob, "float64"), T(t, "int64"), C, {}),
        ("logit_f32", T(logit, "float32"), T(t, "int64"), C, {}),
        ("absent_class3", T(prob, "float32"), T(t_absent, "int64"), C, {}),
        ("ignore-1", T(prob, "float32"), T(t_ign, "int64"), C, {"ignore_index": -1}),
        ("ignore2_real_class", T(prob, "float32"), T(t, "int64"), C, {"ignore_index": 2}),
        ("all_targets_class0", T(prob, "float32"), T(np.zeros(N), "int64"), C, {}),
        ("multidim_12x3x2", T(p3, "float32"), T(t3, "int64"), 3, {}),
    ]
    for tag, pr, tt, nc, extra in multiclass:
        gf._cm_check_data("multiclass", pr.a, tt.a, extra.get("ignore_index"), [f for _, f in thr_forms])
        forms = thr_forms if tag in ("prob_f32", "logit_f32", "absent_class3") else thr_forms[:2]
        add_fixed("multiclass", tag, pr, tt, nc, extra, forms)

    L = 3
    tl = rng.integers(0, 2, (N, L))
    tl[:, 1] = 0  # a label without positives
    tl[:, 2] = np.where(rng.random(N) < 0.9, 1, tl[:, 2])
    tl_all1 = tl.copy()
    tl_all1[:, 0] = 1  # a label without negatives
    mprob = np.round(rng.random((N, L)) * 0.7 + 0.3 * tl, 2)
    mlogit = rng.normal(0, 1.5, (N, L)) + 1.5 * (2 * tl - 1)
    mlogit[:, 0] = np.where(mlogit[:, 0] >= 0, mlogit[:, 0] + 1.1, mlogit[:, 0] - 0.1)
    tl_ign = np.where(rng.random((N, L)) < 0.2, -1, tl)
    ml3, tl3 = np.round(rng.random((12, 3, 2)), 1), rng.integers(0, 2, (12, 3, 2))
    multilabel = [
        ("prob_f32", T(mprob, "float32"), T(tl, "int64"), L, {}),
        ("prob_f64", T(mprob, "float64"), T(tl, "int64"), L, {}),
        ("logit_f32", T(mlogit, "float32"), T(tl, "int64"), L, {}),
        ("ignore-1", T(mprob, "float32"), T(tl_ign, "int64"), L, {"ignore_index": -1}),
        ("label0_without_negatives", T(mprob, "float32"), T(tl_all1, "int64"), L, {}),
        ("multidim_12x3x2", T(ml3, "float32"), T(tl3, "int64"), 3, {}),
    ]
    for tag, pr, tt, nl, extra in multilabel:
        gf._cm_check_data("multilabel", pr.a, tt.a, extra.get("ignore_index"), [f for _, f in thr_forms])
        forms = thr_forms if tag in ("prob_f32", "logit_f32") else thr_forms[:2]
        add_fixed("multilabel", tag, pr, tt, nl, extra, forms)
    return S


def main():
    gen().write_and_report()


if __name__ == "__main__":
    main()
