#!/usr/bin/env python3
"""Golden fixtures for the speech and text error rates over token ids.

Regenerate (needs numpy and Debian's python3-levenshtein, as the other scripts here):

    /usr/bin/python3 tests/golden/gen_text.py

Output, in the case format of tests/golden/README.md: tests/golden/fixtures/text.json --
word_error_rate, char_error_rate, match_error_rate, word_information_preserved, word_information_lost and
edit_distance(substitution_cost, reduction) over `preds` and `target` given as integer token ids [N, L]
(int64 or int32) in which a negative id is padding.

Every distance comes from a full-table Levenshtein dynamic program written here (insertions and deletions cost 1,
a substitution `substitution_cost`), cross-checked with python-Levenshtein's `distance` (unit costs) on the same
sequences mapped one id to one character; the rates follow TorchMetrics' update/compute rules, each cited in a
`# rule:` comment (paths relative to the torchmetrics repo, v1.5.2: src/torchmetrics/functional/text/wer.py,
cer.py, mer.py, wil.py, wip.py, edit.py, helper.py). TorchMetrics itself is not used. Its docstring examples
(strings) are cases too, tokenized here as TorchMetrics does (str.split() words, or characters) into ids.
"""
import os
import sys

import Levenshtein
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import T, Suite, spec  # noqa: E402
from token_id_cases import pad2, vocab_ids  # noqa: E402

RT, AT = 1e-12, 0.0


def dp_distance(a, b, sub=1):
    """Levenshtein distance of id lists a -> b: the full table, row by row."""
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (0 if a[i - 1] == b[j - 1] else sub))
        prev = cur
    return prev[-1]


def distance(a, b, sub=1):
    if sub == 1:
        # one character per distinct id (ids may be anywhere in int64)
        ids = {v: chr(0x100 + k) for k, v in enumerate(sorted(set(a) | set(b)))}
        lev = Levenshtein.distance("".join(ids[v] for v in a), "".join(ids[v] for v in b))
        if len(a) * len(b) > 250_000:
            return lev, "python-Levenshtein distance"
        d = dp_distance(a, b, sub)
        assert d == lev, (d, lev)
        return d, "dynamic program, cross-checked with python-Levenshtein"
    return dp_distance(a, b, sub), "dynamic program (substitution_cost)"


def rows(x):
    """The sequences of an [N, L] id array: the non-negative ids of each row, in order."""
    return [[int(v) for v in r if v >= 0] for r in np.asarray(x)]


def rates(preds, target):
    ps, ts = rows(preds), rows(target)
    errors, tgt_total, pred_total, longer_total, src = 0, 0, 0, 0, None
    for p, t in zip(ps, ts):
        d, src = distance(p, t)
        errors += d
        tgt_total += len(t)
        pred_total += len(p)
        longer_total += max(len(t), len(p))
    nan = float("nan")
    div = lambda a, b: a / b if b else nan  # noqa: E731  # TorchMetrics: 0 / 0 tensors give NaN
    # rule: wer = cer = errors / total reference tokens -- functional/text/wer.py, cer.py (_wer_compute)
    wer = div(errors, tgt_total)
    # rule: mer = errors / sum max(len(target), len(preds)) -- functional/text/mer.py
    mer = div(errors, longer_total)
    # rule: wip = ((total - errors) / target_total) * ((total - errors) / preds_total), total = sum of the longer
    # lengths; wil = 1 - wip -- functional/text/wip.py, wil.py
    hits = longer_total - errors
    wip = div(hits, tgt_total) * div(hits, pred_total)
    return {"word_error_rate": wer, "char_error_rate": wer, "match_error_rate": mer,
            "word_information_preserved": wip, "word_information_lost": 1.0 - wip}, src


def edit(preds, target, sub, reduction):
    ds = []
    src = None
    for p, t in zip(rows(preds), rows(target)):
        d, src = distance(p, t, sub)
        ds.append(d)
    # rule: no samples gives tensor(0) whatever the reduction; mean = sum / samples -- functional/text/edit.py
    if not ds:
        return 0, src or "no rows"
    if reduction == "none":
        return ds, src
    if reduction == "sum":
        return sum(ds), src
    return sum(ds) / len(ds), src


def gen():
    S = Suite("text.json")
    rng = np.random.default_rng(33)
    RATES = ["word_error_rate", "char_error_rate", "match_error_rate", "word_information_preserved",
             "word_information_lost"]

    def add_rates(tag, p, t, only=None):
        vals, src = rates(p.a, t.a)
        for m in only or RATES:
            S.add(f"{m}__{tag}", m, {"preds": p, "target": t}, vals[m], src, rtol=RT, atol=1e-15)

    def add_edit(tag, p, t, sub=1, reduction="mean"):
        v, src = edit(p.a, t.a, sub, reduction)
        args = {}
        if sub != 1:
            args["substitution_cost"] = sub
        if reduction != "mean":
            args["reduction"] = reduction
        argtag = "".join(f"_{k}-{v}" for k, v in args.items())
        S.add(f"edit_distance{argtag}__{tag}", spec("edit_distance", args), {"preds": p, "target": t}, v, src,
              rtol=RT, atol=1e-15)

    def noisy(t, vocab, p_sub=0.15, p_del=0.1, p_ins=0.1):
        out = []
        for w in t:
            r = rng.random()
            if r < p_sub:
                out.append(int(rng.integers(0, vocab)))
            elif r < p_sub + p_del:
                continue
            else:
                out.append(w)
            if rng.random() < p_ins:
                out.append(int(rng.integers(0, vocab)))
        return out

    # TorchMetrics' docstring examples, tokenized as it tokenizes.
    hyp = ["this is the prediction", "there is an other sample"]
    ref = ["this is the reference", "there is another one"]
    ids = vocab_ids(hyp + ref, str.split)
    add_rates("docstring_example_words", pad2(ids[:2], 5), pad2(ids[2:], 5),
              only=["word_error_rate", "match_error_rate", "word_information_preserved", "word_information_lost"])
    expected_doc = {"word_error_rate": 0.5, "match_error_rate": 0.4444, "word_information_lost": 0.6528,
                    "word_information_preserved": 0.3472}
    for m, v in expected_doc.items():
        case = [c for c in S.cases if c["name"] == f"{m}__docstring_example_words"][0]
        assert abs(case["expected"] - v) < 5e-5, (m, case["expected"], v)
    ids = vocab_ids(hyp + ref, list)
    add_rates("docstring_example_chars", pad2(ids[:2]), pad2(ids[2:]), only=["char_error_rate"])
    assert abs(S.cases[-1]["expected"] - 0.3415) < 5e-5, S.cases[-1]["expected"]
    ids = vocab_ids(["rain", "lnaguaeg", "shine", "language"], list)
    p, t = pad2(ids[:2]), pad2(ids[2:])
    add_edit("docstring_example", pad2(ids[:1]), pad2(ids[2:3]))
    assert S.cases[-1]["expected"] == 3
    add_edit("docstring_example_two", p, t, reduction="none")
    assert S.cases[-1]["expected"] == [3, 4]
    add_edit("docstring_example_two", p, t)
    assert S.cases[-1]["expected"] == 3.5
    add_edit("docstring_example_two", p, t, sub=2, reduction="sum")

    # Random transcripts: 60 references of 0-30 words over 200 ids, hypotheses with substitutions, deletions and
    # insertions; padding after (int64) or scattered (int32).
    t = [list(rng.integers(0, 200, int(rng.integers(0, 31)))) for _ in range(60)]
    p = [noisy(s, 200) for s in t]
    add_rates("random_60_trailing_pad", pad2(p), pad2(t))
    add_rates("random_60_scattered_pad_int32", pad2(p, 40, "int32", rng), pad2(t, 36, "int32", rng))
    for sub in (0, 1, 2, 3):
        add_edit("random_60", pad2(p), pad2(t), sub=sub)
    add_edit("random_60", pad2(p), pad2(t), reduction="none")
    add_edit("random_60", pad2(p), pad2(t), sub=2, reduction="sum")
    # Edge cases: empty hypotheses, empty references, all padding, one row, identical, disjoint.
    add_rates("empty_hypotheses", pad2([[], [], []], 4), pad2([[1, 2, 3], [4], [5, 6]], 4))
    add_rates("empty_references_and_some", pad2([[1, 2], [3]], 3), pad2([[], [3, 4]], 3))
    add_rates("all_padding", pad2([[], []], 3), pad2([[], []], 2))
    add_edit("all_padding", pad2([[], []], 3), pad2([[], []], 2), reduction="none")
    add_rates("one_row", pad2([[7, 8, 9, 10]]), pad2([[7, 9, 10, 11, 12]]))
    add_rates("identical", pad2(t[:10]), pad2(t[:10]))
    add_rates("disjoint_vocabularies", pad2([[1, 2, 3], [4, 5]], 3), pad2([[10, 11], [12, 13, 14, 15]], 4))
    add_edit("one_row", pad2([[7, 8, 9, 10]]), pad2([[7, 9, 10, 11, 12]]), reduction="none")
    # Ids near the int64 limits (only equality matters).
    big = np.iinfo(np.int64).max
    add_rates("ids_near_int64_max", pad2([[big, big - 1, 5], [big - 2]]), pad2([[big - 1, big, 5], [big - 2, 0]]))
    # Long sequences: L = 4096 characters, one pair and a few shorter.
    long_t = [list(rng.integers(0, 60, 4096)), list(rng.integers(0, 60, 2000))]
    long_p = [noisy(long_t[0], 60, 0.05, 0.03, 0.03)[:4096], noisy(long_t[1], 60, 0.3, 0.2, 0.1)]
    add_rates("long_L4096", pad2(long_p, 4096), pad2(long_t, 4096), only=["char_error_rate", "match_error_rate"])
    # Refused inputs.
    from gen_fixtures import Refused
    S.add("word_error_rate__refused_float_preds", "word_error_rate",
          {"preds": T(np.zeros((2, 3)), "float32"), "target": pad2([[1, 2], [3]], 3)}, Refused("preds"),
          "refused: token ids must be integers")
    S.add("word_error_rate__refused_1d_target", "word_error_rate",
          {"preds": pad2([[1, 2], [3]], 3), "target": T(np.array([1, 2]), "int64")}, Refused("target"),
          "refused: token ids must be [N, L]")
    S.add("edit_distance__refused_negative_substitution_cost", "edit_distance(substitution_cost=-1)",
          {"preds": pad2([[1]]), "target": pad2([[2]])}, Refused("substitution_cost"),
          "refused: substitution_cost must be >= 0")
    return S


def main():
    gen().write_and_report()


if __name__ == "__main__":
    main()
