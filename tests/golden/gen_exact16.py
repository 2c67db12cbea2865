#!/usr/bin/env python3
"""Golden fixtures for the exact16 curves (fixtures/exact16.json).

binary/multiclass/multilabel AUROC and average precision over 16-bit scores (float16 preds, bfloat16 preds, and
float32 preds holding float16 values with thresholds=exact16), computed by scikit-learn's roc_auc_score /
average_precision_score on the same values in float64, with TorchMetrics' averaging rules around them. Tally keeps
per-code counts and finalizes in float64, so the cases ask for 1e-12. TorchMetrics itself is not used.
Run with /usr/bin/python3 (numpy, scikit-learn).
"""
import os
import sys

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as g  # noqa: E402

g._NP["float16"] = np.float16
g._NP["bfloat16"] = np.float32  # values rounded to bfloat16 below; the fixture names the dtype
TOL = 1e-12


def to_bf16(x):
    """Round float32 values to bfloat16 (nearest, ties to even), kept as float32."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return u.astype(np.uint32).view(np.float32)


def binary(t, p):
    # rule: no positives or no negatives give AUROC 0; no positives give AP 0
    #       -- src/torchmetrics/functional/classification/{auroc,average_precision}.py (_binary_clf_curve)
    if t.sum() == 0 or t.sum() == len(t):
        auroc = 0.0
    else:
        auroc = roc_auc_score(t, p)
    ap = 0.0 if t.sum() == 0 else average_precision_score(t, p)
    return float(auroc), float(ap)


def per_class(t1hot, p):
    return [binary(t1hot[:, k], p[:, k]) for k in range(p.shape[1])]


def reduce(values, support, average):
    # rule: macro is the mean and weighted the support-weighted mean over the classes (none: per class)
    #       -- src/torchmetrics/functional/classification/auroc.py (_reduce_auroc)
    v = np.asarray(values)
    if average == "none":
        return v
    if average == "macro":
        return float(v.mean())
    w = np.asarray(support, dtype=np.float64)
    return float((v * w / w.sum()).sum())


def main():
    S = g.Suite("exact16.json")
    rng = np.random.default_rng(1616)
    src = "sklearn roc_auc_score / average_precision_score on the 16-bit values (TorchMetrics rules)"
    for n in (1, 7, 300):
        for dtype in ("float16", "bfloat16"):
            t = (rng.random(n) < 0.4).astype(np.int64)
            if n == 7:
                t[:] = 0
                t[2] = 1
            raw = (rng.random(n) * 0.6 + t * 0.3).astype(np.float32)
            p = raw.astype(np.float16).astype(np.float32) if dtype == "float16" else to_bf16(raw)
            if n == 300:
                p[:40] = p[40:80]  # ties, many of them across targets
            auroc, ap = binary(t, p.astype(np.float64))
            inputs = {"preds": g.T(p, dtype), "target": g.T(t, "int64")}
            S.add(f"binary_auroc_{dtype}_n{n}", "binary_auroc", inputs, auroc, src, TOL, TOL)
            S.add(f"binary_ap_{dtype}_n{n}", "binary_average_precision", inputs, ap, src, TOL, TOL)
    # float32 preds holding float16 values, thresholds named.
    t = (rng.random(200) < 0.5).astype(np.int64)
    p = (rng.random(200) * 0.5 + t * 0.5).astype(np.float16).astype(np.float32)
    auroc, ap = binary(t, p.astype(np.float64))
    inputs = {"preds": g.T(p, "float32"), "target": g.T(t, "int64")}
    S.add("binary_auroc_f32_exact16", "binary_auroc(thresholds=exact16)", inputs, auroc, src, TOL, TOL)
    S.add("binary_ap_f32_exact_fp16", "binary_average_precision(thresholds=exact_fp16)", inputs, ap, src, TOL, TOL)
    # All one target: TorchMetrics' 0.
    inputs = {"preds": g.T(p, "float16"), "target": g.T(np.ones(200, np.int64), "int64")}
    S.add("binary_auroc_all_positive", "binary_auroc", inputs, 0.0, src, TOL, TOL)
    # Multiclass (probabilities, one-vs-rest) and multilabel.
    C = 4
    for dtype in ("float16", "bfloat16"):
        tc = rng.integers(0, C, 400)
        pc = rng.random((400, C)).astype(np.float32) + np.eye(C, dtype=np.float32)[tc] * 0.5
        pc = pc / pc.sum(1, keepdims=True)
        pc = pc.astype(np.float16).astype(np.float32) if dtype == "float16" else to_bf16(pc)
        onehot = np.eye(C, dtype=np.int64)[tc]
        res = per_class(onehot, pc.astype(np.float64))
        support = onehot.sum(0)
        inputs = {"preds": g.T(pc, dtype), "target": g.T(tc, "int64")}
        for average in ("macro", "weighted", "none"):
            S.add(f"multiclass_auroc_{dtype}_{average}", f"multiclass_auroc(num_classes={C}, average={average})", inputs,
                  reduce([r[0] for r in res], support, average), src, TOL, TOL)
            S.add(f"multiclass_ap_{dtype}_{average}",
                  f"multiclass_average_precision(num_classes={C}, average={average})", inputs,
                  reduce([r[1] for r in res], support, average), src, TOL, TOL)
        tl = (rng.random((300, C)) < 0.4).astype(np.int64)
        pl = (rng.random((300, C)) * 0.6 + tl * 0.3).astype(np.float32)
        pl = pl.astype(np.float16).astype(np.float32) if dtype == "float16" else to_bf16(pl)
        res = per_class(tl, pl.astype(np.float64))
        inputs = {"preds": g.T(pl, dtype), "target": g.T(tl, "int64")}
        for average in ("macro", "weighted", "none"):
            S.add(f"multilabel_auroc_{dtype}_{average}", f"multilabel_auroc(num_labels={C}, average={average})", inputs,
                  reduce([r[0] for r in res], tl.sum(0), average), src, TOL, TOL)
        # rule: micro flattens every (sample, label) into one binary problem -- _multilabel_*_format
        micro = binary(tl.reshape(-1), pl.astype(np.float64).reshape(-1))
        S.add(f"multilabel_auroc_{dtype}_micro", f"multilabel_auroc(num_labels={C}, average=micro)", inputs, micro[0],
              src, TOL, TOL)
        S.add(f"multilabel_ap_{dtype}_micro", f"multilabel_average_precision(num_labels={C}, average=micro)", inputs,
              micro[1], src, TOL, TOL)
    path, n = S.write()
    print(f"wrote {n} cases to {path}")


if __name__ == "__main__":
    main()
