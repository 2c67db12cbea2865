#!/usr/bin/env python3
"""Golden fixtures for the speech and text error rates over token ids.

Regenerate (needs numpy and Debian's python3-levenshtein, as the other scripts here):

    /usr/bin/python3 tests/golden/gen_text.py

Output, in the case format of tests/golden/README.md: tests/golden/fixtures/text.json --
word_error_rate, char_error_rate, match_error_rate, word_information_preserved, word_information_lost and
edit_distance(substitution_cost, reduction) over `preds` and `target` given as integer token ids [N, L]
(int64 or int32) in which a negative id is padding; and Tally's own error_counts (no TorchMetrics counterpart): the
int64 [hits, substitutions, deletions, insertions] summed over rows, of each row's least-distance alignment (unit
costs) with the fewest substitutions, written exactly (rtol 0, atol 0).

Every distance comes from a full-table Levenshtein dynamic program written here (insertions and deletions cost 1,
a substitution `substitution_cost`), cross-checked with python-Levenshtein's `distance` (unit costs) on the same
sequences mapped one id to one character; the rates follow TorchMetrics' update/compute rules, each cited in a
`# rule:` comment (paths relative to the torchmetrics repo, v1.5.2: src/torchmetrics/functional/text/wer.py,
cer.py, mer.py, wil.py, wip.py, edit.py, helper.py). TorchMetrics itself is not used. Its docstring examples
(strings) are cases too, tokenized here as TorchMetrics does (str.split() words, or characters) into ids.

error_counts comes from two references written here that must agree: one full-table dynamic program over
(distance, substitutions) pairs compared lexicographically, carrying the hits, deletions and insertions of the chosen
alignment; and a two-pass method (the full distance table, then a second table of the fewest substitutions over only
the optimal steps, then a walk back counting the steps). Every row asserts hits + substitutions + deletions =
len(target), hits + substitutions + insertions = len(preds) and substitutions + deletions + insertions =
python-Levenshtein's distance; short rows are also checked against every alignment enumerated.
"""
import os
import sys
from array import array

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


def counts_lex(a, b):
    """[hits, substitutions, deletions, insertions] of preds a against target b, and the distance: one full table,
    row by row, of (distance, substitutions, hits, deletions, insertions) per pair of prefixes, the least
    (distance, substitutions) pair kept (lexicographic order)."""
    # cell j of row i: a[:i] against b[:j]; a preds token left unaligned is an insertion, a target token a deletion
    prev = [(j, 0, 0, j, 0) for j in range(len(b) + 1)]
    for i in range(1, len(a) + 1):
        x = a[i - 1]
        cur = [(i, 0, 0, 0, i)]
        for j in range(1, len(b) + 1):
            d, s, h, dl, ins = prev[j - 1]
            best = (d, s, h + 1, dl, ins) if x == b[j - 1] else (d + 1, s + 1, h, dl, ins)
            d, s, h, dl, ins = prev[j]
            if (d + 1, s) < best[:2]:
                best = (d + 1, s, h, dl, ins + 1)
            d, s, h, dl, ins = cur[j - 1]
            if (d + 1, s) < best[:2]:
                best = (d + 1, s, h, dl + 1, ins)
            cur.append(best)
        prev = cur
    d, s, h, dl, ins = prev[-1]
    return [h, s, dl, ins], d


def counts_two_pass(a, b):
    """The same counts another way: the full distance table D; then S, the fewest substitutions to reach each cell
    over only the steps that keep D optimal; then a walk back from the corner along steps optimal in D and S,
    counting them."""
    n, m = len(a), len(b)
    D = [array("q", range(m + 1))]
    for i in range(1, n + 1):
        x, up = a[i - 1], D[i - 1]
        row = [i]
        for j in range(1, m + 1):
            row.append(min(up[j] + 1, row[j - 1] + 1, up[j - 1] + (x != b[j - 1])))
        D.append(array("q", row))
    S = [array("q", [0] * (m + 1))]  # row 0 and column 0: deletions or insertions only
    for i in range(1, n + 1):
        x, d, dup, sup = a[i - 1], D[i], D[i - 1], S[i - 1]
        row = [0]
        for j in range(1, m + 1):
            c = int(x != b[j - 1])
            options = []
            if dup[j - 1] + c == d[j]:
                options.append(sup[j - 1] + c)
            if dup[j] + 1 == d[j]:
                options.append(sup[j])
            if d[j - 1] + 1 == d[j]:
                options.append(row[j - 1])
            row.append(min(options))
        S.append(array("q", row))
    i, j, h, s, dl, ins = n, m, 0, 0, 0, 0
    while i or j:
        if i and j:
            c = int(a[i - 1] != b[j - 1])
            if D[i - 1][j - 1] + c == D[i][j] and S[i - 1][j - 1] + c == S[i][j]:
                h, s, i, j = h + 1 - c, s + c, i - 1, j - 1
                continue
        if i and D[i - 1][j] + 1 == D[i][j] and S[i - 1][j] == S[i][j]:
            ins, i = ins + 1, i - 1
            continue
        assert j and D[i][j - 1] + 1 == D[i][j] and S[i][j - 1] == S[i][j], (i, j)
        dl, j = dl + 1, j - 1
    return [h, s, dl, ins], D[n][m]


def counts_enumerated(a, b):
    """The least (distance, substitutions) over every alignment of a against b, enumerated (short rows only)."""
    best = None

    def walk(i, j, d, s, h, dl, ins):
        nonlocal best
        if i == len(a) and j == len(b):
            if best is None or (d, s) < best[:2]:
                best = (d, s, h, dl, ins)
            return
        if i < len(a) and j < len(b):
            c = int(a[i] != b[j])
            walk(i + 1, j + 1, d + c, s + c, h + 1 - c, dl, ins)
        if i < len(a):
            walk(i + 1, j, d + 1, s, h, dl, ins + 1)
        if j < len(b):
            walk(i, j + 1, d + 1, s, h, dl + 1, ins)

    walk(0, 0, 0, 0, 0, 0, 0)
    d, s, h, dl, ins = best
    return [h, s, dl, ins], d


def error_counts(preds, target):
    """Tally's error_counts: [hits, substitutions, deletions, insertions] summed over rows, and the source text."""
    total, enumerated = [0, 0, 0, 0], False
    for p, t in zip(rows(preds), rows(target)):
        c, d = counts_lex(p, t)
        c2, d2 = counts_two_pass(p, t)
        assert (c, d) == (c2, d2), (p, t, c, d, c2, d2)
        h, s, dl, ins = c
        ids = {v: chr(0x100 + k) for k, v in enumerate(sorted(set(p) | set(t)))}
        ps, ts = "".join(ids[v] for v in p), "".join(ids[v] for v in t)
        assert h + s + dl == len(t) and h + s + ins == len(p), (p, t, c)
        assert s + dl + ins == d == Levenshtein.distance(ps, ts), (p, t, c, d)
        # python-Levenshtein's one optimal alignment cannot have fewer substitutions
        assert s <= sum(op == "replace" for op, _, _ in Levenshtein.editops(ps, ts)), (p, t, c)
        if len(p) <= 6 and len(t) <= 6:
            assert counts_enumerated(p, t) == (c, d), (p, t, c, d)
            enumerated = True
        total = [u + v for u, v in zip(total, c)]
    src = ("dynamic program over (distance, substitutions), cross-checked with a two-pass table and "
           "python-Levenshtein" + (", short rows with every alignment enumerated" if enumerated else ""))
    return total, src


def gen():
    S = Suite("text.json")
    rng = np.random.default_rng(33)
    RATES = ["word_error_rate", "char_error_rate", "match_error_rate", "word_information_preserved",
             "word_information_lost"]

    rate_inputs = []  # (tag, preds, target) of every add_rates call: error_counts cases over the same inputs

    def add_rates(tag, p, t, only=None):
        rate_inputs.append((tag, p, t))
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

    # error_counts (Tally's): [hits, substitutions, deletions, insertions] summed over rows, exact.
    def add_counts(tag, p, t, want=None):
        v, src = error_counts(p.a, t.a)
        if want is not None:
            assert v == want, (tag, v, want)
        S.add(f"error_counts__{tag}", "error_counts", {"preds": p, "target": t}, v, src, rtol=0.0, atol=0.0)

    lens = lambda x: sum(len(r) for r in rows(x.a))  # noqa: E731
    for tag, p, t in rate_inputs:
        want = None
        if tag == "identical":
            want = [lens(t), 0, 0, 0]
        elif tag == "empty_hypotheses":
            want = [0, 0, lens(t), 0]
        elif tag == "all_padding":
            want = [0, 0, 0, 0]
        elif tag == "one_row":  # 7 8 9 10 against 7 9 10 11 12: 8 inserted, 11 and 12 deleted
            want = [3, 0, 2, 1]
        add_counts(tag, p, t, want)
    # Equal distances, fewer substitutions: "a b" against "b c" is a deletion and an insertion, not 2 substitutions.
    ids = vocab_ids(["a b", "b c"])
    add_counts("tie_a_b_vs_b_c", pad2(ids[:1]), pad2(ids[1:]), want=[1, 0, 1, 1])
    # Rows by hand, preds | target -> hits, substitutions, deletions, insertions.
    hand = [("a b", "b a", [1, 0, 1, 1]), ("a b c", "b c d", [2, 0, 1, 1]), ("x a b", "a b y", [2, 0, 1, 1]),
            ("a b", "c d", [0, 2, 0, 0]), ("a b c", "a x c", [2, 1, 0, 0]), ("a b c d", "b c d a", [3, 0, 1, 1]),
            ("a a b", "a b b", [2, 1, 0, 0]), ("a b c", "c", [1, 0, 0, 2]), ("c", "a b c", [1, 0, 2, 0]),
            ("a b c d e", "e d c b a", [1, 4, 0, 0]), ("a x b y", "a b", [2, 0, 0, 2]),
            ("a b", "x a y b z", [2, 0, 3, 0]), ("a b c", "x y", [0, 2, 0, 1])]
    for k, (hyp, ref, want) in enumerate(hand):
        ids = vocab_ids([hyp, ref])
        assert error_counts(pad2(ids[:1]).a, pad2(ids[1:]).a)[0] == want, (hyp, ref, want)
    ids = vocab_ids([h for h, _, _ in hand] + [r for _, r, _ in hand])
    add_counts("by_hand_rows", pad2(ids[:len(hand)]), pad2(ids[len(hand):]),
               want=[sum(w[i] for _, _, w in hand) for i in range(4)])
    add_counts("empty_references", pad2([[1, 2], [3, 4, 5], [6]], 3), pad2([[], [], []], 2), want=[0, 0, 0, 6])
    add_counts("identical_one_row", pad2([[5, 3, 5, 9, 1]]), pad2([[5, 3, 5, 9, 1]]), want=[5, 0, 0, 0])
    big = np.iinfo(np.int64).max
    add_counts("ids_near_int64_max_ties", pad2([[big, big - 1], [big - 3, big, big - 2]]),
               pad2([[big - 1, big - 2], [big, big - 2, big - 1]]), want=[3, 0, 2, 2])
    # Many ties: 3 ids, rows of 0-6 (every alignment enumerated), padding scattered; int64 and int32.
    rc = np.random.default_rng(71)
    t_small = [list(rc.integers(0, 3, int(rc.integers(0, 7)))) for _ in range(150)]
    p_small = [list(rc.integers(0, 3, int(rc.integers(0, 7)))) for _ in range(150)]
    add_counts("random_small_vocab_150", pad2(p_small, 9, rng=rc), pad2(t_small, 8, rng=rc))
    add_counts("random_small_vocab_150_int32", pad2(p_small, 6, "int32"), pad2(t_small, 10, "int32", rc))
    # Longer rows over 5 ids (ties everywhere), widths far apart.
    t_mid = [list(rc.integers(0, 5, int(rc.integers(0, 61)))) for _ in range(40)]
    p_mid = [noisy(s, 5, 0.2, 0.2, 0.3) for s in t_mid]
    add_counts("random_vocab5_40_scattered_pad_int32", pad2(p_mid, 128, "int32", rc), pad2(t_mid, 64, "int32", rc))
    S.add("error_counts__refused_float_preds", "error_counts",
          {"preds": T(np.zeros((2, 3)), "float32"), "target": pad2([[1, 2], [3]], 3)}, Refused("error_counts"),
          "refused: token ids must be integers")
    S.add("error_counts__refused_float_target", "error_counts",
          {"preds": pad2([[1, 2], [3]], 3), "target": T(np.zeros((2, 3)), "float64")}, Refused("error_counts"),
          "refused: token ids must be integers")
    return S


def main():
    gen().write_and_report()


if __name__ == "__main__":
    main()
