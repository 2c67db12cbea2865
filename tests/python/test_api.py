"""The TorchMetrics-shaped surface: specs from keywords, collections,
forward, zero-copy inputs, state_dict / pickling / state files, placement,
inspection and the catalogue."""

import io
import pickle
import subprocess

import numpy as np
import pytest
import torch

import tally

G = torch.Generator().manual_seed(7)


def multiclass(rows, classes=4):
    preds = torch.rand(rows, classes, generator=G).softmax(-1)
    target = torch.randint(0, classes, (rows,), generator=G)
    return preds, target


def test_spec_from_keywords():
    assert tally.spec("multiclass_f1_score", num_classes=10, average="macro") == \
        "multiclass_f1_score(num_classes=10, average='macro')"
    assert tally.spec("binary_auroc", thresholds=[0.1, 0.5], max_fpr=None) == \
        "binary_auroc(thresholds=[0.1, 0.5], max_fpr=none)"
    assert tally.spec("logauc(num_classes=3)", fpr_range=(0.001, 0.1)) == \
        "logauc(num_classes=3, fpr_range=[0.001, 0.1])"
    assert tally.spec("binned_auroc", label="it's") == "binned_auroc(label='it\\'s')"
    assert tally.spec("rouge_score", rouge_keys=("rouge1", "rougeL")) == "rouge_score(rouge_keys=['rouge1', 'rougeL'])"
    with pytest.raises(ValueError, match="argument 'x'"):
        tally.spec("mean", x={})
    preds, target = multiclass(50)
    a = tally.Metric("multiclass_f1_score", num_classes=4, average="macro")
    b = tally.Metric("multiclass_f1_score(num_classes=4, average=macro)")
    a.update(preds, target)
    b.update(preds, target)
    assert torch.equal(a.compute(), b.compute())


def test_collection_keys_and_one_program():
    preds, target = multiclass(40)
    c = tally.Collection({"acc": "multiclass_accuracy(num_classes=4)",
                          "f1": tally.Metric("multiclass_f1_score", num_classes=4)}, prefix="val_")
    assert c.keys() == ["val_acc", "val_f1"]
    out = c(preds, target)
    assert set(out) == {"val_acc", "val_f1"}
    # One program: accuracy and F1 share one confusion matrix, one kernel.
    text = c.inspect()
    assert text.count("  state @") == 2, text
    assert "update: 1 ATen calls per update" in text
    listed = tally.Collection(["mean_squared_error", "mean_squared_error(squared=false)"])
    assert listed.keys() == ["mean_squared_error", "mean_squared_error_2"]


def test_forward_is_batch_value_and_accumulates():
    batches = [multiclass(n) for n in (13, 1, 29)]
    m = tally.Metric("multiclass_f1_score", num_classes=4, average="macro")
    for preds, target in batches:
        alone = tally.Metric("multiclass_f1_score", num_classes=4, average="macro")
        alone.update(preds, target)
        assert torch.equal(m(preds, target), alone.compute())
    whole = tally.Metric("multiclass_f1_score", num_classes=4, average="macro")
    whole.update(torch.cat([p for p, _ in batches]), torch.cat([t for _, t in batches]))
    assert torch.equal(m.compute(), whole.compute())


def test_inputs_are_not_copied():
    preds, target = multiclass(64)
    m = tally.Metric("multiclass_accuracy", num_classes=4)
    m.update(preds, target)
    assert m._native._last_input_data_ptrs() == {"preds": preds.data_ptr(), "target": target.data_ptr()}
    p = np.random.default_rng(0).random(10, dtype=np.float32)
    t = (p > 0.5).astype(np.int64)
    b = tally.Metric("binary_accuracy")
    b.update(p, t)
    assert b._native._last_input_data_ptrs() == {"preds": p.ctypes.data, "target": t.ctypes.data}


def test_results_do_not_alias_states():
    preds, target = multiclass(30)
    m = tally.Metric("multiclass_confusion_matrix", num_classes=4)
    m.update(preds, target)
    first = m.compute()
    kept = first.clone()
    m.update(preds, target)
    assert torch.equal(first, kept)
    assert torch.equal(m.compute(), 2 * kept)


def test_aggregation_positional_value_and_weight():
    m = tally.Metric("mean")
    m.update(torch.tensor([1.0, 2.0]), 2.0)  # one weight for every row
    m.update(4.0, torch.tensor([4.0]))
    assert m.compute().item() == pytest.approx((1 * 2 + 2 * 2 + 4 * 4) / 8)
    assert torch.isnan(tally.Metric("mean").compute())  # no rows yet: TorchMetrics' nan


def test_signature_fixed_by_first_batch():
    preds, target = multiclass(8)
    m = tally.Metric("multiclass_accuracy", num_classes=4)
    m.update(preds, target)
    before = m.compute()
    with pytest.raises(ValueError, match="preds"):
        m.update(preds.double(), target)
    with pytest.raises(ValueError, match="preds"):
        m.update(preds[:, :3], target)
    assert torch.equal(m.compute(), before)


def test_token_id_widths_vary_by_batch():
    # Transcripts of any length: each batch has its own widths, preds' and
    # target's apart, -1 padding (the dtypes stay the first batch's). Pairs (edit distance, target words):
    # [1 2 3] ~ [1 2 4 5] (2, 4), [1..7] ~ [1 2 4 5] (3, 4), [9] ~ [] (1, 0).
    c = tally.Collection({"wer": "word_error_rate", "ed": "edit_distance(reduction=none)"})
    c.update(torch.tensor([[1, 2, 3, -1]]), torch.tensor([[1, 2, 4, 5, -1]]))
    c.update(torch.tensor([[1, 2, 3, 4, 5, 6, 7], [9, -1, -1, -1, -1, -1, -1]]),
             torch.tensor([[1, 2, 4, 5], [-1, -1, -1, -1]]))
    out = c.compute()
    assert out["wer"].item() == 6 / 8
    assert out["ed"].tolist() == [2, 3, 1]
    with pytest.raises(ValueError, match="rows"):
        c.update(torch.tensor([[1, 2]]), torch.tensor([[1], [2]]))


def test_bleu_references_and_perplexity_from_python():
    # TorchMetrics' docstring example as word ids: preds "the cat is on the mat", references "there is a cat on
    # the mat" and "a cat is on the mat": 0.7598 = (5/6 4/5 3/4 2/3)^(1/4), references [N, R, L] (-1 padding;
    # a second, shorter batch of one reference is padding only, so absent).
    the, cat, is_, on, mat, there, a = range(7)
    m = tally.Metric("bleu_score")
    m.update(torch.tensor([[the, cat, is_, on, the, mat]]),
             torch.tensor([[[there, is_, a, cat, on, the, mat], [a, cat, is_, on, the, mat, -1]]]))
    assert abs(m.compute().item() - (1 / 3) ** 0.25) < 1e-15
    # Perplexity over bfloat16 logits of two lengths of vocabulary rows: the float64 log-softmax of the logits as
    # given, positions of ignore_index left out.
    logits = (torch.randn(2, 5, 11, generator=torch.Generator().manual_seed(3)) * 4).to(torch.bfloat16)
    target = torch.tensor([[1, 2, 3, -100, 4], [10, 0, -100, -100, 9]])
    p = tally.Metric("perplexity", ignore_index=-100)
    p.update(logits, target)
    keep = target != -100
    nll = -torch.log_softmax(logits.double(), -1).gather(-1, target.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    assert abs(p.compute().item() - torch.exp(nll[keep].sum() / keep.sum()).item()) < 1e-12
    # A target past V is a value check: deferred to compute, which names it.
    p.update(logits, torch.full((2, 5), 11))
    with pytest.raises(ValueError, match="outside"):
        p.compute()


def test_rouge_keys_and_chrf_words_from_python():
    # ROUGE's keys as a tuple of strings (TorchMetrics' form): "my name is john" against "is your name john" as
    # word ids, rougeL then rouge1 (fmeasure, precision, recall each); chrF++ reads its word ids by keyword.
    my, name, is_, john, your = range(5)
    r = tally.Metric("rouge_score", rouge_keys=("rougeL", "rouge1"))
    r.update(torch.tensor([[my, name, is_, john]]), torch.tensor([[is_, your, name, john]]))
    assert r.compute().tolist() == [0.5, 0.5, 0.5, 0.75, 0.75, 0.75]
    c = tally.Metric("chrf_score", n_char_order=1, n_word_order=1)
    ids = torch.tensor([[1, 2, 3]])
    c.update(preds=ids, target=ids, preds_words=ids[:, :2], target_words=ids[:, :2])
    assert c.compute().item() == 1.0


def test_detection_results_from_python():
    # TorchMetrics' MeanAveragePrecision docstring example: its dict, keys in its order (map 0.6, map_50 1.0).
    m = tally.Metric("mean_average_precision")
    m.update(boxes=torch.tensor([[[258.0, 41.0, 606.0, 285.0]]]), scores=torch.tensor([[0.536]]),
             labels=torch.tensor([[0]]), target_boxes=torch.tensor([[[214.0, 41.0, 562.0, 285.0]]]),
             target_labels=torch.tensor([[0]]))
    got = m.compute()
    assert isinstance(got, dict)
    assert list(got) == ["map", "map_50", "map_75", "map_small", "map_medium", "map_large", "mar_1", "mar_10",
                         "mar_100", "mar_small", "mar_medium", "mar_large", "map_per_class", "mar_100_per_class",
                         "classes"]
    # pycocotools sums its 101 recall points: map_50 is 0.9999999999999999.
    assert abs(got["map"].item() - 0.6) < 1e-12 and abs(got["map_50"].item() - 1.0) < 1e-12
    assert got["map_small"].item() == -1.0
    assert got["classes"].tolist() == [0]
    # PanopticQuality's docstring example: 0.5463 (pq), and per class [C, 3] with both flags.
    preds = torch.tensor([[[[6, 0], [0, 0], [6, 0], [6, 0]], [[0, 0], [0, 0], [6, 0], [0, 1]],
                           [[0, 0], [0, 0], [6, 0], [0, 1]], [[0, 0], [7, 0], [6, 0], [1, 0]],
                           [[0, 0], [7, 0], [7, 0], [7, 0]]]])
    target = torch.tensor([[[[6, 0], [0, 1], [6, 0], [0, 1]], [[0, 1], [0, 1], [6, 0], [0, 1]],
                            [[0, 1], [0, 1], [6, 0], [1, 0]], [[0, 1], [7, 0], [1, 0], [1, 0]],
                            [[0, 1], [7, 0], [7, 0], [7, 0]]]])
    pq = tally.Metric("panoptic_quality", things={0, 1}, stuffs={6, 7})  # sets, as TorchMetrics takes them
    pq.update(preds, target)
    assert round(pq.compute().item(), 4) == 0.5463
    per = tally.Metric("panoptic_quality", things=[0, 1], stuffs=[6, 7], return_sq_and_rq=True, return_per_class=True)
    per.update(preds, target)
    assert per.compute().shape == (4, 3)


def test_reset():
    preds, target = multiclass(20)
    m = tally.Metric("multiclass_accuracy", num_classes=4)
    m.update(preds, target)
    m.reset()
    m.update(preds[:5], target[:5])
    fresh = tally.Metric("multiclass_accuracy", num_classes=4)
    fresh.update(preds[:5], target[:5])
    assert torch.equal(m.compute(), fresh.compute())


def test_state_dict_round_trip_and_in_a_module():
    preds, target = multiclass(33)
    m = tally.Collection(["multiclass_auroc(num_classes=4)", "multiclass_accuracy(num_classes=4)"])
    m.update(preds, target)
    other = tally.Collection(["multiclass_auroc(num_classes=4)", "multiclass_accuracy(num_classes=4)"])
    other.load_state_dict(m.state_dict())
    assert all(torch.equal(a, b) for a, b in zip(m.compute().values(), other.compute().values()))
    m.update(preds, target)
    other.update(preds, target)
    assert all(torch.equal(a, b) for a, b in zip(m.compute().values(), other.compute().values()))

    model = torch.nn.Module()
    model.metric = tally.Metric("multiclass_accuracy", num_classes=4)
    model.metric.update(preds, target)
    sd = model.state_dict()
    assert "metric.tally_state" in sd
    clone = torch.nn.Module()
    clone.metric = tally.Metric("multiclass_accuracy", num_classes=4)
    clone.load_state_dict(sd)
    assert torch.equal(clone.metric.compute(), model.metric.compute())
    wrong = torch.nn.Module()
    wrong.metric = tally.Metric("multiclass_accuracy", num_classes=5)
    with pytest.raises(RuntimeError, match="num_classes=5"):
        wrong.load_state_dict(sd)


def test_pickle_round_trip():
    preds, target = multiclass(21)
    m = tally.Metric("multiclass_average_precision", num_classes=4, average="macro")
    m.update(preds, target)
    back = pickle.loads(pickle.dumps(m))
    assert torch.equal(back.compute(), m.compute())
    back.update(preds, target)
    m.update(preds, target)
    assert torch.equal(back.compute(), m.compute())
    buffer = io.BytesIO()
    torch.save(m, buffer)
    buffer.seek(0)
    assert torch.equal(torch.load(buffer).compute(), m.compute())
    empty = pickle.loads(pickle.dumps(tally.Metric("mean")))
    empty.update(torch.tensor([3.0]))
    assert empty.compute().item() == 3.0


def test_state_files_merge_as_the_command_line(tmp_path, tally_bin):
    preds, target = multiclass(101)
    specs = ["multiclass_f1_score(num_classes=4, average=macro)", "multiclass_auroc(num_classes=4)"]
    halves = []
    for i, (lo, hi) in enumerate([(0, 40), (40, 101)]):
        h = tally.Collection(specs)
        h.update(preds[lo:hi], target[lo:hi])
        h.save_state(tmp_path / f"{i}.state")
        halves.append(h)
    merged = tally.merge([tmp_path / "0.state", tmp_path / "1.state"])
    whole = tally.Collection(specs)
    whole.update(preds, target)
    for a, b in zip(merged.compute().values(), whole.compute().values()):
        assert torch.allclose(a, b, rtol=1e-12, atol=0)
    halves[0].merge_state(halves[1])
    assert all(torch.allclose(a, b, rtol=1e-12, atol=0)
               for a, b in zip(halves[0].compute().values(), whole.compute().values()))
    # The command line folds the same files to the same values.
    out = subprocess.run([tally_bin, "merge", str(tmp_path / "0.state"), str(tmp_path / "1.state"),
                          "--format", "json"], capture_output=True, text=True, check=True).stdout
    import json
    values = [r["value"] for r in json.loads(out)["results"]]
    assert values[0] == pytest.approx(whole.compute()["multiclass_f1_score"].item(), rel=1e-12)
    with pytest.raises(ValueError):
        tally.merge([tmp_path / "0.state", tmp_path / "0.state"])  # one shard twice


def test_placement_on_meta():
    m = tally.Metric("multiclass_accuracy", num_classes=4).to("meta")
    assert m.device == torch.device("meta")
    p = torch.empty(8, 4, device="meta")
    t = torch.empty(8, dtype=torch.long, device="meta")
    m.update(p, t)  # sync-free: runs on meta, reads no value
    with pytest.raises(ValueError, match="device|cpu|meta"):
        m.update(*multiclass(8))
    cpu = tally.Metric("multiclass_accuracy", num_classes=4)
    preds, target = multiclass(8)
    cpu.update(preds, target)
    moved = cpu.to("meta")
    assert moved is cpu and cpu.device.type == "meta"


def test_inspect_and_catalogue(tally_bin):
    m = tally.Collection(["multiclass_accuracy(num_classes=3)", "multiclass_recall(num_classes=3)"])
    text = m.inspect()
    assert "multiclass_accuracy" in text
    assert m.inspect(format="dot").lstrip().startswith("digraph")
    with pytest.raises(ValueError, match="format"):
        m.inspect(format="svg")
    metrics = tally.list_metrics()
    names = [d["name"] for d in metrics]
    listed = subprocess.run([tally_bin, "list-metrics"], capture_output=True, text=True, check=True).stdout
    assert names == [line.split()[0] for line in listed.splitlines() if line.strip()]
    acc = next(d for d in metrics if d["name"] == "multiclass_accuracy")
    assert acc["domain"] == "classification"
    assert {"name": "num_classes", "required": True} .items() <= next(
        a for a in acc["arguments"] if a["name"] == "num_classes").items()


def test_memory_error_for_the_budget():
    with pytest.raises(MemoryError, match="num_classes=100000"):
        m = tally.Metric("multiclass_confusion_matrix", num_classes=100000, max_state_bytes=1_000_000)
        m.update(torch.tensor([0, 1]), torch.tensor([1, 0]))
