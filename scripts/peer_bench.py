#!/usr/bin/env python3
"""TorchMetrics beside `tally bench` on the same inputs, on a device: the peer's numbers for the closing notes.

Workloads (tools/tally/bench.cc builds the same tensors: the ATen CPU generator under the same seeds):
  acc_small  MulticlassAccuracy(num_classes=10), batches of 32 float32 logits
  cls_large  MetricCollection of accuracy, precision, recall, f1 (macro) and the confusion matrix, C = 10,
             batches of 1,000,000 rows cycling over 4 distinct batches (tally bench cycles as many as exceed
             twice the last-level cache)
  auroc_bootstrap  BootStrapper(BinaryAUROC(thresholds=200), num_bootstraps=100, quantile=[0.025, 0.975]) over
             1,000,000 rows in 10 updates of 100,000 (float32 scores, 30% positive); also reports ms_compute.
             (TorchMetrics has no exact16 form; auroc_bootstrap_exact bootstraps its exact BinaryAUROC.)
  clustering_1k  MetricCollection of AdjustedRandScore, NormalizedMutualInfoScore, VMeasureScore and
             FowlkesMallowsIndex over 1,000 classes, 10 updates of the same 1,000,000 int64 cluster ids and
             classes (tally bench's LabelBatch); also reports ms_compute
  wer_10k    WordErrorRate over 10,000 transcripts in 10 updates of 1,000 (tally bench's word-id rows written as
             strings "w<id>" joined by spaces, padding dropped: TorchMetrics takes text); also reports ms_compute
  bleu_10k   BLEUScore over wer_10k's transcripts (one reference a row, as a list of one); also reports ms_compute
  rouge_10k  ROUGEScore(rouge_keys=("rouge1", "rouge2", "rougeL")) over wer_10k's transcripts; also ms_compute
  perplexity_llm  Perplexity(ignore_index=-100) over bfloat16 logits [8, 2048, 131072] (bench.cc's draws, 256
             positions at a time), 3 updates
  si_sdr_batch  ScaleInvariantSignalDistortionRatio over 10 updates of the same 64 x 64,000 float32 utterances
             (4 s at 16 kHz) and their noisy estimates; also reports ms_compute
  miou_cityscapes  MeanIoU(num_classes=19, input_format="index") over 10 updates of the same 4 int64 masks
             [1024, 2048] (a class per 16 x 16 block, one target pixel in ten redrawn)
  ssim_batch  StructuralSimilarityIndexMeasure(data_range=1.0) over 5 updates of the same 16 x 3 x 512 x 512
             float32 images and their noisy copies
  panoptic_coco  PanopticQuality(things 0..79, stuffs 80..132, return_sq_and_rq=True) over 3 updates of the same 8
             panoptic images [480, 640, 2] (a category per 16 x 16 block, 4 instances; one block in eight redrawn in
             the prediction, shifted 2 pixels)
  coco_val   MeanAveragePrecision needs a COCO backend that Debian lacks: pycocotools' algorithm in NumPy
             (gen_detection.py) over bench.cc's 5,000 images instead, ms_compute and the values (--save-inputs)
Each prints one JSON line like tally bench's: workload, backend "torchmetrics", device, us_per_update (the median
of `runs` timed passes, each ending when the device is idle), updates, peak_rss_mb and, on CUDA, peak_device_mb.
TorchMetrics runs with its defaults (validate_args=True), as its users get it. Run one workload a process
(--workload) for its own peak memory.

Usage (a Python with torch and torchmetrics; not part of Tally):
    python3 scripts/peer_bench.py [--device cpu|cuda:0] [--quick] [--workload NAME]
"""
import argparse
import json
import resource
import time

import torch
from torchmetrics import MetricCollection
from torchmetrics.classification import (MulticlassAccuracy, MulticlassConfusionMatrix, MulticlassF1Score,
                                         MulticlassPrecision, MulticlassRecall)


def batch(n, c, seed, device):
    """tally bench's ClassificationBatch: target = randint, then logits = randn, one CPU generator."""
    g = torch.Generator().manual_seed(seed)
    target = torch.randint(0, c, (n,), generator=g)
    logits = torch.randn((n, c), generator=g)
    return logits.to(device), target.to(device)


def idle(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def auroc_batches(rows, updates, device):
    """tally bench's auroc_bootstrap rows: per update, target = rand < 0.3, then preds, from one CPU generator."""
    g = torch.Generator().manual_seed(7)
    out = []
    for _ in range(updates):
        target = (torch.rand(rows, generator=g) < 0.3).long()
        preds = torch.rand(rows, generator=g) * 0.7 + target.float() * 0.3
        out.append((preds.to(device), target.to(device)))
    return out


def run(name, metric, batches, updates, runs, device, time_compute=False):
    metric = metric.to(device)
    for i in range(min(updates, 100)):
        metric.update(*batches[i % len(batches)])
    times = []
    for _ in range(runs):
        metric.reset()
        idle(device)
        t0 = time.perf_counter()
        for i in range(updates):
            metric.update(*batches[i % len(batches)])
        idle(device)
        times.append((time.perf_counter() - t0) / updates)
    compute_ms = None
    if time_compute:
        t0 = time.perf_counter()
        metric.compute()
        idle(device)
        compute_ms = (time.perf_counter() - t0) * 1e3
    times.sort()
    out = {"workload": name, "backend": "torchmetrics", "device": str(device),
           "us_per_update": round(times[len(times) // 2] * 1e6, 3), "updates": updates,
           "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    if compute_ms is not None:
        out["ms_compute"] = round(compute_ms, 3)
    if device.type == "cuda":
        out["peak_device_mb"] = round(torch.cuda.max_memory_allocated(device) / 2**20, 1)
    print(json.dumps(out), flush=True)


def coco_val_batches(quick):
    """bench.cc's coco_val draws, in its order: per update of 50 images, padded boxes, scores and labels."""
    per, updates, g_n, d = 50, 2 if quick else 100, 11, 100
    g = torch.Generator().manual_seed(7)

    def boxes(k):
        side = torch.exp(torch.rand((per, k, 2), generator=g) * 4.3) * 4
        corner = torch.rand((per, k, 2), generator=g) * (torch.tensor([640.0, 480.0]) - side).clamp_min(0)
        return torch.cat([corner, corner + side], 2)

    out = []
    for _ in range(updates):
        truth = boxes(g_n)
        count = torch.randint(3, g_n + 1, (per, 1), generator=g)
        real = torch.arange(g_n).unsqueeze(0) < count
        labels = torch.where(real, torch.randint(0, 80, (per, g_n), generator=g), torch.tensor(-1))
        copies = torch.cat([truth, truth], 1) + torch.randn((per, 2 * g_n, 4), generator=g) * 4
        found = torch.rand((per, 2 * g_n), generator=g) < torch.cat(
            [torch.full((1, g_n), 0.9), torch.full((1, g_n), 0.3)], 1)
        copy_labels = torch.where(found, torch.cat([labels, labels], 1), torch.tensor(-1))
        rest = boxes(d - 2 * g_n)
        det_labels = torch.cat([copy_labels, torch.randint(0, 80, (per, d - 2 * g_n), generator=g)], 1)
        s1 = torch.rand((per, 2 * g_n), generator=g) * 0.7 + 0.3
        s2 = torch.rand((per, d - 2 * g_n), generator=g) * 0.5
        out.append({"boxes": torch.cat([copies, rest], 1), "scores": torch.cat([s1, s2], 1), "labels": det_labels,
                    "target_boxes": truth, "target_labels": labels})
    return out


def coco_val(a):
    """TorchMetrics' MeanAveragePrecision needs pycocotools or faster_coco_eval, neither in Debian 12: the peer
    here is pycocotools' algorithm as tests/golden/gen_detection.py writes it in NumPy (evaluateImg, accumulate,
    summarize: the same Python loops), timed at compute over the same images; --save-inputs DIR also writes them as
    .npy for `tally eval`, whose values must equal the ones printed here."""
    import os
    import sys

    import numpy as np
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden"))
    import gen_detection as gd

    batches = coco_val_batches(a.quick)
    whole = {k: torch.cat([b[k] for b in batches]).numpy() for k in batches[0]}
    if a.save_inputs:
        os.makedirs(a.save_inputs, exist_ok=True)
        for k, v in whole.items():
            np.save(os.path.join(a.save_inputs, f"{k}.npy"), v)
    try:
        from torchmetrics.detection import MeanAveragePrecision
        MeanAveragePrecision()
        reason = None
    except Exception as e:  # ModuleNotFoundError for the COCO backends
        reason = f"{type(e).__name__}: {e}"

    class Arr:
        def __init__(self, v):
            self.a = v

    t0 = time.perf_counter()
    imgs = gd.tm_images({k: Arr(v) for k, v in whole.items()})
    values = gd.tm_compute(imgs, {})
    ms = (time.perf_counter() - t0) * 1e3
    keys = gd.tm_keys({})
    print(json.dumps({"workload": "coco_val", "backend": "numpy COCOeval (gen_detection.py)", "torchmetrics": reason,
                      "images": int(whole["boxes"].shape[0]), "ms_compute": round(ms, 1),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
                      "value": dict(zip(keys, values))}), flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--workload", default="all")
    ap.add_argument("--save-inputs", default="", help="coco_val: write the images' arrays as .npy here")
    ap.add_argument("--updates", type=int, default=0, help="auroc_bootstrap*: time this many updates (default 10)")
    a = ap.parse_args()
    device = torch.device(a.device)
    if a.workload in ("auroc_bootstrap", "auroc_bootstrap_exact"):
        from torchmetrics.classification import BinaryAUROC
        from torchmetrics.wrappers import BootStrapper
        updates = a.updates or (2 if a.quick else 10)
        base = BinaryAUROC(thresholds=200) if a.workload == "auroc_bootstrap" else BinaryAUROC()
        boot = BootStrapper(base, num_bootstraps=100, quantile=torch.tensor([0.025, 0.975]))
        runs = 1 if a.quick or a.updates else 3
        run(a.workload, boot, auroc_batches(10000 if a.quick else 100000, updates, device), updates, runs, device,
            time_compute=True)
        return
    if a.workload == "clustering_1k":
        from torchmetrics.clustering import (AdjustedRandScore, FowlkesMallowsIndex, NormalizedMutualInfoScore,
                                             VMeasureScore)
        n = 10000 if a.quick else 1000000
        g = torch.Generator().manual_seed(7)  # LabelBatch: target, wrong, then the 70% mask, one CPU generator
        target = torch.randint(0, 1000, (n,), generator=g)
        wrong = torch.randint(0, 1000, (n,), generator=g)
        preds = torch.where(torch.rand(n, generator=g) < 0.7, target, wrong)
        coll = MetricCollection([AdjustedRandScore(), NormalizedMutualInfoScore(), VMeasureScore(),
                                 FowlkesMallowsIndex()], compute_groups=False)
        run(a.workload, coll, [(preds.to(device), target.to(device))], 2 if a.quick else 10, 1 if a.quick else 3,
            device, time_compute=True)
        return
    if a.workload in ("wer_10k", "bleu_10k", "rouge_10k"):
        from torchmetrics.text import BLEUScore, ROUGEScore, WordErrorRate
        updates, rows = (2, 100) if a.quick else (10, 1000)
        g = torch.Generator().manual_seed(7)  # bench.cc's wer_10k draws, in its order
        batches = []
        for _ in range(updates):
            target = torch.randint(0, 10000, (rows, 40), generator=g)
            length = torch.randint(20, 41, (rows, 1), generator=g)
            target = torch.where(torch.arange(40).unsqueeze(0) < length, target, -1)
            noise = torch.rand((rows, 40), generator=g)
            preds = torch.where(noise < 0.1, torch.randint(0, 10000, (rows, 40), generator=g), target)
            preds = torch.where(noise > 0.95, -1, preds)
            inserted = torch.where((noise > 0.1) & (noise < 0.15) & (target >= 0),
                                   torch.randint(0, 10000, (rows, 40), generator=g), -1)
            preds = torch.stack([preds, inserted], 2).reshape(rows, 80)
            text = [[" ".join(f"w{v}" for v in r.tolist() if v >= 0) for r in x] for x in (preds, target)]
            if a.workload == "bleu_10k":
                text[1] = [[t] for t in text[1]]
            batches.append(tuple(text))
        metric = {"wer_10k": WordErrorRate, "bleu_10k": BLEUScore,
                  "rouge_10k": lambda: ROUGEScore(rouge_keys=("rouge1", "rouge2", "rougeL"))}[a.workload]()
        run(a.workload, metric, batches, updates, 1 if a.quick else 3, device, time_compute=True)
        return
    if a.workload == "perplexity_llm":
        from torchmetrics.text import Perplexity
        b, s, v = (2, 64, 131072) if a.quick else (8, 2048, 131072)
        g = torch.Generator().manual_seed(7)  # bench.cc's perplexity_llm draws, in its order
        logits = torch.empty((b * s, v), dtype=torch.bfloat16)
        for row in range(0, b * s, 256):
            n = min(256, b * s - row)
            logits[row:row + n] = torch.randn((n, v), generator=g) * 2.0
        target = torch.randint(0, v, (b, s), generator=g)
        target = torch.where(torch.rand((b, s), generator=g) < 0.1, -100, target)
        run(a.workload, Perplexity(ignore_index=-100), [(logits.view(b, s, v).to(device), target.to(device))],
            2 if a.quick else 3, 1 if a.quick else 2, device)
        return
    if a.workload == "si_sdr_batch":
        from torchmetrics.audio import ScaleInvariantSignalDistortionRatio
        rows, samples = (8, 16000) if a.quick else (64, 64000)
        g = torch.Generator().manual_seed(7)  # bench.cc's si_sdr_batch draws, in its order
        target = torch.randn((rows, samples), generator=g)
        preds = target + torch.randn((rows, samples), generator=g) * 0.3
        run(a.workload, ScaleInvariantSignalDistortionRatio(), [(preds.to(device), target.to(device))],
            2 if a.quick else 10, 1 if a.quick else 3, device, time_compute=True)
        return
    if a.workload == "miou_cityscapes":
        from torchmetrics.segmentation import MeanIoU
        b, h, w = (4, 64, 128) if a.quick else (4, 1024, 2048)
        g = torch.Generator().manual_seed(7)  # bench.cc's miou_cityscapes draws, in its order
        blocks = torch.randint(0, 19, (b, h // 16, w // 16), generator=g)
        preds = blocks.repeat_interleave(16, 1).repeat_interleave(16, 2).contiguous()
        changed = torch.rand((b, h, w), generator=g) < 0.1
        other = torch.randint(0, 19, (b, h, w), generator=g)
        target = torch.where(changed, other, preds)
        run(a.workload, MeanIoU(num_classes=19, input_format="index"), [(preds.to(device), target.to(device))],
            2 if a.quick else 10, 1 if a.quick else 3, device)
        return
    if a.workload == "coco_val":
        coco_val(a)
        return
    if a.workload == "panoptic_coco":
        from torchmetrics.detection import PanopticQuality
        b, h, w = (2, 64, 128) if a.quick else (8, 480, 640)
        g = torch.Generator().manual_seed(7)  # bench.cc's panoptic_coco draws, in its order
        cats = torch.randint(0, 133, (b, h // 16, w // 16), generator=g)
        insts = torch.randint(0, 4, (b, h // 16, w // 16), generator=g)
        redraw = torch.rand((b, h // 16, w // 16), generator=g) < 0.125
        other = torch.randint(0, 133, (b, h // 16, w // 16), generator=g)

        def up(t):
            return t.repeat_interleave(16, 1).repeat_interleave(16, 2)

        target = torch.stack([up(cats), up(insts)], 3).contiguous()
        preds = torch.stack([up(torch.where(redraw, other, cats)), up(insts)], 3).roll(2, 2).contiguous()
        metric = PanopticQuality(things=set(range(80)), stuffs=set(range(80, 133)), return_sq_and_rq=True)
        # TorchMetrics takes seconds an update here: 3 updates, one pass (tally bench: 10 updates, 3 passes).
        run(a.workload, metric, [(preds.to(device), target.to(device))], 2 if a.quick else 3, 1, device,
            time_compute=True)
        print(json.dumps({"workload": a.workload, "value": metric.compute().tolist()}))
        return
    if a.workload == "ssim_batch":
        from torchmetrics.image import StructuralSimilarityIndexMeasure
        n, side = (2, 64) if a.quick else (16, 512)
        g = torch.Generator().manual_seed(7)  # bench.cc's ssim_batch draws, in its order
        target = torch.rand((n, 3, side, side), generator=g)
        noise = torch.randn((n, 3, side, side), generator=g)
        preds = torch.clamp(target + noise * 0.05, 0.0, 1.0)
        run(a.workload, StructuralSimilarityIndexMeasure(data_range=1.0), [(preds.to(device), target.to(device))],
            2 if a.quick else 5, 1 if a.quick else 3, device)
        return
    if a.workload not in ("all", "acc_small", "cls_large"):
        raise SystemExit(f"unknown workload {a.workload}")
    run("acc_small", MulticlassAccuracy(num_classes=10), [batch(32, 10, 7, device)], 200 if a.quick else 2000,
        2 if a.quick else 3, device)
    rows = 10000 if a.quick else 1000000
    cls = MetricCollection([MulticlassAccuracy(num_classes=10), MulticlassPrecision(num_classes=10, average="macro"),
                            MulticlassRecall(num_classes=10, average="macro"),
                            MulticlassF1Score(num_classes=10, average="macro"), MulticlassConfusionMatrix(num_classes=10)])
    run("cls_large", cls, [batch(rows, 10, 7 + i, device) for i in range(4)], 2 if a.quick else 10,
        2 if a.quick else 3, device)


if __name__ == "__main__":
    main()
