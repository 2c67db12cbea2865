#!/usr/bin/env python3
"""Golden fixtures for SQuAD (v1.1) over token ids: squad.

Regenerate (needs numpy, as the other scripts here):

    /usr/bin/python3 tests/golden/gen_squad.py

Output, in the case format of tests/golden/README.md: tests/golden/fixtures/squad.json -- squad (no arguments) over
`preds` integer ids [N, Lp] of each prediction's NORMALIZED tokens and `target` [N, Lt] (one ground truth a row) or
[N, R, Lt] (R ground truths), a negative id padding wherever it stands. A ground truth that is all padding is absent,
unless every ground truth of the row is, and then the row has one empty ground truth. The expected value is the list
[exact_match, f1] (TorchMetrics' dict order): 100 * the mean over rows of the best exact match over the row's ground
truths, and 100 * the mean of the best F1.

The reference is the official SQuAD v1.1 evaluation script's algorithm written here (`normalize_answer`: lowercase,
drop string.punctuation, articles a/an/the to a space, collapse whitespace; exact match = normalized strings equal;
F1 over bags of tokens; the max over ground truths), with TorchMetrics 1.5.2's rules cited in `# rule:` comments
(src/torchmetrics/functional/text/squad.py, src/torchmetrics/text/squad.py). TorchMetrics itself is not used.

Cases start from STRINGS (answers with articles, punctuation and case variation) scored by that reference; the same
strings are normalized and tokenized by `normalize_answer` and mapped to ids with one vocabulary per case, and the
script scores the decoded ids too (the form Tally sees) and asserts that both routes give the same exact rationals.
Everything is exact (fractions.Fraction: F1 = 2pr/(p+r) = 2 shared/(|pred| + |truth|)), rounded once to float64,
and cross-checked against the same rules in Python float64 (TorchMetrics' precision, recall and 2pr/(p+r), fsum).

Over ids an empty ground truth cannot be told from an absent one: the string route would count a ground truth that
normalizes to nothing ("The.") beside non-empty ones, the ids route drops it. The cases never build such a row (the
equality assertion would catch it); a row whose ground truths ALL normalize to nothing is one empty ground truth in
both routes.

`normalize_answer` (and `get_tokens`) are module-level functions other generators may import.
"""
import math
import os
import re
import string
import sys
from collections import Counter
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import Refused, Suite, T, spec  # noqa: E402
from token_id_cases import decode, pad2, pad3  # noqa: E402

RT, AT = 1e-12, 1e-12
SRC = ("SQuAD v1.1 evaluation algorithm (normalize_answer, exact match, bag-of-tokens F1, max over ground truths) "
       "with TorchMetrics' rules, exact rationals; ids from the normalized tokens")
_PUNCT = set(string.punctuation)


# ------------------------------------------------------------------------------------------------
# the reference (SQuAD v1.1 evaluate-v1.1.py algorithm)
# ------------------------------------------------------------------------------------------------
def normalize_answer(s):
    """Lower text and remove punctuation, articles and extra whitespace (SQuAD v1.1)."""
    # rule: lower, then drop every string.punctuation character, then r"\b(a|an|the)\b" -> " ", then
    # " ".join(split()) -- src/torchmetrics/functional/text/squad.py (_normalize_text)
    s = s.lower()
    s = "".join(ch for ch in s if ch not in _PUNCT)
    s = re.sub(r"\b(a|an|the)\b", " ", s)
    return " ".join(s.split())


def get_tokens(s):
    # rule: an empty string has no tokens, otherwise the normalized text split on whitespace -- squad.py (_get_tokens)
    return [] if not s else normalize_answer(s).split()


def exact_match_str(pred, truth):
    # rule: exact match = int(normalized prediction == normalized ground truth) -- squad.py
    # (_compute_exact_match_score)
    return Fraction(int(normalize_answer(pred) == normalize_answer(truth)))


def f1_tokens(pred, truth):
    """F1 of two token lists (strings or ids), exact."""
    # rule: shared = sum of the multiset intersection Counter(truth) & Counter(pred) -- squad.py (_compute_f1_score)
    shared = sum((Counter(truth) & Counter(pred)).values())
    if len(truth) == 0 or len(pred) == 0:
        # rule: if either side has no token, F1 = int(the two token lists are equal) -- squad.py (_compute_f1_score)
        return Fraction(int(truth == pred))
    if shared == 0:
        # rule: no shared token -> 0 -- squad.py (_compute_f1_score)
        return Fraction(0)
    p, r = Fraction(shared, len(pred)), Fraction(shared, len(truth))
    # rule: F1 = 2 * precision * recall / (precision + recall) -- squad.py (_compute_f1_score)
    f = 2 * p * r / (p + r)
    assert f == Fraction(2 * shared, len(pred) + len(truth))
    return f


def f1_tokens_f64(pred, truth):
    """TorchMetrics' arithmetic in float64, for the cross-check."""
    shared = sum((Counter(truth) & Counter(pred)).values())
    if len(truth) == 0 or len(pred) == 0:
        return float(truth == pred)
    if shared == 0:
        return 0.0
    p, r = 1.0 * shared / len(pred), 1.0 * shared / len(truth)
    return 2 * p * r / (p + r)


def f1_str(pred, truth):
    return f1_tokens(get_tokens(pred), get_tokens(truth))


def finish(em_rows, f1_rows):
    # rule: the result is {"exact_match": 100 * sum of per-question exact match / total, "f1": 100 * sum of F1 /
    # total}; total 0 gives 0/0 = NaN -- squad.py (_squad_compute), text/squad.py (states summed over updates)
    if not em_rows:
        return [math.nan, math.nan]
    n = len(em_rows)
    return [float(100 * sum(em_rows) / n), float(100 * sum(f1_rows) / n)]


def squad_strings(preds, truths):
    """The reference on strings: preds [str], truths [[str, ...]] (one list of ground truths a question)."""
    em, f1 = [], []
    for pred, gts in zip(preds, truths):
        # rule: per question, the max over its ground truths of each score, separately -- squad.py
        # (_metric_max_over_ground_truths in _squad_update)
        em.append(max(exact_match_str(pred, g) for g in gts))
        f1.append(max(f1_str(pred, g) for g in gts))
    return finish(em, f1)


def squad_rows(rows):
    """The same rules over decoded id rows [(pred ids, [ground truth ids, ...])]; also the float64 route."""
    em, f1, f164 = [], [], []
    for hyp, gts in rows:
        # over ids, exact match of the normalized strings = equal token sequences (tokens hold no whitespace)
        em.append(max(Fraction(int(hyp == g)) for g in gts))
        f1.append(max(f1_tokens(hyp, g) for g in gts))
        f164.append(max(f1_tokens_f64(hyp, g) for g in gts))
    out = finish(em, f1)
    if rows:
        check = 100 * math.fsum(f164) / len(rows)
        assert abs(check - out[1]) <= 1e-13 * max(1.0, abs(out[1])), (check, out)
    return out


def self_checks():
    assert normalize_answer("The Eiffel Tower.") == "eiffel tower"
    assert normalize_answer("  An apple, a PEAR and THE plum!! ") == "apple pear and plum"
    assert normalize_answer("theatre Anna atlas") == "theatre anna atlas"  # \b: articles only as whole words
    assert normalize_answer("U.S.A.") == "usa" and normalize_answer("Paris,France") == "parisfrance"
    assert normalize_answer("The.") == "" and get_tokens("") == []
    assert normalize_answer("the-end") == "theend"  # punctuation goes first, so no article is left
    assert f1_str("paris paris paris", "Paris, France, Paris") == Fraction(2, 3)  # clipped: 2 shared
    assert f1_str("the .", "A!") == 1 and f1_str("", "Paris") == 0 and exact_match_str("An!", "") == 1
    assert squad_strings(["1976"], [["1976"]]) == [100.0, 100.0]


# ------------------------------------------------------------------------------------------------
# inputs
# ------------------------------------------------------------------------------------------------
class Vocab:
    """One vocabulary per case: normalized tokens to ids, in a shuffled order (ids as a tokenizer would give)."""

    def __init__(self, texts, rng, base=0):
        toks = sorted({t for s in texts for t in get_tokens(s)})
        perm = rng.permutation(len(toks))
        self.ids = {t: base + int(k) for t, k in zip(toks, perm)}

    def __call__(self, s):
        return [self.ids[t] for t in get_tokens(s)]


def gen():
    self_checks()
    S = Suite("squad.json")
    rng = np.random.default_rng(11)  # SQuAD v1.1

    def add_ids(tag, preds, target):
        value = squad_rows(decode(preds, target))
        S.add(f"squad__{tag}", spec("squad", {}), {"preds": preds, "target": target}, value, SRC, rtol=RT, atol=AT)
        return value

    def add(tag, preds, truths, two_d=False, dtype="int64", scatter=False, r=None, slots=None, wp=None, wt=None):
        """A case from strings: the string reference and the ids route must agree exactly."""
        vocab = Vocab(list(preds) + [g for gs in truths for g in gs], rng)
        p = pad2([vocab(s) for s in preds], wp, dtype, rng if scatter else None)
        if two_d:
            assert all(len(gs) == 1 for gs in truths)
            t = pad2([vocab(gs[0]) for gs in truths], wt, dtype, rng if scatter else None)
        else:
            t = pad3([[vocab(g) for g in gs] for gs in truths], wt, r, dtype, rng if scatter else None, slots)
        value = add_ids(tag, p, t)
        ref = squad_strings(preds, truths)
        assert value == ref, (tag, value, ref)
        return value

    # TorchMetrics' docstring example.
    v = add("docstring_example", ["1976"], [["1976"]])
    assert v == [100.0, 100.0]
    add("docstring_example_2d", ["1976"], [["1976"]], two_d=True)

    # A random-ish corpus: 60 questions, 1-3 ground truths (in random slots of R = 3, the others absent), answers
    # from a small vocabulary with articles, punctuation and case variation.
    entities = [["Eiffel", "Tower"], ["Paris"], ["France"], ["Seine"], ["Gustave", "Eiffel"], ["1889"],
                ["Napoleon", "Bonaparte"], ["French", "Revolution"], ["U.S.A."], ["New", "York", "City"],
                ["Denver", "Broncos"], ["Super", "Bowl", "50"], ["Levi's", "Stadium"], ["Santa", "Clara"],
                ["theatre"], ["Anna", "Karenina"], ["atlas"], ["Rhine", "river"], ["Tower", "of", "London"],
                ["Norman", "conquest"], ["1066"], ["William", "the", "Conqueror"], ["apple"], ["steam", "engine"],
                ["Jean-Paul", "Sartre"], ["Mont", "Saint-Michel"], ["quantum", "mechanics"], ["oxygen"]]
    filler = ["in", "of", "and", "by", "near", "old", "great", "first", "city", "river", "year", "century"]
    articles = ["the", "The", "a", "A", "an", "An", "THE"]
    puncts = [".", ",", "!", "?", ";", ":", "'s", ")", "\""]

    def surface(words):
        """A surface form of a word list: case, a leading article, punctuation attached to words."""
        out = []
        style = int(rng.integers(0, 4))
        for w in words:
            w = w.lower() if style == 0 else w.upper() if style == 1 else w.title() if style == 2 else w
            if rng.random() < 0.2:
                w = w + puncts[int(rng.integers(0, len(puncts)))]
            if rng.random() < 0.1:
                w = "(" + w
            out.append(w)
        if rng.random() < 0.5:
            out.insert(0, articles[int(rng.integers(0, len(articles)))])
        if rng.random() < 0.15 and len(out) > 1:
            k = int(rng.integers(1, len(out)))
            out.insert(k, articles[int(rng.integers(0, len(articles)))])
        s = " ".join(out)
        if rng.random() < 0.3:
            s = s + puncts[int(rng.integers(0, 5))]
        if rng.random() < 0.1:
            s = "  " + s + " "
        return s

    def answer():
        words = list(entities[int(rng.integers(0, len(entities)))])
        if rng.random() < 0.4:
            words = words + list(entities[int(rng.integers(0, len(entities)))])
        if rng.random() < 0.3:
            words.insert(int(rng.integers(0, len(words) + 1)), filler[int(rng.integers(0, len(filler)))])
        return words

    def variant(words):
        w = list(words)
        x = rng.random()
        if x < 0.2 and len(w) > 1:
            del w[int(rng.integers(0, len(w)))]
        elif x < 0.35:
            w.insert(int(rng.integers(0, len(w) + 1)), filler[int(rng.integers(0, len(filler)))])
        return w

    preds, truths, slots = [], [], []
    for q in range(60):
        canon = answer()
        gts = [surface(canon)] + [surface(variant(canon)) for _ in range(int(rng.integers(0, 3)))]
        x = rng.random()
        if x < 0.3:
            pred = surface(canon)  # the same answer written differently
        elif x < 0.6:
            pred = surface(variant(variant(canon)))  # partial overlap
        elif x < 0.7:
            pred = surface(canon + canon[:1])  # a repeated token
        elif x < 0.85:
            pred = surface(answer())  # another answer
        elif x < 0.92:
            pred = surface(list(reversed(canon)))  # the same bag, another order
        else:
            pred = ["the .", "A!", "", "  An, "][int(rng.integers(0, 4))]  # nothing left after normalization
        order = list(rng.permutation(len(gts)))
        preds.append(pred)
        truths.append([gts[k] for k in order])
        slots.append(sorted(int(k) for k in rng.choice(3, len(gts), replace=False)))
        assert all(get_tokens(g) for g in gts)  # no ground truth that normalizes to nothing beside others
    v = add("random_60_truths_1to3", preds, truths, r=3, slots=slots)
    assert 0 < v[0] < v[1] < 100, v
    assert any(not get_tokens(p) for p in preds)
    assert sum(len(t) > 1 for t in truths) > 20 and any(s != list(range(len(s))) for s in slots)
    # normalization matters: raw-string equality would give another exact match
    raw = [max(int(p == g) for g in gs) for p, gs in zip(preds, truths)]
    assert 100 * sum(raw) / 60 < v[0]
    add("random_60_truths_1to3_int32_scattered_pad", preds, truths, dtype="int32", scatter=True, r=3, slots=slots,
        wp=16, wt=14)
    firsts = [[gs[0]] for gs in truths]
    add("random_60_one_truth_2d", preds, firsts, two_d=True)
    add("random_60_one_truth_2d_int32_scattered_pad", preds, firsts, two_d=True, dtype="int32", scatter=True,
        wp=15, wt=12)

    # Partial overlaps (one ground truth, and the best of several).
    po_p = ["The Eiffel Tower in Paris", "Denver", "Gustave Eiffel's tower", "the French Revolution of 1789"]
    po_t = [["eiffel tower"], ["The Denver Broncos"], ["Gustave Eiffel"], ["French revolution, 1789–1799"]]
    add("partial_overlap", po_p, po_t)
    add("partial_overlap_2d", po_p, po_t, two_d=True)
    add("partial_overlap_best_of_three", ["Denver Broncos in Santa Clara", "the steam engine of Watt"],
        [["Santa Clara", "Denver", "Broncos, Santa Clara, California"], ["Watt", "James Watt's engine", "steam"]])
    # Repeated tokens: the multiset intersection clips each token at the smaller count.
    v = add("repeated_tokens_clipped", ["Paris Paris Paris", "new new york", "the the the Seine"],
            [["Paris, France, Paris"], ["New York, New York", "york"], ["Seine Seine river Seine Seine"]])
    # "paris" 2 of 3 and 3: 2/3; new 2 + york 1 of 3 and 4: 6/7; "the"s dropped, seine 1 of 1 and 5: 1/3
    assert v == [0.0, float(100 * (Fraction(2, 3) + Fraction(6, 7) + Fraction(1, 3)) / 3)], v
    # An empty prediction (after normalization) against non-empty ground truths (0), against ground truths that
    # all normalize to nothing (one empty ground truth: exact match 1, F1 1), and a non-empty prediction against
    # an empty ground truth (0).
    v = add("empty_prediction", ["the .", "A!", "", "  An, ", "Paris"],
            [["Paris", "the Seine"], ["The.", "an"], [""], ["a", "A.", "THE"], ["the"]])
    assert v == [60.0, 60.0], v
    v = add("empty_prediction_2d", ["the .", "An!", "Paris"], [["Paris"], ["the"], ["."]], two_d=True)
    assert v == [float(100 * Fraction(1, 3))] * 2, v
    # All padding: every row is an empty prediction against one empty ground truth.
    v = add_ids("all_padding", pad2([[], [], []], 3), pad3([[[], []], [[]], [[], [], []]], 2, 3))
    assert v == [100.0, 100.0]
    v = add_ids("all_padding_2d", pad2([[], []], 4), pad2([[], []], 2))
    assert v == [100.0, 100.0]
    # No rows: NaN (0 / 0).
    v = add_ids("empty_batch", T(np.zeros((0, 5)), "int64"), T(np.zeros((0, 3, 5)), "int64"))
    assert all(math.isnan(x) for x in v)
    v = add_ids("empty_batch_2d", T(np.zeros((0, 4)), "int64"), T(np.zeros((0, 6)), "int64"))
    assert all(math.isnan(x) for x in v)
    # One row; identical answers (differently written).
    add("one_row", ["Napoleon Bonaparte, emperor"], [["Napoleon", "Emperor Napoleon I"]])
    add("one_row_2d", ["Levi's Stadium"], [["Levis stadium in Santa Clara"]], two_d=True)
    ident_p = ["The Eiffel Tower.", "U.S.A.", "an apple a day", "Tower of the Winds"]
    ident_t = [["eiffel tower"], ["usa"], ["Apple, day"], ["TOWER OF WINDS!"]]
    v = add("identical", ident_p, ident_t)
    assert v == [100.0, 100.0]
    # The best exact match and the best F1 from different ground truths: F1 peaks (1) at the first ground truth, a
    # permutation; the exact match only at the third. And a row where F1 is 1 with no exact match at all.
    bd_p = ["Eiffel Tower", "Paris France", "quantum mechanics"]
    bd_t = [["Tower, Eiffel", "Eiffel", "the Eiffel Tower"], ["France; Paris", "Paris"], ["mechanics", "quantum"]]
    for pred, gts in zip(bd_p, bd_t):
        em = [exact_match_str(pred, g) for g in gts]
        f1 = [f1_str(pred, g) for g in gts]
        assert f1.index(max(f1)) != em.index(max(em)) or max(em) == 0, (em, f1)
    v = add("best_exact_and_best_f1_from_different_truths", bd_p, bd_t)
    assert v == [float(100 * Fraction(1, 3)), float(100 * (2 + Fraction(2, 3)) / 3)], v
    # Ids near int64's maximum.
    big = int(np.iinfo(np.int64).max)
    add_ids("ids_near_int64_max", pad2([[big, big - 1, 5, big], [big - 2], [big]]),
            pad3([[[big, big - 1, 5, big - 1], [big - 1, big, 5, big]], [[big - 2]], [[big - 1, big - 2]]]))
    add_ids("ids_near_int64_max_2d", pad2([[big, big - 1], [big - 3, big - 3]]), pad2([[big - 1, big], [big - 3]]))
    # Long answers: L = 4,096 on 3 rows, two ground truths each; written with capitals and punctuation attached to
    # words (no articles, so each row of 4,096 words keeps 4,096 tokens).
    words = ["paris", "seine", "tower", "river", "city", "old", "great", "year", "1889", "eiffel", "france", "iron",
             "bridge", "north", "south", "king", "queen", "war", "peace", "gold", "theatre", "anna", "atlas"]

    marks = [".", ",", "!", "?", ";", ":", ")", "\""]  # removed entirely (no "'s": it would leave an "s")

    def long_text(tokens):
        out = []
        for w in tokens:
            x = rng.random()
            out.append(w.upper() if x < 0.1 else w.title() if x < 0.3 else w)
            if rng.random() < 0.1:
                out[-1] += marks[int(rng.integers(0, len(marks)))]
        return " ".join(out)

    long_t = [[[words[int(k)] for k in rng.integers(0, len(words), 4096)] for _ in range(2)] for _ in range(3)]
    long_p = [list(long_t[0][1]),  # the second ground truth's tokens, another surface: exact match
              [w for w in long_t[1][0] if rng.random() > 0.05],  # 5% dropped
              [words[int(k)] for k in rng.integers(0, len(words), 4096)]]  # unrelated, but a large bag overlap
    lp = [long_text(p) for p in long_p]
    lt = [[long_text(g) for g in gs] for gs in long_t]
    v = add("long_L4096", lp, lt)
    assert 0 < v[0] < 100 and v[1] < 100
    assert max(len(get_tokens(s)) for s in lp) == 4096 and max(len(get_tokens(g)) for gs in lt for g in gs) == 4096
    # Refused inputs.
    S.add("squad__refused_float_preds", "squad",
          {"preds": T(np.zeros((2, 3)), "float32"), "target": pad2([[1, 2], [3]], 3)}, Refused("integer token ids"),
          "refused: token ids must be integers")
    S.add("squad__refused_float_target", "squad",
          {"preds": pad2([[1, 2], [3]], 3), "target": T(np.zeros((2, 2, 3)), "float64")},
          Refused("integer token ids"), "refused: token ids must be integers")
    # (Rows that differ are refused before any metric builds, naming both inputs: cli_test covers it.)
    return S


def main():
    gen().write_and_report()


if __name__ == "__main__":
    main()
