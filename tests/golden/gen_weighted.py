#!/usr/bin/env python3
"""Golden fixtures for sample weights (the optional `weight` input, one float per row).

Regenerate (needs numpy and scikit-learn, as gen_fixtures.py):

    /usr/bin/python3 tests/golden/gen_weighted.py

Output: tests/golden/fixtures/weighted.json, in the format of tests/golden/README.md.

TorchMetrics has no sample weights; scikit-learn has `sample_weight` on these metrics, and Tally's weighted metric
is TorchMetrics' formula over weighted counts (row i counts as w_i rows). The data keep every class in both
target and prediction, so TorchMetrics' rules for absent classes (where it and sklearn part ways) never apply and
each expected value is one sklearn call with `sample_weight`. Each is cross-checked against the unweighted sklearn
value on rows repeated by integer weights (the definition of a weight), with integer weights first and then the
fractional ones the fixture uses. TorchMetrics itself is not used.
"""
import os
import sys

import numpy as np
from sklearn import metrics as skm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_classification_extra as gx  # noqa: E402
import gen_fixtures as gf  # noqa: E402
from gen_fixtures import T  # noqa: E402

SK = "sklearn.metrics"


def weights(rng, n, zeros=2):
    """Fractional weights in [0.1, 3) with `zeros` rows weighted 0 (dropped)."""
    w = np.round(rng.uniform(0.1, 3.0, n), 3)
    w[rng.choice(n, zeros, replace=False)] = 0.0
    return w


def check_repeat(fn, args_rows, w_int, **kw):
    """fn(*rows, sample_weight=w) equals fn on rows repeated w times (integer w)."""
    rep = [np.repeat(a, w_int, axis=0) for a in args_rows]
    a = fn(*args_rows, sample_weight=w_int.astype(np.float64), **kw)
    b = fn(*rep, **kw)
    gf._close(a, b, 1e-9)


def add(S, name, metric, inputs, expected, source, rtol=1e-9, atol=1e-12):
    S.add(name, metric, inputs, expected, source, rtol, atol)


def gen_binary(S, rng):
    n = 40
    t = rng.integers(0, 2, n)
    t[:2] = [0, 1]
    p = gf._nudge(np.round(0.35 * t + 0.65 * rng.random(n), 2))
    yhat = gf.tm_threshold(p.astype(np.float32), 0.5)
    assert set(yhat) == {0, 1}
    w = weights(rng, n)
    w_int = rng.integers(0, 4, n)
    ins = {"preds": T(p, "float32"), "target": T(t, "int64"), "weight": T(w, "float32")}
    w = ins["weight"].f64
    scores = {
        "binary_accuracy": lambda y, h, **k: skm.accuracy_score(y, h, **k),
        "binary_precision": lambda y, h, **k: skm.precision_score(y, h, **k),
        "binary_recall": lambda y, h, **k: skm.recall_score(y, h, **k),
        "binary_f1_score": lambda y, h, **k: skm.f1_score(y, h, **k),
        "binary_fbeta_score(beta=2.0)": lambda y, h, **k: skm.fbeta_score(y, h, beta=2.0, **k),
        "binary_specificity": lambda y, h, **k: skm.recall_score(y, h, pos_label=0, **k),
        "binary_jaccard_index": lambda y, h, **k: skm.jaccard_score(y, h, **k),
        "binary_matthews_corrcoef": lambda y, h, **k: skm.matthews_corrcoef(y, h, **k),
        "binary_cohen_kappa": lambda y, h, **k: skm.cohen_kappa_score(y, h, **k),
        "binary_hamming_distance": lambda y, h, **k: skm.hamming_loss(y, h, **k),
    }
    for metric, fn in scores.items():
        check_repeat(fn, [t, yhat], w_int)
        add(S, f"{metric}__weighted", metric, ins, fn(t, yhat, sample_weight=w), f"{SK} with sample_weight")
    cm = lambda y, h, **k: skm.confusion_matrix(y, h, labels=[0, 1], **k)  # noqa: E731
    check_repeat(cm, [t, yhat], w_int)
    add(S, "binary_confusion_matrix__weighted", "binary_confusion_matrix", ins, cm(t, yhat, sample_weight=w),
        f"{SK}.confusion_matrix(sample_weight)")
    add(S, "binary_confusion_matrix_normalize-true__weighted", "binary_confusion_matrix(normalize=true)", ins,
        skm.confusion_matrix(t, yhat, labels=[0, 1], sample_weight=w, normalize="true"),
        f"{SK}.confusion_matrix(sample_weight, normalize='true')")
    tn, fp, fn_, tp = cm(t, yhat, sample_weight=w).ravel()
    add(S, "binary_stat_scores__weighted", "binary_stat_scores", ins, [tp, fp, tn, fn_, tp + fn_],
        f"{SK}.confusion_matrix(sample_weight) as [tp, fp, tn, fn, support]")
    # Zero weights drop their rows: the value on the other rows alone.
    keep = w > 0
    add(S, "binary_f1_score__zero_weights_drop_rows", "binary_f1_score", ins, skm.f1_score(t[keep], yhat[keep],
        sample_weight=w[keep]), f"{SK}.f1_score on the rows of non-zero weight")
    # All weights equal: the unweighted value.
    ones = {"preds": ins["preds"], "target": ins["target"], "weight": T(np.full(n, 2.5), "float64")}
    add(S, "binary_accuracy__equal_weights", "binary_accuracy", ones, skm.accuracy_score(t, yhat),
        f"{SK}.accuracy_score (equal weights change nothing)")
    # Bad weights are a deferred error naming the input.
    for tag, bad in (("negative", -1.0), ("nan", np.nan), ("inf", np.inf)):
        wb = w.copy()
        wb[3] = bad
        add(S, f"binary_accuracy__{tag}_weight", "binary_accuracy",
            {"preds": ins["preds"], "target": ins["target"], "weight": T(wb, "float64")},
            gf.Refused("negative, NaN or infinite weights"), "refused: a weight must be finite and >= 0")


def gen_multiclass(S, rng):
    n, c = 60, 4
    t = np.concatenate([np.arange(c), rng.integers(0, c, n - c)])
    scores, yhat = None, None
    while yhat is None or len(set(yhat)) < c:
        scores = gf.mc_scores(rng, t, c)
        yhat = scores.argmax(1)
    w = weights(rng, n, zeros=3)
    w_int = rng.integers(0, 4, n)
    ins = {"preds": T(scores, "float32"), "target": T(t, "int64"), "weight": T(w, "float64")}
    labels = list(range(c))
    fams = {
        "precision": skm.precision_score,
        "recall": skm.recall_score,
        "f1_score": skm.f1_score,
        "jaccard_index": skm.jaccard_score,
    }
    for short, fn in fams.items():
        for avg in ("micro", "macro", "weighted", "none"):
            if short == "jaccard_index" and avg == "micro":
                continue
            sk_avg = None if avg == "none" else avg
            f = lambda y, h, fn=fn, sk_avg=sk_avg, **k: fn(y, h, labels=labels, average=sk_avg, **k)  # noqa: E731
            check_repeat(f, [t, yhat], w_int)
            metric = f"multiclass_{short}(num_classes={c}, average={avg})"
            add(S, f"multiclass_{short}_average-{avg}__weighted", metric, ins, f(t, yhat, sample_weight=w),
                f"{SK}.{fn.__name__}(average={sk_avg!r}, sample_weight)")
    # Accuracy: micro is sklearn's accuracy, macro the mean per-class recall (balanced accuracy).
    add(S, "multiclass_accuracy_average-micro__weighted", f"multiclass_accuracy(num_classes={c}, average=micro)", ins,
        skm.accuracy_score(t, yhat, sample_weight=w), f"{SK}.accuracy_score(sample_weight)")
    add(S, "multiclass_accuracy__weighted", f"multiclass_accuracy(num_classes={c})", ins,
        skm.recall_score(t, yhat, labels=labels, average="macro", sample_weight=w),
        f"{SK}.recall_score(average='macro', sample_weight): TorchMetrics' macro accuracy is per-class recall")
    for kw, wts in (("", None), ("(weights=linear)", "linear"), ("(weights=quadratic)", "quadratic")):
        f = lambda y, h, wts=wts, **k: skm.cohen_kappa_score(y, h, weights=wts, **k)  # noqa: E731
        check_repeat(f, [t, yhat], w_int)
        args = f"num_classes={c}" + (f", weights={wts}" if wts else "")
        add(S, f"multiclass_cohen_kappa{kw}__weighted", f"multiclass_cohen_kappa({args})", ins,
            f(t, yhat, sample_weight=w), f"{SK}.cohen_kappa_score(weights={wts!r}, sample_weight)")
    check_repeat(skm.matthews_corrcoef, [t, yhat], w_int)
    add(S, "multiclass_matthews_corrcoef__weighted", f"multiclass_matthews_corrcoef(num_classes={c})", ins,
        skm.matthews_corrcoef(t, yhat, sample_weight=w), f"{SK}.matthews_corrcoef(sample_weight)")
    add(S, "multiclass_confusion_matrix__weighted", f"multiclass_confusion_matrix(num_classes={c})", ins,
        skm.confusion_matrix(t, yhat, labels=labels, sample_weight=w), f"{SK}.confusion_matrix(sample_weight)")
    add(S, "multiclass_confusion_matrix_normalize-pred__weighted",
        f"multiclass_confusion_matrix(num_classes={c}, normalize=pred)", ins,
        skm.confusion_matrix(t, yhat, labels=labels, sample_weight=w, normalize="pred"),
        f"{SK}.confusion_matrix(normalize='pred', sample_weight)")
    # Integer label preds and ignore_index: ignored rows count nowhere, whatever their weight.
    t_ign = t.copy()
    t_ign[rng.choice(np.arange(c, n), 6, replace=False)] = -1
    kept = t_ign >= 0
    ins_l = {"preds": T(yhat, "int64"), "target": T(t_ign, "int64"), "weight": T(w, "float64")}
    add(S, "multiclass_f1_score_ignore_index--1__labels_weighted",
        f"multiclass_f1_score(num_classes={c}, average=macro, ignore_index=-1)", ins_l,
        skm.f1_score(t[kept], yhat[kept], labels=labels, average="macro", sample_weight=w[kept]),
        f"{SK}.f1_score(average='macro', sample_weight) on the rows not ignored")
    # Exact match over (N, M) positions: a sample counts with its weight when every position matches.
    m = 3
    t2 = rng.integers(0, c, (n, m))
    h2 = np.where(rng.random((n, m)) < 0.8, t2, rng.integers(0, c, (n, m)))
    match = (h2 == t2).all(1)
    add(S, "multiclass_exact_match__weighted", f"multiclass_exact_match(num_classes={c})",
        {"preds": T(h2, "int64"), "target": T(t2, "int64"), "weight": T(w, "float64")},
        skm.accuracy_score(np.ones(n), match.astype(np.int64), sample_weight=w),
        f"{SK}.accuracy_score(sample_weight) of the per-sample all-positions match")


def gen_multilabel(S, rng):
    n, L = 50, 3
    t = rng.integers(0, 2, (n, L))
    p = gf._nudge(np.round(0.3 * t + 0.7 * rng.random((n, L)), 2))
    yhat = gf.tm_threshold(p.astype(np.float32), 0.5)
    w = weights(rng, n)
    w_int = rng.integers(0, 4, n)
    ins = {"preds": T(p, "float32"), "target": T(t, "int64"), "weight": T(w, "float64")}
    for short, fn in (("precision", skm.precision_score), ("recall", skm.recall_score), ("f1_score", skm.f1_score)):
        for avg in ("micro", "macro", "weighted"):
            f = lambda y, h, fn=fn, avg=avg, **k: fn(y, h, average=avg, **k)  # noqa: E731
            check_repeat(f, [t, yhat], w_int)
            add(S, f"multilabel_{short}_average-{avg}__weighted",
                f"multilabel_{short}(num_labels={L}, average={avg})", ins, f(t, yhat, sample_weight=w),
                f"{SK}.{fn.__name__}(average={avg!r}, sample_weight)")
    check_repeat(skm.hamming_loss, [t, yhat], w_int)
    add(S, "multilabel_hamming_distance_average-micro__weighted",
        f"multilabel_hamming_distance(num_labels={L}, average=micro)", ins,
        skm.hamming_loss(t, yhat, sample_weight=w), f"{SK}.hamming_loss(sample_weight)")
    check_repeat(skm.accuracy_score, [t, yhat], w_int)
    add(S, "multilabel_exact_match__weighted", f"multilabel_exact_match(num_labels={L})", ins,
        skm.accuracy_score(t, yhat, sample_weight=w), f"{SK}.accuracy_score(sample_weight): subset accuracy")
    per_label = [skm.accuracy_score(t[:, j], yhat[:, j], sample_weight=w) for j in range(L)]
    add(S, "multilabel_accuracy__weighted", f"multilabel_accuracy(num_labels={L})", ins, np.mean(per_label),
        f"{SK}.accuracy_score(sample_weight) per label, averaged (macro)")
    mcm = skm.multilabel_confusion_matrix(t, yhat, sample_weight=w)
    add(S, "multilabel_confusion_matrix__weighted", f"multilabel_confusion_matrix(num_labels={L})", ins, mcm,
        f"{SK}.multilabel_confusion_matrix(sample_weight)")


def gen_regression(S, rng):
    n = 45
    t = np.round(rng.normal(2.0, 1.5, n), 3)
    t[np.abs(t) < 0.05] = 0.5  # sklearn's MAPE eps (float64 eps) and TorchMetrics' (1.17e-6) never bind
    p = np.round(t + rng.normal(0, 0.7, n), 3)
    w = weights(rng, n)
    w_int = rng.integers(0, 4, n)
    ins = {"preds": T(p, "float64"), "target": T(t, "float64"), "weight": T(w, "float64")}
    regs = {
        "mean_squared_error": skm.mean_squared_error,
        "mean_absolute_error": skm.mean_absolute_error,
        "mean_absolute_percentage_error": skm.mean_absolute_percentage_error,
    }
    for metric, fn in regs.items():
        check_repeat(fn, [t, p], w_int)
        add(S, f"{metric}__weighted", metric, ins, fn(t, p, sample_weight=w), f"{SK}.{fn.__name__}(sample_weight)")
    f = lambda y, h, **k: np.sqrt(skm.mean_squared_error(y, h, **k))  # noqa: E731
    add(S, "mean_squared_error_squared-false__weighted", "mean_squared_error(squared=false)", ins,
        f(t, p, sample_weight=w), f"sqrt of {SK}.mean_squared_error(sample_weight)")
    # (N, 2) outputs: raw per-output values, and num_outputs=1 averaging every element.
    t2 = np.round(rng.normal(0.0, 2.0, (n, 2)), 3)
    p2 = np.round(t2 + rng.normal(0, 0.5, (n, 2)), 3)
    ins2 = {"preds": T(p2, "float32"), "target": T(t2, "float32"), "weight": T(w, "float32")}
    t2, p2, w2 = ins2["target"].f64, ins2["preds"].f64, ins2["weight"].f64
    add(S, "mean_squared_error_num_outputs-2__weighted", "mean_squared_error(num_outputs=2)", ins2,
        skm.mean_squared_error(t2, p2, sample_weight=w2, multioutput="raw_values"),
        f"{SK}.mean_squared_error(multioutput='raw_values', sample_weight)", rtol=1e-6, atol=1e-9)
    add(S, "mean_absolute_error__2d_weighted", "mean_absolute_error", ins2,
        skm.mean_absolute_error(t2, p2, sample_weight=w2), f"{SK}.mean_absolute_error(sample_weight), uniform average",
        rtol=1e-6, atol=1e-9)
    # R² and explained variance: sklearn's weighted centred sums (tss = Σ w (y − ȳ_w)²). Tally keeps weighted
    # moments, so data far from zero keep their digits; adjusted R² counts rows (sklearn has no adjusted form).
    for off in (0.0, 1e6):
        tag = "" if off == 0 else "_offset-1e6"
        to, po = t + off, p + off
        for metric, fn in (("r2_score", skm.r2_score), ("explained_variance", skm.explained_variance_score)):
            check_repeat(fn, [to, po], w_int)
            add(S, f"{metric}{tag}__weighted", metric, {**ins, "preds": T(po, "float64"), "target": T(to, "float64")},
                fn(to, po, sample_weight=w), f"{SK}.{fn.__name__}(sample_weight)", rtol=1e-9, atol=1e-9)
    r2 = skm.r2_score(t, p, sample_weight=w)
    add(S, "r2_score_adjusted-3__weighted", "r2_score(adjusted=3)", ins, 1 - (1 - r2) * (n - 1) / (n - 3 - 1),
        f"{SK}.r2_score(sample_weight), adjusted over the row count n = {n}")
    for mo in ("raw_values", "uniform_average", "variance_weighted"):
        for metric, fn in (("r2_score", skm.r2_score), ("explained_variance", skm.explained_variance_score)):
            add(S, f"{metric}_multioutput-{mo}__2d_weighted", f"{metric}(multioutput={mo})", ins2,
                fn(t2, p2, sample_weight=w2, multioutput=mo), f"{SK}.{fn.__name__}(multioutput={mo!r}, sample_weight)",
                rtol=1e-9, atol=1e-9)


def weighted_binned_counts(p, t, w, thr):
    """TorchMetrics' binned counts (preds >= threshold per target) with each row counting its weight."""
    ge = (p[:, None] >= thr[None, :]).astype(np.float64)
    pos = (t == 1).astype(np.float64)
    neg = 1.0 - pos
    tp = (ge * (w * pos)[:, None]).sum(0)
    fp = (ge * (w * neg)[:, None]).sum(0)
    return tp, fp, (w * pos).sum() - tp, (w * neg).sum() - fp


def weighted_binned_auroc(p, t, w, thr):
    tp, fp, fn, tn = weighted_binned_counts(p, t, w, thr)
    tpr = gf._sdiv(tp, tp + fn)[::-1]
    fpr = gf._sdiv(fp, fp + tn)[::-1]
    return float(np.sum((fpr[1:] - fpr[:-1]) * (tpr[1:] + tpr[:-1]) / 2))


def weighted_binned_ap(p, t, w, thr):
    tp, fp, fn, tn = weighted_binned_counts(p, t, w, thr)
    prec = np.append(gf._sdiv(tp, tp + fp, 1.0), 1.0)
    rec = np.append(gf._sdiv(tp, tp + fn), 0.0)
    return float(-np.sum((rec[1:] - rec[:-1]) * prec[:-1]))


def gen_curves(S, rng):
    n = 64
    t = rng.integers(0, 2, n)
    t[:2] = [0, 1]
    p = np.round(np.clip(0.3 * t + 0.7 * rng.random(n), 0, 1), 2)
    p[5:9] = p[4]  # ties
    w = weights(rng, n, zeros=3)
    w_int = rng.integers(0, 4, n)
    p32 = p.astype(np.float32)
    for thr_arg, thr in ((11, gf._torch_linspace_f32(11)), ([0.1, 0.25, 0.5, 0.8], np.array([0.1, 0.25, 0.5, 0.8], np.float32))):
        for kind, fn, ref in (("auroc", weighted_binned_auroc, gf.binned_auroc),
                              ("average_precision", weighted_binned_ap, gf.binned_ap)):
            # Integer weights are repeated rows of TorchMetrics' unweighted formula.
            gf._close(fn(p32, t, w_int.astype(np.float64), thr),
                      ref(np.repeat(p32, w_int), np.repeat(t, w_int), thr), 1e-12)
            metric = gf.spec(f"binary_{kind}", {"thresholds": thr_arg})
            tag = "list" if isinstance(thr_arg, list) else str(thr_arg)
            add(S, f"binary_{kind}_thresholds-{tag}__weighted", metric,
                {"preds": T(p, "float32"), "target": T(t, "int64"), "weight": T(w, "float64")},
                fn(p32, t, w, thr), "numpy: TorchMetrics' binned counts with each row counting its weight",
                rtol=1e-6, atol=1e-7)
    # exact16: 16-bit scores, exact: sklearn with sample_weight on the same (float16) values.
    p16 = p.astype(np.float16)
    ins = {"preds": T(p16.astype(np.float32), "float32"), "target": T(t, "int64"), "weight": T(w, "float64")}
    for kind, fn in (("auroc", skm.roc_auc_score), ("average_precision", skm.average_precision_score)):
        check_repeat(fn, [t, p16.astype(np.float64)], w_int)
        add(S, f"binary_{kind}_thresholds-exact16__weighted", f"binary_{kind}(thresholds=exact16)", ins,
            fn(t, p16.astype(np.float64), sample_weight=w), f"{SK}.{fn.__name__}(sample_weight) on float16 scores")
    # The exact form keeps each row's weight beside it: sklearn with sample_weight on the float32 scores (ties
    # included); max_fpr (the partial AUC) refuses weights.
    ins32 = {"preds": T(p, "float32"), "target": T(t, "int64"), "weight": T(w, "float64")}
    p64 = ins32["preds"].f64
    for kind, fn in (("auroc", skm.roc_auc_score), ("average_precision", skm.average_precision_score)):
        check_repeat(fn, [t, p64], w_int)
        add(S, f"binary_{kind}__exact_form_weighted", f"binary_{kind}", ins32, fn(t, p64, sample_weight=w),
            f"{SK}.{fn.__name__}(sample_weight) on the float32 scores", rtol=1e-6, atol=1e-7)
    add(S, "binary_auroc_max_fpr-0.5__exact_form_weighted", "binary_auroc(max_fpr=0.5)", ins32,
        gf.Refused("the partial AUC (max_fpr) has no weighted form"), "refused: the exact partial AUC has no weighted form")


def weighted_reduce(values, support, average):
    """TorchMetrics' macro / weighted / none over per-class values (every class has positives here)."""
    values = np.asarray(values)
    if average == "none":
        return values
    if average == "macro":
        return float(values.mean())
    return float(np.sum(values * support / support.sum()))


def gen_class_curves(S, T_, rng):
    """Multiclass and multilabel AUROC / AP (one-vs-rest: each class is the binary problem with the row weights),
    the ROC and PR curves and an operating point, binned and exact16 (the exact form: gen_exact_class_curves)."""
    n, c = 90, 3
    t = np.concatenate([np.arange(c), rng.integers(0, c, n - c)])
    p = rng.random((n, c)) + 0.8 * np.eye(c)[t]
    p = np.round(p / p.sum(1, keepdims=True), 2)  # probabilities (TorchMetrics keeps them: all in [0, 1])
    w = weights(rng, n, zeros=3)
    w_int = rng.integers(0, 4, n)
    onehot = np.eye(c, dtype=np.int64)[t]
    thr = gf._torch_linspace_f32(11)
    p32 = p.astype(np.float32)
    ins = {"preds": T(p, "float32"), "target": T(t, "int64"), "weight": T(w, "float64")}
    support = (onehot * w[:, None]).sum(0)
    for kind, fn, ref in (("auroc", weighted_binned_auroc, gf.binned_auroc),
                          ("average_precision", weighted_binned_ap, gf.binned_ap)):
        per = [fn(p32[:, k], onehot[:, k], w, thr) for k in range(c)]
        for k in range(c):  # integer weights are repeated rows
            gf._close(fn(p32[:, k], onehot[:, k], w_int.astype(np.float64), thr),
                      ref(np.repeat(p32[:, k], w_int), np.repeat(onehot[:, k], w_int), thr), 1e-12)
        for avg in ("macro", "weighted", "none"):
            add(S, f"multiclass_{kind}_thresholds-11_average-{avg}__weighted",
                f"multiclass_{kind}(num_classes={c}, thresholds=11, average={avg})", ins,
                weighted_reduce(per, support, avg),
                "numpy: TorchMetrics' binned one-vs-rest counts with each row counting its weight", rtol=1e-6,
                atol=1e-7)
    # exact16: sklearn with sample_weight on each class's float16 scores.
    p16 = p.astype(np.float16).astype(np.float64)
    ins16 = {"preds": T(p16, "float32"), "target": T(t, "int64"), "weight": T(w, "float64")}
    for kind, fn in (("auroc", skm.roc_auc_score), ("average_precision", skm.average_precision_score)):
        per = [fn(onehot[:, k], p16[:, k], sample_weight=w) for k in range(c)]
        for avg in ("macro", "weighted"):
            add(S, f"multiclass_{kind}_thresholds-exact16_average-{avg}__weighted",
                f"multiclass_{kind}(num_classes={c}, thresholds=exact16, average={avg})", ins16,
                weighted_reduce(per, support, avg),
                f"{SK}.{fn.__name__}(sample_weight) per class on float16 scores", rtol=1e-9, atol=1e-12)
    # Multilabel: micro is one binary problem over every element, each weighing its row's weight.
    L = 3
    tl = rng.integers(0, 2, (n, L))
    tl[:2] = [[0, 1, 0], [1, 0, 1]]
    pl = np.round(np.clip(0.3 * tl + 0.7 * rng.random((n, L)), 0, 1), 2)
    pl32 = pl.astype(np.float32)
    insl = {"preds": T(pl, "float32"), "target": T(tl, "int64"), "weight": T(w, "float64")}
    wl = np.repeat(w, L)
    add(S, "multilabel_auroc_thresholds-11_average-micro__weighted",
        f"multilabel_auroc(num_labels={L}, thresholds=11, average=micro)", insl,
        weighted_binned_auroc(pl32.reshape(-1), tl.reshape(-1), wl, thr),
        "numpy: TorchMetrics' binned counts over every element, each with its row's weight", rtol=1e-6, atol=1e-7)
    pl16 = pl.astype(np.float16).astype(np.float64)
    per = [skm.average_precision_score(tl[:, k], pl16[:, k], sample_weight=w) for k in range(L)]
    add(S, "multilabel_average_precision_thresholds-exact16__weighted",
        f"multilabel_average_precision(num_labels={L}, thresholds=exact16)",
        {**insl, "preds": T(pl16, "float32")}, float(np.mean(per)),
        f"{SK}.average_precision_score(sample_weight) per label on float16 scores, macro", rtol=1e-9, atol=1e-12)
    # An operating point: the largest recall where precision >= 0.6 over the weighted binned counts.
    tb, pb = onehot[:, 0], p32[:, 0]
    tp, fp, fn_, _ = weighted_binned_counts(pb, tb, w, thr)
    prec = gf._sdiv(tp, tp + fp)
    rec = gf._sdiv(tp, tp + fn_)
    # TorchMetrics' max over (recall, precision, threshold) tuples of the qualifying thresholds.
    r_best, _, t_best = max((r, q, th) for q, r, th in zip(prec.astype(np.float32), rec.astype(np.float32), thr)
                            if q >= 0.6)
    add(S, "binary_recall_at_fixed_precision_thresholds-11__weighted",
        "binary_recall_at_fixed_precision(min_precision=0.6, thresholds=11)",
        {"preds": T(pb, "float32"), "target": T(tb, "int64"), "weight": T(w, "float64")},
        [r_best, t_best], "numpy: TorchMetrics' binned operating point over weighted counts", rtol=1e-6,
        atol=1e-7)
    # The curves themselves (tuples of arrays).
    f32 = np.float32
    tp, fp, fn_, tn = weighted_binned_counts(pb, tb, w, thr)
    T_.add("binary_roc_thresholds-11__weighted", "binary_roc(thresholds=11)",
           {"preds": T(pb, "float32"), "target": T(tb, "int64"), "weight": T(w, "float64")},
           [gf._sdiv(fp, fp + tn).astype(f32)[::-1], gf._sdiv(tp, tp + fn_).astype(f32)[::-1], thr[::-1]],
           "numpy: TorchMetrics' binned ROC over weighted counts", 1e-6, 1e-7)
    T_.add("binary_precision_recall_curve_thresholds-11__weighted", "binary_precision_recall_curve(thresholds=11)",
           {"preds": T(pb, "float32"), "target": T(tb, "int64"), "weight": T(w, "float64")},
           [np.append(gf._sdiv(tp, tp + fp), 1.0).astype(f32), np.append(gf._sdiv(tp, tp + fn_), 0.0).astype(f32),
            thr], "numpy: TorchMetrics' binned PR curve over weighted counts", 1e-6, 1e-7)
    pb16 = p16[:, 0]
    fpr, tpr, th = skm.roc_curve(tb, pb16, sample_weight=w, drop_intermediate=False)
    T_.add("binary_roc_thresholds-exact16__weighted", "binary_roc(thresholds=exact16)",
           {"preds": T(pb16, "float32"), "target": T(tb, "int64"), "weight": T(w, "float64")},
           [fpr.astype(f32), tpr.astype(f32), np.concatenate([[1.0], th[1:]]).astype(f32)],
           f"{SK}.roc_curve(sample_weight, drop_intermediate=False) on float16 scores (threshold 1 first, "
           "as TorchMetrics; zero-weight rows are no points, as sklearn)", 1e-6, 1e-7)


def gen_exact_class_curves(S, T_, rng):
    """The exact (cat) form with weights: each row's weight is kept beside it, and every value is sklearn's with
    sample_weight, one-vs-rest per class. A zero-weight row is dropped, as sklearn's _binary_clf_curve drops it: its
    score is no point of a curve (row z below has a score of its own)."""
    n, c = 80, 3
    t = np.concatenate([np.arange(c), rng.integers(0, c, n - c)])
    p = rng.random((n, c)) + 0.8 * np.eye(c)[t]
    p = np.round(p / p.sum(1, keepdims=True), 2)
    w = weights(rng, n, zeros=4)
    z = int(np.flatnonzero(w == 0)[0])
    p[z, 0] = 0.987  # a score no other row has, on a zero-weight row
    w_int = rng.integers(0, 4, n)
    onehot = np.eye(c, dtype=np.int64)[t]
    ins = {"preds": T(p, "float32"), "target": T(t, "int64"), "weight": T(w, "float64")}
    p64 = ins["preds"].f64
    support = (onehot * w[:, None]).sum(0)
    for kind, fn in (("auroc", skm.roc_auc_score), ("average_precision", skm.average_precision_score)):
        for k in range(c):
            check_repeat(fn, [onehot[:, k], p64[:, k]], w_int)
        per = [fn(onehot[:, k], p64[:, k], sample_weight=w) for k in range(c)]
        for avg in ("macro", "weighted", "none"):
            add(S, f"multiclass_{kind}_average-{avg}__exact_form_weighted",
                f"multiclass_{kind}(num_classes={c}, average={avg})", ins, weighted_reduce(per, support, avg),
                f"{SK}.{fn.__name__}(sample_weight) per class on the float32 scores", rtol=1e-6, atol=1e-7)
    # Multilabel: micro is one binary problem over every element, each weighing its row's weight.
    L = 3
    tl = rng.integers(0, 2, (n, L))
    tl[:2] = [[0, 1, 0], [1, 0, 1]]
    pl = np.round(np.clip(0.3 * tl + 0.7 * rng.random((n, L)), 0, 1), 2)
    insl = {"preds": T(pl, "float32"), "target": T(tl, "int64"), "weight": T(w, "float64")}
    pl64 = insl["preds"].f64
    add(S, "multilabel_auroc_average-micro__exact_form_weighted", f"multilabel_auroc(num_labels={L}, average=micro)",
        insl, skm.roc_auc_score(tl.reshape(-1), pl64.reshape(-1), sample_weight=np.repeat(w, L)),
        f"{SK}.roc_auc_score(sample_weight) over every element, each with its row's weight", rtol=1e-6, atol=1e-7)
    per = [skm.average_precision_score(tl[:, k], pl64[:, k], sample_weight=w) for k in range(L)]
    add(S, "multilabel_average_precision__exact_form_weighted", f"multilabel_average_precision(num_labels={L})",
        insl, float(np.mean(per)), f"{SK}.average_precision_score(sample_weight) per label, macro", rtol=1e-6,
        atol=1e-7)

    # The curves: sklearn's weighted curves in TorchMetrics' form (threshold 1 first on the ROC; the PR curve
    # ascending with (1, 0) appended, as sklearn gives it).
    f32 = np.float32

    def roc(y, s, wt):
        fpr, tpr, th = skm.roc_curve(y, s, sample_weight=wt, drop_intermediate=False)
        return [fpr.astype(f32), tpr.astype(f32), np.concatenate([[1.0], th[1:]]).astype(f32)]

    def prc(y, s, wt):
        prec, rec, th = skm.precision_recall_curve(y, s, sample_weight=wt)
        return [prec.astype(f32), rec.astype(f32), th.astype(f32)]

    yb, sb = onehot[:, 0], p64[:, 0]
    insb = {"preds": T(p[:, 0], "float32"), "target": T(yb, "int64"), "weight": T(w, "float64")}
    assert 0.987 not in roc(yb, sb, w)[2], "the zero-weight row's score is no point"
    T_.add("binary_roc__exact_form_weighted", "binary_roc", insb, roc(yb, sb, w),
           f"{SK}.roc_curve(sample_weight, drop_intermediate=False) on the float32 scores (threshold 1 first)",
           1e-6, 1e-7)
    T_.add("binary_precision_recall_curve__exact_form_weighted", "binary_precision_recall_curve", insb,
           prc(yb, sb, w), f"{SK}.precision_recall_curve(sample_weight) on the float32 scores", 1e-6, 1e-7)
    T_.add("multiclass_roc_average-micro__exact_form_weighted", f"multiclass_roc(num_classes={c}, average=micro)", ins,
           roc(onehot.reshape(-1), p64.reshape(-1), np.repeat(w, c)),
           f"{SK}.roc_curve(sample_weight) over the one-hot elements, each with its row's weight", 1e-6, 1e-7)
    per = [prc(tl[:, k], pl64[:, k], w) for k in range(L)]
    T_.add("multilabel_precision_recall_curve__exact_form_weighted", f"multilabel_precision_recall_curve(num_labels={L})",
           insl, [[q[i] for q in per] for i in range(3)],
           f"{SK}.precision_recall_curve(sample_weight) per label", 1e-6, 1e-7)

    # Operating points: TorchMetrics' picks (gen_classification_extra) over the weighted curves.
    r = gx._pick_pr("recall_at_fixed_precision", *prc(yb, sb, w), 0.6, False)
    add(S, "binary_recall_at_fixed_precision__exact_form_weighted", "binary_recall_at_fixed_precision(min_precision=0.6)",
        insb, list(r), f"TorchMetrics' pick over {SK}.precision_recall_curve(sample_weight)", rtol=1e-6, atol=1e-7)
    r = gx._pick_roc("sensitivity_at_specificity", *roc(yb, sb, w), 0.6)
    add(S, "binary_sensitivity_at_specificity__exact_form_weighted",
        "binary_sensitivity_at_specificity(min_specificity=0.6)", insb, list(r),
        f"TorchMetrics' pick over {SK}.roc_curve(sample_weight)", rtol=1e-6, atol=1e-7)
    picks = [gx._pick_pr("precision_at_fixed_recall", *prc(onehot[:, k], p64[:, k], w), 0.5, False) for k in range(c)]
    add(S, "multiclass_precision_at_fixed_recall__exact_form_weighted",
        f"multiclass_precision_at_fixed_recall(num_classes={c}, min_recall=0.5)", ins,
        [np.array([v for v, _ in picks]), np.array([th for _, th in picks])],
        f"TorchMetrics' pick per class over {SK}.precision_recall_curve(sample_weight)", rtol=1e-6, atol=1e-7)


def weighted_retrieval_expected(kind, idx, preds, target, w, action=None, ignore_index=None, **kw):
    """The weighted mean of the queries' scores, each query weighing the mean of its rows' weights (sklearn's
    ndcg_score sample_weight is one weight per query); each score is TorchMetrics' on that query alone
    (gen_fixtures.retrieval_expected)."""
    if action is None:
        action = "pos" if kind == "fall_out" else "neg"
    num = den = 0.0
    for q in np.unique(idx):
        m = idx == q
        t = target[m]
        kept = t != ignore_index if ignore_index is not None else np.ones(len(t), bool)
        if not kept.any():
            continue  # no counted row: no query
        empty = (1 - t[kept]).sum() == 0 if kind == "fall_out" else t[kept].sum() == 0
        if empty and action == "skip":
            continue
        v = gf.retrieval_expected(kind, idx[m], preds[m], t, action=action, ignore_index=ignore_index, **kw)
        wq = w[m].mean()
        num += wq * v
        den += wq
    return num / den if den > 0 else 0.0


def gen_retrieval(S, rng):
    """Retrieval with weights: one weight per query (every row of a query carries it; a query weighs the mean of its
    rows' weights), the rows of the queries interleaved and of uneven lengths."""
    n = 120
    idx = rng.integers(0, 15, n)
    preds = np.round(rng.random(n), 1).astype(np.float32)  # ties
    target = (rng.random(n) < 0.3).astype(np.int64)
    target[idx == 4] = 0  # a query without positives
    target[idx == 9] = 1  # a query without negatives
    wq = np.round(rng.uniform(0.1, 3.0, 15), 3)
    wq[7] = 0.0  # a query weighted 0 counts nowhere
    w = wq[idx]
    ins = {"preds": T(preds, "float32"), "target": T(target, "int64"), "indexes": T(idx, "int64"),
           "weight": T(w, "float64")}
    hand = "numpy: TorchMetrics' per-query scores (gen_fixtures.retrieval_expected), weighted mean by query weight"
    for kind in ("recall", "precision", "hit_rate", "reciprocal_rank", "average_precision", "r_precision",
                 "fall_out"):
        for args in ({}, {"top_k": 3, "empty_target_action": "skip"}, {"empty_target_action": "pos"}):
            if kind == "r_precision" and "top_k" in args:
                continue
            kw = {"top_k": args["top_k"]} if "top_k" in args else {}
            add(S, f"retrieval_{kind}_{'_'.join(f'{k}-{v}' for k, v in args.items()) or 'default'}__weighted",
                gf.spec(f"retrieval_{kind}", args), ins,
                weighted_retrieval_expected(kind, idx, preds, target, w, action=args.get("empty_target_action"), **kw),
                hand)
    # nDCG against sklearn's own sample_weight: equal-length queries as the rows of a matrix (graded relevance).
    Q, L = 12, 7
    g = rng.integers(0, 4, (Q, L))
    g[:, 0] = np.maximum(g[:, 0], 1)
    pm = np.round(rng.random((Q, L)), 2).astype(np.float32)
    wm = np.round(rng.uniform(0.1, 3.0, Q), 3)
    order = rng.permutation(Q * L)  # rows interleaved
    ids = np.repeat(np.arange(Q), L)[order]
    ins_m = {"preds": T(pm.reshape(-1)[order], "float32"), "target": T(g.reshape(-1)[order], "int64"),
             "indexes": T(ids, "int64"), "weight": T(np.repeat(wm, L)[order], "float64")}
    for k in (None, 3):
        metric = gf.spec("retrieval_normalized_dcg", {"top_k": k} if k else {})
        add(S, f"retrieval_normalized_dcg_top_k-{k}__weighted", metric, ins_m,
            skm.ndcg_score(g, pm.astype(np.float64), k=k, sample_weight=wm), f"{SK}.ndcg_score(sample_weight)")
    # AUROC per query: sklearn's roc_auc_score on each query that has both labels (TorchMetrics scores the others
    # 0), weighted.
    num = den = 0.0
    for q in np.unique(idx):
        m = idx == q
        v = skm.roc_auc_score(target[m], preds[m]) if 0 < target[m].sum() < m.sum() else 0.0
        num += wq[q] * v
        den += wq[q]
    add(S, "retrieval_auroc__weighted", "retrieval_auroc", ins, num / den,
        f"{SK}.roc_auc_score per query (0 without both labels), weighted mean by query weight")
    # Rows of one query with different weights: the query weighs their mean.
    w2 = w * np.where(np.arange(n) % 2 == 0, 0.5, 1.5)
    add(S, "retrieval_recall__weighted_rows_differ", "retrieval_recall", {**ins, "weight": T(w2, "float64")},
        weighted_retrieval_expected("recall", idx, preds, target, w2), hand + " (the mean of each query's rows)")
    add(S, "retrieval_average_precision_aggregation-median__weighted",
        "retrieval_average_precision(aggregation=median)", ins, gf.Refused("weights need aggregation=mean"),
        "refused: a weighted median is not TorchMetrics' median")


def gen_hinge_and_calibration(S, rng):
    n = 50
    t = rng.integers(0, 2, n)
    t[:2] = [0, 1]
    p = gf._nudge(np.round(0.35 * t + 0.65 * rng.random(n), 2), (0.2, 0.4, 0.6, 0.8))
    w = weights(rng, n)
    w_int = rng.integers(0, 4, n)
    ins = {"preds": T(p, "float32"), "target": T(t, "int64"), "weight": T(w, "float64")}
    p64 = ins["preds"].f64
    y = np.where(t == 1, 1, -1)
    m = np.clip(1 - y * p64, 0, None)
    gf._close(skm.hinge_loss(y, p64, sample_weight=w), np.average(m, weights=w))
    add(S, "binary_hinge_loss__weighted", "binary_hinge_loss", ins, skm.hinge_loss(y, p64, sample_weight=w),
        f"{SK}.hinge_loss(sample_weight) on labels mapped to -1/+1", rtol=1e-6, atol=1e-7)
    add(S, "binary_hinge_loss_squared-true__weighted", "binary_hinge_loss(squared=true)", ins,
        np.average(m ** 2, weights=w), "numpy: TorchMetrics' squared hinge measure, weighted mean", rtol=1e-6,
        atol=1e-7)
    conf = ins["preds"].a
    for nb, norm in ((5, "l1"), (10, "l2"), (15, "max")):
        gf._close(gf.calibration_expected(conf, t, nb, norm, w_int),
                  gf.calibration_expected(np.repeat(conf, w_int), np.repeat(t, w_int), nb, norm), 1e-12)
        add(S, f"binary_calibration_error_n_bins-{nb}_norm-{norm}__weighted",
            f"binary_calibration_error(n_bins={nb}, norm={norm})", ins, gf.calibration_expected(conf, t, nb, norm, w),
            "numpy: TorchMetrics' _ce_compute with weighted bin counts and sums", rtol=1e-6, atol=1e-7)
    # Multiclass crammer-singer hinge: sklearn's multiclass hinge_loss with sample_weight.
    c = 4
    tm = np.concatenate([np.arange(c), rng.integers(0, c, n - c)])
    scores = gf.mc_scores(rng, tm, c)
    insm = {"preds": T(scores, "float32"), "target": T(tm, "int64"), "weight": T(w, "float64")}
    s64 = insm["preds"].f64
    add(S, "multiclass_hinge_loss__weighted", f"multiclass_hinge_loss(num_classes={c})", insm,
        skm.hinge_loss(tm, s64, labels=np.arange(c), sample_weight=w), f"{SK}.hinge_loss(labels, sample_weight)",
        rtol=1e-6, atol=1e-7)
    conf_m = insm["preds"].a.max(1)
    acc_m = (insm["preds"].a.argmax(1) == tm).astype(np.int64)
    add(S, "multiclass_calibration_error__weighted", f"multiclass_calibration_error(num_classes={c})", insm,
        gf.calibration_expected(conf_m, acc_m, 15, "l1", w),
        "numpy: TorchMetrics' _ce_compute with weighted bin counts and sums", rtol=1e-6, atol=1e-7)


def gen_aggregation(S, rng):
    n = 30
    v = np.round(rng.normal(1e6, 3.0, n), 3)
    w = weights(rng, n)
    ins = {"value": T(v, "float64"), "weight": T(w, "float64")}
    add(S, "sum__weighted", "sum", ins, float(np.sum(v * w)), "numpy sum(weight * value)")
    add(S, "mean__weighted_large_offset", "mean", ins, float(np.average(v, weights=w)), "numpy average(weights)")


def main():
    rng = np.random.default_rng(3030)
    S = gf.Suite("weighted.json")
    gen_binary(S, rng)
    gen_multiclass(S, rng)
    gen_multilabel(S, rng)
    gen_regression(S, rng)
    gen_aggregation(S, rng)
    gen_curves(S, rng)
    gen_hinge_and_calibration(S, rng)
    curves = gf.TreeSuite("weighted_curves.json")
    gen_class_curves(S, curves, rng)
    gen_exact_class_curves(S, curves, rng)
    gen_retrieval(S, rng)
    for suite in (S, curves):
        path, k = suite.write()
        print(f"{path}: {k} cases")


if __name__ == "__main__":
    main()
