#!/usr/bin/env python3
"""Golden fixtures for the task wrappers: accuracy(task=...), auroc(task=...), ... (TorchMetrics 1.5.2).

Regenerate (needs numpy, scipy, scikit-learn, and torch for the calibration bin edges, as gen_fixtures.py):

    /usr/bin/python3 tests/golden/gen_task_wrappers.py

Output: tests/golden/fixtures/task_wrappers.json, in the format of tests/golden/README.md.

Each case is a wrapper spec as a TorchMetrics user writes it -- the task and only what the wrapper requires -- so
the WRAPPER's defaults apply, not the task function's. Only two differ: the stat-score family (accuracy, precision,
recall, f1_score, fbeta_score, specificity, stat_scores, hamming_distance) averages "micro" where
multiclass_*/multilabel_* average "macro", and fbeta_score's beta defaults to 1.0 -- src/torchmetrics/functional/
classification/{accuracy,precision_recall,f_beta,specificity,stat_scores,hamming}.py (the wrappers' signatures).
Every expected value comes from scikit-learn (the curves through gen_fixtures.py's sklearn-based helpers, which
apply TorchMetrics' curve rules), with a hand-written numpy cross-check where the sklearn route is not literally the
TorchMetrics formula. TorchMetrics itself is not used.

Serialisation, the TorchMetrics input rules (sigmoid of logits, strict threshold) and the curve/calibration
helpers are gen_fixtures.py's, imported from beside this file.
"""
import os
import sys

import numpy as np
from sklearn import metrics as skm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as gf  # noqa: E402

SK = "sklearn.metrics"
# Thresholds (0.3, 0.5) and the calibration bin edges of 15 bins that have two decimals: probabilities with two
# decimals are moved 0.001 off them (gen_fixtures._nudge), so no case hangs on the last ulp of a comparison.
AVOID = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)


class Cases(gf.TreeSuite):
    """Task-wrapper cases; expected values may be numbers, arrays or curve tuples (nested lists)."""

    def case(self, name, metric, preds, target, expected, source):
        check_chunks(metric, preds.a)
        self.add(name, metric, {"preds": preds, "target": target}, expected, source)


def check_chunks(metric, p):
    """TorchMetrics decides logits-vs-probabilities per update(): every chunk the golden harness feeds (all rows,
    batches of 7, two halves) must decide alike. Multiclass labels come from argmax either way."""
    argmax_only = "task=multiclass" in metric and not metric.startswith(("auroc", "average_precision", "roc",
                                                                        "precision_recall_curve", "calibration",
                                                                        "hinge"))
    if p.dtype.kind != "f" or argmax_only:
        return
    decisions = {gf._is_logit_input(p[a:b]) for a, b in gf.harness_chunks(p.shape[0])}
    assert len(decisions) == 1, "logit detection differs between update() chunks"


def mcm_sums(t, yhat, labels):
    """[tp, fp, tn, fn, support] summed over one-vs-rest problems (sklearn.metrics.multilabel_confusion_matrix)."""
    m = skm.multilabel_confusion_matrix(t, yhat, labels=labels)  # [K, 2, 2] = [[tn, fp], [fn, tp]]
    tn, fp, fn, tp = m[:, 0, 0].sum(), m[:, 0, 1].sum(), m[:, 1, 0].sum(), m[:, 1, 1].sum()
    return np.array([tp, fp, tn, fn, tp + fn], np.int64)


def binary_stat_scores(t, yhat):
    tn, fp, fn, tp = skm.confusion_matrix(t, yhat, labels=[0, 1]).ravel()
    return np.array([tp, fp, tn, fn, tp + fn], np.int64)


# --------------------------------------------------------------------------------------------
# binary
# --------------------------------------------------------------------------------------------
def gen_binary(S, rng):
    N = 30
    t = rng.integers(0, 2, N)
    t[:2] = [0, 1]
    prob = gf._nudge(np.round(0.35 * t + 0.65 * rng.random(N), 2), AVOID)
    mag = 1.05 + np.abs(rng.normal(0, 1.5, N))  # every logit outside [0, 1]: each harness chunk sigmoids
    logit = np.round(np.where(rng.random(N) < np.where(t == 1, 0.75, 0.3), 1, -1) * mag, 3)
    lab = np.where(rng.random(N) < 0.75, t, 1 - t)
    t_ign = np.where(rng.random(N) < 0.2, -1, t)
    T = gf.T
    target = T(t, "int64")
    forms = {"prob_f32": T(prob, "float32"), "logit_f32": T(logit, "float32"), "labels_i64": T(lab, "int64")}

    def yhat(p, threshold=0.5):
        return gf.tm_threshold(p.a, threshold)  # rule: sigmoid if any value outside [0, 1]; p > threshold

    stat = [
        ("accuracy", lambda y, h: skm.accuracy_score(y, h), "accuracy_score"),
        ("precision", lambda y, h: skm.precision_score(y, h, zero_division=0), "precision_score"),
        ("recall", lambda y, h: skm.recall_score(y, h, zero_division=0), "recall_score"),
        ("f1_score", lambda y, h: skm.f1_score(y, h, zero_division=0), "f1_score"),
        ("fbeta_score", lambda y, h: skm.fbeta_score(y, h, beta=1.0, zero_division=0), "fbeta_score(beta=1.0)"),
        ("specificity", lambda y, h: skm.recall_score(y, h, pos_label=0, zero_division=0), "recall_score(pos_label=0)"),
        ("hamming_distance", lambda y, h: skm.hamming_loss(y, h), "hamming_loss"),
        ("stat_scores", binary_stat_scores, "confusion_matrix -> [tp, fp, tn, fn, tp + fn]"),
        ("confusion_matrix", lambda y, h: skm.confusion_matrix(y, h, labels=[0, 1]), "confusion_matrix"),
        ("jaccard_index", lambda y, h: skm.jaccard_score(y, h, zero_division=0), "jaccard_score"),
        ("matthews_corrcoef", lambda y, h: skm.matthews_corrcoef(y, h), "matthews_corrcoef"),
        ("cohen_kappa", lambda y, h: skm.cohen_kappa_score(y, h), "cohen_kappa_score"),
    ]
    for form, p in forms.items():
        h = yhat(p)
        for name, fn, src in stat:
            if form != "prob_f32" and name not in ("accuracy", "f1_score", "confusion_matrix", "matthews_corrcoef"):
                continue
            S.case(f"{name}__binary_{form}", f"{name}(task=binary)", p, target, fn(t, h), f"{SK}.{src}")
    p = forms["prob_f32"]
    h = yhat(p)
    # rule: the wrapper's own arguments reach binary_* (threshold, beta, ignore_index)
    S.case("fbeta_score_beta-2.0__binary_prob_f32", "fbeta_score(task=binary, beta=2.0)", p, target,
           skm.fbeta_score(t, h, beta=2.0), f"{SK}.fbeta_score(beta=2.0)")
    h3 = yhat(p, 0.3)
    S.case("accuracy_threshold-0.3__binary_prob_f32", "accuracy(task=binary, threshold=0.3)", p, target,
           skm.accuracy_score(t, h3), f"{SK}.accuracy_score")
    S.case("precision_threshold-0.3__binary_prob_f32", "precision(task=binary, threshold=0.3)", p, target,
           skm.precision_score(t, h3), f"{SK}.precision_score")
    # rule: arguments of the wrapper that binary_* does not take are ignored (num_classes, average, top_k)
    S.case("accuracy_num_classes-5_average-macro_ignored__binary_prob_f32",
           "accuracy(task=binary, num_classes=5, average=macro, top_k=3)", p, target, skm.accuracy_score(t, h),
           f"{SK}.accuracy_score")
    # ignore_index=-1: rows with target -1 dropped
    keep = t_ign != -1
    ti = T(t_ign, "int64")
    for name, fn, src in stat:
        if name in ("accuracy", "f1_score", "confusion_matrix", "specificity"):
            S.case(f"{name}_ignore-1__binary_prob_f32", f"{name}(task=binary, ignore_index=-1)", p, ti,
                   fn(t[keep], h[keep]), f"{SK}.{src} on the kept rows")
    # curves and calibration (probabilities; auroc also on logits, which TorchMetrics sigmoids)
    s = p.a
    S.case("auroc__binary_prob_f32", "auroc(task=binary)", p, target, skm.roc_auc_score(t, s), f"{SK}.roc_auc_score")
    S.case("auroc__binary_logit_f32", "auroc(task=binary)", forms["logit_f32"], target,
           skm.roc_auc_score(t, gf._sigmoid(forms["logit_f32"].a)), f"{SK}.roc_auc_score of the sigmoid")
    S.case("auroc_ignore-1__binary_prob_f32", "auroc(task=binary, ignore_index=-1)", p, ti,
           skm.roc_auc_score(t[keep], s[keep]), f"{SK}.roc_auc_score on the kept rows")
    S.case("auroc_max_fpr-0.5__binary_prob_f32", "auroc(task=binary, max_fpr=0.5)", p, target,
           skm.roc_auc_score(t, s, max_fpr=0.5), f"{SK}.roc_auc_score(max_fpr=0.5)")
    S.case("average_precision__binary_prob_f32", "average_precision(task=binary)", p, target,
           skm.average_precision_score(t, s), f"{SK}.average_precision_score")
    S.case("roc__binary_prob_f32", "roc(task=binary)", p, target, list(gf._co_roc_exact(t, s)),
           f"{SK}.roc_curve(drop_intermediate=False), first threshold 1.0 (gen_fixtures._co_roc_exact)")
    S.case("precision_recall_curve__binary_prob_f32", "precision_recall_curve(task=binary)", p, target,
           list(gf._co_prc_exact(t, s)), f"{SK}.precision_recall_curve (gen_fixtures._co_prc_exact)")
    conf, acc = gf._cal_binary_prepare(s, t, None)
    gf._cal_margin(conf, 15, False)
    ce = gf.calibration_expected(conf, acc, 15, "l1")
    assert gf._cal_sklearn_check(conf, acc, 15, "l1", ce)
    S.case("calibration_error__binary_prob_f32", "calibration_error(task=binary)", p, target, ce,
           "sklearn.calibration.calibration_curve bin means (15 bins), l1")
    # rule: binary_hinge_loss: mean(clamp(1 - y * preds, 0)) with y = 2 * target - 1 -- hinge.py
    S.case("hinge_loss__binary_prob_f32", "hinge_loss(task=binary)", p, target, skm.hinge_loss(t, s.astype(np.float64)),
           f"{SK}.hinge_loss")
    # one row
    p1, t1 = T([0.7], "float32"), T([1], "int64")
    S.case("accuracy__binary_one_row", "accuracy(task=binary)", p1, t1, 1.0, f"{SK}.accuracy_score")
    S.case("precision__binary_one_row", "precision(task=binary)", p1, t1,
           skm.precision_score([1], [1]), f"{SK}.precision_score")
    S.case("confusion_matrix__binary_one_row", "confusion_matrix(task=binary)", p1, t1,
           skm.confusion_matrix([1], [1], labels=[0, 1]), f"{SK}.confusion_matrix")


# --------------------------------------------------------------------------------------------
# multiclass
# --------------------------------------------------------------------------------------------
def gen_multiclass(S, rng):
    N, C = 30, 4
    T = gf.T
    t = rng.integers(0, C, N)
    t[:C] = np.arange(C)
    prob = gf._nudge(gf.mc_scores(rng, t, C).reshape(-1), AVOID).reshape(N, C)  # distinct top 3 per row
    logit = gf.mc_scores(rng, t, C, logits=True)
    lab = np.where(rng.random(N) < 0.6, t, rng.integers(0, C, N))
    target = T(t, "int64")
    forms = {"prob_f32": T(prob, "float32"), "logit_f32": T(logit, "float32"), "labels_i64": T(lab, "int64")}
    labels = list(range(C))
    args = f"task=multiclass, num_classes={C}"

    def yhat(p):
        return p.a.argmax(axis=1) if p.a.ndim == 2 else p.a.astype(np.int64)

    # rule: the wrappers' default average is "micro": one pooled tp/fp/tn/fn over the one-vs-rest problems
    micro = [
        ("accuracy", lambda y, h: skm.accuracy_score(y, h), "accuracy_score"),
        ("precision", lambda y, h: skm.precision_score(y, h, average="micro", labels=labels), "precision_score(micro)"),
        ("recall", lambda y, h: skm.recall_score(y, h, average="micro", labels=labels), "recall_score(micro)"),
        ("f1_score", lambda y, h: skm.f1_score(y, h, average="micro", labels=labels), "f1_score(micro)"),
        ("fbeta_score", lambda y, h: skm.fbeta_score(y, h, beta=1.0, average="micro", labels=labels),
         "fbeta_score(beta=1.0, micro)"),
        ("specificity", lambda y, h: gf.sdiv(mcm_sums(y, h, labels)[2], mcm_sums(y, h, labels)[[1, 2]].sum()),
         "multilabel_confusion_matrix: pooled tn / (tn + fp)"),
        ("hamming_distance", lambda y, h: skm.hamming_loss(y, h), "hamming_loss"),
        ("stat_scores", lambda y, h: mcm_sums(y, h, labels), "multilabel_confusion_matrix summed"),
    ]
    for form, p in forms.items():
        h = yhat(p)
        for name, fn, src in micro:
            if form != "prob_f32" and name not in ("accuracy", "precision", "stat_scores"):
                continue
            S.case(f"{name}__multiclass_{form}", f"{name}({args})", p, target, fn(t, h), f"{SK}.{src}")
    p = forms["prob_f32"]
    h = yhat(p)
    # micro precision, recall and accuracy coincide for single-label multiclass; cross-check by hand
    gf._close(skm.precision_score(t, h, average="micro"), np.mean(t == h))
    S.case("confusion_matrix__multiclass_prob_f32", f"confusion_matrix({args})", p, target,
           skm.confusion_matrix(t, h, labels=labels), f"{SK}.confusion_matrix")
    S.case("confusion_matrix_normalize-true__multiclass_prob_f32", f"confusion_matrix({args}, normalize=true)", p,
           target, skm.confusion_matrix(t, h, labels=labels, normalize="true"), f"{SK}.confusion_matrix(normalize='true')")
    # rule: jaccard_index's default average stays "macro" (the wrapper's and the task function's)
    S.case("jaccard_index__multiclass_prob_f32", f"jaccard_index({args})", p, target,
           skm.jaccard_score(t, h, average="macro", labels=labels), f"{SK}.jaccard_score(macro)")
    S.case("matthews_corrcoef__multiclass_prob_f32", f"matthews_corrcoef({args})", p, target,
           skm.matthews_corrcoef(t, h), f"{SK}.matthews_corrcoef")
    S.case("cohen_kappa__multiclass_prob_f32", f"cohen_kappa({args})", p, target, skm.cohen_kappa_score(t, h),
           f"{SK}.cohen_kappa_score")
    S.case("cohen_kappa_weights-quadratic__multiclass_prob_f32", f"cohen_kappa({args}, weights=quadratic)", p, target,
           skm.cohen_kappa_score(t, h, weights="quadratic"), f"{SK}.cohen_kappa_score(weights='quadratic')")
    S.case("exact_match__multiclass_prob_f32", f"exact_match({args})", p, target, skm.accuracy_score(t, h),
           f"{SK}.accuracy_score (one position per sample)")
    # rule: the wrapper passes average and top_k on to multiclass_*
    S.case("accuracy_top_k-2__multiclass_prob_f32", f"accuracy({args}, top_k=2)", p, target,
           skm.top_k_accuracy_score(t, p.a, k=2, labels=labels), f"{SK}.top_k_accuracy_score(k=2)")
    S.case("precision_average-macro__multiclass_prob_f32", f"precision({args}, average=macro)", p, target,
           skm.precision_score(t, h, average="macro", labels=labels, zero_division=0), f"{SK}.precision_score(macro)")
    S.case("recall_average-weighted__multiclass_prob_f32", f"recall({args}, average=weighted)", p, target,
           skm.recall_score(t, h, average="weighted", labels=labels, zero_division=0),
           f"{SK}.recall_score(weighted)")
    S.case("f1_score_average-none__multiclass_prob_f32", f"f1_score({args}, average=none)", p, target,
           skm.f1_score(t, h, average=None, labels=labels, zero_division=0), f"{SK}.f1_score(average=None)")
    # rule: arguments multiclass_* does not take are ignored (threshold, num_labels)
    S.case("accuracy_threshold-0.9_num_labels-7_ignored__multiclass_prob_f32",
           f"accuracy({args}, threshold=0.9, num_labels=7)", p, target, skm.accuracy_score(t, h),
           f"{SK}.accuracy_score")
    # ignore_index: -1, and a real class (its rows dropped)
    t_ign = np.where(rng.random(N) < 0.2, -1, t)
    keep = t_ign != -1
    ti = T(t_ign, "int64")
    S.case("accuracy_ignore-1__multiclass_prob_f32", f"accuracy({args}, ignore_index=-1)", p, ti,
           skm.accuracy_score(t[keep], h[keep]), f"{SK}.accuracy_score on the kept rows")
    S.case("f1_score_ignore-1__multiclass_prob_f32", f"f1_score({args}, ignore_index=-1)", p, ti,
           skm.f1_score(t[keep], h[keep], average="micro", labels=labels), f"{SK}.f1_score(micro) on the kept rows")
    S.case("confusion_matrix_ignore-1__multiclass_prob_f32", f"confusion_matrix({args}, ignore_index=-1)", p, ti,
           skm.confusion_matrix(t[keep], h[keep], labels=labels), f"{SK}.confusion_matrix on the kept rows")
    k2 = t != 2
    S.case("recall_ignore2__multiclass_prob_f32", f"recall({args}, ignore_index=2)", p, target,
           skm.recall_score(t[k2], h[k2], average="micro", labels=labels), f"{SK}.recall_score(micro) on the kept rows")
    # an absent class: 3 is neither a target nor a prediction
    t_abs = np.where(t == 3, 1, t)
    l_abs = np.where(lab == 3, 0, lab)
    pa, ta = T(l_abs, "int64"), T(t_abs, "int64")
    present = sorted(set(t_abs) | set(l_abs))
    assert 3 not in present
    S.case("accuracy__multiclass_absent_class3", f"accuracy({args})", pa, ta, skm.accuracy_score(t_abs, l_abs),
           f"{SK}.accuracy_score")
    S.case("precision__multiclass_absent_class3", f"precision({args})", pa, ta,
           skm.precision_score(t_abs, l_abs, average="micro", labels=labels), f"{SK}.precision_score(micro)")
    # rule: macro jaccard leaves out classes absent from target and preds -- functional/classification/jaccard.py
    # (_jaccard_index_reduce: weights 0 where tp + fp + fn == 0)
    S.case("jaccard_index__multiclass_absent_class3", f"jaccard_index({args})", pa, ta,
           skm.jaccard_score(t_abs, l_abs, average="macro", labels=present),
           f"{SK}.jaccard_score(macro) over the present classes")
    # curves, calibration, hinge (probabilities)
    s = p.a
    per_class_auc = [skm.roc_auc_score(t == c, s[:, c]) for c in labels]
    per_class_ap = [skm.average_precision_score(t == c, s[:, c]) for c in labels]
    S.case("auroc__multiclass_prob_f32", f"auroc({args})", p, target, np.mean(per_class_auc),
           f"{SK}.roc_auc_score per class (one-vs-rest), macro mean")
    S.case("auroc_average-none__multiclass_prob_f32", f"auroc({args}, average=none)", p, target, per_class_auc,
           f"{SK}.roc_auc_score per class (one-vs-rest)")
    S.case("average_precision__multiclass_prob_f32", f"average_precision({args})", p, target, np.mean(per_class_ap),
           f"{SK}.average_precision_score per class (one-vs-rest), macro mean")
    curves = [gf._co_roc_exact((t == c).astype(np.int64), s[:, c]) for c in labels]
    S.case("roc__multiclass_prob_f32", f"roc({args})", p, target, [[c[i] for c in curves] for i in range(3)],
           f"{SK}.roc_curve per class (gen_fixtures._co_roc_exact)")
    prcs = [gf._co_prc_exact((t == c).astype(np.int64), s[:, c]) for c in labels]
    S.case("precision_recall_curve__multiclass_prob_f32", f"precision_recall_curve({args})", p, target,
           [[c[i] for c in prcs] for i in range(3)], f"{SK}.precision_recall_curve per class")
    conf, acc = gf._cal_multiclass_prepare(s, t, None)
    gf._cal_margin(conf, 15, False)
    ce = gf.calibration_expected(conf, acc, 15, "l1")
    assert gf._cal_sklearn_check(conf, acc, 15, "l1", ce)
    S.case("calibration_error__multiclass_prob_f32", f"calibration_error({args})", p, target, ce,
           "sklearn.calibration.calibration_curve bin means of the top-1 confidence (15 bins), l1")
    # rule: crammer-singer: mean(clamp(1 - (p[y] - max_{j != y} p[j]), 0)) -- hinge.py
    S.case("hinge_loss__multiclass_prob_f32", f"hinge_loss({args})", p, target,
           skm.hinge_loss(t, s.astype(np.float64), labels=labels), f"{SK}.hinge_loss (Crammer-Singer)")
    # one row
    p1, t1 = T([[0.1, 0.6, 0.2, 0.1]], "float32"), T([1], "int64")
    S.case("accuracy__multiclass_one_row", f"accuracy({args})", p1, t1, 1.0, f"{SK}.accuracy_score")
    S.case("f1_score__multiclass_one_row", f"f1_score({args})", p1, t1,
           skm.f1_score([1], [1], average="micro", labels=labels), f"{SK}.f1_score(micro)")
    S.case("stat_scores__multiclass_one_row", f"stat_scores({args})", p1, t1, mcm_sums([1], [1], labels),
           f"{SK}.multilabel_confusion_matrix summed")
    # exact_match over extra dims: a sample matches when all its positions do
    while True:  # no argmax ties
        p3 = T(np.round(rng.random((12, C, 2)), 3), "float32")
        top2 = np.sort(p3.a, axis=1)[:, -2:, :]
        if np.all(top2[:, 1, :] > top2[:, 0, :]):
            break
    t3 = rng.integers(0, C, (12, 2))
    h3 = p3.a.argmax(axis=1)
    hand = np.mean(np.all(h3 == t3, axis=1))
    # a sample as one multilabel-indicator row: sklearn's subset accuracy
    ind = lambda x: np.concatenate([np.eye(C, dtype=np.int64)[x[:, j]] for j in range(x.shape[1])], axis=1)
    sk = skm.accuracy_score(ind(t3), ind(h3))
    gf._close(sk, hand)
    S.case("exact_match__multiclass_multidim_12x2", f"exact_match({args})", p3, T(t3, "int64"), sk,
           f"{SK}.accuracy_score (subset accuracy of one-hot positions)")


# --------------------------------------------------------------------------------------------
# multilabel
# --------------------------------------------------------------------------------------------
def gen_multilabel(S, rng):
    N, L = 30, 3
    T = gf.T
    t = rng.integers(0, 2, (N, L))
    t[:2] = [[0, 0, 0], [1, 1, 1]]
    prob = np.round(0.35 * t + 0.65 * rng.random((N, L)), 2)
    prob = gf._nudge(prob.reshape(-1), AVOID).reshape(N, L)
    mag = 1.05 + np.abs(rng.normal(0, 1.5, (N, L)))
    logit = np.round(np.where(rng.random((N, L)) < np.where(t == 1, 0.75, 0.3), 1, -1) * mag, 3)
    lab = np.where(rng.random((N, L)) < 0.75, t, 1 - t)
    target = T(t, "int64")
    forms = {"prob_f32": T(prob, "float32"), "logit_f32": T(logit, "float32"), "labels_i64": T(lab, "int64")}
    args = f"task=multilabel, num_labels={L}"

    def yhat(p, threshold=0.5):
        return gf.tm_threshold(p.a, threshold)

    # rule: micro over multilabel = every (sample, label) element pooled
    micro = [
        ("accuracy", lambda y, h: skm.accuracy_score(y.ravel(), h.ravel()), "accuracy_score of the flattened labels"),
        ("precision", lambda y, h: skm.precision_score(y, h, average="micro", zero_division=0), "precision_score(micro)"),
        ("recall", lambda y, h: skm.recall_score(y, h, average="micro", zero_division=0), "recall_score(micro)"),
        ("f1_score", lambda y, h: skm.f1_score(y, h, average="micro", zero_division=0), "f1_score(micro)"),
        ("fbeta_score", lambda y, h: skm.fbeta_score(y, h, beta=1.0, average="micro", zero_division=0),
         "fbeta_score(beta=1.0, micro)"),
        ("specificity", lambda y, h: skm.recall_score(y.ravel(), h.ravel(), pos_label=0),
         "recall_score(pos_label=0) of the flattened labels"),
        ("hamming_distance", lambda y, h: skm.hamming_loss(y, h), "hamming_loss"),
        ("stat_scores", lambda y, h: binary_stat_scores(y.ravel(), h.ravel()), "confusion_matrix of the flattened labels"),
    ]
    for form, p in forms.items():
        h = yhat(p)
        for name, fn, src in micro:
            if form != "prob_f32" and name not in ("accuracy", "f1_score", "hamming_distance"):
                continue
            S.case(f"{name}__multilabel_{form}", f"{name}({args})", p, target, fn(t, h), f"{SK}.{src}")
    p = forms["prob_f32"]
    h = yhat(p)
    gf._close(skm.f1_score(t, h, average="micro"), skm.f1_score(t.ravel(), h.ravel()))
    S.case("confusion_matrix__multilabel_prob_f32", f"confusion_matrix({args})", p, target,
           skm.multilabel_confusion_matrix(t, h), f"{SK}.multilabel_confusion_matrix")
    S.case("jaccard_index__multilabel_prob_f32", f"jaccard_index({args})", p, target,
           skm.jaccard_score(t, h, average="macro", zero_division=0), f"{SK}.jaccard_score(macro)")
    # rule: multilabel MCC is the MCC of the summed per-label 2x2 matrices -- matthews_corrcoef.py
    S.case("matthews_corrcoef__multilabel_prob_f32", f"matthews_corrcoef({args})", p, target,
           skm.matthews_corrcoef(t.ravel(), h.ravel()), f"{SK}.matthews_corrcoef of the flattened labels")
    S.case("exact_match__multilabel_prob_f32", f"exact_match({args})", p, target, skm.accuracy_score(t, h),
           f"{SK}.accuracy_score (subset accuracy)")
    S.case("precision_average-macro__multilabel_prob_f32", f"precision({args}, average=macro)", p, target,
           skm.precision_score(t, h, average="macro", zero_division=0), f"{SK}.precision_score(macro)")
    h3 = yhat(p, 0.3)
    S.case("f1_score_threshold-0.3__multilabel_prob_f32", f"f1_score({args}, threshold=0.3)", p, target,
           skm.f1_score(t, h3, average="micro"), f"{SK}.f1_score(micro)")
    S.case("accuracy_num_classes-9_top_k-4_ignored__multilabel_prob_f32",
           f"accuracy({args}, num_classes=9, top_k=4)", p, target, skm.accuracy_score(t.ravel(), h.ravel()),
           f"{SK}.accuracy_score of the flattened labels")
    # ignore_index=-1: ignored elements dropped from the pooled counts
    t_ign = np.where(rng.random((N, L)) < 0.2, -1, t)
    keep = (t_ign != -1).ravel()
    ti = T(t_ign, "int64")
    S.case("accuracy_ignore-1__multilabel_prob_f32", f"accuracy({args}, ignore_index=-1)", p, ti,
           skm.accuracy_score(t.ravel()[keep], h.ravel()[keep]), f"{SK}.accuracy_score of the kept elements")
    S.case("recall_ignore-1__multilabel_prob_f32", f"recall({args}, ignore_index=-1)", p, ti,
           skm.recall_score(t.ravel()[keep], h.ravel()[keep]), f"{SK}.recall_score of the kept elements")
    # curves
    s = p.a
    S.case("auroc__multilabel_prob_f32", f"auroc({args})", p, target, skm.roc_auc_score(t, s, average="macro"),
           f"{SK}.roc_auc_score(average='macro')")
    S.case("auroc__multilabel_logit_f32", f"auroc({args})", forms["logit_f32"], target,
           skm.roc_auc_score(t, gf._sigmoid(forms["logit_f32"].a), average="macro"),
           f"{SK}.roc_auc_score(average='macro') of the sigmoid")
    S.case("auroc_average-weighted__multilabel_prob_f32", f"auroc({args}, average=weighted)", p, target,
           skm.roc_auc_score(t, s, average="weighted"), f"{SK}.roc_auc_score(average='weighted')")
    S.case("average_precision__multilabel_prob_f32", f"average_precision({args})", p, target,
           skm.average_precision_score(t, s, average="macro"), f"{SK}.average_precision_score(average='macro')")
    curves = [gf._co_roc_exact(t[:, j], s[:, j]) for j in range(L)]
    S.case("roc__multilabel_prob_f32", f"roc({args})", p, target, [[c[i] for c in curves] for i in range(3)],
           f"{SK}.roc_curve per label (gen_fixtures._co_roc_exact)")
    prcs = [gf._co_prc_exact(t[:, j], s[:, j]) for j in range(L)]
    S.case("precision_recall_curve__multilabel_prob_f32", f"precision_recall_curve({args})", p, target,
           [[c[i] for c in prcs] for i in range(3)], f"{SK}.precision_recall_curve per label")
    # one row
    p1, t1 = T([[0.9, 0.2, 0.6]], "float32"), T([[1, 0, 0]], "int64")
    h1 = yhat(p1)
    S.case("accuracy__multilabel_one_row", f"accuracy({args})", p1, t1, skm.accuracy_score([1, 0, 0], h1.ravel()),
           f"{SK}.accuracy_score of the flattened labels")
    S.case("hamming_distance__multilabel_one_row", f"hamming_distance({args})", p1, t1, skm.hamming_loss(t1.a, h1),
           f"{SK}.hamming_loss")


def main():
    S = Cases("task_wrappers.json")
    rng = np.random.default_rng(20241)
    gen_binary(S, rng)
    gen_multiclass(S, rng)
    gen_multilabel(S, rng)
    path, n = S.write()
    print(f"{os.path.relpath(path, gf.HERE)}: {n} cases, {os.path.getsize(path) // 1024} KiB")


if __name__ == "__main__":
    main()
