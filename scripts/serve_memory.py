#!/usr/bin/env python3
"""Peak and final RSS of `tally serve` under concurrent updates or one big body.

    scripts/serve_memory.py --tally bazel-bin/tools/tally/tally --clients 16 --classes 2000 --threads 4
    scripts/serve_memory.py --tally bazel-bin/tools/tally/tally --body-mb 91

The first form runs multiclass_confusion_matrix(num_classes=C) (a C*C*8-byte
state) and posts 20 updates of 64 rows from each of --clients concurrent
keep-alive clients; the second posts one body of about --body-mb MB to
binary_auroc and binary_accuracy (--max-body-bytes raised to take it).
Prints VmHWM (peak) and VmRSS (after) of the server process.
"""
import argparse
import http.client
import json
import random
import subprocess
import threading


def memory(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key = line.split(":")[0]
            if key in ("VmHWM", "VmRSS"):
                out[key] = int(line.split()[1]) // 1024
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tally", required=True)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--classes", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--body-mb", type=float, default=0)
    a = ap.parse_args()
    rng = random.Random(0)
    if a.body_mb > 0:
        metrics = ["binary_auroc", "binary_accuracy"]
        extra = ["--max-body-bytes", str(int(a.body_mb * 3) << 20)]
    else:
        metrics = [f"multiclass_confusion_matrix(num_classes={a.classes})"]
        extra = []
    cmd = [a.tally, "serve", "--port", "0", "--threads", str(a.threads)] + extra
    for m in metrics:
        cmd += ["--metric", m]
    server = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline().strip().rsplit(":", 1)[1])

        def post(conn, body):
            conn.request("POST", "/v1/update", body)
            r = conn.getresponse()
            r.read()
            assert r.status == 200, r.status

        if a.body_mb > 0:
            n = int(a.body_mb * 1e6 / 12.9)  # ~12.9 bytes a row as json.dumps writes it
            body = json.dumps({"preds": [round(rng.random(), 6) for _ in range(n)],
                               "target": [rng.randrange(2) for _ in range(n)]})
            post(http.client.HTTPConnection("127.0.0.1", port), body)
            what = f"body of {len(body) / 1e6:.1f} MB"
        else:
            C = a.classes
            bodies = [json.dumps({"preds": [rng.randrange(C) for _ in range(64)],
                                  "target": [rng.randrange(C) for _ in range(64)]}) for _ in range(20)]

            def client():
                conn = http.client.HTTPConnection("127.0.0.1", port)
                for b in bodies:
                    post(conn, b)

            threads = [threading.Thread(target=client) for _ in range(a.clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            what = f"{a.clients} clients, state {C * C * 8 / 1e6:.1f} MB, --threads {a.threads}"
        m = memory(server.pid)
        print(f"{what}: peak RSS {m['VmHWM']} MB, RSS after {m['VmRSS']} MB")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
