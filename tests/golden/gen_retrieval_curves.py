#!/usr/bin/env python3
"""Golden fixtures for retrieval_precision_recall_curve and retrieval_recall_at_fixed_precision
(fixtures/retrieval_curves.json).

Each query's curve is computed in numpy (hits among the first k documents by preds, stable descending order) with
TorchMetrics' RetrievalPrecisionRecallCurve / RetrievalRecallAtFixedPrecision rules applied around it; TorchMetrics
itself is not used. Cross-checked against sklearn's precision_score/recall_score of each query's top k.
Run with /usr/bin/python3 (numpy, scikit-learn).
"""
import os
import sys

import numpy as np
from sklearn.metrics import precision_score, recall_score

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as g  # noqa: E402

SRC = "numpy per-query top-k hits (TorchMetrics RetrievalPrecisionRecallCurve rules), checked with sklearn"


def query_curve(p, t, max_k, adaptive_k):
    """One query with at least one positive: (precision, recall) for k = 1..max_k, float32 like TorchMetrics."""
    n = len(t)
    order = np.argsort(-p, kind="stable")
    # rule: the documents are preds.topk(min(max_k, n)); a tie across position k with different targets would make
    #       the choice depend on topk's order -- src/torchmetrics/functional/retrieval/precision_recall_curve.py
    for k in range(1, min(max_k, n)):
        a, b = order[k - 1], order[k]
        assert p[a] != p[b] or t[a] == t[b], "an ambiguous tie across a k boundary"
    # rule: relevant = cumsum of the top documents' targets, padded with 0 up to max_k (so hits stay at the total)
    hits = np.cumsum(np.pad(t[order[:min(max_k, n)]].astype(np.float64), (0, max(0, max_k - n))))
    ks = np.arange(1, max_k + 1, dtype=np.float64)
    # rule: adaptive_k and max_k > n: topk = arange(1, n + 1) padded with n, i.e. the divisor min(k, n)
    denom = np.minimum(ks, n) if adaptive_k and max_k > n else ks
    # rule: recall = relevant / target.sum(); precision = relevant / topk (float32 tensors)
    precision, recall = hits / denom, hits / t.sum()
    for k in (1, min(max_k, n)):  # sklearn on the top k documents agrees
        pred = np.zeros(n, np.int64)
        pred[order[:k]] = 1
        assert abs(recall[k - 1] - recall_score(t, pred)) < 1e-12
        if not adaptive_k or k <= n:
            assert abs(precision[k - 1] - precision_score(t, pred) * k / ks[k - 1]) < 1e-12
    return precision.astype(np.float32), recall.astype(np.float32)


def curve(idx, preds, target, max_k=None, adaptive_k=False, action="neg", ignore_index=None, aggregation="mean"):
    # rule: rows whose target == ignore_index are dropped (_check_retrieval_inputs), the rest grouped by indexes
    #       -- src/torchmetrics/utilities/checks.py, src/torchmetrics/retrieval/precision_recall_curve.py (compute)
    if ignore_index is not None:
        keep = target != ignore_index
        idx, preds, target = idx[keep], preds[keep], target[keep]
    queries = np.unique(idx)
    # rule: max_k=None -> the largest query's size (max(split_sizes))
    k = max(int((idx == q).sum()) for q in queries) if max_k is None else max_k
    ps, rs = [], []
    for q in queries:
        m = idx == q
        p, t = preds[m].astype(np.float32), target[m]
        if t.sum() == 0:
            # rule: no positive: neg -> zeros(max_k), pos -> ones(max_k), skip -> left out (error raises)
            assert action != "error"
            if action != "skip":
                ps.append(np.full(k, 1.0 if action == "pos" else 0.0, np.float32))
                rs.append(ps[-1])
            continue
        a, b = query_curve(p, t, k, adaptive_k)
        ps.append(a)
        rs.append(b)

    def agg(vals):
        # rule: no query -> zeros(max_k); else _retrieval_aggregate(dim=0): mean / median (torch.median: the lower
        #       middle) / min / max per position -- src/torchmetrics/retrieval/base.py
        if not vals:
            return np.zeros(k)
        v = np.stack(vals).astype(np.float64)
        if aggregation == "median":
            return np.sort(v, axis=0)[(len(vals) - 1) // 2]
        return {"mean": np.mean, "min": np.min, "max": np.max}[aggregation](v, axis=0)

    return agg(ps), agg(rs), np.arange(1, k + 1)


def recall_at_fixed_precision(precision, recall, top_k, min_precision):
    # rule: the largest recall among the k whose precision >= min_precision (a float32 tensor compared with a Python
    #       float: in float32), ties to the larger k (max over (r, k) tuples); none, or a largest recall of 0:
    #       recall 0 and best_k = len(top_k) -- src/torchmetrics/retrieval/precision_recall_curve.py
    #       (_retrieval_recall_at_fixed_precision)
    p32, r32 = precision.astype(np.float32), recall.astype(np.float32)
    ok = p32 >= np.float32(min_precision)
    if not ok.any():
        return 0.0, len(top_k)
    best = max((float(r), int(k)) for r, k, o in zip(r32, top_k, ok) if o)
    if best[0] == 0.0:
        return 0.0, len(top_k)
    return float(recall[int(np.where(top_k == best[1])[0][0])]), best[1]


def inputs(idx, preds, target, pdt="float32", tdt="int64"):
    return {"preds": g.T(preds, pdt), "target": g.T(target, tdt), "indexes": g.T(idx, "int64")}


def main():
    S = g.Suite("retrieval_curves.json")
    rng = np.random.default_rng(5150)

    def add_curve(name, ins, idx, preds, target, **kw):
        args = {k: v for k, v in kw.items() if v is not None and not (k, v) in
                [("adaptive_k", False), ("empty_target_action", "neg"), ("aggregation", "mean")]}
        c = curve(idx, preds, target, kw.get("max_k"), kw.get("adaptive_k", False),
                  kw.get("empty_target_action", "neg"), kw.get("ignore_index"), kw.get("aggregation", "mean"))
        S.add(name, g.spec("retrieval_precision_recall_curve", args), ins, 0.0, SRC)
        S.cases[-1]["expected"] = [g._expected(c[0]), g._expected(c[1]), [int(x) for x in c[2]]]
        return c

    def add_rafp(name, ins, idx, preds, target, min_precision, **kw):
        args = {"min_precision": min_precision}
        args.update({k: v for k, v in kw.items() if v is not None and not (k, v) in
                     [("adaptive_k", False), ("empty_target_action", "neg"), ("aggregation", "mean")]})
        # rule: RetrievalRecallAtFixedPrecision passes **kwargs (aggregation) on to RetrievalPrecisionRecallCurve
        #       -- src/torchmetrics/retrieval/precision_recall_curve.py
        c = curve(idx, preds, target, kw.get("max_k"), kw.get("adaptive_k", False),
                  kw.get("empty_target_action", "neg"), kw.get("ignore_index"), kw.get("aggregation", "mean"))
        r, k = recall_at_fixed_precision(*c, min_precision)
        S.add(name, g.spec("retrieval_recall_at_fixed_precision", args), ins, 0.0, SRC)
        S.cases[-1]["expected"] = [g._expected(r), int(k)]
        return r, k

    # Random queries of 1..12 documents, distinct preds; query 30 without positives, query 31 all positive.
    N = 90
    idx = rng.integers(0, 12, N) * 10 // 4
    idx[:4] = 30
    idx[4:6] = 31
    target = (rng.random(N) < 0.4).astype(np.int64)
    target[idx == 30] = 0
    target[idx == 31] = 1
    distinct = rng.permutation(N) / N + 0.001
    # Ties: one decimal; every tie group of a query shares its target, so no tie is ambiguous.
    tied = np.round(rng.random(N), 1)
    ttied = target.copy()
    for q in np.unique(idx):
        for v in np.unique(tied[idx == q]):
            m = (idx == q) & (tied == v)
            ttied[m] = ttied[np.argmax(m)]
    tign = target.copy()
    tign[rng.random(N) < 0.15] = -1
    tign[idx == 30] = np.where(tign[idx == 30] == -1, -1, 0)
    D = inputs(idx, distinct, target)
    TIED = inputs(idx, tied, ttied)
    IGN = inputs(idx, distinct, tign)
    for action in ["neg", "pos", "skip"]:
        for max_k in [None, 1, 3, 8, 20]:
            for adaptive in [False, True]:
                name = f"curve_k{max_k}_{'adaptive_' if adaptive else ''}{action}"
                add_curve(name, D, idx, distinct, target, max_k=max_k, adaptive_k=adaptive, empty_target_action=action)
        add_curve(f"curve_tied_{action}", TIED, idx, tied, ttied, empty_target_action=action)
        add_curve(f"curve_tied_k5_adaptive_{action}", TIED, idx, tied, ttied, max_k=5, adaptive_k=True,
                  empty_target_action=action)
    for agg in ["median", "min", "max"]:
        for action in ["neg", "pos", "skip"]:
            add_curve(f"curve_{agg}_{action}", D, idx, distinct, target, empty_target_action=action, aggregation=agg)
        add_curve(f"curve_{agg}_k15_adaptive", D, idx, distinct, target, max_k=15, adaptive_k=True, aggregation=agg)
        add_curve(f"curve_{agg}_tied_k4", TIED, idx, tied, ttied, max_k=4, aggregation=agg)
        add_curve(f"curve_{agg}_ignore_index", IGN, idx, distinct, tign, max_k=6, ignore_index=-1, aggregation=agg)
    add_curve("curve_ignore_index", IGN, idx, distinct, tign, ignore_index=-1)
    add_curve("curve_ignore_index_k20_adaptive_skip", IGN, idx, distinct, tign, max_k=20, adaptive_k=True,
              ignore_index=-1, empty_target_action="skip")
    # An even number of queries (the median's lower middle) and only skipped queries (zeros).
    even = idx < 12
    add_curve("curve_median_even_queries", inputs(idx[even], distinct[even], target[even]), idx[even],
              distinct[even], target[even], max_k=5, aggregation="median")
    none = idx == 30
    for agg in ["mean", "median"]:
        add_curve(f"curve_all_skipped_{agg}", inputs(idx[none], distinct[none], target[none]), idx[none],
                  distinct[none], target[none], max_k=3, empty_target_action="skip", aggregation=agg)
    add_curve("curve_all_skipped_maxk_none", inputs(idx[none], distinct[none], target[none]), idx[none],
              distinct[none], target[none], empty_target_action="skip")
    # One query: the functional's example, float64 preds with bool targets, logits.
    one = np.zeros(3, np.int64)
    add_curve("curve_one_query_example", inputs(one, [0.2, 0.3, 0.5], [1, 0, 1], tdt="bool"), one,
              np.array([0.2, 0.3, 0.5]), np.array([1, 0, 1]), max_k=2)
    p8 = np.array([0.9, 0.2, 0.4, 0.8, 0.1, 0.3, 0.7, 0.6])
    t8 = np.array([1, 0, 1, 0, 0, 1, 1, 0])
    q8 = np.full(8, 7, np.int64)
    add_curve("curve_one_query_f64", inputs(q8, p8, t8, pdt="float64", tdt="bool"), q8, p8, t8)
    add_curve("curve_one_query_k12_adaptive", inputs(q8, p8 * 10 - 5, t8), q8, p8 * 10 - 5, t8, max_k=12,
              adaptive_k=True)
    add_curve("curve_one_query_k12", inputs(q8, p8 * 10 - 5, t8), q8, p8 * 10 - 5, t8, max_k=12)
    # The class docstring's example.
    ie = np.array([0, 0, 0, 0, 1, 1, 1])
    pe = np.array([0.4, 0.01, 0.5, 0.6, 0.2, 0.3, 0.5])
    te = np.array([1, 0, 0, 1, 1, 0, 1])
    c = add_curve("curve_docstring_example", inputs(ie, pe, te, tdt="bool"), ie, pe, te, max_k=4)
    assert np.allclose(c[0], [1.0, 0.5, 0.6667, 0.5], atol=1e-4) and np.allclose(c[1], [0.5, 0.5, 1.0, 1.0])

    # recall_at_fixed_precision.
    for mp in [0.0, 0.2, 0.35, 0.5, 0.8, 1.0]:
        add_rafp(f"rafp_{mp}", D, idx, distinct, target, mp)
        add_rafp(f"rafp_{mp}_k6_adaptive_skip", D, idx, distinct, target, mp, max_k=6, adaptive_k=True,
                 empty_target_action="skip")
        add_rafp(f"rafp_{mp}_tied_pos", TIED, idx, tied, ttied, mp, empty_target_action="pos")
        add_rafp(f"rafp_{mp}_ignore_index", IGN, idx, distinct, tign, mp, max_k=10, ignore_index=-1)
    for agg in ["median", "min", "max"]:
        add_rafp(f"rafp_0.3_{agg}", D, idx, distinct, target, 0.3, aggregation=agg)
        add_rafp(f"rafp_0.5_{agg}_k5_skip", D, idx, distinct, target, 0.5, max_k=5, empty_target_action="skip",
                 aggregation=agg)
    r, k = add_rafp("rafp_docstring_example", inputs(ie, pe, te, tdt="bool"), ie, pe, te, 0.8)
    assert (r, k) == (0.5, 1)
    # Precision exactly at min_precision (0.5 at k = 2 and 4), a recall plateau (ties to the larger k), none
    # qualifying (best_k = max_k), and recall 0 at every qualifying k.
    q = np.zeros(6, np.int64)
    pq, tq = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4]), np.array([1, 0, 0, 1, 0, 0])
    for mp, name in [(0.5, "at_min_precision"), (0.34, "plateau"), (0.99, "first_only")]:
        add_rafp(f"rafp_one_query_{name}", inputs(q, pq, tq), q, pq, tq, mp)
    tz = np.array([0, 1, 0, 0, 0, 0])
    r, k = add_rafp("rafp_none_qualifies", inputs(q, pq, tz), q, pq, tz, 0.9, max_k=3)
    assert (r, k) == (0.0, 3)
    r, k = add_rafp("rafp_zero_recall_qualifies", inputs(q, pq, tz), q, pq, tz, 0.0, max_k=1)
    assert (r, k) == (0.0, 1)
    r, k = add_rafp("rafp_no_positive_neg", inputs(q, pq, tq * 0), q, pq, tq * 0, 0.0)
    assert (r, k) == (0.0, 6)
    r, k = add_rafp("rafp_no_positive_pos", inputs(q, pq, tq * 0), q, pq, tq * 0, 1.0, empty_target_action="pos")
    assert (r, k) == (1.0, 6)
    path, n = S.write()
    print(f"wrote {n} cases to {path}")


if __name__ == "__main__":
    main()
