#!/usr/bin/env python3
"""Golden fixtures for metrics TorchMetrics added between 1.6 and 1.9.

Regenerate (needs numpy, scipy, scikit-learn, as gen_fixtures.py; torch only for the float32 points of
torch.linspace, as gen_fixtures._torch_linspace_f32, used by the binned eer/logauc cases):

    /usr/bin/python3 tests/golden/gen_additions.py

Output, in the case format of tests/golden/README.md: tests/golden/fixtures/additions.json --
  1. binary_/multiclass_/multilabel_negative_predictive_value and the wrapper negative_predictive_value(task=...)
     (inputs preds, target as the *_specificity fixtures);
  2. normalized_root_mean_squared_error (preds, target [N] or [N, d] float);
  3. jensen_shannon_divergence (preds = p, target = q, [N, C]);
  4. continuous_ranked_probability_score (preds [N, M] ensemble, target [N]);
  5. binary_/multiclass_/multilabel_eer, eer(task=...) and
  6. binary_/multiclass_/multilabel_logauc, logauc(task=...).

Every expected value comes from scikit-learn, SciPy or hand-written numpy following TorchMetrics' rules, each
cited in a `# rule:` comment (paths relative to the torchmetrics repo). The rules were read from torchmetrics
v1.9.0 (src/torchmetrics/functional/classification/negative_predictive_value.py, eer.py, logauc.py, roc.py,
precision_recall_curve.py, stat_scores.py, utilities/compute.py, utilities/data.py; functional/regression/nrmse.py,
js_divergence.py, kl_divergence.py, crps.py; regression/nrmse.py, js_divergence.py, crps.py). TorchMetrics itself
is not used.

Expected values are exact float64 results for the given inputs (float32 inputs upcast first); TorchMetrics
computes these in float32. The eer/logauc routes are also run on TorchMetrics' float32 curves
(gen_fixtures.curve_output_expected) and asserted to land on the same values; eer ties are decided on exact
rationals (the first minimum), and the data avoid ties that float32 rounding would decide differently.
TorchMetrics' docstring examples of these metrics are cases too (`__docstring_example*`), their printed values
asserted to 4 decimals.

Not covered: multiclass top_k > 1 for NPV (TorchMetrics 1.9's _refine_preds_oh predicts the target when it is among
the top k, else the top 1 -- not 1.5's multi-hot, which Tally's other fixtures follow); multiclass/multilabel
samplewise NPV; log-probs with -inf (TorchMetrics gives 0 * -inf = NaN); logauc of a class without negatives
(TorchMetrics' interp divides by 0: inf/NaN, and its macro skips only NaN); binned curves that do not span
fpr_range (TorchMetrics' interp extrapolates with the end slopes).
"""
import math
import os
import sys
from fractions import Fraction

import numpy as np
from scipy import special
from scipy.spatial.distance import jensenshannon
from sklearn import metrics as skm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as gf  # noqa: E402
from gen_fixtures import T, Suite, _argtag, _close, spec  # noqa: E402

RT, AT = 1e-9, 1e-12  # exact float64 results (regression)
LN2 = math.log(2.0)


# ============================================================================================
# 1. negative predictive value
# ============================================================================================
def _npv_cols(prep):
    """One (target, pred) 0/1 column pair per class/label; multiclass one-vs-rest (top_k = 1 only)."""
    if prep["kind"] in ("binary", "multilabel"):
        return prep["cols"]
    assert prep["ind"] is None, "top_k > 1 is not covered (TorchMetrics 1.9 refines the top-k one-hot)"
    t, lab = prep["t"], prep["lab"]
    return [((t == c).astype(np.int64), (lab == c).astype(np.int64)) for c in range(prep["C"])]


def _sk_neg_precision(tc, pc, zd):
    # negative predictive value = precision of the negative class: #(pred 0 & true 0) / #(pred 0)
    return float(skm.precision_score(tc, pc, labels=[0], average=None, zero_division=int(zd))[0])


def npv_expected(prep, args):
    zd = float(args.get("zero_division", 0.0))
    assert zd in (0.0, 1.0)
    c = gf.counts(prep)  # sklearn multilabel_confusion_matrix / confusion_matrix counts
    tp, fp, tn, fn = (c[k].astype(np.float64) for k in ("tp", "fp", "tn", "fn"))
    # rule: per class tn / (tn + fn), `zero_division` where tn + fn == 0 -- src/torchmetrics/functional/classification/negative_predictive_value.py (_negative_predictive_value_reduce), src/torchmetrics/utilities/compute.py (_safe_divide)
    per = gf.sdiv(tn, tn + fn, zd)
    cols = _npv_cols(prep)
    sk = np.array([_sk_neg_precision(tc, pc, zd) for tc, pc in cols])
    _close(per, sk, tol=1e-12)
    base = "sklearn.metrics.precision_score(labels=[0]) (negative-class precision = tn / (tn + fn))"
    if prep["kind"] == "binary":
        return float(sk[0]), base
    what = "per label" if prep["kind"] == "multilabel" else "one-vs-rest per class"
    average = args.get("average", "macro")
    if average == "none":
        return sk, f"{base} {what}"
    if average == "micro":
        # rule: micro sums tn and fn over the classes first: sum(tn) / (sum(tn) + sum(fn)) -- negative_predictive_value.py (_negative_predictive_value_reduce)
        v = float(gf.sdiv(tn.sum(), tn.sum() + fn.sum(), zd))
        pooled_t = np.concatenate([tc for tc, _ in cols])
        pooled_p = np.concatenate([pc for _, pc in cols])
        _close(v, _sk_neg_precision(pooled_t, pooled_p, zd), tol=1e-12)
        if prep["kind"] == "multiclass":
            n = len(prep["t"])
            right = int((prep["t"] == prep["lab"]).sum())
            wrong = n - right
            # rule: multiclass micro (top_k = 1, global) counts tp = #correct, fp = fn = #wrong, tn = C*n - (tp + fp + fn) -- src/torchmetrics/functional/classification/stat_scores.py (_multiclass_stat_scores_update)
            tn_m = prep["C"] * n - (right + 2 * wrong)
            _close(v, gf.sdiv(tn_m, tn_m + wrong, zd), tol=1e-12)
        return v, f"{base} over the pooled {'one-vs-rest' if prep['kind'] == 'multiclass' else 'label'} elements (micro)"
    if average == "weighted":
        # rule: weighted = weights tp + fn (the class's POSITIVE support, not its tn + fn) -- src/torchmetrics/utilities/compute.py (_adjust_weights_safe_divide)
        w = tp + fn
        rule = "TM weighted rule (weights tp + fn)"
    else:
        assert average == "macro"
        w = np.ones_like(per)
        if prep["kind"] == "multiclass":
            # rule: multiclass macro drops classes with tp + fp + fn == 0 (top_k = 1; NPV passes top_k, so top_k > 1 would drop tp + fn == 0) -- negative_predictive_value.py, src/torchmetrics/utilities/compute.py (_adjust_weights_safe_divide)
            w[(tp + fp + fn) == 0] = 0.0
            rule = "TM macro rule (classes with tp + fp + fn == 0 left out)"
        else:
            # rule: multilabel macro keeps every label (multilabel=True) -- negative_predictive_value.py, src/torchmetrics/utilities/compute.py (_adjust_weights_safe_divide)
            rule = "TM macro rule (plain mean over all labels)"
    # rule: sum(w * score) / sum(w), 0 when sum(w) == 0 -- src/torchmetrics/utilities/compute.py (_adjust_weights_safe_divide)
    v = float((w * sk).sum() / w.sum()) if w.sum() != 0 else 0.0
    _close(v, gf.tm_weighted_mean(sk, gf.tm_weights(prep, c, "specificity", average)), tol=1e-12)
    return v, f"{base} {what} + {rule}"


def npv_binary_samplewise(preds, target, args):
    zd = float(args.get("zero_division", 0.0))
    ii = args.get("ignore_index")
    lab = gf.tm_threshold(preds.a, float(args.get("threshold", 0.5)))
    n = lab.shape[0]
    lab = lab.reshape(n, -1)
    t = target.a.astype(np.int64).reshape(n, -1)
    out = []
    for i in range(n):
        # rule: samplewise: tn, fn summed over each sample's positions (ignored positions count nowhere) -- src/torchmetrics/functional/classification/stat_scores.py (_binary_stat_scores_update)
        keep = np.ones(t.shape[1], bool) if ii is None else t[i] != ii
        ti, li = t[i][keep], lab[i][keep]
        tn = int(((ti == 0) & (li == 0)).sum())
        fn = int(((ti == 1) & (li == 0)).sum())
        v = float(gf.sdiv(tn, tn + fn, zd))
        if keep.any():
            _close(v, _sk_neg_precision(ti, li, zd), tol=1e-12)
        out.append(v)
    return np.array(out), "sklearn.metrics.precision_score(labels=[0]) per sample (samplewise)"


def npv_value(args, preds, target):
    """(expected, source) of one case; args: the effective arguments, "task" included."""
    task = args["task"]
    ii = args.get("ignore_index")
    thr = float(args.get("threshold", 0.5))
    if task in ("binary", "multilabel"):
        gf.check_update_invariant_logit_rule(task, "negative_predictive_value", preds, target, ii)
    if task == "binary" and args.get("multidim_average") == "samplewise":
        return npv_binary_samplewise(preds, target, args)
    if task == "binary":
        t, p = gf.bin_prepare(preds, target, thr, ii, "stat")
        assert len(t) > 0
        return npv_expected(gf.bin_as_cols(t, p), args)
    if task == "multiclass":
        return npv_expected(gf.mc_prepare(preds, target, args["num_classes"], 1, ii), args)
    return npv_expected(gf.ml_prepare(preds, target, args["num_labels"], thr, ii), args)


def npv_case(S, metric, spec_args, tag, preds, target):
    """A task function's case; the name shows `average` only (the scenario tag says the rest)."""
    v, src = npv_value(dict(spec_args, task=metric.split("_")[0]), preds, target)
    shown = {"average": spec_args["average"]} if "average" in spec_args else {}
    S.add(f"{metric}{_argtag(shown)}__{tag}", spec(metric, spec_args), {"preds": preds, "target": target}, v, src)


def gen_npv(S):
    # ---- binary ------------------------------------------------------------------------------
    rng = np.random.default_rng(1901)
    N = 32
    t = rng.integers(0, 2, N)
    prob = gf._nudge(np.round(0.35 * t + 0.65 * rng.random(N), 3))
    logit = np.round(rng.normal(0, 1.8, N) + 1.2 * (2 * t - 1), 2)
    logit[logit == 0] = 0.01
    lab = (rng.random(N) < np.where(t == 1, 0.75, 0.3)).astype(np.int64)
    t2 = rng.integers(0, 2, (8, 4))
    prob2 = gf._nudge(np.round(0.3 * t2 + 0.7 * rng.random((8, 4)), 3))
    t_m1 = t.copy()
    t_m1[rng.choice(N, 7, replace=False)] = -1
    q_p = np.array([0.2, 0.7, 3.0, 0.4, 0.6, 0.45, 0.55, 0.1, 0.8, -2.0, 0.3, 0.65, 0.9, 0.35])
    q_t = np.array([0, 1, -1, 0, 1, 1, 0, 0, 1, -1, 1, 0, 1, 0])
    big_t = rng.integers(0, 2, 300)
    big_p = gf._nudge(np.round(0.3 * big_t + 0.7 * rng.random(300), 3))
    B = "binary_negative_predictive_value"
    bscen = [
        ("prob_f32", T(prob, "float32"), T(t, "int64"), {}),
        ("prob_f64", T(prob, "float64"), T(t, "int64"), {}),
        ("logit_f32", T(logit, "float32"), T(t, "int64"), {}),
        ("logit_f64_target_i32", T(logit, "float64"), T(t, "int32"), {}),
        ("label_i64", T(lab, "int64"), T(t, "int64"), {}),
        ("label_bool_target_i32", T(lab.astype(bool), "bool"), T(t, "int32"), {}),
        ("multidim_8x4_prob_f32", T(prob2, "float32"), T(t2, "int64"), {}),
        ("multidim_8x4_prob_f32_global", T(prob2, "float32"), T(t2, "int64"), {"multidim_average": "global"}),
        ("prob_f32_thr0.3", T(prob, "float32"), T(t, "int64"), {"threshold": 0.3}),
        # 0.5 exactly and sigmoid(0) = 0.5 are negative (strict >)
        ("tie_0.5_f32", T([0.5, 0.5, 0.5, 0.5, 0.9, 0.1, 0.62, 0.41], "float32"), T([1, 0, 1, 0, 1, 0, 0, 1], "int64"), {}),
        ("logit_zero_tie_f32", T([0.0, 0.0, 2.5, -1.5, 0.0, 3.0, -0.7, 1.2], "float32"), T([1, 0, 1, 0, 0, 1, 1, 0], "int64"), {}),
        ("prob_f32_ignore-1", T(prob, "float32"), T(t_m1, "int64"), {"ignore_index": -1}),
        ("label_i64_ignore-1", T(lab, "int64"), T(t_m1, "int64"), {"ignore_index": -1}),
        ("prob_f32_ignore0_real_class", T(prob, "float32"), T(t, "int64"), {"ignore_index": 0}),
        # an out-of-[0,1] value only at ignored positions: the stat-score family sigmoids the whole tensor
        ("ignored_elem_is_logit", T(q_p, "float32"), T(q_t, "int64"), {"ignore_index": -1}),
        ("one_row_neg_correct", T([0.2], "float32"), T([0], "int64"), {}),
        ("one_row_pos_no_negative_pred", T([0.8], "float32"), T([1], "int64"), {}),
        ("all_pred_pos", T([0.9, 0.8, 0.6, 0.7, 0.95], "float32"), T([1, 0, 1, 0, 0], "int64"), {}),
        ("all_pred_pos_zd1", T([0.9, 0.8, 0.6, 0.7, 0.95], "float32"), T([1, 0, 1, 0, 0], "int64"), {"zero_division": 1.0}),
        ("all_pred_pos_zd1_int", T([1, 1, 1], "int64"), T([0, 1, 0], "int64"), {"zero_division": 1}),
        ("prob_f32_zd1", T(prob, "float32"), T(t, "int64"), {"zero_division": 1.0}),
        ("all_negative", T([0, 0, 0, 0, 0], "int64"), T([0, 0, 0, 0, 0], "int64"), {}),
        ("all_pred_neg_mixed_target", T([0.1, 0.2, 0.4, 0.3, 0.05, 0.45], "float32"), T([1, 0, 1, 0, 0, 1], "int64"), {}),
        ("all_wrong_labels", T([1, 0, 0, 1, 1, 0], "int64"), T([0, 1, 1, 0, 0, 1], "int64"), {}),
        ("n300_prob_f32", T(big_p, "float32"), T(big_t, "int64"), {}),
    ]
    for tag, p, tt, a in bscen:
        npv_case(S, B, a, tag, p, tt)

    # samplewise: one value per sample over its positions
    ts = rng.integers(0, 2, (11, 5))
    ps = gf._nudge(np.round(0.35 * ts + 0.65 * rng.random((11, 5)), 3))
    ps[4] = [0.9, 0.8, 0.7 + 0.001, 0.6, 0.95]  # sample 4 predicts no negative: tn + fn = 0
    ts_m1 = ts.copy()
    ts_m1[rng.random((11, 5)) < 0.2] = -1
    ts_m1[7] = -1  # sample 7 entirely ignored: zero_division
    ls = np.round(rng.normal(0, 2.0, (9, 2, 3)) + 1.0 * (2 * rng.integers(0, 2, (9, 2, 3)) - 1), 2)
    ls[ls == 0] = 0.01
    lt = (ls + rng.normal(0, 1.5, ls.shape) > 0).astype(np.int64)
    lab_s = (rng.random((11, 5)) < np.where(ts == 1, 0.7, 0.3)).astype(np.int64)
    SW = {"multidim_average": "samplewise"}
    sscen = [
        ("samplewise_11x5_prob_f32", T(ps, "float32"), T(ts, "int64"), dict(SW)),
        ("samplewise_11x5_prob_f32_zd1", T(ps, "float32"), T(ts, "int64"), dict(SW, zero_division=1.0)),
        ("samplewise_11x5_prob_f32_ignore-1", T(ps, "float32"), T(ts_m1, "int64"), dict(SW, ignore_index=-1)),
        ("samplewise_11x5_prob_f32_ignore-1_zd1", T(ps, "float32"), T(ts_m1, "int64"), dict(SW, ignore_index=-1, zero_division=1.0)),
        ("samplewise_9x2x3_logit_f32", T(ls, "float32"), T(lt, "int64"), dict(SW)),
        ("samplewise_11x5_label_i64_thr0.3", T(lab_s, "int64"), T(ts, "int64"), dict(SW, threshold=0.3)),
        ("samplewise_one_position", T(ps[:, :1], "float32"), T(ts[:, :1], "int64"), dict(SW)),
    ]
    for tag, p, tt, a in sscen:
        npv_case(S, B, a, tag, p, tt)

    # ---- multiclass --------------------------------------------------------------------------
    rng = np.random.default_rng(1902)
    C, N = 4, 20
    t = rng.integers(0, C, N)
    prob = gf.mc_scores(rng, t, C)
    logit = gf.mc_scores(rng, t, C, logits=True)
    lab = np.where(rng.random(N) < 0.6, t, rng.integers(0, C, N))
    t_abs = rng.choice([0, 1, 3], N)  # class 2 neither in target nor predicted
    lab_abs = np.where(rng.random(N) < 0.6, t_abs, rng.choice([0, 1, 3], N))
    prob_abs = gf.mc_scores(rng, t_abs, C)
    prob_abs[:, 2] = 0.0
    assert not (prob_abs.argmax(1) == 2).any()
    t_po = rng.choice([0, 1, 2], N)  # class 3 predicted, never a target
    lab_po = np.where(rng.random(N) < 0.6, t_po, 3)
    t_m1 = t.copy()
    t_m1[rng.choice(N, 5, replace=False)] = -1
    t_md = rng.integers(0, 3, (10, 3))
    p_md = np.stack([gf.mc_scores(rng, t_md[:, j], 3) for j in range(3)], axis=2)  # [10, 3 classes, 3]
    big_t = rng.integers(0, 5, 80)
    big_p = gf.mc_scores(rng, big_t, 5, decimals=2, strength=1.0)
    A = {"num_classes": C}
    MU_SUBSET = {"prob_f32", "label_i64", "absent_class2_label", "class3_only_predicted", "all_pred_class1",
                 "all_pred_class1_zd1", "label_i64_ignore-1", "label_i64_ignore1_real_class", "one_row_prob",
                 "multidim_10x3x3_prob_f32"}
    mscen = [
        ("prob_f32", T(prob, "float32"), T(t, "int64"), dict(A)),
        ("logit_f32", T(logit, "float32"), T(t, "int64"), dict(A)),
        ("label_i64", T(lab, "int64"), T(t, "int64"), dict(A)),
        ("prob_f64_target_i32", T(prob, "float64"), T(t, "int32"), dict(A)),
        ("absent_class2_label", T(lab_abs, "int64"), T(t_abs, "int64"), dict(A)),
        ("absent_class2_prob", T(prob_abs, "float32"), T(t_abs, "int64"), dict(A)),
        ("class3_only_predicted", T(lab_po, "int64"), T(t_po, "int64"), dict(A)),
        ("all_pred_class1", T(np.ones(N, np.int64), "int64"), T(t, "int64"), dict(A)),
        ("all_pred_class1_zd1", T(np.ones(N, np.int64), "int64"), T(t, "int64"), dict(A, zero_division=1.0)),
        ("absent_class2_label_zd1", T(lab_abs, "int64"), T(t_abs, "int64"), dict(A, zero_division=1.0)),
        ("prob_f32_ignore-1", T(prob, "float32"), T(t_m1, "int64"), dict(A, ignore_index=-1)),
        ("label_i64_ignore-1", T(lab, "int64"), T(t_m1, "int64"), dict(A, ignore_index=-1)),
        ("label_i64_ignore1_real_class", T(lab, "int64"), T(t, "int64"), dict(A, ignore_index=1)),
        ("prob_f32_ignore1_real_class", T(prob, "float32"), T(t, "int64"), dict(A, ignore_index=1)),
        ("one_row_prob", T(prob[:1], "float32"), T(t[:1], "int64"), dict(A)),
        ("all_correct_label", T(t, "int64"), T(t, "int64"), dict(A)),
        ("num_classes2_label", T(lab % 2, "int64"), T(t % 2, "int64"), {"num_classes": 2}),
        ("multidim_10x3x3_prob_f32", T(p_md, "float32"), T(t_md, "int64"), {"num_classes": 3}),
        ("n80_c5_prob_f32", T(big_p, "float32"), T(big_t, "int64"), {"num_classes": 5}),
    ]
    for average in (None, "micro", "macro", "weighted", "none"):
        for tag, p, tt, a in mscen:
            if average in ("micro", "macro", "weighted") and tag not in MU_SUBSET:
                continue
            args = dict(a)
            if average is not None:
                args = {"average": average, **a}
            npv_case(S, "multiclass_negative_predictive_value", args, tag, p, tt)

    # ---- multilabel --------------------------------------------------------------------------
    rng = np.random.default_rng(1903)
    L, N = 3, 16
    t = rng.integers(0, 2, (N, L))
    prob = gf._nudge(np.round(0.35 * t + 0.65 * rng.random((N, L)), 2), step=0.01)
    logit = np.round(rng.normal(0, 1.8, (N, L)) + 1.2 * (2 * t - 1), 2)
    logit[logit == 0] = 0.01
    lab = np.where(rng.random((N, L)) < 0.75, t, 1 - t)
    t_m1 = t.copy()
    t_m1[rng.random((N, L)) < 0.15] = -1
    t_m1[0, :] = -1
    t_abs = t.copy()
    t_abs[:, 1] = 0
    prob_abs = prob.copy()
    prob_abs[:, 1] = np.round(0.45 * rng.random(N), 2)  # label 1: never positive, never predicted
    prob_ap = prob.copy()
    prob_ap[:, 2] = np.round(0.55 + 0.44 * rng.random(N), 2)  # label 2: always predicted (tn + fn = 0)
    q_p = prob.copy()
    q_t = t.copy()
    q_p[5, 1], q_t[5, 1] = 2.5, -1
    q_p[10, 0], q_t[10, 0] = -1.7, -1
    q_p[15, 2], q_t[15, 2] = 1.8, -1  # every 7-row update holds one (the logit decision is made per update)
    bt = rng.integers(0, 2, (80, 5))
    bp = gf._nudge(np.round(0.3 * bt + 0.7 * rng.random((80, 5)), 2), step=0.01)
    A = {"num_labels": L}
    MU_SUBSET_L = {"prob_f32", "label_i64", "prob_f32_ignore-1", "label1_absent", "label2_always_predicted",
                   "label2_always_predicted_zd1", "ignored_elem_is_logit", "one_row"}
    lscen = [
        ("prob_f32", T(prob, "float32"), T(t, "int64"), dict(A)),
        ("logit_f32", T(logit, "float32"), T(t, "int64"), dict(A)),
        ("label_i64", T(lab, "int64"), T(t, "int64"), dict(A)),
        ("prob_f64_target_i32", T(prob, "float64"), T(t, "int32"), dict(A)),
        ("prob_f32_thr0.3", T(prob, "float32"), T(t, "int64"), dict(A, threshold=0.3)),
        ("prob_f32_ignore-1", T(prob, "float32"), T(t_m1, "int64"), dict(A, ignore_index=-1)),
        ("label_i64_ignore-1", T(lab, "int64"), T(t_m1, "int64"), dict(A, ignore_index=-1)),
        ("label1_absent", T(prob_abs, "float32"), T(t_abs, "int64"), dict(A)),
        ("label2_always_predicted", T(prob_ap, "float32"), T(t, "int64"), dict(A)),
        ("label2_always_predicted_zd1", T(prob_ap, "float32"), T(t, "int64"), dict(A, zero_division=1.0)),
        ("ignored_elem_is_logit", T(q_p, "float32"), T(q_t, "int64"), dict(A, ignore_index=-1)),
        ("one_row", T(prob[:1], "float32"), T(t[:1], "int64"), dict(A)),
        ("n80_l5_prob_f32", T(bp, "float32"), T(bt, "int64"), {"num_labels": 5}),
    ]
    for average in (None, "micro", "macro", "weighted", "none"):
        for tag, p, tt, a in lscen:
            if average in ("micro", "macro", "weighted") and tag not in MU_SUBSET_L:
                continue
            args = dict(a)
            if average is not None:
                args = {"average": average, **a}
            npv_case(S, "multilabel_negative_predictive_value", args, tag, p, tt)

    # ---- the task wrapper --------------------------------------------------------------------
    # rule: the wrapper's average defaults to "micro" (the task functions' to "macro"); task=binary reduces with average="binary" -- negative_predictive_value.py (negative_predictive_value)
    rng = np.random.default_rng(1904)
    W = "negative_predictive_value"
    tb = rng.integers(0, 2, 30)
    pb = gf._nudge(np.round(0.35 * tb + 0.65 * rng.random(30), 3))
    tb_m1 = tb.copy()
    tb_m1[rng.choice(30, 6, replace=False)] = -1
    tmc = rng.integers(0, 4, 24)
    pmc = gf.mc_scores(rng, tmc, 4)
    lmc = np.where(rng.random(24) < 0.6, tmc, rng.integers(0, 4, 24))
    tmc_m1 = tmc.copy()
    tmc_m1[rng.choice(24, 5, replace=False)] = -1
    tml = rng.integers(0, 2, (18, 3))
    pml = gf._nudge(np.round(0.35 * tml + 0.65 * rng.random((18, 3)), 2), step=0.01)
    tml_m1 = tml.copy()
    tml_m1[rng.random((18, 3)) < 0.2] = -1
    wcases = [
        ("binary_prob_f32", {"task": "binary"}, {}, T(pb, "float32"), T(tb, "int64")),
        ("binary_prob_f32_thr0.3", {"task": "binary", "threshold": 0.3}, {}, T(pb, "float32"), T(tb, "int64")),
        ("binary_prob_f32_ignore-1", {"task": "binary", "ignore_index": -1}, {}, T(pb, "float32"), T(tb_m1, "int64")),
        ("binary_samplewise_11x5", {"task": "binary", "multidim_average": "samplewise"}, {}, T(ps, "float32"), T(ts, "int64")),
        ("binary_all_pred_pos_zd1", {"task": "binary", "zero_division": 1.0}, {}, T([0.9, 0.8, 0.6], "float32"), T([1, 0, 0], "int64")),
        ("binary_num_classes_ignored", {"task": "binary", "num_classes": 4, "average": "macro"}, {}, T(pb, "float32"), T(tb, "int64")),
        ("multiclass_prob_f32", {"task": "multiclass", "num_classes": 4}, {"average": "micro"}, T(pmc, "float32"), T(tmc, "int64")),
        ("multiclass_label_i64_ignore-1", {"task": "multiclass", "num_classes": 4, "ignore_index": -1}, {"average": "micro"},
         T(lmc, "int64"), T(tmc_m1, "int64")),
        ("multiclass_prob_f32_macro", {"task": "multiclass", "num_classes": 4, "average": "macro"}, {}, T(pmc, "float32"), T(tmc, "int64")),
        ("multiclass_label_i64_none", {"task": "multiclass", "num_classes": 4, "average": "none"}, {}, T(lmc, "int64"), T(tmc, "int64")),
        ("multiclass_threshold_ignored", {"task": "multiclass", "num_classes": 4, "threshold": 0.3}, {"average": "micro"},
         T(pmc, "float32"), T(tmc, "int64")),
        ("multilabel_prob_f32", {"task": "multilabel", "num_labels": 3}, {"average": "micro"}, T(pml, "float32"), T(tml, "int64")),
        ("multilabel_prob_f32_weighted", {"task": "multilabel", "num_labels": 3, "average": "weighted"}, {}, T(pml, "float32"), T(tml, "int64")),
        ("multilabel_prob_f32_ignore-1", {"task": "multilabel", "num_labels": 3, "ignore_index": -1}, {"average": "micro"},
         T(pml, "float32"), T(tml_m1, "int64")),
    ]
    for tag, sargs, extra, p, tt in wcases:
        calc = dict(sargs, **extra)
        if calc["task"] == "binary":
            calc.pop("average", None)
        S.add(f"{W}__{tag}", spec(W, sargs), {"preds": p, "target": tt}, *npv_value(calc, p, tt))


# ============================================================================================
# 2. normalized root mean squared error
# ============================================================================================
def _tm_class_denominators(t, num_outputs):
    """NormalizedRootMeanSquaredError's running statistics over 7-row updates (the golden harness's batches)."""
    total, mean, var = 0, 0.0, 0.0
    lo, hi, sq = np.inf, -np.inf, 0.0
    for a in range(0, t.shape[0], 7):
        tc = t[a:a + 7]
        tc = tc.reshape(-1) if num_outputs == 1 else tc
        n = tc.shape[0]
        # rule: the class keeps min, max, sum of squares, a running mean and M2 merged per update: new_mean = (total*mean + sum)/(total + n), M2 += sum((t - new_mean)(t - old_mean)) -- src/torchmetrics/regression/nrmse.py (NormalizedRootMeanSquaredError.update)
        lo, hi = np.minimum(tc.min(0), lo), np.maximum(tc.max(0), hi)
        sq = sq + (tc ** 2).sum(0)
        new_mean = (total * mean + tc.sum(0)) / (total + n)
        total += n
        var = var + ((tc - new_mean) * (tc - mean)).sum(0)
        mean = new_mean
    # rule: compute: mean, max - min, sqrt(M2 / total) (population std), sqrt(sum t^2) -- src/torchmetrics/regression/nrmse.py (NormalizedRootMeanSquaredError.compute)
    return {"mean": mean, "range": hi - lo, "std": np.sqrt(var / total), "l2": np.sqrt(sq)}


def ref_nrmse(p, t, normalization="mean", num_outputs=1):
    p, t = np.asarray(p, np.float64), np.asarray(t, np.float64)
    if num_outputs == 1:
        # rule: num_outputs = 1 flattens preds and target (every element is an observation) -- src/torchmetrics/functional/regression/mse.py (_mean_squared_error_update), nrmse.py
        p, t = p.reshape(-1), t.reshape(-1)
    else:
        assert p.ndim == 2 and p.shape[1] == num_outputs
    n = t.shape[0]
    rmse = np.sqrt(((p - t) ** 2).sum(0) / n)
    _close(rmse, skm.mean_squared_error(t, p, squared=False, multioutput="raw_values" if num_outputs > 1 else "uniform_average"),
           tol=1e-12)
    # rule: denominator from the target of ALL rows (the modular class's running statistics; the functional form computes it per call): mean (signed), max - min, std with correction=0, L2 norm sqrt(sum t^2) -- src/torchmetrics/regression/nrmse.py, src/torchmetrics/functional/regression/nrmse.py (_normalized_root_mean_squared_error_update)
    den = {"mean": t.mean(0), "range": t.max(0) - t.min(0), "std": t.std(0), "l2": np.linalg.norm(t, axis=0)}[normalization]
    tm = _tm_class_denominators(t, num_outputs)[normalization]
    # (the class's first update multiplies by an old mean of 0: M2 += sum((t - m) t), which loses digits at a 1e4
    # offset -- 4e-7 relative on offset1e4_f64; the fixtures hold the exact two-pass value)
    _close(den, tm, tol=1e-9 if normalization != "std" else 1e-5)
    # rule: rmse / denom, plain division: x/0 = inf, 0/0 = NaN -- src/torchmetrics/functional/regression/nrmse.py (_normalized_root_mean_squared_error_compute)
    with np.errstate(all="ignore"):
        v = rmse / den
    v = float(v) if num_outputs == 1 else v
    what = {"mean": "numpy mean", "range": "numpy max - min", "std": "numpy std (ddof=0, two-pass)", "l2": "numpy linalg.norm"}
    return v, (f"sklearn.metrics.mean_squared_error(squared=False) / {what[normalization]} of the target over all rows "
               "(= TorchMetrics' modular class merged over 7-row updates)")


def gen_nrmse(S):
    rng = np.random.default_rng(1905)
    M = "normalized_root_mean_squared_error"
    t = np.round(rng.normal(5.0, 2.0, 40), 3)
    p = np.round(t + rng.normal(0, 0.8, 40), 3)
    tn = np.round(rng.normal(-3.0, 1.0, 30), 3)
    pn = np.round(tn + rng.normal(0, 0.5, 30), 3)
    t2 = np.round(rng.normal([2.0, -1.0], [1.0, 3.0], (20, 2)), 3)
    p2 = np.round(t2 + rng.normal(0, 0.7, (20, 2)), 3)
    t2c = t2.copy()
    t2c[:, 1] = 2.5
    t3 = np.round(rng.normal([1.0, 10.0, -4.0], [0.5, 2.0, 1.0], (15, 3)), 3)
    p3 = np.round(t3 + rng.normal(0, 0.4, (15, 3)), 3)
    to64 = np.round(1e4 + rng.normal(0, 0.05, 50), 6)
    po64 = np.round(to64 + rng.normal(0, 0.01, 50), 6)
    to32 = np.round(1e4 + rng.normal(0, 2.0, 40), 2)
    po32 = np.round(to32 + rng.normal(0, 0.5, 40), 2)
    tl = np.round(rng.normal(0.0, 1.0, 300) + 3.0, 4)
    pl = np.round(tl + rng.normal(0, 0.3, 300), 4)
    tc = np.full(12, 2.5)
    pc = np.round(2.5 + rng.normal(0, 0.2, 12), 3)
    sc = [  # tag, preds, target, num_outputs
        ("base_f32", T(p, "float32"), T(t, "float32"), 1),
        ("base_f64", T(p, "float64"), T(t, "float64"), 1),
        ("negative_mean_target", T(pn, "float64"), T(tn, "float64"), 1),
        ("2d_n20_d2_flattened", T(p2, "float64"), T(t2, "float64"), 1),
        ("2d_n20_d2", T(p2, "float64"), T(t2, "float64"), 2),
        ("2d_n20_d2_f32", T(p2, "float32"), T(t2, "float32"), 2),
        ("2d_constant_column", T(p2, "float64"), T(t2c, "float64"), 2),
        ("2d_n15_d3", T(p3, "float64"), T(t3, "float64"), 3),
        ("offset1e4_f64", T(po64, "float64"), T(to64, "float64"), 1),
        ("offset1e4_f32", T(po32, "float32"), T(to32, "float32"), 1),
        ("constant_target", T(pc, "float64"), T(tc, "float64"), 1),
        ("perfect_prediction", T(t, "float64"), T(t, "float64"), 1),
        ("one_row", T([2.5], "float64"), T([1.0], "float64"), 1),
        ("one_row_exact", T([1.0], "float32"), T([1.0], "float32"), 1),
        ("large_n300_f64", T(pl, "float64"), T(tl, "float64"), 1),
    ]
    ALL = (None, "mean", "range", "std", "l2")
    norms = {"base_f64": (None,), "negative_mean_target": ("mean", "std"), "2d_n20_d2_flattened": ("mean", "range"),
             "2d_n20_d2_f32": (None, "std"), "2d_constant_column": ("mean", "range", "std"), "2d_n15_d3": ("mean", "std", "l2"),
             "offset1e4_f32": ("mean", "std"), "perfect_prediction": (None, "std"), "large_n300_f64": (None, "std")}
    for tag, pp, tt, k in sc:
        for norm in norms.get(tag, ALL):
            args = {} if norm is None else {"normalization": norm}
            if k > 1:
                args["num_outputs"] = k
            v, src = ref_nrmse(pp.f64, tt.f64, norm or "mean", k)
            suffix = ""
            vals = np.atleast_1d(np.asarray(v, np.float64))
            if np.isnan(vals).any():
                suffix = "__nan_0_over_0"
            elif np.isinf(vals).any():
                suffix = "__inf_zero_denominator"
            S.add(f"{M}{_argtag(args)}__{tag}{suffix}", spec(M, args), {"preds": pp, "target": tt}, v, src, rtol=RT, atol=AT)


# ============================================================================================
# 3. Jensen-Shannon divergence
# ============================================================================================
def ref_jsd(p, q, log_prob=False, reduction="mean"):
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    if log_prob:
        # rule: log_prob: no renormalisation; log m = logsumexp(p, q) - log 2; KL(p || m) = sum exp(p) (p - log m) -- src/torchmetrics/functional/regression/js_divergence.py (_jsd_update), kl_divergence.py (_kld_update)
        P, Q = np.exp(p), np.exp(q)
        logm = np.logaddexp(p, q) - LN2
        lit = 0.5 * np.sum(P * (p - logm), 1) + 0.5 * np.sum(Q * (q - logm), 1)
    else:
        # rule: probabilities: each row divided by its sum (p and q), m = (p + q) / 2 -- src/torchmetrics/functional/regression/js_divergence.py (_jsd_update)
        P, Q = p / p.sum(1, keepdims=True), q / q.sum(1, keepdims=True)
        m = (P + Q) / 2
        # rule: KL(p || m) = sum xlogy(p, p / m), natural log, 0 where p == 0 -- src/torchmetrics/functional/regression/kl_divergence.py (_kld_update), utilities/compute.py (_safe_xlogy)
        with np.errstate(all="ignore"):
            lit = 0.5 * np.where(P == 0, 0.0, P * np.log(P / m)).sum(1) + 0.5 * np.where(Q == 0, 0.0, Q * np.log(Q / m)).sum(1)
    M = (P + Q) / 2
    per = 0.5 * special.rel_entr(P, M).sum(1) + 0.5 * special.rel_entr(Q, M).sum(1)
    _close(per, lit, tol=1e-12)
    dev = max(np.abs(P.sum(1) - 1).max(), np.abs(Q.sum(1) - 1).max())
    sp = jensenshannon(P, Q, axis=1) ** 2  # SciPy's Jensen-Shannon distance (natural log, rows renormalised), squared
    if not log_prob or dev < 1e-12:
        _close(per, sp, tol=1e-10)
        _close(per, jensenshannon(P, Q, axis=1, base=2) ** 2 * LN2, tol=1e-10)
        src = "scipy.spatial.distance.jensenshannon(p, q, axis=1) ** 2 (natural log)"
        if log_prob:
            src += " of exp(p), exp(q)"
    elif dev < 1e-5:
        # rounded (or float32) log-probs: exp(p) sums to 1 only to ~1e-6, and TorchMetrics does not renormalise
        _close(per, sp, tol=1e-5)
        src = ("scipy.special.rel_entr of exp(p), exp(q) and their mean, not renormalised (TorchMetrics' log_prob path); "
               "= scipy.spatial.distance.jensenshannon(exp(p), exp(q)) ** 2 to 1e-5")
    else:
        assert np.abs(sp - per).max() > 1e-4, "the case should show that log-probs are not renormalised"
        src = ("scipy.special.rel_entr of exp(p), exp(q) and their mean, NOT renormalised (TorchMetrics' log_prob path; "
               "scipy.spatial.distance.jensenshannon would renormalise)")
    # rule: reduction mean = sum / N, sum, none = one value per row -- src/torchmetrics/functional/regression/js_divergence.py (_jsd_compute)
    if reduction == "sum":
        return float(per.sum()), src + ", sum"
    if reduction == "mean":
        return float(per.sum() / len(per)), src + ", mean over rows"
    return per, src + ", per row"


def gen_jsd(S):
    rng = np.random.default_rng(1906)
    M = "jensen_shannon_divergence"
    P = np.round(rng.dirichlet(np.ones(4), 15), 4)
    Q = np.round(rng.dirichlet(np.ones(4), 15), 4)
    P[P == 0], Q[Q == 0] = 1e-4, 1e-4
    Pu = np.round(P * rng.uniform(0.5, 8.0, (15, 1)), 4)
    Qu = np.round(Q * rng.uniform(0.1, 3.0, (15, 1)), 4)
    Pz, Qz = P.copy(), Q.copy()
    Pz[[0, 3, 5], [1, 2, 0]] = 0.0
    Qz[[2, 3, 7], [0, 2, 3]] = 0.0  # row 3 col 2: zero in both
    Pd = np.array([[0.5, 0.5, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.2, 0.0, 0.8, 0.0]])
    Qd = np.array([[0.0, 0.0, 0.25, 0.75], [0.0, 1.0, 0.0, 0.0], [0.0, 0.6, 0.0, 0.4]])
    Pl = np.round(rng.dirichlet(np.ones(8), 60), 4)
    Ql = np.round(rng.dirichlet(np.full(8, 2.0), 60), 4)
    Pl[Pl == 0], Ql[Ql == 0] = 1e-4, 1e-4
    P2 = np.round(rng.dirichlet(np.ones(2), 12), 3)
    Q2 = np.round(rng.dirichlet(np.ones(2), 12), 3)
    P2[P2 == 0], Q2[Q2 == 0] = 1e-3, 1e-3
    lp = np.log(rng.dirichlet(np.ones(5), 12))
    lq = np.log(rng.dirichlet(np.full(5, 3.0), 12))
    lp, lq = np.round(lp, 6), np.round(lq, 6)  # exp sums to 1 within ~1e-6 (not renormalised: TorchMetrics' rule)
    lpu = np.round(np.log(rng.uniform(0.05, 1.5, (10, 4))), 4)
    lqu = np.round(np.log(rng.uniform(0.05, 1.5, (10, 4))), 4)
    sc = {  # tag: (p, q, log_prob)
        "probs_f64": (T(P, "float64"), T(Q, "float64"), False),
        "probs_f32": (T(P, "float32"), T(Q, "float32"), False),
        "unnormalised_rows_renormalised": (T(Pu, "float64"), T(Qu, "float64"), False),
        "zeros_in_p_and_q": (T(Pz, "float64"), T(Qz, "float64"), False),
        "disjoint_support_is_ln2": (T(Pd, "float64"), T(Qd, "float64"), False),
        "identical_is_0": (T(P, "float64"), T(P, "float64"), False),
        "one_row": (T(P[:1], "float64"), T(Q[:1], "float64"), False),
        "two_classes": (T(P2, "float64"), T(Q2, "float64"), False),
        "large_n60_c8_f32": (T(Pl, "float32"), T(Ql, "float32"), False),
        "log_probs_f64": (T(lp, "float64"), T(lq, "float64"), True),
        "log_probs_f32": (T(lp, "float32"), T(lq, "float32"), True),
        "log_probs_unnormalised_not_renormalised": (T(lpu, "float64"), T(lqu, "float64"), True),
    }
    v, _ = ref_jsd(Pd, Qd, reduction="none")
    _close(v, np.full(3, LN2), tol=1e-15)
    red_subset = {"probs_f64", "zeros_in_p_and_q", "one_row", "log_probs_f64", "log_probs_unnormalised_not_renormalised",
                  "disjoint_support_is_ln2"}
    for tag, (pp, qq, lpb) in sc.items():
        variants = [{}] + ([{"reduction": r} for r in ("mean", "sum", "none")] if tag in red_subset else [])
        if tag == "probs_f64":
            variants.append({"log_prob": False})
        for extra in variants:
            # rule: log_prob defaults to False (probabilities) -- src/torchmetrics/functional/regression/js_divergence.py
            args = {"log_prob": True, **extra} if lpb else dict(extra)
            v, src = ref_jsd(pp.f64, qq.f64, log_prob=lpb, reduction=args.get("reduction", "mean"))
            S.add(f"{M}{_argtag(args)}__{tag}", spec(M, args), {"preds": pp, "target": qq}, v, src, rtol=RT, atol=AT)


# ============================================================================================
# 4. continuous ranked probability score
# ============================================================================================
def _crps_integral(x, y):
    """int (F(z) - 1[z >= y])^2 dz for the ensemble's empirical CDF F, exact piecewise (rationals)."""
    xs = [Fraction(float(v)) for v in x]
    yy = Fraction(float(y))
    pts = sorted(set(xs) | {yy})
    m = len(xs)
    tot = Fraction(0)
    for a, b in zip(pts[:-1], pts[1:]):
        F = Fraction(sum(1 for v in xs if v <= a), m)
        H = 1 if a >= yy else 0
        tot += (F - H) ** 2 * (b - a)
    return tot


def ref_crps(x, y):
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    n, m = x.shape
    assert m >= 2
    # published form (Gneiting & Raftery 2007, eq. 21, X, X' drawn from the ensemble): E|X - y| - 0.5 E|X - X'|
    skill = np.abs(x - y[:, None]).mean(1)
    spread = np.abs(x[:, :, None] - x[:, None, :]).mean((1, 2))
    rows = skill - 0.5 * spread
    # rule: members sorted; sum |x - y| / M - sum_ij |x_i - x_j| / (2 M^2) per row, mean over rows (the class: sum / total) -- src/torchmetrics/functional/regression/crps.py (_crps_update, _crps_compute), src/torchmetrics/regression/crps.py
    xs = np.sort(x, 1)
    diff = np.sum(np.abs(xs - y[:, None]), 1) / m
    ens = np.sum(np.abs(xs[:, :, None] - xs[:, None, :]), (1, 2)) / (2 * m * m)
    _close(rows, diff - ens, tol=1e-12)
    # the sorted closed form: 0.5 E|X - X'| = sum_i (2i - M - 1) x_(i) / M^2
    i = np.arange(1, m + 1)
    _close(0.5 * spread, (xs * (2 * i - m - 1)).sum(1) / m ** 2, tol=1e-10)
    if n * m <= 2000:
        _close(rows, [float(_crps_integral(a, b)) for a, b in zip(x, y)], tol=1e-10)
    return float(rows.mean()), ("hand-computed (numpy): mean over rows of E|X - y| - 0.5 E|X - X'| over the ensemble "
                                "(= TorchMetrics' sorted sums / M and / (2 M^2); cross-checked against the exact "
                                "integral of (F(z) - 1[z >= y])^2)")


def gen_crps(S):
    rng = np.random.default_rng(1907)
    M = "continuous_ranked_probability_score"

    def ens(n, m, scale=1.0, dec=3, loc=0.0):
        mu = rng.normal(loc, 2.0 * scale, n)
        x = np.round(mu[:, None] + rng.normal(0, scale, (n, m)), dec)
        y = np.round(mu + rng.normal(0, 1.2 * scale, n), dec)
        return x, y

    sc = {}
    x, y = ens(20, 5)
    sc["n20_m5_f32"] = (T(x, "float32"), T(y, "float32"))
    x, y = ens(30, 10)
    sc["n30_m10_f64"] = (T(x, "float64"), T(y, "float64"))
    x, y = ens(25, 2)
    sc["m2_minimum_members"] = (T(x, "float64"), T(y, "float64"))
    x, y = ens(10, 50)
    sc["n10_m50"] = (T(x, "float64"), T(y, "float64"))
    x, y = ens(16, 6, dec=0)
    sc["member_ties"] = (T(x, "float64"), T(y, "float64"))
    x, y = ens(12, 4)
    sc["target_below_all_members"] = (T(x, "float64"), T(x.min(1) - np.round(rng.uniform(0.5, 3.0, 12), 3), "float64"))
    sc["target_equals_a_member"] = (T(x, "float64"), T(x[:, 2], "float64"))
    yc = np.round(rng.normal(0, 1, 9), 3)
    sc["all_members_equal_target_is_0"] = (T(np.repeat(yc[:, None], 4, 1), "float64"), T(yc, "float64"))
    sc["constant_ensemble"] = (T(np.repeat(yc[:, None] + 1.5, 3, 1), "float64"), T(yc, "float64"))
    x, y = ens(20, 5, scale=0.05, dec=5, loc=1e4)
    sc["offset1e4_f64"] = (T(x, "float64"), T(y, "float64"))
    x, y = ens(1, 7)
    sc["one_row"] = (T(x, "float64"), T(y, "float64"))
    x, y = ens(100, 8)
    sc["large_n100_m8_f32"] = (T(x, "float32"), T(y, "float32"))
    for tag, (xx, yy) in sc.items():
        v, src = ref_crps(xx.f64, yy.f64)
        if tag.endswith("is_0"):
            assert v == 0.0
        S.add(f"{M}__{tag}", M, {"preds": xx, "target": yy}, v, src, rtol=RT, atol=AT)
    x, y = ens(6, 1)
    # rule: fewer than 2 ensemble members raises ("CRPS requires at least 2 ensemble members") -- src/torchmetrics/functional/regression/crps.py (_crps_update)
    S.add(f"{M}__refused_one_member", M, {"preds": T(x, "float64"), "target": T(y, "float64")}, gf.Refused("preds"),
          "refused: an ensemble needs M >= 2 members (TorchMetrics: 'CRPS requires at least 2 ensemble members')")


# ============================================================================================
# 5./6. ROC-based: eer and logauc
# ============================================================================================
def interp_compute(x, xp, fp):
    # rule: the macro ROC's interp: m = _safe_divide(dfp, dxp), b = fp[:-1] - m xp[:-1], index = clamp(#(xp <= x) - 1, 0, len(m) - 1), m x + b -- src/torchmetrics/utilities/compute.py (interp), used by src/torchmetrics/functional/classification/roc.py (_multiclass_roc_compute)
    m = gf._sdiv(fp[1:] - fp[:-1], xp[1:] - xp[:-1])
    b = fp[:-1] - m * xp[:-1]
    idx = np.clip((x[:, None] >= xp[None, :]).sum(1) - 1, 0, len(m) - 1)
    out = m[idx] * x + b[idx]
    inner = ~np.isin(x, xp) & (x > xp[0]) & (x < xp[-1])
    if inner.any():
        _close(out[inner], np.interp(x[inner], xp, fp), tol=1e-12)
    return out


def interp_data(x, xp, fp):
    # rule: logauc's interp: stable order of xp, slopes = dfp / dxp (plain division), index = clamp(searchsorted(xp, x, left) - 1, 0, len - 2), fp[i] + slope[i] (x - xp[i]) -- src/torchmetrics/utilities/data.py (interp), used by src/torchmetrics/functional/classification/logauc.py
    o = np.argsort(xp, kind="stable")
    xp, fp = xp[o], fp[o]
    with np.errstate(all="ignore"):
        slopes = (fp[1:] - fp[:-1]) / (xp[1:] - xp[:-1])
        idx = np.clip(np.searchsorted(xp, x, side="left") - 1, 0, len(slopes) - 1)
        return fp[idx] + slopes[idx] * (x - xp[idx])


def roc64(task, preds, target, C, thr, average, ii):
    """float64 ROC points (fpr, tpr): one curve for binary, micro and macro, else a list per class/label."""
    p, t = gf._co_prepare(task, preds.a, target.a, C, ii)

    def one(y, s):
        if thr is None:
            # rule: exact ROC = every distinct score, starting at (0, 0); no negatives -> fpr 0, no positives -> tpr 0 -- src/torchmetrics/functional/classification/roc.py (_binary_roc_compute), precision_recall_curve.py (_binary_clf_curve)
            fpr, tpr, _ = skm.roc_curve(y, s, drop_intermediate=False)
            return np.nan_to_num(fpr, nan=0.0), np.nan_to_num(tpr, nan=0.0)
        # rule: binned ROC: counts of preds >= threshold, tpr = tp/(tp+fn), fpr = fp/(fp+tn) (0 on 0/0), flipped to ascending fpr -- roc.py (_binary_roc_compute), precision_recall_curve.py (_binary_precision_recall_curve_update_vectorized)
        tp, fp, fn, tn = gf._binned_counts(np.asarray(s), np.asarray(y), thr)
        return gf._sdiv(fp, fp + tn)[::-1], gf._sdiv(tp, tp + fn)[::-1]

    if task == "binary":
        return one(t, p)
    if task == "multiclass" and average == "micro":
        # rule: multiclass micro = one binary curve over softmax(preds).flatten() and one_hot(target).flatten() -- precision_recall_curve.py (_multiclass_precision_recall_curve_format)
        return one(np.eye(C, dtype=np.int64)[t].reshape(-1), p.reshape(-1))
    per = []
    for c in range(C):
        if task == "multiclass":
            per.append(one((t == c).astype(np.int64), p[:, c]))
        else:
            keep = t[:, c] != ii if ii is not None else np.ones(len(t), bool)
            per.append(one(t[keep, c], p[keep, c]))
    if average == "macro":
        # rule: macro ROC: x = sorted concatenation of every class's fpr, y = mean over classes of interp(x, fpr_c, tpr_c) -- roc.py (_multiclass_roc_compute)
        x = np.sort(np.concatenate([f for f, _ in per]))
        return x, np.mean([interp_compute(x, f, r) for f, r in per], axis=0)
    return per


def _curves_tm32(task, preds, target, C, thr, average, ii):
    """TorchMetrics' float32 curves from gen_fixtures' curve_outputs reference, in the same layout as roc64."""
    out = gf.curve_output_expected("roc", task, preds.a, target.a, C, thr, average, ii)
    fpr, tpr = out[0], out[1]
    if task == "binary" or average in ("micro", "macro"):
        return np.asarray(fpr, np.float32), np.asarray(tpr, np.float32)
    return [(np.asarray(f, np.float32), np.asarray(r, np.float32)) for f, r in zip(fpr, tpr)]


def _eer_one(fpr, tpr):
    # rule: i = argmin |fpr - (1 - tpr)| (the first minimum), EER = (fpr[i] + 1 - tpr[i]) / 2 -- src/torchmetrics/functional/classification/eer.py (_binary_eer_compute)
    d = np.abs(fpr - (1 - tpr))
    i = int(np.argmin(d))
    return float((fpr[i] + (1 - tpr[i])) / 2)


def _eer_exact(fpr, tpr):
    """The same on exact rationals (ties decided exactly)."""
    fr = [Fraction(float(v)).limit_denominator(10 ** 6) for v in fpr]
    tr = [Fraction(float(v)).limit_denominator(10 ** 6) for v in tpr]
    d = [abs(f - (1 - r)) for f, r in zip(fr, tr)]
    i = d.index(min(d))
    return float((fr[i] + 1 - tr[i]) / 2)


def eer_expected(task, preds, target, C, thr, average, ii):
    c64 = roc64(task, preds, target, C, thr, average, ii)
    c32 = _curves_tm32(task, preds, target, C, thr, average, ii)
    single = task == "binary" or average in ("micro", "macro")
    pairs64 = [c64] if single else c64
    pairs32 = [c32] if single else c32
    vals = []
    for (f64, r64), (f32, r32) in zip(pairs64, pairs32):
        _close(f64, f32, tol=1e-6)
        _close(r64, r32, tol=1e-6)
        v32 = _eer_one(f32, r32)
        if average == "macro":
            v = _eer_one(f64, r64)  # the macro curve's interpolated tpr is no short rational: float64 argmin
        else:
            # ties are decided exactly (the first minimum): |1/6| = |-1/6| in eer(task=binary)'s docstring example,
            # where float64 rounding would pick the second point (0.4167) and TorchMetrics' float32 the first (0.5833)
            v = _eer_exact(f64, r64)
        # the float32 argmin (TorchMetrics) must land on the same EER
        _close(v32, v, tol=1e-6)
        vals.append(v)
    src = ("sklearn.metrics.roc_curve(drop_intermediate=False) points (TorchMetrics' curve: (0, 0) first, no positives "
           "-> tpr 0, no negatives -> fpr 0)" if thr is None else "hand-written numpy binned ROC (counts of preds >= threshold)")
    if average == "macro":
        src += " averaged into TorchMetrics' macro ROC (its interp, in float64)"
    src += "; EER at the first argmin |fpr - (1 - tpr)|"
    return (vals[0] if single else np.array(vals)), src


def _logauc_tm(fpr, tpr, lo, hi, dtype=np.float64):
    fpr, tpr = np.asarray(fpr, dtype), np.asarray(tpr, dtype)
    # rule: fewer than 2 ROC points -> 0 -- src/torchmetrics/functional/classification/logauc.py (_binary_logauc_compute)
    if fpr.size < 2:
        return 0.0
    rng = np.array([lo, hi], dtype)
    # rule: tpr at the range ends by interp, appended to tpr and fpr, both sorted separately; log10(fpr); from the LAST point equal to log10(lo) to the LAST equal to log10(hi); trapezoid; / (log10(hi) - log10(lo)) -- logauc.py (_binary_logauc_compute)
    tp = np.sort(np.concatenate([tpr, interp_data(rng, fpr, tpr).astype(dtype)]))
    fp = np.sort(np.concatenate([fpr, rng]))
    with np.errstate(divide="ignore"):
        lf = np.log10(fp)
    b = np.log10(rng)
    i0 = np.nonzero(lf == b[0])[0][-1]
    i1 = np.nonzero(lf == b[1])[0][-1]
    x, y = lf[i0:i1 + 1], tp[i0:i1 + 1]
    area = np.sum((x[1:] - x[:-1]) * (y[1:] + y[:-1]) / 2, dtype=dtype)
    return float(area / (b[1] - b[0]))


def _logauc_segments(fpr, tpr, lo, hi):
    """Independent route: trapezoids in log10(fpr) between the distinct fpr values inside (lo, hi), each fpr value
    entered at its lowest tpr and left at its highest; the range ends take the linear interpolation (in fpr) between
    the neighbouring distinct values -- or, on an existing value, that value's lowest (hi) / highest (lo) tpr."""
    u = np.unique(fpr)
    ymin = np.array([tpr[fpr == v].min() for v in u])
    ymax = np.array([tpr[fpr == v].max() for v in u])

    def at(x, end):
        j = np.nonzero(u == x)[0]
        if j.size:
            return ymax[j[0]] if end == "lo" else ymin[j[0]]
        k = np.nonzero(u < x)[0][-1]
        return ymax[k] + (ymin[k + 1] - ymax[k]) * (x - u[k]) / (u[k + 1] - u[k])

    xs = [lo] + [v for v in u if lo < v < hi] + [hi]
    enter = [None] + [ymin[np.nonzero(u == v)[0][0]] for v in xs[1:-1]] + [at(hi, "hi")]
    leave = [at(lo, "lo")] + [ymax[np.nonzero(u == v)[0][0]] for v in xs[1:-1]] + [None]
    area = sum((math.log10(xs[k + 1]) - math.log10(xs[k])) * (leave[k] + enter[k + 1]) / 2 for k in range(len(xs) - 1))
    return area / (math.log10(hi) - math.log10(lo))


def logauc_expected(task, preds, target, C, thr, average, ii, lo, hi):
    multi = task != "binary"
    c64 = roc64(task, preds, target, C, thr, None, ii)
    c32 = _curves_tm32(task, preds, target, C, thr, None, ii)
    pairs64 = c64 if multi else [c64]
    pairs32 = c32 if multi else [c32]
    scores = []
    for (f64, r64), (f32, r32) in zip(pairs64, pairs32):
        assert f64.max() > 0, "a class/label without negatives makes TorchMetrics' interp divide by 0 (inf/NaN)"
        # the range must lie on the curve: TorchMetrics' interp extrapolates past its ends with the end slopes
        assert f64[0] <= lo and hi <= f64[-1], (f64[0], f64[-1], lo, hi)
        v = _logauc_tm(f64, r64, lo, hi)
        _close(_logauc_segments(f64, r64, lo, hi), v, tol=1e-12)
        _close(_logauc_tm(f32, r32, lo, hi, np.float32), v, tol=2e-5)  # TorchMetrics' float32 route lands there too
        scores.append(v)
    scores = np.array(scores)
    src = ("sklearn.metrics.roc_curve(drop_intermediate=False) points" if thr is None else
           "hand-written numpy binned ROC (counts of preds >= threshold)")
    src += f" + TorchMetrics' logauc in numpy (fpr_range [{lo}, {hi}], log10, trapezoid)"
    if not multi:
        return float(scores[0]), src
    if average == "none":
        return scores, src + " per class"
    # rule: macro = mean over the classes whose score is not NaN (a class without positives scores 0 and counts) -- logauc.py (_reduce_logauc)
    return float(np.nanmean(scores)), src + ", mean over classes"


def _name_tag(args):
    """_argtag with lists written as a_b (fpr_range-0.01_0.5)."""
    return "".join(f"_{k}-" + ("_".join(repr(x) for x in v) if isinstance(v, list) else str(v)) for k, v in args.items())


def _thr_tag(thr_arg):
    if thr_arg is None:
        return ""
    if isinstance(thr_arg, list):
        return "_thresholds-list" + "_".join(repr(v) for v in thr_arg)
    return f"_thresholds-{thr_arg}"


def _thr_array(thr_arg):
    if thr_arg is None:
        return None
    if isinstance(thr_arg, int):
        return gf._torch_linspace_f32(thr_arg)
    # rule: a list becomes torch.tensor(list) (float32) -- precision_recall_curve.py (_adjust_threshold_arg)
    return np.array(thr_arg, np.float32)


def _check_curve_data(task, preds, target, C, ii, thr_args):
    thrs = [_thr_array(a) for a in thr_args]
    if task == "binary":
        gf._co_check_binary(preds.a, target.a, ii, thrs)
    else:
        gf._cm_check_data(task, preds.a, target.a, ii, thrs)
    p, _ = gf._co_prepare(task, preds.a, target.a, C, ii)
    for a, thr in zip(thr_args, thrs):
        if isinstance(a, list):
            # a score within 1e-6 of a float32 list threshold would hang on the comparison's dtype
            assert np.abs(p.astype(np.float64)[..., None] - thr.astype(np.float64)).min() > 1e-6, "score at a threshold"


def _logits_every_update(x):
    """Moves one value per 7-row update out of [0, 1] where a batch would hold none (the logit decision is per update)."""
    x = np.array(x, np.float64)
    for a in range(0, x.shape[0], 7):
        blk = x[a:a + 7].reshape(-1)
        if np.all((blk >= 0) & (blk <= 1)):
            x[a:a + 7].reshape(-1)[0] += 1.5
    return x


def _binary_curve_data(rng, n, dec=3):
    t = rng.integers(0, 2, n)
    p = np.round(0.3 * t + 0.7 * rng.random(n), dec)
    return t, p


def gen_roc_metrics(S):
    rng = np.random.default_rng(1908)
    LIST = [0.1, 0.3, 0.5, 0.7, 0.9]
    AVOID = tuple(LIST)
    # ---- binary data -------------------------------------------------------------------------
    t, p = _binary_curve_data(rng, 40)
    p = gf._nudge(p, avoid=AVOID)
    logit = np.round(rng.normal(0, 1.8, 40) + 1.2 * (2 * t - 1), 2)
    logit[logit == 0] = 0.01
    logit = _logits_every_update(logit)
    t_m1 = t.copy()
    t_m1[rng.choice(40, 7, replace=False)] = -1
    tt_ = rng.integers(0, 2, 40)
    pties = np.floor(10 * (0.3 * tt_ + 0.7 * rng.random(40))) / 10 + 0.05  # ten distinct values, many ties
    t2 = rng.integers(0, 2, (8, 5))
    p2 = gf._nudge(np.round(0.3 * t2 + 0.7 * rng.random((8, 5)), 3), avoid=AVOID)
    tb, pb = _binary_curve_data(rng, 300)
    pb = gf._nudge(pb, avoid=AVOID)
    t10 = np.array([0] * 10 + [1] * 8)
    # distinct scores: negatives on even thousandths in [0, 0.7), positives on odd ones in [0.3, 1)
    p10 = np.concatenate([2 * rng.choice(350, 10, replace=False), 301 + 2 * rng.choice(349, 8, replace=False)]) / 1000
    assert len(np.unique(p10)) == 18
    binary = {
        "prob_f32": (T(p, "float32"), T(t, "int64"), {}),
        "prob_f64": (T(p, "float64"), T(t, "int64"), {}),
        "logit_f32": (T(logit, "float32"), T(t, "int64"), {}),
        "score_ties_f32": (T(pties, "float32"), T(tt_, "int64"), {}),
        "prob_f32_ignore-1": (T(p, "float32"), T(t_m1, "int64"), {"ignore_index": -1}),
        "multidim_8x5_prob_f32": (T(p2, "float32"), T(t2, "int64"), {}),
        "n300_prob_f32": (T(pb, "float32"), T(tb, "int64"), {}),
        "ten_negatives": (T(p10, "float64"), T(t10, "int64"), {}),
    }
    eer_only = {
        "no_positives_is_1": (T([0.2, 0.8, 0.45, 0.6], "float32"), T([0, 0, 0, 0], "int64"), {}),
        "no_negatives_is_0": (T([0.2, 0.8, 0.45, 0.6], "float32"), T([1, 1, 1, 1], "int64"), {}),
        "one_row_positive": (T([0.7], "float32"), T([1], "int64"), {}),
        # ROC (fpr, 1 - tpr): (0, 1) (.25, 1) (.25, .5) (.75, .5) (.75, 0) (1, 0): |d| = .25 twice, EER .375 (first) vs .625
        "tie_first_minimum": (T([0.9, 0.8, 0.6, 0.6, 0.4, 0.2], "float32"), T([0, 1, 0, 0, 1, 0], "int64"), {}),
    }
    v, _ = eer_expected("binary", *eer_only["tie_first_minimum"][:2], 1, None, None, None)
    assert v == 0.375

    def add_binary(metric_fn, name, tag, pp, tt, extra, thr_arg, more=None):
        ii = extra.get("ignore_index")
        _check_curve_data("binary", pp, tt, 1, ii, [thr_arg])
        args = {}
        if more:
            args.update(more)
        if thr_arg is not None:
            args["thresholds"] = thr_arg
        args.update(extra)
        v, src = metric_fn(args)
        S.add(f"{name}{_name_tag({k: v_ for k, v_ in (more or {}).items() if k != 'task'})}{_thr_tag(thr_arg)}__{tag}",
              spec(name, args), {"preds": pp, "target": tt}, v, src)

    # ---- binary_eer ----------------------------------------------------------------------------
    for tag, (pp, tt, extra) in {**binary, **eer_only}.items():
        forms = [None] if tag in eer_only or tag.startswith(("score_ties", "n300")) else [None, 5, LIST]
        for thr_arg in forms:
            add_binary(lambda a, pp=pp, tt=tt, thr_arg=thr_arg: eer_expected(
                "binary", pp, tt, 1, _thr_array(thr_arg), None, a.get("ignore_index")), "binary_eer", tag, pp, tt, extra, thr_arg)
    # ---- binary_logauc -------------------------------------------------------------------------
    ranges = [None, [0.01, 0.5], [0.0001, 1.0]]
    for tag, (pp, tt, extra) in binary.items():
        forms = [None] if tag.startswith(("score_ties", "n300")) else [None, 5, LIST]
        for thr_arg in forms:
            for fr in ranges:
                if fr is not None and (thr_arg is not None or tag not in ("prob_f32", "n300_prob_f32", "logit_f32")):
                    continue
                if fr == [0.01, 0.5] and tag == "n300_prob_f32":
                    continue
                more = {} if fr is None else {"fpr_range": fr}
                lo, hi = (0.001, 0.1) if fr is None else fr
                add_binary(lambda a, pp=pp, tt=tt, thr_arg=thr_arg, lo=lo, hi=hi: logauc_expected(
                    "binary", pp, tt, 1, _thr_array(thr_arg), None, a.get("ignore_index"), lo, hi),
                    "binary_logauc", tag, pp, tt, extra, thr_arg, more)
    # both range ends on ROC breakpoints (10 negatives: fpr steps of 0.1)
    pp, tt, _ = binary["ten_negatives"]
    for fr in ([0.1, 0.5], [0.1, 1.0], [0.05, 0.3]):
        add_binary(lambda a, fr=fr: logauc_expected("binary", pp, tt, 1, None, None, None, fr[0], fr[1]),
                   "binary_logauc", "ten_negatives_ends_on_breakpoints", pp, tt, {}, None, {"fpr_range": fr})
    pp, tt, _ = eer_only["no_positives_is_1"]
    add_binary(lambda a: logauc_expected("binary", pp, tt, 1, None, None, None, 0.001, 0.1),
               "binary_logauc", "no_positives_is_0", pp, tt, {}, None)

    # ---- multiclass data -----------------------------------------------------------------------
    C = 4
    tm = rng.integers(0, C, 40)
    pm = gf._nudge(gf.mc_scores(rng, tm, C, decimals=3), avoid=AVOID)
    lm = gf.mc_scores(rng, tm, C, decimals=2, logits=True)
    tm_m1 = tm.copy()
    tm_m1[rng.choice(40, 6, replace=False)] = -1
    ta = rng.choice([0, 1, 2], 40)  # class 3 has no positives
    pa = gf._nudge(gf.mc_scores(rng, ta, C, decimals=3), avoid=AVOID)
    tbig = rng.integers(0, C, 100)
    pbig = gf._nudge(gf.mc_scores(rng, tbig, C, decimals=3, strength=1.0), avoid=AVOID)
    multiclass = {
        "prob_f32": (T(pm, "float32"), T(tm, "int64"), {}),
        "logit_f32": (T(lm, "float32"), T(tm, "int64"), {}),
        "prob_f32_ignore-1": (T(pm, "float32"), T(tm_m1, "int64"), {"ignore_index": -1}),
        "class3_without_positives": (T(pa, "float32"), T(ta, "int64"), {}),
        "n100_prob_f32": (T(pbig, "float32"), T(tbig, "int64"), {}),
    }
    # ---- multilabel data -----------------------------------------------------------------------
    L = 3
    tl = rng.integers(0, 2, (50, L))
    pl = gf._nudge(np.round(0.3 * tl + 0.7 * rng.random((50, L)), 3), avoid=AVOID)
    ll = np.round(rng.normal(0, 1.8, (50, L)) + 1.2 * (2 * tl - 1), 2)
    ll[ll == 0] = 0.01
    ll = _logits_every_update(ll)
    tl_m1 = tl.copy()
    tl_m1[rng.random((50, L)) < 0.15] = -1
    tl_np = tl.copy()
    tl_np[:, 1] = 0  # label 1 without positives
    multilabel = {
        "prob_f32": (T(pl, "float32"), T(tl, "int64"), {}),
        "logit_f32": (T(ll, "float32"), T(tl, "int64"), {}),
        "prob_f32_ignore-1": (T(pl, "float32"), T(tl_m1, "int64"), {"ignore_index": -1}),
        "label1_without_positives": (T(pl, "float32"), T(tl_np, "int64"), {}),
    }

    def add_multi(task, name, size_key, tag, pp, tt, extra, thr_arg, shown, fn):
        K = pp.a.shape[1]
        ii = extra.get("ignore_index")
        _check_curve_data(task, pp, tt, K, ii, [thr_arg])
        args = {"task": shown["task"]} if "task" in shown else {}
        args[size_key] = K
        args.update(shown)
        if thr_arg is not None:
            args["thresholds"] = thr_arg
        args.update(extra)
        v, src = fn(_thr_array(thr_arg), ii)
        tagged = {k: v_ for k, v_ in shown.items() if k != "task"}
        S.add(f"{name}{_name_tag(tagged)}{_thr_tag(thr_arg)}__{tag}", spec(name, args), {"preds": pp, "target": tt}, v, src)

    # ---- multiclass_eer / multilabel_eer -----------------------------------------------------
    for tag, (pp, tt, extra) in multiclass.items():
        for thr_arg in (None, 5, LIST):
            for average in (None, "micro", "macro"):
                if thr_arg is LIST and average is not None:
                    continue
                if tag == "prob_f32" and (thr_arg, average) in ((5, None), (None, "micro")):
                    continue
                if tag != "prob_f32" and (thr_arg, average) not in ((None, None), (None, "macro"), (5, "micro"), (LIST, None)):
                    continue
                if tag == "logit_f32" and thr_arg is not None:
                    continue
                if tag.startswith("n100") and thr_arg is not None:
                    continue
                shown = {} if average is None else {"average": average}
                # rule: multiclass_eer's average defaults to None: one EER per class -- src/torchmetrics/functional/classification/eer.py (multiclass_eer)
                add_multi("multiclass", "multiclass_eer", "num_classes", tag, pp, tt, extra, thr_arg, shown,
                          lambda thr, ii, pp=pp, tt=tt, average=average: eer_expected(
                              "multiclass", pp, tt, C, thr, average, ii))
    for tag, (pp, tt, extra) in multilabel.items():
        for thr_arg in (None, 5, LIST):
            # rule: multilabel_eer has no average: one EER per label -- eer.py (multilabel_eer)
            add_multi("multilabel", "multilabel_eer", "num_labels", tag, pp, tt, extra, thr_arg, {},
                      lambda thr, ii, pp=pp, tt=tt: eer_expected("multilabel", pp, tt, L, thr, None, ii))
    # ---- multiclass_logauc / multilabel_logauc -----------------------------------------------
    for task, name, key, data, K in (("multiclass", "multiclass_logauc", "num_classes", multiclass, C),
                                     ("multilabel", "multilabel_logauc", "num_labels", multilabel, L)):
        for tag, (pp, tt, extra) in data.items():
            # (a list without 0 and 1 can start the curve above fpr_range[0]: TorchMetrics' interp then
            # extrapolates with the first slope; the binary list cases stay on the curve)
            for thr_arg in (None, 5):
                for average in (None, "macro", "none"):
                    if thr_arg is not None and average == "macro":
                        continue
                    if tag == "prob_f32" and average == "macro":
                        continue  # the default is macro
                    if tag != "prob_f32" and (thr_arg, average) not in ((None, None), (5, "none")):
                        continue
                    if tag.startswith("n100") and thr_arg is not None:
                        continue
                    for fr in (None, [0.01, 0.5]):
                        if fr is not None and (thr_arg is not None or average is not None or tag != "prob_f32"):
                            continue
                        shown = {} if average is None else {"average": average}
                        if fr is not None:
                            shown["fpr_range"] = fr
                        lo, hi = (0.001, 0.1) if fr is None else fr
                        # rule: multiclass_/multilabel_logauc average defaults to "macro" -- logauc.py
                        add_multi(task, name, key, tag, pp, tt, extra, thr_arg, shown,
                                  lambda thr, ii, pp=pp, tt=tt, task=task, K=K, average=average, lo=lo, hi=hi:
                                  logauc_expected(task, pp, tt, K, thr, average or "macro", ii, lo, hi))

    # ---- the task wrappers ---------------------------------------------------------------------
    pp, tt, _ = binary["prob_f32"]
    add_binary(lambda a: eer_expected("binary", pp, tt, 1, None, None, None), "eer", "binary_prob_f32", pp, tt, {}, None,
               {"task": "binary"})
    add_binary(lambda a: logauc_expected("binary", pp, tt, 1, None, None, None, 0.001, 0.1), "logauc", "binary_prob_f32",
               pp, tt, {}, None, {"task": "binary"})
    pp, tt, _ = binary["n300_prob_f32"]
    add_binary(lambda a: logauc_expected("binary", pp, tt, 1, _thr_array(5), None, None, 0.01, 0.5), "logauc",
               "binary_n300_prob_f32", pp, tt, {}, 5, {"task": "binary", "fpr_range": [0.01, 0.5]})
    for tag, (pp, tt, extra) in (("multiclass_prob_f32", multiclass["prob_f32"]), ("multiclass_logit_f32", multiclass["logit_f32"])):
        # rule: the eer wrapper's average defaults to None (one EER per class) -- eer.py (eer)
        add_multi("multiclass", "eer", "num_classes", tag, pp, tt, extra, None, {"task": "multiclass"},
                  lambda thr, ii, pp=pp, tt=tt: eer_expected("multiclass", pp, tt, C, thr, None, ii))
        # rule: the logauc wrapper's average defaults to None: one score per class, where multiclass_logauc averages (macro) -- logauc.py (logauc)
        add_multi("multiclass", "logauc", "num_classes", tag, pp, tt, extra, None, {"task": "multiclass"},
                  lambda thr, ii, pp=pp, tt=tt: logauc_expected("multiclass", pp, tt, C, thr, "none", ii, 0.001, 0.1))
    pp, tt, extra = multiclass["prob_f32"]
    add_multi("multiclass", "eer", "num_classes", "multiclass_prob_f32", pp, tt, extra, None,
              {"task": "multiclass", "average": "micro"},
              lambda thr, ii: eer_expected("multiclass", pp, tt, C, thr, "micro", ii))
    add_multi("multiclass", "logauc", "num_classes", "multiclass_prob_f32", pp, tt, extra, None,
              {"task": "multiclass", "average": "macro"},
              lambda thr, ii: logauc_expected("multiclass", pp, tt, C, thr, "macro", ii, 0.001, 0.1))
    pp, tt, extra = multilabel["prob_f32_ignore-1"]
    add_multi("multilabel", "eer", "num_labels", "multilabel_prob_f32_ignore-1", pp, tt, extra, None, {"task": "multilabel"},
              lambda thr, ii: eer_expected("multilabel", pp, tt, L, thr, None, ii))
    add_multi("multilabel", "logauc", "num_labels", "multilabel_prob_f32_ignore-1", pp, tt, extra, None, {"task": "multilabel"},
              lambda thr, ii: logauc_expected("multilabel", pp, tt, L, thr, "none", ii, 0.001, 0.1))


# ============================================================================================
# TorchMetrics' docstring examples (their printed values asserted to 4 decimals)
# ============================================================================================
def gen_docstring_examples(S):
    D = "docstring_example"

    def add(name, metric, args, inputs, vs, want):
        v, src = vs
        _close(np.round(np.asarray(v, np.float64), 4), want, tol=1e-12)
        S.add(name, spec(metric, args), inputs, v, src + "; = the TorchMetrics 1.9 docstring's printed value")

    # negative predictive value -- src/torchmetrics/functional/classification/negative_predictive_value.py
    t = T([0, 1, 0, 1, 0, 1], "int64")
    for tag, p in (("int", T([0, 0, 1, 1, 0, 1], "int64")), ("float", T([0.11, 0.22, 0.84, 0.73, 0.33, 0.92], "float32"))):
        add(f"binary_negative_predictive_value__{D}_{tag}", "binary_negative_predictive_value", {}, {"preds": p, "target": t},
            npv_value({"task": "binary"}, p, t), 0.6667)
    p = T([[[0.59, 0.91], [0.91, 0.99], [0.63, 0.04]], [[0.38, 0.04], [0.86, 0.780], [0.45, 0.37]]], "float32")
    t = T([[[0, 1], [1, 0], [0, 1]], [[1, 1], [0, 0], [1, 0]]], "int64")
    a = {"multidim_average": "samplewise"}
    add(f"binary_negative_predictive_value__{D}_samplewise", "binary_negative_predictive_value", a, {"preds": p, "target": t},
        npv_value(dict(a, task="binary"), p, t), [0.0, 0.25])
    t = T([2, 1, 0, 0], "int64")
    for tag, p in (("int", T([2, 1, 0, 1], "int64")),
                   ("float", T([[0.16, 0.26, 0.58], [0.22, 0.61, 0.17], [0.71, 0.09, 0.20], [0.05, 0.82, 0.13]], "float32"))):
        for a, want in (({"num_classes": 3}, 0.8889), ({"num_classes": 3, "average": "none"}, [0.6667, 1.0, 1.0])):
            add(f"multiclass_negative_predictive_value{_argtag({k: v for k, v in a.items() if k == 'average'})}__{D}_{tag}",
                "multiclass_negative_predictive_value", a, {"preds": p, "target": t}, npv_value(dict(a, task="multiclass"), p, t), want)
    t = T([[0, 1, 0], [1, 0, 1]], "int64")
    for tag, p in (("int", T([[0, 0, 1], [1, 0, 1]], "int64")), ("float", T([[0.11, 0.22, 0.84], [0.73, 0.33, 0.92]], "float32"))):
        for a, want in (({"num_labels": 3}, 0.5), ({"num_labels": 3, "average": "none"}, [1.0, 0.5, 0.0])):
            add(f"multilabel_negative_predictive_value{_argtag({k: v for k, v in a.items() if k == 'average'})}__{D}_{tag}",
                "multilabel_negative_predictive_value", a, {"preds": p, "target": t}, npv_value(dict(a, task="multilabel"), p, t), want)
    p, t = T([2, 0, 2, 1], "int64"), T([1, 1, 2, 0], "int64")
    for av, want in (("macro", 0.6667), ("micro", 0.625)):
        a = {"task": "multiclass", "average": av, "num_classes": 3}
        add(f"negative_predictive_value_average-{av}__{D}", "negative_predictive_value", a, {"preds": p, "target": t},
            npv_value(a, p, t), want)

    # normalized_root_mean_squared_error -- src/torchmetrics/functional/regression/nrmse.py, src/torchmetrics/regression/nrmse.py
    M = "normalized_root_mean_squared_error"
    p, t = T([0.0, 1, 2, 3], "float32"), T([0.0, 1, 2, 2], "float32")
    for norm, want in (("mean", 0.4), ("range", 0.25), ("std", 0.6030), ("l2", 0.1667)):
        add(f"{M}_normalization-{norm}__{D}", M, {"normalization": norm}, {"preds": p, "target": t},
            ref_nrmse(p.f64, t.f64, norm), want)
    p, t = T([3.0, 5.0, 2.5, 7.0], "float32"), T([2.5, 5.0, 4.0, 8.0], "float32")
    for norm, want in (("mean", 0.1919), ("range", 0.1701)):
        add(f"{M}_normalization-{norm}__{D}_module", M, {"normalization": norm}, {"preds": p, "target": t},
            ref_nrmse(p.f64, t.f64, norm), want)
    p, t = T([[0.0, 1], [2, 3], [4, 5], [6, 7]], "float32"), T([[0.0, 1], [3, 3], [4, 5], [8, 9]], "float32")
    add(f"{M}_num_outputs-2__{D}_multioutput", M, {"normalization": "mean", "num_outputs": 2}, {"preds": p, "target": t},
        ref_nrmse(p.f64, t.f64, "mean", 2), [0.2981, 0.2222])

    # jensen_shannon_divergence -- src/torchmetrics/functional/regression/js_divergence.py
    p, q = T([[0.36, 0.48, 0.16]], "float32"), T([[1 / 3, 1 / 3, 1 / 3]], "float32")
    add(f"jensen_shannon_divergence__{D}", "jensen_shannon_divergence", {}, {"preds": p, "target": q}, ref_jsd(p.f64, q.f64), 0.0225)

    # eer, logauc -- src/torchmetrics/functional/classification/eer.py, logauc.py
    p, t = T([0, 0.5, 0.7, 0.8], "float32"), T([0, 1, 1, 0], "int64")
    add(f"binary_eer__{D}", "binary_eer", {}, {"preds": p, "target": t}, eer_expected("binary", p, t, 1, None, None, None), 0.5)
    add(f"binary_eer_thresholds-5__{D}", "binary_eer", {"thresholds": 5}, {"preds": p, "target": t},
        eer_expected("binary", p, t, 1, _thr_array(5), None, None), 0.75)
    p, t = T([0.13, 0.26, 0.08, 0.19, 0.34], "float32"), T([0, 0, 1, 1, 1], "int64")
    add(f"eer__{D}_exact_tie", "eer", {"task": "binary"}, {"preds": p, "target": t},
        eer_expected("binary", p, t, 1, None, None, None), 0.5833)
    p = T([[0.75, 0.05, 0.05, 0.05, 0.05], [0.05, 0.75, 0.05, 0.05, 0.05], [0.05, 0.05, 0.75, 0.05, 0.05],
           [0.05, 0.05, 0.05, 0.75, 0.05]], "float32")
    t = T([0, 1, 3, 2], "int64")
    for av, want in (("macro", 0.4667), (None, [0.0, 0.0, 0.6667, 0.6667, 1.0])):
        for thr in (None, 5):
            a = {"num_classes": 5, "average": av}
            if thr is not None:
                a["thresholds"] = thr
            add(f"multiclass_eer_average-{av or 'none'}{_thr_tag(thr)}__{D}", "multiclass_eer", a, {"preds": p, "target": t},
                eer_expected("multiclass", p, t, 5, _thr_array(thr), av, None), want)
    for av, want in (("macro", 0.4), (None, [1.0, 1.0, 0.0, 0.0, 0.0])):
        a = {"num_classes": 5, "average": av}
        add(f"multiclass_logauc_average-{av or 'none'}__{D}", "multiclass_logauc", a, {"preds": p, "target": t},
            logauc_expected("multiclass", p, t, 5, None, av or "none", None, 0.001, 0.1), want)
    p = T([[0.75, 0.05, 0.35], [0.45, 0.75, 0.05], [0.05, 0.55, 0.75], [0.05, 0.65, 0.05]], "float32")
    t = T([[1, 0, 1], [0, 0, 0], [0, 1, 1], [1, 1, 1]], "int64")
    for thr, want in ((None, [0.5, 0.5, 0.1667]), (5, [0.5, 0.75, 0.1667])):
        a = {"num_labels": 3} if thr is None else {"num_labels": 3, "thresholds": thr}
        add(f"multilabel_eer{_thr_tag(thr)}__{D}", "multilabel_eer", a, {"preds": p, "target": t},
            eer_expected("multilabel", p, t, 3, _thr_array(thr), None, None), want)
    for av, want in (("macro", 0.3945), (None, [0.5, 0.0, 0.6835])):
        a = {"num_labels": 3, "average": av}
        add(f"multilabel_logauc_average-{av or 'none'}__{D}", "multilabel_logauc", a, {"preds": p, "target": t},
            logauc_expected("multilabel", p, t, 3, None, av or "none", None, 0.001, 0.1), want)
    p, t = T([0.75, 0.05, 0.05, 0.05, 0.05], "float32"), T([1, 0, 0, 0, 0], "int64")
    add(f"binary_logauc__{D}", "binary_logauc", {}, {"preds": p, "target": t},
        logauc_expected("binary", p, t, 1, None, None, None, 0.001, 0.1), 1.0)


def main():
    S = Suite("additions.json")
    gen_npv(S)
    gen_nrmse(S)
    gen_jsd(S)
    gen_crps(S)
    gen_roc_metrics(S)
    gen_docstring_examples(S)
    path, n = S.write()
    print(f"{os.path.relpath(path, os.path.dirname(os.path.abspath(__file__)))}: {n} cases, "
          f"{os.path.getsize(path) // 1024} KiB")


if __name__ == "__main__":
    main()
