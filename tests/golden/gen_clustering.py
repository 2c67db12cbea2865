#!/usr/bin/env python3
"""Golden fixtures for the clustering metrics and the nominal association metrics.

Regenerate (needs numpy, scipy, scikit-learn, as gen_fixtures.py):

    /usr/bin/python3 tests/golden/gen_clustering.py

Output, in the case format of tests/golden/README.md:
  * tests/golden/fixtures/clustering.json -- mutual_info_score, normalized_mutual_info_score,
    adjusted_mutual_info_score, rand_score, adjusted_rand_score, homogeneity_score, completeness_score,
    v_measure_score, fowlkes_mallows_index, cluster_accuracy (inputs preds [N], target [N] int64) and
    calinski_harabasz_score, davies_bouldin_score, dunn_index (inputs data [N, D], labels [N]);
  * tests/golden/fixtures/nominal.json -- cramers_v, tschuprows_t, pearsons_contingency_coefficient, theils_u
    (inputs preds, target) and fleiss_kappa (input ratings).

Every expected value comes from scikit-learn, SciPy or hand-written numpy following TorchMetrics' rules, each
cited in a `# rule:` comment (paths relative to the torchmetrics repo). The rules were read from torchmetrics
v1.9.0 and v1.5.2; every cited file is the same in both (type hints aside), except
functional/clustering/cluster_accuracy.py, which exists only in 1.9.0. TorchMetrics itself is not used.

Tally's declared sizes: the label clustering metrics take `num_classes` (target ids in [0, num_classes)) and
`num_clusters` (preds ids in [0, num_clusters), default num_classes); TorchMetrics uses torch.unique, so ids
that never occur (empty rows/columns of the contingency table) change nothing, and the fixtures hold cases
whose declared sizes are far larger than the ids present. The data-point metrics take `num_clusters`
(labels in [0, num_clusters)); clusters without rows are absent, as in TorchMetrics' torch.unique.

Expected values are exact float64 results (mutual information with log1p of exact integer ratios, so an
exactly independent table has MI = 0 exactly); TorchMetrics computes in float32.
"""
import itertools
import math
import os
import sys

import numpy as np
from scipy import stats
from scipy.optimize import linear_sum_assignment
from scipy.spatial.distance import cdist
from scipy.special import gammaln
from scipy.stats.contingency import association
from sklearn import metrics as skm
from sklearn.metrics.cluster._expected_mutual_info_fast import expected_mutual_information

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as gf  # noqa: E402
from gen_fixtures import T, Suite, _argtag, _close, spec  # noqa: E402

F32_EPS = float(np.finfo(np.float32).eps)  # 1.1920929e-07
RT, AT = 1e-9, 1e-12  # exact float64 results
AMI_AT = 1e-9
AVG = ("arithmetic", "min", "geometric", "max")


# ============================================================================================
# clustering: label metrics
# ============================================================================================
def contingency(p, t):
    """[classes present, clusters present] counts, rows = target, cols = preds, ids in sorted order."""
    # rule: contingency over torch.unique(target) x torch.unique(preds): ids that never occur have no row/col -- src/torchmetrics/functional/clustering/utils.py (calculate_contingency_matrix)
    tu, ti = np.unique(t, return_inverse=True)
    pu, pi = np.unique(p, return_inverse=True)
    m = np.zeros((len(tu), len(pu)), np.int64)
    np.add.at(m, (ti, pi), 1)
    return m


def declared_table(p, t, num_classes, num_clusters):
    """Tally's [num_classes, num_clusters] state with the empty rows and columns dropped."""
    m = np.zeros((num_classes, num_clusters), np.int64)
    np.add.at(m, (t, p), 1)
    m = m[m.sum(1) != 0]
    return m[:, m.sum(0) != 0]


def exactly_independent(m):
    n = int(m.sum())
    u, v = m.sum(1), m.sum(0)
    return bool(np.all(n * m == np.outer(u, v)))


def mi_exact(m):
    """MI (natural log) of a count table, each cell as log1p of an exact integer ratio."""
    n = int(m.sum())
    u, v = m.sum(1).astype(object), m.sum(0).astype(object)
    tot = 0.0
    for i, j in zip(*np.nonzero(m)):
        c = int(m[i, j])
        num = n * c - int(u[i]) * int(v[j])  # exact integers
        tot += c / n * math.log1p(num / (int(u[i]) * int(v[j])))
    return 0.0 if exactly_independent(m) else tot


def entropy_counts(c):
    c = np.asarray(c, np.float64)
    c = c[c > 0]
    n = c.sum()
    # rule: entropy of the label frequencies (natural log); a single label gives 0 -- src/torchmetrics/functional/clustering/utils.py (calculate_entropy)
    h = float(-np.sum(c / n * np.log(c / n))) if len(c) > 1 else 0.0
    _close(h, stats.entropy(c) if len(c) > 1 else 0.0, tol=1e-12)
    return h


def gmean(x, method):
    x = np.asarray(x, np.float64)
    # rule: min / exp(mean(log x)) / mean / max of the two entropies -- src/torchmetrics/functional/clustering/utils.py (calculate_generalized_mean)
    if method == "min":
        return float(x.min())
    if method == "geometric":
        return float(np.sqrt(x[0] * x[1]))
    if method == "arithmetic":
        return float(x.mean())
    return float(x.max())


def emi_numpy(m):
    """Expected MI under the hypergeometric model, hand-written (sklearn's _expected_mutual_info_fast.pyx)."""
    a, b = m.sum(1).astype(np.float64), m.sum(0).astype(np.float64)
    n = float(m.sum())
    # rule: a single row or column of the table gives EMI = 0 -- src/torchmetrics/functional/clustering/adjusted_mutual_info_score.py (expected_mutual_info_score)
    if len(a) == 1 or len(b) == 1:
        return 0.0
    emi = 0.0
    for ai in a:
        for bj in b:
            nij = np.arange(max(1.0, ai - n + bj), min(ai, bj) + 1.0)
            if not len(nij):
                continue
            term2 = np.log(n * nij) - np.log(ai) - np.log(bj)
            gln = (gammaln(ai + 1) + gammaln(bj + 1) + gammaln(n - ai + 1) + gammaln(n - bj + 1) - gammaln(nij + 1)
                   - gammaln(n + 1) - gammaln(ai - nij + 1) - gammaln(bj - nij + 1) - gammaln(n - ai - bj + nij + 1))
            emi += float(np.sum(nij / n * term2 * np.exp(gln)))
    return emi


def pair_matrix(m):
    """TorchMetrics' pair confusion matrix [[tn, fp], [fn, tp]] (ordered pairs), exact integers."""
    m = m.astype(object)
    n = int(m.sum())
    sc, sk = m.sum(1), m.sum(0)
    ssq = int((m * m).sum())
    # rule: tp = sum n_ij^2 - n, fn = sum n_ij * colsum - sum n_ij^2, fp = sum n_ij * rowsum - sum n_ij^2 -- src/torchmetrics/functional/clustering/utils.py (calculate_pair_cluster_confusion_matrix)
    tp = ssq - n
    fn = int((m * sk[None, :]).sum()) - ssq
    fp = int((m * sc[:, None]).sum()) - ssq
    tn = n * n - fp - fn - ssq
    return tn, fp, fn, tp


def ref_mi(p, t, **_):
    m = contingency(p, t)
    v = mi_exact(m)
    _close(v, skm.mutual_info_score(t, p), tol=1e-11)
    return v, "sklearn.metrics.mutual_info_score (natural log); exact float64 (log1p of integer ratios)"


def _mi_margin(mi):
    # random data must not land near TorchMetrics' |MI| <= float32-eps switch (unless the case is built for it)
    assert mi == 0.0 or abs(mi) < 0.5 * F32_EPS or abs(mi) > 2 * F32_EPS, mi


def ref_nmi(p, t, average_method="arithmetic", **_):
    m = contingency(p, t)
    mi = mi_exact(m)
    _mi_margin(mi)
    sk = skm.normalized_mutual_info_score(t, p, average_method=average_method)
    # rule: |MI| <= finfo(float32).eps returns MI itself (not MI / normalizer, no 1.0 for single clusters) -- src/torchmetrics/functional/clustering/normalized_mutual_info_score.py
    if abs(mi) <= F32_EPS:
        if m.shape == (1, 1):
            assert sk == 1.0
            return mi, "TorchMetrics rule: MI = 0 <= float32 eps returns MI (sklearn's special case gives 1.0 for two single-cluster labelings)"
        if mi == 0.0:
            _close(sk, 0.0)
            return mi, "sklearn.metrics.normalized_mutual_info_score (MI = 0 gives 0)"
        return mi, "TorchMetrics rule: 0 < MI <= float32 eps returns MI itself (sklearn gives MI / normalizer)"
    v = mi / gmean([entropy_counts(m.sum(0)), entropy_counts(m.sum(1))], average_method)
    _close(v, sk, tol=1e-10)
    return v, f"sklearn.metrics.normalized_mutual_info_score(average_method={average_method!r})"


def ref_ami(p, t, average_method="arithmetic", **_):
    m = contingency(p, t)
    n = int(m.sum())
    mi = mi_exact(m)
    emi = emi_numpy(m)
    if min(m.shape) > 1:
        _close(emi, expected_mutual_information(m.astype(np.float64), n), tol=1e-11)
    normalizer = gmean([entropy_counts(m.sum(0)), entropy_counts(m.sum(1))], average_method)
    d = normalizer - emi
    if abs(d) < 1e-12:
        # rule: denominator = normalizer - EMI clamped to >= finfo(float32).eps keeping its sign; (MI - EMI) / eps -- src/torchmetrics/functional/clustering/adjusted_mutual_info_score.py
        assert abs(mi - emi) < 1e-12, (mi, emi)
        return 0.0, ("TorchMetrics rule: normalizer - EMI = 0 and MI - EMI = 0 in exact arithmetic; "
                     "(MI - EMI) / max(normalizer - EMI, float32 eps) = 0 (sklearn: 1.0 for two single clusters, "
                     "float64-eps noise otherwise)")
    assert abs(d) > 1e-6, d
    v = (mi - emi) / (max(d, F32_EPS) if d >= 0 else min(d, -F32_EPS))
    if n > 1 and n in m.shape:
        # one labeling puts every row in its own cluster: EMI = MI exactly, so AMI = 0 (float noise otherwise)
        assert abs(mi - emi) < 1e-12, (mi, emi)
        v = 0.0
    _close(v, skm.adjusted_mutual_info_score(t, p, average_method=average_method), tol=1e-9)
    return v, (f"sklearn.metrics.adjusted_mutual_info_score(average_method={average_method!r}); "
               "EMI cross-checked by hand (numpy gammaln)")


def ref_rand(p, t, **_):
    tn, fp, fn, tp = pair_matrix(contingency(p, t))
    num, den = tn + tp, tn + fp + fn + tp
    # rule: numerator == denominator or denominator == 0 gives 1.0 -- src/torchmetrics/functional/clustering/rand_score.py
    v = 1.0 if num == den or den == 0 else num / den
    _close(v, skm.rand_score(t, p), tol=1e-12)
    return v, "sklearn.metrics.rand_score (pair confusion matrix)"


def ref_ari(p, t, **_):
    tn, fp, fn, tp = pair_matrix(contingency(p, t))
    # rule: fn == 0 and fp == 0 gives 1.0; else 2(tp*tn - fn*fp) / ((tp+fn)(fn+tn) + (tp+fp)(fp+tn)) -- src/torchmetrics/functional/clustering/adjusted_rand_score.py
    if fn == 0 and fp == 0:
        v = 1.0
    else:
        v = 2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))
    _close(v, skm.adjusted_rand_score(t, p), tol=1e-12)
    return v, "sklearn.metrics.adjusted_rand_score"


def _hcv(p, t):
    m = contingency(p, t)
    mi = mi_exact(m)
    h_t, h_p = entropy_counts(m.sum(1)), entropy_counts(m.sum(0))
    # rule: homogeneity = MI / H(target), 1 when H(target) == 0; completeness = MI / H(preds), 1 when H(preds) == 0 -- src/torchmetrics/functional/clustering/homogeneity_completeness_v_measure.py
    h = mi / h_t if h_t else 1.0
    c = mi / h_p if h_p else 1.0
    return h, c


def ref_homogeneity(p, t, **_):
    h, _ = _hcv(p, t)
    _close(h, skm.homogeneity_score(t, p), tol=1e-10)
    return h, "sklearn.metrics.homogeneity_score"


def ref_completeness(p, t, **_):
    _, c = _hcv(p, t)
    _close(c, skm.completeness_score(t, p), tol=1e-10)
    return c, "sklearn.metrics.completeness_score"


def ref_v_measure(p, t, beta=1.0, **_):
    h, c = _hcv(p, t)
    sk = skm.v_measure_score(t, p, beta=beta)
    # rule: homogeneity + completeness == 0 gives 1.0 (sklearn: 0.0) -- src/torchmetrics/functional/clustering/homogeneity_completeness_v_measure.py (v_measure_score)
    if h + c == 0.0:
        assert sk == 0.0
        return 1.0, "TorchMetrics rule: homogeneity + completeness == 0 (MI = 0 exactly) gives 1.0 (sklearn gives 0.0)"
    v = (1 + beta) * h * c / (beta * h + c)
    _close(v, sk, tol=1e-10)
    return v, f"sklearn.metrics.v_measure_score(beta={beta})"


def ref_fmi(p, t, **_):
    m = contingency(p, t).astype(object)
    n = int(m.sum())
    tk = int((m * m).sum()) - n
    # rule: tk = sum n_ij^2 - n; tk == 0 (allclose) gives 0.0; else sqrt(tk/pk) * sqrt(tk/qk) -- src/torchmetrics/functional/clustering/fowlkes_mallows_index.py
    if tk == 0:
        v = 0.0
    else:
        pk = int((m.sum(0) ** 2).sum()) - n
        qk = int((m.sum(1) ** 2).sum()) - n
        v = math.sqrt(tk / pk) * math.sqrt(tk / qk)
    _close(v, skm.fowlkes_mallows_score(t, p), tol=1e-12)
    return v, "sklearn.metrics.fowlkes_mallows_score"


def ref_cluster_accuracy(p, t, num_classes, **_):
    # rule: confusion matrix [num_classes, num_classes], rows = target, cols = preds; optimal one-to-one assignment; matched / N -- src/torchmetrics/functional/clustering/cluster_accuracy.py (v1.9.0 only)
    cm = np.zeros((num_classes, num_classes), np.int64)
    np.add.at(cm, (t, p), 1)
    r, c = linear_sum_assignment(cm, maximize=True)
    v = cm[r, c].sum() / cm.sum()
    cm2 = contingency(p, t)
    if max(cm2.shape) <= 7:  # brute force over the ids present
        k = max(cm2.shape)
        sq = np.zeros((k, k), np.int64)
        sq[: cm2.shape[0], : cm2.shape[1]] = cm2
        best = max(sum(sq[i, perm[i]] for i in range(k)) for perm in itertools.permutations(range(k)))
        _close(v, best / cm.sum())
    return float(v), "scipy.optimize.linear_sum_assignment(confusion matrix, maximize=True): matched / N"


LABEL_METRICS = {
    "mutual_info_score": ref_mi,
    "normalized_mutual_info_score": ref_nmi,
    "adjusted_mutual_info_score": ref_ami,
    "rand_score": ref_rand,
    "adjusted_rand_score": ref_ari,
    "homogeneity_score": ref_homogeneity,
    "completeness_score": ref_completeness,
    "v_measure_score": ref_v_measure,
    "fowlkes_mallows_index": ref_fmi,
}
TOLS = {"adjusted_mutual_info_score": (RT, AMI_AT)}


# ============================================================================================
# clustering: data-point metrics
# ============================================================================================
def _present(labels):
    # rule: clusters are torch.unique(labels): ids without rows are absent -- src/torchmetrics/functional/clustering/{calinski_harabasz_score,davies_bouldin_score,dunn_index}.py
    return np.unique(labels)


def ref_ch(x, labels):
    ks = _present(labels)
    n = len(x)
    mean = x.mean(0)
    bd = sum(((x[labels == k].mean(0) - mean) ** 2).sum() * (labels == k).sum() for k in ks)
    wd = sum(((x[labels == k] - x[labels == k].mean(0)) ** 2).sum() for k in ks)
    # rule: within dispersion == 0 gives 1.0; else B (N - K) / (W (K - 1)) over the present clusters -- src/torchmetrics/functional/clustering/calinski_harabasz_score.py
    v = 1.0 if wd == 0 else bd * (n - len(ks)) / (wd * (len(ks) - 1))
    _close(v, skm.calinski_harabasz_score(x, labels), tol=1e-9)
    return float(v), "sklearn.metrics.calinski_harabasz_score over the present clusters"


def ref_db(x, labels):
    ks = _present(labels)
    cen = np.array([x[labels == k].mean(0) for k in ks])
    intra = np.array([np.sqrt(((x[labels == k] - cen[i]) ** 2).sum(1)).mean() for i, k in enumerate(ks)])
    cd = cdist(cen, cen)
    # rule: allclose(intra, 0) or allclose(centroid distances, 0) gives 0.0; zero centroid distances become inf; mean over clusters of max_j (s_i + s_j) / d_ij -- src/torchmetrics/functional/clustering/davies_bouldin_score.py
    if np.allclose(intra, 0) or np.allclose(cd, 0):
        v = 0.0
    else:
        cd[cd == 0] = np.inf
        v = float(np.mean(np.max((intra[:, None] + intra[None, :]) / cd, axis=1)))
    _close(v, skm.davies_bouldin_score(x, labels), tol=1e-9)
    return v, "sklearn.metrics.davies_bouldin_score over the present clusters"


def _pnorm(d, p):
    return np.sum(np.abs(d) ** p, axis=-1) ** (1.0 / p)


def ref_dunn(x, labels, p=2.0):
    ks = _present(labels)
    cen = [x[labels == k].mean(0) for k in ks]
    # rule: intercluster distance = p-norm between every pair of centroids; max intracluster distance = largest p-norm of a row to its centroid; min(inter) / max(intra) -- src/torchmetrics/functional/clustering/dunn_index.py
    inter = np.array([_pnorm(a - b, p) for a, b in itertools.combinations(cen, 2)])
    intra = np.array([_pnorm(x[labels == k] - c, p).max() for k, c in zip(ks, cen)])
    with np.errstate(divide="ignore"):
        v = float(inter.min() / intra.max())
    cc = cdist(np.array(cen), np.array(cen), "minkowski", p=p)
    inter2 = cc[np.triu_indices(len(ks), 1)].min()
    intra2 = max(cdist(x[labels == k], c[None], "minkowski", p=p).max() for k, c in zip(ks, cen))
    with np.errstate(divide="ignore"):
        _close(v, inter2 / intra2, tol=1e-12)
    return v, f"hand-computed (numpy; cross-checked with scipy cdist minkowski p={p}): min centroid distance / max row-to-centroid distance"


# ============================================================================================
# nominal
# ============================================================================================
def nominal_labels(x):
    """Labels of one input as TorchMetrics forms them before the NaN strategy: argmax over dim 1 of [N, C] scores."""
    x = np.asarray(x)
    # rule: a 2-D input is argmax(1) of scores -- src/torchmetrics/functional/nominal/cramers.py (_cramers_v_update), same in tschuprows.py, pearson.py, theils_u.py
    if x.ndim == 2:
        assert np.all((x == x.max(1, keepdims=True)).sum(1) == 1), "argmax ties"
        return x.argmax(1)
    return x


def nominal_table(p, t, num_classes, nan_strategy="replace", nan_replace_value=0.0):
    p = nominal_labels(p).astype(np.float64)
    t = nominal_labels(t).astype(np.float64)
    # rule: replace: nan_to_num(nan_replace_value); drop: rows with a NaN in either input are dropped -- src/torchmetrics/functional/nominal/utils.py (_handle_nan_in_data)
    if nan_strategy == "replace":
        p = np.where(np.isnan(p), nan_replace_value, p)
        t = np.where(np.isnan(t), nan_replace_value, t)
    else:
        keep = ~(np.isnan(p) | np.isnan(t))
        p, t = p[keep], t[keep]
    # rule: confmat[target, preds] over num_classes, labels cast with .to(torch.long) (truncation toward zero) -- src/torchmetrics/functional/classification/confusion_matrix.py (_multiclass_confusion_matrix_update)
    pi, ti = np.trunc(p).astype(np.int64), np.trunc(t).astype(np.int64)
    assert pi.min() >= 0 and ti.min() >= 0 and pi.max() < num_classes and ti.max() < num_classes, (pi, ti, num_classes)
    cm = np.zeros((num_classes, num_classes), np.float64)
    np.add.at(cm, (ti, pi), 1)
    # rule: rows and columns without counts are dropped before any statistic -- src/torchmetrics/functional/nominal/utils.py (_drop_empty_rows_and_cols)
    cm = cm[cm.sum(1) != 0]
    return cm[:, cm.sum(0) != 0], pi, ti


def tm_chi2(cm, bias_correction):
    cm = cm.copy()
    n = cm.sum()
    e = np.outer(cm.sum(1), cm.sum(0)) / n
    df = e.size - sum(e.shape) + e.ndim - 1
    # rule: df == 0 gives chi2 = 0 -- src/torchmetrics/functional/nominal/utils.py (_compute_chi_squared)
    if df == 0:
        return 0.0, False
    quirk = False
    if df == 1 and bias_correction:
        diff = e - cm
        # rule: Yates with df == 1: every cell moves by min(0.5, |sign(diff)|) = 0.5 toward E (scipy: min(0.5, |diff|)) -- src/torchmetrics/functional/nominal/utils.py (_compute_chi_squared)
        quirk = bool(np.any((np.abs(diff) < 0.5) & (diff != 0)))
        sc = stats.chi2_contingency(cm, correction=True)[0]  # scipy's Yates: min(0.5, |diff|)
        cm = cm + np.sign(diff) * np.minimum(0.5, np.abs(np.sign(diff)))
        mine = float(np.sum((cm - e) ** 2 / e))
        if quirk:
            assert abs(mine - sc) > 1e-6, (mine, sc)
        else:
            _close(mine, sc, tol=1e-12)
        return mine, quirk
    chi2 = float(np.sum((cm - e) ** 2 / e))
    _close(chi2, stats.chi2_contingency(cm, correction=False)[0], tol=1e-12)
    return chi2, quirk


def _bias_corrected(phi2, r, c, n):
    # rule: phi2_corr = max(0, phi2 - (r-1)(c-1)/(n-1)); r_corr = r - (r-1)^2/(n-1); c_corr likewise -- src/torchmetrics/functional/nominal/utils.py (_compute_bias_corrected_values)
    with np.errstate(all="ignore"):
        phi2c = np.fmax(0.0, phi2 - (r - 1) * (c - 1) / np.float64(n - 1)) if not math.isnan(phi2) else math.nan
        if n == 1:
            phi2c = math.nan  # torch.max(0, nan) is nan; (r-1)(c-1)/0 = 0/0
        rc = r - (r - 1) ** 2 / np.float64(n - 1)
        cc = c - (c - 1) ** 2 / np.float64(n - 1)
    return float(phi2c), float(rc), float(cc)


def ref_cramers(cm, bias_correction=True):
    n = cm.sum()
    r, c = cm.shape
    chi2, quirk = tm_chi2(cm, bias_correction)
    phi2 = chi2 / n
    with np.errstate(all="ignore"):
        if bias_correction:
            phi2c, rc, cc = _bias_corrected(phi2, r, c, n)
            # rule: min(r_corr, c_corr) == 1 gives NaN; else sqrt(phi2_corr / min(r_corr - 1, c_corr - 1)), clamped to [0, 1] -- src/torchmetrics/functional/nominal/cramers.py (_cramers_v_compute)
            if min(rc, cc) == 1:
                v = math.nan
            else:
                v = float(np.sqrt(np.float64(phi2c) / min(rc - 1, cc - 1)))
            src = "hand-computed (numpy): TorchMetrics' bias-corrected Cramer's V (Bergsma) on scipy.stats.chi2_contingency's chi2"
        else:
            v = float(np.sqrt(np.float64(phi2) / min(r - 1, c - 1)))
            if min(r, c) > 1:
                _close(v, association(cm.astype(np.int64), method="cramer", correction=False), tol=1e-12)
            src = "scipy.stats.contingency.association(method='cramer', correction=False)"
    v = float(np.clip(v, 0.0, 1.0))
    return v, src + (" [QUIRK Yates overshoot: TorchMetrics moves every cell by 0.5]" if quirk else "")


def ref_tschuprows(cm, bias_correction=True):
    n = cm.sum()
    r, c = cm.shape
    chi2, quirk = tm_chi2(cm, bias_correction)
    phi2 = chi2 / n
    with np.errstate(all="ignore"):
        if bias_correction:
            phi2c, rc, cc = _bias_corrected(phi2, r, c, n)
            # rule: min(r_corr, c_corr) == 1 gives NaN; else sqrt(phi2_corr / sqrt((r_corr-1)(c_corr-1))), clamped to [0, 1] -- src/torchmetrics/functional/nominal/tschuprows.py (_tschuprows_t_compute)
            if min(rc, cc) == 1:
                v = math.nan
            else:
                v = float(np.sqrt(np.float64(phi2c) / np.sqrt((rc - 1) * (cc - 1))))
            src = "hand-computed (numpy): TorchMetrics' bias-corrected Tschuprow's T on scipy.stats.chi2_contingency's chi2"
        else:
            v = float(np.sqrt(np.float64(phi2) / np.sqrt(np.float64((r - 1) * (c - 1)))))
            if min(r, c) > 1:
                _close(v, association(cm.astype(np.int64), method="tschuprow", correction=False), tol=1e-12)
            src = "scipy.stats.contingency.association(method='tschuprow', correction=False)"
    v = float(np.clip(v, 0.0, 1.0))
    return v, src + (" [QUIRK Yates overshoot: TorchMetrics moves every cell by 0.5]" if quirk else "")


def ref_pearson(cm):
    n = cm.sum()
    # rule: chi2 without any Yates correction; sqrt(phi2 / (1 + phi2)), clamped to [0, 1] -- src/torchmetrics/functional/nominal/pearson.py
    chi2, _ = tm_chi2(cm, False)
    phi2 = chi2 / n
    v = float(np.clip(math.sqrt(phi2 / (1 + phi2)), 0.0, 1.0))
    if min(cm.shape) > 1:
        _close(v, association(cm.astype(np.int64), method="pearson", correction=False), tol=1e-12)
    return v, "scipy.stats.contingency.association(method='pearson', correction=False)"


def ref_theils(cm, pi, ti):
    n = cm.sum()
    p_xy = cm / n
    p_y = cm.sum(1) / n  # rows = target
    # rule: H(preds | target) = nansum(p_xy * log(p_y / p_xy)) with rows = target; H(preds) from the column sums; H(preds) == 0 gives 0; U = (H(preds) - H(preds|target)) / H(preds) -- src/torchmetrics/functional/nominal/theils_u.py
    with np.errstate(all="ignore"):
        s_xy = float(np.nansum(p_xy * np.log(p_y[:, None] / p_xy)))
    p_x = cm.sum(0) / n
    s_x = float(-np.sum(p_x * np.log(p_x)))
    if s_x == 0:
        return 0.0, "TorchMetrics rule: H(preds) == 0 gives 0"
    # exact route: U(preds | target) = I(preds; target) / H(preds) (an independent table gives 0 exactly)
    v = mi_exact(np.rint(cm).astype(np.int64)) / s_x
    _close(v, (s_x - s_xy) / s_x, tol=1e-10)
    _close(v, skm.mutual_info_score(ti, pi) / stats.entropy(np.bincount(pi)), tol=1e-10)
    return v, ("TorchMetrics' (H(preds) - H(preds|target)) / H(preds), = sklearn.metrics.mutual_info_score(target, preds) / "
               "scipy.stats.entropy(preds counts)")


def _pairwise_agreement(counts):
    """Fleiss' P_i by enumerating rater pairs (independent of the closed form)."""
    out = []
    for row in counts:
        labels = np.repeat(np.arange(len(row)), row)
        pairs = list(itertools.combinations(labels, 2))
        out.append(sum(a == b for a, b in pairs) / len(pairs))
    return np.array(out)


def ref_fleiss_counts(counts):
    counts = np.asarray(counts, np.int64)
    n_items = counts.shape[0]
    # rule: num_raters = max row sum; p_i = column sums / (N * raters); P_j = (sum counts^2 - raters) / (raters (raters - 1)); (P_bar - Pe) / (1 - Pe + 1e-5) -- src/torchmetrics/functional/nominal/fleiss_kappa.py (_fleiss_kappa_compute)
    raters = counts.sum(1).max()
    p_i = counts.sum(0) / (n_items * raters)
    with np.errstate(all="ignore"):
        p_j = ((counts ** 2).sum(1) - raters) / np.float64(raters * (raters - 1))
    p_bar = p_j.mean()
    pe = (p_i ** 2).sum()
    v = float((p_bar - pe) / (1 - pe + 1e-5))
    rows_equal = bool(np.all(counts.sum(1) == raters))
    if rows_equal and raters > 1:
        # Fleiss' published kappa from pair enumeration, without the 1e-5
        P = _pairwise_agreement(counts).mean()
        pj = counts.sum(0) / counts.sum()
        Pe = float((pj ** 2).sum())
        _close(v, (P - Pe) / (1 - Pe + 1e-5), tol=1e-12)
        if 1 - Pe > 1e-3:
            assert abs(v - (P - Pe) / (1 - Pe)) <= 1e-5 * abs(P - Pe) / (1 - Pe) ** 2 * 1.01 + 1e-15
        src = "hand-computed (numpy): Fleiss' kappa (pairwise agreement, cross-checked) with TorchMetrics' +1e-5 in the denominator"
    elif not rows_equal:
        src = "hand-computed (numpy): TorchMetrics' formula with num_raters = max row sum (rows with fewer raters)"
    else:
        src = "hand-computed (numpy): one rater gives 0/0 agreement (NaN)"
    return v, src


def fleiss_probs_counts(ratings):
    r = np.asarray(ratings)
    # rule: argmax over dim 1 per rater, one_hot(num_classes=ratings.shape[1] AFTER argmax = R), count per category -- src/torchmetrics/functional/nominal/fleiss_kappa.py (_fleiss_kappa_update)
    lab = r.argmax(1)  # [N, R]
    assert r.shape[1] == r.shape[2], "only R == C is emitted (TorchMetrics one-hot-encodes with R classes)"
    counts = np.stack([np.bincount(row, minlength=r.shape[1]) for row in lab])
    return counts


# ============================================================================================
# suites
# ============================================================================================
def gen_clustering():
    S = Suite("clustering.json")
    rng = np.random.default_rng(2024)

    def noisy(t, K, flip, perm=None):
        C = int(t.max()) + 1
        mapping = rng.choice(K, size=C, replace=K < C) if perm is None else perm
        p = mapping[t].copy()
        sel = rng.random(len(t)) < flip
        p[sel] = rng.integers(0, K, sel.sum())
        return p

    # ---- scenarios: (preds, target, num_classes, num_clusters or None) ----
    sc = {}
    t = rng.integers(0, 4, 40)
    sc["random_n40_c4"] = (noisy(t, 4, 0.35), t, 4, None)
    t = rng.integers(0, 3, 25)
    sc["random_n25_c3_k5"] = (noisy(t, 5, 0.3), t, 3, 5)
    t = rng.integers(0, 6, 60)
    sc["random_n60_c6"] = (noisy(t, 6, 0.4), t, 6, None)
    t = rng.integers(0, 5, 50)
    sc["random_n50_c5_k3_weak"] = (rng.integers(0, 3, 50), t, 5, 3)
    t = rng.integers(0, 3, 20)
    sc["random_n20_c3_k2"] = (noisy(t, 2, 0.2), t, 3, 2)
    t = rng.integers(0, 4, 30)
    sc["perfect"] = (t.copy(), t, 4, None)
    t = rng.integers(0, 5, 35)
    sc["permuted_labels"] = (np.array([3, 0, 4, 1, 2])[t], t, 5, None)
    t = rng.integers(0, 3, 24)
    sc["merged_clusters"] = (np.array([0, 0, 1])[t], t, 3, 2)
    sc["split_clusters"] = (t * 2 + (np.arange(24) % 2), t, 3, 6)
    sc["preds_one_cluster"] = (np.zeros(18, np.int64), rng.integers(0, 3, 18), 3, None)
    sc["target_one_class"] = (rng.integers(0, 4, 18), np.zeros(18, np.int64), 3, 4)
    sc["both_one_cluster"] = (np.zeros(12, np.int64), np.zeros(12, np.int64), 3, None)
    sc["both_one_cluster_id2"] = (np.full(9, 2), np.full(9, 1), 3, None)
    sc["preds_singletons"] = (rng.permutation(8), rng.integers(0, 3, 8), 3, 8)
    sc["both_singletons"] = (rng.permutation(7), np.arange(7), 7, None)
    sc["one_row"] = (np.array([1]), np.array([2]), 3, None)
    sc["two_rows_same"] = (np.array([1, 1]), np.array([0, 0]), 2, None)
    sc["two_rows_split"] = (np.array([0, 1]), np.array([1, 1]), 2, None)
    sc["exact_independence_2x2"] = (np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), 2, None)
    sc["exact_independence_4x3"] = (np.tile(np.arange(3), 8), np.repeat(np.arange(4), 6), 4, 3)
    t = rng.integers(0, 4, 16)
    sc["sparse_ids_declared_256"] = (noisy(t, 4, 0.3), t, 256, None)
    t = rng.integers(0, 3, 20)
    sc["sparse_ids_c200_k300"] = (np.array([7, 150, 299])[noisy(t, 3, 0.25)], np.array([3, 64, 199])[t], 200, 300)
    sc["ties_assignment"] = (np.array([0, 1, 0, 1, 2, 2, 3, 3]), np.array([0, 0, 1, 1, 2, 2, 3, 3]), 4, None)
    t = rng.integers(0, 50, 2000)
    sc["large_n2000_c50"] = (noisy(t, 50, 0.5), t, 50, None)
    t = rng.integers(0, 40, 1200)
    sc["large_n1200_c40_k60"] = (noisy(t, 60, 0.6), t, 40, 60)
    # MI tiny but nonzero: 2x2 with det = 1 and large margins (MI ~ 1e-8 < float32 eps)
    k = 40
    tab = np.array([[k, k - 1], [k + 1, k]])
    tt = np.concatenate([np.full(tab[i].sum(), i) for i in range(2)])
    pp = np.concatenate([np.repeat([0, 1], tab[i]) for i in range(2)])
    perm = rng.permutation(len(tt))
    tiny = (pp[perm], tt[perm], 2, None)

    LARGE_METRICS = {
        "large_n2000_c50": ("mutual_info_score", "normalized_mutual_info_score", "adjusted_mutual_info_score",
                            "adjusted_rand_score"),
        "large_n1200_c40_k60": ("normalized_mutual_info_score", "adjusted_mutual_info_score", "adjusted_rand_score"),
    }
    large = set(LARGE_METRICS)

    def args_for(C, K, extra=None):
        a = {"num_classes": C}
        if K is not None:
            a["num_clusters"] = K
        a.update(extra or {})
        return a

    def add_label(name, metric, margs, pp, tt, fn, **fkw):
        v, src = fn(pp, tt, **fkw)
        # Tally's declared table with empty rows/cols dropped is TorchMetrics' torch.unique table
        C, K = margs["num_classes"], margs.get("num_clusters", margs["num_classes"])
        assert (declared_table(pp, tt, C, K) == contingency(pp, tt)).all()
        rt, at = TOLS.get(metric, (RT, AT))
        if metric == "adjusted_mutual_info_score" and v == 0.0 and "exact arithmetic" in src:
            at = 1e-6
        S.add(name, spec(metric, margs), {"preds": T(pp, "int64"), "target": T(tt, "int64")}, v, src, rtol=rt, atol=at)

    def quirk_tag(metric, tag, pp, tt, fkw):
        m = contingency(pp, tt)
        if metric in ("normalized_mutual_info_score", "adjusted_mutual_info_score") and m.shape == (1, 1):
            return tag + "__quirk_tm_0_sklearn_1"
        if metric == "adjusted_mutual_info_score":
            emi = emi_numpy(m)
            norm = gmean([entropy_counts(m.sum(0)), entropy_counts(m.sum(1))], fkw.get("average_method", "arithmetic"))
            if abs(norm - emi) < 1e-12:
                return tag + "__quirk_denominator_clamped_f32_eps"
        if metric == "v_measure_score" and mi_exact(m) == 0.0 and min(m.shape) > 1:
            return tag + "__quirk_h_plus_c_zero_gives_1"
        return tag

    for tag, (pp, tt, C, K) in sc.items():
        for metric, fn in LABEL_METRICS.items():
            variants = [({}, {})]
            if metric in ("normalized_mutual_info_score", "adjusted_mutual_info_score") and tag not in large:
                variants += [({"average_method": a}, {"average_method": a}) for a in AVG]
            if metric == "v_measure_score" and tag not in large and not tag.startswith(("sparse", "both", "one_row", "two_rows")):
                variants += [({"beta": 0.5}, {"beta": 0.5}), ({"beta": 2.0}, {"beta": 2.0})]
            if tag in large and metric not in LARGE_METRICS[tag]:
                continue
            for extra, fkw in variants:
                margs = args_for(C, K, extra)
                name = f"{metric}{_argtag(extra)}__{quirk_tag(metric, tag, pp, tt, fkw)}"
                add_label(name, metric, margs, pp, tt, fn, **fkw)
        # cluster_accuracy: preds and target in [0, num_classes)
        ca_c = max(C, K or C)
        if tag in ("sparse_ids_declared_256", "sparse_ids_c200_k300"):
            ca_c = 128 if tag == "sparse_ids_declared_256" else 300
        v, src = ref_cluster_accuracy(pp, tt, ca_c)
        S.add(f"cluster_accuracy__{tag}", spec("cluster_accuracy", {"num_classes": ca_c}),
              {"preds": T(pp, "int64"), "target": T(tt, "int64")}, v, src, rtol=RT, atol=AT)
    # MI below float32 eps: NMI returns MI itself
    pp, tt, C, _ = tiny
    for metric, extra in [("mutual_info_score", {}), ("normalized_mutual_info_score", {}),
                          ("normalized_mutual_info_score", {"average_method": "max"}), ("adjusted_mutual_info_score", {})]:
        v, src = LABEL_METRICS[metric](pp, tt, **extra)
        name = f"{metric}{_argtag(extra)}__mi_below_f32_eps" + ("__quirk_returns_mi" if metric == "normalized_mutual_info_score" else "")
        if metric == "normalized_mutual_info_score":
            assert 0 < v <= F32_EPS and abs(v - skm.normalized_mutual_info_score(tt, pp, **extra)) > 1e-9
        rt, at = TOLS.get(metric, (RT, AT))
        S.add(name, spec(metric, {"num_classes": C, **extra}), {"preds": T(pp, "int64"), "target": T(tt, "int64")},
              v, src, rtol=rt, atol=at)
    # ---- refused -----------------------------------------------------------------------------
    t = rng.integers(0, 3, 12)
    p = rng.integers(0, 3, 12)
    bad_p = p.copy()
    bad_p[5] = 3
    bad_t = t.copy()
    bad_t[2] = -1
    for metric in list(LABEL_METRICS) + ["cluster_accuracy"]:
        base = {"num_classes": 3}
        S.add(f"{metric}__refused_preds_id_ge_num_clusters", spec(metric, base),
              {"preds": T(bad_p, "int64"), "target": T(t, "int64")}, gf.Refused("preds"),
              "refused: a preds id outside [0, num_clusters)")
        S.add(f"{metric}__refused_negative_target_id", spec(metric, base),
              {"preds": T(p, "int64"), "target": T(bad_t, "int64")}, gf.Refused("target"),
              "refused: a target id outside [0, num_classes)")
        # rule: float labels are refused ("Expected real, discrete values") -- src/torchmetrics/functional/clustering/utils.py (check_cluster_labels)
        S.add(f"{metric}__refused_float_preds", spec(metric, base),
              {"preds": T(p, "float32"), "target": T(t, "int64")}, gf.Refused("preds"),
              "refused: clustering labels must be integers (TorchMetrics: 'Expected real, discrete values')")
    S.add("mutual_info_score__refused_preds_id_ge_explicit_num_clusters", spec("mutual_info_score", {"num_classes": 5, "num_clusters": 2}),
          {"preds": T(p, "int64"), "target": T(t, "int64")}, gf.Refused("preds"),
          "refused: preds ids are checked against num_clusters (2), not num_classes (5)")

    # ---- data-point metrics ------------------------------------------------------------------
    def blobs(n, d, k, spread=1.0, scale=4.0, dec=4, labels=None):
        centers = rng.normal(0, scale, (k, d))
        lab = rng.permutation(np.arange(n) % k) if labels is None else labels
        x = centers[lab] + rng.normal(0, spread, (n, d))
        return np.round(x, dec), lab

    dsc = {}
    x, lab = blobs(40, 3, 4)
    dsc["blobs_n40_d3_k4_f64"] = (T(x, "float64"), lab, 4)
    x, lab = blobs(30, 2, 3)
    dsc["blobs_n30_d2_k3_f32"] = (T(x, "float32"), lab, 3)
    x, lab = blobs(24, 1, 2, spread=2.0)
    dsc["overlapping_n24_d1_k2"] = (T(x, "float64"), lab, 2)
    x, lab = blobs(45, 4, 6, spread=3.0, scale=2.0)
    dsc["noisy_n45_d4_k6"] = (T(x, "float64"), lab, 6)
    x, lab = blobs(300, 4, 10, dec=3)
    dsc["large_n300_d4_k10"] = (T(x, "float32"), lab, 10)
    x, lab = blobs(30, 2, 3)
    dsc["offset1e4_f64"] = (T(x + 1e4, "float64"), lab, 3)
    x, lab = blobs(12, 2, 2)
    dsc["two_clusters_n12"] = (T(x, "float64"), lab, 2)
    dsc["n3_two_clusters"] = (T([[0.0, 0.0], [1.0, 0.5], [4.0, 4.0]], "float64"), np.array([0, 0, 1]), 2)
    x, lab = blobs(36, 3, 4)
    lab = np.where(lab == 2, 4, lab)  # id 2 unused, K = 5
    dsc["absent_cluster_id2_k5"] = (T(x, "float64"), lab, 5)
    x, lab = blobs(25, 2, 3)
    dsc["absent_cluster_k8_ids_0_1_2"] = (T(x, "float32"), lab, 8)
    x, lab = blobs(20, 2, 3)
    dsc["absent_cluster_k64_ids_5_40_63"] = (T(x, "float64"), np.array([5, 40, 63])[lab], 64)
    ident = np.array([[1.5, -2.0], [1.5, -2.0], [1.5, -2.0], [-3.0, 0.5], [-3.0, 0.5], [6.0, 6.0], [6.0, 6.0], [6.0, 6.0]])
    dsc["identical_points_per_cluster"] = (T(ident, "float64"), np.array([0, 0, 0, 1, 1, 2, 2, 2]), 3)

    def add_data(name, metric, margs, xx, lab, fn, **fkw):
        v, src = fn(xx.f64, lab, **fkw)
        S.add(name, spec(metric, margs), {"data": xx, "labels": T(lab, "int64")}, v, src, rtol=RT, atol=AT)

    for tag, (xx, lab, K) in dsc.items():
        assert 1 < len(np.unique(lab)) < len(lab)
        if not tag.startswith("absent"):
            assert len(np.unique(lab)) == K
        add_data(f"calinski_harabasz_score__{tag}", "calinski_harabasz_score", {"num_clusters": K}, xx, lab, ref_ch)
        add_data(f"davies_bouldin_score__{tag}", "davies_bouldin_score", {"num_clusters": K}, xx, lab, ref_db)
        for extra in ({}, {"p": 1.0}, {"p": 3.0}):
            if extra and tag.startswith("large"):
                continue
            suffix = "__inf_no_intracluster_spread" if tag == "identical_points_per_cluster" else ""
            add_data(f"dunn_index{_argtag(extra)}__{tag}{suffix}", "dunn_index", {"num_clusters": K, **extra}, xx, lab,
                     ref_dunn, p=extra.get("p", 2.0))
    add_data("dunn_index_p-2.0__blobs_n40_d3_k4_f64", "dunn_index", {"num_clusters": 4, "p": 2.0}, *dsc["blobs_n40_d3_k4_f64"][:2],
             ref_dunn, p=2.0)
    add_data("dunn_index_p-1.5__noisy_n45_d4_k6", "dunn_index", {"num_clusters": 6, "p": 1.5}, *dsc["noisy_n45_d4_k6"][:2],
             ref_dunn, p=1.5)
    xx, lab, K = dsc["blobs_n40_d3_k4_f64"]
    bad = lab.copy()
    bad[7] = 4
    for metric in ("calinski_harabasz_score", "davies_bouldin_score", "dunn_index"):
        S.add(f"{metric}__refused_label_id_ge_num_clusters", spec(metric, {"num_clusters": 4}),
              {"data": xx, "labels": T(bad, "int64")}, gf.Refused("labels"), "refused: a labels id outside [0, num_clusters)")
    return S


def gen_nominal():
    S = Suite("nominal.json")
    rng = np.random.default_rng(777)

    def assoc(t, C, strength):
        p = t.copy()
        sel = rng.random(len(t)) >= strength
        p[sel] = rng.integers(0, C, sel.sum())
        return p

    sc = {}  # tag -> (preds T, target T, num_classes, extra args for the NaN strategy)
    t = rng.integers(0, 4, 50)
    sc["random_n50_c4"] = (T(assoc(t, 4, 0.5), "int64"), T(t, "int64"), 4)
    t = rng.integers(0, 5, 60)
    sc["random_n60_c5_weak"] = (T(assoc(t, 5, 0.15), "int64"), T(t, "int64"), 5)
    t = rng.integers(0, 3, 40)
    sc["random_n40_c4_asym"] = (T(np.array([0, 0, 1])[t] * 2 + (rng.random(40) < 0.3), "int64"), T(t, "int64"), 4)
    t = rng.integers(0, 4, 30)
    sc["perfect"] = (T(t, "int64"), T(t, "int64"), 4)
    sc["permuted_association"] = (T(np.array([2, 3, 0, 1])[t], "int64"), T(t, "int64"), 4)
    sc["independence_exact_3x4"] = (T(np.tile(np.arange(4), 6), "int64"), T(np.repeat(np.arange(3), 8), "int64"), 4)
    t = (rng.random(30) < 0.5).astype(np.int64)
    p = np.where(rng.random(30) < 0.7, t, 1 - t)
    sc["2x2_yates"] = (T(p, "int64"), T(t, "int64"), 2)
    # table [[12, 1], [1, 0]]: |E - O| = 1/14 < 0.5 in every cell; scipy's Yates gives chi2 = 0 (V = 0),
    # TorchMetrics' 0.5 step overshoots to |E - O'| = 3/7 and the bias-corrected V stays > 0
    tq = np.array([0] * 13 + [1])
    pq = np.array([0] * 12 + [1, 0])
    perm = rng.permutation(14)
    sc["2x2_yates_small_deviation"] = (T(pq[perm], "int64"), T(tq[perm], "int64"), 2)
    sc["2x2_in_c5_absent_classes"] = (T(np.where(p == 1, 4, 1), "int64"), T(np.where(t == 1, 3, 1), "int64"), 5)
    t = rng.choice([0, 2, 5], 40)
    sc["absent_classes_c6"] = (T(np.where(rng.random(40) < 0.6, t, rng.choice([0, 2, 5], 40)), "int64"), T(t, "int64"), 6)
    t = rng.integers(0, 3, 20)
    sc["declared_c50_ids_lt3"] = (T(assoc(t, 3, 0.6), "int64"), T(t, "int64"), 50)
    t = rng.integers(0, 4, 32)
    sc["scores_preds_n32_c4"] = (T(np.round(rng.normal(0, 1, (32, 4)) + 1.5 * np.eye(4)[t], 4), "float32"), T(t, "int64"), 4)
    sc["scores_both_n32_c4"] = (T(np.round(rng.normal(0, 1, (32, 4)) + 1.5 * np.eye(4)[t], 4), "float64"),
                                T(np.round(rng.normal(0, 1, (32, 4)) + 2.0 * np.eye(4)[t], 4), "float64"), 4)
    t = rng.integers(0, 3, 24).astype(np.float64)
    sc["fractional_float_labels_truncate"] = (T(np.trunc(assoc(t.astype(np.int64), 3, 0.6)) + rng.choice([0.0, 0.25, 0.5, 0.99], 24), "float64"),
                                               T(t + rng.choice([0.0, 0.7], 24), "float64"), 3)
    sc["one_row"] = (T([1], "int64"), T([2], "int64"), 3)
    sc["preds_one_class"] = (T(np.full(20, 2), "int64"), T(rng.integers(0, 4, 20), "int64"), 4)
    sc["target_one_class"] = (T(rng.integers(0, 4, 20), "int64"), T(np.zeros(20, np.int64), "int64"), 4)
    sc["every_row_own_target_class"] = (T(rng.integers(0, 3, 6), "int64"), T(rng.permutation(6), "int64"), 6)
    t = rng.integers(0, 10, 1000)
    sc["large_n1000_c10"] = (T(assoc(t, 10, 0.3), "int64"), T(t, "int64"), 10)

    nan_sc = {}
    t = rng.integers(0, 4, 40).astype(np.float64)
    p = assoc(t.astype(np.int64), 4, 0.5).astype(np.float64)
    pn, tn = p.copy(), t.copy()
    pn[[1, 7, 13, 22]] = np.nan
    tn[[7, 30]] = np.nan
    nan_sc["nan_in_both"] = (T(pn, "float64"), T(tn, "float64"), 4)
    nan_sc["nan_in_preds_int_target"] = (T(pn, "float64"), T(t, "int64"), 4)
    nan_sc["no_nan_float"] = (T(p, "float64"), T(t, "float64"), 4)
    nan_strats = [({}, {}), ({"nan_strategy": "replace"}, {}), ({"nan_strategy": "drop"}, {"nan_strategy": "drop"}),
                  ({"nan_replace_value": 1.0}, {"nan_replace_value": 1.0}),
                  ({"nan_strategy": "replace", "nan_replace_value": 3.0}, {"nan_replace_value": 3.0})]

    metrics = [
        ("cramers_v", {}, lambda cm, pi, ti: ref_cramers(cm, True)),
        ("cramers_v", {"bias_correction": True}, lambda cm, pi, ti: ref_cramers(cm, True)),
        ("cramers_v", {"bias_correction": False}, lambda cm, pi, ti: ref_cramers(cm, False)),
        ("tschuprows_t", {}, lambda cm, pi, ti: ref_tschuprows(cm, True)),
        ("tschuprows_t", {"bias_correction": False}, lambda cm, pi, ti: ref_tschuprows(cm, False)),
        ("pearsons_contingency_coefficient", {}, lambda cm, pi, ti: ref_pearson(cm)),
        ("theils_u", {}, ref_theils),
    ]

    def add_nom(tag, metric, extra, fn, pp, tt, C, nan_extra=None, nan_kw=None):
        cm, pi, ti = nominal_table(pp.f64, tt.f64, C, **(nan_kw or {}))
        v, src = fn(cm, pi, ti)
        margs = {"num_classes": C, **extra, **(nan_extra or {})}
        name = f"{metric}{_argtag({**extra, **(nan_extra or {})})}__{tag}"
        if "QUIRK" in src and "quirk" not in name:
            name += "__quirk"
        S.add(name, spec(metric, margs), {"preds": pp, "target": tt}, v, src, rtol=RT, atol=AT)

    for tag, (pp, tt, C) in sc.items():
        for metric, extra, fn in metrics:
            if extra.get("bias_correction") is True and tag not in ("random_n50_c4", "2x2_yates", "2x2_yates_small_deviation"):
                continue
            add_nom(tag, metric, extra, fn, pp, tt, C)
    for tag, (pp, tt, C) in nan_sc.items():
        for metric, extra, fn in metrics:
            if extra.get("bias_correction") is True:
                continue
            for nan_extra, nan_kw in nan_strats:
                if tag == "no_nan_float" and nan_extra:
                    continue
                add_nom(tag, metric, extra, fn, pp, tt, C, nan_extra, nan_kw)
    # all rows dropped but one? a NaN row dropped leaving a 2x2 (Yates after the drop)
    pt = np.array([0, 1, 0, 1, 1, 0, 2, np.nan, 0, 1, 1, 1])
    tt_ = np.array([0, 1, 1, 1, 0, 0, np.nan, 2, 0, 1, 1, 0])
    for metric, extra, fn in metrics[:5]:
        for nan_extra, nan_kw in [({"nan_strategy": "drop"}, {"nan_strategy": "drop"}), ({}, {})]:
            add_nom("nan_rows_hold_class2", metric, extra, fn, T(pt, "float64"), T(tt_, "float64"), 3, nan_extra, nan_kw)

    # ---- refused -----------------------------------------------------------------------------
    t = rng.integers(0, 3, 15)
    p = rng.integers(0, 3, 15)
    bp, bt = p.copy(), t.copy()
    bp[4] = 3
    bt[9] = 3
    for metric in ("cramers_v", "tschuprows_t", "pearsons_contingency_coefficient", "theils_u"):
        S.add(f"{metric}__refused_preds_label_ge_num_classes", spec(metric, {"num_classes": 3}),
              {"preds": T(bp, "int64"), "target": T(t, "int64")}, gf.Refused("preds"), "refused: a preds label outside [0, num_classes)")
        S.add(f"{metric}__refused_target_label_ge_num_classes", spec(metric, {"num_classes": 3}),
              {"preds": T(p, "int64"), "target": T(bt, "int64")}, gf.Refused("target"), "refused: a target label outside [0, num_classes)")
        S.add(f"{metric}__refused_nan_replaced_outside_classes", spec(metric, {"num_classes": 3, "nan_replace_value": 5.0}),
              {"preds": T(np.where(np.arange(15) == 3, np.nan, p), "float64"), "target": T(t, "int64")}, gf.Refused("preds"),
              "refused: NaN replaced by 5.0 is a preds label outside [0, num_classes)")

    # ---- fleiss kappa ------------------------------------------------------------------------
    def add_fleiss(tag, margs, ratings, counts=None):
        c = ratings.a if counts is None else counts
        v, src = ref_fleiss_counts(c)
        if counts is not None:
            src = "argmax over categories per rater, counts per category; " + src
        S.add(f"fleiss_kappa{_argtag(margs)}__{tag}", spec("fleiss_kappa", margs), {"ratings": ratings}, v, src, rtol=RT, atol=AT)

    def rand_counts(n_items, C, raters, conc=1.0):
        probs = rng.dirichlet(np.full(C, conc), n_items)
        return np.stack([rng.multinomial(raters, pr) for pr in probs])

    cnt = {
        "random_n20_c4_r6": rand_counts(20, 4, 6, 0.7),
        "random_n30_c5_r3": rand_counts(30, 5, 3, 1.0),
        "near_uniform_n25_c3_r5": rand_counts(25, 3, 5, 50.0),
        "two_raters_n15_c3": rand_counts(15, 3, 2, 0.5),
        "perfect_agreement_varied": np.eye(4, dtype=np.int64)[rng.integers(0, 4, 12)] * 5,
        "all_one_category_gives_0": np.tile([0, 7, 0], (10, 1)),
        "one_row": np.array([[2, 1, 3]]),
        "one_rater_nan": np.eye(3, dtype=np.int64)[rng.integers(0, 3, 8)],
    }
    uneq = rand_counts(14, 4, 5, 0.8)
    uneq[[2, 9]] = rand_counts(2, 4, 3, 0.8)
    cnt["rows_differ_max_raters"] = uneq
    for tag, c in cnt.items():
        add_fleiss(tag, {"mode": "counts"}, T(c, "int64"))
    add_fleiss("random_n20_c4_r6", {}, T(cnt["random_n20_c4_r6"], "int64"))
    add_fleiss("random_n20_c4_r6_int32", {}, T(cnt["random_n20_c4_r6"], "int32"))
    for tag, (N, C, dt) in {"probs_n15_c4_r4": (15, 4, "float32"), "probs_n20_c3_r3": (20, 3, "float64")}.items():
        truth = rng.integers(0, C, N)
        r = np.round(rng.normal(0, 1, (N, C, C)) + 1.2 * np.eye(C)[truth][:, :, None], 4)
        # rule: only R == C is emitted: TorchMetrics one-hot-encodes the argmax with num_classes = R -- src/torchmetrics/functional/nominal/fleiss_kappa.py
        counts = fleiss_probs_counts(r)
        add_fleiss(tag, {"mode": "probs"}, T(r, dt), counts=counts)
    S.add("fleiss_kappa_mode-counts__refused_float_counts", spec("fleiss_kappa", {"mode": "counts"}),
          {"ratings": T(cnt["random_n20_c4_r6"], "float64")}, gf.Refused("ratings"),
          "refused: mode=counts needs integer counts (TorchMetrics: 'be none floating point')")
    S.add("fleiss_kappa__refused_float_counts_default_mode", "fleiss_kappa",
          {"ratings": T(cnt["random_n20_c4_r6"], "float32")}, gf.Refused("ratings"),
          "refused: mode=counts (default) needs integer counts")
    S.add("fleiss_kappa_mode-probs__refused_int_ratings", spec("fleiss_kappa", {"mode": "probs"}),
          {"ratings": T(rng.integers(0, 3, (6, 3, 3)), "int64")}, gf.Refused("ratings"),
          "refused: mode=probs needs floating [N, C, R] ratings")
    return S


def main():
    for s in (gen_clustering(), gen_nominal()):
        s.write_and_report()


if __name__ == "__main__":
    main()
