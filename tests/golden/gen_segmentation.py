#!/usr/bin/env python3
"""Golden fixtures for the segmentation overlap metrics: mean_iou, generalized_dice_score, dice_score.

Regenerate (numpy; gen_fixtures.py, whose helpers are imported, also loads scipy and scikit-learn -- the
Debian python3-* packages work):

    /usr/bin/python3 tests/golden/gen_segmentation.py

Output, in the case format of tests/golden/README.md: tests/golden/fixtures/segmentation.json, inputs `preds` and
`target` (masks), and a summary on stdout. The output is deterministic (fixed seeds).

Semantics (TorchMetrics itself is neither imported nor run; its rules were read from its sources and each one is cited
below in a `# rule:` comment naming the file: `fseg/` = src/torchmetrics/functional/segmentation/, `seg/` =
src/torchmetrics/segmentation/, with the version read):
* mean_iou(num_classes, include_background=true, per_class=false, input_format=one-hot) and
  generalized_dice_score(num_classes, include_background=true, per_class=false, weight_type=square,
  input_format=one-hot) follow torchmetrics v1.5.2 (src/torchmetrics/functional/segmentation/{mean_iou,
  generalized_dice,utils}.py and the classes in src/torchmetrics/segmentation/{mean_iou,generalized_dice}.py);
* dice_score(num_classes, include_background=true, average=macro, aggregation_level=samplewise,
  input_format=one-hot) follows torchmetrics v1.9.0 (src/torchmetrics/functional/segmentation/{dice,utils}.py and
  the class src/torchmetrics/segmentation/dice.py).

Where each expected value comes from: the per-sample, per-class counts I = |preds ∩ target|, P = |preds|,
T = |target| are taken two ways and asserted equal -- (a) sums of boolean one-hot masks over the spatial dims,
(b) np.bincount of a joint index (index masks and argmaxed logits: n·C² + pred·C + target, a confusion matrix per
sample; one-hot masks: (n·C + c)·4 + 2·pred + target per channel). The metric is then computed two ways and asserted
to agree to 1e-14: (1) exact rationals with fractions.Fraction in plain Python loops (NaN as None), (2) vectorised
NumPy float64. `expected` is the Fraction route rounded once to float64. For mean_iou and generalized_dice_score the
generator also replays TorchMetrics' running state under the golden test's three evaluations (one update of all
rows, updates of 7 rows, two halves merged) and asserts all three give `expected`.

TorchMetrics' docstring examples use torch.randint after torch.manual_seed(42) (conftest.py resets the seed before
every doctest) or torch.Generator().manual_seed(s). On the CPU torch.randint(low, high) draws one 32-bit output of
mt19937(seed) per element, in row-major order, and takes low + u32 % (high - low); numpy's legacy-seeded MT19937
(RandomState(seed)) yields the same 32-bit stream, so those inputs are rebuilt here and the printed 4-decimal
values are asserted (a third, independent check). The class docstrings (10 x 3 x 128 x 128) are too large to store.

Batching: MeanIoU adds each update's batch mean (over samples) of the per-sample scores to `score` and divides by the
number of updates, so its value depends on how the rows are batched. The golden test evaluates every case as one
update, as updates of 7 rows, and as two halves (rows [0, N//2) and [N//2, N)) merged; an empty half is an update
that Tally does not count. All three agree only for N in {1, 2, 4, 6}: every mean_iou case has such an N.
GeneralizedDiceScore sums per-sample scores and divides by the number of samples (batch-invariant) except through
its replacement of infinite weights, which looks at the other samples of the same update; so every
generalized_dice_score case with N >= 2 has finite weights (every kept class present in every sample's target, or
weight_type=linear), and the infinite-weight rule (cases named `quirk`) is exercised with N = 1 only.
DiceScore (1.9) concatenates per-sample counts: samplewise and global are batch-invariant.

Tolerances: rtol 1e-12, atol 1e-12 -- the values are exact rationals of integer counts rounded to float64. TorchMetrics
computes weights and ratios in float32; the fixtures hold the exact values (README: "Expected values are exact").
Counts: a per-class count summed over samples above 2^24 (float32's exact-integer limit) would need > 16.7M mask
elements, far over the ~3 MB budget of a JSON fixture; it is not here (tested in C++).
"""
import math
import os
import sys
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import Refused, T, Suite, _fmt_arg, spec  # noqa: E402

RT, AT = 1e-12, 1e-12
IOU, GDS, DICE = "mean_iou", "generalized_dice_score", "dice_score"
STATS = {"iou": 0, "gds": 0, "dice": 0, "refused": 0, "docstring_asserts": 0}


# --------------------------------------------------------------------------------------------
# input formatting and counts
# --------------------------------------------------------------------------------------------
def kept_classes(num_classes, include_background):
    # rule: _ignore_background drops channel 0 only when there are >= 2 channels -- fseg/utils.py
    # (v1.5.2 and v1.9.0)
    if not include_background and num_classes > 1:
        return list(range(1, num_classes))
    return list(range(num_classes))


def argmax_unique(a):
    """argmax over dim 1 of float scores [N, C, ...]; asserts a unique maximum (no tie order to depend on)."""
    mx = a.max(axis=1, keepdims=True)
    assert ((a == mx).sum(axis=1) == 1).all(), "argmax tie in float one-hot input"
    return a.argmax(axis=1)


def onehot_masks(x, fmt, C):
    """Route (a): boolean one-hot masks [N, C, ...]."""
    a = x.a
    if fmt == "index":
        # rule: input_format="index": one_hot(x, num_classes).movedim(-1, 1) -- fseg/mean_iou.py,
        # fseg/generalized_dice.py (v1.5.2), fseg/utils.py _segmentation_inputs_format (v1.9.0)
        assert a.min() >= 0 and a.max() < C
        return np.stack([a == c for c in range(C)], axis=1)
    assert a.shape[1] == C
    if a.dtype.kind == "f":
        # rule: v1.9.0 _format_logits: a floating one-hot input is argmaxed over dim 1 and one-hot encoded --
        # fseg/utils.py (dice_score only; mean_iou 1.5.2 needs integer masks for `&`)
        idx = argmax_unique(a)
        return np.stack([idx == c for c in range(C)], axis=1)
    assert set(np.unique(a.astype(np.int64)).tolist()) <= {0, 1}
    return a.astype(bool)


def counts_masks(p, t, fmt, C, keep):
    oh_p, oh_t = onehot_masks(p, fmt, C), onehot_masks(t, fmt, C)
    oh_p, oh_t = oh_p[:, keep], oh_t[:, keep]
    ax = tuple(range(2, oh_p.ndim))
    # rule: I = sum(preds & target) (mean_iou) / sum(preds * target) (dice); P = sum(preds), T = sum(target) over
    # dims 2.. -- fseg/mean_iou.py, fseg/generalized_dice.py (v1.5.2), fseg/dice.py (v1.9.0)
    inter = (oh_p & oh_t).sum(ax).astype(np.int64)
    return inter, oh_p.sum(ax).astype(np.int64), oh_t.sum(ax).astype(np.int64)


def counts_bincount(p, t, fmt, C, keep):
    """Route (b): joint-index bincounts."""
    n = p.a.shape[0]
    if fmt == "index" or p.a.dtype.kind == "f":
        ip = p.a if fmt == "index" else argmax_unique(p.a)
        it = t.a if fmt == "index" else (argmax_unique(t.a) if t.a.dtype.kind == "f" else None)
        if it is None:  # float preds, integer one-hot target (exclusive): index of the single 1
            assert (t.a.sum(axis=1) == 1).all()
            it = t.a.argmax(axis=1)
        ip = ip.reshape(n, -1).astype(np.int64)
        it = it.reshape(n, -1).astype(np.int64)
        joint = np.arange(n)[:, None] * C * C + ip * C + it
        conf = np.bincount(joint.ravel(), minlength=n * C * C).reshape(n, C, C)  # [n, pred, target]
        inter = np.einsum("ncc->nc", conf)
        P, Tt = conf.sum(2), conf.sum(1)
    else:
        pa = p.a.reshape(n, C, -1).astype(np.int64)
        ta = t.a.reshape(n, C, -1).astype(np.int64)
        code = (np.arange(n)[:, None, None] * C + np.arange(C)[None, :, None]) * 4 + 2 * pa + ta
        cnt = np.bincount(code.ravel(), minlength=n * C * 4).reshape(n, C, 4)
        inter = cnt[..., 3]
        P, Tt = cnt[..., 2] + cnt[..., 3], cnt[..., 1] + cnt[..., 3]
    return inter[:, keep], P[:, keep], Tt[:, keep]


def counts(p, t, fmt, C, include_background):
    keep = kept_classes(C, include_background)
    a = counts_masks(p, t, fmt, C, keep)
    b = counts_bincount(p, t, fmt, C, keep)
    for x, y in zip(a, b):
        assert x.shape == y.shape and (x == y).all()
    return a


# --------------------------------------------------------------------------------------------
# the three metrics: Fraction route and float64 route
# --------------------------------------------------------------------------------------------
def _q(x):
    # exact rational; numpy ints are made Python ints first (a Fraction of np.int64 keeps int64 parts and overflows)
    return x if isinstance(x, Fraction) else Fraction(int(x))


def fdiv(a, b, zero):
    return zero if b == 0 else _q(a) / _q(b)


def nanmean_f(xs):
    v = [x for x in xs if x is not None]
    return None if not v else sum(v, Fraction(0)) / len(v)


def iou_samples_f(I, P, Tt):
    """Per-sample, per-class IoU as Fractions."""
    # rule: union = target_sum + pred_sum - intersection; _mean_iou_compute: _safe_divide(I, U), 0/0 -> 0 --
    # fseg/mean_iou.py (v1.5.2)
    return [[fdiv(I[n, c], Tt[n, c] + P[n, c] - I[n, c], Fraction(0)) for c in range(I.shape[1])]
            for n in range(I.shape[0])]


def iou_update_f(I, P, Tt, per_class):
    """One MeanIoU update: the batch mean added to `score` (scalar or [C'])."""
    s = iou_samples_f(I, P, Tt)
    n, k = I.shape
    if per_class:
        # rule: MeanIoU.update: score += per-class scores .mean(0) -- seg/mean_iou.py (v1.5.2)
        return [sum((s[i][c] for i in range(n)), Fraction(0)) / n for c in range(k)]
    # rule: _mean_iou_compute per_class=False: torch.mean(val, 1); MeanIoU.update: score += score.mean() --
    # fseg/mean_iou.py, seg/mean_iou.py (v1.5.2)
    return sum((sum(row, Fraction(0)) / k for row in s), Fraction(0)) / n


def iou_np(I, P, Tt, per_class):
    U = (Tt + P - I).astype(np.float64)
    v = np.where(U > 0, I / np.where(U > 0, U, 1.0), 0.0)
    return v.mean(0) if per_class else v.mean(1).mean()


def gds_weights_np(Tt, weight_type):
    """TorchMetrics' weights with its replacement of infinite weights, written as torch does it (view semantics)."""
    Tf = Tt.astype(np.float64)
    with np.errstate(divide="ignore"):
        if weight_type == "simple":
            w = 1.0 / Tf
        elif weight_type == "linear":
            w = np.ones_like(Tf)
        else:
            w = 1.0 / Tf**2
    # rule: weights_flatten = weights.flatten() is a view: weights_flatten[infs] = 0 also zeroes `weights`;
    # w_max = torch.max(weights, 0).values.repeat(N, 1).T.flatten(); weights_flatten[infs] = w_max[infs], i.e. flat
    # position i = n*C' + c takes the max over samples of class i // N -- fseg/generalized_dice.py
    # (v1.5.2, _generalized_dice_update)
    n = w.shape[0]
    w = np.ascontiguousarray(w)  # torch's `weights` is contiguous, so flatten() is a view
    wf = w.reshape(-1)
    assert np.shares_memory(wf, w)
    infs = np.isinf(wf)
    wf[infs] = 0
    w_max = np.tile(w.max(0), (n, 1)).T.reshape(-1)
    wf[infs] = w_max[infs]
    return w


def gds_weights_f(Tt, weight_type):
    """The same weights as Fractions, with the replacement written as an explicit loop."""
    n, k = Tt.shape
    w = [[None] * k for _ in range(n)]
    for i in range(n):
        for c in range(k):
            t = int(Tt[i, c])
            # rule: simple 1/T, linear 1 (ones_like), square 1/T^2; T = 0 gives inf -- fseg/generalized_dice.py
            if weight_type == "linear":
                w[i][c] = Fraction(1)
            elif t > 0:
                w[i][c] = Fraction(1, t) if weight_type == "simple" else Fraction(1, t * t)
    zeroed = [[x if x is not None else Fraction(0) for x in row] for row in w]
    colmax = [max(zeroed[i][c] for i in range(n)) for c in range(k)]
    for i in range(n):
        for c in range(k):
            if w[i][c] is None:
                flat = i * k + c
                w[i][c] = colmax[flat // n]
    return w


def gds_update_f(I, P, Tt, per_class, weight_type):
    """One GeneralizedDiceScore update: (sum over samples of the per-sample scores, number of samples)."""
    n, k = I.shape
    w = gds_weights_f(Tt, weight_type)
    # rule: numerator = 2 * intersection * weights; denominator = (target_sum + pred_sum) * weights --
    # fseg/generalized_dice.py (v1.5.2)
    num = [[2 * int(I[i, c]) * w[i][c] for c in range(k)] for i in range(n)]
    den = [[(int(Tt[i, c]) + int(P[i, c])) * w[i][c] for c in range(k)] for i in range(n)]
    if per_class:
        # rule: _generalized_dice_compute per_class: _safe_divide per class, 0/0 -> 0; the class sums over samples
        # (score += ....sum(dim=0)) -- fseg/generalized_dice.py, seg/generalized_dice.py (v1.5.2)
        return [sum((fdiv(num[i][c], den[i][c], Fraction(0)) for i in range(n)), Fraction(0)) for c in range(k)], n
    # rule: _generalized_dice_compute per_class=False: sum over classes of numerator and denominator, then
    # _safe_divide (0/0 -> 0) -- fseg/generalized_dice.py (v1.5.2)
    return sum((fdiv(sum(num[i]), sum(den[i]), Fraction(0)) for i in range(n)), Fraction(0)), n


def gds_np(I, P, Tt, per_class, weight_type):
    w = gds_weights_np(Tt, weight_type)
    num = 2.0 * I * w
    den = (Tt + P) * w
    if not per_class:
        num, den = num.sum(1), den.sum(1)
    v = np.where(den != 0, num / np.where(den != 0, den, 1.0), 0.0)
    # rule: GeneralizedDiceScore.compute: score / samples -- seg/generalized_dice.py (v1.5.2)
    return v.sum(0) / I.shape[0]


def dice_rows_f(I, P, Tt, average, level):
    """_dice_score_compute as Fractions: a list of per-row values (scalar or list per class); NaN = None."""
    num = [[2 * int(x) for x in row] for row in I]
    den = [[int(a) + int(b) for a, b in zip(rp, rt)] for rp, rt in zip(P, Tt)]
    sup = [[int(x) for x in row] for row in Tt]
    k = I.shape[1]
    if level == "global":
        # rule: aggregation_level="global": numerator, denominator, support summed over samples first (one row) --
        # fseg/dice.py (v1.9.0, _dice_score_compute)
        num = [[sum(r[c] for r in num) for c in range(k)]]
        den = [[sum(r[c] for r in den) for c in range(k)]]
        sup = [[sum(r[c] for r in sup) for c in range(k)]]
    out = []
    for nr, dr, sr in zip(num, den, sup):
        if average == "micro":
            # rule: micro: sums over classes, then _safe_divide(zero_division="nan") -- fseg/dice.py (v1.9.0)
            out.append(fdiv(sum(nr), sum(dr), None))
            continue
        # rule: dice = _safe_divide(numerator, denominator, zero_division="nan") -- fseg/dice.py (v1.9.0)
        d = [fdiv(a, b, None) for a, b in zip(nr, dr)]
        if average == "macro":
            # rule: macro: torch.nanmean over classes -- fseg/dice.py (v1.9.0)
            out.append(nanmean_f(d))
        elif average == "weighted":
            # rule: weighted: weights = _safe_divide(support, support.sum(-1), zero_division="nan"); nansum(dice *
            # weights); NaN where every dice is NaN -- fseg/dice.py (v1.9.0)
            tot = sum(sr)
            wts = [None if tot == 0 else Fraction(s, tot) for s in sr]
            terms = [None if (x is None or y is None) else x * y for x, y in zip(d, wts)]
            if all(x is None for x in d):
                out.append(None)
            else:
                out.append(sum((x for x in terms if x is not None), Fraction(0)))
        else:
            # rule: average none/None: the per-class dice -- fseg/dice.py (v1.9.0)
            out.append(d)
    return out


def dice_f(I, P, Tt, average, level):
    rows = dice_rows_f(I, P, Tt, average, level)
    # rule: DiceScore.compute: _dice_score_compute(cat of the states ...).nanmean(dim=0) -- seg/dice.py (v1.9.0)
    if average == "none":
        return [nanmean_f([r[c] for r in rows]) for c in range(I.shape[1])]
    return nanmean_f(rows)


def dice_np(I, P, Tt, average, level):
    num, den, sup = 2.0 * I, (P + Tt).astype(np.float64), Tt.astype(np.float64)
    if level == "global":
        num, den, sup = num.sum(0, keepdims=True), den.sum(0, keepdims=True), sup.sum(0, keepdims=True)
    with np.errstate(all="ignore"):
        if average == "micro":
            a, b = num.sum(-1), den.sum(-1)
            v = np.where(b != 0, a / np.where(b != 0, b, 1.0), np.nan)
        else:
            d = np.where(den != 0, num / np.where(den != 0, den, 1.0), np.nan)
            if average == "macro":
                v = np.array([np.nan if np.isnan(r).all() else np.nanmean(r) for r in d])
            elif average == "weighted":
                tot = sup.sum(-1, keepdims=True)
                wts = np.where(tot != 0, sup / np.where(tot != 0, tot, 1.0), np.nan)
                v = np.nansum(d * wts, -1)
                v[np.isnan(d).all(-1)] = np.nan
            else:
                v = d
        if v.ndim == 2:
            return np.array([np.nan if np.isnan(col).all() else np.nanmean(col) for col in v.T])
        return np.nan if np.isnan(v).all() else np.nanmean(v)


def to_float(x):
    if isinstance(x, list):
        return [to_float(v) for v in x]
    return math.nan if x is None else float(x)


def agree(f_val, n_val, what):
    a = np.asarray(to_float(f_val), dtype=np.float64)
    b = np.asarray(n_val, dtype=np.float64)
    assert a.shape == b.shape, (what, a.shape, b.shape)
    assert np.allclose(a, b, rtol=1e-14, atol=1e-15, equal_nan=True), (what, a, b)


# --------------------------------------------------------------------------------------------
# replaying the module classes under the golden test's three evaluations
# --------------------------------------------------------------------------------------------
def batchings(n):
    """Row ranges of the three evaluations: one update, updates of 7 rows, two halves (empty updates dropped)."""
    out = [[(0, n)], [(s, min(s + 7, n)) for s in range(0, n, 7)], [(0, n // 2), (n // 2, n)]]
    return [[r for r in b if r[1] > r[0]] for b in out]


def iou_class_f(I, P, Tt, per_class, n):
    vals = []
    for b in batchings(n):
        ups = [iou_update_f(I[s:e], P[s:e], Tt[s:e], per_class) for s, e in b]
        # rule: MeanIoU.compute: score / num_batches -- seg/mean_iou.py (v1.5.2)
        if per_class:
            vals.append([sum((u[c] for u in ups), Fraction(0)) / len(ups) for c in range(I.shape[1])])
        else:
            vals.append(sum(ups, Fraction(0)) / len(ups))
    assert all(v == vals[0] for v in vals), ("mean_iou depends on batching", vals)
    return vals[0]


def gds_class_f(I, P, Tt, per_class, weight_type, n):
    vals = []
    for b in batchings(n):
        tot, cnt = None, 0
        for s, e in b:
            sc, m = gds_update_f(I[s:e], P[s:e], Tt[s:e], per_class, weight_type)
            tot = sc if tot is None else ([x + y for x, y in zip(tot, sc)] if per_class else tot + sc)
            cnt += m
        vals.append([x / cnt for x in tot] if per_class else tot / cnt)
    assert all(v == vals[0] for v in vals), ("generalized_dice_score depends on batching", vals)
    return vals[0]


# --------------------------------------------------------------------------------------------
# torch.randint on the CPU (for the docstring examples)
# --------------------------------------------------------------------------------------------
class TorchRandint:
    """torch.manual_seed(seed) / torch.Generator().manual_seed(seed) followed by torch.randint(low, high, shape):
    one mt19937 32-bit output per element, row-major, low + u32 % (high - low) (ATen's uniform_int_from_to for
    ranges < 2^32). numpy's RandomState(seed) is MT19937 seeded by init_genrand, as at::mt19937 is."""

    def __init__(self, seed):
        self.bg = np.random.RandomState(seed)._bit_generator

    def randint(self, low, high, shape):
        u = self.bg.random_raw(int(np.prod(shape))).astype(np.uint64)
        return (low + (u % (high - low)).astype(np.int64)).reshape(shape)


def assert_printed(values, printed, what):
    """A docstring's printed tensor (4 decimals)."""
    v = np.round(np.asarray(values, dtype=np.float64), 4)
    p = np.asarray(printed, dtype=np.float64)
    assert v.shape == p.shape and (np.abs(v - p) < 1e-9).all(), (what, v, p)
    STATS["docstring_asserts"] += 1


# --------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------
def gen():
    S = Suite("segmentation.json")
    rng = np.random.default_rng(20241105)

    def tag_of(args):
        return "".join(f"_{k}-{_fmt_arg(v)}" for k, v in args.items() if k != "num_classes")

    def add(metric, args, p, t, scenario, source_extra=""):
        """Adds one case; returns the expected value (Fractions / None)."""
        C = args["num_classes"]
        fmt = args.get("input_format", "one-hot")
        inc = args.get("include_background", True)
        I, P, Tt = counts(p, t, fmt, C, inc)
        n = I.shape[0]
        if metric == IOU:
            assert n in (1, 2, 4, 6), "mean_iou batch-mean-of-means: N must be 1, 2, 4 or 6"
            per = args.get("per_class", False)
            fv = iou_class_f(I, P, Tt, per, n)
            agree(fv, iou_np(I, P, Tt, per), scenario)
            src = "numpy IoU of one-hot/bincount counts, Fraction-exact; TorchMetrics 1.5.2 MeanIoU rules"
            STATS["iou"] += 1
        elif metric == GDS:
            per = args.get("per_class", False)
            wt = args.get("weight_type", "square")
            has_inf = wt != "linear" and (Tt == 0).any()
            assert n == 1 or not has_inf, "generalized_dice_score: infinite weights only with N = 1"
            assert has_inf == ("quirk" in scenario), scenario
            fv = gds_class_f(I, P, Tt, per, wt, n)
            agree(fv, gds_np(I, P, Tt, per, wt), scenario)
            src = ("numpy generalized Dice (Crum et al. 2006) of one-hot/bincount counts, Fraction-exact; "
                   "TorchMetrics 1.5.2 weights incl. the infinite-weight replacement")
            STATS["gds"] += 1
        else:
            av = args.get("average", "macro")
            lv = args.get("aggregation_level", "samplewise")
            fv = dice_f(I, P, Tt, av, lv)
            agree(fv, dice_np(I, P, Tt, av, lv), scenario)
            src = "numpy Dice of one-hot/bincount counts, Fraction-exact; TorchMetrics 1.9.0 DiceScore rules"
            STATS["dice"] += 1
        S.add(f"{metric}{tag_of(args)}__{scenario}", spec(metric, args), {"preds": p, "target": t},
              np.asarray(to_float(fv), dtype=np.float64), src + source_extra, rtol=RT, atol=AT)
        return fv

    def refuse(metric, args, p, t, scenario, text, why):
        S.add(f"{metric}{tag_of(args)}__refused_{scenario}", spec(metric, args), {"preds": p, "target": t},
              Refused(text), "refused: " + why, rtol=RT, atol=AT)
        STATS["refused"] += 1

    # ---------------- helpers for inputs
    def onehot(idx, C, dtype="int64"):
        return T(np.moveaxis(np.eye(C, dtype=np.int64)[idx], -1, 1), dtype)

    def blocky(n, shape, C, block=4):
        """Index masks made of block x block patches (regions, as in segmentation)."""
        small = [max(1, s // block) for s in shape]
        x = rng.integers(0, C, size=(n, *small))
        for ax, s in enumerate(shape):
            x = np.repeat(x, -(-s // small[ax]), axis=ax + 1)
        return x[(slice(None),) + tuple(slice(0, s) for s in shape)]

    def noisy(x, C, frac):
        """A prediction: x with a fraction of the pixels relabelled at random."""
        y = x.copy()
        m = rng.random(x.shape) < frac
        y[m] = rng.integers(0, C, size=int(m.sum()))
        return y

    def ensure_all(x, C, classes=None):
        """Every class (of `classes`) present in every sample: plants each at a distinct random pixel."""
        x = x.copy()
        classes = list(range(C)) if classes is None else classes
        for i in range(x.shape[0]):
            flat = x[i].reshape(-1)
            pos = rng.choice(flat.size, size=len(classes), replace=False)
            flat[pos] = classes
            x[i] = flat.reshape(x[i].shape)
        return x

    def logits(shape):
        """Scores on a 1e-3 grid (short decimals), redrawn until every pixel's maximum is unique."""
        while True:
            x = np.round(rng.standard_normal(shape) * 2, 3)
            if ((x == x.max(axis=1, keepdims=True)).sum(axis=1) == 1).all():
                return x

    def bits(shape, p=0.5):
        return (rng.random(shape) < p).astype(np.int64)

    # ============================ TorchMetrics docstring examples ============================
    # v1.5.2 functional mean_iou / generalized_dice_score docstrings (global seed 42 from conftest.py):
    # preds = randint(0, 2, (4, 5, 16, 16)), target = randint(0, 2, (4, 5, 16, 16)).
    g = TorchRandint(42)
    dp = T(g.randint(0, 2, (4, 5, 16, 16)), "int64")
    dt = T(g.randint(0, 2, (4, 5, 16, 16)), "int64")
    I, P, Tt = counts(dp, dt, "one-hot", 5, True)
    U = Tt + P - I
    assert_printed((I / U).mean(1), [0.3193, 0.3305, 0.3382, 0.3246], "mean_iou 1.5.2 docstring")
    assert_printed(I / U, [[0.3093, 0.3500, 0.3081, 0.3389, 0.2903], [0.2963, 0.3316, 0.3505, 0.2804, 0.3936],
                           [0.3724, 0.3249, 0.3660, 0.3184, 0.3093], [0.3085, 0.3267, 0.3155, 0.3575, 0.3147]],
                   "mean_iou 1.5.2 docstring per_class")
    w = 1.0 / Tt.astype(np.float64) ** 2
    assert_printed((2 * I * w).sum(1) / ((Tt + P) * w).sum(1), [0.4830, 0.4935, 0.5044, 0.4880], "gds docstring")
    gds_pc = [[0.4724, 0.5185, 0.4710, 0.5062, 0.4500], [0.4571, 0.4980, 0.5191, 0.4380, 0.5649],
              [0.5428, 0.4904, 0.5358, 0.4830, 0.4724], [0.4715, 0.4925, 0.4797, 0.5267, 0.4788]]
    assert_printed(2 * I / (Tt + P), gds_pc, "gds docstring per_class")
    add(IOU, {"num_classes": 5}, dp, dt, "docstring_v152_onehot_4x5x16x16")
    add(IOU, {"num_classes": 5, "per_class": True}, dp, dt, "docstring_v152_onehot_4x5x16x16")
    add(GDS, {"num_classes": 5}, dp, dt, "docstring_v152_onehot_4x5x16x16")
    add(GDS, {"num_classes": 5, "per_class": True}, dp, dt, "docstring_v152_onehot_4x5x16x16")
    # v1.9.0 functional dice_score docstring (manual_seed(42)), same one-hot inputs; and the DiceScore class
    # docstring (same inputs): micro 0.4941, none [0.4860, 0.4999, 0.5014, 0.4885, 0.4915].
    assert_printed(2 * I.sum(1) / (Tt + P).sum(1), [0.4842, 0.4968, 0.5053, 0.4902], "dice docstring micro")
    assert_printed(2 * I / (Tt + P), gds_pc, "dice docstring none")
    v = add(DICE, {"num_classes": 5, "average": "micro"}, dp, dt, "docstring_v19_onehot_4x5x16x16")
    assert_printed(float(v), 0.4941, "DiceScore docstring micro")
    v = add(DICE, {"num_classes": 5, "average": "none"}, dp, dt, "docstring_v19_onehot_4x5x16x16")
    assert_printed(to_float(v), [0.4860, 0.4999, 0.5014, 0.4885, 0.4915], "DiceScore docstring none")
    v = add(DICE, {"num_classes": 5, "average": "macro", "aggregation_level": "global"}, dp, dt,
            "docstring_v19_onehot_4x5x16x16")
    assert_printed(float(v), 0.4942, "dice docstring macro global")
    # v1.9.0 dice_score docstring, index: preds = randint(0, 5, (4, 16, 16)), target likewise (seed 42).
    g = TorchRandint(42)
    ip = T(g.randint(0, 5, (4, 16, 16)), "int64")
    it = T(g.randint(0, 5, (4, 16, 16)), "int64")
    I, P, Tt = counts(ip, it, "index", 5, True)
    assert_printed(2 * I.sum(1) / (Tt + P).sum(1), [0.2031, 0.1914, 0.2266, 0.1641], "dice index micro")
    assert_printed(2 * I / (Tt + P), [[0.1731, 0.1667, 0.2400, 0.2424, 0.1947],
                                      [0.2245, 0.2247, 0.2321, 0.1132, 0.1682],
                                      [0.2500, 0.2476, 0.1887, 0.1818, 0.2718],
                                      [0.1308, 0.1800, 0.1980, 0.1607, 0.1522]], "dice index none")
    add(DICE, {"num_classes": 5, "average": "micro", "input_format": "index"}, ip, it, "docstring_v19_index_4x16x16")
    v = add(DICE, {"num_classes": 5, "average": "macro", "aggregation_level": "global", "input_format": "index"},
            ip, it, "docstring_v19_index_4x16x16")
    assert_printed(float(v), 0.1965, "dice index macro global")
    # v1.9.0 mean_iou docstring inputs (separate generators 42 and 43). Its printed values are the 1.5.2 values
    # wherever every union is > 0 (1.9 differs only for empty unions: NaN / -1), asserted for the one-hot inputs.
    op = T(TorchRandint(42).randint(0, 2, (4, 5, 16, 16)), "int64")
    ot = T(TorchRandint(43).randint(0, 2, (4, 5, 16, 16)), "int64")
    I, P, Tt = counts(op, ot, "one-hot", 5, True)
    assert (Tt + P - I > 0).all()
    assert_printed((I / (Tt + P - I)).mean(1), [0.3323, 0.3336, 0.3397, 0.3435], "mean_iou 1.9 docstring")
    assert_printed((I / (Tt + P - I))[:, 1:].mean(1), [0.3250, 0.3258, 0.3307, 0.3398], "mean_iou 1.9 no bg")
    assert_printed(I / (Tt + P - I), [[0.3617, 0.3128, 0.3366, 0.3242, 0.3263],
                                      [0.3646, 0.2893, 0.3297, 0.3073, 0.3770],
                                      [0.3756, 0.3168, 0.3505, 0.3400, 0.3155],
                                      [0.3579, 0.3317, 0.3797, 0.3523, 0.2957]], "mean_iou 1.9 per_class")
    add(IOU, {"num_classes": 5, "include_background": False}, op, ot, "docstring_v19_onehot_4x5x16x16")
    # The 1.9 index example: randint(0, 2, (4, 16, 16)) with num_classes=5 leaves classes 2-4 empty. 1.5.2 counts them
    # as IoU 0 in the mean over 5 classes; 1.9 prints the mean over the 2 non-empty classes: 1.5.2 = 2/5 x printed.
    xp = T(TorchRandint(42).randint(0, 2, (4, 16, 16)), "int64")
    xt = T(TorchRandint(43).randint(0, 2, (4, 16, 16)), "int64")
    I, P, Tt = counts(xp, xt, "index", 5, True)
    iou = np.where(Tt + P - I > 0, I / np.maximum(Tt + P - I, 1), 0.0)
    assert_printed(iou.mean(1) * 5 / 2, [0.3617, 0.3128, 0.3047, 0.3499], "mean_iou 1.9 index (x 5/2)")
    assert_printed(iou[:, :2], [[0.3617, 0.3617], [0.3128, 0.3128], [0.2727, 0.3366], [0.3756, 0.3242]],
                   "mean_iou 1.9 index per_class (first two classes)")
    add(IOU, {"num_classes": 5, "per_class": True, "input_format": "index"}, xp, xt,
        "docstring_v19_index_inputs_absent_classes_2to4")

    # ============================ mean_iou (1.5.2) ============================
    # Random regions, C = 6, 4 x 16 x 16; index and the same masks one-hot (int64, bool, int32): same values.
    t6 = blocky(4, (16, 16), 6)
    p6 = noisy(t6, 6, 0.3)
    Pi, Ti = T(p6, "int64"), T(t6, "int64")
    for extra in ({}, {"per_class": True}, {"include_background": False},
                  {"include_background": False, "per_class": True}):
        a = {"num_classes": 6, **extra, "input_format": "index"}
        vi = add(IOU, a, Pi, Ti, "regions_C6_4x16x16")
        if extra == {}:
            vo = add(IOU, {"num_classes": 6}, onehot(p6, 6), onehot(t6, 6), "regions_C6_4x16x16_onehot_int64")
            vb = add(IOU, {"num_classes": 6, "input_format": "one-hot"}, onehot(p6, 6, "bool"),
                     onehot(t6, 6, "bool"), "regions_C6_4x16x16_onehot_bool")
            assert vi == vo == vb
        if extra == {"per_class": True}:
            vo = add(IOU, {"num_classes": 6, "per_class": True}, onehot(p6, 6, "int32"), onehot(t6, 6, "int32"),
                     "regions_C6_4x16x16_onehot_int32")
            assert vi == vo
    # int32 index masks, C = 21 (VOC-like), 2 x 32 x 24.
    t21 = blocky(2, (32, 24), 21)
    add(IOU, {"num_classes": 21, "input_format": "index"}, T(noisy(t21, 21, 0.25), "int32"), T(t21, "int32"),
        "regions_C21_2x32x24_int32")
    # Absent classes, per class, C = 5, N = 2: class 3 absent from preds, class 4 absent from target, class 2 absent
    # from both (IoU 0: 0/0 -> 0 in TorchMetrics 1.5.2, and it counts in the mean).
    ta = rng.choice([0, 1, 3], size=(2, 16, 16))
    pa = rng.choice([0, 1, 4], size=(2, 16, 16))
    for extra in ({"per_class": True}, {}):
        v = add(IOU, {"num_classes": 5, **extra, "input_format": "index"}, T(pa, "int64"), T(ta, "int64"),
                "absent_c2_both_c3_preds_c4_target_2x16x16")
        if extra:
            assert v[2] == v[3] == v[4] == 0
    # One sample; one pixel (IoU 1 for the shared class, 0 elsewhere); N = 6; all-zero one-hot masks (every union 0).
    t1 = blocky(1, (16, 16), 3)
    add(IOU, {"num_classes": 3, "input_format": "index"}, T(noisy(t1, 3, 0.4), "int64"), T(t1, "int64"),
        "one_sample_C3_1x16x16")
    add(IOU, {"num_classes": 4, "per_class": True, "input_format": "index"}, T([[[2]]], "int64"),
        T([[[2]]], "int64"), "one_pixel_match_C4")
    add(IOU, {"num_classes": 4, "input_format": "index"}, T([[[1]]], "int64"), T([[[2]]], "int64"),
        "one_pixel_mismatch_C4")
    t6b = blocky(6, (12, 10), 3, 3)
    add(IOU, {"num_classes": 3, "input_format": "index"}, T(noisy(t6b, 3, 0.35), "int64"), T(t6b, "int64"),
        "regions_C3_6x12x10")
    add(IOU, {"num_classes": 3, "per_class": True}, T(np.zeros((2, 3, 4, 4)), "int64"),
        T(np.zeros((2, 3, 4, 4)), "int64"), "all_empty_onehot_2x3x4x4")
    # num_classes 1 and 2 without background: one channel is never dropped (C' = 1 for both).
    add(IOU, {"num_classes": 1, "include_background": False}, T(bits((2, 1, 8, 8)), "int64"),
        T(bits((2, 1, 8, 8)), "int64"), "one_channel_not_dropped_2x1x8x8")
    t2 = blocky(2, (8, 8), 2, 2)
    add(IOU, {"num_classes": 2, "include_background": False, "per_class": True, "input_format": "index"},
        T(noisy(t2, 2, 0.3), "int64"), T(t2, "int64"), "binary_C2_2x8x8")
    # Non-exclusive one-hot: channels independent (pixels with 0 or several classes on).
    add(IOU, {"num_classes": 4, "per_class": True}, T(bits((6, 4, 8, 8), 0.4), "int64"),
        T(bits((6, 4, 8, 8), 0.3), "int64"), "nonexclusive_onehot_6x4x8x8")
    add(IOU, {"num_classes": 4}, T(bits((2, 4, 10, 6), 0.5), "bool"), T(bits((2, 4, 10, 6), 0.2), "bool"),
        "nonexclusive_onehot_bool_2x4x10x6")
    # 1-D spatial [N, L] and 3-D [N, D, H, W] index masks.
    l1 = blocky(4, (60,), 4, 5)
    add(IOU, {"num_classes": 4, "input_format": "index"}, T(noisy(l1, 4, 0.3), "int64"), T(l1, "int64"),
        "spatial_1d_4x60")
    v3 = blocky(2, (4, 8, 8), 5, 2)
    add(IOU, {"num_classes": 5, "per_class": True, "input_format": "index"}, T(noisy(v3, 5, 0.3), "int64"),
        T(v3, "int64"), "spatial_3d_2x4x8x8")

    # ============================ generalized_dice_score (1.5.2) ============================
    # C = 5, every class in every sample's target (finite weights): every weight_type, per_class, no background.
    t5 = ensure_all(blocky(4, (16, 16), 5), 5)
    p5 = noisy(t5, 5, 0.3)
    P5, T5 = T(p5, "int64"), T(t5, "int64")
    vsq = {}
    for wt, extra in (("square", {}), ("square", {"per_class": True}), ("simple", {}), ("linear", {}),
                      ("linear", {"per_class": True})):
        vsq[wt, bool(extra)] = add(GDS, {"num_classes": 5, **extra, "weight_type": wt, "input_format": "index"},
                                   P5, T5, "regions_all_present_C5_4x16x16")
    add(GDS, {"num_classes": 5, "include_background": False, "input_format": "index"}, P5, T5,
        "regions_all_present_C5_4x16x16")
    add(GDS, {"num_classes": 5, "include_background": False, "per_class": True, "weight_type": "simple",
              "input_format": "index"}, P5, T5, "regions_all_present_C5_4x16x16")
    # The same masks one-hot (int64, bool, int32) give the same values.
    vi = vsq["square", False]
    vo = add(GDS, {"num_classes": 5}, onehot(p5, 5), onehot(t5, 5), "regions_all_present_C5_4x16x16_onehot_int64")
    vb = add(GDS, {"num_classes": 5, "weight_type": "square", "input_format": "one-hot"}, onehot(p5, 5, "bool"),
             onehot(t5, 5, "bool"), "regions_all_present_C5_4x16x16_onehot_bool")
    assert vi == vo == vb
    vo = add(GDS, {"num_classes": 5, "per_class": True, "weight_type": "linear"}, onehot(p5, 5, "int32"),
             onehot(t5, 5, "int32"), "regions_all_present_C5_4x16x16_onehot_int32")
    assert vo == vsq["linear", True]
    # N = 5 (any N: per-sample scores), C = 21, 32 x 24, int32 index, all classes present.
    t21 = ensure_all(blocky(5, (32, 24), 21), 21)
    add(GDS, {"num_classes": 21, "input_format": "index"}, T(noisy(t21, 21, 0.2), "int32"), T(t21, "int32"),
        "regions_all_present_C21_5x32x24_int32")
    # weight_type=linear has no infinite weights: absent classes with N = 3 are batch-invariant.
    tl = rng.choice([0, 1, 2], size=(3, 12, 12))
    pl = rng.choice([0, 1, 3], size=(3, 12, 12))
    for extra in ({}, {"per_class": True}):
        add(GDS, {"num_classes": 4, **extra, "weight_type": "linear", "input_format": "index"}, T(pl, "int64"),
            T(tl, "int64"), "linear_absent_c3_target_c2_preds_3x12x12")
    # QUIRK (N = 1): a class absent from the target has weight inf, replaced by the max over samples of its class's
    # zeroed weights = 0 with one sample: the class drops out of the sums. Absent from target only, from both.
    tq = rng.choice([0, 1, 3], size=(1, 16, 16))
    pq = rng.choice([0, 1, 2, 3], size=(1, 16, 16))
    for wt, extra in (("square", {}), ("square", {"per_class": True}), ("simple", {})):
        add(GDS, {"num_classes": 5, **extra, "weight_type": wt, "input_format": "index"}, T(pq, "int64"),
            T(tq, "int64"), "quirk_c2_absent_target_c4_absent_both_1x16x16")
    # Absent from preds only (finite weight; intersection 0), N = 2 (not the quirk).
    tp = ensure_all(rng.choice([0, 1, 2], size=(2, 16, 16)), 3)
    pp = rng.choice([0, 1], size=(2, 16, 16))
    add(GDS, {"num_classes": 3, "per_class": True, "input_format": "index"}, T(pp, "int64"), T(tp, "int64"),
        "c2_absent_preds_2x16x16")
    # One pixel (QUIRK: the other classes are absent from the target); an all-zero target (every weight 0: 0/0 -> 0).
    add(GDS, {"num_classes": 3, "input_format": "index"}, T([[[1]]], "int64"), T([[[1]]], "int64"),
        "quirk_one_pixel_match_C3")
    add(GDS, {"num_classes": 3, "per_class": True, "input_format": "index"}, T([[[0]]], "int64"),
        T([[[1]]], "int64"), "quirk_one_pixel_mismatch_C3")
    add(GDS, {"num_classes": 3}, T(bits((1, 3, 6, 6)), "int64"), T(np.zeros((1, 3, 6, 6)), "int64"),
        "quirk_empty_target_1x3x6x6")
    # Non-exclusive one-hot (all channels present in every sample), 3-D index, one channel kept without background.
    tn = bits((4, 4, 8, 8), 0.3)
    tn[:, :, 0, 0] = 1
    add(GDS, {"num_classes": 4, "weight_type": "simple"}, T(bits((4, 4, 8, 8), 0.4), "int64"), T(tn, "int64"),
        "nonexclusive_onehot_4x4x8x8")
    v3 = ensure_all(blocky(2, (4, 8, 8), 4, 2), 4)
    add(GDS, {"num_classes": 4, "input_format": "index"}, T(noisy(v3, 4, 0.3), "int64"), T(v3, "int64"),
        "spatial_3d_2x4x8x8")
    to = bits((2, 1, 8, 8))
    to[:, :, 0, 0] = 1
    add(GDS, {"num_classes": 1, "include_background": False}, T(bits((2, 1, 8, 8)), "int64"), T(to, "int64"),
        "one_channel_not_dropped_2x1x8x8")

    # ============================ dice_score (1.9.0) ============================
    # Every average x aggregation_level on regions with absent classes (C = 6, N = 4): class 5 never present
    # (NaN per class), class 4 only in sample 0's preds, class 3 absent from sample 1's target.
    td = blocky(4, (16, 16), 4)
    pd = noisy(td, 4, 0.3)
    pd[0, :2, :3] = 4
    td[1][td[1] == 3] = 2
    Pd, Td = T(pd, "int64"), T(td, "int64")
    for lv in ("samplewise", "global"):
        for av in ("micro", "macro", "weighted", "none"):
            add(DICE, {"num_classes": 6, "average": av, "aggregation_level": lv, "input_format": "index"}, Pd, Td,
                "absent_classes_C6_4x16x16")
    add(DICE, {"num_classes": 6, "include_background": False, "average": "none", "aggregation_level": "global",
               "input_format": "index"}, Pd, Td, "absent_classes_C6_4x16x16")
    add(DICE, {"num_classes": 6, "input_format": "index"}, Pd, Td, "absent_classes_C6_4x16x16_defaults")
    add(DICE, {"num_classes": 6, "include_background": False, "average": "weighted"}, onehot(pd, 6), onehot(td, 6),
        "absent_classes_C6_4x16x16_onehot")
    # Index vs one-hot int32/bool vs exclusive float one-hot (argmax = the same class): the same values.
    t7 = blocky(3, (32, 24), 7)
    p7 = noisy(t7, 7, 0.25)
    vi = add(DICE, {"num_classes": 7, "average": "none", "input_format": "index"}, T(p7, "int32"), T(t7, "int32"),
             "regions_C7_3x32x24_int32")
    vo = add(DICE, {"num_classes": 7, "average": "none"}, onehot(p7, 7, "int32"), onehot(t7, 7, "int32"),
             "regions_C7_3x32x24_onehot_int32")
    vb = add(DICE, {"num_classes": 7, "average": "none", "input_format": "one-hot"}, onehot(p7, 7, "bool"),
             onehot(t7, 7, "bool"), "regions_C7_3x32x24_onehot_bool")
    vf = add(DICE, {"num_classes": 7, "average": "none"}, onehot(p7, 7, "float32"), onehot(t7, 7, "int64"),
             "regions_C7_3x32x24_float_onehot_preds")
    assert vi == vo == vb == vf
    # float32 logits (argmax over dim 1): preds logits with an int target; both as logits (float32 / float64).
    tl = blocky(2, (16, 16), 5)
    logit_t = logits((2, 5, 16, 16))
    logit_p = logits((2, 5, 16, 16)) + 3.0 * np.moveaxis(np.eye(5)[noisy(tl, 5, 0.2)], -1, 1)
    add(DICE, {"num_classes": 5}, T(logit_p, "float32"), onehot(tl, 5), "logits_f32_preds_2x5x16x16")
    add(DICE, {"num_classes": 5, "average": "weighted", "aggregation_level": "global"}, T(logit_p, "float32"),
        T(logit_t, "float64"), "logits_both_2x5x16x16")
    # Samples without the target classes: a sample whose target is empty (weighted: weights NaN -> nansum 0, QUIRK),
    # everything empty (NaN), one sample, one pixel, C = 21.
    te = bits((3, 3, 6, 6), 0.4)
    te[1] = 0
    pe = bits((3, 3, 6, 6), 0.4)
    add(DICE, {"num_classes": 3, "average": "weighted"}, T(pe, "int64"), T(te, "int64"),
        "quirk_weighted_empty_target_sample_nonexclusive_3x3x6x6")
    add(DICE, {"num_classes": 3, "average": "micro"}, T(pe, "int64"), T(te, "int64"),
        "empty_target_sample_nonexclusive_3x3x6x6")
    z = T(np.zeros((2, 3, 4, 4)), "int64")
    add(DICE, {"num_classes": 3}, z, z, "all_empty_nan_2x3x4x4")
    add(DICE, {"num_classes": 3, "average": "none", "aggregation_level": "global"}, z, z, "all_empty_nan_2x3x4x4")
    t1 = blocky(1, (20, 20), 4, 5)
    add(DICE, {"num_classes": 4, "average": "weighted", "input_format": "index"}, T(noisy(t1, 4, 0.3), "int64"),
        T(t1, "int64"), "one_sample_C4_1x20x20")
    add(DICE, {"num_classes": 4, "average": "none", "input_format": "index"}, T([[[3]]], "int64"),
        T([[[3]]], "int64"), "one_pixel_match_C4")
    add(DICE, {"num_classes": 4, "input_format": "index"}, T([[[0]]], "int64"), T([[[3]]], "int64"),
        "one_pixel_mismatch_C4")
    t21 = blocky(2, (32, 24), 21)
    add(DICE, {"num_classes": 21, "include_background": False, "input_format": "index"},
        T(noisy(t21, 21, 0.25), "int64"), T(t21, "int64"), "regions_C21_2x32x24")
    # One channel kept without background; non-exclusive one-hot; 1-D and 3-D index masks; N = 8 with 7-row updates.
    add(DICE, {"num_classes": 1, "include_background": False, "average": "none"}, T(bits((3, 1, 8, 8)), "bool"),
        T(bits((3, 1, 8, 8)), "bool"), "one_channel_not_dropped_3x1x8x8")
    add(DICE, {"num_classes": 4, "average": "micro", "aggregation_level": "global"},
        T(bits((5, 4, 8, 8), 0.5), "int64"), T(bits((5, 4, 8, 8), 0.3), "int64"), "nonexclusive_onehot_5x4x8x8")
    l1 = blocky(3, (50,), 3, 5)
    add(DICE, {"num_classes": 3, "average": "none", "input_format": "index"}, T(noisy(l1, 3, 0.3), "int64"),
        T(l1, "int64"), "spatial_1d_3x50")
    v3 = blocky(2, (4, 6, 6), 4, 2)
    add(DICE, {"num_classes": 4, "aggregation_level": "global", "input_format": "index"},
        T(noisy(v3, 4, 0.3), "int64"), T(v3, "int64"), "spatial_3d_2x4x6x6")
    t8 = blocky(8, (8, 8), 3, 2)
    add(DICE, {"num_classes": 3, "input_format": "index"}, T(noisy(t8, 3, 0.3), "int64"), T(t8, "int64"),
        "regions_C3_8x8x8")

    # ============================ refused inputs ============================
    ok = T(blocky(2, (4, 4), 4), "int64")
    big = ok.a.copy()
    big[1, 2, 3] = 4
    neg = ok.a.copy()
    neg[0, 0, 1] = -1
    oh = onehot(ok.a, 4)
    two = oh.a.copy()
    two[1, 2, 0, 0] = 2
    for m in (IOU, GDS, DICE):
        refuse(m, {"num_classes": 4, "input_format": "index"}, T(big, "int64"), ok, "index_value_4",
               "values outside [0, 4)", "an index mask value >= num_classes")
    refuse(IOU, {"num_classes": 4, "input_format": "index"}, ok, T(neg, "int64"), "negative_index_target",
           "values outside [0, 4)", "a negative index in the target")
    refuse(DICE, {"num_classes": 4, "input_format": "index"}, T(neg, "int32"), ok, "negative_index_int32",
           "values outside [0, 4)", "a negative index (int32)")
    refuse(IOU, {"num_classes": 4}, T(two, "int64"), oh, "onehot_value_2", "values other than 0 and 1",
           "a one-hot mask value 2")
    refuse(DICE, {"num_classes": 4}, oh, T(two, "int64"), "onehot_value_2_target", "values other than 0 and 1",
           "a one-hot target value 2")
    refuse(IOU, {"num_classes": 4}, T(oh.a, "float32"), oh, "float_preds", "integer or bool masks",
           "float one-hot preds (TorchMetrics' `preds & target` needs integer or bool tensors)")
    refuse(IOU, {"num_classes": 4, "input_format": "index"}, T(ok.a, "float64"), ok, "float_index_preds",
           "integer or bool masks", "float index preds")
    for m in (IOU, DICE):
        refuse(m, {"num_classes": 5}, oh, oh, "onehot_4_channels", "num_classes",
               "one-hot masks with 4 channels for num_classes=5")
    refuse(IOU, {"num_classes": 4, "input_format": "mixed"}, oh, ok, "input_format_mixed", "input_format",
           "input_format must be one-hot or index (1.5.2 has no 'mixed')")
    refuse(GDS, {"num_classes": 4, "input_format": "mixed"}, oh, ok, "input_format_mixed", "input_format",
           "input_format must be one-hot or index (1.5.2 has no 'mixed')")
    refuse(DICE, {"num_classes": 4, "input_format": "logits"}, oh, oh, "input_format_logits", "input_format",
           "an unknown input_format")
    return S


def selftest_gds_quirk():
    """The infinite-weight replacement for N >= 2 (not emitted: batch-dependent): the view-based NumPy and the
    explicit Fraction loop agree, and the transposed index really reads another class's maximum."""
    Tt = np.array([[4, 0, 2], [0, 5, 1], [3, 1, 0], [2, 2, 2]], dtype=np.int64)  # N = 4, C' = 3
    for wt in ("square", "simple"):
        wn = gds_weights_np(Tt, wt)
        wf = gds_weights_f(Tt, wt)
        agree(wf, wn, "gds quirk selftest " + wt)
    wf = gds_weights_f(Tt, "simple")
    # sample 0 class 1 (flat 1 -> class 1 // 4 = 0) and sample 1 class 0 (flat 3 -> 0): the max of class 0 = 1/2;
    # sample 2 class 2 (flat 8 -> class 2): the max of class 2 = 1
    assert wf[0][1] == Fraction(1, 2) and wf[1][0] == Fraction(1, 2) and wf[2][2] == Fraction(1)


def main():
    selftest_gds_quirk()
    S = gen()
    S.write_and_report()
    print(f"mean_iou {STATS['iou']}, generalized_dice_score {STATS['gds']}, dice_score {STATS['dice']}, "
          f"refused {STATS['refused']}; docstring values asserted: {STATS['docstring_asserts']}")


if __name__ == "__main__":
    main()
