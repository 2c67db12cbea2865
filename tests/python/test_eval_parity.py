"""Parity with `tally eval`: the same inputs as .npy files through the
command line and through Python give the same values, for a sample of every
family (and weights, slices and bootstrap intervals)."""

import json
import subprocess

import numpy as np
import pytest
import torch

import tally
from conftest import matches

RNG = np.random.default_rng(5)
ROWS = 257


def probs(rows, classes):
    p = RNG.random((rows, classes), dtype=np.float32)
    return p / p.sum(1, keepdims=True)


INPUTS = {
    "multiclass": {"preds": probs(ROWS, 5), "target": RNG.integers(0, 5, ROWS)},
    "binary": {"preds": RNG.random(ROWS, dtype=np.float32), "target": RNG.integers(0, 2, ROWS)},
    "multilabel": {"preds": RNG.random((ROWS, 3), dtype=np.float32), "target": RNG.integers(0, 2, (ROWS, 3))},
    "regression": {"preds": RNG.normal(size=ROWS).astype(np.float32),
                   "target": RNG.normal(size=ROWS).astype(np.float32)},
    "retrieval": {"preds": RNG.random(ROWS, dtype=np.float32), "target": RNG.integers(0, 2, ROWS),
                  "indexes": RNG.integers(0, 20, ROWS)},
    "aggregation": {"value": RNG.normal(size=ROWS).astype(np.float32)},
    "weighted": {"preds": RNG.random(ROWS, dtype=np.float32), "target": RNG.integers(0, 2, ROWS),
                 "weight": RNG.random(ROWS, dtype=np.float32), "groups": RNG.integers(0, 4, ROWS)},
}

CASES = [
    ("multiclass", "multiclass_f1_score(num_classes=5, average=macro)"),
    ("multiclass", "multiclass_auroc(num_classes=5)"),
    ("multiclass", "multiclass_roc(num_classes=5, thresholds=11)"),
    ("multiclass", "multiclass_calibration_error(num_classes=5)"),
    ("binary", "binary_average_precision"),
    ("binary", "binary_precision_recall_curve"),
    ("binary", "binary_auroc(thresholds=100, num_bootstraps=20)"),
    ("multilabel", "multilabel_accuracy(num_labels=3, average=none)"),
    ("regression", "pearson_corrcoef"),
    ("regression", "mean_squared_error(num_bootstraps=10)"),
    ("regression", "spearman_corrcoef"),
    ("retrieval", "retrieval_normalized_dcg"),
    ("retrieval", "retrieval_reciprocal_rank"),
    ("aggregation", "mean"),
    ("aggregation", "max"),
    ("weighted", "binary_auroc(num_groups=4, overall=true)"),
]


def cli_value(tally_bin, tmp_path, family, spec):
    args = [tally_bin, "eval", "--metric", spec, "--format", "json", "--batch-size", "50"]
    for name, array in INPUTS[family].items():
        path = tmp_path / f"{name}.npy"
        np.save(path, array)
        args += ["--input", f"{name}={path}"]
    out = subprocess.run(args, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["results"][0]["value"]


@pytest.mark.parametrize("family,spec", CASES, ids=[s for _, s in CASES])
def test_same_as_tally_eval(family, spec, tally_bin, tmp_path):
    expected = cli_value(tally_bin, tmp_path, family, spec)
    m = tally.Metric(spec)
    arrays = INPUTS[family]
    for start in range(0, ROWS, 50):
        m.update(**{k: torch.from_numpy(v[start:start + 50]) for k, v in arrays.items()})
    assert matches(m.compute(), expected, rtol=1e-12, atol=1e-15), spec
