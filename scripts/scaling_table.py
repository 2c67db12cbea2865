#!/usr/bin/env python3
"""Measure how Tally's time and memory grow with the classes C, the rows N and the thresholds T, with TorchMetrics
beside it where it runs, and write the Markdown scaling table (docs/scaling.md).

Every measurement is a fresh process (`tally eval`, or Python running TorchMetrics' functional metric on the same
arrays) under /usr/bin/time: wall seconds and peak resident memory. The exact-AUROC row at 3e7 also times compute
alone (`tally bench --workload auroc_large` and TorchMetrics' BinaryAUROC.compute()).

Usage (Debian's python3 with numpy; TorchMetrics is optional and is not part of Tally):
    /usr/bin/python3 scripts/scaling_table.py --tally bazel-bin/tools/tally/tally \
        [--torchmetrics DIR_WITH_torchmetrics_AND_lightning_utilities] [--out docs/scaling.md] [--quick]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

TM_TIMEOUT = 300


def timed(cmd, env=None, timeout=TM_TIMEOUT):
    """Runs cmd under /usr/bin/time; returns (ok, wall_s, peak_mb, stdout, stderr_tail)."""
    full = ["/usr/bin/time", "-f", "__TIME__ %e %M"] + cmd
    try:
        p = subprocess.run(full, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return False, None, None, "", f"timed out after {timeout} s"
    wall = peak = None
    err_lines = []
    for line in p.stderr.splitlines():
        if line.startswith("Command exited") or line.startswith("Command terminated"):
            continue
        if line.startswith("__TIME__"):
            _, w, m = line.split()
            wall, peak = float(w), int(m) / 1024.0
        else:
            err_lines.append(line)
    ok = p.returncode == 0
    return ok, wall, peak, p.stdout, (err_lines[-1] if err_lines else f"exit {p.returncode}")


def fmt(ok, wall, peak, err):
    if not ok:
        m = re.search(r"allocate (\d+) bytes", err or "")
        short = f"tries to allocate {int(m.group(1)) / 2**30:.0f} GiB" if m else (err or "failed").strip()[-60:]
        return f"fails ({short})"
    return f"{wall:.2f} s, {peak:.0f} MB"


TM_SCRIPT = r"""
import sys, time, numpy as np, torch
kind, args = sys.argv[1], sys.argv[2:]
if kind == "cls":
    from torchmetrics.functional.classification import multiclass_accuracy, multiclass_f1_score
    c = int(args[0]); p = torch.from_numpy(np.load(args[1])); t = torch.from_numpy(np.load(args[2]))
    print(float(multiclass_f1_score(p, t, num_classes=c, average="macro")),
          float(multiclass_accuracy(p, t, num_classes=c, average="micro")))
elif kind == "auroc":
    from torchmetrics.classification import BinaryAUROC, BinaryAveragePrecision
    p = torch.from_numpy(np.load(args[0])); t = torch.from_numpy(np.load(args[1])); batch = int(args[2])
    m1, m2 = BinaryAUROC(), BinaryAveragePrecision()
    for s in range(0, len(t), batch):
        m1.update(p[s:s + batch], t[s:s + batch]); m2.update(p[s:s + batch], t[s:s + batch])
    t0 = time.perf_counter(); a = float(m1.compute()); b = float(m2.compute())
    print(a, b, "compute_ms", (time.perf_counter() - t0) * 1e3)
elif kind == "binned":
    from torchmetrics.functional.classification import binary_auroc
    p = torch.from_numpy(np.load(args[1])); t = torch.from_numpy(np.load(args[2]))
    print(float(binary_auroc(p, t, thresholds=int(args[0]))))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tally", required=True)
    ap.add_argument("--torchmetrics", default="")
    ap.add_argument("--out", default="")
    ap.add_argument("--quick", action="store_true", help="small sizes only (a smoke run)")
    a = ap.parse_args()
    tally = os.path.abspath(a.tally)
    tm_env = None
    if a.torchmetrics:
        tm_env = dict(os.environ, PYTHONPATH=os.path.abspath(a.torchmetrics))
        probe = subprocess.run(["/usr/bin/python3", "-c", "import torchmetrics; print(torchmetrics.__version__)"],
                               capture_output=True, text=True, env=tm_env)
        tm_version = probe.stdout.strip() if probe.returncode == 0 else None
        if tm_version is None:
            tm_env = None
    else:
        tm_version = None
    # Compute alone at 3e7 rows; exact16 with batches that do not pile up.
    def bench(name):
        r = subprocess.run([tally, "bench", "--workload", name, "--format", "json"] + (["--quick"] if a.quick else []),
                           capture_output=True, text=True)
        return json.loads(r.stdout) if r.returncode == 0 else {}
    compute, compute16 = bench("auroc_large"), bench("auroc_large_bf16")
    rng = np.random.default_rng(0)
    rows = []
    tmp = tempfile.mkdtemp(prefix="tally_scaling_")
    tm_file = os.path.join(tmp, "tm.py")
    with open(tm_file, "w") as f:
        f.write(TM_SCRIPT)

    def tm(*args):
        if tm_env is None:
            return "not run"
        ok, w, m, out, err = timed(["/usr/bin/python3", tm_file] + list(args), tm_env)
        cell = fmt(ok, w, m, err)
        if ok and "compute_ms" in out:
            cell += f" (compute {float(out.split('compute_ms')[1]):.0f} ms)"
        return cell

    # 1. Classes: micro accuracy + macro F1 over 65,536 integer labels.
    n = 65536
    classes = [10, 1000] if a.quick else [10, 1000, 21841, 131072]
    for c in classes:
        t = rng.integers(0, c, n)
        p = np.where(rng.random(n) < 0.7, t, rng.integers(0, c, n))
        pf, tf = os.path.join(tmp, "p.npy"), os.path.join(tmp, "t.npy")
        np.save(pf, p)
        np.save(tf, t)
        ok, w, m, _, err = timed([tally, "eval", "--format", "json", "--metric",
                                  f"multiclass_f1_score(num_classes={c}, average=macro)", "--metric",
                                  f"multiclass_accuracy(num_classes={c}, average=micro)", "--input", f"preds={pf}",
                                  "--input", f"target={tf}"])
        rows.append((f"multiclass f1 (macro) + accuracy (micro), C = {c:,}, N = {n:,} labels", fmt(ok, w, m, err),
                     tm("cls", str(c), pf, tf)))
    # 2. Rows: exact binary AUROC + AP, float32 scores in batches of 10^6.
    sizes = [10**6] if a.quick else [10**6, 10**7, 3 * 10**7, 10**8]
    for r in sizes:
        t = (rng.random(r) < 0.3).astype(np.int64)
        p = (rng.random(r, dtype=np.float32) * 0.7 + t * 0.3).astype(np.float32)
        pf, tf = os.path.join(tmp, "p.npy"), os.path.join(tmp, "t.npy")
        np.save(pf, p)
        np.save(tf, t)
        ok, w, m, _, err = timed([tally, "eval", "--format", "json", "--batch-size", "1000000", "--metric",
                                  "binary_auroc", "--metric", "binary_average_precision", "--input", f"preds={pf}",
                                  "--input", f"target={tf}"])
        rows.append((f"exact binary AUROC + AP, N = {r:,} float32 scores", fmt(ok, w, m, err),
                     tm("auroc", pf, tf, "1000000") if r <= 3 * 10**7 else "not run (time)"))
        # The same scores as float16: exact16 counts per score code.
        np.save(pf, p.astype(np.float16))
        ok, w, m, _, err = timed([tally, "eval", "--format", "json", "--batch-size", "1000000", "--metric",
                                  "binary_auroc", "--metric", "binary_average_precision", "--input", f"preds={pf}",
                                  "--input", f"target={tf}"])
        rows.append((f"exact16 binary AUROC + AP, N = {r:,} float16 scores", fmt(ok, w, m, err), "—"))
    # 3. Thresholds: binned binary AUROC over 1,000 rows.
    t = (rng.random(1000) < 0.4).astype(np.int64)
    p = (rng.random(1000) * 0.6 + t * 0.3).astype(np.float32)
    pf, tf = os.path.join(tmp, "p.npy"), os.path.join(tmp, "t.npy")
    np.save(pf, p)
    np.save(tf, t)
    for th in ([1000] if a.quick else [1000, 10000, 100000, 1000000]):
        ok, w, m, _, err = timed([tally, "eval", "--format", "json", "--metric", f"binary_auroc(thresholds={th})",
                                  "--input", f"preds={pf}", "--input", f"target={tf}"])
        rows.append((f"binned binary AUROC, T = {th:,} thresholds, N = 1,000", fmt(ok, w, m, err),
                     tm("binned", str(th), pf, tf) if th <= 100000 else "not run (N x T = 10^9)"))

    lines = ["# Scaling", "",
             "Generated by `scripts/scaling_table.py` (fresh processes under `/usr/bin/time`: wall time of the whole",
             "process, file reading included, and peak resident memory) on "
             f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores. TorchMetrics: "
             + (f"{tm_version} on Debian's torch" if tm_version else "not run") + ".", "",
             "| workload | Tally | TorchMetrics |", "|---|---|---|"]
    for name, ours, theirs in rows:
        lines.append(f"| {name} | {ours} | {theirs} |")
    if compute:
        lines += ["", f"`tally bench --workload auroc_large` (exact binary AUROC + AP, "
                      f"{'3,000,000' if a.quick else '30,000,000'} rows in updates of 10^6): "
                      f"compute {compute.get('ms_compute', 0):.0f} ms, peak RSS {compute.get('peak_rss_mb', 0):.0f} MB, "
                      f"{compute.get('us_per_update', 0) / 1e3:.1f} ms per update."]
    if compute16:
        lines += ["", f"`tally bench --workload auroc_large_bf16` (the same rows as bfloat16, exact16, 3 batches cycling): "
                      f"compute {compute16.get('ms_compute', 0):.1f} ms, state {compute16.get('state_bytes', 0):.0f} bytes, "
                      f"peak RSS {compute16.get('peak_rss_mb', 0):.0f} MB. The exact16 rows of the table grow only with "
                      "the input arrays `tally eval` reads whole; the state is 1 MiB at every N."]
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
