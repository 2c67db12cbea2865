#!/usr/bin/env python3
"""Golden fixtures for retrieval_auroc (fixtures/retrieval_auroc.json).

Each query's expected AUROC is scikit-learn's roc_auc_score over the query's top_k documents (stable descending
order of preds), with TorchMetrics' RetrievalAUROC rules applied around it; TorchMetrics itself is not used.
Run with /usr/bin/python3 (numpy, scikit-learn).
"""
import os
import sys

import numpy as np
from sklearn.metrics import roc_auc_score

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as g  # noqa: E402


def expected(idx, preds, target, top_k=None, action="neg", ignore_index=None, aggregation="mean"):
    # rule: rows whose target == ignore_index are dropped; rows are grouped by indexes; a query without positives
    #       scores by empty_target_action (neg 0, pos 1, skip left out); no query at all gives 0
    #       -- src/torchmetrics/retrieval/base.py
    if ignore_index is not None:
        keep = target != ignore_index
        idx, preds, target = idx[keep], preds[keep], target[keep]
    scores = []
    for q in np.unique(idx):
        m = idx == q
        p, t = preds[m].astype(np.float32), target[m]
        if t.sum() == 0:
            if action != "skip":
                scores.append(1.0 if action == "pos" else 0.0)
            continue
        order = np.argsort(-p, kind="stable")
        k = len(t) if top_k is None else min(top_k, len(t))
        # rule: the top_k documents by preds; 0 when they hold no positive or no negative; else binary_auroc
        #       (thresholds=None: sklearn's trapezoidal ROC area) -- src/torchmetrics/functional/retrieval/auroc.py
        if k < len(t):
            assert p[order[k - 1]] != p[order[k]], "a tie across the top_k boundary makes the choice ambiguous"
        tk, pk = t[order[:k]], p[order[:k]].astype(np.float64)
        if tk.sum() == 0 or tk.sum() == len(tk):
            scores.append(0.0)
        else:
            scores.append(float(roc_auc_score(tk, pk)))
    if not scores:
        return 0.0
    # rule: aggregation mean / median (torch.median: the lower of the two middle values) / min / max over the
    #       queries' scores -- src/torchmetrics/retrieval/base.py (_retrieval_aggregate)
    if aggregation == "median":
        return float(np.sort(scores)[(len(scores) - 1) // 2])
    return float({"mean": np.mean, "min": np.min, "max": np.max}[aggregation](scores))


def main():
    S = g.Suite("retrieval_auroc.json")
    rng = np.random.default_rng(4242)
    src = "sklearn.metrics.roc_auc_score per query (TorchMetrics RetrievalAUROC rules)"
    N = 120
    idx = rng.integers(0, 15, N)
    target = (rng.random(N) < 0.35).astype(np.int64)
    target[idx == 3] = 0  # a query without positives
    target[idx == 7] = 1  # a query without negatives
    tied = np.round(rng.random(N), 1)  # one decimal: many ties
    distinct = rng.permutation(N) / N + 0.001
    tign = target.copy()
    tign[rng.random(N) < 0.15] = -1
    cases = []
    for action in ["neg", "pos", "skip"]:
        cases.append((f"tied_all_{action}", tied, target, None, action, None))
        for k in [1, 2, 5, 50]:
            cases.append((f"distinct_k{k}_{action}", distinct, target, k, action, None))
    cases.append(("tied_ignore_index", tied, tign, None, "neg", -1))
    for agg in ["median", "min", "max"]:
        for action in ["neg", "skip"]:
            cases.append((f"tied_{agg}_{action}", tied, target, None, action, None, agg))
        cases.append((f"distinct_k5_{agg}", distinct, target, 5, "pos", None, agg))
    cases.append(("distinct_k3_ignore_index", distinct, tign, 3, "neg", -1))
    for name, p, t, k, action, ii, *agg in cases:
        agg = agg[0] if agg else "mean"
        args = {}
        if k is not None:
            args["top_k"] = k
        if action != "neg":
            args["empty_target_action"] = action
        if ii is not None:
            args["ignore_index"] = ii
        if agg != "mean":
            args["aggregation"] = agg
        S.add(name, g.spec("retrieval_auroc", args),
              {"preds": g.T(p, "float32"), "target": g.T(t, "int64"), "indexes": g.T(idx, "int64")},
              expected(idx, p, t, k, action, ii, agg), src)
    # One query; every document tied; logits-like values and float64 preds; bool targets.
    one_q = np.zeros(8, np.int64)
    S.add("one_query", "retrieval_auroc", {"preds": g.T([0.9, 0.2, 0.4, 0.8, 0.1, 0.3, 0.7, 0.6], "float64"),
                                            "target": g.T([1, 0, 1, 0, 0, 1, 1, 0], "bool"),
                                            "indexes": g.T(one_q, "int64")},
          expected(one_q, np.array([0.9, 0.2, 0.4, 0.8, 0.1, 0.3, 0.7, 0.6]), np.array([1, 0, 1, 0, 0, 1, 1, 0])), src)
    S.add("all_tied", "retrieval_auroc", {"preds": g.T(np.full(6, 0.5), "float32"),
                                           "target": g.T([1, 0, 0, 1, 0, 1], "int64"), "indexes": g.T(np.zeros(6), "int64")},
          0.5, src)
    S.add("logits", "retrieval_auroc(top_k=4)",
          {"preds": g.T([3.5, -2.0, 0.25, 7.0, -0.5, 1.5], "float32"), "target": g.T([0, 1, 1, 1, 0, 0], "int64"),
           "indexes": g.T([5, 5, 5, 5, 5, 5], "int64")},
          expected(np.full(6, 5), np.array([3.5, -2.0, 0.25, 7.0, -0.5, 1.5]), np.array([0, 1, 1, 1, 0, 0]), 4), src)
    path, k = S.write()
    print(f"wrote {k} cases to {path}")


if __name__ == "__main__":
    main()
