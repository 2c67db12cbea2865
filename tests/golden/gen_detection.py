#!/usr/bin/env python3
"""Golden fixtures for Tally's detection metric `mean_average_precision`.

Regenerate (numpy only; deterministic, fixed seeds):

    /usr/bin/python3 tests/golden/gen_detection.py [OUTPUT.json]

The default output is tests/golden/fixtures/detection.json (the folder is created if missing). It was generated with
numpy 1.24.2.

Semantics: TorchMetrics 1.5.2 `MeanAveragePrecision(box_format="xyxy", iou_type="bbox", iou_thresholds=None,
rec_thresholds=None, max_detection_thresholds=None, class_metrics=False, extended_summary=False, average="macro",
backend="pycocotools")`, i.e. pycocotools' COCOeval (evaluate, accumulate, summarize) run on the datasets
TorchMetrics builds from its inputs. Each rule carries a `# rule:` comment citing the file it was read from: paths
relative to the torchmetrics repo at v1.5.2 (src/torchmetrics/detection/mean_ap.py, detection/helpers.py), to
torchvision (torchvision/ops/boxes.py `box_convert`, ops/_box_convert.py), to ATen (aten/src/ATen/native/cpu/
RangeFactoriesKernel.cpp `linspace_kernel`) or to cocoapi (PythonAPI/pycocotools/cocoeval.py, common/maskApi.c
`bbIou`; the pip `pycocotools` 2.0.x fork has the same cocoeval.py apart from `np.float` -> `float`). Neither
pycocotools, TorchMetrics nor torch is imported.

Where the expected values come from. Two independent routes, asserted to agree to 1e-13 (they agree to about 1e-16):
* Route 1 (`coco_eval`, `summarize`): COCOeval re-written in NumPy, step for step (per image and category:
  detections sorted by score, stable, truncated to maxDets[-1]; bbIou in float64; ground truth ignored last;
  greedy matching per IoU threshold; then accumulate's cumulative tp/fp, the precision envelope, searchsorted on the
  recall thresholds, and summarize's 12 means over the entries > -1) on TorchMetrics' datasets (boxes converted to
  xywh in the input dtype, as torchvision does; areas, iscrowd, image ids, categories as mean_ap.py builds them).
  `expected` is this route's value.
* Route 2 (`brute_force`): written from the rules, not from the code: corner boxes in float64 straight from the
  widened inputs, one (class, area range, max detections, IoU threshold) at a time, explicit sort keys
  (-score, image, slot), two-phase matching (best unmatched regular ground truth, else best ignored one), the
  interpolated precision as a max over the points at or beyond each recall threshold, and the means with math.fsum.
Route 1 is also checked against printed values: the MeanAveragePrecision docstring example (to the 4 printed
digits), the pycocotools summary quoted in TorchMetrics' old tests for their `_inputs` (3 digits, all 12 stats and
the per-class values; reproduced with pycocotools' own float64 recall thresholds, while TorchMetrics' float32 ones
give a different map_75 and class-0 map, see Thresholds), and the asserted outcomes of TorchMetrics' tests
(`test_for_box_format`, `test_many_detection_thresholds`, `test_missing_pred`, `test_missing_gt`).

Thresholds. TorchMetrics' default IoU and recall thresholds are float32 `torch.linspace(0.5, 0.95, 10)` and
`torch.linspace(0.0, 1.0, 101)` (widened to float64), not pycocotools' float64 np.linspace. The 10 IoU thresholds are
the nearest float32 values (e.g. 0.550000011920929) under every candidate kernel. Recall thresholds: `expected` uses
ATen's scalar kernel (torch >= 2.1; `aten_linspace_f32`), but the last bits of several values depend on the torch
build (FMA contraction, 1.13's vectorized kernel), so every case with default rec_thresholds is checked under seven
candidate sets (ATen scalar without and with FMA, 8- and 16-lane vectorized models, the nearest float32 of j/100,
numpy's float64 linspace, j/100 in float64) and gives bit-identical numbers under all of them (asserted), except the
cases named `quirk_f32_recall_thresholds_*`: those give one value under all four ATen models and another under the
float64 sets (TorchMetrics' float32 thresholds drop a recall point that pycocotools alone keeps; asserted both ways).
A denominator npig without the factor 5 makes the invariance automatic (k/npig = j/100 then needs j in
{0, 25, 50, 75, 100}); the random scenes drop ground truth until no class/area count is a multiple of 5. The
generator also refuses IoUs within 1e-9 of a threshold (an exact tie is allowed only at a threshold that float32
represents exactly, e.g. 0.5, 0.75, 0.625) and areas within 1e-6 (relative) of 32^2, 96^2 and 1e10 unless exactly
equal, so a float64 implementation that converts boxes in another order lands on the same values (route 2 is one).

Tolerances: 0. Every value is a mean of float64 ratios tp / (tp + fp + 2^-52) that NumPy sums pairwise (blocks of 8
up to 128 elements, halves above, over buffers of 8192); an implementation that sums the same selection in the same
order gets the same bits.
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as g  # noqa: E402
from gen_fixtures import Refused, T, Suite, spec  # noqa: E402

M = "mean_average_precision"
RT, AT = 0.0, 0.0
ROUTE_TOL = 1e-13
WORST = {"diff": 0.0, "case": None}
F32 = np.float32

# rule: pycocotools cocoeval.py Params.setDetParams: areaRng [0^2, 1e5^2], [0^2, 32^2], [32^2, 96^2], [96^2, 1e5^2]
# labelled all/small/medium/large (inclusive bounds: a gt is ignored when area < lo or area > hi)
AREA_RNG = [(0.0, 1e5**2), (0.0, 32.0**2), (32.0**2, 96.0**2), (96.0**2, 1e5**2)]
AREA_LBL = ["all", "small", "medium", "large"]


# --------------------------------------------------------------------------------------------------------------------
# thresholds
# --------------------------------------------------------------------------------------------------------------------
def aten_linspace_f32(start, end, steps, mode="scalar"):
    """float32 torch.linspace(start, end, steps) on the CPU, modelled in numpy float32 arithmetic.

    # rule: aten/src/ATen/native/cpu/RangeFactoriesKernel.cpp linspace_kernel (torch 2.x): step = (end - start) /
    # (steps - 1) in float; idx < steps / 2: start + step * idx, else end - step * (steps - idx - 1)
    mode "scalar": each product and sum rounded to float32; "fma": the product-sum rounded once (a compiler that
    contracts to FMA); "vec8"/"vec16": 1.13's vectorized kernel (Vectorized::arange(base, step) from each vector's
    first index, 2 vectors per loop, scalar tail), with 8 or 16 lanes.
    """
    start, end = F32(start), F32(end)
    step = F32((end - start) / F32(steps - 1))
    half = steps // 2

    def one(i):
        if mode == "fma":
            if i < half:
                return F32(np.float64(start) + np.float64(step) * i)
            return F32(np.float64(end) - np.float64(step) * (steps - i - 1))
        if i < half:
            return F32(start + F32(step * F32(i)))
        return F32(end - F32(step * F32(steps - i - 1)))

    if mode in ("scalar", "fma"):
        return np.array([one(i) for i in range(steps)], np.float32)
    lanes = 8 if mode == "vec8" else 16
    out = [None] * steps
    nvec = (steps // (2 * lanes)) * 2 * lanes
    for base_i in range(0, nvec, lanes):
        base = one(base_i)
        for k in range(lanes):
            out[base_i + k] = F32(base + F32(F32(k) * step))
    for i in range(nvec, steps):
        out[i] = one(i)
    return np.array(out, np.float32)


def _f64_list(a):
    return [float(x) for x in np.asarray(a, np.float64)]


# rule: mean_ap.py __init__: iou_thresholds or torch.linspace(0.5, 0.95, round((0.95 - 0.5) / 0.05) + 1).tolist()
# (float32, the torch default dtype); handed to COCOeval as np.array(..., dtype=np.float64)
DEFAULT_IOU = _f64_list(aten_linspace_f32(0.5, 0.95, 10))
for _m in ("fma", "vec8", "vec16"):
    assert _f64_list(aten_linspace_f32(0.5, 0.95, 10, _m)) == DEFAULT_IOU
assert DEFAULT_IOU == [float(F32(x)) for x in np.linspace(0.5, 0.95, 10)]
assert DEFAULT_IOU[0] == 0.5 and DEFAULT_IOU[5] == 0.75
# rule: mean_ap.py __init__: rec_thresholds or torch.linspace(0.0, 1.00, round(1.00 / 0.01) + 1).tolist()
REC_VARIANTS = {
    "aten_scalar": _f64_list(aten_linspace_f32(0.0, 1.0, 101)),
    "aten_fma": _f64_list(aten_linspace_f32(0.0, 1.0, 101, "fma")),
    "aten_vec8": _f64_list(aten_linspace_f32(0.0, 1.0, 101, "vec8")),
    "aten_vec16": _f64_list(aten_linspace_f32(0.0, 1.0, 101, "vec16")),
    "nearest_f32": [float(F32(j / 100)) for j in range(101)],
    "numpy_f64": _f64_list(np.linspace(0.0, 1.0, 101)),
    "exact_f64": [j / 100 for j in range(101)],
}
DEFAULT_REC = REC_VARIANTS["aten_scalar"]
IOU_CANDIDATES = sorted(set(DEFAULT_IOU) | set(_f64_list(np.linspace(0.5, 0.95, 10))))


# --------------------------------------------------------------------------------------------------------------------
# inputs: Tally's padded rows
# --------------------------------------------------------------------------------------------------------------------
class Img:
    """One image: dets = [(box4, score, label)], gts = [(box4, label[, iscrowd[, area]])] in slot order."""

    def __init__(self, dets=(), gts=()):
        self.dets = [list(d) for d in dets]
        self.gts = [list(t) for t in gts]


def make_inputs(imgs, dtype="float32", crowd=False, area=False, score_dtype=None, pad_every=None):
    """Pads the images into Tally's tensors (label -1 = padding; box 0, score 0 there).

    pad_every=k puts a padding slot after every k valid slots (scattered padding)."""
    score_dtype = score_dtype or dtype

    def slots(items):
        if not pad_every:
            return list(items)
        out = []
        for i, it in enumerate(items):
            out.append(it)
            if (i + 1) % pad_every == 0:
                out.append(None)
        return out

    drows = [slots(im.dets) for im in imgs]
    grows = [slots(im.gts) for im in imgs]
    n = len(imgs)
    D = max([1] + [len(r) for r in drows])
    G = max([1] + [len(r) for r in grows])
    boxes = np.zeros((n, D, 4))
    scores = np.zeros((n, D))
    labels = -np.ones((n, D), np.int64)
    tb = np.zeros((n, G, 4))
    tl = -np.ones((n, G), np.int64)
    tc = np.zeros((n, G), np.int64)
    ta = np.zeros((n, G))
    for i in range(n):
        for s, d in enumerate(drows[i]):
            if d is None:
                continue
            boxes[i, s], scores[i, s], labels[i, s] = d[0], d[1], d[2]
        for s, t in enumerate(grows[i]):
            if t is None:
                continue
            tb[i, s], tl[i, s] = t[0], t[1]
            tc[i, s] = t[2] if len(t) > 2 else 0
            ta[i, s] = t[3] if len(t) > 3 else 0.0
    inp = {"boxes": T(boxes, dtype), "scores": T(scores, score_dtype), "labels": T(labels, "int64"),
           "target_boxes": T(tb, dtype), "target_labels": T(tl, "int64")}
    if crowd:
        inp["target_iscrowd"] = T(tc, "int64")
    if area:
        inp["target_area"] = T(ta, dtype)
    # the values as stored must be the values meant (a grid that float32 holds exactly, or float64 data)
    return inp


def tv_box_convert(b, fmt):
    """torchvision box_convert(b, in_fmt=fmt, out_fmt='xywh') in b's dtype."""
    one_half = b.dtype.type(0.5)
    # rule: torchvision ops/boxes.py box_convert: same format -> clone; cxcywh -> xyxy first (in_fmt != xyxy and
    # out_fmt != xyxy), then xyxy -> xywh
    if fmt == "xywh":
        return b.copy()
    if fmt == "cxcywh":
        # rule: torchvision ops/_box_convert.py _box_cxcywh_to_xyxy: x1 = cx - 0.5 * w, x2 = cx + 0.5 * w (same for y)
        cx, cy, w, h = b
        x1, y1, x2, y2 = cx - one_half * w, cy - one_half * h, cx + one_half * w, cy + one_half * h
    else:
        x1, y1, x2, y2 = b
    # rule: torchvision ops/_box_convert.py _box_xyxy_to_xywh: w = x2 - x1, h = y2 - y1 (in the tensor's dtype)
    return np.array([x1, y1, x2 - x1, y2 - y1], dtype=b.dtype)


def tm_images(inp, box_format="xyxy"):
    """What TorchMetrics' update + _get_coco_format make of Tally's rows: per image, detection and ground-truth
    annotations (xywh boxes as Python floats, areas, iscrowd), in slot order, padding dropped."""
    B, S, L = inp["boxes"].a, inp["scores"].a, inp["labels"].a
    TB, TL = inp["target_boxes"].a, inp["target_labels"].a
    TC = inp["target_iscrowd"].a if "target_iscrowd" in inp else None
    TA = inp["target_area"].a if "target_area" in inp else None
    imgs = []
    did = gid = 0
    for n in range(B.shape[0]):
        dts, gts = [], []
        for s in range(B.shape[1]):
            if L[n, s] == -1:
                continue
            # rule: mean_ap.py _get_safe_item_values: boxes = box_convert(boxes, in_fmt=box_format, out_fmt="xywh");
            # _get_coco_format: .tolist() (float64 of the stored values), area = w * h for detections
            xywh = [float(v) for v in tv_box_convert(B[n, s], box_format)]
            did += 1
            # rule: cocoeval.py evaluateImg/accumulate use the ids only as "matched" markers (> 0); ids start at 1
            dts.append({"id": did, "bbox": xywh, "score": float(S[n, s]), "label": int(L[n, s]),
                        "area": xywh[2] * xywh[3], "slot": s})
        for s in range(TB.shape[1]):
            if TL[n, s] == -1:
                continue
            xywh = [float(v) for v in tv_box_convert(TB[n, s], box_format)]
            # rule: mean_ap.py _get_coco_format: area = given area if area > 0 else w * h (update stores
            # zeros_like(labels) when the target has no "area"); iscrowd defaults to zeros_like(labels)
            given = float(TA[n, s]) if TA is not None else 0.0
            area = given if given > 0 else xywh[2] * xywh[3]
            gid += 1
            gts.append({"id": gid, "bbox": xywh, "label": int(TL[n, s]),
                        "iscrowd": int(TC[n, s]) if TC is not None else 0, "area": area, "slot": s})
        imgs.append({"dt": dts, "gt": gts})
    return imgs


# --------------------------------------------------------------------------------------------------------------------
# route 1: COCOeval step for step
# --------------------------------------------------------------------------------------------------------------------
def bb_iou(d, gt_boxes, crowd):
    """IoU [D, G] of xywh boxes as pycocotools' bbIou computes it."""
    if len(d) == 0 or len(gt_boxes) == 0:
        return np.zeros((len(d), len(gt_boxes)))
    D = np.asarray(d, np.float64)[:, None, :]
    Gb = np.asarray(gt_boxes, np.float64)[None, :, :]
    # rule: common/maskApi.c bbIou: ga = w*h, da = w*h; iw = min(x+w) - max(x), ih likewise, <= 0 -> 0;
    # i = iw*ih; u = crowd ? da : da + ga - i; o = i / u
    da = D[..., 2] * D[..., 3]
    ga = Gb[..., 2] * Gb[..., 3]
    w = np.minimum(D[..., 2] + D[..., 0], Gb[..., 2] + Gb[..., 0]) - np.maximum(D[..., 0], Gb[..., 0])
    h = np.minimum(D[..., 3] + D[..., 1], Gb[..., 3] + Gb[..., 1]) - np.maximum(D[..., 1], Gb[..., 1])
    inter = w * h
    u = np.where(np.asarray(crowd, bool)[None, :], da, da + ga - inter)
    with np.errstate(divide="ignore", invalid="ignore"):
        o = inter / u
    return np.where((w > 0) & (h > 0), o, 0.0)


def evaluate_img(gts, dts, ious, lo, hi, thrs):
    """cocoeval.py evaluateImg for one image/category/area range (dts already sorted and truncated)."""
    # rule: cocoeval.py _prepare: gt ignore = iscrowd; evaluateImg: _ignore = ignore or area < lo or area > hi
    gt_ig = np.array([1 if (gt["iscrowd"] or gt["area"] < lo or gt["area"] > hi) else 0 for gt in gts], np.int64)
    # rule: cocoeval.py evaluateImg: gt sorted by _ignore (mergesort: regular first, then ignored, slot order kept)
    gtind = np.argsort(gt_ig, kind="mergesort")
    gt_ig = gt_ig[gtind]
    crowd = [gts[j]["iscrowd"] for j in gtind]
    gt_id = [gts[j]["id"] for j in gtind]
    io = ious[:, gtind] if ious.size else ious
    nt, ng, nd = len(thrs), len(gts), len(dts)
    gtm = np.zeros((nt, ng))
    dtm = np.zeros((nt, nd))
    dt_ig = np.zeros((nt, nd), bool)
    if ng and nd:
        for ti, t in enumerate(thrs):
            for di in range(nd):
                # rule: cocoeval.py evaluateImg: iou = min(t, 1 - 1e-10); best match so far m = -1
                best = min(t, 1 - 1e-10)
                m = -1
                for gi in range(ng):
                    # rule: skip a gt already matched unless it is a crowd
                    if gtm[ti, gi] > 0 and not crowd[gi]:
                        continue
                    # rule: once matched to a regular gt, stop at the first ignored one
                    if m > -1 and gt_ig[m] == 0 and gt_ig[gi] == 1:
                        break
                    # rule: continue unless iou >= the best so far (ties: the later gt wins)
                    if io[di, gi] < best:
                        continue
                    best = io[di, gi]
                    m = gi
                if m == -1:
                    continue
                # rule: a detection matched to an ignored gt is ignored
                dt_ig[ti, di] = bool(gt_ig[m])
                dtm[ti, di] = gt_id[m]
                gtm[ti, m] = dts[di]["id"]
    # rule: cocoeval.py evaluateImg: unmatched detections with area outside [lo, hi] are ignored
    out = np.array([d["area"] < lo or d["area"] > hi for d in dts], bool).reshape(1, nd)
    dt_ig = np.logical_or(dt_ig, np.logical_and(dtm == 0, np.repeat(out, nt, 0)))
    return {"scores": np.array([d["score"] for d in dts], np.float64), "dtm": dtm, "dt_ig": dt_ig, "gt_ig": gt_ig}


def evaluate_all(imgs, cat_ids, iou_thrs, max_dets, micro=False):
    """evaluateImg of every (category index, area range index, image index) that has gt or dt of the category."""
    cat_set = set(cat_ids)
    # rule: mean_ap.py _get_coco_datasets: average="micro" sets every label to 0 (categories stay the classes seen)
    # rule: cocoeval.py _prepare: getAnnIds(imgIds, catIds) keeps annotations whose category is in catIds, grouped
    # by (image_id, category_id) in dataset (= slot) order
    groups = {}
    for i, im in enumerate(imgs):
        for kind in ("gt", "dt"):
            for a in im[kind]:
                c = 0 if micro else a["label"]
                if c in cat_set:
                    groups.setdefault((i, c), {"gt": [], "dt": []})[kind].append(a)
    ev = {}
    for k, c in enumerate(cat_ids):
        for i in range(len(imgs)):
            grp = groups.get((i, c))
            if grp is None:
                continue  # rule: evaluateImg returns None when the image has neither gt nor dt of the category
            gts, dts = grp["gt"], grp["dt"]
            # rule: cocoeval.py computeIoU/evaluateImg: dts sorted by -score (mergesort, stable), first maxDets[-1]
            order = np.argsort([-d["score"] for d in dts], kind="mergesort")[: max_dets[-1]]
            dts = [dts[j] for j in order]
            ious = bb_iou([d["bbox"] for d in dts], [gt["bbox"] for gt in gts], [gt["iscrowd"] for gt in gts])
            for a, (lo, hi) in enumerate(AREA_RNG):
                ev[k, a, i] = evaluate_img(gts, dts, ious, lo, hi, iou_thrs)
    return ev


def curve(precision, recall, t, k, a, m, tp, fp, npig, rec_thrs):
    """accumulate's per-threshold step on one curve (tp, fp: cumulative float arrays)."""
    nd = len(tp)
    # rule: rc = tp / npig; pr = tp / (fp + tp + np.spacing(1)); recall = rc[-1] (0 without dets)
    rc = tp / npig
    pr = (tp / (fp + tp + np.spacing(1))).tolist()
    recall[t, k, a, m] = rc[-1] if nd else 0
    # rule: precision envelope, max from the right
    for i in range(nd - 1, 0, -1):
        if pr[i] > pr[i - 1]:
            pr[i - 1] = pr[i]
    # rule: q[r] = pr[searchsorted(rc, recThrs, side="left")]; the first index past the end stops
    # the loop (try/except), leaving that and every later q at 0
    q = np.zeros(len(rec_thrs))
    for ri, pi in enumerate(np.searchsorted(rc, rec_thrs, side="left")):
        if pi >= nd:
            break
        q[ri] = pr[pi]
    precision[t, :, k, a, m] = q


def coco_eval(imgs, cat_ids, iou_thrs, rec_thrs, max_dets, micro=False):
    """evaluate + accumulate -> precision [T, R, K, A, M], recall [T, K, A, M]."""
    nt, nr, nk, na, nm = len(iou_thrs), len(rec_thrs), len(cat_ids), len(AREA_RNG), len(max_dets)
    ev = evaluate_all(imgs, cat_ids, iou_thrs, max_dets, micro)
    precision = -np.ones((nt, nr, nk, na, nm))
    recall = -np.ones((nt, nk, na, nm))
    for k in range(nk):
        for a in range(na):
            E = [ev[k, a, i] for i in range(len(imgs)) if (k, a, i) in ev]
            if not E:
                continue
            for m, md in enumerate(max_dets):
                # rule: cocoeval.py accumulate: each image's first maxDet detections, concatenated in image order,
                # sorted by -score with mergesort (ties: image order, then the image's own order)
                sc = np.concatenate([e["scores"][:md] for e in E])
                inds = np.argsort(-sc, kind="mergesort")
                dtm = np.concatenate([e["dtm"][:, :md] for e in E], axis=1)[:, inds]
                dt_ig = np.concatenate([e["dt_ig"][:, :md] for e in E], axis=1)[:, inds]
                gt_ig = np.concatenate([e["gt_ig"] for e in E])
                npig = np.count_nonzero(gt_ig == 0)
                if npig == 0:
                    continue  # rule: -1 stays where the category has no regular gt in the area range
                tps = np.logical_and(dtm, np.logical_not(dt_ig))
                fps = np.logical_and(np.logical_not(dtm), np.logical_not(dt_ig))
                tp_sum = np.cumsum(tps, axis=1).astype(float)
                fp_sum = np.cumsum(fps, axis=1).astype(float)
                for t in range(nt):
                    curve(precision, recall, t, k, a, m, tp_sum[t], fp_sum[t], npig, rec_thrs)
    return precision, recall


def summarize(precision, recall, iou_thrs, max_dets):
    """cocoeval.py summarize (_summarizeDets) -> the 12 stats."""
    iou_arr = np.asarray(iou_thrs, np.float64)

    def _s(ap, iou_thr=None, area="all", md=100):
        # rule: cocoeval.py _summarize(ap=1, iouThr=None, areaRng='all', maxDets=100): aind/mind by equality, so a
        # maxDets value not among params.maxDets selects nothing (-> -1)
        aind = [i for i, lbl in enumerate(AREA_LBL) if lbl == area]
        mind = [i for i, x in enumerate(max_dets) if x == md]
        if ap:
            s = precision
            if iou_thr is not None:
                s = s[np.where(iou_thr == iou_arr)[0]]
            s = s[:, :, :, aind, mind]
        else:
            s = recall
            if iou_thr is not None:
                s = s[np.where(iou_thr == iou_arr)[0]]
            s = s[:, :, aind, mind]
        # rule: mean over the entries > -1, -1 when there are none
        return -1.0 if len(s[s > -1]) == 0 else float(np.mean(s[s > -1]))

    md = max_dets
    # rule: cocoeval.py _summarizeDets: stats[0] = _summarize(1) (maxDets=100 hard-wired), stats[1..5] and [9..11]
    # at maxDets[2], stats[6..8] = AR at maxDets[0], [1], [2]
    return [_s(1), _s(1, 0.5, md=md[2]), _s(1, 0.75, md=md[2]), _s(1, area="small", md=md[2]),
            _s(1, area="medium", md=md[2]), _s(1, area="large", md=md[2]), _s(0, md=md[0]), _s(0, md=md[1]),
            _s(0, md=md[2]), _s(0, area="small", md=md[2]), _s(0, area="medium", md=md[2]),
            _s(0, area="large", md=md[2])]


def tm_settings(args):
    iou = list(args.get("iou_thresholds") or DEFAULT_IOU)
    rec = list(args.get("rec_thresholds") or DEFAULT_REC)
    # rule: mean_ap.py __init__: max_detection_thresholds sorted (torch.sort of an int tensor), default [1, 10, 100]
    md = sorted(args.get("max_detection_thresholds") or [1, 10, 100])
    return iou, rec, md


def tm_keys(args):
    md = tm_settings(args)[2]
    # rule: mean_ap.py _coco_stats_to_tensor_dict and compute: key order map, map_50, map_75, map_small, map_medium,
    # map_large, mar_{mdt[0]}, mar_{mdt[1]}, mar_{mdt[2]}, mar_small, mar_medium, mar_large, then map_per_class,
    # mar_{mdt[2]}_per_class, classes
    return ["map", "map_50", "map_75", "map_small", "map_medium", "map_large", f"mar_{md[0]}", f"mar_{md[1]}",
            f"mar_{md[2]}", "mar_small", "mar_medium", "mar_large", "map_per_class", f"mar_{md[2]}_per_class",
            "classes"]


def classes_of(imgs):
    # rule: mean_ap.py _get_classes: torch.cat(detection_labels + groundtruth_labels).unique() (sorted)
    return sorted({a["label"] for im in imgs for kind in ("dt", "gt") for a in im[kind]})


def tm_compute(imgs, args, rec_override=None):
    iou, rec, md = tm_settings(args)
    if rec_override is not None:
        rec = rec_override
    classes = classes_of(imgs)
    micro = args.get("average", "macro") == "micro"
    prec, recl = coco_eval(imgs, classes, iou, rec, md, micro=micro)
    stats = summarize(prec, recl, iou, md)
    if args.get("class_metrics"):
        # rule: mean_ap.py compute: class_metrics re-builds the datasets with average="macro" and runs COCOeval with
        # params.catIds = [class_id] for each class: stats[0] -> map_per_class, stats[8] -> mar_{mdt[2]}_per_class.
        # COCOeval evaluates each category on its own, so that run equals the macro run's slice for the class.
        if micro:
            prec, recl = coco_eval(imgs, classes, iou, rec, md, micro=False)
        per_map, per_mar = [], []
        for k in range(len(classes)):
            st = summarize(prec[:, :, k:k + 1], recl[:, k:k + 1], iou, md)
            per_map.append(st[0])
            per_mar.append(st[8])
    else:
        # rule: mean_ap.py compute: without class_metrics both per-class entries are tensor([-1])
        per_map = per_mar = -1.0
    return stats + [per_map, per_mar, classes]


# --------------------------------------------------------------------------------------------------------------------
# route 2: brute force from the rules
# --------------------------------------------------------------------------------------------------------------------
def corners_f64(b, fmt):
    b = [float(v) for v in b]
    if fmt == "xywh":
        return b[0], b[1], b[0] + b[2], b[1] + b[3]
    if fmt == "cxcywh":
        return b[0] - b[2] / 2, b[1] - b[3] / 2, b[0] + b[2] / 2, b[1] + b[3] / 2
    return tuple(b)


def brute_rows(inp, box_format="xyxy", bin_of=None):
    """Detections and ground truth as dicts (float64 corners), the classes seen and the image count; with bin_of,
    each detection also carries bin_of(score) (gen_detection_bins.py)."""
    B, S, L = inp["boxes"].f64, inp["scores"].f64, inp["labels"].a
    TB, TL = inp["target_boxes"].f64, inp["target_labels"].a
    TC = inp["target_iscrowd"].a if "target_iscrowd" in inp else np.zeros(TL.shape, np.int64)
    TA = inp["target_area"].f64 if "target_area" in inp else np.zeros(TL.shape)
    n_img = B.shape[0]
    dets, gts = [], []
    for n in range(n_img):
        for s in range(B.shape[1]):
            if L[n, s] != -1:
                x1, y1, x2, y2 = corners_f64(B[n, s], box_format)
                d = dict(img=n, slot=s, box=(x1, y1, x2, y2), area=(x2 - x1) * (y2 - y1), score=S[n, s],
                         label=int(L[n, s]))
                if bin_of is not None:
                    d["score"] = float(S[n, s])
                    d["bin"] = bin_of(d["score"])
                dets.append(d)
        for s in range(TB.shape[1]):
            if TL[n, s] != -1:
                x1, y1, x2, y2 = corners_f64(TB[n, s], box_format)
                a = TA[n, s] if TA[n, s] > 0 else (x2 - x1) * (y2 - y1)
                gts.append(dict(img=n, slot=s, box=(x1, y1, x2, y2), area=a, crowd=bool(TC[n, s]),
                                label=int(TL[n, s])))
    classes = sorted({d["label"] for d in dets} | {t["label"] for t in gts})
    return dets, gts, classes, n_img


def brute_iou(d, t):
    iw = min(d["box"][2], t["box"][2]) - max(d["box"][0], t["box"][0])
    ih = min(d["box"][3], t["box"][3]) - max(d["box"][1], t["box"][1])
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    return inter / (d["area"] if t["crowd"] else d["area"] + (t["box"][2] - t["box"][0]) *
                    (t["box"][3] - t["box"][1]) - inter)


def brute_match(d, gl, ign, taken, lo, hi, cap):
    """'tp', 'fp' or 'ign' for detection d against one image's ground truth gl (ign: which are ignored; taken: the
    regular ones matched so far, updated), evaluateImg's rule at IoU cap."""
    ious = [brute_iou(d, t) for t in gl]
    reg = [j for j in range(len(gl)) if not ign[j] and j not in taken and ious[j] >= cap]
    if reg:
        top = max(ious[j] for j in reg)
        taken.add([j for j in reg if ious[j] == top][-1])
        return "tp"
    ig = [j for j in range(len(gl)) if ign[j] and (gl[j]["crowd"] or j not in taken) and ious[j] >= cap]
    if ig:
        top = max(ious[j] for j in ig)
        j = [j for j in ig if ious[j] == top][-1]
        if not gl[j]["crowd"]:
            taken.add(j)
        return "ign"
    return "fp" if lo <= d["area"] <= hi else "ign"


def brute_ap(pts, final_rc, rec_thrs):
    """The mean precision at the recall thresholds of curve pts [(recall, precision)], the envelope taken by max."""
    qs = []
    stopped = False
    for r in rec_thrs:
        # the first threshold above the final recall ends the list (pycocotools' try/except)
        stopped = stopped or r > final_rc
        qs.append(0.0 if stopped else max((p for rc, p in pts if rc >= r), default=0.0))
    return math.fsum(qs) / len(qs)


def brute_stats(groups, per_class, mds, iou_thrs):
    """The twelve summary values over groups ({(area, maxdet, thr index): (ap, recall) or None}) and, from
    per_class (None: without class_metrics), map and mar per class."""
    def stat(gs, ap, area=0, md=100, thr=None):
        if md not in mds:
            return -1.0
        vals = [r[area, md, ti][0 if ap else 1] for r in gs for ti, t in enumerate(iou_thrs)
                if (thr is None or t == thr) and r[area, md, ti] is not None]
        return math.fsum(vals) / len(vals) if vals else -1.0

    def stats12(gs):
        m3 = mds[2]
        return [stat(gs, 1), stat(gs, 1, md=m3, thr=0.5), stat(gs, 1, md=m3, thr=0.75),
                stat(gs, 1, 1, m3), stat(gs, 1, 2, m3), stat(gs, 1, 3, m3),
                stat(gs, 0, md=mds[0]), stat(gs, 0, md=mds[1]), stat(gs, 0, md=m3),
                stat(gs, 0, 1, m3), stat(gs, 0, 2, m3), stat(gs, 0, 3, m3)]

    out = stats12(groups)
    if per_class is not None:
        per = [stats12([r]) for r in per_class]
        return out + [[p[0] for p in per], [p[8] for p in per]]
    return out + [-1.0, -1.0]


def brute_force(inp, args, box_format="xyxy"):
    iou_thrs, rec_thrs, mds = tm_settings(args)
    dets, gts, classes, n_img = brute_rows(inp, box_format)

    def evaluate(group_dets, group_gts):
        """{(area, maxdet, thr index): (ap, recall)} for one class (or the pooled micro class); None: no regular gt."""
        res = {}
        by_img_d = {n: sorted([d for d in group_dets if d["img"] == n], key=lambda d: (-d["score"], d["slot"]))
                    for n in range(n_img)}
        by_img_g = {n: sorted([t for t in group_gts if t["img"] == n], key=lambda t: t["slot"]) for n in range(n_img)}
        for a, (lo, hi) in enumerate(AREA_RNG):
            npig = sum(1 for t in group_gts if not t["crowd"] and lo <= t["area"] <= hi)
            for md in mds:
                for ti, thr in enumerate(iou_thrs):
                    if npig == 0:
                        res[a, md, ti] = None
                        continue
                    cap = min(thr, 1 - 1e-10)
                    pooled = []
                    for n in range(n_img):
                        gl = by_img_g[n]
                        ign = [t["crowd"] or not (lo <= t["area"] <= hi) for t in gl]
                        taken = set()
                        for rank, d in enumerate(by_img_d[n][:md]):
                            pooled.append(((-d["score"], n, rank), brute_match(d, gl, ign, taken, lo, hi, cap)))
                    pooled.sort(key=lambda p: p[0])
                    tp = fp = 0
                    pts = []
                    for _, st in pooled:
                        if st == "ign":
                            continue
                        tp += st == "tp"
                        fp += st == "fp"
                        pts.append((tp / npig, tp / (tp + fp + 2.0**-52)))
                    final_rc = tp / npig
                    res[a, md, ti] = (brute_ap(pts, final_rc, rec_thrs), final_rc)
        return res

    def by_class():
        return [evaluate([d for d in dets if d["label"] == c], [t for t in gts if t["label"] == c]) for c in classes]

    micro = args.get("average") == "micro"
    per_group = ([evaluate(dets, gts)] if 0 in classes else []) if micro else by_class()
    per_class = (by_class() if micro else per_group) if args.get("class_metrics") else None
    return brute_stats(per_group, per_class, mds, iou_thrs) + [classes]


# --------------------------------------------------------------------------------------------------------------------
# guards
# --------------------------------------------------------------------------------------------------------------------
def _iou_near(v, thrs):
    for t in thrs:
        if abs(v - t) <= 1e-9:
            if v == t and float(F32(t)) == t:
                continue  # an exact tie at a threshold float32 holds exactly: the same in every implementation
            return True
    return False


def fragile_pairs(imgs, thrs):
    """(image, dt index, gt index) whose IoU (either formula) lies within 1e-9 of a threshold candidate."""
    bad = []
    for i, im in enumerate(imgs):
        if not im["dt"] or not im["gt"]:
            continue
        gb = [gt["bbox"] for gt in im["gt"]]
        for crowd in (False, True):
            o = bb_iou([d["bbox"] for d in im["dt"]], gb, [crowd] * len(gb))
            for di in range(o.shape[0]):
                for gi in range(o.shape[1]):
                    if crowd == bool(im["gt"][gi]["iscrowd"]) and _iou_near(o[di, gi], thrs):
                        bad.append((i, di, gi))
    return bad


def fragile_areas(imgs):
    bounds = (32.0**2, 96.0**2, 1e5**2)
    return [(i, a["area"]) for i, im in enumerate(imgs) for kind in ("dt", "gt") for a in im[kind]
            for b in bounds if a["area"] != b and abs(a["area"] - b) <= 1e-6 * b]


def check_case(name, inp, args, box_format):
    imgs = tm_images(inp, box_format)
    iou, rec, md = tm_settings(args)
    thr_cands = IOU_CANDIDATES if not args.get("iou_thresholds") else sorted(set(iou))
    bad = fragile_pairs(imgs, thr_cands)
    assert not bad, f"{name}: IoU within 1e-9 of a threshold: {bad[:5]}"
    bad = fragile_areas(imgs)
    assert not bad, f"{name}: area within 1e-6 of an area-range bound: {bad[:5]}"
    r1 = tm_compute(imgs, args)
    if not args.get("rec_thresholds"):
        differ = []
        for vname, thr in REC_VARIANTS.items():
            if json.dumps(tm_compute(imgs, args, rec_override=thr)) != json.dumps(r1):
                differ.append(vname)
        if "quirk_f32_recall" in name:
            # deliberate: TorchMetrics' float32 thresholds (every ATen model alike) differ from float64 ones here
            assert not any(v.startswith("aten") for v in differ) and "exact_f64" in differ, (name, differ)
        else:
            assert not differ, f"{name}: recall thresholds {differ} change the result"
    r2 = brute_force(inp, args, box_format)
    assert r1[-1] == r2[-1], (name, r1[-1], r2[-1])
    for a, b in zip(_flat(r1[:-1]), _flat(r2[:-1])):
        d = abs(a - b)
        if d > WORST["diff"]:
            WORST.update(diff=d, case=name)
        assert d <= ROUTE_TOL, f"{name}: routes differ: {r1} vs {r2}"
    assert len(_flat(r1[:-1])) == len(_flat(r2[:-1]))
    return r1


def _flat(x):
    out = []
    for v in x:
        out.extend(v if isinstance(v, list) else [v])
    return out


# --------------------------------------------------------------------------------------------------------------------
# random scenes (coordinates on a 1/4 grid: every float32 conversion step is exact)
# --------------------------------------------------------------------------------------------------------------------
def q4(x):
    return np.round(np.asarray(x, np.float64) * 4) / 4


def scene(rng, n_img, classes, n_gt=(0, 6), dets_per_gt=(0, 2), fp_mean=1.5, crowd_p=0.0, wrong_label_p=0.05,
          sizes=(0.4, 0.35, 0.25), img_size=640, empty_p=0.1, max_dets=None):
    imgs = []
    for _ in range(n_img):
        gts, dets = [], []
        ng = 0 if rng.random() < empty_p else int(rng.integers(n_gt[0], n_gt[1] + 1))
        for _ in range(ng):
            c = int(rng.choice(classes))
            kind = rng.choice(3, p=sizes)
            side = [rng.uniform(6, 31), rng.uniform(33, 95), rng.uniform(97, 360)][kind]
            aspect = rng.uniform(0.6, 1.6)
            w, h = q4(max(1.0, side * math.sqrt(aspect))), q4(max(1.0, side / math.sqrt(aspect)))
            x, y = q4(rng.uniform(0, img_size - w)), q4(rng.uniform(0, img_size - h))
            crowd = int(rng.random() < crowd_p)
            gts.append([(x, y, x + w, y + h), c, crowd])
            for _ in range(int(rng.integers(dets_per_gt[0], dets_per_gt[1] + 1))):
                j = rng.normal(0, 0.1, 4) * np.array([w, h, w, h])
                bx = q4(np.array([x, y, x + w, y + h]) + j)
                if bx[2] - bx[0] < 1 or bx[3] - bx[1] < 1:
                    continue
                lab = c if rng.random() >= wrong_label_p else int(rng.choice(classes))
                dets.append([tuple(bx), round(float(rng.uniform(0.05, 1.0)), 3), lab])
        for _ in range(int(rng.poisson(fp_mean))):
            w, h = q4(rng.uniform(4, 200)), q4(rng.uniform(4, 200))
            x, y = q4(rng.uniform(0, img_size - w)), q4(rng.uniform(0, img_size - h))
            dets.append([(x, y, x + w, y + h), round(float(rng.uniform(0.01, 0.6)), 3), int(rng.choice(classes))])
        perm = rng.permutation(len(dets))
        dets = [dets[p] for p in perm]
        if max_dets is not None:
            dets = dets[:max_dets]
        imgs.append(Img(dets, gts))
    return imgs


def _box_area(b):
    return (b[2] - b[0]) * (b[3] - b[1])


def repair(imgs, rng, thrs=None):
    """Nudges detections whose IoU with any gt is near a threshold, then drops ground truth until no class (and no
    pooled) area-range count of regular gts is a positive multiple of 5 (see the module docstring)."""
    thrs = sorted(set(IOU_CANDIDATES) | set(thrs or []))
    for im in imgs:
        for d in im.dets:
            for attempt in range(50):
                db = np.array(d[0], np.float64)
                near = False
                for t in im.gts:
                    tb = np.array(t[0], np.float64)
                    ds = [[db[0], db[1], db[2] - db[0], db[3] - db[1]]]
                    gs = [[tb[0], tb[1], tb[2] - tb[0], tb[3] - tb[1]]]
                    if _iou_near(bb_iou(ds, gs, [len(t) > 2 and bool(t[2])])[0, 0], thrs):
                        near = True
                if not near:
                    break
                d[0] = tuple(db + (np.array([0.25, 0.0, 0.25, 0.0]) if attempt % 2 else np.array([0, 0.25, 0, 0.25])))
            else:
                raise AssertionError(f"could not move a detection off a threshold: {d} {im.gts}")
    while True:
        counts = {}
        for i, im in enumerate(imgs):
            for j, t in enumerate(im.gts):
                area = t[3] if len(t) > 3 and t[3] > 0 else _box_area(t[0])
                if len(t) > 2 and t[2]:
                    continue
                for a, (lo, hi) in enumerate(AREA_RNG):
                    if lo <= area <= hi:
                        for key in (t[1], "pooled"):
                            counts.setdefault((key, a), []).append((i, j))
        bad = sorted([k for k, v in counts.items() if len(v) % 5 == 0], key=str)
        if not bad:
            return imgs
        i, j = counts[bad[0]][int(rng.integers(len(counts[bad[0]])))]
        del imgs[i].gts[j]


# --------------------------------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------------------------------
def _argtag(args):
    parts = []
    for k, v in args.items():
        if isinstance(v, list):
            v = "-".join(str(x) for x in v)
        elif isinstance(v, bool):
            v = "true" if v else "false"
        parts.append(f"_{k}-{v}")
    return "".join(parts)


class DetSuite(Suite):
    def add_det(self, tag, args, imgs, dtype="float32", crowd=False, area=False, score_dtype=None, pad_every=None,
                source=None, inp=None):
        inp = inp or make_inputs(imgs, dtype, crowd, area, score_dtype, pad_every)
        box_format = args.get("box_format", "xyxy")
        name = f"{M}{_argtag(args)}__{tag}"
        vals = check_case(name, inp, args, box_format)
        assert name not in self._names, name
        self._names.add(name)
        case = {"name": name, "metric": spec(M, args), "inputs": {k: v.to_json() for k, v in inp.items()},
                "expected": [g._expected(v) for v in vals], "keys": tm_keys(args), "rtol": RT, "atol": AT,
                "source": source or ("COCOeval (pycocotools cocoeval.py + maskApi.c bbIou) in numpy on TorchMetrics' "
                                     "datasets (mean_ap.py) = brute-force per-threshold route")}
        self.cases.append(case)
        return dict(zip(tm_keys(args), vals))

    def add_refused(self, tag, args, inp, substring, why):
        # the same layout as gen_fixtures.Suite.add with a Refused expectation
        self.add(f"{M}{_argtag(args)}__refused_{tag}", spec(M, args), inp, Refused(f"{M}: {substring}"),
                 "refused: " + why, rtol=RT, atol=AT)

    def write_to(self, path):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "w") as f:
            f.write('{"cases": [\n')
            f.write(",\n".join(json.dumps(c, separators=(",", ":"), allow_nan=False) for c in self.cases))
            f.write("\n]}\n")
        return path


def approx(v, printed, digits):
    return abs(v - printed) <= 0.5 * 10.0**-digits + 1e-12


def gen():
    S = DetSuite("detection.json")
    rng = np.random.default_rng(20241105)

    # ---- TorchMetrics' docstring example (mean_ap.py MeanAveragePrecision, iou_type="bbox") -----------------------
    doc = [Img([((258.0, 41.0, 606.0, 285.0), 0.536, 0)], [((214.0, 41.0, 562.0, 285.0), 0)])]
    r = S.add_det("docstring_example", {}, doc)
    printed = {"map": 0.6, "map_50": 1.0, "map_75": 1.0, "map_large": 0.6, "map_medium": -1.0, "map_small": -1.0,
               "mar_1": 0.6, "mar_10": 0.6, "mar_100": 0.6, "mar_large": 0.6, "mar_medium": -1.0, "mar_small": -1.0,
               "map_per_class": -1.0, "mar_100_per_class": -1.0}
    for k, v in printed.items():
        assert approx(r[k], v, 4), (k, r[k], v)
    assert r["classes"] == [0]

    # ---- TorchMetrics' old test inputs (tests/unittests/detection/test_map.py `_inputs`, 4 images) -----------------
    # the pycocotools summary the test quotes, 3 digits (class 3 only in preds: -1)
    tm_imgs = [
        Img([((258.15, 41.29, 606.41, 285.07), 0.236, 4)], [((214.15, 41.29, 562.41, 285.07), 4)]),
        Img([((61.00, 22.75, 565.00, 632.42), 0.318, 3), ((12.66, 3.32, 281.26, 275.23), 0.726, 2)],
            [((13.00, 22.75, 548.98, 632.42), 2), ((1.66, 3.32, 270.26, 275.23), 2)]),
        Img([((87.87, 276.25, 384.29, 379.43), 0.546, 4), ((0.00, 3.66, 142.15, 316.06), 0.3, 1),
             ((296.55, 93.96, 314.97, 152.79), 0.407, 0), ((328.94, 97.05, 342.49, 122.98), 0.611, 0),
             ((356.62, 95.47, 372.33, 147.55), 0.335, 0), ((464.08, 105.09, 495.74, 146.99), 0.805, 0),
             ((276.11, 103.84, 291.44, 150.72), 0.953, 0)],
            [((61.87, 276.25, 358.29, 379.43), 4), ((2.75, 3.66, 162.15, 316.06), 1),
             ((295.55, 93.96, 313.97, 152.79), 0), ((326.94, 97.05, 340.49, 122.98), 0),
             ((356.62, 95.47, 372.33, 147.55), 0), ((462.08, 105.09, 493.74, 146.99), 0),
             ((277.11, 103.84, 292.44, 150.72), 0)]),
        Img([((0.00, 2.87, 601.00, 421.52), 0.699, 5)], [((13.99, 2.87, 640.00, 421.52), 5)]),
    ]
    quoted = {"map": 0.706, "map_50": 0.901, "map_75": 0.846, "map_small": 0.689, "map_medium": 0.800,
              "map_large": 0.701, "mar_1": 0.592, "mar_10": 0.716, "mar_100": 0.716, "mar_small": 0.767,
              "mar_medium": 0.800, "mar_large": 0.700}
    quoted_map_pc = [0.725, 0.800, 0.454, -1.000, 0.650, 0.900]
    quoted_mar_pc = [0.780, 0.800, 0.450, -1.000, 0.650, 0.900]
    # The quoted numbers are pycocotools' own, with its float64 recall thresholds: route 1 run with those reproduces
    # all of them. TorchMetrics hands COCOeval float32 thresholds, and 0.4 and 0.8 (class 0 has 5 gts: recall
    # 2/5, 4/5) sit above their float64 values there, so TorchMetrics returns map 0.70554 (pycocotools 0.70602),
    # map_75 0.8440 (0.846) and class 0 map 0.7228 (0.725) (QUIRK; the fixture holds TorchMetrics' values).
    tm_inp = make_inputs(tm_imgs)
    for args in ({}, {"class_metrics": True}):
        native = tm_compute(tm_images(tm_inp), args, rec_override=REC_VARIANTS["numpy_f64"])
        nat = dict(zip(tm_keys(args), native))
        for k, v in quoted.items():
            assert approx(nat[k], v, 3), (k, nat[k], v)
        if args:
            assert all(approx(a, b, 3) for a, b in zip(nat["map_per_class"], quoted_map_pc)), nat["map_per_class"]
            assert all(approx(a, b, 3) for a, b in zip(nat["mar_100_per_class"], quoted_mar_pc)), nat
        r = S.add_det("quirk_f32_recall_thresholds_torchmetrics_test_inputs_4_images", args, None, inp=tm_inp)
        assert approx(r["map"], 0.7055, 4) and not approx(r["map_75"], quoted["map_75"], 3), r
        if args:
            assert not approx(r["map_per_class"][0], quoted_map_pc[0], 3), r["map_per_class"]
        assert r["classes"] == [0, 1, 2, 3, 4, 5]
    # the same images fed as float64 (the values TorchMetrics' float32 tensors hold, widened): the same result
    r64 = S.add_det("quirk_f32_recall_thresholds_torchmetrics_test_inputs_4_images_float64", {}, None,
                    inp={k: (T(v.a, "float64") if v.dtype == "float32" else v) for k, v in tm_inp.items()})
    assert approx(r64["map"], 0.7055, 4)
    # the smallest such case: 5 gts, 4 true positives: recall 4/5 = 0.8 is below TorchMetrics' float32 threshold
    # 0.800000011920929, so that threshold reads precision 0: AP = 80/101, where pycocotools alone gives 81/101
    five = Img([((100 * k, 0, 100 * k + 40, 40), 0.9 - 0.1 * k, 0) for k in range(4)],
               [((100 * k, 0, 100 * k + 40, 40), 0) for k in range(5)])
    r = S.add_det("quirk_f32_recall_thresholds_recall_4_of_5", {}, [five])
    assert approx(r["map"], 80 / 101, 14) and approx(r["mar_100"], 0.8, 14), r["map"]

    # TorchMetrics' tests/unittests/detection/test_map.py test_for_box_format: iou_thresholds=[0.2], a pred
    # [0.5, 0.5, 1, 1] against [0, 0, 1, 1]: xyxy IoU 0.25 -> map 1; xywh / cxcywh IoU 0.143 -> map 0
    for fmt, want in (("xyxy", 1.0), ("xywh", 0.0), ("cxcywh", 0.0)):
        args = {"box_format": fmt, "iou_thresholds": [0.2]} if fmt != "xyxy" else {"iou_thresholds": [0.2]}
        r = S.add_det("torchmetrics_test_for_box_format", args,
                      [Img([((0.5, 0.5, 1.0, 1.0), 1.0, 0)], [((0.0, 0.0, 1.0, 1.0), 0)])])
        assert approx(r["map"], want, 12) and r["map_50"] == -1.0 and r["map_75"] == -1.0, r
    # test_missing_pred / test_missing_gt: map < 1
    r = S.add_det("torchmetrics_test_missing_pred", {},
                  [Img([((10, 20, 15, 25), 0.9, 0)], [((10, 20, 15, 25), 0)]), Img([], [((10, 20, 15, 25), 0)])])
    assert r["map"] < 1
    r = S.add_det("torchmetrics_test_missing_gt", {},
                  [Img([((10, 20, 15, 25), 0.9, 0)], [((10, 20, 15, 25), 0)]), Img([((10, 20, 15, 25), 0.95, 0)], [])])
    assert r["map"] < 1
    # test_many_detection_thresholds: [1, 10, 1000] -> map != 0.6 with pycocotools: stats[0] is _summarize(1) with
    # maxDets=100, not among [1, 10, 1000]: -1 (QUIRK)
    r = S.add_det("quirk_torchmetrics_test_many_detection_thresholds", {"max_detection_thresholds": [1, 10, 1000]},
                  doc)
    assert r["map"] == -1.0 and approx(r["map_50"], 1.0, 9) and approx(r["mar_1000"], 0.6, 9), r
    # _inputs2 (TorchMetrics issue 943): the same detection in two images, the second without ground truth
    S.add_det("torchmetrics_issue_943_fp_in_image_without_gt", {},
              [doc[0], Img([((258.0, 41.0, 606.0, 285.0), 0.536, 0)], [])])
    # _inputs3: an image without detections whose ground truth is class 1 (only in the target)
    S.add_det("torchmetrics_issue_981_image_without_dets_class_only_in_target", {"class_metrics": True},
              [doc[0], Img([], [((1.0, 2.0, 3.0, 4.0), 1)])])

    # ---- IoU exactly at a threshold (exact binary fractions) ----------------------------------------------------
    # gt [0, 0, 64, 64] (area 4096, medium); detections with IoU 1/2, 3/4, 5/8 and just below 1/2
    # image k: one gt [0, 0, 64, 64] of class k and one detection on it with IoU 1/2, 5/8 or 3/4 (a match: iou >= t)
    gt = ((0, 0, 64, 64), 0)
    imgs = [Img([((0, 0, 64, 32), 0.9, 0)], [gt]), Img([((0, 0, 64, 40), 0.9, 1)], [((0, 0, 64, 64), 1)]),
            Img([((0, 0, 64, 48), 0.9, 2)], [((0, 0, 64, 64), 2)])]
    r = S.add_det("iou_exactly_0.5_0.625_0.75", {"class_metrics": True}, imgs)
    # default thresholds: 1, 3 and 6 of the 10 thresholds matched
    assert all(approx(a, b, 14) for a, b in zip(r["mar_100_per_class"], [0.1, 0.3, 0.6])), r
    r = S.add_det("iou_exactly_0.5_0.625_0.75", {"iou_thresholds": [0.5, 0.625, 0.75], "class_metrics": True}, imgs)
    assert all(approx(a, b, 14) for a, b in zip(r["mar_100_per_class"], [1 / 3, 2 / 3, 1.0])), r
    r = S.add_det("iou_exactly_0.5_and_below", {},
                  [Img([((0, 0, 64, 32), 0.9, 0), ((0, 0, 64, 31.75), 0.8, 0)], [gt, ((0, 0, 64, 64), 0)])])

    # ---- crowd ground truth -------------------------------------------------------------------------------------
    # a crowd region [0, 0, 200, 200] absorbs any number of detections (IoU = intersection / detection area); a
    # detection that matches a regular gt takes it even when the crowd overlaps more (regular gts come first, and a
    # regular match stops the search at the first ignored gt)
    crowd_imgs = [
        Img([((10, 10, 50, 50), 0.9, 0), ((60, 60, 100, 100), 0.8, 0), ((120, 120, 190, 190), 0.7, 0),
             ((0, 0, 100, 60), 0.6, 0), ((300, 300, 340, 340), 0.5, 0), ((300, 300, 330, 330), 0.4, 0)],
            [((0, 0, 200, 200), 0, 1), ((0, 0, 96, 64), 0, 0), ((300, 300, 340, 340), 0, 0),
             ((400, 400, 410, 410), 0, 0)]),
        Img([((5, 5, 45, 45), 0.95, 0), ((5, 5, 45, 45), 0.85, 1)], [((0, 0, 50, 50), 0, 1), ((0, 0, 40, 40), 1, 0)]),
        Img([((0, 0, 30, 30), 0.3, 1)], [((0, 0, 30, 30), 1, 1)]),
    ]
    S.add_det("crowd_regions", {}, crowd_imgs, crowd=True)
    S.add_det("crowd_regions", {"class_metrics": True, "average": "micro"}, crowd_imgs, crowd=True)

    # ---- area ranges: boundaries 32^2 and 96^2 exactly; a gt ignored by area matched once -----------------------
    area_imgs = [
        Img([((0, 0, 32, 32), 0.9, 0), ((100, 100, 196, 196), 0.8, 0), ((300, 300, 331, 332), 0.7, 0),
             ((400, 0, 500, 100), 0.6, 0), ((0, 400, 20, 420), 0.5, 0), ((200, 0, 250, 50), 0.4, 0)],
            [((0, 0, 32, 32), 0), ((100, 100, 196, 196), 0), ((300, 300, 332, 332), 0), ((400, 0, 496, 100), 0),
             ((0, 400, 20, 420), 0), ((200, 0, 260, 60), 0), ((600, 600, 610, 610), 0)]),
        # a small gt (31 x 31 = 961) and two 33 x 32 = 1056 detections on it: in the medium range the gt is ignored,
        # the first detection matches it (ignored), the second cannot (a non-crowd gt is matched once) and counts
        # as a false positive there; in the small range the detections' area is out of range and unmatched -> ignored
        Img([((0, 0, 33, 32), 0.9, 1), ((0, 0, 33, 32), 0.8, 1), ((200, 200, 240, 240), 0.7, 1)],
            [((0, 0, 31, 31), 1), ((200, 200, 240, 240), 1)]),
    ]
    S.add_det("area_ranges_boundaries_32sq_96sq", {}, area_imgs)
    S.add_det("area_ranges_boundaries_32sq_96sq", {"class_metrics": True}, area_imgs)

    # ---- target_area given ---------------------------------------------------------------------------------------
    # areas that move boxes across the ranges (a 10 x 10 box declared 5000, a 200 x 200 box declared 500), and a 0
    # and a negative area, which TorchMetrics replaces by the box area (`area > 0` test) (QUIRK)
    ta_imgs = [
        Img([((0, 0, 10, 10), 0.9, 0), ((100, 100, 300, 300), 0.8, 0), ((400, 400, 440, 440), 0.7, 0),
             ((500, 0, 540, 40), 0.6, 0)],
            [((0, 0, 10, 10), 0, 0, 5000.0), ((100, 100, 300, 300), 0, 0, 500.0), ((400, 400, 440, 440), 0, 0, 0.0),
             ((500, 0, 540, 40), 0, 0, -7.0), ((0, 500, 100, 600), 0, 0, 20000.5), ((600, 600, 700, 700), 0, 0, 0.0)]),
    ]
    S.add_det("quirk_target_area_given_zero_or_negative_uses_box_area", {}, ta_imgs, area=True)
    S.add_det("quirk_target_area_given_zero_or_negative_uses_box_area", {"class_metrics": True}, ta_imgs, area=True,
              crowd=True)

    # ---- degenerate and odd boxes --------------------------------------------------------------------------------
    # zero width / zero height gts (area 0: small, never matched) and detections (IoU 0: false positives in all and
    # small, ignored in medium and large)
    S.add_det("degenerate_zero_width_height", {}, [
        Img([((10, 10, 10, 50), 0.9, 0), ((20, 20, 60, 20), 0.8, 0), ((100, 100, 150, 150), 0.7, 0)],
            [((10, 10, 10, 50), 0), ((100, 100, 150, 150), 0), ((200, 200, 260, 200), 0)]),
        Img([((0, 0, 0, 0), 0.95, 0)], [((0, 0, 40, 40), 0)]),
    ])
    # x2 < x1 (TorchMetrics does not check): negative area, so the gt is ignored in every range and an unmatched
    # detection is ignored instead of counting as a false positive (QUIRK)
    S.add_det("quirk_inverted_boxes_negative_area", {}, [
        Img([((50, 10, 10, 50), 0.9, 0), ((100, 100, 150, 150), 0.8, 0), ((300, 300, 340, 340), 0.7, 0)],
            [((150, 100, 100, 150), 0), ((300, 300, 340, 340), 0), ((0, 0, 40, 40), 0)]),
    ])
    # area above 1e10 = 1e5^2 is outside even the "all" range (gt ignored, unmatched detection ignored) (QUIRK)
    S.add_det("quirk_area_above_1e10_ignored_everywhere", {}, [
        Img([((0, 0, 200000, 100000), 0.9, 0), ((0, 0, 40, 40), 0.8, 0), ((0, 0, 150000, 100000), 0.7, 0)],
            [((0, 0, 200000, 100000), 0), ((0, 0, 40, 40), 0), ((100, 100, 140, 140), 0)]),
    ])

    # ---- IoU ties between ground truths: the later gt wins (`<` comparison) (QUIRK) -------------------------------
    # d1 overlaps gA and gB equally (IoU 0.6); d2 overlaps only gA. d1 takes gB (the later), so d2 can take gA
    S.add_det("quirk_iou_tie_goes_to_later_gt", {"iou_thresholds": [0.5]}, [
        Img([((16, 0, 80, 64), 0.9, 0), ((0, 0, 64, 64), 0.8, 0)], [((0, 0, 64, 64), 0), ((32, 0, 96, 64), 0)]),
    ])

    # ---- score ties: within an image (slot order) and across images (image order) --------------------------------
    # every detection scores 0.5; image 0 holds a false positive before a true positive, image 1 a true positive:
    # the pooled order FP, TP, TP gives a different AP from TP, TP, FP or TP, FP, TP
    tie_imgs = [
        Img([((300, 300, 340, 340), 0.5, 0), ((0, 0, 40, 40), 0.5, 0)], [((0, 0, 40, 40), 0)]),
        Img([((0, 0, 40, 40), 0.5, 0), ((100, 100, 140, 140), 0.5, 0)],
            [((0, 0, 40, 40), 0), ((100, 100, 140, 140), 0)]),
        Img([((0, 0, 40, 40), 0.5, 0)], [((0, 0, 40, 40), 0), ((200, 200, 240, 240), 0), ((50, 50, 90, 90), 0)]),
    ]
    r = S.add_det("score_ties_within_and_across_images", {}, tie_imgs)
    # pooled order FP, TP, TP, TP, TP over 6 gts (IoU 1 at every threshold): precision 4/5 up to recall 4/6, i.e.
    # for the 67 thresholds 0.00 ... 0.66: AP = 67 * 0.8 / 101
    assert approx(r["map"], 67 * 0.8 / 101, 14), r["map"]
    # images reversed: TP, TP, TP, FP, TP: precision 1 up to recall 3/6 (51 thresholds), 4/5 for 0.51 ... 0.66
    r = S.add_det("score_ties_across_images_reversed", {}, tie_imgs[::-1])
    assert approx(r["map"], (51 + 16 * 0.8) / 101, 14), r["map"]
    # scattered padding slots do not change the slot order of the valid detections
    S.add_det("score_ties_scattered_padding", {}, tie_imgs, pad_every=1)

    # ---- images without ground truth / without detections; no classes at all -----------------------------------
    base = scene(rng, 6, [0, 1, 2], n_gt=(1, 4), empty_p=0.0)
    imgs = [Img(base[0].dets, []), base[1], Img([], base[2].gts), Img([], []), base[3], Img(base[4].dets, []),
            base[5], Img([], [])]
    repair(imgs, rng)
    S.add_det("images_without_gt_or_dets", {}, imgs)
    S.add_det("images_without_gt_or_dets", {"class_metrics": True}, imgs)
    S.add_det("only_detections_no_gt_at_all", {"class_metrics": True},
              [Img(base[0].dets, []), Img(base[1].dets, [])])
    S.add_det("only_gt_no_detections_at_all", {}, [Img([], base[0].gts), Img([], base[1].gts)])
    r = S.add_det("all_padding_no_classes", {}, [Img(), Img(), Img()])
    assert r["classes"] == [] and r["map"] == -1.0
    r = S.add_det("all_padding_no_classes", {"class_metrics": True}, [Img(), Img()])
    assert r["map_per_class"] == [] and r["mar_100_per_class"] == []

    # ---- classes only in preds / only in target ----------------------------------------------------------------
    imgs = scene(rng, 8, [0, 1, 2], n_gt=(1, 5), wrong_label_p=0.0)
    for im in imgs:
        im.dets = [[d[0], d[1], 7 if d[2] == 2 else d[2]] for d in im.dets]  # class 2 only in target, 7 only in preds
    repair(imgs, rng)
    r = S.add_det("class_only_in_preds_and_class_only_in_target", {"class_metrics": True}, imgs)
    assert r["classes"] == [0, 1, 2, 7] and r["map_per_class"][3] == -1.0 and r["map_per_class"][2] == 0.0, r

    # ---- more than 100 detections in one image (maxDets truncation per image and class) ------------------------
    # image 0: 36 gts of class 0 on a 6 x 6 grid (40 x 40) and 150 class-0 detections in shuffled slots, scores
    # falling with k: k < 20 a good box on gt k, 20 <= k < 100 poor boxes (IoU 1/12) on gts 0..19, k >= 100 a good
    # box on gt 20 + (k - 100) for the first 16, poor ones after. The 100 best keep 20 hits; all 150 reach 36.
    # 60 class-1 detections in the same image are not truncated (the limit is per image and category).
    gts_big = [((100.0 * (k % 6), 100.0 * (k // 6), 100.0 * (k % 6) + 40, 100.0 * (k // 6) + 40), 0) for k in range(36)]
    big = []
    for k in range(150):
        gi = k % 20 if k < 100 else 20 + (k - 100) % 16
        gx, gy = gts_big[gi][0][:2]
        good = k < 20 or 100 <= k < 116
        box = (gx + 1, gy + 1, gx + 41, gy + 41) if good else (gx + 20, gy + 20, gx + 80, gy + 80)
        big.append((box, round(0.999 - 0.006 * k, 3), 0))
    for k in range(60):
        big.append(((700 + k, 700, 740 + k, 740), round(0.5 + 0.001 * k, 3), 1))
    gts_big.append(((700, 700, 740, 740), 1))
    big = [big[p] for p in rng.permutation(len(big))]
    imgs = [Img(big, gts_big), Img([((0, 0, 40, 40), 0.7, 0)], [((0, 0, 40, 40), 0), ((50, 50, 90, 90), 0)])]
    repair(imgs, rng)
    r = S.add_det("150_detections_in_one_image", {}, imgs)
    r2 = S.add_det("150_detections_in_one_image", {"max_detection_thresholds": [5, 100, 200]}, imgs)
    # QUIRK: map is taken at maxDets 100 (hard-wired), map_50 etc. at maxDets[2] = 200
    assert r2["map"] == r["map"] and r2["map_50"] > r["map_50"] and r2["mar_200"] > r["mar_100"], (r, r2)
    S.add_det("quirk_map_needs_maxdet_100_150_detections_in_one_image", {"max_detection_thresholds": [1, 5, 10]}, imgs)
    S.add_det("150_detections_in_one_image", {"average": "micro"}, imgs)

    # ---- one class; many classes (80, sparse) ------------------------------------------------------------------
    imgs = repair(scene(rng, 10, [3], n_gt=(1, 6), crowd_p=0.1), rng)
    S.add_det("one_class_id_3", {}, imgs, crowd=True)
    S.add_det("quirk_micro_without_class_0", {"average": "micro"}, imgs, crowd=True)
    r = S.add_det("quirk_micro_without_class_0", {"average": "micro", "class_metrics": True}, imgs, crowd=True)
    assert r["map"] == -1.0 and r["map_per_class"][0] != -1.0
    imgs = repair(scene(rng, 20, list(range(80)), n_gt=(1, 4)), rng)
    S.add_det("many_classes_80_sparse", {"class_metrics": True}, imgs)

    # ---- box formats (the same boxes written three ways; float32 grid values convert exactly) ------------------
    imgs = repair(scene(rng, 9, [0, 1, 2, 3], n_gt=(1, 6), crowd_p=0.1), rng)
    inp_xyxy = make_inputs(imgs, crowd=True)
    ref = S.add_det("random_9_images_4_classes", {}, imgs, crowd=True)

    def reformat(inp, fmt):
        out = dict(inp)
        for key in ("boxes", "target_boxes"):
            b = inp[key].f64
            x1, y1, x2, y2 = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
            if fmt == "xywh":
                nb = np.stack([x1, y1, x2 - x1, y2 - y1], -1)
            else:
                nb = np.stack([(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1], -1)
            out[key] = T(nb, inp[key].dtype)
            assert np.array_equal(out[key].f64, nb)
        return out

    for fmt in ("xywh", "cxcywh"):
        r = S.add_det("random_9_images_4_classes", {"box_format": fmt}, None, inp=reformat(inp_xyxy, fmt))
        assert r == ref, fmt
    # float64 boxes and scores off the grid, cxcywh
    imgs = repair(scene(rng, 8, [0, 1], n_gt=(1, 5)), rng)
    inp = make_inputs(imgs, dtype="float64")
    valid = inp["labels"].a != -1
    jit = np.random.default_rng(7).uniform(-0.1, 0.1, inp["boxes"].a.shape) * valid[..., None]
    inp["boxes"] = T(inp["boxes"].a + jit, "float64")
    jit = np.random.default_rng(8).uniform(0, 1e-3, inp["scores"].a.shape) * valid
    inp["scores"] = T(inp["scores"].a + jit, "float64")
    S.add_det("random_float64_off_grid", {}, None, inp=inp)
    S.add_det("random_float64_off_grid_cxcywh", {"box_format": "cxcywh"}, None, inp=reformat(inp, "cxcywh"))

    # ---- custom thresholds ----------------------------------------------------------------------------------------
    imgs = repair(scene(rng, 12, [0, 1, 2], n_gt=(1, 6), crowd_p=0.05), rng, thrs=[0.25, 0.625, 0.3, 0.6])
    inp = make_inputs(imgs, crowd=True)
    for args in ({}, {"iou_thresholds": [0.5, 0.75]}, {"iou_thresholds": [0.25, 0.625]},
                 {"rec_thresholds": [0.0, 0.25, 0.5, 0.75, 1.0]},
                 {"rec_thresholds": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]},
                 {"max_detection_thresholds": [1, 5, 10]}, {"max_detection_thresholds": [10, 1, 5]},
                 {"max_detection_thresholds": [2, 3, 100]},
                 {"iou_thresholds": [0.3, 0.6], "rec_thresholds": [0.0, 0.5, 1.0],
                  "max_detection_thresholds": [1, 2, 100], "class_metrics": True},
                 {"class_metrics": True}, {"average": "micro"}, {"average": "micro", "class_metrics": True},
                 {"box_format": "xyxy", "average": "macro", "class_metrics": False}):
        tag = "random_12_images_3_classes"
        if "max_detection_thresholds" in args and 100 not in args["max_detection_thresholds"]:
            tag = "quirk_map_needs_maxdet_100_" + tag
        r = S.add_det(tag, args, None, inp=inp)
        if "max_detection_thresholds" in args and 100 not in args["max_detection_thresholds"]:
            assert r["map"] == -1.0
    # unsorted rec_thresholds: the first threshold above the final recall stops pycocotools' loop, so every later
    # one reads 0 (QUIRK)
    imgs = [Img([((0, 0, 40, 40), 0.9, 0), ((100, 0, 140, 40), 0.8, 0)],
                [((0, 0, 40, 40), 0), ((100, 0, 140, 40), 0), ((200, 0, 240, 40), 0)])]
    r = S.add_det("quirk_unsorted_rec_thresholds", {"rec_thresholds": [1.0, 0.5, 0.0]}, imgs)
    assert r["map"] == 0.0, r
    r = S.add_det("quirk_unsorted_rec_thresholds", {"rec_thresholds": [0.5, 0.0, 1.0]}, imgs)
    assert approx(r["map"], 2 / 3, 12), r

    # ---- coco-like: 50 images, 80 classes, up to 100 detections per image --------------------------------------
    imgs = scene(rng, 50, list(range(80)), n_gt=(1, 15), dets_per_gt=(1, 4), fp_mean=62, crowd_p=0.03,
                 empty_p=0.04, max_dets=100)
    repair(imgs, rng)
    r = S.add_det("coco_like_50_images_80_classes", {"class_metrics": True}, imgs, crowd=True)
    print("coco-like:", {k: (round(v, 4) if isinstance(v, float) else None) for k, v in r.items()})

    # ---- refused ------------------------------------------------------------------------------------------------
    inp = make_inputs(doc)
    S.add_refused("iou_type_segm", {"iou_type": "segm"}, inp, "iou_type",
                  "iou_type=segm (masks) is out of scope; TorchMetrics accepts bbox, segm or both")
    S.add_refused("two_max_detection_thresholds", {"max_detection_thresholds": [1, 10]}, inp,
                  "max_detection_thresholds", "TorchMetrics requires 3 max detection thresholds (ValueError)")
    S.add_refused("four_max_detection_thresholds", {"max_detection_thresholds": [1, 10, 50, 100]}, inp,
                  "max_detection_thresholds", "TorchMetrics requires 3 max detection thresholds (ValueError)")
    bad = dict(inp)
    bad["labels"] = T(inp["labels"].a, "float32")
    S.add_refused("float_labels", {}, bad, "labels", "float detection labels (TorchMetrics: 'Invalid input class')")
    bad = dict(inp)
    bad["target_labels"] = T(inp["target_labels"].a, "float32")
    S.add_refused("float_target_labels", {}, bad, "target_labels",
                  "float target labels (TorchMetrics: 'Invalid input class')")
    S.add_refused("unknown_box_format", {"box_format": "yxyx"}, inp, "box_format",
                  "box_format must be xyxy, xywh or cxcywh (TorchMetrics ValueError)")
    S.add_refused("unknown_average", {"average": "weighted"}, inp, "average",
                  "average must be macro or micro (TorchMetrics ValueError)")
    return S


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                                                             "detection.json")
    S = gen()
    path = S.write_to(out)
    n_ref = sum("error" in c for c in S.cases)
    print(f"{path}: {len(S.cases)} cases ({n_ref} refused), {os.path.getsize(path) // 1024} KiB")
    print(f"largest difference between the two routes: {WORST['diff']:.2e} ({WORST['case']})")


if __name__ == "__main__":
    main()
