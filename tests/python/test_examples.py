"""The Python examples run, and say what they should: the training loop's
validation accuracy improves, and the server's merged replicas equal one
collection over every request."""

import json
import os
import subprocess
import sys

import torch

from conftest import ROOT

EXAMPLES = ROOT / "examples/python"


def run(name):
    env = dict(os.environ)
    out = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout.splitlines()


def test_train_eval():
    lines = [l for l in run("train_eval.py") if l.startswith("epoch")]
    assert len(lines) == 3
    acc = [float(l.split("val_acc=")[1].split()[0]) for l in lines]
    assert acc[-1] > acc[0] > 0.5


def test_server_handler():
    lines = run("server_handler.py")
    assert any(l.startswith("bad request: 400") and "preds" in l for l in lines)
    merged = json.loads(next(l for l in lines if l.startswith("merged:")).split(":", 1)[1])
    sys.path.insert(0, str(EXAMPLES))
    try:
        import server_handler
    finally:
        sys.path.pop(0)
    whole = server_handler.MetricsHandler(4)
    for request in server_handler.make_requests(4):
        whole.handle(request)
    want = whole.metrics.compute()
    for (key, value), expected in zip(merged.items(), want.values()):
        assert abs(value - expected.item()) < 1e-6, key
