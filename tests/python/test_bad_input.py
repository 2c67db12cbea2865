"""The bad-input table (tests/integration/bad_input_cases.json) through
Python: every refusal is a ValueError or MemoryError carrying the engine's
message, and after it every state is as it was."""

import math

import pytest
import torch

import tally
from conftest import load_json

TABLE = load_json("tests/integration/bad_input_cases.json")["cases"]


def leaves(values):
    if isinstance(values, list):
        return [x for v in values for x in leaves(v)]
    return [values]


def tensors(body):
    """A body as the C++ table test reads it: integers -> int64, otherwise
    float32 ("nan" is NaN; an empty list is float32), unless `dtypes` says."""
    dtypes = body.get("dtypes", {})
    out = {}
    for name, values in body.items():
        if name == "dtypes":
            continue
        flat = leaves(values)
        ints = bool(flat) and all(isinstance(x, int) and not isinstance(x, bool) for x in flat)
        nan = lambda v: [nan(x) for x in v] if isinstance(v, list) else (math.nan if v == "nan" else v)
        dtype = getattr(torch, dtypes[name]) if name in dtypes else (torch.int64 if ints else torch.float32)
        out[name] = torch.tensor(nan(values), dtype=dtype)
    return out


def collection(case):
    return tally.Collection(case["metrics"], max_state_bytes=case.get("max_state_bytes", 0))


def assert_names(error, case):
    for name in case["names"]:
        assert name in str(error), f"{case['class']}: '{name}' not in: {error}"


def cases(*, create):
    # The cases of the in-process entry points (a Python metric is a
    # program, as a session's set is); eval-only cases are about files.
    return [pytest.param(c, id=f"{c['class']}:{','.join(c['metrics'])}") for c in TABLE
            if "file" not in c and "session" in c.get("entries", ["session"])
            and (c.get("stage") == "create") == create]


@pytest.mark.parametrize("case", cases(create=True))
def test_refused_before_any_state(case):
    # Spec errors at construction; what needs the inputs (a weight the
    # metric has no form for, the state budget) at the first update.
    with pytest.raises((ValueError, MemoryError)) as e:
        m = collection(case)
        m.update(**tensors(case["bad"]))
    if case["class"] == "budget exceeded":
        assert e.type is MemoryError
    else:
        assert e.type is ValueError
    assert_names(e.value, case)


@pytest.mark.parametrize("spec", ["binary_acuracy", "multiclass_accuracy(num_clases=3)",
                                  "binary_auroc(thresholds=[0.5, 0.1, 0.9])", "mean(", "multiclass_accuracy"])
def test_bad_spec_refused_when_constructed(spec):
    with pytest.raises(ValueError):
        tally.Metric(spec)


def same(a, b):
    return all(torch.equal(x, y) or (x.is_floating_point() and torch.allclose(x, y, equal_nan=True))
               for x, y in zip(a.values(), b.values()))


@pytest.mark.parametrize("case", cases(create=False))
def test_refused_batch_leaves_states(case):
    good = tensors(case["good"])
    bad = tensors(case["bad"])
    m = collection(case)
    m.update(**good)
    refused_now = True
    try:
        m.update(**bad)
        refused_now = False
    except (ValueError, MemoryError) as e:
        assert_names(e, case)
        if case["class"] == "budget exceeded":
            assert isinstance(e, MemoryError)
        # The states are as they were: one more good batch gives the value
        # of two good batches.
        m.update(**good)
        twice = collection(case)
        twice.update(**good)
        twice.update(**good)
        try:
            want = twice.compute()
        except MemoryError:
            return  # the good batches' compute is itself past this budget
        assert same(m.compute(), want)
    if not refused_now:
        # A value check (a label out of range, NaN scores) is deferred, as in
        # C++: compute reports it, naming the metric and the input (and a
        # compute past the budget is a MemoryError before it allocates).
        kind = MemoryError if case["class"] == "budget exceeded" else ValueError
        with pytest.raises(kind) as e:
            m.compute()
        assert_names(e.value, case)
        if kind is MemoryError:
            return
        # forward checks the batch on its own first: refused, states kept.
        f = collection(case)
        f.update(**good)
        before = f.compute()
        with pytest.raises(ValueError) as e:
            f(**bad)
        assert_names(e.value, case)
        assert same(f.compute(), before)
