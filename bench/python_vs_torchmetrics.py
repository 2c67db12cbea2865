#!/usr/bin/env python3
"""Tally's Python module beside TorchMetrics on the same workloads, in one Python process.

Each workload mirrors `tally bench`'s (tools/tally/bench.cc, MakeWorkload) and scripts/peer_bench.py: the same
specs and the same tensors, made by the ATen CPU generator under the same seeds.
  acc_small        multiclass_accuracy(num_classes=10), batches of 32 float32 logits, 20,000 updates
  cls_small        the cls collection (accuracy, precision, recall and f1 (macro), confusion matrix), C = 10,
                   batches of 32, 20,000 updates
  cls_large        the cls collection, batches of 1,000,000 rows cycling over 4 distinct batches, 10 updates
  retrieval        recall@10, precision@10, MRR, nDCG@10 and MAP over 10,000 queries x 100 documents, 100 updates
  auroc_exact_1e7  exact binary AUROC and average precision over 10^7 rows in 10 updates of 10^6
  cls_imagenet21k  the cls collection over C = 21,841 with integer labels, batches of 4,096, 5 updates
Each library warms up (untimed updates and one compute), then runs `runs` timed passes, each a reset, the
updates and a compute (time.perf_counter); us_per_update and ms_compute are the medians over the passes.
TorchMetrics runs with its defaults (validate_args=True), its metrics in a MetricCollection (compute groups on).
The value check compares the last compute()s per metric in float64 (Tally returns float64 where TorchMetrics
returns float32): the max absolute difference, within 1e-4 to pass. Peak memory is not reported: both libraries
share one process, so its peak RSS belongs to neither (tally bench and scripts/peer_bench.py report their own).
cls_imagenet21k needs about 16 GB even under --quick: each library's confusion matrix is 21,841^2 int64 (3.8 GB),
and TorchMetrics' update makes another.

Output: one JSON line per workload and library, then a table of the ratios (TorchMetrics' time over Tally's): per
update, per compute, and in total (every update of a pass and its compute).

Usage (TorchMetrics is v1.5.2's src/, with lightning-utilities 0.11.8's src/, extracted from their git
repositories under /tmp/peer: never installed, never committed; without it Tally's numbers print alone):
    scripts/python_package build/python
    PYTHONPATH=build/python:/tmp/peer/tm:/tmp/peer/lu /usr/bin/python3 bench/python_vs_torchmetrics.py [--quick]
        [--workload NAME ...] [--threads N]
"""
import argparse
import collections
import json
import statistics
import time

import torch

import tally

try:
    import torchmetrics
    import torchmetrics.classification
    import torchmetrics.retrieval
    PEER_MISSING = None
except ImportError as e:
    torchmetrics = None
    PEER_MISSING = str(e)

TOLERANCE = 1e-4
WARMUP_UPDATES = 10

# metrics: key -> (Tally spec, TorchMetrics class name, its keyword arguments); batches: update i takes
# batches[i % len(batches)], a dict of inputs by name.
Workload = collections.namedtuple("Workload", "metrics batches updates runs")
WORKLOADS = ["acc_small", "cls_small", "cls_large", "retrieval", "auroc_exact_1e7", "cls_imagenet21k"]


def cls_metrics(c):
    """bench.cc's cls collection over `c` classes, with TorchMetrics' counterparts."""
    macro = {"num_classes": c, "average": "macro"}
    return {"accuracy": (f"multiclass_accuracy(num_classes={c})", "MulticlassAccuracy", {"num_classes": c}),
            "precision": (f"multiclass_precision(num_classes={c}, average=macro)", "MulticlassPrecision", macro),
            "recall": (f"multiclass_recall(num_classes={c}, average=macro)", "MulticlassRecall", macro),
            "f1": (f"multiclass_f1_score(num_classes={c}, average=macro)", "MulticlassF1Score", macro),
            "confusion_matrix": (f"multiclass_confusion_matrix(num_classes={c})", "MulticlassConfusionMatrix",
                                 {"num_classes": c})}


RETRIEVAL_METRICS = {
    "recall": ("retrieval_recall(top_k=10)", "RetrievalRecall", {"top_k": 10}),
    "precision": ("retrieval_precision(top_k=10)", "RetrievalPrecision", {"top_k": 10}),
    "reciprocal_rank": ("retrieval_reciprocal_rank", "RetrievalMRR", {}),
    "ndcg": ("retrieval_normalized_dcg(top_k=10)", "RetrievalNormalizedDCG", {"top_k": 10}),
    "average_precision": ("retrieval_average_precision", "RetrievalMAP", {}),
}

AUROC_METRICS = {"auroc": ("binary_auroc", "BinaryAUROC", {}),
                 "average_precision": ("binary_average_precision", "BinaryAveragePrecision", {})}


def classification_batch(n, c, seed=7):
    """bench.cc's ClassificationBatch: target = randint, then logits = randn, one CPU generator."""
    g = torch.Generator().manual_seed(seed)
    target = torch.randint(0, c, (n,), generator=g)
    return {"preds": torch.randn((n, c), generator=g), "target": target}


def label_batch(n, c):
    """bench.cc's LabelBatch: integer predictions, about 70% of them right."""
    g = torch.Generator().manual_seed(7)
    target = torch.randint(0, c, (n,), generator=g)
    wrong = torch.randint(0, c, (n,), generator=g)
    return {"preds": torch.where(torch.rand(n, generator=g) < 0.7, target, wrong), "target": target}


def auroc_batches(rows, updates):
    """bench.cc's auroc_large rows: per update, target = rand < 0.3, then preds, one CPU generator."""
    g = torch.Generator().manual_seed(7)
    out = []
    for _ in range(updates):
        target = (torch.rand(rows, generator=g) < 0.3).long()
        out.append({"preds": torch.rand(rows, generator=g) * 0.7 + target.float() * 0.3, "target": target})
    return out


def retrieval_batches(updates, queries=100, docs=100):
    """bench.cc's retrieval rows: update u holds queries [100 u, 100 u + 100) of 100 documents, shuffled."""
    g = torch.Generator().manual_seed(7)
    rows = queries * docs
    out = []
    for u in range(updates):
        perm = torch.randperm(rows, generator=g)
        indexes = (torch.arange(rows).div(docs, rounding_mode="floor") + u * queries).index_select(0, perm)
        preds = torch.rand(rows, generator=g)
        out.append({"preds": preds, "target": (torch.rand(rows, generator=g) < 0.1).long(), "indexes": indexes})
    return out


def make_workload(name, quick):
    def q(small, full):  # the --quick size and the full one, side by side
        return small if quick else full

    if name == "acc_small":
        return Workload({"accuracy": cls_metrics(10)["accuracy"]}, [classification_batch(32, 10)], q(200, 20000),
                        q(2, 5))
    if name == "cls_small":
        return Workload(cls_metrics(10), [classification_batch(32, 10)], q(200, 20000), q(2, 5))
    if name == "cls_large":
        rows = q(10000, 1000000)
        return Workload(cls_metrics(10), [classification_batch(rows, 10, 7 + i) for i in range(4)], q(2, 10),
                        q(2, 5))
    if name == "retrieval":
        updates = q(4, 100)
        return Workload(RETRIEVAL_METRICS, retrieval_batches(updates), updates, q(2, 5))
    if name == "auroc_exact_1e7":
        updates = q(3, 10)
        return Workload(AUROC_METRICS, auroc_batches(q(100000, 1000000), updates), updates, q(1, 3))
    if name == "cls_imagenet21k":
        return Workload(cls_metrics(21841), [label_batch(4096, 21841)], q(1, 5), q(1, 3))
    raise ValueError(f"unknown workload '{name}'")


def tally_collection(metrics):
    return tally.Collection({key: spec for key, (spec, _, _) in metrics.items()})


def peer_collection(metrics):
    def peer_class(name):
        return getattr(torchmetrics.classification, name, None) or getattr(torchmetrics.retrieval, name)
    return torchmetrics.MetricCollection({key: peer_class(cls)(**kwargs) for key, (_, cls, kwargs) in metrics.items()})


def time_workload(metric, w):
    """Warm up, then `w.runs` passes of reset, updates and compute: the median us per update, the median ms per
    compute and the last compute's values."""
    def updates(n):
        for i in range(n):
            metric.update(**w.batches[i % len(w.batches)])

    updates(min(w.updates, WARMUP_UPDATES))
    metric.compute()
    per_update, per_compute = [], []
    for _ in range(w.runs):
        metric.reset()
        t0 = time.perf_counter()
        updates(w.updates)
        t1 = time.perf_counter()
        values = metric.compute()
        per_compute.append(time.perf_counter() - t1)
        per_update.append((t1 - t0) / w.updates)
    # The upper median, as tally bench's.
    return statistics.median_high(per_update) * 1e6, statistics.median_high(per_compute) * 1e3, values


def max_abs_diff(a, b, chunk=1 << 22):
    """max |a - b| in float64 (NaN in both counts as equal), a chunk at a time: a confusion matrix over 21,841
    classes is 3.8 GB."""
    a, b = torch.as_tensor(a).reshape(-1), torch.as_tensor(b).reshape(-1)
    if a.numel() != b.numel():
        return float("inf")
    worst = [torch.zeros((), dtype=torch.float64)]
    for x, y in zip(a.split(chunk), b.split(chunk)):
        x, y = x.double(), y.double()
        worst.append(torch.where(x.isnan() & y.isnan(), torch.zeros_like(x), (x - y).abs()).max())
    return torch.stack(worst).max().item()  # NaN against a number stays NaN


def run_backend(name, backend, make, w):
    """Times one library (`make` builds its collection) on workload `name`: its JSON line and its values."""
    us, ms, values = time_workload(make(w.metrics), w)
    line = {"workload": name, "backend": backend, "us_per_update": round(us, 3), "ms_compute": round(ms, 3),
            "updates": w.updates, "threads": torch.get_num_threads()}
    return line, values


def run(name, quick):
    """Both libraries on one workload: their JSON lines and, when the peer ran, the max |diff| per metric."""
    w = make_workload(name, quick)
    lines = [run_backend(name, "tally-python", tally_collection, w)]
    if torchmetrics is not None:
        lines.append(run_backend(name, "torchmetrics", peer_collection, w))
    for line, _ in lines:
        print(json.dumps(line), flush=True)
    if len(lines) == 1:
        return lines[0][0], None, None
    (mine, mine_values), (peer, peer_values) = lines
    return mine, peer, {key: max_abs_diff(mine_values[key], peer_values[key]) for key in w.metrics}


def check_text(diffs):
    bad = [f"{key} {d:.2e}" for key, d in diffs.items() if not d <= TOLERANCE]  # NaN fails too
    return "MISMATCH " + ", ".join(bad) if bad else f"ok (max |diff| {max(diffs.values()):.1e})"


def table_row(mine, peer, diffs):
    def ratio(key):
        return f"{peer[key] / mine[key]:.2f}x" if peer and mine[key] > 0 else "-"
    def total(line):  # every update and one compute, in ms: what an evaluation costs
        return line["us_per_update"] * line["updates"] / 1e3 + line["ms_compute"]

    return (mine["workload"], f"{mine['us_per_update']:.1f}", f"{peer['us_per_update']:.1f}" if peer else "-",
            ratio("us_per_update"), f"{mine['ms_compute']:.3f}", f"{peer['ms_compute']:.3f}" if peer else "-",
            ratio("ms_compute"), f"{total(peer) / total(mine):.2f}x" if peer else "-",
            check_text(diffs) if diffs else "-")


def print_table(rows):
    if torchmetrics is None:
        title = f"TorchMetrics missing ({PEER_MISSING}): Tally {tally.__version__} alone"
    else:
        title = f"TorchMetrics {torchmetrics.__version__} vs Tally {tally.__version__} (ratio: TorchMetrics' time " \
                "over Tally's)"
    print(f"\n{title}, {torch.get_num_threads()} threads")
    header = ("workload", "tally us/upd", "tm us/upd", "ratio", "tally ms/compute", "tm ms/compute", "compute ratio",
              "total ratio", "value check")
    table = [header] + [table_row(*row) for row in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for r in table:
        print("  ".join(cell.ljust(width) for cell, width in zip(r, widths)).rstrip())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, for a check that it runs")
    ap.add_argument("--workload", action="append", help=f"'all' (default) or one of {', '.join(WORKLOADS)}; "
                    "repeatable")
    ap.add_argument("--threads", type=int, help="torch.set_num_threads (default: torch's own)")
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    names = a.workload or ["all"]
    names = WORKLOADS if "all" in names else names
    unknown = [name for name in names if name not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workload {', '.join(unknown)} (all, {', '.join(WORKLOADS)})")
    print_table([run(name, a.quick) for name in names])


if __name__ == "__main__":
    main()
