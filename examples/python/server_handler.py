"""A minimal inference-server handler with Tally (the shape of a TorchServe
handler or a Triton Python-backend model): every request's predictions and
labels are folded into one collection from the server's worker threads (the
GIL is released while Tally runs), /metrics answers from compute(), and each
replica saves its states so that one job can merge the replicas
(tally.merge or `tally merge`).

    PYTHONPATH=build/python /usr/bin/python3 examples/python/server_handler.py
"""

import json
import os
import tempfile
import threading

import torch

import tally


class MetricsHandler:
    """Online metrics of one model replica."""

    def __init__(self, classes):
        self.metrics = tally.Collection({
            "accuracy": f"multiclass_accuracy(num_classes={classes})",
            "f1_macro": f"multiclass_f1_score(num_classes={classes}, average=macro)",
            "auroc": f"multiclass_auroc(num_classes={classes}, thresholds=200)",  # fixed-size state
        })

    def handle(self, request):
        """One request: the model's probabilities and, when known, the labels.
        A bad request is refused with the engine's message, states untouched."""
        try:
            self.metrics.update(request["probs"], request["labels"])
        except ValueError as e:
            return {"status": 400, "error": str(e)}
        return {"status": 200}

    def metrics_json(self):
        return json.dumps({k: round(v.item(), 6) for k, v in self.metrics.compute().items()})

    def save(self, path):
        self.metrics.save_state(path)


def make_requests(classes, count=64, rows=32):
    generator = torch.Generator().manual_seed(1)
    requests = []
    for _ in range(count):
        labels = torch.randint(0, classes, (rows,), generator=generator)
        logits = torch.randn(rows, classes, generator=generator) + 2 * torch.nn.functional.one_hot(labels, classes)
        requests.append({"probs": logits.softmax(-1), "labels": labels})
    return requests


def main():
    classes = 4
    replicas = [MetricsHandler(classes), MetricsHandler(classes)]
    requests = make_requests(classes)

    # Worker threads of two replicas serving requests concurrently.
    def serve(replica, share):
        for r in share:
            assert replica.handle(r)["status"] == 200

    threads = [threading.Thread(target=serve, args=(replicas[i % 2], requests[i::4])) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bad = replicas[0].handle({"probs": torch.rand(3, classes + 1), "labels": torch.zeros(3, dtype=torch.long)})
    print("bad request:", bad["status"], bad["error"])
    print("replica 0 /metrics:", replicas[0].metrics_json())

    with tempfile.TemporaryDirectory() as d:
        paths = [os.path.join(d, f"replica{i}.state") for i in range(2)]
        for replica, path in zip(replicas, paths):
            replica.save(path)
        merged = tally.merge(paths)
        print("merged:", json.dumps({k: round(v.item(), 6) for k, v in merged.compute().items()}))


if __name__ == "__main__":
    main()
