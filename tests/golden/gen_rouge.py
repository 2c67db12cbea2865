#!/usr/bin/env python3
"""Golden fixtures for ROUGE over token ids: rouge_score.

Regenerate (needs numpy, as the other scripts here):

    /usr/bin/python3 tests/golden/gen_rouge.py

Output, in the case format of tests/golden/README.md: tests/golden/fixtures/rouge.json -- rouge_score(rouge_keys,
accumulate) over `preds` integer token ids [N, L] and `target` [N, L] (one reference a row) or [N, R, L] (R
references), a negative id padding wherever it stands. A reference that is all padding is absent, unless every
reference of the row is, and then the row has one empty reference. Each row is one sentence: over ids there is no
sentence splitter, so rougeLsum is the union-LCS rule of TorchMetrics' `_rouge_lsum_score` applied to a list of one
prediction sentence and a list of one target sentence. For one sentence each the union of one LCS is that LCS, a
common subsequence, so the count clipping never binds and rougeLsum equals rougeL; the script asserts this on every
pair it scores, and checks the general rule on Lin's multi-sentence example (2004, section 3.2).

The expected value is a flat list of 3K numbers in TorchMetrics' dict order: for each key in the order given,
fmeasure, precision, recall, each the mean over rows. The reference is ROUGE written here from the published
algorithm (Lin 2004: clipped n-gram hits, the longest common subsequence, the union LCS), with TorchMetrics 1.5.2's
rules cited in `# rule:` comments (src/torchmetrics/functional/text/rouge.py, src/torchmetrics/text/rouge.py). It is
computed in exact rational arithmetic (fractions.Fraction) and rounded once to float64, and cross-checked against
the same rules in Python float64 (math.fsum over rows). The LCS table is a numpy dynamic program, cross-checked with
a plain Python one on the short sequences. TorchMetrics itself is not used; its docstring example is a case,
tokenized into ids as it tokenizes (lower(), runs of characters outside [a-z0-9] to a space, split).

TorchMetrics picks the best reference (accumulate='best') with torch.argmax over float32 fmeasures of the first key
(the first index on ties); the script picks on the exact values, the first on an exact tie, and asserts that the
float32 argmax picks the same reference in every case, so no fixture depends on float32 rounding.
"""
import math
import os
import re
import sys
from collections import Counter
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import Quoted, Refused, Suite, T, spec  # noqa: E402
from token_id_cases import decode, noisy, pad2, pad3, vocab_ids  # noqa: E402

RT, AT = 1e-12, 1e-15
# rule: the allowed keys and what each means -- src/torchmetrics/functional/text/rouge.py (ALLOWED_ROUGE_KEYS)
ALLOWED = {**{f"rouge{n}": n for n in range(1, 10)}, "rougeL": "L", "rougeLsum": "Lsum"}
DEFAULT_KEYS = ("rouge1", "rouge2", "rougeL", "rougeLsum")
TYPES = ("fmeasure", "precision", "recall")
ZERO = (Fraction(0), Fraction(0), Fraction(0))


# ------------------------------------------------------------------------------------------------
# the longest common subsequence
# ------------------------------------------------------------------------------------------------
def lcs_table(pred, tgt):
    """table[i][j] = LCS length of pred[:i] and tgt[:j], row by row: row i is the running maximum of
    max(row_{i-1}[j], row_{i-1}[j-1] + [pred[i-1] == tgt[j-1]])."""
    p, t = np.asarray(pred, np.int64), np.asarray(tgt, np.int64)
    table = np.zeros((len(p) + 1, len(t) + 1), np.int32)
    for i in range(1, len(p) + 1):
        prev = table[i - 1]
        c = np.maximum(prev[1:], prev[:-1] + (t == p[i - 1]))
        table[i, 1:] = np.maximum.accumulate(c)
    return table


def lcs_plain(pred, tgt):
    prev = [0] * (len(tgt) + 1)
    for a in pred:
        cur = [0]
        for j, b in enumerate(tgt):
            cur.append(prev[j] + 1 if a == b else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def lcs_len(pred, tgt):
    n = int(lcs_table(pred, tgt)[-1, -1]) if pred and tgt else 0
    if len(pred) * len(tgt) <= 4000:
        assert n == lcs_plain(pred, tgt)
    return n


def lcs_positions(pred, tgt):
    """The target positions of one LCS, backtracked from the end."""
    table = lcs_table(pred, tgt)
    i, j, out = len(pred), len(tgt), []
    while i > 0 and j > 0:
        if pred[i - 1] == tgt[j - 1]:
            # rule: equal tokens at the ends are taken into the LCS -- rouge.py (_backtracked_lcs)
            out.append(j - 1)
            i, j = i - 1, j - 1
        elif table[i - 1, j] > table[i, j - 1]:
            # rule: otherwise drop the prediction token only where that keeps a strictly longer LCS, else drop the
            # target token -- rouge.py (_backtracked_lcs)
            i -= 1
        else:
            j -= 1
    return out[::-1]


# ------------------------------------------------------------------------------------------------
# per (prediction, reference) scores, exact: (fmeasure, precision, recall) as Fractions
# ------------------------------------------------------------------------------------------------
def prf(hits, pred_len, tgt_len):
    p, r = Fraction(hits, pred_len), Fraction(hits, tgt_len)
    # rule: fmeasure 0 when precision == recall == 0, else 2pr/(p+r) -- rouge.py (_compute_metrics)
    return (Fraction(0) if p == r == 0 else 2 * p * r / (p + r), p, r)


def ngram_counts(seq, n):
    return Counter(tuple(seq[i:i + n]) for i in range(len(seq) - n + 1))


def rouge_n(pred, tgt, n):
    pc, tc = ngram_counts(pred, n), ngram_counts(tgt, n)
    cp, ct = sum(pc.values()), sum(tc.values())
    # rule: zeros when either side has no n-gram -- rouge.py (_rouge_n_score)
    if cp == 0 or ct == 0:
        return ZERO
    # rule: hits = sum over the prediction's n-grams of min(pred count, target count) -- rouge.py (_rouge_n_score)
    hits = sum(min(c, tc[g]) for g, c in pc.items())
    return prf(hits, cp, ct)


def rouge_l(pred, tgt):
    # rule: zeros when either sentence is empty, else LCS / len -- rouge.py (_rouge_l_score)
    if not pred or not tgt:
        return ZERO
    return prf(lcs_len(pred, tgt), len(pred), len(tgt))


def rouge_lsum(pred_sents, tgt_sents):
    """The union-LCS rule over lists of sentences (Lin 2004, 3.2)."""
    pl, tl = sum(map(len, pred_sents)), sum(map(len, tgt_sents))
    # rule: zeros when either side has no token -- rouge.py (_rouge_lsum_score)
    if pl == 0 or tl == 0:
        return ZERO
    pleft = Counter(x for s in pred_sents for x in s)
    tleft = Counter(x for s in tgt_sents for x in s)
    hits = 0
    for tgt in tgt_sents:
        # rule: per target sentence, the union of the target positions of one LCS with each prediction sentence,
        # in target order -- rouge.py (_union_lcs)
        union = sorted(set().union(*[lcs_positions(p, tgt) for p in pred_sents]))
        for k in union:
            tok = tgt[k]
            # rule: a union token is a hit only while both sides have an unused count of it -- rouge.py
            # (_rouge_lsum_score)
            if pleft[tok] > 0 and tleft[tok] > 0:
                hits += 1
                pleft[tok] -= 1
                tleft[tok] -= 1
    # rule: precision and recall over the total token counts -- rouge.py (_rouge_lsum_score)
    return prf(hits, pl, tl)


def pair_scores(keys, pred, tgt):
    out = {}
    for key in keys:
        kind = ALLOWED[key]
        if kind == "L":
            out[key] = rouge_l(pred, tgt)
        elif kind == "Lsum":
            # Tally's convention over ids: one row is one sentence
            out[key] = rouge_lsum([pred], [tgt])
            assert out[key] == rouge_l(pred, tgt), "rougeLsum of one sentence each must equal rougeL"
        else:
            out[key] = rouge_n(pred, tgt, kind)
    return out


def f64_pair(s):
    """TorchMetrics' float64 arithmetic for one score from its exact hits/lengths (for the cross-check)."""
    f, p, r = s
    pf, rf = float(p), float(r)  # hits / len in float64, correctly rounded, as Python divides
    return (0.0 if pf == rf == 0.0 else 2 * pf * rf / (pf + rf), pf, rf)


# ------------------------------------------------------------------------------------------------
# the corpus
# ------------------------------------------------------------------------------------------------
def rouge(rows, keys, accumulate="best"):
    """The expected flat list, [f, p, r] per key, means over rows; also the float64 route for the cross-check."""
    per_row, per_row64 = [], []
    for hyp, refs in rows:
        scores = [pair_scores(keys, hyp, r) for r in refs]
        if accumulate == "best":
            first = [s[keys[0]][0] for s in scores]
            # rule: the reference with the highest fmeasure of the FIRST key, the first on ties (torch.argmax);
            # all keys' scores come from that one reference -- rouge.py (_rouge_score_update)
            best = first.index(max(first))
            f32 = np.array([f64_pair(s[keys[0]])[0] for s in scores], np.float32)
            # TorchMetrics compares float32 fmeasures: it must pick the same reference
            assert int(np.argmax(f32)) == best, ("float32 argmax differs", first)
            per_row.append({k: scores[best][k] for k in keys})
            per_row64.append({k: f64_pair(scores[best][k]) for k in keys})
        else:
            # rule: 'avg' = per key and type the mean over the row's references -- rouge.py (_rouge_score_update)
            per_row.append({k: tuple(sum(s[k][t] for s in scores) / len(scores) for t in range(3)) for k in keys})
            per_row64.append({k: tuple(math.fsum(f64_pair(s[k])[t] for s in scores) / len(scores)
                                       for t in range(3)) for k in keys})
    out, out64 = [], []
    # rule: the result is the mean over rows of each score, keys in the given order, each as fmeasure, precision,
    # recall (NaN for no rows) -- rouge.py (rouge_score, _rouge_score_compute)
    for k in keys:
        for t in range(3):
            if rows:
                out.append(float(sum(r[k][t] for r in per_row) / len(rows)))
                out64.append(math.fsum(r[k][t] for r in per_row64) / len(rows))
            else:
                out.append(math.nan)
                out64.append(math.nan)
    for a, b in zip(out, out64):
        assert (math.isnan(a) and math.isnan(b)) or abs(a - b) <= 1e-14 * max(1.0, abs(a)), (a, b)
    return out


def self_checks():
    # Lin (2004), 3.2: r = w1 w2 w3 w4 w5, c1 = w1 w2 w6 w7 w8, c2 = w1 w3 w8 w9 w5: union LCS w1 w2 w3 w5
    f, p, r = rouge_lsum([[1, 2, 6, 7, 8], [1, 3, 8, 9, 5]], [[1, 2, 3, 4, 5]])
    assert (p, r) == (Fraction(4, 10), Fraction(4, 5)), (p, r)
    # count clipping binds across target sentences: the second one's LCS token is used up by the first
    f, p, r = rouge_lsum([[1, 7]], [[1, 7], [7, 1]])
    assert (p, r) == (Fraction(2, 2), Fraction(2, 4)), (p, r)
    assert lcs_positions([1, 2, 3, 4], [2, 4, 1, 3]) in ([0, 1], [2, 3])


# ------------------------------------------------------------------------------------------------
# inputs
# ------------------------------------------------------------------------------------------------
def rouge_tokens(text):
    # rule: lowercase, runs of characters outside [a-z0-9] become a space, split on whitespace, drop empty tokens --
    # rouge.py (_normalize_and_tokenize_text)
    return [x for x in re.split(r"\s+", re.sub(r"[^a-z0-9]+", " ", text.lower())) if x]


def key_args(keys, accumulate, keys_form):
    args, tag = {}, ""
    if keys_form == "string":
        args["rouge_keys"] = Quoted(keys[0])
        tag += f"_keystr-{keys[0]}"
    elif keys_form == "list" or tuple(keys) != DEFAULT_KEYS:
        args["rouge_keys"] = "[" + ", ".join(f"'{k}'" for k in keys) + "]"
        tag += "_keys-" + "-".join(keys)
    if accumulate != "best" or keys_form == "explicit_best":
        args["accumulate"] = Quoted(accumulate)
        tag += f"_accumulate-{accumulate}"
    return args, tag


def gen():
    self_checks()
    S = Suite("rouge.json")
    rng = np.random.default_rng(1952)
    src = "ROUGE from the published algorithm (Lin 2004) with TorchMetrics' rules, exact rationals"

    def add(tag, preds, target, keys=DEFAULT_KEYS, accumulate="best", keys_form=None):
        value = rouge(decode(preds, target), list(keys), accumulate)
        args, argtag = key_args(list(keys), accumulate, keys_form)
        S.add(f"rouge_score{argtag}__{tag}", spec("rouge_score", args), {"preds": preds, "target": target}, value,
              src, rtol=RT, atol=AT)
        return value

    # TorchMetrics' docstring example, words as ids.
    ids = vocab_ids(["My name is John", "Is your name John"], rouge_tokens)
    v = add("docstring_example", pad2([ids[0]]), pad2([ids[1]]))
    printed = [0.75] * 3 + [0.0] * 3 + [0.5] * 3 + [0.5] * 3
    assert all(abs(a - b) < 5e-5 for a, b in zip(v, printed)), v
    add("docstring_example", pad2([ids[0]]), pad3([[ids[1]]]), keys=("rouge1", "rouge2", "rougeL"), keys_form="list")

    # Random corpora: 60 rows of 5-30 tokens over 40 ids, 1-4 references each (padded to R = 4 with absent ones).
    refs = [[[int(x) for x in rng.integers(0, 40, int(rng.integers(5, 31)))] for _ in range(int(rng.integers(1, 5)))]
            for _ in range(60)]
    # the reference at a random position is the one the hypothesis comes from, so 'best' does not always pick 0
    hyps = [noisy(rng, r[int(rng.integers(0, len(r)))], 40) for r in refs]
    p, t = pad2(hyps), pad3(refs, r=4)
    key_sets = [(DEFAULT_KEYS, None), (("rouge1", "rouge2", "rouge3", "rouge4", "rougeL"), None),
                (("rouge2",), "string"), (("rougeL", "rouge1", "rouge2"), None), (("rougeLsum", "rouge1"), None),
                (("rouge5", "rouge9", "rougeL"), None)]
    for keys, form in key_sets:
        for acc in ("best", "avg"):
            add("random_60_refs_1to4", p, t, keys, acc, form)
    add("random_60_refs_1to4", p, t, ("rouge2",), "best", "list")
    add("random_60_refs_1to4", p, t, DEFAULT_KEYS, "best", "explicit_best")
    # One reference a row as [N, L], int32, padding scattered inside rows (and in [N, R, L] references).
    add("random_60_one_ref_2d_int32_scattered_pad", pad2(hyps, 40, "int32", rng),
        pad2([r[0] for r in refs], 36, "int32", rng))
    add("random_60_refs_1to4_int32_scattered_pad", pad2(hyps, 40, "int32", rng), pad3(refs, 34, 4, "int32", rng),
        accumulate="avg")
    # Repeated tokens: hits clipped by the smaller count.
    rep_h = [[1, 1, 1, 1, 2, 2, 3], [5, 5, 5, 5]]
    rep_r = [[[1, 1, 2, 3, 4], [1, 2, 2, 2, 3, 1]], [[5, 6], [6, 5, 5, 7]]]
    for acc in ("best", "avg"):
        add("repeated_tokens_clipped", pad2(rep_h), pad3(rep_r), accumulate=acc)
    # Ties in the first key's fmeasure between references with different scores: the first reference.
    tie_h = [[1, 2, 3, 4], [1, 2, 3, 4], [1, 2, 3, 4, 5, 6]]
    tie_r = [[[1, 2, 9, 9], [3, 9, 9, 1]],  # rouge1 1/2 each; rouge2 1/3 vs 0, rougeL 1/2 vs 1/4
             [[3, 4, 9, 9], [9, 2, 9, 1]],  # rouge1 1/2 each; rouge2 1/3 vs 0, rougeL 1/2 vs 1/4
             [[1, 2, 3, 9, 9, 9], [1, 2, 3, 4, 9, 9, 9, 9, 9, 9]]]  # rouge1 3 of 6 and 6: f 1/2; 4 of 6 and 10: f 1/2
    for keys in (DEFAULT_KEYS, ("rouge1", "rougeL")):
        for hyp, rs in decode(pad2(tie_h), pad3(tie_r)):
            sc = [pair_scores(keys, hyp, r) for r in rs]
            assert sc[0]["rouge1"][0] == sc[1]["rouge1"][0] and sc[0] != sc[1], sc  # exact tie, other scores differ
        v = add("first_key_fmeasure_tie_takes_first", pad2(tie_h), pad3(tie_r), keys)
        assert v != rouge(decode(pad2(tie_h), pad3([r[::-1] for r in tie_r])), list(keys))  # the last would differ
    # rougeL first: the selection follows the LCS (reference 1), rouge1 alone would pick reference 0.
    sel_h = [[1, 2, 3, 4, 5, 6]]
    sel_r = [[[6, 5, 4, 3, 2, 1], [1, 2, 3, 7, 8, 9]]]
    a = add("selection_by_first_key", pad2(sel_h), pad3(sel_r), ("rougeL", "rouge1"))
    b = add("selection_by_first_key", pad2(sel_h), pad3(sel_r), ("rouge1", "rougeL"))
    assert a[3:] != b[:3], (a, b)
    # An absent reference (all padding) is not averaged; an empty hypothesis and an empty reference score 0.
    ab_h = [[1, 2, 3, 4], [1, 2, 3]]
    ab_r = [[[1, 2, 3, 5], [], [4, 3, 2, 1]], [[], [], [1, 2, 3]]]
    add("absent_reference_not_averaged", pad2(ab_h), pad3(ab_r), accumulate="avg")
    eh = [[], [1, 2, 3]]
    er = [[[1, 2, 3], [4, 5]], [[1, 2, 3]]]
    for acc in ("best", "avg"):
        add("an_empty_hypothesis", pad2(eh, 4), pad3(er), accumulate=acc)
    add("an_empty_reference", pad2([[1, 2, 3], [1, 2, 3]]), pad3([[[]], [[1, 2, 4]]], 3))
    add("an_empty_reference_2d", pad2([[1, 2, 3], [1, 2, 3]]), pad2([[], [1, 2, 4]], 3))
    v = add("all_padding", pad2([[], []], 3), pad3([[[], []], [[]]], 2, 2))
    assert v == [0.0] * 12
    v = add("empty_batch", T(np.zeros((0, 5)), "int64"), T(np.zeros((0, 2, 5)), "int64"))
    assert all(math.isnan(x) for x in v)
    # One row; identical rows (every score 1).
    add("one_row", pad2([[7, 8, 9, 10, 11]]), pad2([[7, 8, 9, 11, 10, 12]]))
    ident = [r[0] for r in refs[:6] if len(r[0]) >= 5]
    v = add("identical", pad2(ident), pad2(ident), ("rouge1", "rouge2", "rouge4", "rougeL", "rougeLsum"))
    assert v == [1.0] * 15, v
    # Ids near int64's maximum.
    big = np.iinfo(np.int64).max
    add("ids_near_int64_max", pad2([[big, big - 1, 5, big, big - 2]]), pad3([[[big, big - 1, 5, big - 1],
                                                                              [big - 2, big, big - 1]]]))
    # Long sequences: L = 4,096 on 3 rows over 30 ids, two references each.
    long_r = [[[int(x) for x in rng.integers(0, 30, 4096)] for _ in range(2)] for _ in range(3)]
    long_h = [noisy(rng, r[0], 30, 0.1, 0.05, 0.05)[:4096] for r in long_r]
    for acc in ("best", "avg"):
        add("long_L4096", pad2(long_h, 4096), pad3(long_r, 4096), accumulate=acc)
    # Refused inputs.
    S.add("rouge_score__refused_float_preds", "rouge_score",
          {"preds": T(np.zeros((2, 3)), "float32"), "target": pad2([[1, 2], [3]], 3)}, Refused("integer token ids"),
          "refused: token ids must be integers")
    S.add("rouge_score__refused_unknown_key", "rouge_score(rouge_keys='rouge10')",
          {"preds": pad2([[1, 2]]), "target": pad2([[1, 2]])}, Refused("rouge10"),
          "refused: not one of rouge1..rouge9, rougeL, rougeLsum (TorchMetrics' ValueError)")
    S.add("rouge_score__refused_accumulate", "rouge_score(accumulate='max')",
          {"preds": pad2([[1, 2]]), "target": pad2([[1, 2]])}, Refused("accumulate"),
          "refused: accumulate must be 'best' or 'avg' (TorchMetrics' ValueError in ROUGEScore)")
    return S


def main():
    gen().write_and_report()


if __name__ == "__main__":
    main()
