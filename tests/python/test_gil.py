"""The GIL is released while the engine runs: another Python thread makes
progress during a long compute (and update)."""

import threading

import torch

import tally


def test_other_threads_run_during_compute():
    g = torch.Generator().manual_seed(3)
    rows = 3_000_000
    preds = torch.rand(rows, generator=g)
    target = (torch.rand(rows, generator=g) < preds).long()
    m = tally.Metric("binary_auroc")  # exact: compute sorts every row
    m.update(preds, target)

    count = 0
    stop = threading.Event()

    def spin():
        nonlocal count
        while not stop.is_set():
            count += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        before = count
        m.compute()
        during_compute = count - before
        before = count
        m.update(preds, target)
        during_update = count - before
    finally:
        stop.set()
        t.join()
    # Holding the GIL, the spinning thread could not run at all in between.
    assert during_compute > 1000, during_compute
    assert during_update > 100, during_update
