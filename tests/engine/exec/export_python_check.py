"""Checks an exported Tally module in Python (Debian's python3-torch).

Run by export_python_test in a directory holding metrics.pt (from `tally
export`), preds.npy, target.npy and eval.json (`tally eval --format json
--batch-size 7` over the same arrays):

    /usr/bin/python3 export_python_check.py SNIPPET.py

It runs docs/python.md's TorchScript snippet verbatim and compares what it prints with
eval.json, then checks merge_state across separately loaded modules, reset,
the boundary checks, and that module.to("meta") moves every state.
Exits non-zero with a message on the first mismatch.
"""

import contextlib
import io
import json
import math
import sys

import numpy as np
import torch

REL = 1e-9  # the module runs the reference (decomposed) plans, eval the fused ones


def close(a, b):
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(
            close(x, y) for x, y in zip(a, b))
    if b is None:  # JSON writes NaN and the infinities as null
        return not math.isfinite(a)
    if not math.isfinite(a) or not math.isfinite(b):
        return a == b or (math.isnan(a) and math.isnan(b))
    return abs(a - b) <= REL * max(abs(a), abs(b)) + 1e-300


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def expect_results(got, want, when):
    if len(got) != len(want):
        fail(f"{when}: {len(got)} results, eval printed {len(want)}")
    for (name, value), w in zip(got, want):
        if not w["metric"].startswith(name):
            fail(f"{when}: result {name} where eval has {w['metric']}")
        if not close(value, w["value"]):
            fail(f"{when}: {name} = {value}, eval printed {w['value']}")


def results(module):
    return [(k, v.tolist()) for k, v in module.compute().items()]


def main():
    snippet = open(sys.argv[1]).read()
    want = json.load(open("eval.json"))["results"]

    # 1. The docs/python.md snippet, verbatim.
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(snippet, "docs/python.md", "exec"), {})
    printed = []
    for line in out.getvalue().splitlines():
        name, value = line.split(" ", 1)
        printed.append((name, eval(value, {"__builtins__": {}}, {"nan": math.nan, "inf": math.inf})))
    expect_results(printed, want, "docs/python.md snippet")

    preds = torch.from_numpy(np.load("preds.npy"))
    target = torch.from_numpy(np.load("target.npy"))
    rows = len(target)

    # 2. Two shards in separately loaded modules, merged.
    a, b = torch.jit.load("metrics.pt"), torch.jit.load("metrics.pt")
    half = (rows // 2) // 7 * 7  # keep eval's batch boundaries
    for start in range(0, rows, 7):
        (a if start < half else b).update(preds[start:start + 7], target[start:start + 7])
    a.merge_state(b)
    expect_results(results(a), want, "merge_state")

    # 3. reset, then all rows again.
    a.reset()
    for start in range(0, rows, 7):
        a.update(preds[start:start + 7], target[start:start + 7])
    expect_results(results(a), want, "after reset")

    # 4. Bad input: an error naming the input, and nothing changes.
    before = {k: v.clone() for k, v in a.states().items()}
    try:
        a.update(preds.double(), target)
        fail("float64 preds were accepted")
    except torch.jit.Error as e:
        if "input 'preds'" not in str(e) or "wrong dtype" not in str(e):
            fail(f"unclear error: {e}")
    for k, v in a.states().items():
        if not torch.equal(v, before[k]):
            fail(f"state {k} changed by a rejected update")

    # 5. Every state is a buffer: module.to("meta") moves them all, updates
    # run there (no host reads), reset keeps them there.
    names = set(a.states().keys())
    buffers = dict(a.named_buffers())
    if len(buffers) != len(names):
        fail(f"{len(buffers)} buffers for {len(names)} states")
    a.to("meta")
    if any(t.device.type != "meta" for t in a.buffers()):
        fail("module.to('meta') left a buffer behind")
    try:
        a.update(preds[:5].to("meta"), target[:5].to("meta"))
    except torch.jit.Error as e:
        fail(f"update on meta failed: {str(e).splitlines()[-1]}")
    a.reset()
    if any(t.device.type != "meta" for t in a.states().values()):
        fail("a state left meta")
    print("ok:", len(want), "results,", len(names), "states")


if __name__ == "__main__":
    main()
