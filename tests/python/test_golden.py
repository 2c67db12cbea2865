"""Parity through Python with the golden fixtures (tests/golden: values from
scikit-learn, SciPy and references written from the published algorithms):
a sample of every fixture file, in one update, in batches of 7 rows, and
through forward()."""

import pathlib

import pytest
import torch

import tally
from conftest import ROOT, load_json, matches, tensor_of

PER_FILE = 12  # evenly spaced cases of each file


def sample_cases():
    out = []
    for path in sorted((ROOT / "tests/golden/fixtures").glob("*.json")):
        cases = load_json(path.relative_to(ROOT))["cases"]
        step = max(1, len(cases) // PER_FILE)
        for c in cases[::step][:PER_FILE]:
            out.append(pytest.param(c, id=f"{path.stem}:{c['name']}"))
    return out


def inputs_of(case):
    return {name: tensor_of(arr) for name, arr in case["inputs"].items()}


@pytest.mark.parametrize("case", sample_cases())
def test_golden_case(case):
    inputs = inputs_of(case)
    rtol, atol = case.get("rtol", 1e-5), case.get("atol", 1e-6)
    if "error" in case:
        with pytest.raises((ValueError, MemoryError)) as e:
            m = tally.Metric(case["metric"])
            m.update(**inputs)
            m.compute()
        assert case["error"] in str(e.value)
        return
    whole = tally.Metric(case["metric"])
    whole.update(**inputs)
    assert matches(whole.compute(), case["expected"], rtol, atol), case["name"]

    rows = next((t.shape[0] for t in inputs.values() if t.dim() > 0), 0)
    batched = tally.Metric(case["metric"])
    for start in range(0, max(rows, 1), 7):
        batched.update(**{k: (v[start:start + 7] if v.dim() > 0 else v) for k, v in inputs.items()})
    assert matches(batched.compute(), case["expected"], rtol, atol), case["name"] + " in batches of 7"

    # forward over the whole input is the batch value, and accumulates it.
    fresh = tally.Metric(case["metric"])
    assert matches(fresh(**inputs), case["expected"], rtol, atol), case["name"] + " forward"
    assert matches(fresh.compute(), case["expected"], rtol, atol), case["name"] + " after forward"
