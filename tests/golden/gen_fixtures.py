#!/usr/bin/env python3
"""Golden-fixture generator for Tally (metrics must match TorchMetrics 1.5.x semantics).

Regenerate (needs numpy, scipy, scikit-learn; the Debian python3-* packages work):

    /usr/bin/python3 tests/golden/gen_fixtures.py

Expected values are computed ONLY with scikit-learn, SciPy and hand-written numpy.
TorchMetrics is not imported; its rules were read from the torchmetrics v1.5.2 sources
(identical to v1.5.0 for every file cited below).  Every rule encoded here carries a one-line
`# rule:` comment citing the file it was read from (path relative to the torchmetrics repo root).

Output: tests/golden/fixtures/{aggregation,regression,classification_binary,
classification_multiclass,classification_multilabel,curves,retrieval}.json -- see tests/golden/README.md.

Some expectations follow the points of torch.linspace (binned thresholds, calibration bins), which
LibTorch 2.x rounds differently from 1.13 (float64 linspace(0, 1, 11)[6] is 0.6000000000000001 in 1.13,
0.6 in 2.6). The fixtures hold the values under Debian 12's torch 1.13; run with a torch 2.x,

    python3 tests/golden/gen_fixtures.py --torch2-overlay calibration

recomputes each case of the suite from its stored inputs and writes tests/golden/fixtures/torch2/<suite>.json:
the expected values that differ there, which the golden test uses when built against LibTorch 2.x.
"""
import json
import math
import os
import warnings

import numpy as np
from scipy import stats
from sklearn import metrics as skm
from sklearn.metrics.pairwise import paired_cosine_distances

warnings.filterwarnings("ignore")
np.seterr(all="ignore")

HERE = os.path.dirname(os.path.abspath(__file__))
OUT_DIR = os.path.join(HERE, "fixtures")
RTOL, ATOL = 1e-5, 1e-6
F32_EPS = float(np.finfo(np.float32).eps)

# --------------------------------------------------------------------------------------------
# serialisation helpers
# --------------------------------------------------------------------------------------------
_NP = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "int32": np.int32, "bool": np.bool_}


def _num(x):
    x = float(x)
    if math.isnan(x):
        return None
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def _data_value(v, dtype):
    if dtype == "bool":
        return bool(v)
    if dtype in ("int64", "int32"):
        return int(v)
    if math.isnan(float(v)) or math.isinf(float(v)):
        return _num(v)
    if dtype == "float32":
        # shortest decimal that round-trips to this float32 (parse with strtof, or strtod + cast)
        s = np.format_float_positional(np.float32(v), unique=True, trim="-")
        r = float(s)
        assert np.float32(r) == np.float32(v)
        return r
    return float(v)


def _expected(x):
    a = np.asarray(x)
    if a.ndim == 0:
        if a.dtype.kind in "iub":
            return int(a)
        return _num(a)
    return [_expected(v) for v in a]


class T:
    """An input tensor: numpy array in the fixture dtype."""

    def __init__(self, arr, dtype):
        self.dtype = dtype
        self.a = np.asarray(arr).astype(_NP[dtype])

    def to_json(self):
        return {
            "dtype": self.dtype,
            "shape": list(self.a.shape),
            "data": [_data_value(v, self.dtype) for v in self.a.reshape(-1)],
        }

    @property
    def f64(self):
        return self.a.astype(np.float64)


class Quoted(str):
    """A string argument written quoted in the spec, e.g. normalize='true' (bare `true` parses as a boolean)."""


def _fmt_arg(v):
    if isinstance(v, Quoted):
        return "'" + str(v) + "'"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if v is None:
        return "none"
    if isinstance(v, float):
        r = repr(v)
        assert "e" not in r and "inf" not in r and "nan" not in r, r
        return r
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return str(v)


def spec(name, args):
    if not args:
        return name
    return name + "(" + ", ".join(f"{k}={_fmt_arg(v)}" for k, v in args.items()) + ")"


class Refused(str):
    """An expected error: the case's "error" is a substring of Tally's message (no "expected" value)."""


def _unsorted(thr):
    return thr is not None and bool(np.any(np.diff(np.asarray(thr, np.float64)) < 0))


# rule: an area under a binned curve needs ascending thresholds: TorchMetrics integrates the points in the
# list's order and so can return a negative AUROC for an unsorted list; Tally refuses the list instead
UNSORTED_AREA = Refused("thresholds must be sorted in increasing order")


class Suite:
    def __init__(self, fname):
        self.fname = fname
        self.cases = []
        self._names = set()

    def add(self, name, metric, inputs, expected, source, rtol=RTOL, atol=ATOL):
        assert name not in self._names, f"duplicate case name {name}"
        self._names.add(name)
        case = {"name": name, "metric": metric, "inputs": {k: v.to_json() for k, v in inputs.items()}}
        if isinstance(expected, Refused):
            case["error"] = str(expected)
        else:
            case["expected"] = _expected(expected)
        case.update({"rtol": rtol, "atol": atol, "source": source})
        self.cases.append(case)

    def write(self):
        os.makedirs(OUT_DIR, exist_ok=True)
        path = os.path.join(OUT_DIR, self.fname)
        with open(path, "w") as f:
            f.write('{"cases": [\n')
            f.write(",\n".join(json.dumps(c, separators=(",", ":"), allow_nan=False) for c in self.cases))
            f.write("\n]}\n")
        return path, len(self.cases)

    def write_and_report(self):
        """Writes the suite and prints "fixtures/<file>: N cases, K KiB"."""
        path, n = self.write()
        print(f"{os.path.relpath(path, HERE)}: {n} cases, "
              f"{os.path.getsize(path) // 1024} KiB")


def _close(a, b, tol=1e-9):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    ok = np.isclose(a, b, rtol=tol, atol=tol, equal_nan=True)
    assert ok.all(), (a, b)


def sdiv(num, den, zd=0.0):
    """TM _safe_divide: num/den, zero_division value where den == 0."""
    # rule: _safe_divide returns `zero_division` (default 0.0) where denom == 0 -- src/torchmetrics/utilities/compute.py
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    with np.errstate(all="ignore"):
        return np.where(den != 0, num / np.where(den != 0, den, 1.0), zd)


# --------------------------------------------------------------------------------------------
# classification: input formatting (TorchMetrics rules)
# --------------------------------------------------------------------------------------------
def _sigmoid(x):
    x = np.asarray(x)
    one = x.dtype.type(1.0)
    return (one / (one + np.exp(-x))).astype(x.dtype)


def tm_threshold(p, threshold):
    """Binary/multilabel label decision."""
    if p.dtype.kind == "f":
        # rule: float preds with ANY value outside [0,1] are logits -> sigmoid first -- src/torchmetrics/functional/classification/stat_scores.py (_binary_stat_scores_format)
        if not np.all((p >= 0) & (p <= 1)):
            p = _sigmoid(p)
        # rule: positive iff preds > threshold (strict), compared in the preds dtype -- src/torchmetrics/functional/classification/stat_scores.py (_binary_stat_scores_format)
        thr = p.dtype.type(threshold)
        d = np.abs(p.astype(np.float64) - np.float64(thr))
        assert not ((d > 0) & (d < 1e-5)).any(), "near-threshold value would make the fixture fragile"
        return (p > thr).astype(np.int64)
    return p.astype(np.int64)


def harness_chunks(n):
    """Row ranges tests/integration/golden_test.cc feeds as separate update() calls: all rows, batches of 7, two halves."""
    out = [(0, n)] + [(i, min(i + 7, n)) for i in range(0, n, 7)] + [(0, n // 2), (n // 2, n)]
    return [(a, b) for a, b in out if b > a]


def _is_logit_input(p):
    return p.dtype.kind == "f" and p.size > 0 and not np.all((p >= 0) & (p <= 1))


def check_update_invariant_logit_rule(kind, short, preds, target, ignore_index):
    """The logits-vs-probabilities decision is made per update() call in TorchMetrics; fixtures only use inputs
    where it is the same for every harness split, so one-shot, batched and merged evaluation must agree."""
    p, t = preds.a, target.a
    if p.dtype.kind != "f":
        return
    decisions = set()
    for a, b in harness_chunks(p.shape[0]):
        pc, tc = p[a:b], t[a:b]
        if kind == "binary" and short in CONFMAT_FAMILY and ignore_index is not None:
            pc = pc[tc != ignore_index]  # confmat family checks only non-ignored elements (see bin_prepare)
        if pc.size:
            decisions.add(_is_logit_input(pc))
    assert len(decisions) == 1, "logit detection differs between update() chunks; fix the fixture data"


def bin_prepare(preds, target, threshold=0.5, ignore_index=None, family="stat"):
    """Returns flat (t, p) 0/1 arrays with ignored elements removed."""
    p = preds.a
    t = target.a.astype(np.int64)
    if family == "stat":
        # rule: stat-scores family decides logits-vs-probs on the WHOLE tensor, ignored elements included -- src/torchmetrics/functional/classification/stat_scores.py
        lab = tm_threshold(p, threshold).reshape(-1)
        t = t.reshape(-1)
        keep = np.ones_like(t, bool) if ignore_index is None else t != ignore_index
        return t[keep], lab[keep]
    # rule: confusion-matrix family (confmat/jaccard/mcc/kappa) drops ignored elements BEFORE the logit check -- src/torchmetrics/functional/classification/confusion_matrix.py (_binary_confusion_matrix_format)
    p = p.reshape(-1)
    t = t.reshape(-1)
    keep = np.ones_like(t, bool) if ignore_index is None else t != ignore_index
    return t[keep], tm_threshold(p[keep], threshold)


def _check_mc_scores(scores, top_k):
    s = -np.sort(-scores, axis=1)
    assert (s[:, top_k - 1] > s[:, top_k]).all() if scores.shape[1] > top_k else True, "ambiguous top-k"
    assert (s[:, 0] > s[:, 1]).all(), "ambiguous argmax"


def mc_prepare(preds, target, C, top_k=1, ignore_index=None):
    p = preds.a
    t = target.a.astype(np.int64)
    scores = None
    ind = None
    lab = None
    if p.ndim == t.ndim + 1:
        scores = np.moveaxis(p, 1, -1).reshape(-1, C).astype(np.float64)
        t = t.reshape(-1)
        _check_mc_scores(scores, top_k)
        if top_k == 1:
            # rule: (N,C,...) float preds -> argmax over dim 1 (no softmax needed) -- src/torchmetrics/functional/classification/stat_scores.py (_multiclass_stat_scores_format)
            lab = scores.argmax(1)
        else:
            # rule: top_k>1 -> one-hot of the top_k largest raw scores per row -- src/torchmetrics/utilities/data.py (select_topk)
            ind = np.zeros_like(scores, dtype=np.int64)
            np.put_along_axis(ind, np.argsort(-scores, axis=1)[:, :top_k], 1, axis=1)
    else:
        # rule: top_k>1 requires (N,C,...) float preds; int label preds only work with top_k=1 -- src/torchmetrics/functional/classification/stat_scores.py
        assert top_k == 1
        lab = p.reshape(-1).astype(np.int64)
        t = t.reshape(-1)
    # rule: rows whose target == ignore_index are removed (also for an in-range class; its column still collects FPs) -- src/torchmetrics/functional/classification/stat_scores.py (_multiclass_stat_scores_update)
    keep = np.ones_like(t, bool) if ignore_index is None else t != ignore_index
    assert keep.any()
    assert ((t[keep] >= 0) & (t[keep] < C)).all()
    return {
        "kind": "multiclass",
        "C": C,
        "t": t[keep],
        "lab": None if lab is None else lab[keep],
        "ind": None if ind is None else ind[keep],
        "scores": None if scores is None else scores[keep],
        "top_k": top_k,
    }


def ml_prepare(preds, target, L, threshold=0.5, ignore_index=None):
    # rule: multilabel logit check runs over the whole (N,L) tensor before ignore masking, for all metrics -- src/torchmetrics/functional/classification/stat_scores.py, src/torchmetrics/functional/classification/confusion_matrix.py
    lab = tm_threshold(preds.a, threshold)
    t = target.a.astype(np.int64)
    assert lab.ndim == 2 and lab.shape[1] == L
    cols = []
    for j in range(L):
        # rule: multilabel ignore_index removes single (row,label) elements -- src/torchmetrics/functional/classification/stat_scores.py (_multilabel_stat_scores_format)
        keep = np.ones(t.shape[0], bool) if ignore_index is None else t[:, j] != ignore_index
        assert keep.any()
        cols.append((t[keep, j], lab[keep, j]))
    return {"kind": "multilabel", "L": L, "cols": cols, "lab": lab, "t": t, "ii": ignore_index}


def bin_as_cols(t, p):
    return {"kind": "binary", "cols": [(t, p)]}


# --------------------------------------------------------------------------------------------
# classification: per-class counts (from sklearn confusion matrices)
# --------------------------------------------------------------------------------------------
def counts(prep):
    if prep["kind"] == "multiclass":
        C = prep["C"]
        if prep["ind"] is None:
            mcm = skm.multilabel_confusion_matrix(prep["t"], prep["lab"], labels=list(range(C)))
        else:
            mcm = skm.multilabel_confusion_matrix(np.eye(C, dtype=np.int64)[prep["t"]], prep["ind"])
    else:
        mcm = np.stack([skm.confusion_matrix(tc, pc, labels=[0, 1]) for tc, pc in prep["cols"]])
    return {
        "tn": mcm[:, 0, 0].astype(np.int64),
        "fp": mcm[:, 0, 1].astype(np.int64),
        "fn": mcm[:, 1, 0].astype(np.int64),
        "tp": mcm[:, 1, 1].astype(np.int64),
    }


def _mc_y(prep):
    if prep["ind"] is None:
        return prep["t"], prep["lab"]
    return np.eye(prep["C"], dtype=np.int64)[prep["t"]], prep["ind"]


def sk_per_class(prep, fam, beta=1.0, zd=0.0):
    """Per-class score computed by scikit-learn (average=None)."""
    zd_sk = int(zd) if zd in (0, 1) else zd
    if prep["kind"] in ("binary", "multilabel"):
        out = []
        for tc, pc in prep["cols"]:
            if fam in ("precision", "recall", "fbeta"):
                P, R, Fb, _ = skm.precision_recall_fscore_support(
                    tc, pc, beta=beta, labels=[1], average=None, zero_division=zd_sk
                )
                out.append({"precision": P, "recall": R, "fbeta": Fb}[fam][0])
            elif fam == "specificity":
                out.append(skm.recall_score(tc, pc, labels=[0], average=None, zero_division=0)[0])
            elif fam == "accuracy":
                out.append(skm.accuracy_score(tc, pc))
            elif fam == "hamming":
                out.append(skm.hamming_loss(tc, pc))
            elif fam == "jaccard":
                out.append(skm.jaccard_score(tc, pc, labels=[1], average=None, zero_division=zd_sk)[0])
            else:
                raise KeyError(fam)
        return np.array(out, dtype=np.float64)
    C = prep["C"]
    labels = list(range(C))
    yt, yp = _mc_y(prep)
    if fam in ("precision", "recall", "fbeta"):
        P, R, Fb, _ = skm.precision_recall_fscore_support(
            yt, yp, beta=beta, labels=labels, average=None, zero_division=zd_sk
        )
        return {"precision": P, "recall": R, "fbeta": Fb}[fam].astype(np.float64)
    if fam in ("accuracy", "hamming"):
        # rule: multiclass per-class accuracy is tp/(tp+fn) (i.e. recall, 0 if class absent) -- src/torchmetrics/functional/classification/accuracy.py (_accuracy_reduce)
        R = skm.recall_score(yt, yp, labels=labels, average=None, zero_division=0).astype(np.float64)
        # rule: multiclass hamming = 1 - that per-class accuracy -- src/torchmetrics/functional/classification/hamming.py (_hamming_distance_reduce)
        return R if fam == "accuracy" else 1.0 - R
    if fam == "specificity":
        yt1 = np.eye(C, dtype=np.int64)[prep["t"]] if prep["ind"] is None else yt
        yp1 = np.eye(C, dtype=np.int64)[prep["lab"]] if prep["ind"] is None else yp
        return np.array(
            [skm.recall_score(yt1[:, c], yp1[:, c], labels=[0], average=None, zero_division=0)[0] for c in labels]
        )
    if fam == "jaccard":
        return skm.jaccard_score(yt, yp, labels=labels, average=None, zero_division=zd_sk).astype(np.float64)
    raise KeyError(fam)


def hand_per_class(prep, c, fam, beta=1.0, zd=0.0):
    tp, fp, tn, fn = c["tp"], c["fp"], c["tn"], c["fn"]
    b2 = beta * beta
    if fam == "precision":
        return sdiv(tp, tp + fp, zd)
    if fam == "recall":
        return sdiv(tp, tp + fn, zd)
    if fam == "fbeta":
        # rule: F-beta = (1+b^2)tp / ((1+b^2)tp + b^2 fn + fp), zero_division if denominator 0 -- src/torchmetrics/functional/classification/f_beta.py (_fbeta_reduce)
        return sdiv((1 + b2) * tp, (1 + b2) * tp + b2 * fn + fp, zd)
    if fam == "specificity":
        # rule: specificity = tn/(tn+fp), 0 on zero division (no zero_division arg) -- src/torchmetrics/functional/classification/specificity.py
        return sdiv(tn, tn + fp)
    if fam in ("accuracy", "hamming"):
        if prep["kind"] == "multiclass":
            acc = sdiv(tp, tp + fn)
        else:
            # rule: binary/multilabel per-label accuracy = (tp+tn)/(tp+tn+fp+fn) -- src/torchmetrics/functional/classification/accuracy.py (_accuracy_reduce)
            acc = sdiv(tp + tn, tp + tn + fp + fn)
        return acc if fam == "accuracy" else 1.0 - acc
    raise KeyError(fam)


def tm_micro(prep, c, fam, beta=1.0, zd=0.0):
    TP, FP, TN, FN = (int(c[k].sum()) for k in ("tp", "fp", "tn", "fn"))
    b2 = beta * beta
    # rule: micro = the formula applied to class-summed tp/fp/tn/fn -- src/torchmetrics/functional/classification/precision_recall.py, src/torchmetrics/functional/classification/f_beta.py, src/torchmetrics/functional/classification/accuracy.py, src/torchmetrics/functional/classification/specificity.py, src/torchmetrics/functional/classification/hamming.py
    if fam == "precision":
        return float(sdiv(TP, TP + FP, zd))
    if fam == "recall":
        return float(sdiv(TP, TP + FN, zd))
    if fam == "fbeta":
        return float(sdiv((1 + b2) * TP, (1 + b2) * TP + b2 * FN + FP, zd))
    if fam == "specificity":
        return float(sdiv(TN, TN + FP))
    if fam in ("accuracy", "hamming"):
        if prep["kind"] == "multiclass":
            acc = float(sdiv(TP, TP + FN))
        else:
            acc = float(sdiv(TP + TN, TP + TN + FP + FN))
        return acc if fam == "accuracy" else 1.0 - acc
    raise KeyError(fam)


def sk_micro(prep, fam, beta=1.0, zd=0.0):
    """sklearn value for micro average, where sklearn computes the same quantity (else None)."""
    zd_sk = int(zd) if zd in (0, 1) else zd
    if prep["kind"] == "multiclass":
        yt, yp = _mc_y(prep)
        labels = list(range(prep["C"]))
        if fam in ("precision", "recall", "fbeta"):
            P, R, Fb, _ = skm.precision_recall_fscore_support(
                yt, yp, beta=beta, labels=labels, average="micro", zero_division=zd_sk
            )
            return float({"precision": P, "recall": R, "fbeta": Fb}[fam]), "sklearn precision_recall_fscore_support(average='micro')"
        if fam in ("accuracy", "hamming"):
            if prep["ind"] is None:
                acc = skm.accuracy_score(prep["t"], prep["lab"])
                src = "sklearn accuracy_score"
            else:
                acc = skm.top_k_accuracy_score(prep["t"], prep["scores"], k=prep["top_k"], labels=labels)
                src = "sklearn top_k_accuracy_score"
            return (acc, src) if fam == "accuracy" else (1.0 - acc, "1 - " + src)
        return None, None
    tt = np.concatenate([tc for tc, _ in prep["cols"]])
    pp = np.concatenate([pc for _, pc in prep["cols"]])
    if fam == "accuracy":
        return skm.accuracy_score(tt, pp), "sklearn.metrics.accuracy_score over all non-ignored elements"
    if fam == "hamming":
        return skm.hamming_loss(tt, pp), "sklearn.metrics.hamming_loss over all non-ignored elements"
    if fam in ("precision", "recall", "fbeta"):
        P, R, Fb, _ = skm.precision_recall_fscore_support(tt, pp, beta=beta, labels=[1], average="micro", zero_division=zd_sk)
        return float({"precision": P, "recall": R, "fbeta": Fb}[fam]), "sklearn.metrics.precision_recall_fscore_support(average='micro') over all non-ignored elements"
    return None, None


def tm_weights(prep, c, fam, average, top_k=1):
    tp, fp, fn = c["tp"], c["fp"], c["fn"]
    if average == "weighted":
        # rule: weighted = weights tp+fn (support) -- src/torchmetrics/utilities/compute.py (_adjust_weights_safe_divide)
        return (tp + fn).astype(np.float64)
    w = np.ones(len(tp), dtype=np.float64)
    if prep["kind"] == "multiclass":
        # rule: multiclass macro drops classes with tp+fp+fn==0; with top_k>1 drops tp+fn==0 instead -- src/torchmetrics/utilities/compute.py (_adjust_weights_safe_divide)
        # rule: only precision/recall/accuracy pass top_k to that helper; fbeta/specificity/hamming always use tp+fp+fn==0 -- src/torchmetrics/functional/classification/f_beta.py, src/torchmetrics/functional/classification/specificity.py, src/torchmetrics/functional/classification/hamming.py
        if top_k != 1 and fam in ("precision", "recall", "accuracy"):
            w[(tp + fn) == 0] = 0.0
        else:
            w[(tp + fp + fn) == 0] = 0.0
    # rule: multilabel macro keeps every label (no exclusion) -- src/torchmetrics/utilities/compute.py (multilabel=True)
    return w


def tm_weighted_mean(per, w):
    # rule: average = sum(w*score)/sum(w), 0 if sum(w)==0 -- src/torchmetrics/utilities/compute.py (_adjust_weights_safe_divide)
    s = w.sum()
    return float((w * per).sum() / s) if s != 0 else 0.0


FAM_NAME = {
    "accuracy": "accuracy",
    "precision": "precision",
    "recall": "recall",
    "f1_score": "fbeta",
    "fbeta_score": "fbeta",
    "specificity": "specificity",
    "hamming_distance": "hamming",
}

SK_FUNC = {  # (binary / multilabel per-label column, multiclass per class)
    "accuracy": ("sklearn accuracy_score", "sklearn recall_score(average=None) (= TM per-class accuracy)"),
    "precision": ("sklearn precision_recall_fscore_support", "sklearn precision_recall_fscore_support(average=None)"),
    "recall": ("sklearn precision_recall_fscore_support", "sklearn precision_recall_fscore_support(average=None)"),
    "fbeta": ("sklearn precision_recall_fscore_support(beta)", "sklearn precision_recall_fscore_support(beta, average=None)"),
    "specificity": ("sklearn recall_score(labels=[0]) (negative-class recall)", "sklearn recall_score(labels=[0]) one-vs-rest per class"),
    "hamming": ("sklearn hamming_loss", "1 - sklearn recall_score(average=None)"),
}


def stat_metric_expected(prep, short, args):
    """accuracy/precision/recall/f1/fbeta/specificity/hamming for any task."""
    fam = FAM_NAME[short]
    beta = float(args.get("beta", 1.0))
    zd = float(args.get("zero_division", 0.0))
    top_k = int(args.get("top_k", 1))
    c = counts(prep)
    hand = hand_per_class(prep, c, fam, beta, zd)
    sk = sk_per_class(prep, fam, beta, zd)
    _close(hand, sk)
    if prep["kind"] == "binary":
        return float(sk[0]), SK_FUNC[fam][0]
    skf = SK_FUNC[fam][1] if prep["kind"] == "multiclass" else SK_FUNC[fam][0] + " per label"
    average = args.get("average", "macro")  # rule: multiclass/multilabel default average='macro' -- src/torchmetrics/functional/classification/*.py signatures
    if average == "none":
        return sk, skf
    if average == "micro":
        val = tm_micro(prep, c, fam, beta, zd)
        skv, src = sk_micro(prep, fam, beta, zd)
        if skv is not None:
            _close(val, skv)
            return skv, src
        return val, "hand-computed micro from class-summed sklearn multilabel_confusion_matrix counts"
    w = tm_weights(prep, c, fam, average, top_k)
    rule = (
        "TM weighted rule (w=tp+fn)"
        if average == "weighted"
        else (
            "TM macro rule (drop classes with "
            + ("tp+fn==0" if (top_k != 1 and fam in ("precision", "recall", "accuracy")) else "tp+fp+fn==0")
            + ")"
            if prep["kind"] == "multiclass"
            else "TM macro rule (plain mean over all labels)"
        )
    )
    return tm_weighted_mean(sk, w), f"{skf} + {rule}"


def stat_scores_expected(prep, args):
    c = counts(prep)
    # rule: stat_scores layout [tp, fp, tn, fn, support=tp+fn] on the last dim -- src/torchmetrics/functional/classification/stat_scores.py (_*_stat_scores_compute)
    res = np.stack([c["tp"], c["fp"], c["tn"], c["fn"], c["tp"] + c["fn"]], axis=-1)
    src = "hand-computed from sklearn multilabel_confusion_matrix counts"
    if prep["kind"] == "binary":
        return res[0], src + " -> [tp,fp,tn,fn,support]"
    average = args.get("average", "macro")
    if average == "none":
        return res, src + " -> per class [tp,fp,tn,fn,support], shape (C,5)"
    if average == "micro":
        # rule: micro sums counts over classes (multiclass top_k=1: tp=correct, fp=fn=wrong, tn=C*N-tp-fp-fn) -- src/torchmetrics/functional/classification/stat_scores.py
        return res.sum(0), src + " summed over classes"
    if average == "macro":
        # rule: stat_scores macro = plain float mean over ALL classes (no exclusion) -- src/torchmetrics/functional/classification/stat_scores.py (_multiclass_stat_scores_compute)
        return res.astype(np.float64).mean(0), src + " averaged over all classes"
    w = (c["tp"] + c["fn"]).astype(np.float64)
    assert w.sum() > 0
    # rule: stat_scores weighted = sum_c res_c * support_c / sum(support) -- src/torchmetrics/functional/classification/stat_scores.py
    return (res * (w / w.sum())[:, None]).sum(0), src + " weighted by support"


def confmat_expected(prep, args):
    norm = args.get("normalize", None)
    norm = None if norm == "none" else norm
    # rule: confmat rows=target, cols=pred; normalize true=rows, pred=cols, all=total; NaN (0/0) -> 0 -- src/torchmetrics/functional/classification/confusion_matrix.py (_confusion_matrix_reduce)
    if prep["kind"] == "multiclass":
        C = prep["C"]
        return (
            skm.confusion_matrix(prep["t"], prep["lab"], labels=list(range(C)), normalize=norm),
            f"sklearn.metrics.confusion_matrix(labels=range(C), normalize={norm!r})",
        )
    mats = [skm.confusion_matrix(tc, pc, labels=[0, 1], normalize=norm) for tc, pc in prep["cols"]]
    if prep["kind"] == "binary":
        return mats[0], f"sklearn.metrics.confusion_matrix(labels=[0,1], normalize={norm!r}) -> [[tn,fp],[fn,tp]]"
    # rule: multilabel confmat shape (L,2,2), each [[tn,fp],[fn,tp]], normalized per label -- src/torchmetrics/functional/classification/confusion_matrix.py
    return np.stack(mats), f"sklearn.metrics.confusion_matrix(labels=[0,1], normalize={norm!r}) per label, stacked (L,2,2)"


def jaccard_expected(prep, args):
    zd = float(args.get("zero_division", 0.0))
    zd_sk = int(zd) if zd in (0, 1) else zd
    if prep["kind"] == "binary":
        tc, pc = prep["cols"][0]
        v = skm.jaccard_score(tc, pc, labels=[1], average=None, zero_division=zd_sk)[0]
        c = counts(prep)
        # rule: binary jaccard = tp/(tp+fp+fn), zero_division when 0/0 -- src/torchmetrics/functional/classification/jaccard.py (_jaccard_index_reduce)
        _close(v, sdiv(c["tp"][0], c["tp"][0] + c["fp"][0] + c["fn"][0], zd))
        return float(v), "sklearn.metrics.jaccard_score(binary)"
    average = args.get("average", "macro")
    ii = args.get("ignore_index", None)
    if prep["kind"] == "multiclass":
        C = prep["C"]
        cm = skm.confusion_matrix(prep["t"], prep["lab"], labels=list(range(C)))
        per = skm.jaccard_score(prep["t"], prep["lab"], labels=list(range(C)), average=None, zero_division=zd_sk)
        num = np.diag(cm).astype(np.float64)
        den = (cm.sum(0) + cm.sum(1) - np.diag(cm)).astype(np.float64)
        support = cm.sum(1).astype(np.float64)
        present = (cm.sum(0) + cm.sum(1)) > 0
    else:
        C = prep["L"]
        c = counts(prep)
        per = sk_per_class(prep, "jaccard", zd=zd)
        num = c["tp"].astype(np.float64)
        den = (c["tp"] + c["fp"] + c["fn"]).astype(np.float64)
        support = (c["tp"] + c["fn"]).astype(np.float64)
        present = np.ones(C, bool)
    _close(per, sdiv(num, den, zd))
    # rule: ignore_index counts as a class index iff 0 <= ignore_index < num_classes (also for multilabel: < num_labels!) -- src/torchmetrics/functional/classification/jaccard.py (_jaccard_index_reduce)
    ii_in = ii is not None and 0 <= ii < C
    if average == "none":
        return per, "sklearn.metrics.jaccard_score(average=None) per class"
    if average == "micro":
        # rule: micro = sum(tp) / (sum(tp+fp+fn) - denom[ignore_index] if ignore_index is a class index) -- src/torchmetrics/functional/classification/jaccard.py
        v = float(sdiv(num.sum(), den.sum() - (den[ii] if ii_in else 0.0), zd))
        return v, "hand-computed from sklearn.metrics.confusion_matrix: torchmetrics micro jaccard rule"
    if average == "weighted":
        # rule: weighted weights = target support (multiclass confmat row sums, multilabel tp+fn) -- src/torchmetrics/functional/classification/jaccard.py
        w = support.copy()
        rule = "weights=support"
    else:
        w = np.ones(C)
        if ii_in:
            w[ii] = 0.0
        if prep["kind"] == "multiclass":
            # rule: multiclass macro jaccard drops ignore_index class and classes absent from both target and preds -- src/torchmetrics/functional/classification/jaccard.py
            w[~present] = 0.0
        rule = "macro weights (0 for ignore_index class" + (" and absent classes)" if prep["kind"] == "multiclass" else ")")
    # rule: ((w*j)/sum(w)).sum() without safe divide -> NaN if sum(w)==0 -- src/torchmetrics/functional/classification/jaccard.py
    v = float((w * per).sum() / w.sum()) if w.sum() != 0 else float("nan")
    return v, f"sklearn.metrics.jaccard_score(average=None) + torchmetrics {rule}"


def tm_mcc_2x2(tn, fp, fn, tp):
    """TorchMetrics binary MCC incl. its special cases (hand-computed)."""
    tn, fp, fn, tp = (float(v) for v in (tn, fp, fn, tp))
    # rule: 2x2 confmat: tp+tn!=0 & fp+fn==0 -> 1 ; tp+tn==0 & fp+fn!=0 -> -1 -- src/torchmetrics/functional/classification/matthews_corrcoef.py (_matthews_corrcoef_reduce)
    if tp + tn != 0 and fp + fn == 0:
        return 1.0, "torchmetrics 2x2 rule: no errors -> 1"
    if tp + tn == 0 and fp + fn != 0:
        return -1.0, "torchmetrics 2x2 rule: no correct -> -1"
    if (tp + fp) * (tp + fn) * (tn + fp) * (tn + fn) == 0:
        # rule: zero denominator on 2x2 -> sqrt(eps)*(a-b)/sqrt(prod(marginal+eps)), eps=float32 eps -- src/torchmetrics/functional/classification/matthews_corrcoef.py
        if fn == 0 and tn == 0:
            a, b = tp, fp
        elif fp == 0 and tn == 0:
            a, b = tp, fn
        elif tp == 0 and fn == 0:
            a, b = tn, fp
        else:
            a, b = tn, fn
        e = F32_EPS
        v = math.sqrt(e) * (a - b) / math.sqrt((tp + fp + e) * (tp + fn + e) * (tn + fp + e) * (tn + fn + e))
        return v, "hand-computed: torchmetrics 2x2 zero-denominator eps rule"
    return None, None


def mcc_expected(prep):
    if prep["kind"] == "multiclass" and prep["C"] > 2:
        # rule: multiclass MCC generic formula, 0 if denominator 0 (same as sklearn) -- src/torchmetrics/functional/classification/matthews_corrcoef.py
        return skm.matthews_corrcoef(prep["t"], prep["lab"]), "sklearn.metrics.matthews_corrcoef"
    if prep["kind"] == "multiclass":
        tt, pp = prep["t"], prep["lab"]
    else:
        # rule: multilabel MCC = binary MCC of the label-summed 2x2 confmat -- src/torchmetrics/functional/classification/matthews_corrcoef.py
        tt = np.concatenate([tc for tc, _ in prep["cols"]])
        pp = np.concatenate([pc for _, pc in prep["cols"]])
    tn, fp, fn, tp = skm.confusion_matrix(tt, pp, labels=[0, 1]).ravel()
    v, src = tm_mcc_2x2(tn, fp, fn, tp)
    if v is not None:
        return v, src + " on sklearn.metrics.confusion_matrix counts"
    return skm.matthews_corrcoef(tt, pp), "sklearn.metrics.matthews_corrcoef" + (
        " on flattened non-ignored elements" if prep["kind"] == "multilabel" else ""
    )


def kappa_expected(prep, args):
    w = args.get("weights", None)
    w = None if w == "none" else w
    if prep["kind"] == "multiclass":
        tt, pp, labels = prep["t"], prep["lab"], list(range(prep["C"]))
    else:
        (tt, pp), labels = prep["cols"][0], [0, 1]
    # rule: kappa = 1 - sum(W*O)/sum(W*E), E = outer(row sums, col sums)/N; W none=1-I, linear=|i-j|, quadratic=(i-j)^2; 0/0 -> NaN -- src/torchmetrics/functional/classification/cohen_kappa.py
    return skm.cohen_kappa_score(tt, pp, labels=labels, weights=w), f"sklearn.metrics.cohen_kappa_score(labels, weights={w!r})"


# --------------------------------------------------------------------------------------------
# classification data generators
# --------------------------------------------------------------------------------------------
def _nudge(x, avoid=(0.3, 0.5, 0.7), step=0.001):
    x = np.array(x, dtype=np.float64)
    for a in avoid:
        x[np.isclose(x, a, atol=1e-12)] += step
    return x


def _softmax(z):
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def mc_scores(rng, t, C, decimals=2, strength=1.6, logits=False, max_k=3):
    N = len(t)
    out = np.zeros((N, C))
    for i in range(N):
        while True:
            z = rng.normal(0, 1.0, C)
            z[t[i]] += strength
            row = np.round(z * 2 if logits else _softmax(z), decimals)
            s = np.sort(row)[::-1]
            if np.all(np.diff(s[: min(C, max_k + 1)]) < 0):
                out[i] = row
                break
    return out


BIN_METRICS = [
    ("binary_accuracy", {}),
    ("binary_precision", {}),
    ("binary_recall", {}),
    ("binary_f1_score", {}),
    ("binary_fbeta_score", {"beta": 0.5}),
    ("binary_fbeta_score", {"beta": 2.0}),
    ("binary_specificity", {}),
    ("binary_stat_scores", {}),
    ("binary_hamming_distance", {}),
    ("binary_confusion_matrix", {}),
    ("binary_confusion_matrix", {"normalize": "true"}),
    ("binary_confusion_matrix", {"normalize": "pred"}),
    ("binary_confusion_matrix", {"normalize": "all"}),
    ("binary_jaccard_index", {}),
    ("binary_matthews_corrcoef", {}),
    ("binary_cohen_kappa", {}),
    ("binary_cohen_kappa", {"weights": "linear"}),
    ("binary_cohen_kappa", {"weights": "quadratic"}),
]
CONFMAT_FAMILY = ("confusion_matrix", "jaccard_index", "matthews_corrcoef", "cohen_kappa")
ZD_METRICS = ("precision", "recall", "f1_score", "fbeta_score", "jaccard_index")
MDA_METRICS = ("accuracy", "precision", "recall", "f1_score", "fbeta_score", "specificity", "stat_scores", "hamming_distance", "exact_match")


def _short(metric):
    for pre in ("binary_", "multiclass_", "multilabel_"):
        if metric.startswith(pre):
            return metric[len(pre):]
    return metric


def _argtag(margs):
    if not margs:
        return ""
    return "_" + "_".join(f"{k}-{v}" for k, v in margs.items())


def classification_expected(kind, short, preds, target, args):
    thr = float(args.get("threshold", 0.5))
    ii = args.get("ignore_index", None)
    if kind in ("binary", "multilabel"):
        check_update_invariant_logit_rule(kind, short, preds, target, ii)
    if kind == "binary":
        fam = "confmat" if short in CONFMAT_FAMILY else "stat"
        t, p = bin_prepare(preds, target, thr, ii, fam)
        assert len(t) > 0
        prep = bin_as_cols(t, p)
    elif kind == "multiclass":
        if short == "exact_match":
            return exact_match_mc(preds, target, args)
        prep = mc_prepare(preds, target, args["num_classes"], int(args.get("top_k", 1)), ii)
    else:
        if short == "exact_match":
            return exact_match_ml(preds, target, args)
        prep = ml_prepare(preds, target, args["num_labels"], thr, ii)
    if short in FAM_NAME:
        return stat_metric_expected(prep, short, args)
    if short == "stat_scores":
        return stat_scores_expected(prep, args)
    if short == "confusion_matrix":
        return confmat_expected(prep, args)
    if short == "jaccard_index":
        return jaccard_expected(prep, args)
    if short == "matthews_corrcoef":
        return mcc_expected(prep)
    if short == "cohen_kappa":
        return kappa_expected(prep, args)
    raise KeyError(short)


def exact_match_mc(preds, target, args):
    p = preds.a
    t = target.a.astype(np.int64)
    if p.ndim == t.ndim + 1:
        _check_mc_scores(np.moveaxis(p, 1, -1).reshape(-1, p.shape[1]), 1)
        lab = p.argmax(1)
    else:
        lab = p.astype(np.int64)
    lab = lab.reshape(lab.shape[0], -1).copy()
    t = t.reshape(t.shape[0], -1)
    ii = args.get("ignore_index", None)
    if ii is not None:
        # rule: multiclass exact_match sets preds:=ignore_index where target==ignore_index, so ignored positions MATCH; rows are not dropped -- src/torchmetrics/functional/classification/exact_match.py
        lab[t == ii] = ii
    # rule: a sample matches iff all its positions match; value = matches / N -- src/torchmetrics/functional/classification/exact_match.py
    v = float(np.all(lab == t, axis=1).mean())
    if ii is None and t.shape[1] == 1:
        _close(v, skm.accuracy_score(t[:, 0], lab[:, 0]))
        return v, "sklearn.metrics.accuracy_score (1 position per sample: exact match == accuracy)"
    return v, "hand-computed (numpy): fraction of samples whose positions all match" + (
        "; ignored positions count as matching" if ii is not None else ""
    )


def exact_match_ml(preds, target, args):
    L = args["num_labels"]
    lab = tm_threshold(preds.a, float(args.get("threshold", 0.5)))
    t = target.a.astype(np.int64).copy()
    ii = args.get("ignore_index", None)
    if ii is not None:
        # rule: multilabel exact_match sets ignored targets to -1 and compares -> any ignored element makes the row a NON-match -- src/torchmetrics/functional/classification/exact_match.py, src/torchmetrics/functional/classification/stat_scores.py
        t[t == ii] = -1
    v = float(np.all(lab == t, axis=1).mean())
    if ii is None:
        _close(v, skm.accuracy_score(t, lab))
        return v, "sklearn.metrics.accuracy_score (multilabel subset accuracy)"
    return v, "hand-computed (numpy): subset accuracy; rows containing an ignored element never match"


def add_cls_case(S, kind, metric_base, margs, scen_tag, preds, target, sargs):
    short = _short(metric_base)
    args = dict(margs)
    args.update(sargs)
    expected, source = classification_expected(kind, short, preds, target, args)
    name = f"{short}{_argtag(margs)}__{scen_tag}"
    ii = args.get("ignore_index", None)
    if kind == "multilabel" and short == "jaccard_index" and ii is not None and 0 <= ii < args["num_labels"]:
        name += "__QUIRK_ignore_index_treated_as_label_index"
    S.add(name, spec(metric_base, args), {"preds": preds, "target": target}, expected, source)


# --------------------------------------------------------------------------------------------
# binary
# --------------------------------------------------------------------------------------------
def gen_binary():
    S = Suite("classification_binary.json")
    rng = np.random.default_rng(1001)
    N = 32
    t = rng.integers(0, 2, N)
    prob = _nudge(np.round(0.35 * t + 0.65 * rng.random(N), 3))
    logit = np.round(rng.normal(0, 1.8, N) + 1.2 * (2 * t - 1), 2)
    logit[logit == 0] = 0.01
    lab = (rng.random(N) < np.where(t == 1, 0.75, 0.3)).astype(np.int64)
    t2 = rng.integers(0, 2, (8, 4))
    prob2 = _nudge(np.round(0.3 * t2 + 0.7 * rng.random((8, 4)), 3))

    scen = []  # (tag, preds, target, scenario args, restriction or None)
    scen.append(("prob_f32", T(prob, "float32"), T(t, "int64"), {}, None))
    scen.append(("prob_f64", T(prob, "float64"), T(t, "int64"), {}, None))
    scen.append(("logit_f32", T(logit, "float32"), T(t, "int64"), {}, None))
    scen.append(("logit_f64", T(logit, "float64"), T(t, "int32"), {}, None))
    scen.append(("label_i64", T(lab, "int64"), T(t, "int64"), {}, None))
    scen.append(("label_bool_target_i32", T(lab.astype(bool), "bool"), T(t, "int32"), {}, None))
    scen.append(("multidim_8x4_prob_f32", T(prob2, "float32"), T(t2, "int64"), {}, None))
    scen.append(("prob_f32_thr0.3", T(prob, "float32"), T(t, "int64"), {"threshold": 0.3}, None))
    scen.append(("logit_f32_thr0.7", T(logit, "float32"), T(t, "int64"), {"threshold": 0.7}, None))
    scen.append(("prob_f32_global", T(prob, "float32"), T(t, "int64"), {"multidim_average": "global"}, "mda"))
    # ties exactly at the threshold -> negative (strict >)
    tie_p = np.array([0.5, 0.5, 0.5, 0.5, 0.9, 0.1, 0.62, 0.41])
    tie_t = np.array([1, 0, 1, 0, 1, 0, 0, 1])
    scen.append(("tie_0.5_f32", T(tie_p, "float32"), T(tie_t, "int64"), {}, None))
    tie3 = np.array([0.3, 0.3, 0.3, 0.31, 0.29, 0.8, 0.05, 0.3])
    tie3_t = np.array([1, 0, 1, 1, 0, 1, 0, 0])
    # float32(0.3) == float32(threshold 0.3) -> negative; a double comparison would make it positive
    scen.append(("tie_0.3_f32_thr0.3", T(tie3, "float32"), T(tie3_t, "int64"), {"threshold": 0.3}, None))
    scen.append(("tie_0.3_f64_thr0.3", T(tie3, "float64"), T(tie3_t, "int64"), {"threshold": 0.3}, None))
    # logit 0 -> sigmoid exactly 0.5 -> negative
    zl = np.array([0.0, 0.0, 2.5, -1.5, 0.0, 3.0, -0.7, 1.2])
    zl_t = np.array([1, 0, 1, 0, 1, 1, 1, 0])
    scen.append(("logit_zero_tie_f32", T(zl, "float32"), T(zl_t, "int64"), {}, None))
    # floats all inside [0,1] are never sigmoid-ed even if the user meant logits
    u = np.array([0.2, 0.7, 0.9, 0.1, 0.55, 0.45, 1.0, 0.0])
    u_t = np.array([0, 1, 1, 0, 0, 1, 1, 0])
    scen.append(("unit_range_floats_not_sigmoided", T(u, "float32"), T(u_t, "int64"), {}, None))
    # ignore_index
    t_m1 = t.copy()
    t_m1[rng.choice(N, 7, replace=False)] = -1
    scen.append(("prob_f32_ignore-1", T(prob, "float32"), T(t_m1, "int64"), {"ignore_index": -1}, None))
    scen.append(("label_i64_ignore-1", T(lab, "int64"), T(t_m1, "int64"), {"ignore_index": -1}, None))
    scen.append(("logit_f32_ignore-1", T(logit, "float32"), T(t_m1, "int64"), {"ignore_index": -1}, None))
    scen.append(("prob_f32_ignore0_real_class", T(prob, "float32"), T(t, "int64"), {"ignore_index": 0}, None))
    # an out-of-[0,1] value only at an ignored position: stat family sigmoid-s everything, confmat family does not
    q_p = np.array([0.2, 0.7, 3.0, 0.4, 0.6, 0.45, 0.55, 0.1, 0.8, -2.0, 0.3, 0.65, 0.9, 0.35])
    q_t = np.array([0, 1, -1, 0, 1, 1, 0, 0, 1, -1, 1, 0, 1, 0])
    scen.append(("ignored_elem_is_logit_quirk", T(q_p, "float32"), T(q_t, "int64"), {"ignore_index": -1}, None))
    # edge cases
    scen.append(("one_row_pos", T([0.8], "float32"), T([1], "int64"), {}, None))
    scen.append(("one_row_neg_wrong", T([0.8], "float32"), T([0], "int64"), {}, None))
    ac_t = np.array([1, 0, 0, 1, 1, 0, 1, 0])
    scen.append(("all_correct", T(np.where(ac_t == 1, 0.9, 0.2), "float32"), T(ac_t, "int64"), {}, None))
    scen.append(("all_wrong", T(np.where(ac_t == 1, 0.1, 0.8), "float32"), T(ac_t, "int64"), {}, None))
    scen.append(("all_wrong_labels", T(1 - ac_t, "int64"), T(ac_t, "int64"), {}, None))
    scen.append(("no_pred_pos", T([0.1, 0.2, 0.4, 0.3, 0.05, 0.45], "float32"), T([1, 0, 1, 0, 0, 1], "int64"), {}, None))
    scen.append(("no_target_pos", T([0.9, 0.2, 0.6, 0.3, 0.05, 0.45], "float32"), T([0, 0, 0, 0, 0, 0], "int64"), {}, None))
    scen.append(("all_negative", T([0, 0, 0, 0, 0], "int64"), T([0, 0, 0, 0, 0], "int64"), {}, None))
    scen.append(("all_positive", T([1, 1, 1, 1], "int64"), T([1, 1, 1, 1], "int64"), {}, None))
    scen.append(("all_pred_pos_mixed_target", T([1, 1, 1, 1, 1], "int64"), T([1, 1, 1, 0, 0], "int64"), {}, None))
    for tag in ("no_pred_pos", "no_target_pos", "all_negative"):
        base = [s for s in scen if s[0] == tag][0]
        scen.append((tag + "_zd1", base[1], base[2], {"zero_division": 1.0}, "zd"))
    scen.append(("all_negative_zd1_int", T([0, 0, 0], "int64"), T([0, 0, 0], "int64"), {"zero_division": 1}, "zd"))
    scen.append(("n300_prob_f32", None, None, {}, "n300"))

    big_t = rng.integers(0, 2, 300)
    big_p = _nudge(np.round(0.3 * big_t + 0.7 * rng.random(300), 3))
    variant_subset = {
        "prob_f32", "label_i64", "logit_f32", "prob_f32_ignore-1", "all_negative", "all_pred_pos_mixed_target",
        "tie_0.3_f32_thr0.3", "no_pred_pos", "ignored_elem_is_logit_quirk", "no_pred_pos_zd1", "all_negative_zd1",
    }
    for metric, margs in BIN_METRICS:
        short = _short(metric)
        is_variant = (short == "fbeta_score" and margs.get("beta") == 0.5) or (
            short in ("confusion_matrix", "cohen_kappa") and margs
        )
        for tag, p, tt, sargs, restr in scen:
            if is_variant and tag not in variant_subset:
                continue
            if restr == "zd" and short not in ZD_METRICS:
                continue
            if restr == "mda" and short not in MDA_METRICS:
                continue
            if restr == "n300":
                if short not in ("f1_score", "accuracy", "matthews_corrcoef", "confusion_matrix") or margs:
                    continue
                p, tt = T(big_p, "float32"), T(big_t, "int64")
            add_cls_case(S, "binary", metric, margs, tag, p, tt, sargs)
    # the bare token `true` parses as a boolean; the quoted string form must mean the same
    add_cls_case(S, "binary", "binary_confusion_matrix", {"normalize": Quoted("true")}, "prob_f32_quoted", T(prob, "float32"), T(t, "int64"), {})
    return S


# --------------------------------------------------------------------------------------------
# multiclass
# --------------------------------------------------------------------------------------------
MC_AVG_METRICS = [
    ("multiclass_accuracy", {}),
    ("multiclass_precision", {}),
    ("multiclass_recall", {}),
    ("multiclass_f1_score", {}),
    ("multiclass_fbeta_score", {"beta": 2.0}),
    ("multiclass_specificity", {}),
    ("multiclass_stat_scores", {}),
    ("multiclass_hamming_distance", {}),
]


def gen_multiclass():
    S = Suite("classification_multiclass.json")
    rng = np.random.default_rng(2002)
    C, N = 4, 14
    t = rng.integers(0, C, N)
    prob = mc_scores(rng, t, C)
    logit = mc_scores(rng, t, C, logits=True)
    lab = np.where(rng.random(N) < 0.6, t, rng.integers(0, C, N))
    # class 2 absent from target AND preds
    t_abs = rng.choice([0, 1, 3], N)
    lab_abs = np.where(rng.random(N) < 0.6, t_abs, rng.choice([0, 1, 3], N))
    prob_abs = mc_scores(rng, t_abs, C)
    prob_abs[:, 2] = 0.0  # never argmax / never top-2 (other entries > 0 after rounding is checked below)
    assert (np.sort(prob_abs, axis=1)[:, -3] > 0).all()
    # class 3 never in target but predicted
    t_po = rng.choice([0, 1, 2], N)
    lab_po = np.where(rng.random(N) < 0.6, t_po, 3)
    # ignore_index
    t_m1 = t.copy()
    t_m1[rng.choice(N, 5, replace=False)] = -1
    # top-k where class 3 never in target but often in top-2
    t_tk = rng.choice([0, 1, 2], N)
    prob_tk = mc_scores(rng, t_tk, C)

    def S_(tag, p, tt, a, kinds="all"):
        return (tag, p, tt, a, kinds)

    A = {"num_classes": C}
    full = [
        S_("prob_f32", T(prob, "float32"), T(t, "int64"), dict(A)),
        S_("logit_f32", T(logit, "float32"), T(t, "int64"), dict(A)),
        S_("label_i64", T(lab, "int64"), T(t, "int64"), dict(A)),
        S_("prob_f64_target_i32", T(prob, "float64"), T(t, "int32"), dict(A)),
        S_("absent_class2_label", T(lab_abs, "int64"), T(t_abs, "int64"), dict(A)),
        S_("absent_class2_prob", T(prob_abs, "float32"), T(t_abs, "int64"), dict(A)),
        S_("class3_only_predicted", T(lab_po, "int64"), T(t_po, "int64"), dict(A)),
        S_("prob_f32_ignore-1", T(prob, "float32"), T(t_m1, "int64"), dict(A, ignore_index=-1)),
        S_("label_i64_ignore-1", T(lab, "int64"), T(t_m1, "int64"), dict(A, ignore_index=-1)),
        S_("label_i64_ignore1_real_class", T(lab, "int64"), T(t, "int64"), dict(A, ignore_index=1)),
        S_("prob_f32_ignore1_real_class", T(prob, "float32"), T(t, "int64"), dict(A, ignore_index=1)),
        S_("prob_f32_top2", T(prob, "float32"), T(t, "int64"), dict(A, top_k=2), "topk"),
        S_("prob_f32_top3", T(prob, "float32"), T(t, "int64"), dict(A, top_k=3), "topk"),
        S_("logit_f32_top2", T(logit, "float32"), T(t, "int64"), dict(A, top_k=2), "topk"),
        S_("prob_f32_top2_ignore-1", T(prob, "float32"), T(t_m1, "int64"), dict(A, top_k=2, ignore_index=-1), "topk"),
        S_("prob_f32_top2_ignore1_real_class", T(prob, "float32"), T(t, "int64"), dict(A, top_k=2, ignore_index=1), "topk"),
        S_("prob_f32_top2_class3_absent_in_target", T(prob_tk, "float32"), T(t_tk, "int64"), dict(A, top_k=2), "topk"),
        S_("prob_f32_top1_explicit", T(prob, "float32"), T(t, "int64"), dict(A, top_k=1), "topk"),
        S_("prob_f32_global", T(prob, "float32"), T(t, "int64"), dict(A, multidim_average="global"), "mda"),
        S_("one_row_prob", T(prob[:1], "float32"), T(t[:1], "int64"), dict(A)),
        S_("one_row_label_wrong", T([2], "int64"), T([1], "int64"), dict(A)),
        S_("all_correct_label", T(t, "int64"), T(t, "int64"), dict(A)),
        S_("all_wrong_label", T((t + 1) % C, "int64"), T(t, "int64"), dict(A)),
        S_("num_classes2_label", T(lab % 2, "int64"), T(t % 2, "int64"), {"num_classes": 2}),
        S_("num_classes2_single_class_perfect", T([0, 0, 0, 0], "int64"), T([0, 0, 0, 0], "int64"), {"num_classes": 2}),
        S_("num_classes3_single_class_perfect", T([1, 1, 1, 1], "int64"), T([1, 1, 1, 1], "int64"), {"num_classes": 3}),
        S_("absent_class2_label_zd1", T(lab_abs, "int64"), T(t_abs, "int64"), dict(A, zero_division=1.0), "zd"),
        S_("class3_only_predicted_zd1", T(lab_po, "int64"), T(t_po, "int64"), dict(A, zero_division=1.0), "zd"),
    ]
    subset = {
        "prob_f32", "label_i64", "absent_class2_label", "class3_only_predicted", "label_i64_ignore1_real_class",
        "prob_f32_top2_class3_absent_in_target", "prob_f32_top2_ignore1_real_class", "all_wrong_label",
        "absent_class2_label_zd1",
    }
    macro_subset = {"prob_f32", "absent_class2_label", "prob_f32_top2_class3_absent_in_target"}

    big_t = rng.integers(0, 5, 120)
    big_p = mc_scores(rng, big_t, 5, decimals=2, strength=1.0)
    for metric, margs in MC_AVG_METRICS:
        short = _short(metric)
        for average in (None, "micro", "macro", "weighted", "none"):
            m2 = dict(margs)
            if average is not None:
                m2["average"] = average
            for tag, p, tt, sargs, kinds in full:
                if average is not None and tag not in (macro_subset if average == "macro" else subset):
                    continue
                if kinds == "zd" and short not in ZD_METRICS:
                    continue
                if kinds == "mda" and short not in MDA_METRICS:
                    continue
                add_cls_case(S, "multiclass", metric, m2, tag, p, tt, sargs)
        if short in ("accuracy", "f1_score", "stat_scores"):
            add_cls_case(S, "multiclass", metric, margs, "n120_c5_prob_f32", T(big_p, "float32"), T(big_t, "int64"), {"num_classes": 5})

    no_topk = [s for s in full if s[4] not in ("topk", "mda")]
    other = [("multiclass_jaccard_index", {})]
    other += [("multiclass_jaccard_index", {"average": a}) for a in ("micro", "macro", "weighted", "none")]
    other += [("multiclass_confusion_matrix", {})]
    other += [("multiclass_confusion_matrix", {"normalize": n}) for n in ("true", "pred", "all", "none")]
    other += [("multiclass_matthews_corrcoef", {})]
    other += [("multiclass_cohen_kappa", {})]
    other += [("multiclass_cohen_kappa", {"weights": w}) for w in ("linear", "quadratic", "none")]
    other += [("multiclass_exact_match", {})]
    other_subset = {
        "prob_f32", "label_i64", "absent_class2_label", "class3_only_predicted", "label_i64_ignore-1",
        "label_i64_ignore1_real_class", "one_row_label_wrong", "all_wrong_label", "num_classes3_single_class_perfect",
        "absent_class2_label_zd1",
    }
    for metric, margs in other:
        short = _short(metric)
        for tag, p, tt, sargs, kinds in no_topk:
            if kinds == "zd" and short not in ZD_METRICS:
                continue
            if margs and tag not in other_subset:
                continue
            add_cls_case(S, "multiclass", metric, margs, tag, p, tt, sargs)
        if not margs and short in ("confusion_matrix", "matthews_corrcoef", "cohen_kappa", "jaccard_index"):
            add_cls_case(S, "multiclass", metric, margs, "n120_c5_prob_f32", T(big_p, "float32"), T(big_t, "int64"), {"num_classes": 5})
    add_cls_case(S, "multiclass", "multiclass_confusion_matrix", {"normalize": Quoted("true")}, "label_i64_quoted", T(lab, "int64"), T(t, "int64"), {"num_classes": C})
    # exact match on multi-dimensional inputs (N, d) / (N, C, d)
    tm_ = rng.integers(0, 3, (12, 3))
    pm_ = np.where(rng.random((12, 3)) < 0.8, tm_, rng.integers(0, 3, (12, 3)))
    pm_[:4] = tm_[:4]
    add_cls_case(S, "multiclass", "multiclass_exact_match", {}, "multidim_12x3_label", T(pm_, "int64"), T(tm_, "int64"), {"num_classes": 3})
    add_cls_case(S, "multiclass", "multiclass_exact_match", {}, "multidim_12x3_label_global", T(pm_, "int64"), T(tm_, "int64"), {"num_classes": 3, "multidim_average": "global"})
    tmi = tm_.copy()
    tmi[pm_ != tm_] = np.where(rng.random((12, 3)) < 0.5, -1, tm_)[pm_ != tm_]
    add_cls_case(S, "multiclass", "multiclass_exact_match", {}, "multidim_12x3_label_ignore-1", T(pm_, "int64"), T(tmi, "int64"), {"num_classes": 3, "ignore_index": -1})
    sc = np.stack([mc_scores(rng, pm_[:, j], 3) for j in range(3)], axis=2)  # (12, 3 classes, 3 positions)
    add_cls_case(S, "multiclass", "multiclass_exact_match", {}, "multidim_12x3x3_prob_f32", T(sc, "float32"), T(tm_, "int64"), {"num_classes": 3})
    return S


# --------------------------------------------------------------------------------------------
# multilabel
# --------------------------------------------------------------------------------------------
ML_AVG_METRICS = [
    ("multilabel_accuracy", {}),
    ("multilabel_precision", {}),
    ("multilabel_recall", {}),
    ("multilabel_f1_score", {}),
    ("multilabel_fbeta_score", {"beta": 2.0}),
    ("multilabel_specificity", {}),
    ("multilabel_stat_scores", {}),
    ("multilabel_hamming_distance", {}),
    ("multilabel_jaccard_index", {}),
]


def gen_multilabel():
    S = Suite("classification_multilabel.json")
    rng = np.random.default_rng(3003)
    L, N = 3, 14
    t = rng.integers(0, 2, (N, L))
    prob = _nudge(np.round(0.35 * t + 0.65 * rng.random((N, L)), 2), step=0.01)
    logit = np.round(rng.normal(0, 1.8, (N, L)) + 1.2 * (2 * t - 1), 2)
    logit[logit == 0] = 0.01
    lab = np.where(rng.random((N, L)) < 0.75, t, 1 - t)
    t_m1 = t.copy()
    t_m1[rng.random((N, L)) < 0.15] = -1
    t_m1[0, :] = -1  # one fully-ignored row (still counts in exact_match total)
    # label 1 never positive in target and never predicted
    t_abs = t.copy()
    t_abs[:, 1] = 0
    prob_abs = prob.copy()
    prob_abs[:, 1] = np.round(0.45 * rng.random(N), 2)
    # label 2 has positives but is never predicted
    prob_np = prob.copy()
    prob_np[:, 2] = np.round(0.45 * rng.random(N), 2)
    t_np = t.copy()
    t_np[:3, 2] = 1
    # ignore value 2 with num_labels 3 (jaccard index-quirk)
    t_i2 = t.copy()
    t_i2[rng.random((N, L)) < 0.15] = 2
    # ignored element holding a logit-range value -> whole tensor sigmoid-ed
    q_p = prob.copy()
    q_t = t.copy()
    q_p[5, 1] = 2.5
    q_t[5, 1] = -1
    q_p[10, 0] = -1.7
    q_t[10, 0] = -1
    tie = prob.copy()
    tie[::3, 0] = 0.5
    tie[1::4, 2] = 0.5

    A = {"num_labels": L}
    full = [
        ("prob_f32", T(prob, "float32"), T(t, "int64"), dict(A), None),
        ("logit_f32", T(logit, "float32"), T(t, "int64"), dict(A), None),
        ("label_i64", T(lab, "int64"), T(t, "int64"), dict(A), None),
        ("prob_f64_target_i32", T(prob, "float64"), T(t, "int32"), dict(A), None),
        ("prob_f32_thr0.3", T(prob, "float32"), T(t, "int64"), dict(A, threshold=0.3), None),
        ("tie_0.5_f32", T(tie, "float32"), T(t, "int64"), dict(A), None),
        ("prob_f32_ignore-1", T(prob, "float32"), T(t_m1, "int64"), dict(A, ignore_index=-1), None),
        ("label_i64_ignore-1", T(lab, "int64"), T(t_m1, "int64"), dict(A, ignore_index=-1), None),
        ("label1_absent", T(prob_abs, "float32"), T(t_abs, "int64"), dict(A), None),
        ("label2_never_predicted", T(prob_np, "float32"), T(t_np, "int64"), dict(A), None),
        ("prob_f32_ignore2_lt_num_labels", T(prob, "float32"), T(t_i2, "int64"), dict(A, ignore_index=2), None),
        ("ignored_elem_is_logit", T(q_p, "float32"), T(q_t, "int64"), dict(A, ignore_index=-1), None),
        ("prob_f32_global", T(prob, "float32"), T(t, "int64"), dict(A, multidim_average="global"), "mda"),
        ("one_row", T(prob[:1], "float32"), T(t[:1], "int64"), dict(A), None),
        ("all_correct", T(t, "int64"), T(t, "int64"), dict(A), None),
        ("all_wrong", T(1 - t, "int64"), T(t, "int64"), dict(A), None),
        ("label1_absent_zd1", T(prob_abs, "float32"), T(t_abs, "int64"), dict(A, zero_division=1.0), "zd"),
        ("label2_never_predicted_zd1", T(prob_np, "float32"), T(t_np, "int64"), dict(A, zero_division=1.0), "zd"),
    ]
    subset = {"prob_f32", "label_i64", "label_i64_ignore-1", "label1_absent", "label2_never_predicted",
              "prob_f32_ignore2_lt_num_labels", "all_wrong", "label1_absent_zd1"}
    macro_subset = {"prob_f32", "label1_absent", "prob_f32_ignore2_lt_num_labels"}
    bt = rng.integers(0, 2, (80, 5))
    bp = _nudge(np.round(0.3 * bt + 0.7 * rng.random((80, 5)), 2), step=0.01)
    for metric, margs in ML_AVG_METRICS:
        short = _short(metric)
        for average in (None, "micro", "macro", "weighted", "none"):
            m2 = dict(margs)
            if average is not None:
                m2["average"] = average
            for tag, p, tt, sargs, kinds in full:
                if average is not None and tag not in (macro_subset if average == "macro" else subset):
                    continue
                if kinds == "zd" and short not in ZD_METRICS:
                    continue
                if kinds == "mda" and short not in MDA_METRICS:
                    continue
                add_cls_case(S, "multilabel", metric, m2, tag, p, tt, sargs)
        if short in ("accuracy", "f1_score", "jaccard_index"):
            add_cls_case(S, "multilabel", metric, margs, "n80_l5_prob_f32", T(bp, "float32"), T(bt, "int64"), {"num_labels": 5})
    other = [("multilabel_confusion_matrix", {})]
    other += [("multilabel_confusion_matrix", {"normalize": n}) for n in ("true", "pred", "all")]
    other += [("multilabel_matthews_corrcoef", {}), ("multilabel_exact_match", {})]
    for metric, margs in other:
        short = _short(metric)
        for tag, p, tt, sargs, kinds in full:
            if kinds == "zd":
                continue
            if kinds == "mda" and short not in MDA_METRICS:
                continue
            if margs and tag not in subset:
                continue
            add_cls_case(S, "multilabel", metric, margs, tag, p, tt, sargs)
        if not margs:
            add_cls_case(S, "multilabel", metric, margs, "n80_l5_prob_f32", T(bp, "float32"), T(bt, "int64"), {"num_labels": 5})
    return S


# --------------------------------------------------------------------------------------------
# regression
# --------------------------------------------------------------------------------------------
MAPE_EPS = 1.17e-06


def reg_mse(p, t, squared=True, num_outputs=1):
    # rule: num_outputs=1 flattens all elements; num_outputs>1 -> one value per column -- src/torchmetrics/functional/regression/mse.py
    if num_outputs == 1:
        v = skm.mean_squared_error(t.reshape(-1), p.reshape(-1), squared=squared)
        return v, f"sklearn.metrics.mean_squared_error(squared={squared}) on flattened inputs"
    return skm.mean_squared_error(t, p, squared=squared, multioutput="raw_values"), f"sklearn.metrics.mean_squared_error(squared={squared}, multioutput='raw_values')"


def reg_mae(p, t, num_outputs=1):
    # rule: same num_outputs flattening as MSE -- src/torchmetrics/functional/regression/mae.py
    if num_outputs == 1:
        return skm.mean_absolute_error(t.reshape(-1), p.reshape(-1)), "sklearn.metrics.mean_absolute_error on flattened inputs"
    return skm.mean_absolute_error(t, p, multioutput="raw_values"), "sklearn.metrics.mean_absolute_error(multioutput='raw_values')"


def reg_mape(p, t):
    # rule: mean over ALL elements of |p-t| / max(|t|, 1.17e-6) -- src/torchmetrics/functional/regression/mape.py
    v = float(np.mean(np.abs(p - t) / np.maximum(np.abs(t), MAPE_EPS)))
    if np.min(np.abs(t)) >= MAPE_EPS:
        _close(v, skm.mean_absolute_percentage_error(t.reshape(-1), p.reshape(-1)))
        return v, "sklearn.metrics.mean_absolute_percentage_error on flattened inputs"
    return v, "hand-computed (numpy): torchmetrics epsilon 1.17e-6 clamp on |target| (sklearn uses float64 eps)"


def reg_r2(p, t, adjusted=0, multioutput="uniform_average"):
    n = t.shape[0]
    assert n >= 2  # rule: r2 needs >= 2 samples (raises otherwise) -- src/torchmetrics/functional/regression/r2.py
    rss = np.sum((t - p) ** 2, axis=0)
    tss = np.sum((t - t.mean(axis=0)) ** 2, axis=0)
    raw = np.atleast_1d(skm.r2_score(t, p, multioutput="raw_values")).astype(np.float64)
    rss1, tss1 = np.atleast_1d(rss), np.atleast_1d(tss)
    with np.errstate(all="ignore"):
        _close(np.where((rss1 > 1e-4) & (tss1 > 1e-4), raw, 0), np.where((rss1 > 1e-4) & (tss1 > 1e-4), 1 - rss1 / tss1, 0))
    # rule: raw = 1 by default; rss<=1e-4 (isclose atol=1e-4) -> 1 whatever tss; rss>1e-4 & tss<=1e-4 -> 0 -- src/torchmetrics/functional/regression/r2.py (_r2_score_compute)
    raw = np.where(rss1 <= 1e-4, 1.0, np.where(tss1 <= 1e-4, 0.0, raw))
    src = "sklearn.metrics.r2_score(multioutput='raw_values') + torchmetrics near-constant rule (rss/tss <= 1e-4)"
    if multioutput == "raw_values":
        r2 = raw if t.ndim == 2 else raw[0]
    elif multioutput == "uniform_average":
        r2 = float(raw.mean())
    else:
        # rule: variance_weighted = sum(tss/sum(tss) * raw) -- src/torchmetrics/functional/regression/r2.py
        r2 = float(np.sum(tss1 / tss1.sum() * raw))
    src += f", multioutput={multioutput}"
    if adjusted != 0:
        # rule: adjusted r2 = 1-(1-r2)(n-1)/(n-adjusted-1), only if adjusted < n-1 else plain r2 (warning) -- src/torchmetrics/functional/regression/r2.py
        if adjusted < n - 1:
            r2 = 1 - (1 - np.asarray(r2)) * (n - 1) / (n - adjusted - 1)
            src += ", adjusted formula"
        else:
            src += ", adjusted >= n-1 falls back to plain r2"
    return r2, src


def reg_ev(p, t, multioutput="uniform_average"):
    # rule: EV = 1 - var(t-p)/var(t) (population); num==0 -> 1; num!=0 & den==0 -> 0 (exact zero tests) -- src/torchmetrics/functional/regression/explained_variance.py
    v = skm.explained_variance_score(t, p, multioutput=multioutput)
    if multioutput == "raw_values" and t.ndim == 1:
        v = np.asarray(v).reshape(-1)[0]
    return v, f"sklearn.metrics.explained_variance_score(multioutput={multioutput!r})"


def _cols(x):
    return [x] if x.ndim == 1 else [x[:, j] for j in range(x.shape[1])]


def _squeeze_out(vals, x):
    return float(vals[0]) if x.ndim == 1 else np.array(vals)


def reg_pearson(p, t):
    vals = []
    for pc, tc in zip(_cols(p), _cols(t)):
        # rule: pearson = cov/sqrt(vx*vy); constant input or one row -> NaN (0/0); clamped to [-1,1] -- src/torchmetrics/functional/regression/pearson.py
        if len(pc) < 2 or np.all(pc == pc[0]) or np.all(tc == tc[0]):
            vals.append(float("nan"))
        else:
            vals.append(float(np.clip(stats.pearsonr(pc, tc)[0], -1, 1)))
    return _squeeze_out(vals, p), "scipy.stats.pearsonr per column (NaN for constant input / 1 row, as torchmetrics)"


def reg_ccc(p, t):
    vals = []
    for pc, tc in zip(_cols(p), _cols(t)):
        n = len(pc)
        if n < 2 or np.all(pc == pc[0]) or np.all(tc == tc[0]):
            # rule: concordance = pearson*... so inherits pearson's NaN for constant input / one row -- src/torchmetrics/functional/regression/concordance.py
            vals.append(float("nan"))
            continue
        mx, my = pc.mean(), tc.mean()
        vx, vy = pc.var(ddof=1), tc.var(ddof=1)
        cov = np.sum((pc - mx) * (tc - my)) / (n - 1)
        # rule: ccc = 2*cov / (vx + vy + (mx-my)^2) with UNBIASED (n-1) vx, vy, cov -- src/torchmetrics/functional/regression/concordance.py
        v = 2 * cov / (vx + vy + (mx - my) ** 2)
        _close(cov, np.cov(pc, tc, ddof=1)[0, 1])
        vals.append(float(v))
    return _squeeze_out(vals, p), "hand-computed (numpy moments): 2*cov/(var_x+var_y+(mean_x-mean_y)^2), n-1 normalisation"


def reg_spearman(p, t):
    vals = []
    for pc, tc in zip(_cols(p), _cols(t)):
        # rule: ranks with ties -> average rank -- src/torchmetrics/functional/regression/spearman.py (_rank_data)
        rp, rt = stats.rankdata(pc), stats.rankdata(tc)
        dp, dt = rp - rp.mean(), rt - rt.mean()
        cov = np.mean(dp * dt)
        # rule: corr = cov / (std_p*std_t + 1e-6) (population std), clamped -> constant input gives 0, not NaN -- src/torchmetrics/functional/regression/spearman.py
        v = float(np.clip(cov / (np.sqrt(np.mean(dp * dp)) * np.sqrt(np.mean(dt * dt)) + 1e-6), -1, 1))
        if len(pc) > 2 and not (np.all(pc == pc[0]) or np.all(tc == tc[0])):
            assert abs(v - stats.spearmanr(pc, tc)[0]) < 1e-5
        vals.append(v)
    return _squeeze_out(vals, p), "scipy.stats.rankdata(average ties) + torchmetrics formula cov/(std*std+1e-6) (matches scipy.stats.spearmanr to 1e-5)"


def reg_logcosh(p, t):
    d = np.abs(p - t)
    # rule: mean over rows of log(cosh(p-t)); one value per column for 2-D -- src/torchmetrics/functional/regression/log_cosh.py
    lc = d + np.log1p(np.exp(-2 * d)) - math.log(2.0)
    v = lc.mean(axis=0)
    return (float(v) if p.ndim == 1 else v), "hand-computed (numpy, stable log cosh = |d|+log1p(exp(-2|d|))-log 2)"


def reg_cosine(p, t, reduction="sum"):
    dot = np.sum(p * t, axis=-1)
    nrm = np.linalg.norm(p, axis=-1) * np.linalg.norm(t, axis=-1)
    with np.errstate(all="ignore"):
        # rule: per-row dot/(|p||t|); zero-norm row -> NaN (0/0) -- src/torchmetrics/functional/regression/cosine_similarity.py
        sim = dot / nrm
    ok = nrm > 0
    if ok.any():
        _close(sim[ok], 1 - paired_cosine_distances(p[ok], t[ok]))
    # rule: reduction sum (default) / mean / none -- src/torchmetrics/functional/regression/cosine_similarity.py
    if reduction == "sum":
        v = float(np.sum(sim))
    elif reduction == "mean":
        v = float(np.mean(sim))
    else:
        v = sim
    return v, f"1 - sklearn.metrics.pairwise.paired_cosine_distances per row, reduction={reduction}"


def gen_regression():
    S = Suite("regression.json")
    rng = np.random.default_rng(4004)

    def add(name, metric, args, p, tt, fn, **fkw):
        pa, ta = p.f64, tt.f64
        v, src = fn(pa, ta, **fkw)
        S.add(name, spec(metric, args), {"preds": p, "target": tt}, v, src)

    N = 40
    t = np.round(rng.normal(2.0, 1.5, N), 3)
    p = np.round(t + rng.normal(0.1, 0.6, N), 3)
    t2 = np.stack([np.round(rng.normal(0, 1, 20), 2), np.round(rng.normal(5, 3, 20), 2), np.round(rng.normal(-2, 0.5, 20), 2)], 1)
    p2 = np.round(t2 + rng.normal(0, [0.5, 1.5, 0.4], (20, 3)), 2)
    t_big = np.round(rng.normal(0, 2, 300), 4)
    p_big = np.round(0.8 * t_big + rng.normal(0, 1, 300), 4)
    # numerically hard: large offset, small variance
    h4_t = 1e4 + np.round(rng.normal(0, 0.01, N), 6)
    h4_p = h4_t + np.round(rng.normal(0, 0.005, N), 6)
    h6_t = 1e6 + np.round(rng.normal(0, 0.5, N), 4)
    h6_p = h6_t + np.round(rng.normal(0, 0.25, N), 4)
    # ties (integer valued floats) for spearman
    tie_t = rng.integers(0, 5, 30).astype(np.float64)
    tie_p = np.clip(tie_t + rng.integers(-1, 2, 30), 0, 5).astype(np.float64)
    const_t = np.full(12, 2.5)
    const_p = np.round(2.5 + rng.normal(0, 0.5, 12), 3)

    one_d = [
        ("base_f32", T(p, "float32"), T(t, "float32")),
        ("base_f64", T(p, "float64"), T(t, "float64")),
        ("n300_f32", T(p_big, "float32"), T(t_big, "float32")),
        ("offset1e4_f64", T(h4_p, "float64"), T(h4_t, "float64")),
        ("offset1e4_f32", T(h4_p, "float32"), T(h4_t, "float32")),
        ("offset1e6_f64", T(h6_p, "float64"), T(h6_t, "float64")),
        ("offset1e6_f32", T(h6_p, "float32"), T(h6_t, "float32")),
        ("ties_f32", T(tie_p, "float32"), T(tie_t, "float32")),
        ("constant_target", T(const_p, "float32"), T(const_t, "float32")),
        ("constant_both_equal", T(const_t, "float32"), T(const_t, "float32")),
        ("perfect", T(t, "float64"), T(t, "float64")),
        ("two_rows", T([1.5, 2.0], "float32"), T([1.0, 3.0], "float32")),
        ("one_row", T([2.5], "float32"), T([3.0], "float32")),
    ]
    metrics_1d = [
        ("mean_squared_error", {}, reg_mse, {}),
        ("mean_squared_error", {"squared": True}, reg_mse, {"squared": True}),
        ("mean_squared_error", {"squared": False}, reg_mse, {"squared": False}),
        ("mean_absolute_error", {}, reg_mae, {}),
        ("mean_absolute_percentage_error", {}, reg_mape, {}),
        ("r2_score", {}, reg_r2, {}),
        ("r2_score", {"adjusted": 2}, reg_r2, {"adjusted": 2}),
        ("explained_variance", {}, reg_ev, {}),
        ("pearson_corrcoef", {}, reg_pearson, {}),
        ("concordance_corrcoef", {}, reg_ccc, {}),
        ("spearman_corrcoef", {}, reg_spearman, {}),
        ("log_cosh_error", {}, reg_logcosh, {}),
    ]
    for tag, pp, tt in one_d:
        for metric, args, fn, fkw in metrics_1d:
            if metric == "r2_score" and tt.a.shape[0] < 2:
                continue  # torchmetrics raises for < 2 samples
            if metric == "r2_score" and args and tag not in ("base_f32", "base_f64", "n300_f32", "offset1e6_f64"):
                continue
            if metric == "mean_squared_error" and args.get("squared") is True and tag != "base_f32":
                continue
            if tag == "n300_f32" and (args or metric not in ("mean_squared_error", "r2_score", "pearson_corrcoef", "spearman_corrcoef", "concordance_corrcoef")):
                continue
            add(f"{metric}{_argtag(args)}__{tag}", metric, args, pp, tt, fn, **fkw)

    # r2 extras
    small_t = np.array([1.0, 2.5, 2.0, 4.0, 3.5])
    small_p = np.array([1.2, 2.0, 2.4, 3.1, 3.9])
    for adj in (1, 3, 4, 10):
        add(f"r2_score_adjusted-{adj}__n5", "r2_score", {"adjusted": adj}, T(small_p, "float64"), T(small_t, "float64"), reg_r2, adjusted=adj)
    add("r2_score_multioutput-raw_values__base_f32_1d", "r2_score", {"multioutput": "raw_values"}, T(p, "float32"), T(t, "float32"), reg_r2, multioutput="raw_values")
    q_t = np.array([0.001, 0.002, 0.003, 0.004])
    q_p = np.array([0.004, 0.003, 0.002, 0.001])
    add("r2_score__quirk_rss_below_1e-4_gives_1", "r2_score", {}, T(q_p, "float64"), T(q_t, "float64"), reg_r2)
    add("explained_variance__tiny_scale_no_quirk", "explained_variance", {}, T(q_p, "float64"), T(q_t, "float64"), reg_ev)
    add("explained_variance_multioutput-raw_values__base_f32_1d", "explained_variance", {"multioutput": "raw_values"}, T(p, "float32"), T(t, "float32"), reg_ev, multioutput="raw_values")
    # MAPE with zero / tiny targets
    z_t = np.array([0.0, 1.0, -2.0, 0.5, 1e-7])
    z_p = np.array([0.5, 1.1, -1.5, 0.0, 2e-7])
    add("mean_absolute_percentage_error__zero_and_tiny_targets", "mean_absolute_percentage_error", {}, T(z_p, "float64"), T(z_t, "float64"), reg_mape)
    add("mean_absolute_percentage_error__zero_and_tiny_targets_f32", "mean_absolute_percentage_error", {}, T(z_p, "float32"), T(z_t, "float32"), reg_mape)
    big_d = np.array([0.0, 5.0, -12.0, 30.0])
    add("log_cosh_error__large_diffs", "log_cosh_error", {}, T(big_d, "float64"), T(np.zeros(4), "float64"), reg_logcosh)

    # 2-D
    two_d = [
        ("2d_f32", T(p2, "float32"), T(t2, "float32")),
        ("2d_f64", T(p2, "float64"), T(t2, "float64")),
    ]
    t2c = t2.copy()
    t2c[:, 1] = 3.0
    two_d.append(("2d_const_col1_f64", T(p2, "float64"), T(t2c, "float64")))
    metrics_2d = [
        ("mean_squared_error", {}, reg_mse, {}),
        ("mean_squared_error", {"num_outputs": 3}, reg_mse, {"num_outputs": 3}),
        ("mean_squared_error", {"squared": False, "num_outputs": 3}, reg_mse, {"squared": False, "num_outputs": 3}),
        ("mean_squared_error", {"squared": False}, reg_mse, {"squared": False}),
        ("mean_absolute_error", {}, reg_mae, {}),
        ("mean_absolute_error", {"num_outputs": 3}, reg_mae, {"num_outputs": 3}),
        ("mean_absolute_percentage_error", {}, reg_mape, {}),
        ("r2_score", {}, reg_r2, {}),
        ("r2_score", {"multioutput": "raw_values"}, reg_r2, {"multioutput": "raw_values"}),
        ("r2_score", {"multioutput": "uniform_average"}, reg_r2, {"multioutput": "uniform_average"}),
        ("r2_score", {"multioutput": "variance_weighted"}, reg_r2, {"multioutput": "variance_weighted"}),
        ("r2_score", {"adjusted": 2, "multioutput": "raw_values"}, reg_r2, {"adjusted": 2, "multioutput": "raw_values"}),
        ("r2_score", {"adjusted": 2, "multioutput": "variance_weighted"}, reg_r2, {"adjusted": 2, "multioutput": "variance_weighted"}),
        ("explained_variance", {}, reg_ev, {}),
        ("explained_variance", {"multioutput": "raw_values"}, reg_ev, {"multioutput": "raw_values"}),
        ("explained_variance", {"multioutput": "uniform_average"}, reg_ev, {"multioutput": "uniform_average"}),
        ("explained_variance", {"multioutput": "variance_weighted"}, reg_ev, {"multioutput": "variance_weighted"}),
        ("pearson_corrcoef", {}, reg_pearson, {}),
        ("concordance_corrcoef", {}, reg_ccc, {}),
        ("spearman_corrcoef", {}, reg_spearman, {}),
        ("log_cosh_error", {}, reg_logcosh, {}),
        ("cosine_similarity", {}, reg_cosine, {}),
        ("cosine_similarity", {"reduction": "sum"}, reg_cosine, {"reduction": "sum"}),
        ("cosine_similarity", {"reduction": "mean"}, reg_cosine, {"reduction": "mean"}),
        ("cosine_similarity", {"reduction": "none"}, reg_cosine, {"reduction": "none"}),
    ]
    for tag, pp, tt in two_d:
        for metric, args, fn, fkw in metrics_2d:
            if tag == "2d_f64" and metric not in ("r2_score", "explained_variance", "pearson_corrcoef", "mean_squared_error"):
                continue
            if tag == "2d_const_col1_f64" and metric in ("mean_squared_error", "mean_absolute_error", "log_cosh_error", "cosine_similarity", "mean_absolute_percentage_error"):
                continue
            add(f"{metric}{_argtag(args)}__{tag}", metric, args, pp, tt, fn, **fkw)
    # cosine extras
    cp = np.round(rng.normal(0, 1, (10, 5)), 3)
    ct = np.round(cp + rng.normal(0, 0.7, (10, 5)), 3)
    czp = cp.copy()
    czp[3] = 0.0
    for red in (None, "mean", "none"):
        a = {} if red is None else {"reduction": red}
        add(f"cosine_similarity{_argtag(a)}__10x5_f64", "cosine_similarity", a, T(cp, "float64"), T(ct, "float64"), reg_cosine, **({} if red is None else {"reduction": red}))
        add(f"cosine_similarity{_argtag(a)}__zero_row_nan", "cosine_similarity", a, T(czp, "float32"), T(ct, "float32"), reg_cosine, **({} if red is None else {"reduction": red}))
    add("cosine_similarity__one_row", "cosine_similarity", {}, T(cp[:1], "float32"), T(ct[:1], "float32"), reg_cosine)
    add("cosine_similarity_reduction-none__opposite_and_identical", "cosine_similarity", {"reduction": "none"},
        T([[1.0, 2.0, 3.0], [1.0, 0.0, 0.0]], "float32"), T([[-1.0, -2.0, -3.0], [2.0, 0.0, 0.0]], "float32"), reg_cosine, reduction="none")
    return S


# --------------------------------------------------------------------------------------------
# aggregation
# --------------------------------------------------------------------------------------------
def agg_expected(kind, value, weight=None, nan_strategy="warn"):
    """Hand-computed (numpy) TorchMetrics aggregator semantics."""
    x = value.f64.reshape(-1).copy()
    if weight is None:
        w = np.ones_like(x)
        w_is_broadcast = True
    else:
        w_is_broadcast = weight.a.size != value.a.size
        w = np.broadcast_to(weight.f64.reshape(weight.a.shape), value.a.shape).reshape(-1).copy()
    bad = np.isnan(x) | np.isnan(w)
    src = "hand-computed (numpy)"
    if bad.any():
        if nan_strategy in ("warn", "ignore"):
            # rule: 'warn' (default) and 'ignore' drop NaN entries (and the paired weight) -- src/torchmetrics/aggregation.py (_cast_and_nan_check_input)
            x, w = x[~bad], w[~bad]
            src += f": NaNs dropped (nan_strategy={nan_strategy})"
        else:
            r = float(nan_strategy)
            # rule: float nan_strategy writes r into value AND weight at NaN positions -- src/torchmetrics/aggregation.py (_cast_and_nan_check_input)
            x[bad] = r
            if w_is_broadcast:
                # rule: a broadcast (scalar/default) weight is an expanded view, so the in-place write sets EVERY weight to r -- src/torchmetrics/aggregation.py (MeanMetric.update: torch.broadcast_to)
                w[:] = r
                src += f": NaN values -> {r}, broadcast weight becomes {r} everywhere"
            else:
                w[bad] = r
                src += f": NaN values and their weights -> {r}"
    if kind == "sum":
        # rule: SumMetric default state 0.0 -> empty input gives 0 -- src/torchmetrics/aggregation.py
        return float(x.sum()) if x.size else 0.0, src
    if kind == "max":
        # rule: MaxMetric default state -inf -> empty input gives -inf -- src/torchmetrics/aggregation.py
        return float(x.max()) if x.size else float("-inf"), src
    if kind == "min":
        # rule: MinMetric default state +inf -> empty input gives +inf -- src/torchmetrics/aggregation.py
        return float(x.min()) if x.size else float("inf"), src
    # rule: mean = sum(value*weight)/sum(weight); 0/0 -> NaN (empty, or all weights 0) -- src/torchmetrics/aggregation.py (MeanMetric.compute)
    num, den = float(np.sum(x * w)), float(np.sum(w))
    if weight is None and not bad.any() and x.size:
        _close(num / den, np.mean(x))
    return (num / den if den != 0 else float("nan")), src


def nan_in_every_update(value, weight=None):
    """MeanMetric's broadcast-weight overwrite (see agg_expected) happens per update() call, so a case with a float
    nan_strategy and a broadcast weight is only update-invariant if every harness chunk contains a NaN."""
    x = value.f64
    bad = np.isnan(x) if weight is None else np.isnan(x) | np.isnan(np.broadcast_to(weight.f64, x.shape))
    bad = bad.reshape(x.shape[0], -1).any(axis=1) if x.ndim else bad.reshape(1)
    return all(bad[a:b].any() for a, b in harness_chunks(len(bad)))


def gen_aggregation():
    S = Suite("aggregation.json")
    rng = np.random.default_rng(5005)
    v = np.round(rng.normal(1.0, 2.0, 20), 3)
    v_nan = v.copy()
    v_nan[[2, 7, 11, 16]] = np.nan  # a NaN in every harness chunk (7-row batches and both halves)
    v2 = np.round(rng.normal(0, 1, (4, 5)), 3)
    v2n = v2.copy()
    v2n[1, 3] = np.nan
    v2n[3, 0] = np.nan
    neg = -np.abs(np.round(rng.normal(3, 1, 8), 3)) - 0.5
    neg_nan = neg.copy()
    neg_nan[[1, 5, 7]] = np.nan
    all_nan = np.full(5, np.nan)
    w = np.round(rng.uniform(0.1, 3.0, 20), 2)
    w_nan = w.copy()
    w_nan[[0, 5]] = np.nan
    ints = rng.integers(-5, 10, 15)
    tiny = np.array([-1.0, 2.0, float("nan"), 4.0, 5.0])  # torchmetrics' own test vector (_CASE_2)

    vals = [
        ("f32", T(v, "float32")),
        ("f64", T(v, "float64")),
        ("2d_f32", T(v2, "float32")),
        ("int64", T(ints, "int64")),
        ("one_value", T([3.25], "float32")),
        ("nan_f32", T(v_nan, "float32")),
        ("nan_2d_f64", T(v2n, "float64")),
        ("negative_with_nan", T(neg_nan, "float32")),
        ("all_nan", T(all_nan, "float32")),
        ("case2_nan", T(tiny, "float32")),
    ]
    strategies = [None, "warn", "ignore", 2.0, 0.0, -10.5]
    for kind in ("mean", "sum", "max", "min"):
        for tag, val in vals:
            for ns in strategies:
                has_nan = np.isnan(val.f64).any()
                if ns is not None and not has_nan and tag not in ("f32",):
                    continue
                if kind == "mean" and isinstance(ns, float) and has_nan and ns != 1.0 and not nan_in_every_update(val):
                    continue  # result would depend on how rows are split into update() calls
                args = {} if ns is None else {"nan_strategy": ns}
                e, src = agg_expected(kind, val, None, "warn" if ns is None else ns)
                S.add(f"{kind}{_argtag(args)}__{tag}", spec(kind, args), {"value": val}, e, src)
    # weighted mean
    wcases = [
        ("weighted_f32", T(v, "float32"), T(w, "float32")),
        ("weighted_f64", T(v, "float64"), T(w, "float64")),
        ("weighted_nan_value", T(v_nan, "float32"), T(w, "float32")),
        ("weighted_nan_weight", T(v, "float32"), T(w_nan, "float32")),
        ("weighted_2d", T(v2, "float32"), T(np.round(rng.uniform(0, 2, (4, 5)), 2), "float32")),
        ("scalar_weight", T(v, "float32"), T(np.array(2.5), "float32")),
        ("scalar_weight_nan_value", T(v_nan, "float32"), T(np.array(2.5), "float32")),
        ("zero_weights", T(v[:4], "float32"), T(np.zeros(4), "float32")),
        ("weighted_all_nan", T(all_nan, "float32"), T(np.ones(5), "float32")),
    ]
    for tag, val, wt in wcases:
        for ns in strategies:
            has_nan = np.isnan(val.f64).any() or np.isnan(wt.f64).any()
            if ns is not None and not has_nan:
                continue
            broadcast = wt.a.size != val.a.size
            if isinstance(ns, float) and broadcast and ns != 1.0 and not nan_in_every_update(val, wt):
                continue  # result would depend on how rows are split into update() calls
            args = {} if ns is None else {"nan_strategy": ns}
            e, src = agg_expected("mean", val, wt, "warn" if ns is None else ns)
            S.add(f"mean{_argtag(args)}__{tag}", spec("mean", args), {"value": val, "weight": wt}, e, src)
    # sanity: torchmetrics' own unit test values (tests/unittests/bases/test_aggregation.py::test_nan_expected)
    c2 = T(np.array([1.0, 2.0, np.nan, 4.0, 5.0]), "float32")
    assert agg_expected("mean", c2, None, 2.0)[0] == 2.8 and agg_expected("sum", c2, None, 2.0)[0] == 14.0
    assert agg_expected("mean", c2, None, "ignore")[0] == 3.0 and agg_expected("max", T(all_nan, "float32"), None, 2.0)[0] == 2.0
    return S



# --------------------------------------------------------------------------------------------
# curves: threshold-free binary metrics (binary_auroc, binary_average_precision)
# --------------------------------------------------------------------------------------------
def _torch_linspace_f32(n):
    # rule: binned thresholds are torch.linspace(0, 1, n) (float32) -- src/torchmetrics/utilities/data.py
    # (_adjust_threshold_arg). The points are taken from torch itself (not TorchMetrics): ATen's vectorized
    # kernel rounds some of them differently from a two-sided numpy formula (linspace(0, 1, 10)[6] is
    # 0.6666667, the formula gives 0.6666666), and a score sitting on a threshold must count as it does there.
    import torch

    return torch.linspace(0, 1, n, dtype=torch.float32).numpy()


def _binned_counts(p, t, thr):
    # rule: binned state counts preds >= threshold per (target, pred) -- src/torchmetrics/functional/
    # classification/precision_recall_curve.py (_binary_precision_recall_curve_update_vectorized)
    ge = p[:, None] >= thr[None, :]
    pos = (t == 1)[:, None]
    tp = (ge & pos).sum(0).astype(np.float64)
    fp = (ge & ~pos).sum(0).astype(np.float64)
    fn = (~ge & pos).sum(0).astype(np.float64)
    tn = (~ge & ~pos).sum(0).astype(np.float64)
    return tp, fp, fn, tn


def _sdiv(a, b, z=0.0):
    return np.where(b == 0, z, a / np.where(b == 0, 1, b))


def binned_auroc(p, t, thr):
    # rule: roc from binned counts is tpr/fpr flipped, auroc = trapz(tpr, fpr) -- src/torchmetrics/functional/
    # classification/roc.py (_binary_roc_compute) and auroc.py (_binary_auroc_compute)
    tp, fp, fn, tn = _binned_counts(p, t, thr)
    tpr = _sdiv(tp, tp + fn)[::-1]
    fpr = _sdiv(fp, fp + tn)[::-1]
    return float(np.sum((fpr[1:] - fpr[:-1]) * (tpr[1:] + tpr[:-1]) / 2))


def binned_ap(p, t, thr):
    # rule: precision = tp/(tp+fp) with zero_division=1, recall = tp/(tp+fn), append (1, 0),
    # ap = -sum((r[1:] - r[:-1]) * p[:-1]) -- src/torchmetrics/functional/classification/
    # precision_recall_curve.py (_binary_precision_recall_curve_compute), average_precision.py
    tp, fp, fn, tn = _binned_counts(p, t, thr)
    prec = np.append(_sdiv(tp, tp + fp, 1.0), 1.0)
    rec = np.append(_sdiv(tp, tp + fn), 0.0)
    return float(-np.sum((rec[1:] - rec[:-1]) * prec[:-1]))


def gen_curves():
    S = Suite("curves.json")
    rng = np.random.default_rng(2024)
    N = 48
    t = rng.integers(0, 2, N)
    # two decimals: many ties, including positive/negative ties
    prob = np.round(0.3 * t + 0.7 * rng.random(N), 2).astype(np.float32)
    # every logit is outside [0, 1], so each batch of the harness sigmoids (as one pass does)
    mag = np.float32(1.05) + np.abs(rng.normal(0, 1.5, N)).astype(np.float32)
    logit = (np.where(rng.random(N) < np.where(t == 1, 0.75, 0.3), 1, -1) * mag).astype(np.float32)
    sig = (1 / (1 + np.exp(-logit.astype(np.float32)))).astype(np.float32)
    t2 = rng.integers(0, 2, (12, 4))
    prob2 = np.round(0.3 * t2 + 0.7 * rng.random((12, 4)), 2).astype(np.float32)
    tign = t.copy()
    tign[rng.random(N) < 0.2] = -1
    keep = tign != -1
    src = "sklearn.metrics.roc_auc_score / average_precision_score"
    # rule: exact form (thresholds=None) equals sklearn with its tie handling -- src/torchmetrics/functional/
    # classification/precision_recall_curve.py (_binary_clf_curve keeps the last index of each tie group)
    for tag, pr, tt, score, args in [
        ("prob_f32", T(prob, "float32"), T(t, "int64"), prob, ""),
        ("prob_f64", T(prob, "float64"), T(t, "int32"), prob.astype(np.float64), ""),
        ("logit_f32", T(logit, "float32"), T(t, "int64"), sig, ""),
        ("multidim_12x4", T(prob2, "float32"), T(t2, "int64"), None, ""),
        ("ignore_index", T(prob, "float32"), T(tign, "int64"), None, "ignore_index=-1"),
        # rule: no positives -> AP 0 (TorchMetrics 1.5.2 sets recall to 1; sklearn gives 0) and AUROC 0
        ("no_positives", T(prob[:9], "float32"), T(np.zeros(9, np.int64), "int64"), prob[:9], ""),
    ]:
        if tag == "multidim_12x4":
            yy, ss = t2.ravel(), prob2.ravel()
        elif tag == "ignore_index":
            yy, ss = t[keep], prob[keep]
        elif tag == "no_positives":
            yy, ss = np.zeros(9, np.int64), score
        else:
            yy, ss = t, score
        spec = lambda m: f"{m}({args})" if args else m
        auroc = 0.0 if tag == "no_positives" else skm.roc_auc_score(yy, ss)  # sklearn raises there
        S.add(f"auroc_exact_{tag}", spec("binary_auroc"), {"preds": pr, "target": tt}, auroc, src)
        S.add(f"ap_exact_{tag}", spec("binary_average_precision"), {"preds": pr, "target": tt},
              skm.average_precision_score(yy, ss), src)
    for thr_arg, thr in [("5", _torch_linspace_f32(5)), ("11", _torch_linspace_f32(11)),
                         ("100", _torch_linspace_f32(100)),
                         ("[0.1, 0.25, 0.5, 0.8]", np.array([0.1, 0.25, 0.5, 0.8], np.float32))]:
        for tag, pr, tt, score in [("prob_f32", T(prob, "float32"), T(t, "int64"), prob),
                                   ("logit_f32", T(logit, "float32"), T(t, "int64"), sig)]:
            name = thr_arg.replace(" ", "").replace("[", "list").replace("]", "").replace(",", "_")
            S.add(f"auroc_binned{name}_{tag}", f"binary_auroc(thresholds={thr_arg})",
                  {"preds": pr, "target": tt}, binned_auroc(score, t, thr), "hand-written numpy (binned)")
            S.add(f"ap_binned{name}_{tag}", f"binary_average_precision(thresholds={thr_arg})",
                  {"preds": pr, "target": tt}, binned_ap(score, t, thr), "hand-written numpy (binned)")
    return S


def retrieval_expected(kind, idx, preds, target, top_k=None, action=None, ignore_index=None, adaptive_k=False):
    """Mean over queries of the per-query score, as the Retrieval* classes compute it."""
    # rule: src/torchmetrics/retrieval/base.py (rows with target == ignore_index are dropped; groups by indexes;
    # a query without positives -- without negatives for fall_out -- scores by empty_target_action:
    # neg -> 0, pos -> 1, skip -> left out; no query at all -> 0.0)
    # rule: src/torchmetrics/utilities/checks.py (_check_retrieval_target_and_prediction_types: preds.float())
    if action is None:
        action = "pos" if kind == "fall_out" else "neg"
    if ignore_index is not None:
        keep = target != ignore_index
        idx, preds, target = idx[keep], preds[keep], target[keep]
    scores = []
    for q in np.unique(idx):
        m = idx == q
        p, t = preds[m].astype(np.float32), target[m]
        ts = t[np.argsort(-p, kind="stable")]
        n = len(ts)
        k = n if top_k is None else top_k
        empty = (1 - ts).sum() == 0 if kind == "fall_out" else ts.sum() == 0
        if empty:
            if action != "skip":
                scores.append(1.0 if action == "pos" else 0.0)
            continue
        if kind == "recall":  # rule: src/torchmetrics/functional/retrieval/recall.py
            v = ts[:k].sum() / ts.sum()
        elif kind == "precision":  # rule: src/torchmetrics/functional/retrieval/precision.py (adaptive_k)
            v = ts[:k].sum() / (n if top_k is None else (min(k, n) if adaptive_k else k))
        elif kind == "hit_rate":  # rule: src/torchmetrics/functional/retrieval/hit_rate.py
            v = float(ts[:k].sum() > 0)
        elif kind == "reciprocal_rank":  # rule: src/torchmetrics/functional/retrieval/reciprocal_rank.py
            v = 0.0 if ts[:k].sum() == 0 else 1.0 / (np.argmax(ts[:k] > 0) + 1)
        elif kind == "average_precision":  # rule: src/torchmetrics/functional/retrieval/average_precision.py
            tk = ts[:k]
            pos = np.arange(1, len(tk) + 1)[tk > 0]
            v = 0.0 if len(pos) == 0 else ((np.arange(len(pos)) + 1) / pos).mean()
        elif kind == "r_precision":  # rule: src/torchmetrics/functional/retrieval/r_precision.py
            r = int(ts.sum())
            v = ts[:r].sum() / r
        elif kind == "fall_out":  # rule: src/torchmetrics/functional/retrieval/fall_out.py
            neg = 1 - ts
            v = neg[:k].sum() / neg.sum()
        elif kind == "normalized_dcg":  # rule: src/torchmetrics/functional/retrieval/ndcg.py (sklearn tie averaging)
            v = 1.0 if n == 1 else skm.ndcg_score([t], [p.astype(np.float64)], k=top_k)
        scores.append(float(v))
    return float(np.mean(scores)) if scores else 0.0


def gen_retrieval():
    S = Suite("retrieval.json")
    rng = np.random.default_rng(77)
    N = 90
    idx = rng.integers(0, 12, N)
    preds = np.round(rng.random(N), 1).astype(np.float32)  # one decimal: many ties
    target = (rng.random(N) < 0.3).astype(np.int64)
    target[idx == 4] = 0  # a query without positives
    target[idx == 9] = 1  # a query without negatives
    graded = rng.integers(0, 4, N) * (rng.random(N) < 0.5)
    graded[idx == 4] = 0
    tign = target.copy()
    tign[rng.random(N) < 0.15] = -1
    hand = "hand-written numpy (TorchMetrics retrieval rules)"
    for kind in ["recall", "precision", "hit_rate", "reciprocal_rank", "average_precision", "r_precision",
                 "fall_out", "normalized_dcg"]:
        tk_list = [None] if kind == "r_precision" else [None, 1, 5, 40]
        for top_k in tk_list:
            for action in ["neg", "pos", "skip"]:
                extra = [{}]
                if kind == "precision" and top_k is not None:
                    extra.append({"adaptive_k": True})
                for ex in extra:
                    args = {}
                    if top_k is not None:
                        args["top_k"] = top_k
                    args["empty_target_action"] = action
                    args.update(ex)
                    tt = graded if kind == "normalized_dcg" else target
                    name = f"{kind}_k{top_k}_{action}" + ("_adaptive" if ex else "")
                    S.add(name, spec(f"retrieval_{kind}", args),
                          {"preds": T(preds, "float32"), "target": T(tt, "int64"), "indexes": T(idx, "int64")},
                          retrieval_expected(kind, idx, preds, tt, top_k, action, adaptive_k=bool(ex)),
                          "sklearn.metrics.ndcg_score" if kind == "normalized_dcg" else hand)
        S.add(f"{kind}_ignore_index", spec(f"retrieval_{kind}", {"ignore_index": -1}),
              {"preds": T(preds, "float64"), "target": T(tign, "int64"), "indexes": T(idx, "int64")},
              retrieval_expected(kind, idx, preds, tign, ignore_index=-1), hand)
    return S


def _cm_exact_binary(kind, y, s):
    # rule: per-class one-vs-rest curve -- src/torchmetrics/functional/classification/roc.py (_binary_roc_compute:
    # no positives -> tpr 0, no negatives -> fpr 0, so the area is 0) and precision_recall_curve.py
    # (_binary_precision_recall_curve_compute: no positive target -> recall 1, so AP = top precision = 0)
    y = np.asarray(y)
    if len(y) == 0:
        return float("nan")
    if kind == "auroc":
        return skm.roc_auc_score(y, s) if 0 < y.sum() < len(y) else 0.0
    return skm.average_precision_score(y, s) if y.sum() > 0 else 0.0


def _cm_reduce(res, support, average):
    # rule: NaN classes are left out of macro and weighted; weighted uses the support (positives) --
    # src/torchmetrics/functional/classification/auroc.py (_reduce_auroc), average_precision.py (_reduce_average_precision)
    res = np.asarray(res, dtype=np.float64)
    if average in (None, "none"):
        return res
    ok = ~np.isnan(res)
    if average == "macro":
        return float(res[ok].mean()) if ok.any() else float("nan")
    w = np.asarray(support, dtype=np.float64)[ok]
    return float((res[ok] * _sdiv(w, w.sum())).sum())


def _cm_binned_ap(p, t, thr):
    # rule: binned precision = _safe_divide(tp, tp + fp) (0 where nothing is predicted positive, 1.5.x),
    # recall = tp / (tp + fn), append (1, 0); AP = -sum((r[1:] - r[:-1]) * p[:-1]) -- src/torchmetrics/functional/
    # classification/precision_recall_curve.py (_multiclass_precision_recall_curve_compute), average_precision.py
    tp, fp, fn, tn = _binned_counts(p, t, thr)
    prec = np.append(_sdiv(tp, tp + fp), 1.0)
    rec = np.append(_sdiv(tp, tp + fn), 0.0)
    return float(-np.sum((rec[1:] - rec[:-1]) * prec[:-1]))


def _cm_multiclass_expected(kind, preds, target, C, average, thr, ignore_index):
    # rule: (N, C, ...) -> (N*..., C), ignored samples dropped, softmax(dim=1) when any kept score is outside [0, 1]
    # -- src/torchmetrics/functional/classification/precision_recall_curve.py (_multiclass_precision_recall_curve_format)
    p = np.moveaxis(preds, 1, -1).reshape(-1, C)
    t = target.reshape(-1)
    if ignore_index is not None:
        p, t = p[t != ignore_index], t[t != ignore_index]
    if p.size and not np.all((p >= 0) & (p <= 1)):
        p = _softmax(p).astype(p.dtype)
    res, support = [], []
    for c in range(C):
        y = (t == c).astype(np.int64)
        support.append(y.sum())
        if thr is not None:
            res.append(binned_auroc(p[:, c], y, thr) if kind == "auroc" else _cm_binned_ap(p[:, c], y, thr))
        elif kind == "ap" and y.sum() == 0:
            # rule: a class without positives has recall 0/0 = NaN (AP NaN) unless EVERY kept target is 0, where
            # recall is set to 1 (the check looks at target == 0, not at the class) -- src/torchmetrics/functional/
            # classification/precision_recall_curve.py (_binary_precision_recall_curve_compute with pos_label=c)
            res.append(0.0 if len(t) and (t == 0).all() else float("nan"))
        else:
            res.append(_cm_exact_binary(kind, y, p[:, c].astype(np.float64)))
    return _cm_reduce(res, support, average)


def _cm_multilabel_expected(kind, preds, target, L, average, thr, ignore_index):
    # rule: (N, L, ...) -> (N*..., L); sigmoid when ANY element (ignored ones included) is outside [0, 1]; ignored
    # elements dropped per label -- src/torchmetrics/functional/classification/precision_recall_curve.py
    # (_multilabel_precision_recall_curve_format, _multilabel_precision_recall_curve_compute)
    p = np.moveaxis(preds, 1, -1).reshape(-1, L)
    t = np.moveaxis(target, 1, -1).reshape(-1, L)
    if not np.all((p >= 0) & (p <= 1)):
        p = _sigmoid(p)
    keep = t != ignore_index if ignore_index is not None else np.ones(t.shape, bool)
    if average == "micro":
        # rule: micro scores all kept elements as one binary problem -- src/torchmetrics/functional/classification/
        # auroc.py (_multilabel_auroc_compute), average_precision.py (_multilabel_average_precision_compute)
        pp, tt = p[keep], t[keep]
        if thr is not None:
            return binned_auroc(pp, tt, thr) if kind == "auroc" else _cm_binned_ap(pp, tt, thr)
        return _cm_exact_binary(kind, tt, pp.astype(np.float64))
    res, support = [], []
    for l in range(L):
        pp, tt = p[keep[:, l], l], t[keep[:, l], l]
        support.append((tt == 1).sum())
        if thr is not None:
            res.append(binned_auroc(pp, tt, thr) if kind == "auroc" else _cm_binned_ap(pp, tt, thr))
        else:
            res.append(_cm_exact_binary(kind, tt, pp.astype(np.float64)))
    return _cm_reduce(res, support, average)


def _cm_check_data(task, p, t, ignore_index, thresholds):
    """Each harness chunk makes the same logits decision, and no probability lies within 1e-6 of a threshold or of
    another probability of its class (so float32 softmax/sigmoid rounding cannot change ties or bins)."""
    decisions = set()
    for a, b in harness_chunks(p.shape[0]):
        pc, tc = p[a:b], t[a:b]
        if task == "multiclass" and ignore_index is not None:
            pc = np.moveaxis(pc, 1, -1)[tc != ignore_index]
        if pc.size:
            decisions.add(_is_logit_input(pc))
    assert len(decisions) <= 1, "logit detection differs between update() chunks; fix the fixture data"
    if not _is_logit_input(p):
        return
    q = np.moveaxis(p, 1, -1).reshape(-1, p.shape[1]).astype(np.float64)
    q = _softmax(q) if task == "multiclass" else 1 / (1 + np.exp(-q))
    for col in q.T:
        d = np.diff(np.sort(col))
        assert not ((d > 0) & (d < 1e-6)).any(), "near-tie after softmax/sigmoid"
    for thr in thresholds:
        if thr is not None:
            assert np.abs(q[..., None] - np.asarray(thr, np.float64)).min() > 1e-6, "probability at a threshold"


def gen_curves_multi():
    S = Suite("curves_multi.json")
    rng = np.random.default_rng(3031)
    src = "sklearn roc_auc_score / average_precision_score per class (one-vs-rest) + numpy TorchMetrics averaging"
    hand = "hand-written numpy (binned, TorchMetrics rules)"
    thr_list = [0.1, 0.25, 0.5, 0.8]
    thr_unsorted = [0.6, 0.2, 0.9, 0.4]
    # (spec text, f32 thresholds or None)
    thr_forms = [(None, None), ("5", _torch_linspace_f32(5)), ("11", _torch_linspace_f32(11)),
                 ("[0.1, 0.25, 0.5, 0.8]", np.array(thr_list, np.float32)),
                 ("[0.6, 0.2, 0.9, 0.4]", np.array(thr_unsorted, np.float32))]

    C, N = 4, 30
    t = rng.integers(0, C, N)
    # two decimals: many ties within a class, including positive/negative ties
    prob = np.round(rng.random((N, C)) * 0.7 + 0.3 * np.eye(C)[t], 2)
    logit = rng.normal(0, 1.5, (N, C)) + 1.2 * np.eye(C)[t]
    logit[:, 0] = np.where(logit[:, 0] >= 0, logit[:, 0] + 1.1, logit[:, 0] - 0.1)  # every row outside [0, 1]
    t_absent = np.where(t == 3, 1, t)  # class 3 never a target
    t_ign = np.where(rng.random(N) < 0.2, -1, t)
    t_zero = np.zeros(N, np.int64)
    p3 = np.round(rng.random((12, 3, 2)), 1)  # (N, C, extra)
    t3 = rng.integers(0, 3, (12, 2))
    t2 = rng.integers(0, 2, N)
    p2 = np.round(rng.random((N, 2)), 2)
    mc = [
        ("prob_f32", T(prob, "float32"), T(t, "int64"), C, {}),
        ("prob_f64_target_i32", T(prob, "float64"), T(t, "int32"), C, {}),
        ("logit_f32", T(logit, "float32"), T(t, "int64"), C, {}),
        ("absent_class3", T(prob, "float32"), T(t_absent, "int64"), C, {}),
        ("ignore-1", T(prob, "float32"), T(t_ign, "int64"), C, {"ignore_index": -1}),
        ("ignore2_real_class", T(prob, "float32"), T(t, "int64"), C, {"ignore_index": 2}),
        ("logit_ignore-1", T(logit, "float32"), T(t_ign, "int64"), C, {"ignore_index": -1}),
        ("all_targets_class0_quirk", T(prob, "float32"), T(t_zero, "int64"), C, {}),
        ("multidim_12x3x2", T(p3, "float32"), T(t3, "int64"), 3, {}),
        ("one_row", T(prob[:1], "float32"), T(t[1:2], "int64"), C, {}),
        ("num_classes2", T(p2, "float32"), T(t2, "int64"), 2, {}),
    ]
    for tag, pr, tt, nc, extra in mc:
        ii = extra.get("ignore_index")
        _cm_check_data("multiclass", pr.a, tt.a, ii, [f for _, f in thr_forms])
        for thr_arg, thr in thr_forms:
            if thr_arg is not None and tag not in ("prob_f32", "logit_f32", "absent_class3", "ignore-1",
                                                  "multidim_12x3x2", "num_classes2"):
                continue
            averages = [None, "macro", "weighted", "none"] if thr_arg in (None, "11") else ["macro", "none"]
            for average in averages:
                for kind, metric in [("auroc", "multiclass_auroc"), ("ap", "multiclass_average_precision")]:
                    args = {"num_classes": nc}
                    if average is not None:
                        args["average"] = average
                    if thr_arg is not None:
                        args["thresholds"] = thr_arg  # written as given: an int or a list
                    args.update(extra)
                    name = f"{metric}_avg-{average or 'default'}_thr-{_cm_thr_tag(thr_arg)}__{tag}"
                    exp = (UNSORTED_AREA if _unsorted(thr) else
                           _cm_multiclass_expected(kind, pr.a, tt.a, nc, average or "macro", thr, ii))
                    S.add(name, spec(metric, args), {"preds": pr, "target": tt}, exp,
                          src if thr_arg is None else hand)

    # scores on both float32 neighbours of torch.linspace(0, 1, 10)[6] = 0.6666667 (a two-sided formula gives
    # 0.6666666): only ATen's own points count them as TorchMetrics does
    edge = np.float32(0.6666667)
    below = np.nextafter(edge, np.float32(0))
    pe = np.round(rng.random((14, 3)), 2).astype(np.float32)
    pe[0::2, 0], pe[1::2, 0] = edge, below
    te = np.array([0, 0, 1, 2, 0, 1, 0, 2, 1, 0, 2, 0, 1, 0])
    tle = np.stack([te == 0, te == 1, np.arange(14) % 3 == 0], 1).astype(np.int64)
    thr10 = _torch_linspace_f32(10)
    assert thr10[6] == edge
    for metric, kind, args, tt, fn in [
            ("multiclass_auroc", "auroc", {"num_classes": 3}, te, _cm_multiclass_expected),
            ("multiclass_average_precision", "ap", {"num_classes": 3}, te, _cm_multiclass_expected),
            ("multilabel_auroc", "auroc", {"num_labels": 3}, tle, _cm_multilabel_expected),
            ("multilabel_average_precision", "ap", {"num_labels": 3}, tle, _cm_multilabel_expected)]:
        args = dict(args, average="none", thresholds=10)
        S.add(f"{metric}_avg-none_thr-10__scores_on_linspace_point", spec(metric, args),
              {"preds": T(pe, "float32"), "target": T(tt, "int64")}, fn(kind, pe, tt, 3, "none", thr10, None), hand)

    L = 4
    tl = rng.integers(0, 2, (N, L))
    tl[:, 2] = 0  # a label without positives
    tl[:, 3] = np.where(rng.random(N) < 0.9, 1, tl[:, 3])
    mprob = np.round(rng.random((N, L)) * 0.7 + 0.3 * tl, 2)
    mlogit = rng.normal(0, 1.5, (N, L)) + 1.5 * (2 * tl - 1)
    mlogit[:, 1] = np.where(mlogit[:, 1] >= 0, mlogit[:, 1] + 1.1, mlogit[:, 1] - 0.1)
    tl_ign = np.where(rng.random((N, L)) < 0.2, -1, tl)
    tl_all1 = tl.copy()
    tl_all1[:, 0] = 1  # a label without negatives
    ml3 = np.round(rng.random((12, 3, 2)), 1)
    tl3 = rng.integers(0, 2, (12, 3, 2))
    ml = [
        ("prob_f32", T(mprob, "float32"), T(tl, "int64"), L, {}),
        ("prob_f64", T(mprob, "float64"), T(tl, "int64"), L, {}),
        ("logit_f32", T(mlogit, "float32"), T(tl, "int64"), L, {}),
        ("ignore-1", T(mprob, "float32"), T(tl_ign, "int64"), L, {"ignore_index": -1}),
        ("label0_without_negatives", T(mprob, "float32"), T(tl_all1, "int64"), L, {}),
        ("multidim_12x3x2", T(ml3, "float32"), T(tl3, "int64"), 3, {}),
        ("one_row", T(mprob[:1], "float32"), T(tl[:1], "int64"), L, {}),
    ]
    for tag, pr, tt, nl, extra in ml:
        ii = extra.get("ignore_index")
        _cm_check_data("multilabel", pr.a, tt.a, ii, [f for _, f in thr_forms])
        for thr_arg, thr in thr_forms:
            if thr_arg is not None and tag not in ("prob_f32", "logit_f32", "ignore-1", "multidim_12x3x2"):
                continue
            averages = [None, "micro", "macro", "weighted", "none"] if thr_arg in (None, "11") else ["micro", "none"]
            for average in averages:
                for kind, metric in [("auroc", "multilabel_auroc"), ("ap", "multilabel_average_precision")]:
                    args = {"num_labels": nl}
                    if average is not None:
                        args["average"] = average
                    if thr_arg is not None:
                        args["thresholds"] = thr_arg  # written as given: an int or a list
                    args.update(extra)
                    name = f"{metric}_avg-{average or 'default'}_thr-{_cm_thr_tag(thr_arg)}__{tag}"
                    exp = (UNSORTED_AREA if _unsorted(thr) else
                           _cm_multilabel_expected(kind, pr.a, tt.a, nl, average or "macro", thr, ii))
                    S.add(name, spec(metric, args), {"preds": pr, "target": tt}, exp,
                          src if thr_arg is None else hand)
    return S


def _cm_thr_tag(thr_arg):
    if thr_arg is None:
        return "none"
    return thr_arg.replace(" ", "").replace("[", "list").replace("]", "").replace(",", "_")


# --------------------------------------------------------------------------------------------
# calibration: binary_calibration_error, multiclass_calibration_error
# --------------------------------------------------------------------------------------------
def _cal_boundaries(n_bins, dtype):
    # rule: bin_boundaries = torch.linspace(0, 1, n_bins + 1, dtype=confidences.dtype) -- src/torchmetrics/
    # functional/classification/calibration_error.py (_ce_compute). The points are taken from torch itself
    # (not TorchMetrics): ATen rounds some of them differently from any numpy linspace (e.g. 0.79999995 as the
    # 13th of 16 float32 points), and values sitting exactly on a boundary must bin as TorchMetrics bins them.
    import torch

    tdt = torch.float32 if dtype == np.float32 else torch.float64
    return torch.linspace(0, 1, n_bins + 1, dtype=tdt).numpy()


def calibration_expected(conf, acc, n_bins, norm, weights=None):
    """TorchMetrics' _ce_compute on flat confidences (in their dtype) and 0/1 accuracies, in float64; with
    `weights`, each element counts its weight in the bins (gen_weighted.py)."""
    b = _cal_boundaries(n_bins, conf.dtype.type)
    # rule: indices = torch.bucketize(confidences, bin_boundaries, right=True) - 1, so bin i holds
    # b[i] <= conf < b[i+1] and conf == 1.0 gets a bin (n_bins) of its own; NaN sorts last -- calibration_error.py
    # (_binning_bucketize)
    idx = np.searchsorted(b, conf, side="right") - 1
    size = n_bins + 1
    w = np.ones(len(idx)) if weights is None else np.asarray(weights, np.float64)
    count = np.bincount(idx, weights=w, minlength=size)
    conf_sum = np.bincount(idx, weights=w * conf.astype(np.float64), minlength=size)
    acc_sum = np.bincount(idx, weights=w * acc.astype(np.float64), minlength=size)
    # rule: conf_bin/acc_bin = nan_to_num(sum / count), prop_bin = count / count.sum() -- calibration_error.py
    acc_bin = np.nan_to_num(acc_sum / count)
    conf_bin = np.nan_to_num(conf_sum / count)
    prop = count / count.sum()
    gap = np.abs(acc_bin - conf_bin)
    # rule: l1 = sum(|acc - conf| * prop); max = max |acc - conf|; l2 = sqrt(sum((acc - conf)^2 * prop)) if that
    # sum is > 0 else 0 -- calibration_error.py (_ce_compute)
    if norm == "l1":
        return float(np.sum(gap * prop))
    if norm == "max":
        return float(np.max(gap))
    ce = float(np.sum(gap ** 2 * prop))
    return math.sqrt(ce) if ce > 0 else 0.0


def _cal_sklearn_check(conf, acc, n_bins, norm, want):
    """Cross-check with sklearn.calibration.calibration_curve (uniform bins) where its binning coincides with
    TorchMetrics' (no confidence on an inner boundary nor at 1.0): the same per-bin means, hence the same value."""
    from sklearn.calibration import calibration_curve

    c64 = conf.astype(np.float64)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    if c64.size == 0 or np.isnan(c64).any() or (c64 >= 1.0).any() or np.isin(c64, edges).any():
        return False
    if np.abs(c64[:, None] - edges[None, 1:-1]).min(initial=1.0) < 1e-6:
        return False
    prob_true, prob_pred = calibration_curve(acc.astype(np.int64), c64, n_bins=n_bins, pos_label=1)
    ids = np.searchsorted(edges[1:-1], c64)
    counts = np.bincount(ids, minlength=n_bins)
    w = counts[counts > 0] / c64.size
    gap = np.abs(prob_true - prob_pred)
    got = {"l1": np.sum(gap * w), "max": np.max(gap), "l2": math.sqrt(np.sum(gap ** 2 * w))}[norm]
    _close(got, want, 1e-7)
    return True


def _cal_margin(conf, n_bins, deliberate):
    # Values within 1e-6 of a boundary (other than deliberate exact hits) would make the fixture depend on the
    # last ulp of a sigmoid/softmax.
    b = _cal_boundaries(n_bins, conf.dtype.type).astype(np.float64)
    d = np.abs(conf.astype(np.float64)[:, None] - b[None, :])
    assert deliberate or not ((d > 0) & (d < 1e-6)).any(), "confidence too close to a bin boundary"


def _cal_binary_prepare(p, t, ignore_index):
    p = p.reshape(-1)
    t = t.reshape(-1).astype(np.int64)
    # rule: ignored elements are dropped before the logit check; float preds with any value outside [0, 1] are
    # sigmoided (per update() call) -- cls/confusion_matrix.py (_binary_confusion_matrix_format, threshold=0.0,
    # convert_to_labels=False); confidences = preds, accuracies = target -- calibration_error.py
    # (_binary_calibration_error_update)
    keep = np.ones_like(t, bool) if ignore_index is None else t != ignore_index
    p, t = p[keep], t[keep]
    if p.size and not np.all((p >= 0) & (p <= 1)):
        p = _sigmoid(p)
    return p, t


def _cal_multiclass_prepare(p, t, ignore_index):
    C = p.shape[1]
    p = np.moveaxis(p, 1, -1).reshape(-1, C)
    t = t.reshape(-1).astype(np.int64)
    keep = np.ones_like(t, bool) if ignore_index is None else t != ignore_index
    p, t = p[keep], t[keep]
    # rule (v1.5.2): softmax over dim 1 unless every value is in [0, 1]; confidences, predictions =
    # preds.max(dim=1); accuracies = predictions == target; both .float() -- calibration_error.py
    # (_multiclass_calibration_error_update)
    if p.size and not np.all((p >= 0) & (p <= 1)):
        p = _softmax(p.astype(np.float64)).astype(p.dtype)
    conf = p.max(axis=1).astype(np.float32)
    acc = (p.argmax(axis=1) == t).astype(np.int64)
    return conf, acc


def _cal_same_logit_decision(p, t, ignore_index, multiclass):
    decisions = set()
    for a, b in harness_chunks(p.shape[0]):
        pc, tc = p[a:b], t[a:b]
        if multiclass:
            pc = np.moveaxis(pc, 1, -1).reshape(-1, pc.shape[1])
        else:
            pc = pc.reshape(-1)
        tc = tc.reshape(-1)
        if ignore_index is not None:
            pc = pc[tc != ignore_index]
        if pc.size:
            decisions.add(bool(not np.all((pc >= 0) & (pc <= 1))))
    assert len(decisions) <= 1, "logit/softmax decision differs between update() chunks; fix the fixture data"


def gen_calibration():
    S = Suite("calibration.json")
    rng = np.random.default_rng(1505)
    N = 60
    t = rng.integers(0, 2, N)
    # two decimals (never on a boundary for the bin counts used below, except the deliberate cases)
    prob = np.clip(np.round(0.35 * t + 0.6 * rng.random(N) + 0.02, 2), 0.01, 0.99).astype(np.float32)
    prob = np.where(np.isin(np.round(prob.astype(np.float64) * 20, 6) % 1, [0]), prob + np.float32(0.003), prob)
    prob = prob.astype(np.float32)
    mag = np.float32(1.1) + np.abs(rng.normal(0, 1.5, N)).astype(np.float32)
    logit = (np.where(rng.random(N) < np.where(t == 1, 0.7, 0.35), 1, -1) * mag).astype(np.float32)
    tign = t.copy()
    tign[rng.random(N) < 0.2] = -1
    prob2 = prob.reshape(20, 3)
    t2 = t.reshape(20, 3)
    hand = "hand-written numpy (TorchMetrics _binning_bucketize/_ce_compute)"
    sk = hand + "; bin means == sklearn.calibration.calibration_curve"

    def add(name, metric, p, tt, conf, acc, n_bins, norm, deliberate=False, multiclass=False, ii=None):
        _cal_same_logit_decision(p.a, tt.a, ii, multiclass)
        _cal_margin(conf, n_bins, deliberate)
        want = calibration_expected(conf, acc, n_bins, norm)
        checked = _cal_sklearn_check(conf, acc, n_bins, norm, want)
        S.add(name, metric, {"preds": p, "target": tt}, want, sk if checked else hand)

    def bspec(args):
        return spec("binary_calibration_error", args)

    # binary: n_bins x norm on probabilities, float64, logits
    for n_bins in [None, 1, 5, 10, 20]:
        for norm in [None, "l1", "l2", "max"]:
            args = {}
            if n_bins is not None:
                args["n_bins"] = n_bins
            if norm is not None:
                args["norm"] = norm
            nb = 15 if n_bins is None else n_bins
            tag = f"nbins-{n_bins or 'default'}_norm-{norm or 'default'}"
            for scen, pr, conf in [("prob_f32", T(prob, "float32"), prob),
                                   ("prob_f64", T(prob, "float64"), prob.astype(np.float64)),
                                   ("logit_f32", T(logit, "float32"), _sigmoid(logit))]:
                if scen != "prob_f32" and norm not in (None, "l2"):
                    continue
                add(f"binary_{tag}__{scen}", bspec(args), pr, T(t, "int64"), conf, t, nb, norm or "l1")
    # binary edge cases
    for norm in ["l1", "l2", "max"]:
        c, a = _cal_binary_prepare(prob, tign, -1)
        add(f"binary_norm-{norm}_ii-neg1__ignore_index", bspec({"norm": norm, "ignore_index": -1}),
            T(prob, "float32"), T(tign, "int64"), c, a, 15, norm, ii=-1)
        add(f"binary_norm-{norm}__multidim_20x3", bspec({"norm": norm, "n_bins": 10}), T(prob2, "float32"),
            T(t2, "int32"), prob2.reshape(-1), t2.reshape(-1), 10, norm)
    # ignored elements outside [0, 1] do not make the rest logits (they are dropped first)
    pq = prob.copy()
    pq[tign == -1] = 3.5
    c, a = _cal_binary_prepare(pq, tign, -1)
    assert np.array_equal(c, prob[tign != -1])
    add("binary_ii-neg1__ignored_elems_outside_unit_range", bspec({"ignore_index": -1}), T(pq, "float32"),
        T(tign, "int64"), c, a, 15, "l1", ii=-1)
    # a confidence exactly on every boundary of torch.linspace(0, 1, 11) (0.0 and 1.0 included: 1.0 has its own bin),
    # and the float32 just below each
    for n_bins in [10, 15]:
        b = _cal_boundaries(n_bins, np.float32)
        below = np.nextafter(b[1:], np.float32(0)).astype(np.float32)
        hits = np.concatenate([b, below, b[1:-1]]).astype(np.float32)
        th = (np.arange(hits.size) % 3 == 0).astype(np.int64)
        for norm in ["l1", "l2", "max"]:
            add(f"binary_nbins-{n_bins}_norm-{norm}__boundary_hits_f32", bspec({"n_bins": n_bins, "norm": norm}),
                T(hits, "float32"), T(th, "int64"), hits, th, n_bins, norm, deliberate=True)
        b64 = _cal_boundaries(n_bins, np.float64)
        hits64 = np.concatenate([b64, np.nextafter(b64[1:], 0.0)])
        th64 = (np.arange(hits64.size) % 2).astype(np.int64)
        add(f"binary_nbins-{n_bins}__boundary_hits_f64", bspec({"n_bins": n_bins}), T(hits64, "float64"),
            T(th64, "int64"), hits64, th64, n_bins, "l1", deliberate=True)
    # empty bins (everything in two bins of 20), all positives, bool targets, one row
    few = np.where(t == 1, np.float32(0.912), np.float32(0.133)).astype(np.float32)
    for norm in ["l1", "l2", "max"]:
        add(f"binary_nbins-20_norm-{norm}__two_bins_used", bspec({"n_bins": 20, "norm": norm}), T(few, "float32"),
            T(t, "int64"), few, t, 20, norm)
        ones = np.ones(N, np.int64)
        add(f"binary_norm-{norm}__all_positive", bspec({"norm": norm}), T(prob, "float32"), T(ones, "bool"),
            prob, ones, 15, norm)
        perfect = t.astype(np.float32)
        add(f"binary_norm-{norm}__perfect_confidence_0_and_1", bspec({"norm": norm}), T(perfect, "float32"),
            T(t, "int64"), perfect, t, 15, norm, deliberate=True)
    add("binary__one_row", "binary_calibration_error", T(prob[:1], "float32"), T(t[:1], "int64"), prob[:1], t[:1],
        15, "l1")

    # multiclass
    C = 4
    tm_ = rng.integers(0, C, N)
    logits_mc = rng.normal(0, 1.2, (N, C)).astype(np.float32)
    logits_mc[np.arange(N), tm_] += np.float32(1.3)
    logits_mc[np.abs(logits_mc) <= 1] += np.float32(2.5)  # every row has values outside [0, 1]
    probs_mc = _softmax(logits_mc.astype(np.float64)).astype(np.float32)
    probs_mc = np.round(probs_mc, 3).astype(np.float32)
    probs_mc[np.arange(N), probs_mc.argmax(1)] += np.float32(0.0004)  # no ties for the argmax
    tign_mc = tm_.copy()
    tign_mc[rng.random(N) < 0.2] = -1

    def mspec(args):
        return spec("multiclass_calibration_error", dict({"num_classes": C}, **args))

    def mc_add(name, args, p, tt, n_bins=15, norm="l1", ii=None, deliberate=False, tdtype="int64"):
        conf, acc = _cal_multiclass_prepare(p, tt, ii)
        add(name, mspec(args), T(p, str(p.dtype)), T(tt, tdtype), conf, acc, n_bins, norm, deliberate=deliberate,
            multiclass=True, ii=ii)

    for n_bins in [None, 1, 5, 10]:
        for norm in [None, "l1", "l2", "max"]:
            args = {}
            if n_bins is not None:
                args["n_bins"] = n_bins
            if norm is not None:
                args["norm"] = norm
            nb = 15 if n_bins is None else n_bins
            tag = f"nbins-{n_bins or 'default'}_norm-{norm or 'default'}"
            mc_add(f"multiclass_{tag}__probs_f32", args, probs_mc, tm_, nb, norm or "l1")
            if norm in (None, "max"):
                mc_add(f"multiclass_{tag}__logits_f32", args, logits_mc, tm_, nb, norm or "l1")
                mc_add(f"multiclass_{tag}__probs_f64", args, probs_mc.astype(np.float64), tm_, nb, norm or "l1")
    for norm in ["l1", "l2", "max"]:
        mc_add(f"multiclass_norm-{norm}_ii-neg1__ignore_index", {"norm": norm, "ignore_index": -1}, probs_mc,
               tign_mc, norm=norm, ii=-1)
        mc_add(f"multiclass_norm-{norm}_ii-2__ignore_index_is_a_class", {"norm": norm, "ignore_index": 2},
               logits_mc, tm_, norm=norm, ii=2)
        right = probs_mc.argmax(1)
        mc_add(f"multiclass_norm-{norm}__all_correct", {"norm": norm}, probs_mc, right, norm=norm)
        p3 = np.ascontiguousarray(np.moveaxis(probs_mc.reshape(15, 4, C), 2, 1))  # (15, C, 4)
        mc_add(f"multiclass_norm-{norm}__multidim_15xCx4", {"norm": norm, "n_bins": 10}, p3, tm_.reshape(15, 4),
               n_bins=10, norm=norm, tdtype="int32")
    # top probabilities exactly on boundaries of 4 bins (0.25, 0.5, 0.75, 1.0), argmax at the first maximum
    hit = np.array([[0.5, 0.25, 0.25, 0.0], [0.25, 0.25, 0.25, 0.25], [0.75, 0.25, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0],
                    [0.125, 0.5, 0.375, 0.0], [0.1, 0.2, 0.3, 0.4], [0.4, 0.4, 0.1, 0.1]], np.float32)
    hit = np.tile(hit, (3, 1))
    th = np.tile(np.array([0, 3, 0, 1, 2, 3, 1]), 3)
    for norm in ["l1", "l2", "max"]:
        mc_add(f"multiclass_nbins-4_norm-{norm}__boundary_hits_and_ties", {"n_bins": 4, "norm": norm}, hit, th,
               n_bins=4, norm=norm, deliberate=True)
    mc_add("multiclass__one_row", {}, probs_mc[:1], tm_[:1])
    return S


# --------------------------------------------------------------------------------------------
# binary_auroc(max_fpr=...): standardized partial AUC
# --------------------------------------------------------------------------------------------
def tm_binned_partial_auroc(p, t, thr, max_fpr):
    """TorchMetrics' _binary_auroc_compute on binned counts, step by step (numpy, float64)."""
    tp, fp, fn, tn = _binned_counts(p, t, thr)
    tpr = _sdiv(tp, tp + fn)[::-1]
    fpr = _sdiv(fp, fp + tn)[::-1]
    # rule: max_fpr None/1 or fpr.sum() == 0 or tpr.sum() == 0 -> plain trapezoidal auc -- cls/auroc.py
    # (_binary_auroc_compute)
    if max_fpr == 1 or fpr.sum() == 0 or tpr.sum() == 0:
        return float(np.sum((fpr[1:] - fpr[:-1]) * (tpr[1:] + tpr[:-1]) / 2))
    # rule: stop = bucketize(max_fpr, fpr, right=True); interpolate tpr between fpr[stop-1] and fpr[stop]
    # (stop - 1 == -1 wraps around: the cut curve is the single point (max_fpr, .) and its area 0; stop == len(fpr)
    # raises IndexError there -- Tally gives NaN); append (max_fpr, interp) to fpr[:stop], tpr[:stop] -- auroc.py
    stop = int(np.searchsorted(fpr, max_fpr, side="right"))
    if stop == len(fpr):
        return float("nan")
    with np.errstate(all="ignore"):
        w = (max_fpr - fpr[stop - 1]) / (fpr[stop] - fpr[stop - 1])
        interp = tpr[stop - 1] + w * (tpr[stop] - tpr[stop - 1])
    x = np.append(fpr[:stop], max_fpr)
    y = np.append(tpr[:stop], interp)
    pauc = float(np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2)) if stop > 0 else 0.0
    # rule: McClish: 0.5 * (1 + (pauc - max_fpr^2 / 2) / (max_fpr - max_fpr^2 / 2)) -- auroc.py
    min_area = 0.5 * max_fpr ** 2
    return 0.5 * (1 + (pauc - min_area) / (max_fpr - min_area))


def gen_auroc_max_fpr():
    S = Suite("auroc_max_fpr.json")
    rng = np.random.default_rng(4242)
    N = 56
    t = rng.integers(0, 2, N)
    prob = np.round(0.3 * t + 0.7 * rng.random(N), 2).astype(np.float32)  # many ties, across classes too
    mag = np.float32(1.05) + np.abs(rng.normal(0, 1.5, N)).astype(np.float32)
    logit = (np.where(rng.random(N) < np.where(t == 1, 0.75, 0.3), 1, -1) * mag).astype(np.float32)
    sig = _sigmoid(logit)
    tign = t.copy()
    tign[rng.random(N) < 0.2] = -1
    keep = tign != -1
    t2 = t.reshape(14, 4)
    src = "sklearn.metrics.roc_auc_score(max_fpr)"
    # rule: exact form = the standardized partial AUC of the exact ROC (TorchMetrics interpolates at max_fpr and
    # applies the McClish correction exactly as sklearn does) -- cls/auroc.py (_binary_auroc_compute)
    n_neg = int((t == 0).sum())
    for m in [0.05, 0.1, 0.25, 0.5, 0.8, 0.99, 1.0, 3 / n_neg]:
        mt = f"{m:.6g}"
        for scen, pr, tt, yy, ss, extra in [
            ("prob_f32", T(prob, "float32"), T(t, "int64"), t, prob, {}),
            ("prob_f64", T(prob, "float64"), T(t, "int32"), t, prob.astype(np.float64), {}),
            ("logit_f32", T(logit, "float32"), T(t, "int64"), t, sig, {}),
            ("multidim_14x4", T(prob.reshape(14, 4), "float32"), T(t2, "int64"), t, prob, {}),
            ("ignore_index", T(prob, "float32"), T(tign, "int64"), t[keep], prob[keep], {"ignore_index": -1}),
        ]:
            if m not in (0.1, 0.5, 1.0) and scen not in ("prob_f32", "logit_f32"):
                continue
            want = skm.roc_auc_score(yy, ss.astype(np.float64), max_fpr=m)
            args = dict({"max_fpr": float(m)}, **extra)
            S.add(f"auroc_exact_max_fpr-{mt}__{scen}", spec("binary_auroc", args), {"preds": pr, "target": tt},
                  want, src)
    # rule: no positives or no negatives -> the plain auroc, 0 (sklearn raises instead) -- auroc.py
    for scen, tt in [("all_positive", np.ones(N, np.int64)), ("all_negative", np.zeros(N, np.int64))]:
        S.add(f"auroc_exact_max_fpr-0.3__{scen}", spec("binary_auroc", {"max_fpr": 0.3}),
              {"preds": T(prob, "float32"), "target": T(tt, "int64")}, 0.0,
              "hand-written (TorchMetrics: fpr.sum() == 0 or tpr.sum() == 0 gives the plain AUC)")
    hand = "hand-written numpy (TorchMetrics _binary_auroc_compute on binned counts)"
    for thr_arg, thr in [("5", _torch_linspace_f32(5)), ("11", _torch_linspace_f32(11)),
                         ("[0.1, 0.25, 0.5, 0.8]", np.array([0.1, 0.25, 0.5, 0.8], np.float32))]:
        tag = thr_arg.replace(" ", "").replace("[", "list").replace("]", "").replace(",", "_")
        for m in [0.1, 0.3, 0.5, 0.75, 1.0]:
            for scen, pr, score in [("prob_f32", T(prob, "float32"), prob), ("logit_f32", T(logit, "float32"), sig)]:
                want = tm_binned_partial_auroc(score, t, thr, m)
                S.add(f"auroc_binned{tag}_max_fpr-{m}__{scen}", f"binary_auroc(thresholds={thr_arg}, max_fpr={m})",
                      {"preds": pr, "target": T(t, "int64")}, want, hand)
    # QUIRK: every binned fpr above max_fpr -> bucketize gives 0, fpr[-1] wraps, the partial area is 0
    low = np.array([0.02, 0.05], np.float32)
    want = tm_binned_partial_auroc(prob, t, low, 0.2)
    tp, fp, fn, tn = _binned_counts(prob, t, low)
    assert (_sdiv(fp, fp + tn) > 0.2).all()
    S.add("auroc_binned_list0.02_0.05_max_fpr-0.2__every_fpr_above_QUIRK",
          "binary_auroc(thresholds=[0.02, 0.05], max_fpr=0.2)", {"preds": T(prob, "float32"), "target": T(t, "int64")},
          want, hand)
    # every binned fpr at or below max_fpr: TorchMetrics raises IndexError, Tally gives NaN
    high = np.array([0.6, 0.9], np.float32)
    tp, fp, fn, tn = _binned_counts(prob, t, high)
    assert (_sdiv(fp, fp + tn) <= 0.5).all() and _sdiv(fp, fp + tn).sum() > 0
    S.add("auroc_binned_list0.6_0.9_max_fpr-0.5__no_fpr_above_QUIRK",
          "binary_auroc(thresholds=[0.6, 0.9], max_fpr=0.5)", {"preds": T(prob, "float32"), "target": T(t, "int64")},
          tm_binned_partial_auroc(prob, t, high, 0.5), hand + "; NaN where TorchMetrics raises IndexError")
    return S


# --------------------------------------------------------------------------------------------
# curve outputs: binary/multiclass/multilabel roc and precision_recall_curve (tuple results)
# --------------------------------------------------------------------------------------------
class TreeSuite(Suite):
    """A suite whose expected values are tuples/lists of arrays of different lengths (nested JSON lists)."""

    def add(self, name, metric, inputs, expected, source, rtol=RTOL, atol=ATOL):
        super().add(name, metric, inputs, 0.0, source, rtol, atol)
        self.cases[-1]["expected"] = _co_tree(expected)


def _co_tree(x):
    if isinstance(x, (list, tuple)):
        return [_co_tree(v) for v in x]
    return _expected(np.asarray(x))


def _co_roc_exact(y, s):
    """(fpr, tpr, thresholds) of one binary problem, TorchMetrics' values."""
    y = np.asarray(y, np.int64)
    s = np.asarray(s)
    if len(y) == 0:
        # rule: no kept element: nothing but the (0, 0) point (TorchMetrics fails there; Tally returns the point)
        return np.zeros(1, np.float32), np.zeros(1, np.float32), np.ones(1, s.dtype)
    fpr, tpr, thr = skm.roc_curve(y, s, drop_intermediate=False)
    # rule: every distinct score is kept (sklearn's drop_intermediate=False), thresholds descending, the curve
    # starts at (0, 0) with threshold 1.0 (sklearn: max score + 1) -- src/torchmetrics/functional/classification/
    # roc.py (_binary_roc_compute), precision_recall_curve.py (_binary_clf_curve)
    thr = np.concatenate([[1.0], thr[1:]]).astype(s.dtype)
    # rule: no negatives -> fpr all zeros, no positives -> tpr all zeros (sklearn: NaN) -- roc.py (_binary_roc_compute)
    fpr = np.nan_to_num(fpr, nan=0.0).astype(np.float32)
    tpr = np.nan_to_num(tpr, nan=0.0).astype(np.float32)
    return fpr, tpr, thr


def _co_prc_exact(y, s, recall_one=None):
    """(precision, recall, thresholds) of one binary problem; `recall_one` overrides the no-positives test."""
    y = np.asarray(y, np.int64)
    s = np.asarray(s)
    if len(y) == 0:
        return np.ones(1, np.float32), np.zeros(1, np.float32), np.zeros(0, s.dtype)
    prec, rec, thr = skm.precision_recall_curve(y, s)
    # rule: sklearn's curve is TorchMetrics' (every distinct score, ascending, precision 1 / recall 0 appended;
    # no positives -> recall 1 everywhere) -- src/torchmetrics/functional/classification/precision_recall_curve.py
    # (_binary_precision_recall_curve_compute)
    if recall_one is not None:
        # rule: the multiclass form tests `target == 0` on the class labels: when every kept target is class 0
        # every class gets recall 1 (class 0 too), else a class without positives gets recall 0/0 = NaN --
        # precision_recall_curve.py (_multiclass_..._compute calls _binary_precision_recall_curve_compute with
        # pos_label=c)
        if recall_one:
            rec = np.concatenate([np.ones(len(rec) - 1), [0.0]])
        elif y.sum() == 0:
            rec = np.concatenate([np.full(len(rec) - 1, np.nan), [0.0]])
    return prec.astype(np.float32), rec.astype(np.float32), thr.astype(s.dtype)


def _co_binned(kind, p, y, thr):
    """Binned curve of one binary problem: roc (fpr, tpr) flipped, prc (precision, recall) with 1 / 0 appended."""
    tp, fp, fn, tn = _binned_counts(np.asarray(p), np.asarray(y), thr)
    f32 = np.float32
    if kind == "roc":
        # rule: tpr = tps / (tps + fns), fpr = fps / (fps + tns) (_safe_divide: 0 where 0/0), both flipped --
        # src/torchmetrics/functional/classification/roc.py (_binary_roc_compute)
        return (_sdiv(f32(fp), f32(fp + tn)).astype(f32)[::-1], _sdiv(f32(tp), f32(tp + fn)).astype(f32)[::-1])
    # rule: precision = tps / (tps + fps), recall = tps / (tps + fns) (0 where 0/0), then 1 / 0 appended --
    # precision_recall_curve.py (_binary_precision_recall_curve_compute)
    return (np.append(_sdiv(f32(tp), f32(tp + fp)).astype(f32), f32(1)),
            np.append(_sdiv(f32(tp), f32(tp + fn)).astype(f32), f32(0)))


def _co_interp(x, xp, fp):
    # rule: interp in float32: slopes m = _safe_divide(fp[1:] - fp[:-1], xp[1:] - xp[:-1]), b = fp[:-1] - m * xp[:-1],
    # index = clamp(#(xp <= x) - 1, 0, len(m) - 1), m[i] * x + b[i] -- src/torchmetrics/utilities/compute.py (interp)
    x, xp, fp = (np.asarray(v, np.float32) for v in (x, xp, fp))
    m = _sdiv(fp[1:] - fp[:-1], xp[1:] - xp[:-1]).astype(np.float32)
    b = (fp[:-1] - m * xp[:-1]).astype(np.float32)
    idx = np.clip((x[:, None] >= xp[None, :]).sum(1) - 1, 0, len(m) - 1)
    return (m[idx] * x + b[idx]).astype(np.float32)


def _co_macro(kind, curves, thresholds):
    # rule: macro = thresholds of every class sorted (roc descending, prc ascending), x = the sorted concatenation
    # of the classes' fpr (precision), y = mean over classes of interp(x, x_c, y_c), accumulated in float32 --
    # src/torchmetrics/functional/classification/roc.py (_multiclass_roc_compute), precision_recall_curve.py
    # (_multiclass_precision_recall_curve_compute)
    thr = np.sort(np.concatenate(thresholds))
    if kind == "roc":
        thr = thr[::-1]
    x = np.sort(np.concatenate([c[0] for c in curves]).astype(np.float32))
    y = np.zeros_like(x)
    for c in curves:
        y = (y + _co_interp(x, c[0], c[1])).astype(np.float32)
    return x, (y / np.float32(len(curves))).astype(np.float32), thr


def _co_prepare(task, preds, target, C, ignore_index):
    """TorchMetrics' format step: (rows, C) probabilities and targets; binary flattens."""
    p = np.asarray(preds)
    t = np.asarray(target).astype(np.int64)
    if task == "binary":
        p, t = p.reshape(-1), t.reshape(-1)
        if ignore_index is not None:
            # rule: binary drops ignored elements before the logit check -- precision_recall_curve.py
            # (_binary_precision_recall_curve_format)
            p, t = p[t != ignore_index], t[t != ignore_index]
        if p.size and not np.all((p >= 0) & (p <= 1)):
            p = _sigmoid(p)
        return p, t
    # rule: (N, C, ...) -> (N*..., C) -- precision_recall_curve.py (_multiclass/_multilabel_..._format)
    p = np.moveaxis(p, 1, -1).reshape(-1, C)
    if task == "multiclass":
        t = t.reshape(-1)
        if ignore_index is not None:
            p, t = p[t != ignore_index], t[t != ignore_index]
        # rule: multiclass softmax(dim=1) when any kept score is outside [0, 1] -- _multiclass_..._format
        if p.size and not np.all((p >= 0) & (p <= 1)):
            p = _softmax(p.astype(np.float64)).astype(p.dtype)
        return p, t
    t = np.moveaxis(t, 1, -1).reshape(-1, C)
    # rule: multilabel sigmoid when ANY element (ignored ones included) is outside [0, 1] -- _multilabel_..._format
    if not np.all((p >= 0) & (p <= 1)):
        p = _sigmoid(p)
    return p, t


def curve_output_expected(kind, task, preds, target, C=1, thr=None, average=None, ignore_index=None):
    p, t = _co_prepare(task, preds, target, C, ignore_index)
    exact = _co_roc_exact if kind == "roc" else _co_prc_exact
    if task == "binary" or average == "micro":
        if task == "multiclass":
            # rule: micro = one binary curve over preds.flatten() and one_hot(target).flatten() -- _multiclass_..._format
            t = np.eye(C, dtype=np.int64)[t].reshape(-1)
            p = p.reshape(-1)
        if thr is None:
            return list(exact(t, p))
        x, y = _co_binned(kind, p, t, thr)
        return [x, y, thr[::-1] if kind == "roc" else thr]
    per_class, thrs = [], []
    for c in range(C):
        if task == "multiclass":
            s, y = p[:, c], (t == c).astype(np.int64)
        else:
            # rule: multilabel drops ignored elements per label -- _multilabel_..._compute
            keep = t[:, c] != ignore_index if ignore_index is not None else np.ones(len(t), bool)
            s, y = p[keep, c], t[keep, c]
        if thr is not None:
            per_class.append(_co_binned(kind, s, y, thr))
        elif kind == "roc":
            per_class.append(_co_roc_exact(y, s))
        else:
            per_class.append(_co_prc_exact(y, s, recall_one=(len(t) == 0 or (t == 0).all()) if task == "multiclass"
                                           else None))
        thrs.append(per_class[-1][2] if thr is None else (thr[::-1] if kind == "roc" else thr))
    if average == "macro":
        # rule: binned macro repeats the shared thresholds once per class -- roc.py / precision_recall_curve.py
        return list(_co_macro(kind, per_class, thrs))
    if thr is not None:
        # rule: binned per-class curves are one [C, T] ([C, T+1]) tensor each, thresholds [T] -- roc.py
        return [np.stack([c[0] for c in per_class]), np.stack([c[1] for c in per_class]),
                thr[::-1] if kind == "roc" else thr]
    return [[c[i] for c in per_class] for i in range(3)]


def _co_check_binary(p, t, ignore_index, thresholds):
    """Each harness chunk makes the same logits decision (ignored elements dropped first) and no sigmoided
    probability lies within 1e-6 of another or of a threshold."""
    decisions = set()
    for a, b in harness_chunks(p.shape[0]):
        pc, tc = p[a:b].reshape(-1), t[a:b].reshape(-1)
        if ignore_index is not None:
            pc = pc[tc != ignore_index]
        if pc.size:
            decisions.add(_is_logit_input(pc))
    assert len(decisions) <= 1, "logit detection differs between update() chunks; fix the fixture data"
    if _is_logit_input(p):
        q = np.sort(1 / (1 + np.exp(-p.reshape(-1).astype(np.float64))))
        d = np.diff(q)
        assert not ((d > 0) & (d < 1e-6)).any(), "near-tie after sigmoid"
        for thr in thresholds:
            if thr is not None:
                assert np.abs(q[:, None] - np.asarray(thr, np.float64)).min() > 1e-6, "probability at a threshold"


def gen_curve_outputs():
    S = TreeSuite("curve_outputs.json")
    rng = np.random.default_rng(1509)
    src = "sklearn.metrics.roc_curve(drop_intermediate=False) / precision_recall_curve + TorchMetrics rules"
    hand = "hand-written numpy (binned, TorchMetrics rules)"
    macro_src = src + "; macro: numpy TorchMetrics interp"
    thr_forms = [(None, None), ("5", _torch_linspace_f32(5)), ("10", _torch_linspace_f32(10)),
                 ("[0.1, 0.25, 0.5, 0.8]", np.array([0.1, 0.25, 0.5, 0.8], np.float32)),
                 ("[0.8, 0.1, 0.5]", np.array([0.8, 0.1, 0.5], np.float32))]
    kinds = [("roc", "roc"), ("prc", "precision_recall_curve")]

    def add(task, tag, pr, tt, C, extra, forms, averages=(None,)):
        ii = extra.get("ignore_index")
        for thr_arg, thr in forms:
            for average in averages:
                for kind, fn in kinds:
                    args = {}
                    if task == "multiclass":
                        args["num_classes"] = C
                    if task == "multilabel":
                        args["num_labels"] = C
                    if average is not None:
                        args["average"] = average
                    if thr_arg is not None:
                        args["thresholds"] = thr_arg  # written as given: an int or a list
                    args.update(extra)
                    metric = f"{task}_{fn}"
                    name = f"{metric}_avg-{average or 'default'}_thr-{_cm_thr_tag(thr_arg)}__{tag}"
                    exp = curve_output_expected(kind, task, pr.a, tt.a, C, thr, average, ii)
                    S.add(name, spec(metric, args), {"preds": pr, "target": tt}, exp,
                          hand if thr_arg is not None else macro_src if average == "macro" else src)

    # binary: two decimals (ties, also between positives and negatives)
    N = 40
    t = rng.integers(0, 2, N)
    prob = np.round(0.3 * t + 0.7 * rng.random(N), 2)
    mag = 1.05 + np.abs(rng.normal(0, 1.5, N))  # every logit outside [0, 1]: each harness chunk sigmoids
    logit = np.where(rng.random(N) < np.where(t == 1, 0.75, 0.3), 1, -1) * mag
    t_ign = np.where(rng.random(N) < 0.2, -1, t)
    prob2, t2 = np.round(rng.random((10, 3)), 1), rng.integers(0, 2, (10, 3))
    binary = [
        ("prob_f32", T(prob, "float32"), T(t, "int64"), {}),
        ("prob_f64_target_i32", T(prob, "float64"), T(t, "int32"), {}),
        ("logit_f32", T(logit, "float32"), T(t, "int64"), {}),
        ("ignore-1", T(prob, "float32"), T(t_ign, "int64"), {"ignore_index": -1}),
        ("logit_ignore-1", T(logit, "float32"), T(t_ign, "int64"), {"ignore_index": -1}),
        ("multidim_10x3", T(prob2, "float32"), T(t2, "int64"), {}),
        ("all_negative", T(prob, "float32"), T(np.zeros(N), "int64"), {}),
        ("all_positive", T(prob, "float32"), T(np.ones(N), "int64"), {}),
        ("one_tie_group", T(np.full(N, 0.5), "float32"), T(t, "int64"), {}),
    ]
    for tag, pr, tt, extra in binary:
        _co_check_binary(pr.a, tt.a, extra.get("ignore_index"), [f for _, f in thr_forms])
        forms = thr_forms if tag in ("prob_f32", "logit_f32", "ignore-1", "all_negative") else thr_forms[:2]
        add("binary", tag, pr, tt, 1, extra, forms)

    # multiclass: C = 4
    C, N = 4, 30
    t = rng.integers(0, C, N)
    prob = np.round(rng.random((N, C)) * 0.7 + 0.3 * np.eye(C)[t], 2)
    logit = rng.normal(0, 1.5, (N, C)) + 1.2 * np.eye(C)[t]
    logit[:, 0] = np.where(logit[:, 0] >= 0, logit[:, 0] + 1.1, logit[:, 0] - 0.1)  # every row outside [0, 1]
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
        _cm_check_data("multiclass", pr.a, tt.a, extra.get("ignore_index"), [f for _, f in thr_forms])
        forms = thr_forms if tag in ("prob_f32", "logit_f32", "absent_class3") else thr_forms[:2]
        add("multiclass", tag, pr, tt, nc, extra, forms, averages=(None, "micro", "macro"))

    # multilabel: L = 3
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
        ("logit_f32", T(mlogit, "float32"), T(tl, "int64"), L, {}),
        ("ignore-1", T(mprob, "float32"), T(tl_ign, "int64"), L, {"ignore_index": -1}),
        ("label0_without_negatives", T(mprob, "float32"), T(tl_all1, "int64"), L, {}),
        ("multidim_12x3x2", T(ml3, "float32"), T(tl3, "int64"), 3, {}),
    ]
    for tag, pr, tt, nl, extra in multilabel:
        _cm_check_data("multilabel", pr.a, tt.a, extra.get("ignore_index"), [f for _, f in thr_forms])
        forms = thr_forms if tag in ("prob_f32", "logit_f32") else thr_forms[:2]
        add("multilabel", tag, pr, tt, nl, extra, forms)
    return S


def _cal_expected_of_case(case):
    """A calibration case's expected value recomputed from its stored inputs (under this torch's linspace)."""
    import re

    args = dict(re.findall(r"(\w+)=([^,)]+)", case["metric"]))
    ii = int(args["ignore_index"]) if "ignore_index" in args else None
    n_bins = int(args.get("n_bins", 15))
    norm = args.get("norm", "l1")
    arr = {k: np.asarray(v["data"], _NP[v["dtype"]]).reshape(v["shape"]) for k, v in case["inputs"].items()}
    if case["metric"].startswith("binary_"):
        conf, acc = _cal_binary_prepare(arr["preds"], arr["target"], ii)
    else:
        conf, acc = _cal_multiclass_prepare(arr["preds"], arr["target"], ii)
    return _expected(calibration_expected(conf, acc, n_bins, norm))


def torch2_overlay(names):
    """Writes fixtures/torch2/<suite>.json: each case of the suite recomputed from its stored inputs under
    this (2.x) torch; only the cases whose expected value changes are listed."""
    import torch

    assert int(torch.__version__.split(".")[0]) >= 2, "run --torch2-overlay with a torch 2.x"
    recompute = {"calibration": _cal_expected_of_case}
    os.makedirs(os.path.join(OUT_DIR, "torch2"), exist_ok=True)
    for name in names:
        fname = name + ".json"
        with open(os.path.join(OUT_DIR, fname)) as f:
            cases = [c for c in json.load(f)["cases"] if "expected" in c]
        changed = {}
        for c in cases:
            want = recompute[name](c)
            if want != c["expected"]:
                changed[c["name"]] = want
        path = os.path.join(OUT_DIR, "torch2", fname)
        if changed:
            with open(path, "w") as f:
                json.dump({"torch": torch.__version__, "expected": changed}, f, indent=1, sort_keys=True)
                f.write("\n")
        elif os.path.exists(path):
            os.remove(path)
        print(f"{os.path.relpath(path, HERE)}: {len(changed)} of {len(cases)} cases differ under torch "
              f"{torch.__version__}")


def main():
    import sys

    if sys.argv[1:2] == ["--torch2-overlay"]:
        torch2_overlay(sys.argv[2:])
        return
    suites = [gen_aggregation(), gen_regression(), gen_binary(), gen_multiclass(), gen_multilabel(),
              gen_curves(), gen_retrieval(), gen_curves_multi(), gen_calibration(), gen_auroc_max_fpr(), gen_curve_outputs()]
    total = 0
    for s in suites:
        path, n = s.write()
        total += n
        print(f"{os.path.relpath(path, HERE)}: {n} cases, {os.path.getsize(path) // 1024} KiB")
    print(f"total: {total} cases")


if __name__ == "__main__":
    main()
