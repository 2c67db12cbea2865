#!/usr/bin/env python3
"""Golden fixtures for the box IoU family: intersection_over_union, generalized_intersection_over_union,
distance_intersection_over_union, complete_intersection_over_union.

Regenerate (numpy; gen_fixtures.py, whose helpers are imported, also loads scipy and scikit-learn -- the Debian
python3-* packages work):

    /usr/bin/python3 tests/golden/gen_box_iou.py

Output, in the case format of tests/golden/README.md: tests/golden/fixtures/box_iou.json, inputs `preds` and `target`
(boxes [N, 4], xyxy), and a summary on stdout. The output is deterministic (fixed seeds). Generated with numpy 1.24.2.

Semantics: TorchMetrics 1.5.2's functional forms `<metric>(preds, target, iou_threshold=None, replacement_val=0,
aggregate=True)`, which call torchvision's box ops. Neither TorchMetrics, torchvision nor torch is imported; the rules
were read from their sources and each one is cited below in a `# rule:` comment naming the file: `fdet/` =
src/torchmetrics/functional/detection/ at v1.5.2 (iou.py, giou.py, diou.py, ciou.py); `tv/` = torchvision's
torchvision/ops/boxes.py (`box_area`, `_box_inter_union`, `box_iou`, `generalized_box_iou`, `distance_box_iou`,
`_box_diou_iou`, `complete_box_iou`; the same formulas at commits 2f3a43f and 01b12c6) and torchvision/ops/_utils.py
(`_upcast`).

* TorchMetrics builds the full [N, N] matrix M[i, j] = f(preds[i], target[j]) with torchvision, replaces the entries
  below `iou_threshold` (when given) by `replacement_val`, and returns M.diag().mean() (aggregate=True; 0.0 when there
  are no boxes) or M itself (aggregate=False).
* Tally streams over rows: row i is the pair (preds[i], target[i]), whose value is M[i, i]. So `expected` for
  aggregate=True is the float64 mean (math.fsum / N) of the diagonal values -- each computed in the input dtype in
  torchvision's order of operations, the threshold replacement applied in that dtype, then widened to float64;
  aggregate=False gives the whole matrix in the input dtype, widened (a nested [N, N] list).

Where each expected value comes from. Two routes, compared for every value:
* Route 1 (`tv_values`, this is `expected`): torchvision's formulas re-written in NumPy on arrays of the input dtype,
  one elementwise operation at a time in torchvision's order, Python constants rounded to the dtype first as ATen
  does with a wrapped scalar (eps = 1e-7, 4 / pi**2, 1, 2). It is evaluated twice, once on the [N, 1, 4] x [1, N, 4]
  broadcast (the matrix) and once on the rows' pairs, and the matrix diagonal is asserted bit-identical to the pairs.
* Route 2 (`exact_values`): written from the definitions, one pair at a time: intersection, union, enclosing box,
  centre distance in exact rationals (fractions.Fraction) of the widened inputs, with eps as the dtype's value;
  CIoU's arctangent term in float64 (math.atan) from the exact ratios. Route 1 must agree with route 2 within the
  case tolerance for float32 inputs (worst: 0.70 of it, the off-diagonal docstring entries, whose float32 centre sums
  near 700 lose ~3e-5) and within 1% of it for float64 (worst: 3e-4 of it); the generator prints the worst fraction
  per metric and dtype. So an implementation that computes each pair in the input dtype in another equivalent order,
  or even in float64, passes. Unlike most fixtures (README: "Expected values are exact"), `expected` here is
  torchvision's float32 arithmetic for float32 boxes, as TorchMetrics returns it.
TorchMetrics' docstring examples (3 float32 boxes) are checked against their printed 4-decimal values: the mean and
the full matrix of all four metrics.

Tolerances: float32 inputs rtol 1e-6, atol 1e-7 (torchvision rounds each step to float32; torch's vectorised atan
is within 1 ulp, not correctly rounded); float64 inputs rtol 1e-12, atol 1e-12. Random float32 boxes have coordinates
below 200; large coordinates (1e4..1e5) lie on a 2^-10 grid (float64) or 2^-4 grid (float32), so every coordinate
sum and difference is exact and the values do not depend on the order of those operations.

Not covered: preds and target of different dtypes (torchvision rounds each box's area and width in its own dtype
before promoting; Tally casts both inputs to the common dtype first), degenerate or inverted boxes (x1 >= x2: 0/0
and negative areas), float16/bfloat16 boxes, NaN.

Refused by Tally (the message is "<metric>: <input>: ..."): preds [N, 3], target [N, 5] (TorchMetrics raises
ValueError "Expected preds/target to be of shape (N, 4)"), and integer preds (Tally accepts floating boxes only;
torchvision's `_upcast` would compute integer boxes in int64 and divide to float -- a departure).
"""
import math
import os
import sys
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import Refused, T, Suite, _fmt_arg, spec  # noqa: E402

IOU = "intersection_over_union"
GIOU = "generalized_intersection_over_union"
DIOU = "distance_intersection_over_union"
CIOU = "complete_intersection_over_union"
METRICS = (IOU, GIOU, DIOU, CIOU)
TOL = {"float32": (1e-6, 1e-7), "float64": (1e-12, 1e-12)}
# route 1 vs route 2, as a fraction of the case tolerance atol + rtol * |expected|
ROUTE_FRACTION = {"float32": 1.0, "float64": 0.01}
# a value this close to iou_threshold (relative to 1) would make a threshold case fragile
THRESHOLD_GAP = 1e-5
# rule: tv/boxes.py distance_box_iou, complete_box_iou, _box_diou_iou: eps: float = 1e-7 (a Python float added to a
# tensor of the boxes' dtype, so rounded to that dtype)
EPS = 1e-7
# rule: tv/boxes.py complete_box_iou: v = (4 / (torch.pi**2)) * ... (torch.pi is math.pi; the Python float is
# rounded to the boxes' dtype by the multiplication)
CIOU_FACTOR = 4 / (math.pi**2)

STATS = {"value": 0, "refused": 0, "docstring_asserts": 0}
WORST = {}


# --------------------------------------------------------------------------------------------
# route 1: torchvision's formulas in the input dtype
# --------------------------------------------------------------------------------------------
def tv_values(p, t):
    """All four metrics for box pairs p [..., 4], t [..., 4] (broadcast against each other), in their dtype."""
    assert p.dtype == t.dtype and p.dtype in (np.float32, np.float64), (p.dtype, t.dtype)
    dt = p.dtype.type
    # rule: tv/_utils.py _upcast: float32 and float64 tensors are returned unchanged (only float16/bfloat16 -> float32,
    # small ints -> int32), so every step below runs in the boxes' own dtype
    px1, py1, px2, py2 = (p[..., k] for k in range(4))
    tx1, ty1, tx2, ty2 = (t[..., k] for k in range(4))
    with np.errstate(all="raise"):
        # rule: tv/boxes.py box_area: (x2 - x1) * (y2 - y1)
        area1 = (px2 - px1) * (py2 - py1)
        area2 = (tx2 - tx1) * (ty2 - ty1)
        # rule: tv/boxes.py _box_inter_union: lt = max(top-left corners), rb = min(bottom-right corners),
        # wh = (rb - lt).clamp(min=0), inter = w * h, union = area1 + area2 - inter (left to right)
        iw = np.maximum(np.minimum(px2, tx2) - np.maximum(px1, tx1), dt(0))
        ih = np.maximum(np.minimum(py2, ty2) - np.maximum(py1, ty1), dt(0))
        inter = iw * ih
        union = (area1 + area2) - inter
        # rule: tv/boxes.py box_iou: iou = inter / union
        iou = inter / union
        # rule: tv/boxes.py generalized_box_iou: lti = min(top-left), rbi = max(bottom-right),
        # whi = (rbi - lti).clamp(min=0), areai = w * h, giou = iou - (areai - union) / areai
        ew = np.maximum(np.maximum(px2, tx2) - np.minimum(px1, tx1), dt(0))
        eh = np.maximum(np.maximum(py2, ty2) - np.minimum(py1, ty1), dt(0))
        areai = ew * eh
        giou = iou - (areai - union) / areai
        # rule: tv/boxes.py _box_diou_iou: the same enclosing whi; diagonal_distance_squared = w**2 + h**2 + eps
        # (x**2 is x * x in ATen's pow kernel), centres (x1 + x2) / 2, centers_distance_squared =
        # (x_p - x_g)**2 + (y_p - y_g)**2, diou = iou - centers_distance_squared / diagonal_distance_squared
        diag = (ew * ew + eh * eh) + dt(EPS)
        dx = (px1 + px2) / dt(2) - (tx1 + tx2) / dt(2)
        dy = (py1 + py2) / dt(2) - (ty1 + ty2) / dt(2)
        cdist = dx * dx + dy * dy
        diou = iou - cdist / diag
        # rule: tv/boxes.py complete_box_iou: w_pred = x2 - x1, h_pred = y2 - y1 (likewise w_gt, h_gt);
        # v = (4 / pi**2) * (atan(w_pred / h_pred) - atan(w_gt / h_gt))**2; alpha = v / (1 - iou + v + eps)
        # (left to right, under no_grad); ciou = diou - alpha * v
        gap = np.arctan((px2 - px1) / (py2 - py1)) - np.arctan((tx2 - tx1) / (ty2 - ty1))
        v = dt(CIOU_FACTOR) * (gap * gap)
        alpha = v / (((dt(1) - iou) + v) + dt(EPS))
        ciou = diou - alpha * v
    out = {IOU: iou, GIOU: giou, DIOU: diou, CIOU: ciou}
    for a in out.values():
        assert a.dtype == p.dtype
    return out


def tv_matrix(p, t):
    """The [N, N] matrices torchvision builds: boxes1[:, None] against boxes2."""
    return tv_values(p[:, None, :], t[None, :, :])


# --------------------------------------------------------------------------------------------
# route 2: definitions, exact rationals
# --------------------------------------------------------------------------------------------
def exact_values(pb, tb, dtype):
    """All four metrics of one pair of boxes (4 floats each), exact except CIoU's arctangent (float64)."""
    P = [Fraction(float(x)) for x in pb]
    G = [Fraction(float(x)) for x in tb]
    eps = Fraction(float(np.dtype(dtype).type(EPS)))
    wp, hp = P[2] - P[0], P[3] - P[1]
    wg, hg = G[2] - G[0], G[3] - G[1]
    assert wp > 0 and hp > 0 and wg > 0 and hg > 0
    ow = max(Fraction(0), min(P[2], G[2]) - max(P[0], G[0]))
    oh = max(Fraction(0), min(P[3], G[3]) - max(P[1], G[1]))
    inter = ow * oh
    union = wp * hp + wg * hg - inter
    iou = inter / union
    cw = max(P[2], G[2]) - min(P[0], G[0])
    ch = max(P[3], G[3]) - min(P[1], G[1])
    hull = cw * ch
    giou = iou - (hull - union) / hull
    centre = ((P[0] + P[2]) / 2 - (G[0] + G[2]) / 2) ** 2 + ((P[1] + P[3]) / 2 - (G[1] + G[3]) / 2) ** 2
    diou = iou - centre / (cw * cw + ch * ch + eps)
    v = 4.0 / math.pi**2 * (math.atan(float(wp / hp)) - math.atan(float(wg / hg))) ** 2
    alpha = v / (float(1 - iou) + v + float(eps))
    ciou = float(diou) - alpha * v
    return {IOU: float(iou), GIOU: float(giou), DIOU: float(diou), CIOU: ciou}


def check_routes(metric, name, dtype, values_dt, pairs):
    """Route 1 values (input dtype) against route 2 for the same (preds box, target box) pairs."""
    rtol, atol = TOL[dtype]
    for v, (pb, tb) in zip(values_dt, pairs):
        e = exact_values(pb, tb, dtype)[metric]
        frac = abs(float(v) - e) / (atol + rtol * abs(e))
        assert frac <= ROUTE_FRACTION[dtype], (name, float(v), e, frac)
        key = (metric, dtype)
        if frac > WORST.get(key, (-1.0, None))[0]:
            WORST[key] = (frac, name)


def replace(vals, threshold, replacement, dt):
    """iou[iou < iou_threshold] = replacement_val, in the dtype of the values."""
    if threshold is None:
        return vals
    # rule: fdet/iou.py (giou.py, diou.py, ciou.py) _*_update: if iou_threshold is not None:
    # iou[iou < iou_threshold] = replacement_val (the Python scalars take the matrix dtype)
    thr = dt(threshold)
    gap = np.abs(vals.astype(np.float64) - float(thr))
    assert not ((gap > 0) & (gap < THRESHOLD_GAP)).any(), "value too close to iou_threshold"
    return np.where(vals < thr, dt(replacement), vals)


# --------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------
DOC_PREDS = [[296.55, 93.96, 314.97, 152.79], [328.94, 97.05, 342.49, 122.98], [356.62, 95.47, 372.33, 147.55]]
DOC_TARGET = [[300.00, 100.00, 315.00, 150.00], [330.00, 100.00, 350.00, 125.00], [350.00, 100.00, 375.00, 150.00]]
# printed in the docstrings of fdet/iou.py, giou.py, diou.py, ciou.py (default call, then aggregate=False)
DOC_MEAN = {IOU: 0.5879, GIOU: 0.5638, DIOU: 0.5793, CIOU: 0.5790}
DOC_MATRIX = {
    IOU: [[0.6898, 0.0000, 0.0000], [0.0000, 0.5086, 0.0000], [0.0000, 0.0000, 0.5654]],
    GIOU: [[0.6895, -0.4964, -0.4944], [-0.5105, 0.4673, -0.3434], [-0.6024, -0.4021, 0.5345]],
    DIOU: [[0.6883, -0.2043, -0.3351], [-0.2214, 0.4886, -0.1913], [-0.3971, -0.1510, 0.5609]],
    CIOU: [[0.6883, -0.2072, -0.3352], [-0.2217, 0.4881, -0.1913], [-0.3971, -0.1543, 0.5606]],
}


def assert_printed(values, printed, what):
    """A docstring's printed tensor (4 decimals)."""
    v = np.round(np.asarray(values, dtype=np.float64), 4)
    p = np.asarray(printed, dtype=np.float64)
    assert v.shape == p.shape and (np.abs(v - p) < 1e-9).all(), (what, v, p)
    STATS["docstring_asserts"] += 1


def boxes_from(x1, y1, w, h):
    return np.stack([x1, y1, x1 + w, y1 + h], axis=1)


def random_pairs(rng, n, spread=100.0):
    """Targets anywhere in [0, spread)^2; preds jittered copies (IoU across (0, 1)) and every 5th one elsewhere."""
    tw, th = rng.uniform(2, spread / 2, n), rng.uniform(2, spread / 2, n)
    tx, ty = rng.uniform(0, spread, n), rng.uniform(0, spread, n)
    pw, ph = tw * np.exp(rng.normal(0, 0.35, n)), th * np.exp(rng.normal(0, 0.35, n))
    px, py = tx + rng.normal(0, 0.25, n) * tw, ty + rng.normal(0, 0.25, n) * th
    far = np.arange(n) % 5 == 4
    px[far], py[far] = rng.uniform(0, spread, far.sum()), rng.uniform(0, spread, far.sum())
    return boxes_from(px, py, pw, ph), boxes_from(tx, ty, tw, th)


def large_pairs(rng, n, grid):
    """Overlapping pairs at offsets 1e4..1e5, every coordinate on a 1/grid lattice."""
    off_x, off_y = rng.uniform(1e4, 1e5, n), rng.uniform(1e4, 1e5, n)
    p, t = random_pairs(rng, n)
    p = p + np.stack([off_x, off_y, off_x, off_y], axis=1)
    t = t + np.stack([off_x, off_y, off_x, off_y], axis=1)
    return np.round(p * grid) / grid, np.round(t * grid) / grid


def valid(p, t):
    for b in (p, t):
        assert b.ndim == 2 and b.shape[1] == 4
        assert (b[:, 0] < b[:, 2]).all() and (b[:, 1] < b[:, 3]).all(), "boxes must have x1 < x2, y1 < y2"


# --------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------
def gen():
    S = Suite("box_iou.json")
    rng = np.random.default_rng(20250112)

    def tag_of(args):
        return "".join(f"_{k}-{_fmt_arg(v)}" for k, v in args.items())

    def add(metric, args, preds, target, dtype, scenario, source_extra=""):
        """Adds one case; returns the expected value (float or nested list)."""
        p, t = T(preds, dtype), T(target, dtype)
        valid(p.a, t.a)
        dt = p.a.dtype.type
        thr, rep = args.get("iou_threshold"), args.get("replacement_val", 0)
        aggregate = args.get("aggregate", True)
        n = p.a.shape[0]
        name = f"{metric}{tag_of(args)}__{scenario}"
        if n:
            diag = tv_values(p.a, t.a)[metric]
            mat = tv_matrix(p.a, t.a)[metric]
            assert np.array_equal(np.diagonal(mat), diag), "matrix diagonal != row pairs"
            check_routes(metric, name, dtype, diag, list(zip(p.a, t.a)))
        if aggregate:
            if n:
                vals = replace(diag, thr, rep, dt).astype(np.float64)
                # rule: fdet/iou.py _iou_compute (and _giou/_diou/_ciou_compute): iou.diag().mean() if iou.numel() > 0
                # else tensor(0.0); Tally: float64 sum over rows / rows
                expected = math.fsum(vals.tolist()) / n
            else:
                # rule: fdet/iou.py _iou_update: preds.numel() == 0 -> zeros [0, 0]; _iou_compute -> tensor(0.0)
                expected = 0.0
            how = "mean over rows of the pair values"
        else:
            assert n
            check_routes(metric, name, dtype, mat.reshape(-1),
                         [(p.a[i], t.a[j]) for i in range(n) for j in range(n)])
            # rule: fdet/iou.py _iou_compute: aggregate=False returns the whole [N, N] matrix
            expected = replace(mat, thr, rep, dt).astype(np.float64)
            how = "the [N, N] matrix"
        rtol, atol = TOL[dtype]
        src = (f"numpy re-implementation of torchvision's {metric} formula in {dtype} (TorchMetrics 1.5.2 functional), "
               f"{how}; cross-checked against exact rationals" + source_extra)
        S.add(name, spec(metric, args), {"preds": p, "target": t}, np.asarray(expected, dtype=np.float64), src,
              rtol=rtol, atol=atol)
        STATS["value"] += 1
        return expected

    def refuse(metric, preds, target, scenario, input_name, why):
        S.add(f"{metric}__refused_{scenario}", spec(metric, {}), {"preds": preds, "target": target},
              Refused(f"{metric}: {input_name}"), "refused: " + why, rtol=TOL["float32"][0], atol=TOL["float32"][1])
        STATS["refused"] += 1

    # ---------------- TorchMetrics' docstring examples (float32: torch.tensor of Python floats)
    for m in METRICS:
        v = add(m, {}, DOC_PREDS, DOC_TARGET, "float32", "docstring_example", "; docstring value asserted")
        assert_printed(v, DOC_MEAN[m], m)
        # TorchMetrics takes the mean in float32: the same 4 decimals
        d32 = tv_values(np.asarray(DOC_PREDS, np.float32), np.asarray(DOC_TARGET, np.float32))[m]
        assert_printed(np.mean(d32, dtype=np.float32), DOC_MEAN[m], m + " float32 mean")
        mat = add(m, {"aggregate": False}, DOC_PREDS, DOC_TARGET, "float32", "docstring_example",
                  "; docstring matrix asserted")
        assert_printed(mat, DOC_MATRIX[m], m + " matrix")
    # the docstring matrix with a threshold: the zeros (< 0.5) become -1
    mat = add(IOU, {"iou_threshold": 0.5, "replacement_val": -1, "aggregate": False}, DOC_PREDS, DOC_TARGET,
              "float32", "docstring_example")
    assert (np.asarray(mat) == np.where(np.eye(3) > 0, np.asarray(mat), -1.0)).all() and (np.diag(mat) > 0.5).all()

    # ---------------- random boxes
    for k, m in enumerate(METRICS):
        if m in (IOU, CIOU):
            p, t = random_pairs(rng, 1)
            dtype = "float32" if m == IOU else "float64"
            add(m, {}, p, t, dtype, "random_n1_" + dtype)
        p, t = random_pairs(rng, 7)
        add(m, {}, p, t, "float32", "random_n7_float32")
        p, t = random_pairs(rng, 40)
        add(m, {}, p, t, "float32", "random_n40_float32")
        p, t = random_pairs(rng, 40)
        add(m, {}, p, t, "float64", "random_n40_float64")
        p, t = random_pairs(rng, 5)
        add(m, {"aggregate": False}, p, t, "float64", "random_n5_float64")

    # ---------------- thresholds: iou_threshold=0.5 with replacement_val 0 (float32) and -1 (float64)
    for m in METRICS:
        for args, dtype in (({"iou_threshold": 0.5}, "float32"),
                            ({"iou_threshold": 0.5, "replacement_val": -1}, "float64")):
            for attempt in range(100):
                p, t = random_pairs(rng, 40)
                d = tv_values(p.astype(dtype), t.astype(dtype))[m].astype(np.float64)
                gap = np.abs(d - 0.5)
                if (gap > THRESHOLD_GAP).all() and (d < 0.5).sum() >= 5 and (d >= 0.5).sum() >= 5:
                    break
            else:
                raise AssertionError("no threshold-safe random draw")
            add(m, args, p, t, dtype, f"random_n40_{dtype}")
    # GIoU is negative for disjoint boxes: iou_threshold=0.0 lifts those to 0 (replacement_val default 0)
    p = np.array([[0, 0, 10, 10], [0, 0, 10, 10], [20, 0, 30, 10], [2, 2, 8, 9], [0, 0, 4, 4]], float)
    t = np.array([[5, 5, 15, 15], [12, 0, 20, 10], [0, 20, 10, 30], [0, 0, 10, 10], [50, 50, 60, 70]], float)
    v = add(GIOU, {"iou_threshold": 0.0}, p, t, "float64", "mixed_signs")
    full = tv_values(p, t)[GIOU]
    assert (full < 0).sum() == 4 and abs(v - full.clip(0).mean()) < 1e-15

    # ---------------- identical boxes: every metric is exactly 1
    for m in METRICS:
        p, _ = random_pairs(rng, 5)
        v = add(m, {}, p, p, "float32", "identical_boxes")
        assert v == 1.0, (m, v)

    # ---------------- disjoint boxes (incl. touching edges / corners): IoU 0, the others negative (or 0 for
    # side-by-side boxes of the same height under GIoU: the enclosing box is the union)
    p = np.array([[0, 0, 10, 10], [0, 0, 10, 10], [0, 0, 10, 10], [0, 0, 1, 1], [5, 5, 6, 9], [10, 0, 20, 10]],
                 float)
    t = np.array([[10, 0, 20, 10], [10, 10, 20, 20], [30, 40, 35, 60], [99, 99, 100, 100], [0, 20, 3, 21],
                  [0, 0, 10, 10]], float)
    for m in METRICS:
        v = add(m, {}, p, t, "float64", "disjoint_boxes")
        d = tv_values(p, t)[m]
        if m == IOU:
            assert (d == 0).all()
        else:
            assert (d <= 0).all() and (d < 0).sum() >= 4 and v < 0, (m, d)

    # ---------------- one box containing the other: IoU = area ratio, GIoU = IoU (the hull is the outer box)
    p = np.array([[0, 0, 10, 10], [2, 3, 5, 4], [0, 0, 100, 50], [10, 10, 12, 30], [0, 0, 8, 8]], float)
    t = np.array([[2, 2, 6, 7], [0, 0, 10, 10], [40, 20, 60, 30], [0, 0, 40, 40], [0, 0, 8, 8.5]], float)
    for m in METRICS:
        add(m, {}, p, t, "float64", "contained_boxes")
        d = tv_values(p, t)
        assert (d[IOU] == d[GIOU]).all() and (d[DIOU] <= d[IOU]).all() and (d[CIOU] <= d[DIOU]).all()
        assert (d[DIOU] == d[IOU]).sum() == 1 and (d[CIOU] < d[DIOU]).sum() >= 3  # pair 2: same centre

    # ---------------- large coordinates (offsets 1e4..1e5)
    for m in METRICS:
        p, t = large_pairs(rng, 40, 1024)
        add(m, {}, p, t, "float64", "large_coordinates_float64")
        if m in (IOU, CIOU):
            p, t = large_pairs(rng, 20, 16)
            assert (p.astype(np.float32).astype(np.float64) == p).all()
            add(m, {}, p, t, "float32", "large_coordinates_float32_grid16")

    # ---------------- no boxes: 0.0
    for m in METRICS:
        assert add(m, {}, np.zeros((0, 4)), np.zeros((0, 4)), "float32", "empty") == 0.0

    # ---------------- refused inputs
    p, t = random_pairs(rng, 4)
    # rule: fdet/iou.py _iou_update (and giou/diou/ciou): preds.ndim != 2 or preds.shape[-1] != 4 -> ValueError;
    # likewise target
    why_shape = "TorchMetrics raises ValueError (Expected {} to be of shape (N, 4))"
    why_int = ("Tally accepts floating boxes only (TorchMetrics/torchvision compute integer boxes in int64 through "
               "_upcast and divide to float: a departure)")
    refuse(IOU, T(p[:, :3], "float32"), T(t, "float32"), "preds_n_by_3", "preds", why_shape.format("preds"))
    refuse(IOU, T(p, "float32"), T(np.concatenate([t, t[:, :1]], 1), "float32"), "target_n_by_5", "target",
           why_shape.format("target"))
    refuse(IOU, T(np.round(p), "int64"), T(t, "float32"), "integer_preds", "preds", why_int)
    refuse(GIOU, T(p[:, :3], "float64"), T(t, "float64"), "preds_n_by_3", "preds", why_shape.format("preds"))
    refuse(DIOU, T(p, "float64"), T(np.concatenate([t, t[:, :1]], 1), "float64"), "target_n_by_5", "target",
           why_shape.format("target"))
    refuse(CIOU, T(np.round(p), "int64"), T(np.round(t), "int64"), "integer_preds", "preds", why_int)
    return S


def main():
    S = gen()
    S.write_and_report()
    counts = {}
    for c in S.cases:
        m = c["metric"].split("(")[0]
        k = "refused" if "error" in c else "value"
        counts.setdefault(m, {"value": 0, "refused": 0})[k] += 1
    for m, c in counts.items():
        print(f"  {m}: {c['value']} cases + {c['refused']} refused")
    print(f"docstring values asserted: {STATS['docstring_asserts']}")
    print("largest route 1 - route 2 difference, as a fraction of the case tolerance:")
    for (m, dtype), (frac, case) in sorted(WORST.items()):
        print(f"  {m} ({dtype}): {frac:.2e} in {case}")


if __name__ == "__main__":
    main()
