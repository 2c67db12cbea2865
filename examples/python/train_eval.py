"""Evaluating a model in a training loop with Tally, as one would with
TorchMetrics: one collection (a single compiled program) updated per batch,
forward() for the per-batch value that is logged, compute() per epoch.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/train_eval.py

Under torch.distributed (torchrun), compute() folds every rank's rows over
the default process group, with no change to this code.
"""

import torch

import tally

CLASSES = 5


def main():
    torch.manual_seed(0)
    model = torch.nn.Linear(16, CLASSES)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    features = torch.randn(2048, 16)
    labels = (features[:, :CLASSES] * torch.arange(1, CLASSES + 1)).argmax(1)

    train_metrics = tally.Collection({"acc": tally.Metric("multiclass_accuracy", num_classes=CLASSES)},
                                     prefix="train_")
    val_metrics = tally.Collection({
        "acc": tally.Metric("multiclass_accuracy", num_classes=CLASSES),
        "f1": tally.Metric("multiclass_f1_score", num_classes=CLASSES, average="macro"),
        "auroc": tally.Metric("multiclass_auroc", num_classes=CLASSES),
        "ece": tally.Metric("multiclass_calibration_error", num_classes=CLASSES),
    }, prefix="val_")

    train, val = slice(0, 1536), slice(1536, 2048)
    for epoch in range(3):
        for start in range(train.start, train.stop, 128):
            x, y = features[start:start + 128], labels[start:start + 128]
            logits = model(x)
            loss = torch.nn.functional.cross_entropy(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            batch = train_metrics(logits.detach().softmax(-1), y)  # this batch's value, and accumulate
        with torch.no_grad():
            for start in range(val.start, val.stop, 100):
                val_metrics.update(model(features[start:start + 100]).softmax(-1), labels[start:start + 100])
        epoch_values = {**train_metrics.compute(), **val_metrics.compute()}
        print(f"epoch {epoch}: last batch train_acc={batch['train_acc'].item():.4f} " +
              " ".join(f"{k}={v.item():.4f}" for k, v in epoch_values.items()))
        train_metrics.reset()
        val_metrics.reset()


if __name__ == "__main__":
    main()
