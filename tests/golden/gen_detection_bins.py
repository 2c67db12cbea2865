#!/usr/bin/env python3
"""Golden fixtures for Tally's extension `mean_average_precision(score_bins=K, num_classes=C)` and its exact16 modes
`score_bins=exact16 | exact_fp16 | exact_bf16`.

Regenerate (numpy only; deterministic, fixed seeds; a minute or two):

    /usr/bin/python3 tests/golden/gen_detection_bins.py [OUTPUT.json]

The default output is tests/golden/fixtures/detection_bins.json. It was generated with numpy 1.24.2. The script
imports gen_detection.py (COCOeval's evaluateImg and summarize, TorchMetrics' datasets, the guards) and runs its
`gen()` to take several of detection.json's datasets as they are; detection.json itself is neither read nor written.

Semantics (Tally's own; TorchMetrics has no such option). With score_bins=K and num_classes=C the state is a
histogram of fixed size, and the values are pycocotools' except for how accumulate builds the precision/recall curve:
* Labels lie in [0, C) (-1 pads a slot); any other label is refused (`labels` / `target_labels`, "labels outside
  [0, C)"). score_bins needs num_classes; num_classes needs score_bins; score_bins >= 1; average=micro is refused.
* Matching (evaluateImg) is unchanged: per image and class, detections sorted by their real score (stable), the first
  maxDets[-1] matched greedily per IoU threshold, TP / FP / ignored exactly as in detection.json.
* Each detection falls in bin b = clamp(floor(s * K), 0, K - 1), s its score widened to float64 and the product taken
  in float64 (exact for float32 scores; the generator refuses float64 scores whose float64 product and exact product
  floor differently). Scores of 1.0 and above go to bin K - 1, scores below 0 to bin 0.
* exact16 modes: the bin is the score's 16-bit code, everything else as above. The format: exact_fp16 -> float16,
  exact_bf16 -> bfloat16, exact16 -> bfloat16 when the `scores` tensor is bfloat16, else float16 (float16, float32 and
  float64 scores). K = the codes of [0, 1]: 0x3C00 + 1 = 15361 (float16), 0x3F80 + 1 = 16257 (bfloat16). The score
  (float64) is rounded to float32, then to the format (nearest even both times; the float32 step decides for float64
  scores next to a 16-bit midpoint), -0 taken as +0; the bin is clamp(bits, 0, K - 1) with bits the 16-bit pattern
  of a value >= 0, any negative value in bin 0, values above 1 (and +inf) in bin K - 1 -- Tally's clamp(code -
  0x8000, 0, K - 1) with the order-preserving code (0x8000 | bits for positive values, below 0x8000 for negative
  ones). NaN scores are refused (none generated). So the values are the exact ones when no two detections of one
  class share a code, and differ when a TP and an FP of one class round to one code (they tie).
* accumulate, per (class, area range, maxDet m): the curve has one point per bin that holds at least one detection
  counted (TP or FP, not ignored) among each image's first m, at ANY IoU threshold of that (class, area, m) -- one set
  of bins shared by all thresholds -- from the highest bin down; at a point tp_sum / fp_sum are the TPs / FPs in all
  bins at or above it. The rest is pycocotools' accumulate (rc = tp_sum / npig, pr = tp / (tp + fp + eps), recall =
  rc[-1] or 0 without points, the envelope, searchsorted(rc, recThrs, 'left') with the try/except stop, npig = 0 ->
  -1) and summarize unchanged (the maxDets-100 rule of map, the -1 conventions, class_metrics).
* `classes` = the classes in [0, C) with at least one detection or ground-truth row (padding excluded; a detection
  beyond maxDets counts), i.e. TorchMetrics' `_get_classes` -- never the unseen classes of [0, C).
Consequences asserted here: when no two detections of one class share a bin, the values equal detection.json's exact
ones (bit for bit: a bin point empty at one threshold repeats the point before it, as an ignored detection does, and
the envelope makes repeated points invisible); a bin holding a TP and an FP gives a different curve. The exact16
cases assert both: one detection per code (float16 and bfloat16 scores, adjacent codes) -> the exact values; a TP and
an FP on one code (float32 scores within float16 / bfloat16 precision, bfloat16 scores below float16's subnormals,
1.5 clamped next to 1.0, 0.0 next to -0.25, float64 scores that float32 puts on a midpoint) -> other values; and
that the rule decides (another format, no clamp, flushed subnormals, a direct float64 rounding give other values).

Two routes, asserted to agree to 1e-13 (they agree to about 1e-16), `expected` from route 1:
* Route 1 (`coco_eval_bins`): gen_detection's evaluateImg on TorchMetrics' datasets, then the binned accumulate above
  in NumPy (cumulative sums per point, the same per-threshold code as gen_detection's accumulate), then
  gen_detection's summarize (NumPy's pairwise sums: tolerance 0, as detection.json).
* Route 2 (`brute_force_bins`): from float64 corners and the rules, one (class, area, maxDet) at a time: explicit sort
  keys, two-phase matching, then per bin (highest first) counts of the TPs and FPs at or above it, the interpolated
  precision as a max over the points at or beyond each recall threshold (with the stop rule), means with math.fsum.
* The bins: route 1 `score_bin` (float64 product; asserted to floor as the exact product does) or, for exact16,
  `code_bin` (numpy's float64 -> float32 -> float16 casts; bfloat16 by nearest-even bit arithmetic on the float32
  bits; the order-preserving code); route 2 the exact product's floor or `ref_code_bin` (exact rationals: each
  rounding from the format's definition, the bit pattern from exponent and significand). Every detection's code_bin
  is asserted equal to its ref_code_bin (in place of the product check), and `self_test_codes` compares the two on
  several thousand float32 values of every exponent and sign and on float64 values next to 16-bit midpoints.
Every case with default recall thresholds is also checked under gen_detection's seven candidate float32/float64
recall-threshold sets (identical results asserted).
"""
import contextlib
import io
import json
import math
import os
import sys
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_detection as gd  # noqa: E402
import gen_fixtures as g  # noqa: E402
from gen_detection import AREA_RNG, Img, M, make_inputs  # noqa: E402
from gen_fixtures import T, spec  # noqa: E402

g._NP["float16"] = np.float16
g._NP["bfloat16"] = np.float32  # scores rounded to bfloat16 first (asserted in add_bins), so float32 holds them exactly

RT, AT = 0.0, 0.0
ROUTE_TOL = 1e-13
WORST = {"diff": 0.0, "case": None}
SOURCE = ("COCOeval evaluateImg + summarize (gen_detection.py, pycocotools in numpy) with Tally's score-bin "
          "accumulate = brute-force per-bin route")
LOG = {"equal_exact": [], "differs_exact": [], "own_bins": []}


# --------------------------------------------------------------------------------------------------------------------
# bins
# --------------------------------------------------------------------------------------------------------------------
def score_bin(s, k):
    """Tally's bin of a (float64) score: clamp(floor(s * K), 0, K - 1), the product in float64."""
    return int(min(max(math.floor(float(s) * k), 0), k - 1))


def bin_ceil_minus_1(s, k):
    """A wrong binning (an edge belongs to the lower bin), to show that edge cases decide."""
    return int(min(max(math.ceil(float(s) * k) - 1, 0), k - 1))


def bin_decimal(s, k):
    """A wrong binning (the score's short decimal, not its float32 value)."""
    return int(min(max(math.floor(round(float(s), 6) * k), 0), k - 1))


# exact16 modes (score_bins=exact16 | exact_fp16 | exact_bf16): the bin is the score's 16-bit code, K the codes of
# [0, 1]: 0x3C00 + 1 for float16, 0x3F80 + 1 for bfloat16
EXACT16_MODES = ("exact16", "exact_fp16", "exact_bf16")
CODE_K = {"float16": 0x3C00 + 1, "bfloat16": 0x3F80 + 1}


def exact16_format(mode, score_dtype):
    """The 16-bit format of an exact16 mode: exact16 reads bfloat16 scores as bfloat16, any other dtype as float16."""
    assert mode in EXACT16_MODES, mode
    if mode == "exact16":
        return "bfloat16" if score_dtype == "bfloat16" else "float16"
    return "float16" if mode == "exact_fp16" else "bfloat16"


def code16(s, fmt):
    """Tally's order-preserving 16-bit code of a (float64) score: rounded to float32 (nearest even, numpy's cast),
    then to float16 (numpy's cast) or bfloat16 (nearest even on the float32 bits), -0 taken as +0; positive values
    0x8000 | bits, negative ones 0xFFFF - bits (below 0x8000, larger magnitudes lower)."""
    f = np.float32(s)
    assert not np.isnan(f), s
    if fmt == "float16":
        bits = int(np.float16(f).view(np.uint16))
    else:
        u = int(f.view(np.uint32))
        bits = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
    if bits == 0x8000:
        bits = 0
    return 0x8000 | bits if bits < 0x8000 else 0xFFFF - bits


def code_bin(s, fmt):
    """Route 1's bin of a score under an exact16 format: clamp(code - 0x8000, 0, K - 1)."""
    return min(max(code16(s, fmt) - 0x8000, 0), CODE_K[fmt] - 1)


def code_bin_of(fmt):
    """code_bin as a bin_of(s, K) for coco_eval_bins / tm_compute_bins."""
    def bin_of(s, k):
        assert k == CODE_K[fmt], (k, fmt)
        return code_bin(s, fmt)
    return bin_of


# precision p (significand bits, the hidden one included), minimum normal exponent, maximum exponent
FORMATS = {"float32": (24, -126, 127), "float16": (11, -14, 15), "bfloat16": (8, -126, 127)}


def _exponent(a):
    """floor(log2(a)) of a positive Fraction, exactly."""
    e = a.numerator.bit_length() - a.denominator.bit_length()
    while Fraction(2) ** e > a:
        e -= 1
    while Fraction(2) ** (e + 1) <= a:
        e += 1
    return e


def round_to(x, fmt):
    """A Fraction (or +-inf) rounded to the nearest value of fmt, ties to even, from the format's definition:
    quantum 2^(max(e, emin) - p + 1), overflow to infinity. -0 comes back as 0 (a Fraction has no sign of zero)."""
    if isinstance(x, float):
        assert math.isinf(x), x
        return x
    if x == 0:
        return Fraction(0)
    p, emin, emax = FORMATS[fmt]
    a = abs(x)
    q = Fraction(2) ** (max(_exponent(a), emin) - p + 1)
    n = a // q
    rem = a / q - n
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and n % 2 == 1):
        n += 1
    v = n * q
    if v >= Fraction(2) ** (emax + 1):
        return math.copysign(math.inf, x)
    return v if x > 0 else -v


def bits_of(v, fmt):
    """The bit pattern of a non-negative value of fmt (a Fraction or +inf): exponent field and fraction field."""
    p, emin, emax = FORMATS[fmt]
    if v == math.inf:
        return (emax - emin + 2) << (p - 1)
    if v < Fraction(2) ** emin:
        m = v / Fraction(2) ** (emin - p + 1)
        assert m.denominator == 1
        return int(m)
    e = _exponent(v)
    m = v / Fraction(2) ** (e - p + 1)
    assert m.denominator == 1 and 2 ** (p - 1) <= m < 2 ** p
    return ((e - emin + 1) << (p - 1)) | (int(m) - 2 ** (p - 1))


def ref_code_bin(s, fmt, via_float32=True):
    """Route 2's bin, written from the rule with exact rationals (independent of numpy's casts and of code16): the
    score rounded to float32, then to fmt; negative -> 0; else clamp(bits, 0, K - 1). via_float32=False rounds the
    float64 directly (a wrong rule, to show that the float32 step decides)."""
    s = float(s)
    assert not math.isnan(s), s
    v = Fraction(s) if not math.isinf(s) else s
    if via_float32:
        v = round_to(v, "float32")
    v = round_to(v, fmt)
    if v < 0:
        return 0
    return min(bits_of(v, fmt), CODE_K[fmt] - 1)


def bins_rule(score_bins, score_dtype):
    """(K, bin_of(s, K), format): score_bins=K -> floor(s * K) bins; an exact16 mode -> the 16-bit code bins."""
    if isinstance(score_bins, str):
        fmt = exact16_format(score_bins, score_dtype)
        return CODE_K[fmt], code_bin_of(fmt), fmt
    return score_bins, score_bin, None


def self_test_codes():
    """code_bin (numpy's casts, bit arithmetic) against ref_code_bin (exact rationals) on float32 values of every
    exponent (normal, subnormal in both formats, negative, above 1, infinite) and on float64 values next to the
    rounding midpoints of both formats (where the float32 step decides)."""
    rng = np.random.default_rng(1616)
    f32 = np.concatenate([rng.integers(0, 0x7F800001, 3000, dtype=np.int64).astype(np.uint32).view(np.float32),
                          (rng.random(1000) * 2 - 0.5).astype(np.float32),
                          np.array([0.0, -0.0, 1.0, 1.5, -0.25, 2.0**-24, 2.0**-25, 3 * 2.0**-25, 2.0**-14, 65504.0,
                                    65520.0, np.inf, -np.inf, 2.0**-149, -(2.0**-149)], np.float32)])
    f32 = np.concatenate([f32, -f32[:500]])
    vals = [float(v) for v in f32]
    for fmt in ("float16", "bfloat16"):
        p = FORMATS[fmt][0]
        # float64 values a hair off a midpoint of fmt: the float32 step lands on the midpoint (then ties to even)
        for m in range(2 ** (p - 1), 2 ** (p - 1) + 40):
            mid = (m + 0.5) * 2.0 ** (-p)
            vals += [mid + 2.0**-40, mid - 2.0**-40, mid]
    for v in vals:
        for fmt in ("float16", "bfloat16"):
            assert code_bin(v, fmt) == ref_code_bin(v, fmt), (v, fmt, code_bin(v, fmt), ref_code_bin(v, fmt))
    assert [code_bin(v, "float16") for v in (0.0, -0.0, 1.0, 1.5, -0.25, 2.0**-24, 2.0**-25, 3 * 2.0**-25)] == \
        [0, 0, 0x3C00, 0x3C00, 0, 1, 0, 2]
    assert [code_bin(v, "bfloat16") for v in (0.0, 1.0, 1.5, 2.0**-24, 2.0**-133, math.inf, -math.inf)] == \
        [0, 0x3F80, 0x3F80, 0x3380, 1, 0x3F80, 0]
    # the float32 step: 0.5 + 2^-12 + 2^-40 is a float16 midpoint after it (-> 0.5, even), above one before it
    assert ref_code_bin(0.5 + 2.0**-12 + 2.0**-40, "float16") == 0x3800
    assert ref_code_bin(0.5 + 2.0**-12 + 2.0**-40, "float16", via_float32=False) == 0x3801


# --------------------------------------------------------------------------------------------------------------------
# route 1: evaluateImg as gen_detection.coco_eval, then the binned accumulate
# --------------------------------------------------------------------------------------------------------------------
def coco_eval_bins(imgs, cat_ids, iou_thrs, rec_thrs, max_dets, K, bin_of=score_bin):
    """evaluate (gen_detection.evaluate_all: matching unchanged) + the binned accumulate -> precision
    [T, R, K, A, M], recall."""
    nt, nr, nk, na, nm = len(iou_thrs), len(rec_thrs), len(cat_ids), len(AREA_RNG), len(max_dets)
    ev = gd.evaluate_all(imgs, cat_ids, iou_thrs, max_dets)
    for e in ev.values():
        e["bins"] = np.array([bin_of(s, K) for s in e["scores"]], np.int64)
    precision = -np.ones((nt, nr, nk, na, nm))
    recall = -np.ones((nt, nk, na, nm))
    for k in range(nk):
        for a in range(na):
            E = [ev[k, a, i] for i in range(len(imgs)) if (k, a, i) in ev]
            if not E:
                continue
            for m, md in enumerate(max_dets):
                # each image's first md detections (rank in image and class < md); their order no longer matters
                bins = np.concatenate([e["bins"][:md] for e in E])
                dtm = np.concatenate([e["dtm"][:, :md] for e in E], axis=1)
                dt_ig = np.concatenate([e["dt_ig"][:, :md] for e in E], axis=1)
                gt_ig = np.concatenate([e["gt_ig"] for e in E])
                npig = np.count_nonzero(gt_ig == 0)
                if npig == 0:
                    continue
                tps = np.logical_and(dtm, np.logical_not(dt_ig))
                fps = np.logical_and(np.logical_not(dtm), np.logical_not(dt_ig))
                # the points: bins with a counted detection at any threshold, highest first
                counted = np.logical_or(tps, fps).any(axis=0)
                points = sorted({int(b) for b in bins[counted]}, reverse=True)
                for t in range(nt):
                    tp_bin = np.array([np.count_nonzero(tps[t, bins == b]) for b in points], np.int64)
                    fp_bin = np.array([np.count_nonzero(fps[t, bins == b]) for b in points], np.int64)
                    tp_sum = np.cumsum(tp_bin).astype(float)
                    fp_sum = np.cumsum(fp_bin).astype(float)
                    gd.curve(precision, recall, t, k, a, m, tp_sum, fp_sum, npig, rec_thrs)
    return precision, recall


def tm_compute_bins(imgs, args, rec_override=None, bin_of=None, score_dtype="float32"):
    """bin_of(s, K) None: the rule of args' score_bins (an exact16 mode reads score_dtype, the `scores` dtype)."""
    iou, rec, md = gd.tm_settings(args)
    if rec_override is not None:
        rec = rec_override
    K, rule_bin_of, _ = bins_rule(args["score_bins"], score_dtype)
    bin_of = bin_of or rule_bin_of
    C = args["num_classes"]
    # the classes seen, in [0, C) (a label outside is refused before this)
    classes = gd.classes_of(imgs)
    assert all(0 <= c < C for c in classes), classes
    prec, recl = coco_eval_bins(imgs, classes, iou, rec, md, K, bin_of)
    stats = gd.summarize(prec, recl, iou, md)
    if args.get("class_metrics"):
        per_map, per_mar = [], []
        for k in range(len(classes)):
            st = gd.summarize(prec[:, :, k:k + 1], recl[:, k:k + 1], iou, md)
            per_map.append(st[0])
            per_mar.append(st[8])
    else:
        per_map = per_mar = -1.0
    return stats + [per_map, per_mar, classes]


# --------------------------------------------------------------------------------------------------------------------
# route 2: brute force from the rules
# --------------------------------------------------------------------------------------------------------------------
def brute_force_bins(inp, args, box_format="xyxy"):
    iou_thrs, rec_thrs, mds = gd.tm_settings(args)
    K, _, fmt = bins_rule(args["score_bins"], inp["scores"].dtype)
    if fmt is None:
        # the bin from the exact product (the guard below makes it the float64 one)
        def bin_of(sc):
            return min(max(math.floor(Fraction(sc) * K), 0), K - 1)
    else:
        # the 16-bit code from exact rationals (ref_code_bin), not from numpy's casts
        def bin_of(sc):
            return ref_code_bin(sc, fmt)
    dets, gts, classes, n_img = gd.brute_rows(inp, box_format, bin_of=bin_of)

    def statuses(by_img_d, by_img_g, lo, hi, md, thr):
        """[(bin, 'tp' | 'fp' | 'ign')] of every image's first md detections at threshold thr."""
        cap = min(thr, 1 - 1e-10)
        out = []
        for n in range(n_img):
            gl = by_img_g[n]
            ign = [t["crowd"] or not (lo <= t["area"] <= hi) for t in gl]
            taken = set()
            for d in by_img_d[n][:md]:
                out.append((d["bin"], gd.brute_match(d, gl, ign, taken, lo, hi, cap)))
        return out

    def evaluate(group_dets, group_gts):
        res = {}
        by_img_d = {n: sorted([d for d in group_dets if d["img"] == n], key=lambda d: (-d["score"], d["slot"]))
                    for n in range(n_img)}
        by_img_g = {n: sorted([t for t in group_gts if t["img"] == n], key=lambda t: t["slot"]) for n in range(n_img)}
        for a, (lo, hi) in enumerate(AREA_RNG):
            npig = sum(1 for t in group_gts if not t["crowd"] and lo <= t["area"] <= hi)
            for md in mds:
                if npig == 0:
                    for ti in range(len(iou_thrs)):
                        res[a, md, ti] = None
                    continue
                st = [statuses(by_img_d, by_img_g, lo, hi, md, thr) for thr in iou_thrs]
                points = sorted({b for per_t in st for b, s in per_t if s != "ign"}, reverse=True)
                for ti in range(len(iou_thrs)):
                    pts = []
                    for p in points:
                        tp = sum(1 for b, s in st[ti] if b >= p and s == "tp")
                        fp = sum(1 for b, s in st[ti] if b >= p and s == "fp")
                        pts.append((tp / npig, tp / (tp + fp + 2.0**-52)))
                    final_rc = pts[-1][0] if pts else 0.0
                    res[a, md, ti] = (gd.brute_ap(pts, final_rc, rec_thrs), final_rc)
        return res

    per_group = [evaluate([d for d in dets if d["label"] == c], [t for t in gts if t["label"] == c])
                 for c in classes]
    return gd.brute_stats(per_group, per_group if args.get("class_metrics") else None, mds, iou_thrs) + [classes]


# --------------------------------------------------------------------------------------------------------------------
# checks
# --------------------------------------------------------------------------------------------------------------------
def exact_args(args):
    return {k: v for k, v in args.items() if k not in ("score_bins", "num_classes")}


def own_bins(imgs, K, bin_of=score_bin):
    """True when no two detections of one class (any image, any rank) share a bin."""
    seen = set()
    for im in imgs:
        for d in im["dt"]:
            key = (d["label"], bin_of(d["score"], K))
            if key in seen:
                return False
            seen.add(key)
    return True


def check_case(name, inp, args, box_format):
    imgs = gd.tm_images(inp, box_format)
    score_dtype = inp["scores"].dtype
    K, bin_of, fmt = bins_rule(args["score_bins"], score_dtype)
    C = args["num_classes"]
    assert isinstance(K, int) and K >= 1 and isinstance(C, int) and C >= 1 and args.get("average") != "micro"
    labels = [a["label"] for im in imgs for kind in ("dt", "gt") for a in im[kind]]
    assert all(0 <= c < C for c in labels), f"{name}: a label outside [0, {C})"
    for im in imgs:
        for d in im["dt"]:
            if fmt is None:
                # bins: the float64 product floors as the exact product does (true for every float32 score)
                assert math.floor(d["score"] * K) == math.floor(Fraction(d["score"]) * K), (name, d["score"])
            else:
                # exact16: route 1's code (numpy's casts, bit arithmetic) = the one from exact rationals
                assert not math.isnan(d["score"]), name
                assert code_bin(d["score"], fmt) == ref_code_bin(d["score"], fmt), (name, d["score"], fmt)
    iou, rec, md = gd.tm_settings(args)
    thr_cands = gd.IOU_CANDIDATES if not args.get("iou_thresholds") else sorted(set(iou))
    bad = gd.fragile_pairs(imgs, thr_cands)
    assert not bad, f"{name}: IoU within 1e-9 of a threshold: {bad[:5]}"
    bad = gd.fragile_areas(imgs)
    assert not bad, f"{name}: area within 1e-6 of an area-range bound: {bad[:5]}"
    r1 = tm_compute_bins(imgs, args, score_dtype=score_dtype)
    if not args.get("rec_thresholds"):
        differ = [v for v, thr in gd.REC_VARIANTS.items()
                  if json.dumps(tm_compute_bins(imgs, args, rec_override=thr, score_dtype=score_dtype)) !=
                  json.dumps(r1)]
        assert not differ, f"{name}: recall thresholds {differ} change the result"
    r2 = brute_force_bins(inp, args, box_format)
    assert r1[-1] == r2[-1], (name, r1[-1], r2[-1])
    f1, f2 = gd._flat(r1[:-1]), gd._flat(r2[:-1])
    assert len(f1) == len(f2)
    for a, b in zip(f1, f2):
        d = abs(a - b)
        if d > WORST["diff"]:
            WORST.update(diff=d, case=name)
        assert d <= ROUTE_TOL, f"{name}: routes differ: {r1} vs {r2}"
    # against detection.json's exact (non-binned) transcription
    r0 = gd.tm_compute(imgs, exact_args(args))
    same = json.dumps(r0) == json.dumps(r1)
    if own_bins(imgs, K, bin_of):
        LOG["own_bins"].append(name)
        assert same, f"{name}: one detection per bin, yet the binned values differ from the exact ones: {r1} {r0}"
    LOG["equal_exact" if same else "differs_exact"].append(name)
    return r1, r0, imgs


class BinSuite(gd.DetSuite):
    def add_bins(self, tag, args, imgs=None, crowd=False, area=False, inp=None, dtype="float32", score_dtype=None):
        inp = inp or make_inputs(imgs, dtype, crowd, area, score_dtype)
        if imgs is not None and inp["scores"].dtype in ("float16", "bfloat16"):
            # 16-bit scores: the values stored are the values meant (float16 / bfloat16 values, asserted)
            meant = [float(d[1]) for im in imgs for d in im.dets]
            stored = [float(v) for v, lab in zip(inp["scores"].f64.reshape(-1), inp["labels"].a.reshape(-1))
                      if lab != -1]
            assert stored == meant, (tag, stored, meant)
            if inp["scores"].dtype == "bfloat16":
                assert not np.any(inp["scores"].a.view(np.uint32) & 0xFFFF), (tag, meant)
        box_format = args.get("box_format", "xyxy")
        name = f"{M}{gd._argtag(args)}__{tag}"
        vals, exact, tm_imgs = check_case(name, inp, args, box_format)
        assert name not in self._names, name
        self._names.add(name)
        keys = gd.tm_keys(args)
        self.cases.append({"name": name, "metric": spec(M, args), "inputs": {k: v.to_json() for k, v in inp.items()},
                           "expected": [g._expected(v) for v in vals], "keys": keys, "rtol": RT, "atol": AT,
                           "source": SOURCE})
        return dict(zip(keys, vals)), dict(zip(keys, exact)), tm_imgs


def approx(v, want, tol=1e-14):
    return abs(v - want) <= tol


def bins_args(K, C, **rest):
    out = {"score_bins": K, "num_classes": C}
    out.update(rest)
    return out


# --------------------------------------------------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------------------------------------------------
def detection_datasets():
    """gen_detection.gen()'s cases by name -> their inputs (T), rebuilt from the JSON it writes."""
    with contextlib.redirect_stdout(io.StringIO()):
        S = gd.gen()
    out = {}
    for c in S.cases:
        if "error" in c:
            continue
        inp = {}
        for k, v in c["inputs"].items():
            inp[k] = T(np.array(v["data"], np.float64 if v["dtype"].startswith("float") else np.int64)
                       .reshape(v["shape"]), v["dtype"])
            assert inp[k].to_json() == v, (c["name"], k)
        out[c["name"]] = inp
    return out


def gen():
    S = BinSuite("detection_bins.json")
    D = detection_datasets()

    def ds(name):
        return D[f"{M}__{name}" if not name.startswith("_") else M + name]

    # ---- constructed: one detection per bin -> the exact values -----------------------------------------------
    # 3 images, classes 0, 1, 2 of C = 4 (class 3 never seen), K = 100: every detection of a class in its own bin
    # (scores 0.01 apart at least, float32 values away from the edges), TPs and FPs interleaved across images
    def box(x, y, w=40, h=40):
        return (x, y, x + w, y + h)

    own = [
        Img([(box(0, 0), 0.915, 0), (box(300, 300), 0.805, 0), (box(100, 0), 0.655, 0), (box(0, 100, 60, 60), 0.455, 1),
             (box(500, 500), 0.125, 2)],
            [(box(0, 0), 0), (box(100, 0), 0), (box(200, 0), 0), (box(0, 100, 60, 60), 1)]),
        Img([(box(10, 10), 0.875, 0), (box(400, 10), 0.735, 0), (box(200, 200, 100, 100), 0.615, 1),
             (box(10, 300), 0.335, 2)],
            [(box(10, 10), 0), (box(200, 200, 100, 100), 1), (box(10, 300), 2), (box(90, 300), 2)]),
        Img([(box(0, 0, 20, 20), 0.995, 1), (box(50, 50), 0.565, 0), (box(300, 0, 20, 20), 0.255, 1)],
            [(box(0, 0, 20, 20), 1), (box(50, 50), 0), (box(200, 200), 0)]),
    ]
    r, ex, imgs = S.add_bins("one_detection_per_bin_equals_exact", bins_args(100, 4, class_metrics=True), own)
    assert own_bins(imgs, 100) and r == ex and r["classes"] == [0, 1, 2], r
    # the same scenes with K = 10: class 0 now holds 0.875 (TP) and 0.805 (FP) in bin 8 -> different values
    r10, ex10, _ = S.add_bins("one_detection_per_bin_equals_exact", bins_args(10, 4, class_metrics=True), own)
    assert r10 != ex10 and r10["map_per_class"][0] != ex10["map_per_class"][0], (r10, ex10)
    assert r10["map_per_class"][1:] == ex10["map_per_class"][1:]

    # ---- constructed: a bin mixing a TP and an FP -------------------------------------------------------------
    # one image, two gts, K = 10: TP 0.95 and FP 0.92 share bin 9, TP 0.35 is alone in bin 3 (IoU 1 everywhere).
    # exact: TP, FP, TP: precision 1 up to recall 1/2, then 2/3: AP = (51 + 50 * 2/3) / 101
    # binned: bin 9 enters as (tp 1, fp 1) -> precision 1/2 at recall 1/2, then 2/3 at recall 1: AP = 2/3
    mixed = [Img([(box(0, 0), 0.95, 0), (box(300, 300), 0.92, 0), (box(100, 0), 0.35, 0)],
                 [(box(0, 0), 0), (box(100, 0), 0)])]
    r, ex, _ = S.add_bins("bin_mixes_tp_and_fp", bins_args(10, 1), mixed)
    assert approx(r["map"], 2 / 3) and approx(ex["map"], (51 + 50 * 2 / 3) / 101) and r["map"] != ex["map"], (r, ex)
    assert r["mar_100"] == ex["mar_100"] == 1.0 and r["mar_1"] == ex["mar_1"] == 0.5, (r, ex)
    # the TP and FP in separate bins (K = 100: bins 95, 92, 35): the exact value again
    r, ex, _ = S.add_bins("bin_mixes_tp_and_fp", bins_args(100, 1), mixed)
    assert r == ex and approx(r["map"], (51 + 50 * 2 / 3) / 101), r

    # ---- constructed: scores on bin edges, 1.0, above 1, below 0 ----------------------------------------------
    # K = 2. class 0 (3 gts): TP 0.5 (edge -> bin 1, alone), FP 0.375, TP 0.0 (edge -> bin 0), FP -0.25 (bin 0):
    #   points (1/3, 1), (2/3, 1/2). class 1 (2 gts): FP 1.5 (-> bin 1), TP 1.0 (-> bin 1), TP 0.75: one point
    #   (1, 2/3). class 2 (1 gt): TP 2.0 and FP -1.0 (end bins): points (1, 1), (1, 1/2)
    edges = [Img([(box(0, 0), 0.5, 0), (box(400, 400), 0.375, 0), (box(100, 0), 0.0, 0), (box(400, 500), -0.25, 0),
                  (box(500, 0), 1.5, 1), (box(0, 200), 1.0, 1), (box(100, 200), 0.75, 1),
                  (box(0, 300), 2.0, 2), (box(500, 300), -1.0, 2)],
                 [(box(0, 0), 0), (box(100, 0), 0), (box(200, 0), 0), (box(0, 200), 1), (box(100, 200), 1),
                  (box(0, 300), 2)])]
    args = bins_args(2, 3, class_metrics=True)
    r, ex, imgs = S.add_bins("scores_on_bin_edges_1.0_above_1_below_0", args, edges)
    assert [score_bin(s, 2) for s in (0.5, 0.375, 0.0, -0.25, 1.5, 1.0, 0.75, 2.0, -1.0)] == [1, 0, 0, 0, 1, 1, 1, 1, 0]
    assert approx(r["map_per_class"][0], (34 + 33 * 0.5) / 101), r  # q = 1 for r <= 1/3, 1/2 up to 2/3
    assert approx(r["map_per_class"][1], 2 / 3) and approx(r["map_per_class"][2], 1.0 - 2.0**-52, 1e-15), r
    # the edges decide: an edge in the lower bin, or scores outside [0, 1] dropped, give other values
    wrong = tm_compute_bins(imgs, args, bin_of=bin_ceil_minus_1)
    assert wrong[12][0] != r["map_per_class"][0], wrong
    dropped = [dict(im, dt=[d for d in im["dt"] if 0.0 <= d["score"] <= 1.0]) for im in imgs]
    dropped = tm_compute_bins(dropped, args)
    assert dropped[12][1] != r["map_per_class"][1] and dropped[12][2] != r["map_per_class"][2], dropped

    # K = 10, float32 scores: f32(0.7) = 0.699999988 -> bin 6 with the FP 0.65; f32(0.9) = 0.899999976 -> bin 8;
    # 1.0 -> bin 9 (K - 1), f32(0.3) = 0.300000012 -> bin 3 (not 2)
    f32_edges = [Img([(box(0, 0), 1.0, 0), (box(300, 300), 0.9, 0), (box(100, 0), 0.7, 0), (box(400, 0), 0.65, 0),
                      (box(200, 0), 0.3, 0), (box(500, 0), 0.29, 0)],
                     [(box(0, 0), 0), (box(100, 0), 0), (box(200, 0), 0), (box(0, 200), 0)])]
    args = bins_args(10, 1)
    r, ex, imgs = S.add_bins("float32_scores_next_to_bin_edges", args, f32_edges)
    assert [score_bin(d["score"], 10) for d in imgs[0]["dt"]] == [9, 8, 6, 6, 3, 2], imgs[0]["dt"]
    assert tm_compute_bins(imgs, args, bin_of=bin_decimal) != [r[k] for k in gd.tm_keys(args)]
    assert r != ex

    # ---- constructed: classes of [0, C) never seen; num_classes above every label --------------------------------
    # C = 8: class 0 TP/FP, class 2 only in the target, class 5 only in the predictions (4 detections, more than
    # maxDets 3: the ones beyond still make class 5 seen), classes 1, 3, 4, 6, 7 never seen
    unseen = [Img([(box(0, 0), 0.9, 0), (box(300, 300), 0.6, 0), (box(0, 400), 0.8, 5), (box(100, 400), 0.7, 5),
                   (box(200, 400), 0.65, 5), (box(300, 400), 0.2, 5)],
                  [(box(0, 0), 0), (box(100, 0), 0), (box(0, 200), 2)]),
              Img([(box(0, 0), 0.45, 0)], [(box(0, 0), 0), (box(100, 100), 2)])]
    r, ex, _ = S.add_bins("quirk_map_needs_maxdet_100_classes_never_seen_num_classes_8",
                          bins_args(10, 8, class_metrics=True, max_detection_thresholds=[1, 2, 3]), unseen)
    assert r["classes"] == [0, 2, 5] and r["mar_3_per_class"][1] == 0.0 and r["mar_3_per_class"][2] == -1.0, r
    # the maxDets-100 rule; two FPs of class 5 share bin 6 (f32(0.7) = 0.69999999): still the exact values
    assert r["map"] == -1.0 and r["map_per_class"] == [-1.0] * 3 and r == ex
    r, ex, _ = S.add_bins("classes_never_seen_num_classes_80", bins_args(1000, 80, class_metrics=True), unseen)
    assert r["classes"] == [0, 2, 5] and r["map_per_class"][1:] == [0.0, -1.0] and r == ex, r

    # ---- detection.json's datasets ---------------------------------------------------------------------------------
    r, ex, _ = S.add_bins("docstring_example", bins_args(10, 1), inp=ds("docstring_example"))
    assert r == ex and approx(r["map"], 0.6, 1e-12)
    r, ex, _ = S.add_bins("score_ties_within_and_across_images", bins_args(2, 1),
                          inp=ds("score_ties_within_and_across_images"))
    assert r == ex  # all five detections score 0.5: one bin, and the exact curve's envelope is the same
    S.add_bins("crowd_regions", bins_args(10, 2), inp=ds("crowd_regions"))
    S.add_bins("quirk_target_area_given_zero_or_negative_uses_box_area", bins_args(2, 1, class_metrics=True),
               inp=ds("_class_metrics-true__quirk_target_area_given_zero_or_negative_uses_box_area"))
    S.add_bins("area_ranges_boundaries_32sq_96sq", bins_args(10, 2, class_metrics=True),
               inp=ds("area_ranges_boundaries_32sq_96sq"))
    S.add_bins("images_without_gt_or_dets", bins_args(100, 3, class_metrics=True),
               inp=ds("images_without_gt_or_dets"))
    S.add_bins("only_gt_no_detections_at_all", bins_args(10, 3), inp=ds("only_gt_no_detections_at_all"))
    r, _, _ = S.add_bins("all_padding_no_classes", bins_args(10, 5, class_metrics=True),
                         inp=ds("_class_metrics-true__all_padding_no_classes"))
    assert r["classes"] == [] and r["map"] == -1.0 and r["map_per_class"] == []
    r, _, _ = S.add_bins("class_only_in_preds_and_class_only_in_target", bins_args(100, 8, class_metrics=True),
                         inp=ds("_class_metrics-true__class_only_in_preds_and_class_only_in_target"))
    assert r["classes"] == [0, 1, 2, 7]
    big = ds("150_detections_in_one_image")
    S.add_bins("150_detections_in_one_image", bins_args(100, 2), inp=big)
    S.add_bins("150_detections_in_one_image", bins_args(1000, 2, max_detection_thresholds=[5, 100, 200]), inp=big)
    S.add_bins("quirk_map_needs_maxdet_100_150_detections_in_one_image",
               bins_args(10, 2, max_detection_thresholds=[1, 5, 10]), inp=big)
    r, _, _ = S.add_bins("one_class_id_3", bins_args(1, 4), inp=ds("one_class_id_3"))
    assert r["classes"] == [3]
    many = ds("_class_metrics-true__many_classes_80_sparse")
    S.add_bins("many_classes_80_sparse", bins_args(1000, 80, class_metrics=True), inp=many)
    r, _, _ = S.add_bins("many_classes_80_sparse_num_classes_90", bins_args(100, 90, class_metrics=True), inp=many)
    assert max(r["classes"]) < 80
    ref, _, _ = S.add_bins("random_9_images_4_classes", bins_args(10, 4), inp=ds("random_9_images_4_classes"))
    for fmt in ("xywh", "cxcywh"):
        r, _, _ = S.add_bins("random_9_images_4_classes", bins_args(10, 4, box_format=fmt),
                             inp=ds(f"_box_format-{fmt}__random_9_images_4_classes"))
        assert r == ref, fmt
    S.add_bins("random_float64_off_grid", bins_args(1000, 2), inp=ds("random_float64_off_grid"))
    S.add_bins("random_float64_off_grid_cxcywh", bins_args(100, 2, box_format="cxcywh"),
               inp=ds("_box_format-cxcywh__random_float64_off_grid_cxcywh"))
    r12 = ds("random_12_images_3_classes")
    for args in (bins_args(2, 3), bins_args(1, 3, class_metrics=True), bins_args(10, 3, iou_thresholds=[0.25, 0.625]),
                 bins_args(100, 3, rec_thresholds=[0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]),
                 bins_args(10, 3, max_detection_thresholds=[2, 3, 100]),
                 bins_args(1000, 3, iou_thresholds=[0.3, 0.6], rec_thresholds=[0.0, 0.5, 1.0],
                           max_detection_thresholds=[1, 2, 100], class_metrics=True)):
        S.add_bins("random_12_images_3_classes", args, inp=r12)
    r, _, _ = S.add_bins("quirk_map_needs_maxdet_100_random_12_images_3_classes",
                         bins_args(10, 3, max_detection_thresholds=[1, 5, 10]), inp=r12)
    assert r["map"] == -1.0
    S.add_bins("coco_like_50_images_80_classes", bins_args(1000, 80, class_metrics=True),
               inp=ds("_class_metrics-true__coco_like_50_images_80_classes"))

    # ---- refused -------------------------------------------------------------------------------------------------
    doc = [Img([((258.0, 41.0, 606.0, 285.0), 0.536, 0), ((0.0, 0.0, 10.0, 10.0), 0.3, 1)],
               [((214.0, 41.0, 562.0, 285.0), 0), ((0.0, 0.0, 10.0, 10.0), 2)])]
    inp = make_inputs(doc)
    # exactly one label outside [0, 3) in each: the count the message starts with is 1
    bad = dict(inp)
    bad["labels"] = T(np.where(inp["labels"].a == 1, 3, inp["labels"].a), "int64")
    S.add_refused("label_equals_num_classes", bins_args(10, 3), bad, "labels: 1 labels outside [0, 3)",
                  "a detection label == num_classes (labels must lie in [0, num_classes), -1 pads)")
    bad = dict(inp)
    bad["target_labels"] = T(np.where(inp["target_labels"].a == 2, 3, inp["target_labels"].a), "int64")
    S.add_refused("target_label_equals_num_classes", bins_args(10, 3), bad, "target_labels: 1 labels outside [0, 3)",
                  "a target label == num_classes (labels must lie in [0, num_classes), -1 pads)")
    bad = dict(inp)
    bad["labels"] = T(np.where(inp["labels"].a == 1, -2, inp["labels"].a), "int64")
    S.add_refused("label_minus_2", bins_args(10, 3), bad, "labels: 1 labels outside [0, 3)",
                  "a detection label -2 (only -1 pads a slot)")
    S.add_refused("score_bins_with_average_micro", bins_args(10, 3, average="micro"), inp, "score_bins",
                  "score_bins takes average=macro only")
    S.add_refused("score_bins_without_num_classes", {"score_bins": 10}, inp, "score_bins",
                  "score_bins needs num_classes")
    S.add_refused("num_classes_without_score_bins", {"num_classes": 3}, inp, "num_classes",
                  "num_classes is read with score_bins only")
    S.add_refused("score_bins_0", bins_args(0, 3), inp, "score_bins", "score_bins must be a positive integer")

    # ---- exact16 modes: score_bins=exact16 | exact_fp16 | exact_bf16 (the bin is the score's 16-bit code) --------
    self_test_codes()

    def rescore(imgs, fn):
        return [Img([(b, fn(sc), c) for b, sc, c in im.dets], im.gts) for im in imgs]

    def codes(imgs, fmt):
        return [code_bin(d[1], fmt) for im in imgs for d in im.dets]

    # float16 scores (the `own` scenes on the grid k/1024, float16 values), exact16 -> float16. Class 0's FP 0.805
    # moves to 0.875 - 2^-11, the float16 just below its TP 0.875: adjacent codes 0x3AFF, 0x3B00, one detection per
    # code -> the exact values; score_bins=100 puts the two in bin 87 and differs
    own16 = rescore(own, lambda sc: round(sc * 1024) / 1024)
    own16[0].dets[1][1] = 0.875 - 2.0**-11
    args = bins_args("exact16", 4, class_metrics=True)
    r, ex, imgs = S.add_bins("float16_scores_one_detection_per_code_equals_exact", args, own16,
                             score_dtype="float16")
    assert own_bins(imgs, CODE_K["float16"], code_bin_of("float16")) and r == ex and r["classes"] == [0, 1, 2], r
    assert code_bin(0.875 - 2.0**-11, "float16") == 0x3AFF and code_bin(0.875, "float16") == 0x3B00
    k100 = tm_compute_bins(imgs, bins_args(100, 4, class_metrics=True), score_dtype="float16")
    assert k100[12][0] != r["map_per_class"][0] and k100[12][1:] == r["map_per_class"][1:], k100
    # exact16 reads float16 scores as float16: bfloat16 codes would tie the pair (224/256 both)
    bf = tm_compute_bins(imgs, bins_args("exact_bf16", 4, class_metrics=True), score_dtype="float16")
    assert bf[12][0] != r["map_per_class"][0], bf

    # bfloat16 scores (the grid k/256, bfloat16 values), exact16 -> bfloat16 (K = 0x3F81). Class 0's FP sits one
    # bfloat16 below its TP (223/256, 224/256: codes 0x3F5F, 0x3F60); a 4th image holds class 2's TP 2^-27 and FP
    # 2^-30, apart in bfloat16 (0x3200, 0x3080) but both 0 in float16 (below half its smallest subnormal 2^-24):
    # exact16 -> the exact values; exact_fp16 on the same bfloat16 tensor ties them in bin 0 (class 2 only differs)
    own_bf = rescore(own, lambda sc: round(sc * 256) / 256)
    own_bf[0].dets[1][1] = 223 / 256
    own_bf.append(Img([(box(0, 0), 2.0**-27, 2), (box(300, 300), 2.0**-30, 2)], [(box(0, 0), 2)]))
    assert codes(own_bf[3:], "bfloat16") == [0x3200, 0x3080] and codes(own_bf[3:], "float16") == [0, 0]
    r, ex, imgs = S.add_bins("bfloat16_scores_one_detection_per_code_equals_exact",
                             bins_args("exact16", 4, class_metrics=True), own_bf, score_dtype="bfloat16")
    assert own_bins(imgs, CODE_K["bfloat16"], code_bin_of("bfloat16")) and r == ex, r
    # class 2 (3 gts): TP 0.3359375, FP 0.125, then TP 2^-27 and FP 2^-30 together in float16's bin 0: the point
    # (2/3, 2/3) is gone, recall 0.34 ... 0.66 reads 1/2 instead of 2/3
    r, ex2, _ = S.add_bins("bfloat16_scores_below_float16_range_share_float16_code_0",
                           bins_args("exact_fp16", 4, class_metrics=True), own_bf, score_dtype="bfloat16")
    assert r["map_per_class"][:2] == ex["map_per_class"][:2] and ex2 == ex, (r, ex)
    assert approx(ex["map_per_class"][2], (34 + 33 * 2 / 3) / 101) and approx(r["map_per_class"][2],
                                                                             (34 + 33 * 0.5) / 101), r

    # float32 scores, exact_fp16: TP 0.9502 and FP 0.9501 both round to float16 0.9501953125 (code 0x3B9A) -> one
    # point (1/2, 1/2), AP 2/3 as bin_mixes_tp_and_fp; the `mixed` scene (0.95, 0.92: codes 0x3B9A, 0x3B5C) -> exact
    mixed16 = [Img([(box(0, 0), 0.9502, 0), (box(300, 300), 0.9501, 0), (box(100, 0), 0.35, 0)],
                   [(box(0, 0), 0), (box(100, 0), 0)])]
    assert codes(mixed16, "float16")[:2] == [0x3B9A, 0x3B9A] and codes(mixed, "float16")[:2] == [0x3B9A, 0x3B5C]
    r, ex, _ = S.add_bins("float32_scores_tp_and_fp_share_a_float16_code", bins_args("exact_fp16", 1), mixed16)
    assert approx(r["map"], 2 / 3) and approx(ex["map"], (51 + 50 * 2 / 3) / 101) and r["map"] != ex["map"], (r, ex)
    r, ex, _ = S.add_bins("float32_scores_tp_and_fp_float16_codes_apart", bins_args("exact_fp16", 1), mixed)
    assert r == ex and approx(r["map"], (51 + 50 * 2 / 3) / 101), r

    # exact_bf16 merges what float16 keeps apart: TP 0.95 and FP 0.948 are 243/256 in bfloat16 (0x3F73), float16
    # codes 0x3B9A and 0x3B96
    mixed_bf = [Img([(box(0, 0), 0.95, 0), (box(300, 300), 0.948, 0), (box(100, 0), 0.35, 0)],
                    [(box(0, 0), 0), (box(100, 0), 0)])]
    assert codes(mixed_bf, "bfloat16")[:2] == [0x3F73, 0x3F73] and codes(mixed_bf, "float16")[:2] == [0x3B9A, 0x3B96]
    r, ex, _ = S.add_bins("float32_scores_tp_and_fp_share_a_bfloat16_code_not_a_float16_one",
                          bins_args("exact_bf16", 1), mixed_bf)
    assert approx(r["map"], 2 / 3) and r["map"] != ex["map"], (r, ex)
    r, ex, _ = S.add_bins("float32_scores_tp_and_fp_share_a_bfloat16_code_not_a_float16_one",
                          bins_args("exact_fp16", 1), mixed_bf)
    assert r == ex, r

    # edge scores, float32 (exact16 -> float16; and exact_bf16). Each class has 2 gts (IoU 1) and 3 detections;
    # "apart" = points (1/2, 1), (1, 2/3) after the envelope: AP (51 + 50 * 2/3) / 101; "tie" = a first bin holding
    # a TP and an FP: (1/2, 1/2), (1, 2/3): AP 2/3
    #   class 0: TP 1.5 and FP 1.0, both in the top bin K - 1 (1.5 clamped) -> tie (exact: TP, FP, TP: apart)
    #   class 1: TP 0.5 + 2^-20 and FP 0.5, one code in either format (below float16 precision) -> tie; TP 0.25
    #   class 2: TP 0.125; TP 0.0 and FP -0.25 both in bin 0 (zero; a negative value) -> apart (exact: TP, TP, FP:
    #            1 - 2^-52 ...)
    #   class 3: TP 2^-24 (float16's smallest subnormal: bin 1), FP 2^-25 (ties to even: float16 0, bin 0), TP 0.0
    #            (bin 0) -> apart, the exact value in both formats; 2^-24 flushed to 0 would tie all three
    edge16 = [Img([(box(0, 0), 1.5, 0), (box(300, 0), 1.0, 0), (box(100, 0), 0.75, 0),
                   (box(0, 100), 0.5 + 2.0**-20, 1), (box(300, 100), 0.5, 1), (box(100, 100), 0.25, 1),
                   (box(0, 200), 0.125, 2), (box(100, 200), 0.0, 2), (box(300, 200), -0.25, 2),
                   (box(0, 300), 2.0**-24, 3), (box(300, 300), 2.0**-25, 3), (box(100, 300), 0.0, 3)],
                  [(box(0, 0), 0), (box(100, 0), 0), (box(0, 100), 1), (box(100, 100), 1),
                   (box(0, 200), 2), (box(100, 200), 2), (box(0, 300), 3), (box(100, 300), 3)])]
    assert codes(edge16, "float16") == [0x3C00, 0x3C00, 0x3A00, 0x3800, 0x3800, 0x3400, 0x3000, 0, 0, 1, 0, 0]
    assert codes(edge16, "bfloat16") == [0x3F80, 0x3F80, 0x3F40, 0x3F00, 0x3F00, 0x3E80, 0x3E00, 0, 0, 0x3380,
                                         0x3300, 0]
    tie, apart = 2 / 3, (51 + 50 * 2 / 3) / 101
    for mode in ("exact16", "exact_bf16"):
        r, ex, imgs = S.add_bins("scores_0_1_above_1_below_0_smallest_float16_subnormal_below_float16_precision",
                                 bins_args(mode, 4, class_metrics=True), edge16)
        assert all(approx(v, w) for v, w in zip(r["map_per_class"], [tie, tie, apart, apart])), (mode, r)
        assert all(approx(v, apart) for v in ex["map_per_class"][:2]) and approx(ex["map_per_class"][2], 1.0, 1e-15)
        assert ex["map_per_class"][3] == r["map_per_class"][3], (mode, r, ex)
        # 1.5 in a bin of its own above K - 1 (not clamped) would give another value
        fmt = exact16_format(mode, "float32")
        wrong = tm_compute_bins(imgs, bins_args(mode, 4, class_metrics=True),
                                bin_of=lambda sc, k: max(code16(sc, fmt) - 0x8000, 0))
        assert wrong[12][0] != r["map_per_class"][0], wrong
    flushed = tm_compute_bins(imgs, bins_args("exact16", 4, class_metrics=True),
                              bin_of=lambda sc, k: code_bin(0.0 if abs(sc) < 2.0**-14 else sc, "float16"))
    assert flushed[12][3] != r["map_per_class"][3], flushed

    # float64 scores: rounded to float32 first, then to 16 bits. TP 0.5 + 2^-12 + 2^-40 is above float16's midpoint
    # 0.5 + 2^-12, but float32 drops the 2^-40: the midpoint ties to even, 0.5 -> tied with class 0's FP 0.5 (a
    # direct float64 -> float16 rounding keeps them apart); class 1 the same next to bfloat16's midpoint 0.5 + 2^-9
    dbl = [Img([(box(0, 0), 0.5 + 2.0**-12 + 2.0**-40, 0), (box(300, 0), 0.5, 0), (box(100, 0), 0.25, 0),
                (box(0, 100), 0.5 + 2.0**-9 + 2.0**-40, 1), (box(300, 100), 0.5, 1), (box(100, 100), 0.25, 1)],
               [(box(0, 0), 0), (box(100, 0), 0), (box(0, 100), 1), (box(100, 100), 1)])]
    for mode, want, want_direct in (("exact_fp16", [tie, apart], [apart, apart]),
                                    ("exact_bf16", [tie, tie], [tie, apart])):
        args = bins_args(mode, 2, class_metrics=True)
        r, ex, imgs = S.add_bins("float64_scores_rounded_to_float32_first", args, dbl, dtype="float64")
        assert all(approx(v, w) for v, w in zip(r["map_per_class"], want)), (mode, r)
        fmt = exact16_format(mode, "float64")
        direct = tm_compute_bins(imgs, args, bin_of=lambda sc, k: ref_code_bin(sc, fmt, via_float32=False),
                                 score_dtype="float64")
        assert all(approx(v, w) for v, w in zip(direct[12], want_direct)), (mode, direct)

    # detection.json's datasets under exact_fp16 (float32 scores with 3 decimals: distinct ones get distinct float16
    # codes, equal ones share one; the float64 scores off the grid go through float32)
    r, ex, _ = S.add_bins("random_12_images_3_classes", bins_args("exact_fp16", 3, iou_thresholds=[0.25, 0.625]),
                          inp=r12)
    assert r == ex, r  # codes shared only by detections whose order does not matter
    r, ex, _ = S.add_bins("coco_like_50_images_80_classes", bins_args("exact_fp16", 80, class_metrics=True),
                          inp=ds("_class_metrics-true__coco_like_50_images_80_classes"))
    # no two distinct scores of one class share a code, but equal scores do: a TP and an FP of one score enter
    # together, where the exact curve takes them in image order (11 of the classes differ)
    assert r != ex and sum(a != b for a, b in zip(r["map_per_class"], ex["map_per_class"])) == 11, r
    r, ex, _ = S.add_bins("random_float64_off_grid", bins_args("exact_fp16", 2), inp=ds("random_float64_off_grid"))
    assert r == ex, r
    return S


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                                                             "detection_bins.json")
    S = gen()
    path = S.write_to(out)
    n_ref = sum("error" in c for c in S.cases)
    print(f"{path}: {len(S.cases)} cases ({n_ref} refused), {os.path.getsize(path) // 1024} KiB")
    print(f"largest difference between the two routes: {WORST['diff']:.2e} ({WORST['case']})")
    print(f"equal to the exact (non-binned) values: {len(LOG['equal_exact'])} ({len(LOG['own_bins'])} with one "
          f"detection per bin, asserted); different: {len(LOG['differs_exact'])}")
    for k in ("own_bins", "equal_exact", "differs_exact"):
        for n in LOG[k]:
            print(f"  {k}: {n}")


if __name__ == "__main__":
    main()
