#!/usr/bin/env python3
"""Golden fixtures for chrF / chrF++ over token ids: chrf_score.

Regenerate (needs numpy, as the other scripts here):

    /usr/bin/python3 tests/golden/gen_chrf.py

Output, in the case format of tests/golden/README.md: tests/golden/fixtures/chrf.json -- chrf_score(n_char_order,
n_word_order, beta, lowercase, whitespace) over integer ids, a negative id padding wherever it stands: `preds`
[N, Lp] character ids and `target` [N, Lt] (one reference a row) or [N, R, Lt] (R references), and, only when
n_word_order > 0, `preds_words` [N, Wp] and `target_words` [N, Wt] or [N, R, Wt] word ids. A reference whose
characters are all padding is absent, unless every reference of the row is, and then the row has one empty
reference (the script keeps the word ids of an absent reference all padding too). The ids have already been
through lowercasing and whitespace handling, so `lowercase` and `whitespace` change nothing over ids; cases assert
that both values give the same number.

Realistic cases start from sentences and compute the ids as TorchMetrics tokenizes (src/torchmetrics/functional/
text/chrf.py, v1.5.2): lower() first when lowercase; characters list(s.strip().replace(" ", "")), or list(s) with
whitespace; words s.strip().split() with one punctuation split each (`_separate_word_and_punctuation`). Characters
map to their code points, words to a vocabulary id per case. Other cases are random ids.

The reference is chrF/chrF++ written here from the published algorithm (Popović 2015, 2017: character and word
n-gram precision and recall per order, the F-beta per order averaged over the orders), with TorchMetrics 1.5.2's
rules cited in `# rule:` comments (chrf.py): the best reference of a row is the first whose sentence score is
strictly greater than the best so far, starting from 0 -- so a row whose references all score 0 adds its hypothesis
counts and no reference counts (the `quirk` cases) -- and the corpus score is the same F over the counts summed
over rows. It is computed in exact rational arithmetic (fractions.Fraction; beta is a binary float, so exact) and
rounded once to float64, and cross-checked against the same formula in Python float64 (math.fsum over orders).
TorchMetrics compares sentence scores in float32; the script emulates that comparison and asserts it picks the same
reference as the exact one in every row, so no fixture depends on float32 rounding (exact ties take the first).
TorchMetrics itself is not used; its docstring example is a case (0.8640).
"""
import math
import os
import sys
from collections import Counter
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import Refused, Suite, T, spec  # noqa: E402
from token_id_cases import pad2, pad3  # noqa: E402

RT, AT = 1e-12, 1e-15
# rule: sacreBLEU's punctuation set -- chrf.py (_PUNCTUATIONS)
PUNCT = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
DEFAULTS = {"n_char_order": 6, "n_word_order": 2, "beta": 2.0, "lowercase": False, "whitespace": False}


# ------------------------------------------------------------------------------------------------
# TorchMetrics' tokenization (strings -> ids), for the realistic cases
# ------------------------------------------------------------------------------------------------
def tm_chars(s, whitespace):
    # rule: characters of the sentence; without whitespace, strip() then every " " removed -- chrf.py
    # (_get_characters)
    return list(s) if whitespace else list(s.strip().replace(" ", ""))


def tm_words(s):
    out = []
    for w in s.strip().split():
        # rule: one split per word: a one-character word stays; else a trailing punctuation mark is split off, else a
        # leading one -- chrf.py (_separate_word_and_punctuation, _get_words_and_punctuation)
        if len(w) == 1:
            out.append(w)
        elif w[-1] in PUNCT:
            out += [w[:-1], w[-1]]
        elif w[0] in PUNCT:
            out += [w[0], w[1:]]
        else:
            out.append(w)
    return out


def tokenize(s, vocab, lowercase=False, whitespace=False):
    """(character ids, word ids) of one sentence."""
    if lowercase:
        # rule: lower() before both tokenizations -- chrf.py (_get_n_grams_counts_and_total_ngrams)
        s = s.lower()
    return [ord(c) for c in tm_chars(s, whitespace)], [vocab.setdefault(w, len(vocab)) for w in tm_words(s)]


# ------------------------------------------------------------------------------------------------
# the reference
# ------------------------------------------------------------------------------------------------
def ngram_counts(seq, order):
    """[Counter of n-grams for n = 1..order]."""
    return [Counter(tuple(seq[i:i + n]) for i in range(len(seq) - n + 1)) for n in range(1, order + 1)]


def order_stats(hyp_counts, ref_counts):
    """[(matches, hyp n-grams, ref n-grams)] per order."""
    # rule: matches = sum over n-grams of min(hyp count, ref count) -- chrf.py (_get_ngram_matches)
    return [(sum(min(c, r[g]) for g, c in h.items()), sum(h.values()), sum(r.values()))
            for h, r in zip(hyp_counts, ref_counts)]


def fscore(stats, beta):
    """Exact: the mean over all orders (characters then words) of F-beta per order."""
    b2 = Fraction(beta) ** 2
    total = Fraction(0)
    for m, h, r in stats:
        # rule: precision m/hyp (0 if hyp is 0), recall m/ref (0 if ref is 0) -- chrf.py (_calculate_fscore)
        p = Fraction(m, h) if h > 0 else Fraction(0)
        rc = Fraction(m, r) if r > 0 else Fraction(0)
        den = b2 * p + rc
        # rule: f = (1 + beta^2) p r / max(beta^2 p + r, 1e-16) -- chrf.py (_calculate_fscore); over counts the
        # denominator is 0 or far above 1e-16, so the max only turns 0/0 into 0
        assert den == 0 or den > Fraction(1, 10 ** 12)
        total += (1 + b2) * p * rc / den if den > 0 else Fraction(0)
    # rule: the sum over character and word orders divided by n_char_order + n_word_order -- chrf.py
    return total / len(stats)


def fscore64(stats, beta):
    """The same in float64, for the cross-check."""
    b2 = beta ** 2
    fs = []
    for m, h, r in stats:
        p = m / h if h > 0 else 0.0
        rc = m / r if r > 0 else 0.0
        fs.append((1 + b2) * p * rc / max(b2 * p + rc, 1e-16))
    return math.fsum(fs) / len(stats)


def fscore32(stats, nc, beta):
    """TorchMetrics' float32 sentence score (the comparison between references is made on it)."""
    f32 = np.float32
    b2, one_b2 = f32(beta ** 2), f32(1 + beta ** 2)
    sums = []
    for part in (stats[:nc], stats[nc:]):
        acc = 0
        for m, h, r in part:
            if r == 0:
                continue  # TorchMetrics sums only the orders the reference has n-grams of; the others are 0 anyway
            p = f32(m) / f32(h) if h > 0 else f32(0)
            rc = f32(m) / f32(r)
            acc = acc + one_b2 * p * rc / max(b2 * p + rc, f32(1e-16))
        sums.append(acc)
    return f32(sums[0] + sums[1]) / f32(len(stats))


def chrf(rows, nc, nw, beta, pick="first"):
    """rows: [(hyp chars, hyp words, [(ref chars, ref words), ...])]. The corpus value (float64)."""
    tot = [[0, 0, 0] for _ in range(nc + nw)]
    for hc, hw, refs in rows:
        hyp = ngram_counts(hc, nc) + ngram_counts(hw, nw)
        best, best32, best_stats, idx, idx32 = Fraction(0), np.float32(0), None, None, None
        for j, (rc, rw) in enumerate(refs):
            st = order_stats(hyp, ngram_counts(rc, nc) + ngram_counts(rw, nw))
            f = fscore(st, beta)
            # rule: the best reference is the first whose sentence score is strictly greater than the best so far,
            # which starts at 0 -- chrf.py (_calculate_sentence_level_chrf_score)
            if f > best or (pick == "last" and f == best and f > 0):
                best, best_stats, idx = f, st, j
            f32 = fscore32(st, nc, beta)
            if f32 > best32:
                best32, idx32 = f32, j
        if pick == "first":
            assert idx == idx32, ("the float32 comparison picks another reference", idx, idx32)
        for k in range(nc + nw):
            # rule: the hypothesis counts of every row are summed -- chrf.py (_chrf_score_update)
            tot[k][1] += sum(hyp[k].values())
            if best_stats is not None:
                # rule: matches and reference counts only from the best reference; none when no reference scored
                # above 0 -- chrf.py (_chrf_score_update, _calculate_sentence_level_chrf_score)
                tot[k][0] += best_stats[k][0]
                tot[k][2] += best_stats[k][2]
    # rule: the corpus score is the same F over the totals -- chrf.py (_chrf_score_compute)
    value = float(fscore(tot, beta))
    v64 = fscore64(tot, beta)
    assert abs(value - v64) <= 1e-14 * max(1.0, abs(value)), (value, v64)
    return value


def decode(inputs, nw):
    """rows for chrf() from the padded id arrays."""
    P, Tt = inputs["preds"].a, inputs["target"].a
    assert P.ndim == 2 and Tt.ndim in (2, 3) and P.shape[0] == Tt.shape[0]
    if nw > 0:
        PW, TW = inputs["preds_words"].a, inputs["target_words"].a
        assert TW.ndim == Tt.ndim and TW.shape[:-1] == Tt.shape[:-1] and PW.shape[0] == P.shape[0]
    else:
        assert "preds_words" not in inputs and "target_words" not in inputs

    def ids(row):
        return [int(v) for v in row if v >= 0]  # Tally: a negative id is padding, skipped wherever it stands

    def refs_of(a, i):
        return [ids(r) for r in (a[i:i + 1] if a.ndim == 2 else a[i])]

    rows = []
    for i in range(P.shape[0]):
        rc = refs_of(Tt, i)
        rw = refs_of(TW, i) if nw > 0 else [[] for _ in rc]
        # the script keeps the words of a reference without characters empty (absent or the one empty reference)
        assert all(w == [] for c, w in zip(rc, rw) if not c)
        # Tally: a reference whose characters are all padding is absent, unless every reference of the row is
        # (then one empty reference)
        present = [(c, w) for c, w in zip(rc, rw) if c] or [([], [])]
        rows.append((ids(P[i]), ids(PW[i]) if nw > 0 else [], present))
    return rows


# ------------------------------------------------------------------------------------------------
# inputs
# ------------------------------------------------------------------------------------------------
def corpus_inputs(hyps, refs, lowercase=False, whitespace=False, r=None, two_d=False, dtype="int64", rng=None,
                  widths=(None, None, None, None)):
    """Sentences -> the four id tensors (one vocabulary for the case)."""
    vocab = {}
    h = [tokenize(s, vocab, lowercase, whitespace) for s in hyps]
    t = [[tokenize(s, vocab, lowercase, whitespace) for s in rs] for rs in refs]
    return ids_inputs([x[0] for x in h], [x[1] for x in h], [[x[0] for x in rs] for rs in t],
                      [[x[1] for x in rs] for rs in t], r, two_d, dtype, rng, widths)


def ids_inputs(hc, hw, rc, rw, r=None, two_d=False, dtype="int64", rng=None, widths=(None, None, None, None)):
    if two_d:
        assert all(len(x) == 1 for x in rc)
        tc, tw = pad2([x[0] for x in rc], widths[2], dtype, rng), pad2([x[0] for x in rw], widths[3], dtype, rng)
    else:
        tc, tw = pad3(rc, widths[2], r, dtype, rng), pad3(rw, widths[3], r, dtype, rng)
    return {"preds": pad2(hc, widths[0], dtype, rng), "target": tc,
            "preds_words": pad2(hw, widths[1], dtype, rng), "target_words": tw}


def gen():
    S = Suite("chrf.json")
    rng = np.random.default_rng(2015)
    src = "chrF/chrF++ from the published algorithm (Popović 2015, 2017) with TorchMetrics' rules, exact rationals"

    def add(tag, inputs, **kw):
        args = {k: v for k, v in kw.items() if v != DEFAULTS[k]}
        a = {**DEFAULTS, **kw}
        if a["n_word_order"] == 0:
            inputs = {k: v for k, v in inputs.items() if k in ("preds", "target")}
        value = chrf(decode(inputs, a["n_word_order"]), a["n_char_order"], a["n_word_order"], a["beta"])
        argtag = "".join(f"_{k}-{v}" for k, v in args.items())
        S.add(f"chrf_score{argtag}__{tag}", spec("chrf_score", args), inputs, value, src, rtol=RT, atol=AT)
        return value

    # TorchMetrics' docstring example.
    doc = corpus_inputs(["the cat is on the mat"], [["there is a cat on the mat", "a cat is on the mat"]])
    v = add("docstring_example", doc)
    assert abs(v - 0.8640) < 5e-5, v

    # Random corpora of sentences: 50 rows over a 30-word vocabulary, punctuation attached to some words,
    # 1-3 references a row (padded to R = 3 with absent ones); the hypothesis is a noisy copy of one of them.
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choice(list(letters), int(rng.integers(1, 8)))) for _ in range(30)]

    def word(mixed=False):
        w = str(rng.choice(words))
        if mixed and rng.random() < 0.3:
            w = w.capitalize() if rng.random() < 0.7 else w.upper()
        x = rng.random()
        if x < 0.12:
            w += str(rng.choice(list(".,!?;:")))
        elif x < 0.16:
            w = str(rng.choice(list("\"("))) + w
        elif x < 0.18:
            w = "(" + w + ")"  # one split only: "(w" and ")"
        elif x < 0.21:
            w = str(rng.choice(list("-,&")))  # a one-character word
        return w

    def sentence(mixed=False, spaces=False):
        ws = [word(mixed) for _ in range(int(rng.integers(3, 13)))]
        if not spaces:
            return " ".join(ws)
        seps = [" " * int(rng.choice([1, 1, 1, 2, 3])) for _ in ws[1:]]
        s = ws[0] + "".join(sep + w for sep, w in zip(seps, ws[1:]))
        return " " * int(rng.integers(0, 2)) + s + " " * int(rng.integers(0, 3))

    def noisy(s, mixed=False):
        out = []
        for w in s.split(" "):
            x = rng.random()
            if x < 0.15:
                out.append(word(mixed))
            elif x < 0.22 and w:
                continue
            elif x < 0.32 and len(w) > 2:  # a typo: two neighbouring characters swapped
                k = int(rng.integers(0, len(w) - 1))
                out.append(w[:k] + w[k + 1] + w[k] + w[k + 2:])
            else:
                out.append(w)
            if rng.random() < 0.08:
                out.append(word(mixed))
        return " ".join(out)

    def corpus(n, mixed=False, spaces=False):
        refs = [[sentence(mixed, spaces) for _ in range(int(rng.integers(1, 4)))] for _ in range(n)]
        hyps = [noisy(r[int(rng.integers(0, len(r)))], mixed) for r in refs]
        return hyps, refs

    hyps, refs = corpus(50)
    base = corpus_inputs(hyps, refs, r=3)
    v_base = v = add("random_50_refs_1to3", base)
    for kw in ({"n_word_order": 0}, {"n_char_order": 1}, {"n_char_order": 3}, {"n_char_order": 3, "n_word_order": 0},
               {"n_word_order": 1}, {"n_word_order": 4}, {"beta": 1.0}, {"beta": 3.0}, {"beta": 0.0},
               {"n_char_order": 2, "n_word_order": 1, "beta": 1.0}):
        add("random_50_refs_1to3", base, **kw)
    for kw in ({"lowercase": True}, {"whitespace": True}):
        assert add("random_50_refs_1to3", base, **kw) == v  # the flags act before the ids
    # Mixed case: the ids of the lowercased sentences (lowercase=true) and of the sentences as they are.
    mh, mr = corpus(50, mixed=True)
    low = corpus_inputs(mh, mr, lowercase=True, r=3)
    v = add("random_50_mixed_case_lowercased", low, lowercase=True)
    assert add("random_50_mixed_case_lowercased", low) == v
    assert add("random_50_mixed_case", corpus_inputs(mh, mr, r=3)) != v
    # Whitespace: characters including the spaces (leading, trailing and repeated ones), whitespace=true.
    sh, sr = corpus(50, spaces=True)
    sp = corpus_inputs(sh, sr, whitespace=True, r=3)
    v = add("random_50_with_spaces", sp, whitespace=True)
    assert add("random_50_with_spaces", sp) == v
    nosp = corpus_inputs(sh, sr, r=3)
    assert chrf(decode(sp, 2), 6, 2, 2.0) != chrf(decode(nosp, 2), 6, 2, 2.0)  # the spaces count as characters
    # One reference a row as [N, L], int32, padding scattered inside rows; [N, R, L] int32 scattered too.
    one = corpus_inputs(hyps, [[r[0]] for r in refs], two_d=True, dtype="int32", rng=rng,
                        widths=(80, 24, 80, 24))
    add("random_50_one_ref_2d_int32_scattered_pad", one)
    sc = corpus_inputs(hyps, refs, r=3, dtype="int32", rng=rng, widths=(80, 24, 80, 24))
    assert add("random_50_refs_1to3_int32_scattered_pad", sc) == v_base
    # Random ids (characters and words unrelated): 40 rows, 20 character ids, 15 word ids, 1-3 references.
    def rid(vocab, lo, hi):
        return [int(x) for x in rng.integers(0, vocab, int(rng.integers(lo, hi)))]
    rr = [int(rng.integers(1, 4)) for _ in range(40)]
    ids = ids_inputs([rid(20, 0, 40) for _ in rr], [rid(15, 0, 9) for _ in rr],
                     [[rid(20, 1, 40) for _ in range(k)] for k in rr], [[rid(15, 0, 9) for _ in range(k)] for k in rr],
                     r=3)
    add("random_ids_40_refs_1to3", ids)
    add("random_ids_40_refs_1to3", ids, n_char_order=4, n_word_order=3, beta=1.0)

    # A row whose every reference scores 0 (no common character): it adds its hypothesis counts, no reference
    # counts.
    qh = [hyps[0], "bad cab, dab!", hyps[1]]
    qr = [refs[0], ["xyz wux", "zzz vvv wow"], refs[1]]
    q = corpus_inputs(qh, qr, r=3)
    v = add("every_reference_scores_zero_quirk", q)
    rows = decode(q, 2)
    rows_all = [rows[0], (rows[1][0], rows[1][1], rows[1][2][:1]), rows[2]]
    assert v != _with_first_ref_counts(rows_all, 6, 2, 2.0)
    # Exact ties between references: the first one. Rows 0 and 1: one character and one word each; reference 0
    # matches the character, reference 1 the word, both score exactly 1/8. Row 2: the same, references swapped.
    th = [[1], [3], [1]], [[5], [6], [5]]
    tr = [[[1], [2]], [[3], [4]], [[2], [1]]], [[[7], [5]], [[8], [6]], [[5], [7]]]
    for extra in ([], [(hyps[2], refs[2])]):
        vocab = {}
        eh = [tokenize(h, vocab) for h, _ in extra]
        er = [[tokenize(s, vocab) for s in rs] for _, rs in extra]
        hc, hw = th[0] + [x[0] for x in eh], th[1] + [x[1] for x in eh]
        rc, rw = tr[0] + [[x[0] for x in rs] for rs in er], tr[1] + [[x[1] for x in rs] for rs in er]
        t = ids_inputs(hc, hw, rc, rw, r=3)
        for hyp_c, hyp_w, rs in decode(t, 2)[:3]:
            hyp = ngram_counts(hyp_c, 6) + ngram_counts(hyp_w, 2)
            f = [fscore(order_stats(hyp, ngram_counts(c, 6) + ngram_counts(w, 2)), 2.0) for c, w in rs]
            assert f == [Fraction(1, 8)] * 2, f
        v = add("reference_tie_takes_first" + ("_with_a_third_row" if extra else ""), t)
        if extra:
            assert v != chrf(decode(t, 2), 6, 2, 2.0, pick="last")
    # An empty hypothesis (it scores 0 against every reference, so its references add nothing), an empty
    # reference, all padding, no rows.
    eh = corpus_inputs([hyps[3], ""], [refs[3], refs[4]], r=3)
    add("an_empty_hypothesis_quirk", eh)
    add("an_empty_reference", corpus_inputs([hyps[3], hyps[4]], [refs[3], [""]], r=3))
    add("an_empty_reference_2d", corpus_inputs([hyps[3], hyps[4]], [[refs[3][0]], [""]], two_d=True))
    add("an_absent_reference_among_others", corpus_inputs([hyps[4]], [["", refs[4][0], ""]], r=3))
    v = add("all_padding", ids_inputs([[], []], [[], []], [[[], []], [[]]], [[[], []], [[]]], r=2))
    assert v == 0.0
    e = {"preds": T(np.zeros((0, 6)), "int64"), "target": T(np.zeros((0, 2, 6)), "int64"),
         "preds_words": T(np.zeros((0, 3)), "int64"), "target_words": T(np.zeros((0, 2, 3)), "int64")}
    assert add("empty_batch", e) == 0.0
    # One row; identical rows (1); ids near int64's maximum.
    add("one_row", corpus_inputs([hyps[5]], [[refs[5][0]]], two_d=True))
    assert add("identical", corpus_inputs([r[0] for r in refs[:8]], [[r[0]] for r in refs[:8]], two_d=True)) == 1.0
    big = np.iinfo(np.int64).max
    add("ids_near_int64_max", ids_inputs([[big, big - 1, 5, big, big - 1, big]], [[big - 3, big, big - 3]],
                                         [[[big, big - 1, big, 5, big - 1], [big - 2, big]]],
                                         [[[big - 3, big], [big]]]))
    # Long rows: L = 4,096 characters (two rows, two references each).
    def long_sentence(limit):
        ws, n = [], 0
        while True:
            w = word()
            if n + len(w) > limit:
                return " ".join(ws)
            ws.append(w)
            n += len(w)
    lr = [[long_sentence(4096) for _ in range(2)] for _ in range(2)]
    lh = []
    for r in lr:
        h = noisy(r[0])
        while len(h.replace(" ", "")) > 4096:
            h = h.rsplit(" ", 1)[0]
        lh.append(h)
    long_in = corpus_inputs(lh, lr, r=2, widths=(4096, None, 4096, None))
    assert long_in["target"].a.shape[-1] == 4096
    add("long_L4096", long_in)
    add("long_L4096", long_in, n_word_order=0)

    # Refused inputs.
    small = corpus_inputs(["a b"], [["a c"]])
    S.add("chrf_score__refused_float_preds", "chrf_score",
          {**small, "preds": T(np.zeros((1, 2)), "float32")}, Refused("integer token ids"),
          "refused: token ids must be integers")
    for arg, val, what in (("n_char_order", 0, "zero"), ("n_word_order", -1, "negative"), ("beta", -1.0, "negative")):
        S.add(f"chrf_score__refused_{arg}_{what}", spec("chrf_score", {arg: val}), small, Refused(arg),
              "refused: TorchMetrics' ValueError (n_char_order >= 1, n_word_order >= 0, beta >= 0)")
    S.add("chrf_score__refused_no_word_inputs", "chrf_score",
          {k: small[k] for k in ("preds", "target")}, Refused("preds_words"),
          "refused: n_word_order > 0 needs preds_words and target_words")
    return S


def _with_first_ref_counts(rows, nc, nw, beta):
    """What the corpus score would be if a row without a scoring reference added its first reference's counts."""
    tot = [[0, 0, 0] for _ in range(nc + nw)]
    for hc, hw, refs in rows:
        hyp = ngram_counts(hc, nc) + ngram_counts(hw, nw)
        st = [order_stats(hyp, ngram_counts(c, nc) + ngram_counts(w, nw)) for c, w in refs]
        f = [fscore(s, beta) for s in st]
        best = st[f.index(max(f))]
        for k in range(nc + nw):
            for j in range(3):
                tot[k][j] += best[k][j]
    return float(fscore(tot, beta))


def main():
    gen().write_and_report()


if __name__ == "__main__":
    main()
