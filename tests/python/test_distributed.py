"""Sync over the caller's own torch.distributed group (Gloo, ranks from
torch.multiprocessing): the value at world sizes 2 and 3, with uneven shards
and a rank that saw no rows, equals one process over every row; a sync of
count states is 2 collectives."""

import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import tally

SPECS = ["multiclass_accuracy(num_classes=4)", "multiclass_f1_score(num_classes=4, average=macro)",
         "multiclass_auroc(num_classes=4)", "multiclass_confusion_matrix(num_classes=4)"]


def batches():
    g = torch.Generator().manual_seed(11)
    out = []
    for rows in (17, 5, 1, 40, 9):
        out.append((torch.rand(rows, 4, generator=g), torch.randint(0, 4, (rows,), generator=g)))
    return out


def shards(world):
    # Uneven: rank 0 takes most batches, the last rank none (world 3).
    b = batches()
    if world == 2:
        return [b[:3], b[3:]]
    return [b[:3], b[3:], []]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(rank, world, port, out_dir):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        m = tally.Collection(SPECS)
        for preds, target in shards(world)[rank]:
            m.update(preds, target)
        synced = m.compute()  # syncs (the first sync also agrees on the inputs)
        stats = m.sync()  # a later sync: the collectives alone
        m.unsync()
        sums = tally.Collection(SPECS[:2])  # count states only
        for preds, target in shards(world)[rank]:
            sums.update(preds, target)
        sums.sync()
        sums_stats = sums.sync()
        # A group of the caller's own (not the default one) works the same.
        sub = dist.new_group(list(range(world)))
        again = tally.Collection(SPECS, process_group=sub)
        for preds, target in shards(world)[rank]:
            again.update(preds, target)
        torch.save({"synced": synced, "stats": stats, "sums_stats": sums_stats, "sub": again.compute()}, f"{out_dir}/{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("world", [2, 3])
def test_sync_equals_one_process(world, tmp_path):
    mp.spawn(rank_main, args=(world, free_port(), str(tmp_path)), nprocs=world, join=True)
    whole = tally.Collection(SPECS, sync_on_compute=False)
    for preds, target in batches():
        whole.update(preds, target)
    want = whole.compute()
    for rank in range(world):
        got = torch.load(tmp_path / f"{rank}.pt")
        # The header, one allreduce of the counts, one allgather of the
        # rows of the exact AUROC; counts alone: 2.
        assert got["stats"]["collectives"] == 3
        assert got["sums_stats"]["collectives"] == 2
        for key in want:
            assert torch.allclose(got["synced"][key].double(), want[key].double(), rtol=1e-12, atol=0), key
            assert torch.allclose(got["sub"][key].double(), want[key].double(), rtol=1e-12, atol=0), key


def test_no_sync_outside_distributed():
    m = tally.Metric("mean")
    m.update(torch.tensor([1.0, 3.0]))
    assert m.sync() is None
    assert m.compute().item() == 2.0
