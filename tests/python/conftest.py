"""Shared fixtures of the Python suite (scripts/test_python runs it with the
staged package on PYTHONPATH and TALLY_BIN naming the command line)."""

import json
import math
import os
import pathlib

import pytest
import torch

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def tally_bin():
    path = os.environ.get("TALLY_BIN", str(ROOT / "bazel-bin/tools/tally/tally"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"no tally command line at {path} (scripts/test_python builds it)")
    return path


def tensor_of(spec):
    """A golden fixture's input ({"dtype", "shape", "data"}) as a tensor."""
    if spec["dtype"].startswith(("int", "uint")):  # exactly: ids near 2^63 have no float64
        return torch.tensor(spec["data"], dtype=torch.int64).reshape(spec["shape"]).to(getattr(torch, spec["dtype"]))
    values = [math.nan if v is None else (-math.inf if v == "-inf" else math.inf) if isinstance(v, str)
              else float(v) for v in spec["data"]]
    t = torch.tensor(values, dtype=torch.float64).reshape(spec["shape"])
    return t.to(getattr(torch, spec["dtype"]))


def flatten(expected):
    if isinstance(expected, list):
        out = []
        for x in expected:
            out.extend(flatten(x))
        return out
    if expected is None:
        return [math.nan]
    if isinstance(expected, str):
        return [-math.inf if expected.startswith("-") else math.inf]
    return [float(expected)]


def matches(got, expected, rtol, atol):
    """Whether a result (tensor or tuple/list of them) equals a fixture's
    expected JSON within rtol/atol (NaN equals NaN). A dict result
    (mean_average_precision) is compared in its keys' order."""
    if isinstance(got, dict):
        got = list(got.values())
    if isinstance(got, (tuple, list)):
        return isinstance(expected, list) and len(expected) == len(got) and all(
            matches(g, e, rtol, atol) for g, e in zip(got, expected))
    want = torch.tensor(flatten(expected), dtype=torch.float64)
    have = got.detach().cpu().to(torch.float64).reshape(-1)
    if have.numel() != want.numel():
        return False
    return bool(torch.isclose(have, want, rtol=rtol, atol=atol, equal_nan=True).all())


def load_json(relative):
    with open(ROOT / relative) as f:
        return json.load(f)
