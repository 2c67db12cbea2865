#!/usr/bin/env python3
"""Golden fixtures for panoptic_quality (TorchMetrics' PanopticQuality).

Regenerate (numpy; gen_fixtures.py, whose helpers are imported, also loads scipy and scikit-learn -- the Debian
python3-* packages work):

    /usr/bin/python3 tests/golden/gen_panoptic.py

Output, in the case format of tests/golden/README.md: tests/golden/fixtures/panoptic.json, inputs `preds` and `target`
(integer tensors [N, *spatial, 2], the last dim (category_id, instance_id)), and a summary on stdout. The output is
deterministic (fixed seeds). Generated with numpy 1.24.2.

Metric: panoptic_quality(things=[...], stuffs=[...], allow_unknown_preds_category=false, return_sq_and_rq=false,
return_per_class=false). `things` and `stuffs` are required int lists (written `[0, 1]`; `[]` is an empty list); the
flags appear in a spec only when true, except in one case that writes all three as false.

Semantics: TorchMetrics 1.5.2's PanopticQuality. Neither TorchMetrics nor torch is imported; the rules were read from
its sources and each one is cited below in a `# rule:` comment naming the file: `pqc/` =
src/torchmetrics/functional/detection/_panoptic_quality_common.py, `pqm/` = src/torchmetrics/detection/
panoptic_qualities.py (the class; the functional form in functional/detection/panoptic_qualities.py runs the same
steps on one batch). Rules:
1. Categories: duplicates in `things`/`stuffs` are dropped; things and stuffs must be disjoint and not both empty. The
   categories are ordered things sorted, then stuffs sorted (continuous ids 0..C-1); the void colour is
   (1 + max(0, things, stuffs), 0).
2. Preprocessing, each side: a point whose category is a stuff gets instance 0 (all points of a stuff are one
   segment); a category in neither list is void (every such point is the void colour, one segment). In preds such a
   point is an error unless allow_unknown_preds_category=true; in target it is always void.
3. Per image (segments are never matched across images): the area of each segment (category, instance) on each side
   and the intersection area of each (pred segment, target segment) pair present.
4. For each pair with a non-void target and the same category: union = pred_area - |pred ∩ target-void| +
   target_area - |pred-void ∩ target| - intersection (int64), iou = float32(intersection) / float32(union)
   (TorchMetrics divides int64 tensors: a float32 result); if iou > 0.5 (in float32) the pair is a TP of its
   category, iou_sum (float64) += iou (the float32 value: a multiple of 2^-24 in (0.5, 1], so the float64 sum is
   exact), and both segments are matched.
5. An unmatched non-void target segment is a FN if float32(|pred-void ∩ segment| / area) <= 0.5; an unmatched non-void
   pred segment is a FP if float32(|segment ∩ target-void| / area) <= 0.5.
6. Per category: sq = iou_sum / tp (float64; 0 where tp == 0); denominator = tp + 0.5 fp + 0.5 fn (float32, exact);
   rq = float32(tp / denominator) (0 where the denominator is 0); pq = sq * float64(rq).
7. Averages over the categories whose denominator is > 0: pq_avg and sq_avg float64 means, rq_avg = float32(float64
   mean of the rq values) (TorchMetrics takes a float32 mean of float32 rq; see "Not covered"); NaN when no
   category has a denominator (N = 0, or only void/absent categories).
8. Output: default pq_avg (a scalar); return_sq_and_rq: [pq_avg, sq_avg, rq_avg]; return_per_class: [[pq_c ...]]
   (shape [1, C]); both: [[pq_c, sq_c, rq_c] for each category] (shape [C, 3]: TorchMetrics stacks along dim=-1,
   whatever its docstring says about (3, C)).
Everything is per image and summed, so the golden test's three evaluations (one update, updates of 7 images, two
halves merged) all give `expected`.

Where each expected value comes from. Two routes, compared for every case:
* Route 1 (`route1_counts`, `finalize1`; this is `expected`): the rules written plainly, panopticapi's pq_compute
  style: a Python loop over the points filling Counter dicts of segment and pair areas, then a loop over the pairs,
  IoUs and void ratios divided with numpy.float32 scalars, iou_sum in float64, rq a numpy.float32 division, the means
  as plain float64 sums divided by the count.
* Route 2 (`route2_counts`, `finalize2`): vectorised numpy: preprocessing with np.isin/np.where, segments as
  np.unique rows (image, category, instance) with inverse indices, pairs as np.unique over the encoded key
  pred_segment * n_target_segments + target_segment, void overlaps by np.bincount; the threshold tests as exact
  integer comparisons (2 * intersection > union, 2 * void <= area; equal to the float32 tests because every area here
  is below 2^24, asserted); each IoU as the float32 nearest to the exact rational (`f32_nearest`, its own
  round-half-even from fractions.Fraction), iou_sum, sq, pq and the means in exact rationals rounded once, rq as the
  float32 nearest to the rational tp / denominator.
The counts (tp, fp, fn) and the iou sums must be identical, and every output value within 1e-15 relative (the
generator prints the largest difference; only the float64 means can differ, and in this run nothing does).
During development (not part of this script), TorchMetrics 1.5.2's PanopticQuality itself (torch 1.13) was run on
every case, as one update, as two halves, as updates of 7 images and of one image: every value is identical except
rq_avg of random_n6_64x48 under return_sq_and_rq, where its float32 mean is 0.3958333 and `expected` the float32
nearest to the exact mean, 0.39583334 (one float32 ulp, 3e-8; see "Not covered"); the refused cases raise
ValueError there, except the float inputs, which TorchMetrics accepts.
TorchMetrics' docstring example (things {0, 1}, stuffs {6, 7}, one 5x4 image) is checked against its printed
4-decimal values in all three printed output forms (0.5463; [0.5463, 0.6111, 0.6667]; [[0.5185, 0.0, 0.6667, 1.0]]).

Cases: the docstring example under all four output forms (and once with the three flags written false); random
blocky panoptic images (stuff regions with a random instance id per point, which must collapse; several instances per
thing; void/unknown categories in target; preds as jittered, dropped, relabelled and spurious copies, so IoUs land
on both sides of 0.5) with N = 1..6 and 8x8 to 64x48, each dataset under the four output forms; unknown pred
categories with allow_unknown_preds_category=true; 1-D point clouds [N, P, 2]; 3-D [N, D, H, W, 2]; one image; one
point; N = 0 (NaN averages, zero per-class values); a category absent from both sides (left out of the means, 0 per
class); every category absent (target all void: NaN); IoU exactly 0.5 (2/4 and 50/100: no match) and just above
(51/101, 100/199); void ratio exactly 0.5 (counted as FP/FN) and just above (51/101, 2/3: not counted); a matched pair
whose union loses its void parts (IoU 1); things only (stuffs=[]), stuffs only (things=[]); negative category ids;
duplicate ids (the same values as without) and unsorted lists (the same order as sorted); instance ids near the int64
limits (-2^63 and 2^63 - 1, on things and on stuffs); int32 inputs; 2 x 256 x 256.

Tolerances: rtol 1e-12, atol 1e-12 for every case. The float32 IoUs (and rq) are part of `expected` -- an
implementation that keeps exact IoUs misses by ~1e-8 -- while the float64 steps leave only ulps.

Not covered: areas of 2^24 points or more in one image (where float32 division rounds a ratio just above 0.5 down to
0.5, so an exact-rational test would depart from TorchMetrics: a case needs a 16.7M-point image, far over a fixture's
budget); category ids outside int32 with int32 inputs; ModifiedPanopticQuality (modified_metric_stuffs). TorchMetrics
takes rq_avg as a float32 mean of float32 values (ATen's float32 sum, then a float32 division); Tally rounds the
float64 mean to float32, which can differ from it by one float32 ulp (it does in one case, above).

Refused by Tally (the message names the metric and contains the `error` text): an unknown category in preds without
allow_unknown_preds_category (TorchMetrics: ValueError "Unknown categories found"; int64 and int32), things and stuffs
overlapping and both empty (TorchMetrics: ValueError), preds/target of different shapes, a last dim of 3, a rank-2
input [N, 2] (TorchMetrics: ValueError from _validate_inputs), float preds or target (TorchMetrics accepts float
tensors and compares the values as category ids; Tally accepts integer tensors only -- a departure).
"""
import math
import os
import sys
from collections import Counter
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import Refused, T, Suite, _fmt_arg, spec  # noqa: E402

M = "panoptic_quality"
RT, AT = 1e-12, 1e-12
# route 1 vs route 2, relative difference allowed on output values
ROUTE_REL = 1e-15
F32_HALF = np.float32(0.5)
FORMS = ({}, {"return_sq_and_rq": True}, {"return_per_class": True},
         {"return_sq_and_rq": True, "return_per_class": True})
I64_MAX, I64_MIN = int(np.iinfo(np.int64).max), int(np.iinfo(np.int64).min)

STATS = {"value": 0, "refused": 0, "docstring_asserts": 0, "pairs": 0, "tp": 0, "fp": 0, "fn": 0,
         "iou_half_pairs": 0, "near_below": 0, "near_above": 0, "void_excused": 0, "void_half": 0}
WORST = {"rel": 0.0, "case": None}


class UnknownPredsCategory(Exception):
    pass


# --------------------------------------------------------------------------------------------
# categories
# --------------------------------------------------------------------------------------------
def categories(things, stuffs):
    # rule: pqc/_parse_categories: things_parsed = set(things), stuffs_parsed = set(stuffs) (duplicates dropped with a
    # warning); things & stuffs non-empty -> ValueError; both empty -> ValueError
    th, st = set(things), set(stuffs)
    assert not (th & st) and (th | st), (things, stuffs)
    # rule: pqc/_get_category_id_to_continuous_id: things sorted get [0, len(things)), stuffs sorted follow
    cats = sorted(th) + sorted(st)
    # rule: pqc/_get_void_color: (1 + max([0, *things, *stuffs]), 0)
    void = (1 + max([0, *th, *st]), 0)
    return th, st, cats, void


# --------------------------------------------------------------------------------------------
# route 1: dicts over points (panopticapi pq_compute style), float32 via numpy scalars
# --------------------------------------------------------------------------------------------
def route1_counts(preds, target, things, stuffs, allow_unknown):
    """Per category (continuous order): iou_sum (float64), tp, fp, fn; plus the IoUs of the candidate pairs."""
    th, st, cats, void = categories(things, stuffs)
    cid = {c: k for k, c in enumerate(cats)}
    C = len(cats)
    iou_sum, tp, fp, fn = [0.0] * C, [0] * C, [0] * C, [0] * C
    n = preds.shape[0]
    # rule: pqc/_prepocess_inputs: torch.flatten(out, 1, -2): (B, *spatial, 2) -> (B, points, 2)
    npts = int(np.prod(preds.shape[1:-1]))
    P = preds.reshape(n, npts, 2).tolist()
    G = target.reshape(n, npts, 2).tolist()
    ious = []
    excused = half = 0

    def color(c, i, is_pred):
        # rule: pqc/_prepocess_inputs: stuff points get instance 0 (out[mask_stuffs_instance] = 0); points in neither
        # list -> ValueError for preds unless allow_unknown_category, then (both sides) set to void_color;
        # pqm/PanopticQuality.update: the target is preprocessed with allow_unknown_category=True
        if c in st:
            return (c, 0)
        if c in th:
            return (c, i)
        if is_pred and not allow_unknown:
            raise UnknownPredsCategory(c)
        return void

    for img in range(n):
        # rule: pqc/_panoptic_quality_update: every sample is processed on its own (no matches across images)
        # rule: pqc/_panoptic_quality_update_sample: areas from _get_color_areas (torch.unique counts, int64) of the
        # preds, the target and the stacked (pred colour, target colour) pairs
        pred_area, tgt_area, inter = Counter(), Counter(), Counter()
        for (pc, pi), (tc, ti) in zip(P[img], G[img]):
            p, t = color(pc, pi, True), color(tc, ti, False)
            pred_area[p] += 1
            tgt_area[t] += 1
            inter[(p, t)] += 1
        matched_p, matched_t = set(), set()
        for (p, t), a in inter.items():
            # rule: pqc/_panoptic_quality_update_sample: skip pairs whose target is void or whose categories differ
            if t == void or p[0] != t[0]:
                continue
            # rule: pqc/_calculate_iou: union = pred_area - pred_void_area + target_area - void_target_area -
            # intersection, pred_void_area = |(pred, void)|, void_target_area = |(void, target)|; intersection / union
            # of int64 tensors is float32
            union = pred_area[p] - inter.get((p, void), 0) + tgt_area[t] - inter.get((void, t), 0) - a
            iou = np.float32(a) / np.float32(union)
            assert type(iou) is np.float32
            ious.append(float(iou))
            # rule: pqc/_panoptic_quality_update_sample: iou > 0.5 -> both matched, iou_sum[cat] += iou (float64 state),
            # true_positives[cat] += 1
            if iou > F32_HALF:
                k = cid[t[0]]
                tp[k] += 1
                iou_sum[k] += float(iou)
                matched_p.add(p)
                matched_t.add(t)
        # rule: pqc/_filter_false_negatives: unmatched non-void target segments with
        # void_target_area / target_area <= 0.5 (int64 / int64 -> float32)
        for t, area in tgt_area.items():
            if t == void or t in matched_t:
                continue
            r = np.float32(inter.get((void, t), 0)) / np.float32(area)
            if r <= F32_HALF:
                fn[cid[t[0]]] += 1
            else:
                excused += 1
            half += int(r == F32_HALF)
        # rule: pqc/_filter_false_positives: unmatched non-void pred segments with pred_void_area / pred_area <= 0.5
        for p, area in pred_area.items():
            if p == void or p in matched_p:
                continue
            r = np.float32(inter.get((p, void), 0)) / np.float32(area)
            if r <= F32_HALF:
                fp[cid[p[0]]] += 1
            else:
                excused += 1
            half += int(r == F32_HALF)
    return {"iou_sum": iou_sum, "tp": tp, "fp": fp, "fn": fn, "ious": ious, "void_excused": excused,
            "void_half": half}


def finalize1(c):
    iou_sum, tp, fp, fn = c["iou_sum"], c["tp"], c["fp"], c["fn"]
    C = len(tp)
    # rule: pqc/_panoptic_quality_compute: sq = where(tp > 0, iou_sum / tp, 0.0) (float64 / int32 -> float64)
    sq = [iou_sum[k] / tp[k] if tp[k] > 0 else 0.0 for k in range(C)]
    # rule: pqc/_panoptic_quality_compute: denominator = tp + 0.5 * fp + 0.5 * fn (int32 * 0.5 -> float32; exact here)
    den = [np.float32(tp[k]) + np.float32(0.5) * np.float32(fp[k]) + np.float32(0.5) * np.float32(fn[k])
           for k in range(C)]
    # rule: pqc/_panoptic_quality_compute: rq = where(denominator > 0, tp / denominator, 0.0) (int32 / float32 ->
    # float32)
    rq = [float(np.float32(tp[k]) / den[k]) if den[k] > 0 else 0.0 for k in range(C)]
    # rule: pqc/_panoptic_quality_compute: pq = sq * rq (float64 * float32 -> float64)
    pq = [sq[k] * rq[k] for k in range(C)]
    # rule: pqc/_panoptic_quality_compute: pq_avg, sq_avg, rq_avg = mean(x[denominator > 0]) (NaN when empty)
    sel = [k for k in range(C) if den[k] > 0]
    if sel:
        pq_avg = sum(pq[k] for k in sel) / len(sel)
        sq_avg = sum(sq[k] for k in sel) / len(sel)
        rq_avg = float(np.float32(sum(rq[k] for k in sel) / len(sel)))
    else:
        pq_avg = sq_avg = rq_avg = math.nan
    return {"pq": pq, "sq": sq, "rq": rq, "pq_avg": pq_avg, "sq_avg": sq_avg, "rq_avg": rq_avg}


# --------------------------------------------------------------------------------------------
# route 2: vectorised numpy counts, exact integer thresholds, rationals
# --------------------------------------------------------------------------------------------
def f32_nearest(q):
    """The float32 nearest to the rational q (ties to even), as a Python float."""
    q = Fraction(q)
    x = np.float32(float(q))
    best = None
    for c in (np.nextafter(x, np.float32(-np.inf)), x, np.nextafter(x, np.float32(np.inf))):
        d = abs(Fraction(float(c)) - q)
        even = int(np.array(c, np.float32).view(np.uint32)) % 2 == 0
        key = (d, not even)
        if best is None or key < best[0]:
            best = (key, float(c))
    return best[1]


def route2_counts(preds, target, things, stuffs, allow_unknown):
    th, st, cats, void = categories(things, stuffs)
    C = len(cats)
    n = preds.shape[0]
    npts = int(np.prod(preds.shape[1:-1]))
    p = preds.reshape(n, npts, 2).astype(np.int64)
    t = target.reshape(n, npts, 2).astype(np.int64)
    th_a, st_a = np.array(sorted(th), np.int64), np.array(sorted(st), np.int64)

    def prep(x, allow):
        cat, inst = x[..., 0], x[..., 1]
        is_st, is_th = np.isin(cat, st_a), np.isin(cat, th_a)
        known = is_st | is_th
        if not allow and not known.all():
            raise UnknownPredsCategory(cat[~known][0])
        return np.where(known, cat, void[0]), np.where(is_th, inst, 0), ~known

    pc, pi, pvoid = prep(p, allow_unknown)
    tc, ti, tvoid = prep(t, True)
    img = np.broadcast_to(np.arange(n, dtype=np.int64)[:, None], pc.shape)
    zero = {"iou_sum": [Fraction(0)] * C, "tp": [0] * C, "fp": [0] * C, "fn": [0] * C}
    if pc.size == 0:
        return zero
    pseg, pinv, parea = np.unique(np.stack([img, pc, pi], -1).reshape(-1, 3), axis=0, return_inverse=True,
                                  return_counts=True)
    tseg, tinv, tarea = np.unique(np.stack([img, tc, ti], -1).reshape(-1, 3), axis=0, return_inverse=True,
                                  return_counts=True)
    pinv, tinv = pinv.reshape(-1), tinv.reshape(-1)
    nP, nT = len(pseg), len(tseg)
    assert parea.max() < 2**24 and tarea.max() < 2**24  # the exact integer tests equal the float32 ones
    pseg_void = (pseg[:, 1] == void[0]) & (pseg[:, 2] == void[1])
    tseg_void = (tseg[:, 1] == void[0]) & (tseg[:, 2] == void[1])
    assert (pseg_void[pinv] == pvoid.reshape(-1)).all() and (tseg_void[tinv] == tvoid.reshape(-1)).all()
    # |pred segment ∩ target void|, |pred void ∩ target segment|
    pv = np.bincount(pinv[tvoid.reshape(-1)], minlength=nP)
    vt = np.bincount(tinv[pvoid.reshape(-1)], minlength=nT)
    keys, inter = np.unique(pinv.astype(np.int64) * nT + tinv, return_counts=True)
    a_p, a_t = keys // nT, keys % nT
    cand = ~tseg_void[a_t] & (pseg[a_p, 1] == tseg[a_t, 1])
    assert (pseg[a_p, 0] == tseg[a_t, 0]).all()  # a pair never spans two images
    a_p, a_t, inter = a_p[cand], a_t[cand], inter[cand]
    union = parea[a_p] - pv[a_p] + tarea[a_t] - vt[a_t] - inter
    match = 2 * inter > union
    cont = np.searchsorted(np.array(sorted(cats)), np.array(cats))  # position in sorted -> continuous id
    to_cont = np.empty(C, np.int64)
    to_cont[cont] = np.arange(C)
    sorted_cats = np.array(sorted(cats), np.int64)

    def cid(c):
        return to_cont[np.searchsorted(sorted_cats, c)]

    tp = np.bincount(cid(tseg[a_t[match], 1]), minlength=C)
    iou_sum = [Fraction(0)] * C
    for k, a, u in zip(cid(tseg[a_t[match], 1]).tolist(), inter[match].tolist(), union[match].tolist()):
        iou_sum[k] += Fraction(f32_nearest(Fraction(a, u)))
    matched_p = np.zeros(nP, bool)
    matched_t = np.zeros(nT, bool)
    matched_p[a_p[match]] = True
    matched_t[a_t[match]] = True
    fn_seg = ~tseg_void & ~matched_t & (2 * vt <= tarea)
    fp_seg = ~pseg_void & ~matched_p & (2 * pv <= parea)
    fn = np.bincount(cid(tseg[fn_seg, 1]), minlength=C)
    fp = np.bincount(cid(pseg[fp_seg, 1]), minlength=C)
    return {"iou_sum": iou_sum, "tp": tp.tolist(), "fp": fp.tolist(), "fn": fn.tolist()}


def finalize2(c):
    iou_sum, tp, fp, fn = c["iou_sum"], c["tp"], c["fp"], c["fn"]
    C = len(tp)
    sq = [float(iou_sum[k] / tp[k]) if tp[k] else 0.0 for k in range(C)]
    den = [tp[k] + Fraction(fp[k] + fn[k], 2) for k in range(C)]
    rq = [f32_nearest(tp[k] / den[k]) if den[k] else 0.0 for k in range(C)]
    pq = [float(Fraction(sq[k]) * Fraction(rq[k])) for k in range(C)]
    sel = [k for k in range(C) if den[k] > 0]
    if sel:
        pq_avg = float(sum(Fraction(pq[k]) for k in sel) / len(sel))
        sq_avg = float(sum(Fraction(sq[k]) for k in sel) / len(sel))
        rq_avg = f32_nearest(sum(Fraction(rq[k]) for k in sel) / len(sel))
    else:
        pq_avg = sq_avg = rq_avg = math.nan
    return {"pq": pq, "sq": sq, "rq": rq, "pq_avg": pq_avg, "sq_avg": sq_avg, "rq_avg": rq_avg}


def output(f, args):
    # rule: pqm/PanopticQuality.compute: per_class and sq_and_rq -> stack((pq, sq, rq), dim=-1) [C, 3]; per_class ->
    # pq.view(1, -1); sq_and_rq -> stack((pq_avg, sq_avg, rq_avg)); else pq_avg
    per, both = args.get("return_per_class", False), args.get("return_sq_and_rq", False)
    if per and both:
        return [[f["pq"][k], f["sq"][k], f["rq"][k]] for k in range(len(f["pq"]))]
    if per:
        return [list(f["pq"])]
    if both:
        return [f["pq_avg"], f["sq_avg"], f["rq_avg"]]
    return f["pq_avg"]


def compare(a, b, name):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert a.shape == b.shape, (name, a.shape, b.shape)
    assert (np.isnan(a) == np.isnan(b)).all(), (name, a, b)
    ok = ~np.isnan(a)
    rel = np.abs(a[ok] - b[ok]) / np.maximum(np.abs(a[ok]), np.finfo(np.float64).tiny)
    rel = np.where(a[ok] == b[ok], 0.0, rel)
    worst = float(rel.max()) if rel.size else 0.0
    assert worst <= ROUTE_REL, (name, a, b, worst)
    if worst > WORST["rel"]:
        WORST.update(rel=worst, case=name)


# --------------------------------------------------------------------------------------------
# inputs
# --------------------------------------------------------------------------------------------
DOC_PREDS = [[[[6, 0], [0, 0], [6, 0], [6, 0]],
              [[0, 0], [0, 0], [6, 0], [0, 1]],
              [[0, 0], [0, 0], [6, 0], [0, 1]],
              [[0, 0], [7, 0], [6, 0], [1, 0]],
              [[0, 0], [7, 0], [7, 0], [7, 0]]]]
DOC_TARGET = [[[[6, 0], [0, 1], [6, 0], [0, 1]],
               [[0, 1], [0, 1], [6, 0], [0, 1]],
               [[0, 1], [0, 1], [6, 0], [1, 0]],
               [[0, 1], [7, 0], [1, 0], [1, 0]],
               [[0, 1], [7, 0], [7, 0], [7, 0]]]]
# printed in pqm/PanopticQuality's docstring (default, return_sq_and_rq=True, return_per_class=True)
DOC_PRINTED = {(): 0.5463, ("return_sq_and_rq",): [0.5463, 0.6111, 0.6667],
               ("return_per_class",): [[0.5185, 0.0000, 0.6667, 1.0000]]}


def assert_printed(values, printed, what):
    v = np.round(np.asarray(values, dtype=np.float64), 4)
    p = np.asarray(printed, dtype=np.float64)
    assert v.shape == p.shape and (np.abs(v - p) < 1e-9).all(), (what, v, p)
    STATS["docstring_asserts"] += 1


def random_panoptic(rng, n, h, w, things, stuffs, tvoid=(), pvoid=(), inst_pool=None, stuff_inst=(0, 10),
                    n_things=(2, 7), jitter=0.3):
    """n images [n, h, w, 2] (preds, target): blocky stuff regions, thing rectangles, void rectangles in target.

    Preds are the target's rectangles jittered (each edge by up to `jitter` of the side), some dropped or relabelled,
    thing instances renamed, plus spurious things (and, with `pvoid`, unknown-category rectangles)."""
    if inst_pool is None:
        inst_pool = list(range(1, 40))
    tgt = np.zeros((n, h, w, 2), np.int64)
    prd = np.zeros((n, h, w, 2), np.int64)
    for b in range(n):
        def rect(min_frac, max_frac):
            rh = int(rng.integers(max(1, int(h * min_frac)), max(2, int(h * max_frac)) + 1))
            rw = int(rng.integers(max(1, int(w * min_frac)), max(2, int(w * max_frac)) + 1))
            r0, c0 = int(rng.integers(0, max(1, h - rh + 1))), int(rng.integers(0, max(1, w - rw + 1)))
            return [r0, min(h, r0 + rh), c0, min(w, c0 + rw)]

        def jit(r):
            hh, ww = r[1] - r[0], r[3] - r[2]
            jh, jw = max(1, int(hh * jitter)), max(1, int(ww * jitter))
            r0 = r[0] + int(rng.integers(-jh, jh + 1))
            r1 = r[1] + int(rng.integers(-jh, jh + 1))
            c0 = r[2] + int(rng.integers(-jw, jw + 1))
            c1 = r[3] + int(rng.integers(-jw, jw + 1))
            r0, c0 = max(0, min(r0, h - 1)), max(0, min(c0, w - 1))
            return [r0, max(r0 + 1, min(r1, h)), c0, max(c0 + 1, min(c1, w))]

        # background and stuff regions (a random instance id on every point: stuffs collapse to one segment)
        t_layers, p_layers = [], []
        if stuffs:
            base = [0, h, 0, w]
            t_layers.append(("stuff", stuffs[int(rng.integers(len(stuffs)))], None, base))
            p_layers.append(("stuff", t_layers[-1][1], None, base))
            for _ in range(int(rng.integers(1, 4))):
                r = rect(0.3, 0.8)
                c = stuffs[int(rng.integers(len(stuffs)))]
                t_layers.append(("stuff", c, None, r))
                if rng.random() < 0.9:
                    c2 = c if rng.random() < 0.85 else stuffs[int(rng.integers(len(stuffs)))]
                    p_layers.append(("stuff", c2, None, jit(r)))
        else:
            base = [0, h, 0, w]
            t_layers.append(("thing", tvoid[0], 0, base))
            p_layers.append(("thing", things[0], inst_pool[0], base))
        # things: several instances per category
        rename = {}
        for _ in range(int(rng.integers(n_things[0], n_things[1] + 1)) if things else 0):
            c = things[int(rng.integers(len(things)))]
            i = inst_pool[int(rng.integers(len(inst_pool)))]
            r = rect(0.15, 0.5)
            t_layers.append(("thing", c, i, r))
            u = rng.random()
            if u < 0.12:
                continue  # missed
            c2 = c if u < 0.9 else things[int(rng.integers(len(things)))]
            if (c, i) not in rename:
                rename[(c, i)] = inst_pool[int(rng.integers(len(inst_pool)))]
            p_layers.append(("thing", c2, rename[(c, i)], jit(r)))
        for _ in range(int(rng.integers(0, 3)) if things else 0):  # spurious predictions
            p_layers.append(("thing", things[int(rng.integers(len(things)))],
                             inst_pool[int(rng.integers(len(inst_pool)))], rect(0.1, 0.35)))
        for _ in range(int(rng.integers(0, 3)) if tvoid else 0):  # void regions in target
            t_layers.append(("thing", tvoid[int(rng.integers(len(tvoid)))], int(rng.integers(0, 5)), rect(0.1, 0.4)))
        for _ in range(int(rng.integers(1, 3)) if pvoid else 0):  # unknown categories in preds
            p_layers.append(("thing", pvoid[int(rng.integers(len(pvoid)))], int(rng.integers(0, 5)), rect(0.1, 0.4)))
        for out, layers in ((tgt, t_layers), (prd, p_layers)):
            for kind, c, i, (r0, r1, c0, c1) in layers:
                out[b, r0:r1, c0:c1, 0] = c
                if kind == "stuff":
                    out[b, r0:r1, c0:c1, 1] = rng.integers(stuff_inst[0], stuff_inst[1], (r1 - r0, c1 - c0))
                else:
                    out[b, r0:r1, c0:c1, 1] = i
    return prd, tgt


def runs(*parts):
    """1-D points from runs ((pred cat, pred inst), (target cat, target inst), count): (preds [P, 2], target [P, 2])."""
    p, t = [], []
    for pc, tc, k in parts:
        p += [list(pc)] * k
        t += [list(tc)] * k
    return np.array(p, np.int64), np.array(t, np.int64)


# --------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------
def gen():
    S = Suite("panoptic.json")
    rng = np.random.default_rng(20250301)

    seen = set()

    def tag_of(args):
        return "".join(f"_{k}-{_fmt_arg(v)}" for k, v in args.items())

    def add(scenario, things, stuffs, preds, target, flags=None, dtype="int64", source_extra="", allow=False,
            explicit=False):
        """Adds one case; returns (expected, counts)."""
        flags = dict(flags or {})
        args = {"things": list(things), "stuffs": list(stuffs)}
        if allow or explicit:
            args["allow_unknown_preds_category"] = allow
        if explicit:
            args["return_sq_and_rq"] = flags.get("return_sq_and_rq", False)
            args["return_per_class"] = flags.get("return_per_class", False)
        else:
            args.update(flags)
        p, t = T(preds, dtype), T(target, dtype)
        assert p.a.shape == t.a.shape and p.a.ndim >= 3 and p.a.shape[-1] == 2
        assert (p.a.astype(object) == np.asarray(preds).astype(object)).all(), "ids do not fit the dtype"
        assert (t.a.astype(object) == np.asarray(target).astype(object)).all(), "ids do not fit the dtype"
        name = f"{M}{tag_of({k: v for k, v in args.items() if k not in ('things', 'stuffs')})}__{scenario}"
        c1 = route1_counts(p.a, t.a, things, stuffs, allow)
        c2 = route2_counts(p.a, t.a, things, stuffs, allow)
        assert (c1["tp"], c1["fp"], c1["fn"]) == (c2["tp"], c2["fp"], c2["fn"]), (name, c1, c2)
        assert [Fraction(x) for x in c1["iou_sum"]] == c2["iou_sum"], (name, c1["iou_sum"], c2["iou_sum"])
        f1, f2 = finalize1(c1), finalize2(c2)
        e1, e2 = output(f1, flags), output(f2, flags)
        compare(e1, e2, name)
        for form in ({}, {"return_sq_and_rq": True}, {"return_per_class": True},
                     {"return_sq_and_rq": True, "return_per_class": True}):
            compare(output(f1, form), output(f2, form), name + " (all forms)")
        key = (p.a.tobytes(), t.a.tobytes(), p.a.shape, tuple(sorted(set(things))), tuple(sorted(set(stuffs))), allow)
        if key not in seen:  # statistics once per distinct dataset
            seen.add(key)
            ious = np.array(c1["ious"])
            STATS["pairs"] += ious.size
            STATS["iou_half_pairs"] += int((ious == 0.5).sum())
            STATS["near_below"] += int(((ious >= 0.4) & (ious <= 0.5)).sum())
            STATS["near_above"] += int(((ious > 0.5) & (ious <= 0.6)).sum())
            for k in ("tp", "fp", "fn", "void_excused", "void_half"):
                STATS[k] += sum(c1[k]) if k in ("tp", "fp", "fn") else c1[k]
        src = ("python dict route over points (panopticapi pq_compute style) with TorchMetrics 1.5.2's "
               "PanopticQuality rules (float32 IoU and rq); cross-checked against vectorised numpy counts and exact "
               "rationals" + source_extra)
        S.add(name, spec(M, args), {"preds": p, "target": t}, np.asarray(e1, dtype=np.float64), src, rtol=RT, atol=AT)
        STATS["value"] += 1
        return e1, c1

    def add_forms(scenario, things, stuffs, preds, target, forms=FORMS, **kw):
        return [add(scenario, things, stuffs, preds, target, flags=f, **kw) for f in forms]

    def refuse(scenario, args, preds, target, text, why):
        S.add(f"{M}__refused_{scenario}", spec(M, args), {"preds": preds, "target": target}, Refused(text),
              "refused: " + why, rtol=RT, atol=AT)
        STATS["refused"] += 1

    TH, ST = [0, 1], [6, 7]

    # ---------------- TorchMetrics' docstring example
    res = add_forms("docstring_example", TH, ST, DOC_PREDS, DOC_TARGET, source_extra="; docstring values asserted")
    assert_printed(res[0][0], DOC_PRINTED[()], "default")
    assert_printed(res[1][0], DOC_PRINTED[("return_sq_and_rq",)], "sq_and_rq")
    assert_printed(res[2][0], DOC_PRINTED[("return_per_class",)], "per_class")
    assert_printed(np.asarray(res[3][0])[:, 0][None, :], DOC_PRINTED[("return_per_class",)], "both, pq column")
    assert res[3][1]["tp"] == [1, 0, 1, 1] and res[3][1]["fp"] == [1, 1, 0, 0] and res[3][1]["fn"] == [0, 1, 0, 0]
    e, _ = add("docstring_example_explicit_false_flags", TH, ST, DOC_PREDS, DOC_TARGET, explicit=True)
    assert e == res[0][0]

    # ---------------- random panoptic images under the four output forms
    datasets = {}
    for n, h, w, seed_tag in ((1, 8, 8, "n1_8x8"), (3, 16, 12, "n3_16x12"), (4, 32, 24, "n4_32x24"),
                              (6, 64, 48, "n6_64x48")):
        p, t = random_panoptic(rng, n, h, w, TH, ST, tvoid=(3, 255, -4))
        datasets[seed_tag] = (p, t)
        res = add_forms(f"random_{seed_tag}", TH, ST, p, t)
        cnt = res[0][1]
        assert sum(cnt["tp"]) > 0 and (n == 1 or (sum(cnt["fp"]) > 0 and sum(cnt["fn"]) > 0)), (seed_tag, cnt)

    # ---------------- unknown categories in preds, allowed (they become void)
    p, t = random_panoptic(rng, 3, 20, 16, TH, ST, tvoid=(3,), pvoid=(2, 9, -1))
    assert not np.isin(p[..., 0], TH + ST).all()
    for f in (FORMS[0], FORMS[3]):
        add("random_unknown_preds_n3_20x16", TH, ST, p, t, flags=f, allow=True)

    # ---------------- 1-D point clouds [N, P, 2] and 3-D volumes [N, D, H, W, 2]
    p, t = random_panoptic(rng, 4, 1, 60, TH, ST, tvoid=(3,), n_things=(2, 5))
    for f in (FORMS[0], FORMS[3]):
        add("point_cloud_n4_p60", TH, ST, p.reshape(4, 60, 2), t.reshape(4, 60, 2), flags=f)
    p, t = random_panoptic(rng, 2, 40, 12, TH, ST, tvoid=(3,))
    for f in (FORMS[0], FORMS[3]):
        add("volume_n2_4x10x12", TH, ST, p.reshape(2, 4, 10, 12, 2), t.reshape(2, 4, 10, 12, 2), flags=f)

    # ---------------- one point: a match (IoU 1), and a category mismatch (FP + FN)
    add("one_point_match", TH, ST, [[[0, 3]]], [[[0, 5]]], flags=FORMS[3])
    e, c = add("one_point_category_mismatch", TH, ST, [[[1, 3]]], [[[0, 5]]], flags=FORMS[3])
    assert c["fp"] == [0, 1, 0, 0] and c["fn"] == [1, 0, 0, 0] and e == [[0.0] * 3] * 4

    # ---------------- no images: NaN averages, zero per-class values
    for f in FORMS:
        add("no_images_0x4x4", TH, ST, np.zeros((0, 4, 4, 2), np.int64), np.zeros((0, 4, 4, 2), np.int64), flags=f)

    # ---------------- a category absent from both sides (left out of the means; per class 0)
    p, t = datasets["n3_16x12"]
    for f in (FORMS[0], FORMS[2]):
        e, c = add("category_2_absent_n3_16x12", [0, 1, 2], ST, p, t, flags=f)
        assert c["tp"][2] == c["fp"][2] == c["fn"][2] == 0

    # ---------------- every category absent: target all void (unknown), so preds are all void-covered -> NaN
    p, _ = random_panoptic(rng, 2, 6, 6, TH, ST)
    t = np.zeros_like(p)
    t[..., 0] = 3
    t[..., 1] = rng.integers(0, 4, t.shape[:-1])
    for f in FORMS[:3]:
        e, c = add("target_all_void_n2_6x6", TH, ST, p, t, flags=f)
        assert sum(c["tp"]) + sum(c["fp"]) + sum(c["fn"]) == 0

    # ---------------- IoU exactly 0.5 (2/4 and 50/100: no match) and just above (51/101, 100/199: a match)
    p, t = runs(((0, 5), (6, 0), 1), ((0, 5), (0, 1), 2), ((6, 0), (0, 1), 1),         # 2/4
                ((1, 3), (6, 0), 25), ((1, 3), (1, 4), 50), ((6, 0), (1, 4), 25),    # 50/100
                ((0, 8), (6, 0), 1), ((0, 8), (0, 9), 2))                          # 2/3 (a match)
    e, c = add("iou_exactly_half", TH, ST, p[None], t[None], flags=FORMS[3])
    assert c["ious"][:2] == [0.5, 0.5] and c["tp"][:2] == [1, 0] and c["fp"][:2] == [1, 1] and c["fn"][:2] == [1, 1]
    p, t = runs(((0, 5), (7, 0), 25), ((0, 5), (0, 1), 51), ((7, 0), (0, 1), 25),      # 51/101
                ((1, 3), (7, 0), 49), ((1, 3), (1, 4), 100), ((7, 0), (1, 4), 50),   # 100/199
                ((6, 3), (7, 0), 1), ((6, 3), (6, 9), 3), ((7, 0), (6, 9), 1))       # stuff 3/5, instances collapse
    e, c = add("iou_just_above_half", TH, ST, p[None], t[None], flags=FORMS[3])
    assert c["tp"] == [1, 1, 1, 0] and c["iou_sum"][:2] == [float(np.float32(51 / 101)), float(np.float32(100 / 199))]

    # ---------------- void ratio exactly 0.5 (FP/FN counted) and just above (not counted); void leaves the union
    # target void: category 3; preds void: category 4 (allow_unknown_preds_category=true)
    p, t = runs(((0, 5), (3, 0), 2), ((0, 5), (6, 0), 2),        # pred (0,5): 2/4 in target void -> FP
                ((4, 0), (1, 2), 2), ((7, 0), (1, 2), 2),        # target (1,2): 2/4 predicted void -> FN
                ((1, 8), (3, 1), 50), ((1, 8), (7, 0), 50),      # pred (1,8): 50/100 -> FP
                ((4, 1), (0, 6), 100), ((6, 0), (0, 6), 100))    # target (0,6): 100/200 -> FN
    e, c = add("void_ratio_exactly_half", TH, ST, p[None], t[None], flags=FORMS[3], allow=True)
    assert c["fp"][:2] == [1, 1] and c["fn"][:2] == [1, 1] and sum(c["tp"]) == 0
    p, t = runs(((0, 5), (3, 0), 51), ((0, 5), (6, 0), 50),      # pred (0,5): 51/101 -> not FP
                ((4, 0), (1, 2), 51), ((7, 0), (1, 2), 50),      # target (1,2): 51/101 -> not FN
                ((1, 8), (3, 1), 2), ((1, 8), (7, 0), 1),        # pred (1,8): 2/3 -> not FP
                ((0, 7), (3, 2), 3), ((0, 7), (0, 7), 3), ((4, 2), (0, 7), 2))  # IoU 3/3 once void leaves the union
    e, c = add("void_ratio_just_above_half", TH, ST, p[None], t[None], flags=FORMS[3], allow=True)
    assert c["fp"][:2] == [0, 0] and c["fn"][:2] == [0, 0] and c["tp"][0] == 1 and c["iou_sum"][0] == 1.0

    # ---------------- things only (stuffs=[]), stuffs only (things=[])
    p, t = random_panoptic(rng, 3, 16, 16, [2, 5], [], tvoid=(0, 6), inst_pool=list(range(0, 12)))
    for f in (FORMS[0], FORMS[3]):
        add("things_only_n3_16x16", [2, 5], [], p, t, flags=f)
    p, t = random_panoptic(rng, 3, 16, 16, [], [1, 3, 4], tvoid=(0,))
    for f in (FORMS[0], FORMS[3]):
        add("stuffs_only_n3_16x16", [], [1, 3, 4], p, t, flags=f)

    # ---------------- negative category ids (void colour (5, 0))
    p, t = random_panoptic(rng, 3, 16, 20, [-3, -1], [-7, 4], tvoid=(0, 2, -2))
    for f in (FORMS[0], FORMS[3]):
        add("negative_category_ids_n3_16x20", [-3, -1], [-7, 4], p, t, flags=f)

    # ---------------- duplicate ids (dropped) and unsorted lists (categories sorted): same values as the plain lists
    p, t = datasets["n3_16x12"]
    plain = add("random_n3_16x12_plain_lists", TH, ST, p, t, flags=FORMS[3])[0]
    e = add("duplicate_ids_n3_16x12", [0, 1, 1, 0], [6, 7, 6], p, t, flags=FORMS[3])[0]
    assert e == plain
    e = add("unsorted_ids_n3_16x12", [1, 0], [7, 6], p, t, flags=FORMS[2])[0]
    assert e == [[r[0] for r in plain]]

    # ---------------- instance ids near the int64 limits (things and stuffs)
    pool = [I64_MAX, I64_MAX - 1, I64_MIN, I64_MIN + 1, 0, -1]
    p, t = random_panoptic(rng, 3, 16, 16, TH, ST, tvoid=(3,), inst_pool=pool)
    for img in range(3):  # stuff instance ids at the limits too (they collapse to 0)
        m = np.isin(t[img, ..., 0], ST)
        t[img, ..., 1][m] = np.where(rng.random(m.sum()) < 0.5, I64_MAX, I64_MIN)
        m = np.isin(p[img, ..., 0], ST)
        p[img, ..., 1][m] = np.where(rng.random(m.sum()) < 0.5, I64_MAX - 2, I64_MIN + 2)
    for x in (p, t):
        assert (np.abs(x[..., 1][np.isin(x[..., 0], TH)].astype(np.float64)) > 9e18).any()
    both = np.concatenate([p[..., 1].ravel(), t[..., 1].ravel()])
    assert (both == I64_MAX).any() and (both == I64_MIN).any()
    for f in (FORMS[0], FORMS[3]):
        add("instance_ids_near_int64_limits_n3_16x16", TH, ST, p, t, flags=f)

    # ---------------- int32 inputs
    p, t = random_panoptic(rng, 4, 20, 20, TH, ST, tvoid=(3, 255), inst_pool=[-5, 1, 2, 3, 1000, 2**31 - 1])
    for f in (FORMS[0], FORMS[3]):
        add("int32_n4_20x20", TH, ST, p, t, flags=f, dtype="int32")

    # ---------------- a larger case: 2 x 256 x 256
    p, t = random_panoptic(rng, 2, 256, 256, TH, ST, tvoid=(3,), inst_pool=list(range(1, 10)), n_things=(8, 14),
                           jitter=0.25)
    add("large_n2_256x256", TH, ST, p, t, flags=FORMS[3])

    # ---------------- refused inputs
    why_unknown = ("a pred category in neither things nor stuffs (TorchMetrics raises ValueError: Unknown categories "
                   "found)")
    p, t = datasets["n1_8x8"]
    bad = p.copy()
    bad[0, 3, 4] = [2, 1]
    args = {"things": TH, "stuffs": ST}
    refuse("unknown_pred_category", args, T(bad, "int64"), T(t, "int64"), "preds", why_unknown)
    refuse("unknown_pred_category_int32", args, T(bad, "int32"), T(t, "int32"), "preds", why_unknown + "; int32")
    refuse("things_stuffs_overlap", {"things": [0, 1], "stuffs": [1, 6]}, T(p, "int64"), T(t, "int64"), "things",
           "category 1 is in things and stuffs (TorchMetrics raises ValueError: distinct keys)")
    refuse("things_stuffs_both_empty", {"things": [], "stuffs": []}, T(p, "int64"), T(t, "int64"), "things",
           "no categories (TorchMetrics raises ValueError: at least one of things and stuffs must be non-empty)")
    refuse("shape_mismatch", args, T(p, "int64"), T(t[:, :, :6], "int64"), "target",
           "preds [1, 8, 8, 2] and target [1, 8, 6, 2] (TorchMetrics raises ValueError: same shape)")
    refuse("last_dim_3", args, T(np.concatenate([p, p[..., :1]], -1), "int64"),
           T(np.concatenate([t, t[..., :1]], -1), "int64"), "preds",
           "a last dim of 3 (TorchMetrics raises ValueError: exactly 2 channels)")
    refuse("rank_2", args, T(p.reshape(-1, 2), "int64"), T(t.reshape(-1, 2), "int64"), "preds",
           "[N, 2] without a spatial dim (TorchMetrics raises ValueError: at least one spatial dimension)")
    refuse("float_preds", args, T(p, "float32"), T(t, "int64"), "preds",
           "float preds (Tally accepts integer ids only; TorchMetrics compares float values as ids: a departure)")
    refuse("float_target", args, T(p, "int64"), T(t, "float64"), "target",
           "float target (Tally accepts integer ids only; TorchMetrics compares float values as ids: a departure)")
    return S


def main():
    S = gen()
    S.write_and_report()
    print(f"  {STATS['value']} value cases + {STATS['refused']} refused; docstring values asserted: "
          f"{STATS['docstring_asserts']}")
    print(f"  distinct datasets: candidate pairs {STATS['pairs']}: IoU in [0.4, 0.5] {STATS['near_below']}, "
          f"exactly 0.5 {STATS['iou_half_pairs']}, in (0.5, 0.6] {STATS['near_above']}; TP {STATS['tp']}, "
          f"FP {STATS['fp']}, FN {STATS['fn']}; unmatched segments excused as mostly void {STATS['void_excused']}, "
          f"void ratio exactly 0.5 {STATS['void_half']}")
    print(f"route 1 vs route 2: counts and iou sums identical; largest relative difference of an output value "
          f"{WORST['rel']:.2e}" + (f" ({WORST['case']})" if WORST["case"] else ""))


if __name__ == "__main__":
    main()
