#!/usr/bin/env python3
"""Golden fixtures for multidim_average="samplewise" (fixtures/samplewise.json).

Every sample (row of dim 0) is scored on its own: its positions' labels are counted with scikit-learn's
confusion matrices, then reduced over the classes with TorchMetrics' formulas (numpy, below). TorchMetrics itself is
not used. Run with /usr/bin/python3 (numpy, scikit-learn) from the repository root or anywhere.
"""
import os
import sys

import numpy as np
from sklearn.metrics import confusion_matrix, multilabel_confusion_matrix, precision_recall_fscore_support

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as g  # noqa: E402

STAT = ["accuracy", "precision", "recall", "f1_score", "fbeta_score", "specificity", "hamming_distance"]


# --------------------------------------------------------------------------------------------
# input formatting
# --------------------------------------------------------------------------------------------
def binary_labels(p, threshold):
    # rule: float preds with any value outside [0, 1] are sigmoided (whole tensor), then `> threshold`
    #       -- src/torchmetrics/functional/classification/stat_scores.py (_binary_stat_scores_format)
    return g.tm_threshold(p, threshold)


def mc_pred_onehot(p, t_shape, C, top_k):
    """(N, P, C) bool predictions from label preds (N, ...) or scores (N, C, ...)."""
    n = t_shape[0]
    if p.ndim == len(t_shape) + 1:
        s = np.moveaxis(p, 1, -1).reshape(n, -1, C).astype(np.float64)
        srt = -np.sort(-s, axis=-1)
        assert (srt[..., 0] > srt[..., 1]).all(), "ambiguous argmax"
        if C > top_k:
            assert (srt[..., top_k - 1] > srt[..., top_k]).all(), "ambiguous top-k"
        # rule: top_k == 1 -> argmax over dim 1; top_k > 1 -> the top_k largest scores are predicted
        #       -- src/torchmetrics/functional/classification/stat_scores.py (_multiclass_stat_scores_format,
        #          _multiclass_stat_scores_update)
        oh = np.zeros(s.shape, bool)
        np.put_along_axis(oh, np.argsort(-s, axis=-1)[..., :top_k], True, axis=-1)
        return oh
    assert top_k == 1
    lab = p.reshape(n, -1).astype(np.int64)
    return np.eye(C, dtype=bool)[lab]


# --------------------------------------------------------------------------------------------
# per-sample counts (scikit-learn)
# --------------------------------------------------------------------------------------------
def counts_binary(t, lab, ii):
    """Per sample [tp, fp, tn, fn]: arrays [N]."""
    out = []
    for ts, ps in zip(t.reshape(t.shape[0], -1), lab.reshape(lab.shape[0], -1)):
        # rule: ignored elements (target == ignore_index) count nowhere -- stat_scores.py (_binary_stat_scores_format)
        keep = np.ones_like(ts, bool) if ii is None else ts != ii
        tn, fp, fn, tp = confusion_matrix(ts[keep], ps[keep], labels=[0, 1]).ravel()
        out.append([tp, fp, tn, fn])
    a = np.array(out, dtype=np.int64).reshape(-1, 4)
    return [a[:, k] for k in range(4)]


def counts_multiclass(t, pred_oh, C, ii):
    """Per sample and class [tp, fp, tn, fn]: arrays [N, C]."""
    n = t.shape[0]
    tt = t.reshape(n, -1)
    res = np.zeros((4, n, C), np.int64)
    for i in range(n):
        keep = np.ones(tt.shape[1], bool) if ii is None else tt[i] != ii
        truth = np.eye(C, dtype=bool)[np.clip(tt[i][keep], 0, C - 1)]
        if keep.sum():
            mcm = multilabel_confusion_matrix(truth.astype(int), pred_oh[i][keep].astype(int))
        else:
            mcm = np.zeros((C, 2, 2), np.int64)
        res[0, i], res[1, i], res[2, i], res[3, i] = mcm[:, 1, 1], mcm[:, 0, 1], mcm[:, 0, 0], mcm[:, 1, 0]
    return list(res)


def counts_multilabel(t, lab, L, ii):
    n = t.shape[0]
    tt = t.reshape(n, L, -1)
    ll = lab.reshape(n, L, -1)
    res = np.zeros((4, n, L), np.int64)
    for i in range(n):
        for j in range(L):
            keep = np.ones(tt.shape[2], bool) if ii is None else tt[i, j] != ii
            tn, fp, fn, tp = confusion_matrix(tt[i, j][keep], ll[i, j][keep], labels=[0, 1]).ravel()
            res[:, i, j] = [tp, fp, tn, fn]
    return list(res)


# --------------------------------------------------------------------------------------------
# TorchMetrics' reductions, per sample
# --------------------------------------------------------------------------------------------
def score(short, tp, fp, tn, fn, multilabel, beta, zd):
    if short in ("accuracy", "hamming_distance"):
        # rule: multiclass accuracy per class is tp / (tp + fn); multilabel (tp + tn) / all -- accuracy.py (_accuracy_reduce)
        a = g.sdiv(tp + tn, tp + tn + fp + fn) if multilabel is not False else g.sdiv(tp, tp + fn)
        return 1 - a if short == "hamming_distance" else a
    if short == "precision":
        return g.sdiv(tp, tp + fp, zd)
    if short == "recall":
        return g.sdiv(tp, tp + fn, zd)
    if short in ("f1_score", "fbeta_score"):
        b2 = beta * beta
        return g.sdiv((1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp, zd)
    if short == "specificity":
        return g.sdiv(tn, tn + fp)
    raise ValueError(short)


def reduce(short, task, c, average, top_k, beta, zd):
    tp, fp, tn, fn = c
    if task == "binary":
        return score(short, tp, fp, tn, fn, True, beta, zd)
    ml = task == "multilabel"
    if average == "micro":
        # rule: micro sums each sample's class counts first (dim 1) -- accuracy.py/precision_recall.py (_*_reduce)
        s = [x.sum(1) for x in c]
        return score(short, *s, ml, beta, zd)
    sc = score(short, tp, fp, tn, fn, ml, beta, zd)
    if average == "none":
        return sc
    if average == "weighted":
        w = (tp + fn).astype(np.float64)
    else:
        w = np.ones_like(sc)
        if not ml:
            # rule: macro drops classes absent from the sample (tp+fp+fn == 0; tp+fn == 0 with top_k > 1 for
            #       accuracy/precision/recall) -- utilities/compute.py (_adjust_weights_safe_divide)
            rule_topk = top_k > 1 and short in ("accuracy", "precision", "recall")
            w[(tp + fn == 0) if rule_topk else (tp + fp + fn == 0)] = 0.0
    return g.sdiv(w * sc, w.sum(-1, keepdims=True)).sum(-1)


def stat_scores(task, c, average):
    tp, fp, tn, fn = c
    res = np.stack([tp, fp, tn, fn, tp + fn], axis=-1)
    if task == "binary" or average == "none":
        return res
    if average == "micro":
        return res.sum(1)
    if average == "macro":
        return res.astype(np.float64).mean(1)
    w = (tp + fn).astype(np.float64)
    # rule: multiclass weights per sample; multilabel divides by the support of all samples and labels
    #       -- stat_scores.py (_multiclass_stat_scores_compute, _multilabel_stat_scores_compute)
    with np.errstate(all="ignore"):
        total = w.sum(-1, keepdims=True) if task == "multiclass" else w.sum()
        return (res * (w / total)[..., None]).sum(1)


def cross_check_sklearn(task, c, t, pred_oh, C, ii, zd):
    """Per-class precision/recall/F1 of each multiclass sample equal sklearn's on the same labels."""
    tp, fp, tn, fn = c
    tt = t.reshape(t.shape[0], -1)
    for i in range(tt.shape[0]):
        keep = np.ones(tt.shape[1], bool) if ii is None else tt[i] != ii
        if not keep.any() or pred_oh.shape[-1] != C or pred_oh[i].sum(-1).max() != 1:
            continue
        y_pred = pred_oh[i][keep].argmax(-1)
        p, r, f, _ = precision_recall_fscore_support(tt[i][keep], y_pred, labels=list(range(C)), average=None,
                                                     zero_division=zd)
        g._close(p, score("precision", tp[i], fp[i], tn[i], fn[i], False, 1.0, zd))
        g._close(r, score("recall", tp[i], fp[i], tn[i], fn[i], False, 1.0, zd))
        g._close(f, score("f1_score", tp[i], fp[i], tn[i], fn[i], False, 1.0, zd))


# --------------------------------------------------------------------------------------------
# exact match
# --------------------------------------------------------------------------------------------
def exact_match(task, p, t, C, threshold, ii):
    n = t.shape[0]
    if task == "multiclass":
        lab = mc_pred_onehot(p, t.shape, C, 1).argmax(-1)
        tt = t.reshape(n, -1)
        # rule: ignored positions match (preds overwritten with ignore_index); a sample is 1 when all positions
        #       match -- exact_match.py (_multiclass_exact_match_update)
        same = (lab == tt) | ((tt == ii) if ii is not None else False)
        return same.all(1).astype(np.float64)
    lab = binary_labels(p, threshold).reshape(n, C, -1)
    tt = t.reshape(n, C, -1)
    # rule: an ignored element never matches (target set to -1); the score is the share of positions whose
    #       labels all match -- exact_match.py (_multilabel_exact_match_update)
    same = (lab == tt) & ((tt != ii) if ii is not None else True)
    return same.all(1).sum(-1) / tt.shape[2]


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------
def make_data(rng, task, n, C, extra, pkind, ii, tdtype="int64"):
    if task == "binary":
        shape = (n,) + extra
        t = rng.integers(0, 2, shape)
        if pkind == "label":
            p = g.T(rng.integers(0, 2, shape), "int64")
        elif pkind == "logit":
            p = g.T(g._nudge(np.round(rng.standard_normal(shape) * 3, 3)), "float32")
        else:
            p = g.T(g._nudge(np.round(rng.random(shape), 3)), "float32")
    elif task == "multilabel":
        shape = (n, C) + extra
        t = rng.integers(0, 2, shape)
        if pkind == "label":
            p = g.T(rng.integers(0, 2, shape), "int64")
        elif pkind == "logit":
            p = g.T(g._nudge(np.round(rng.standard_normal(shape) * 3, 3)), "float32")
        else:
            p = g.T(g._nudge(np.round(rng.random(shape), 3)), "float32")
    else:
        shape = (n,) + extra
        present = rng.choice(C, size=max(1, C - 1), replace=False)  # one class may be absent everywhere
        t = rng.choice(present, size=shape)
        if pkind == "label":
            p = g.T(rng.integers(0, C, shape), "int64")
        else:
            x = rng.standard_normal((n, C) + extra)
            if pkind == "prob":
                e = np.exp(x)
                x = e / e.sum(1, keepdims=True)
            p = g.T(x, "float32")
    if ii is not None:
        m = rng.random(t.shape) < 0.2
        t = np.where(m, ii, t)
    return p, g.T(t, tdtype)


def main():
    rng = np.random.default_rng(20261122)
    S = g.Suite("samplewise.json")
    scenarios = []
    # (task, n, C, extra dims, preds kind, ignore_index)
    for task in ("binary", "multiclass", "multilabel"):
        for extra, pkind, ii in [((5,), "prob", None), ((2, 3), "logit", None), ((6,), "label", None),
                                 ((4,), "prob", -1), ((7,), "logit" if task != "multiclass" else "prob", 1)]:
            scenarios.append((task, 11, 3 if task != "binary" else 2, extra, pkind, ii))
        scenarios.append((task, 9, 4 if task != "binary" else 2, (1,), "prob", None))  # one position per sample
    for si, (task, n, C, extra, pkind, ii) in enumerate(scenarios):
        p, t = make_data(rng, task, n, C, extra, pkind, ii)
        tag = f"{task}_s{si}_{pkind}_x{'x'.join(map(str, extra))}" + ("" if ii is None else f"_ii{ii}")
        base_args = {}
        if task == "multiclass":
            base_args["num_classes"] = C
        if task == "multilabel":
            base_args["num_labels"] = C
        if ii is not None:
            base_args["ignore_index"] = ii
        g.check_update_invariant_logit_rule(task, "accuracy", p, t, ii) if task != "multiclass" else None
        averages = ["binary"] if task == "binary" else ["micro", "macro", "weighted", "none"]
        tops = [1, 2] if task == "multiclass" and p.a.ndim == t.a.ndim + 1 else [1]
        for top_k in tops:
            if task == "multiclass":
                pred_oh = mc_pred_onehot(p.a, t.a.shape, C, top_k)
                c = counts_multiclass(t.a.astype(np.int64), pred_oh, C, ii)
                cross_check_sklearn(task, c, t.a.astype(np.int64), pred_oh, C, ii, 0.0)
            elif task == "multilabel":
                c = counts_multilabel(t.a.astype(np.int64), binary_labels(p.a, 0.5), C, ii)
            else:
                c = counts_binary(t.a.astype(np.int64), binary_labels(p.a, 0.5), ii)
            for short in STAT + ["stat_scores"]:
                for average in averages:
                    if short in ("precision", "recall", "f1_score", "fbeta_score") and average in ("binary", "macro"):
                        zds = [0.0, 1.0]
                    else:
                        zds = [0.0]
                    for zd in zds:
                        args = dict(base_args)
                        if short == "fbeta_score":
                            args["beta"] = 2.0
                        if average != "binary":
                            args["average"] = average
                        if top_k > 1:
                            args["top_k"] = top_k
                        if zd:
                            args["zero_division"] = zd
                        args["multidim_average"] = "samplewise"
                        if short == "stat_scores":
                            exp = stat_scores(task, c, average)
                        else:
                            exp = reduce(short, task, c, average, top_k, args.get("beta", 1.0), zd)
                        name = f"{short}_{average}_k{top_k}_zd{int(zd)}__{tag}"
                        S.add(name, g.spec(f"{task}_{short}", args), {"preds": p, "target": t}, exp,
                              "sklearn confusion matrices per sample + TorchMetrics reductions")
        if task != "binary":
            args = dict(base_args)
            args["multidim_average"] = "samplewise"
            exp = exact_match(task, p.a, t.a.astype(np.int64), C, 0.5, ii)
            S.add(f"exact_match__{tag}", g.spec(f"{task}_exact_match", args), {"preds": p, "target": t}, exp,
                  "numpy per sample (TorchMetrics exact_match rules)")
    path, k = S.write()
    print(f"wrote {k} cases to {path}")


if __name__ == "__main__":
    main()
