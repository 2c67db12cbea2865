#!/usr/bin/env python3
"""Golden fixtures for BLEU over token ids: bleu_score and sacre_bleu_score.

Regenerate (needs numpy and Debian's python3-nltk, as the other scripts here):

    /usr/bin/python3 tests/golden/gen_bleu.py

Output, in the case format of tests/golden/README.md: tests/golden/fixtures/bleu.json -- bleu_score(n_gram, smooth,
weights) and sacre_bleu_score over `preds` integer token ids [N, L] and `target` [N, L] (one reference a row) or
[N, R, L] (R references), a negative id padding.

The reference is BLEU written here from the published algorithm (Papineni et al. 2002: clipped n-gram precisions
summed over the corpus, the geometric mean, the brevity penalty against the closest reference length), with
TorchMetrics 1.5.2's rules cited in `# rule:` comments (src/torchmetrics/functional/text/bleu.py). It is
cross-checked with NLTK's corpus_bleu (smoothing method2 for smooth=True) wherever the two agree by definition:
every order has a match (NLTK then gives 0 only if no unigram matches, and a tiny positive number otherwise) and no
row has two references equally close to its length but of different lengths (NLTK takes the shorter one,
TorchMetrics the first), and no hypothesis is shorter than n_gram (NLTK counts at least one n-gram of each order
in each hypothesis). TorchMetrics itself is not used; its docstring examples are cases, tokenized into ids as
it tokenizes (str.split()).
"""
import math
import os
import sys
from collections import Counter

import numpy as np
from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import Quoted, Refused, Suite, T, spec  # noqa: E402
from token_id_cases import noisy, pad2, pad3, vocab_ids  # noqa: E402

RT, AT = 1e-12, 1e-15


def ngrams(seq, n):
    c = Counter()
    for k in range(1, n + 1):
        for i in range(len(seq) - k + 1):
            c[tuple(seq[i:i + k])] += 1
    return c


def closest_ref_len(hyp_len, ref_lens):
    # rule: the first reference whose length is closest to the hypothesis' (list.index of the minimum)
    diffs = [abs(hyp_len - r) for r in ref_lens]
    return ref_lens[diffs.index(min(diffs))]


def bleu(corpus, n_gram=4, smooth=False, weights=None):
    """corpus: [(hyp ids, [ref ids, ...])]. TorchMetrics' value, from Counters."""
    weights = weights or [1.0 / n_gram] * n_gram
    num, den = [0] * n_gram, [0] * n_gram
    c_len = r_len = 0
    for hyp, refs in corpus:
        c_len += len(hyp)
        r_len += closest_ref_len(len(hyp), [len(r) for r in refs])
        h = ngrams(hyp, n_gram)
        best = Counter()
        for r in refs:
            best |= ngrams(r, n_gram)  # rule: clip by the most occurrences in any one reference
        for g, c in h.items():
            num[len(g) - 1] += min(c, best[g])
            den[len(g) - 1] += c
    # rule: 0 as soon as one order has no clipped match, smoothed or not
    if min(num) == 0:
        return 0.0, num, den, c_len, r_len
    if smooth:
        # rule: add one to both counts of every order but the first (Lin and Och 2004)
        p = [num[0] / den[0]] + [(num[k] + 1) / (den[k] + 1) for k in range(1, n_gram)]
    else:
        p = [num[k] / den[k] for k in range(n_gram)]
    geo = math.exp(math.fsum(w * math.log(x) for w, x in zip(weights, p)))
    # rule: brevity penalty 1 when the hypotheses are longer, else exp(1 - r / c)
    bp = 1.0 if c_len > r_len else math.exp(1 - r_len / c_len)
    return bp * geo, num, den, c_len, r_len


def nltk_check(corpus, value, num, n_gram, smooth, weights):
    """NLTK's corpus_bleu on the same ids, where it means the same thing; returns the source text."""
    ties = any(len({len(r) for r in refs if abs(len(r) - len(h)) == min(abs(len(x) - len(h)) for x in refs)}) > 1
               for h, refs in corpus)
    # NLTK counts a denominator of at least 1 per hypothesis and order (max(1, count)); TorchMetrics does not
    short = any(len(h) < n_gram for h, _ in corpus)
    if min(num) == 0 or ties or short:
        return "BLEU from the published algorithm with TorchMetrics' rules"
    weights = tuple(weights or [1.0 / n_gram] * n_gram)
    refs = [[[str(v) for v in r] for r in rs] for _, rs in corpus]
    hyps = [[str(v) for v in h] for h, _ in corpus]
    sf = SmoothingFunction().method2 if smooth else None
    ref = corpus_bleu(refs, hyps, weights=weights, smoothing_function=sf)
    assert abs(ref - value) <= 1e-13 * max(1.0, abs(value)), (ref, value)
    return "BLEU from the published algorithm, cross-checked with NLTK corpus_bleu"


def gen():
    S = Suite("bleu.json")
    rng = np.random.default_rng(34)

    def add(tag, corpus, preds, target, n_gram=4, smooth=False, weights=None, metric="bleu_score", extra=None):
        value, num, den, _, _ = bleu(corpus, n_gram, smooth, weights)
        src = nltk_check(corpus, value, num, n_gram, smooth, weights)
        args = {}
        if n_gram != 4:
            args["n_gram"] = n_gram
        if smooth:
            args["smooth"] = True
        if weights is not None:
            args["weights"] = "[" + ", ".join(repr(float(w)) for w in weights) + "]"
        args.update(extra or {})
        argtag = "".join(f"_{k}-{v}" for k, v in args.items() if k != "weights") + ("_weights" if weights else "")
        S.add(f"{metric}{argtag}__{tag}", spec(metric, args), {"preds": preds, "target": target}, value, src,
              rtol=RT, atol=AT)
        return value

    # TorchMetrics' docstring example (both names), words as ids.
    ids = vocab_ids(["the cat is on the mat", "there is a cat on the mat", "a cat is on the mat"])
    corpus = [(ids[0], [ids[1], ids[2]])]
    for m in ("bleu_score", "sacre_bleu_score"):
        v = add("docstring_example", corpus, pad2([ids[0]]), pad3([[ids[1], ids[2]]]), metric=m)
        assert abs(v - 0.7598) < 5e-5, v

    # Random corpora: 80 rows of 5-30 words over 50 ids, 1-4 references each (padded to R = 4 with absent ones).
    refs = [[list(rng.integers(0, 50, int(rng.integers(5, 31)))) for _ in range(int(rng.integers(1, 5)))]
            for _ in range(80)]
    hyps = [noisy(rng, r[0], 50) for r in refs]
    corpus = list(zip(hyps, refs))
    p, t = pad2(hyps), pad3(refs, r=4)
    for smooth in (False, True):
        add("random_80_refs_1to4", corpus, p, t, smooth=smooth)
    for n in (1, 2, 3, 6):
        add("random_80_refs_1to4", corpus, p, t, n_gram=n)
    add("random_80_refs_1to4", corpus, p, t, weights=[0.4, 0.3, 0.2, 0.1])
    add("random_80_refs_1to4", corpus, p, t, n_gram=2, smooth=True, weights=[0.25, 0.75])
    add("random_80_refs_1to4", corpus, p, t, metric="sacre_bleu_score",
        extra={"tokenize": Quoted("none"), "lowercase": True})
    # One reference a row as [N, L], int32, padding scattered inside rows.
    one = [(h, [r[0]]) for h, r in corpus]
    add("random_80_one_ref_2d_int32_scattered_pad", one, pad2(hyps, 40, "int32", rng),
        pad2([r[0] for r in refs], 36, "int32", rng))
    # Short hypotheses: the brevity penalty.
    short = [(h[: max(1, len(h) // 2)], r) for h, r in corpus]
    add("random_80_short_hypotheses", short, pad2([h for h, _ in short]), pad3(refs, r=4))
    # Repeated words: clipping by the most in any one reference.
    rep = [([1, 1, 1, 1, 2, 2, 3], [[1, 1, 2, 3, 4], [1, 2, 2, 2, 3, 1]]), ([5, 5, 5, 5], [[5, 6], [6, 5, 5, 7]])]
    add("repeated_words_clipped", rep, pad2([h for h, _ in rep]), pad3([r for _, r in rep]), n_gram=2)
    # A higher order without a match: 0 (smoothed or not).
    nom = [([1, 2, 3, 4], [[1, 2, 4, 3]])]
    for smooth in (False, True):
        v = add("no_trigram_match", nom, pad2([nom[0][0]]), pad3([nom[0][1]]), smooth=smooth)
        assert v == 0.0
    # Two references equally close but of different lengths: TorchMetrics takes the first.
    tie = [([1, 2, 3, 4, 5, 6], [[1, 2, 3, 4, 5, 6, 7, 8], [1, 2, 3, 4]])]
    add("closest_reference_tie_takes_first", tie, pad2([tie[0][0]]), pad3([tie[0][1]]), n_gram=2)
    # Empty hypotheses and references, all-padding rows, one row, identical, ids near int64's limits.
    empt = [([], [[1, 2, 3]]), ([1, 2, 3], [[1, 2, 3]])]
    add("an_empty_hypothesis", empt, pad2([h for h, _ in empt], 4), pad3([r for _, r in empt]), n_gram=2)
    allpad = [([], [[]]), ([], [[]])]
    add("all_padding", allpad, pad2([[], []], 3), pad3([[[]], [[]]], 2))
    ident = [(r[0], [r[0]]) for r in refs[:5]]
    add("identical", ident, pad2([h for h, _ in ident]), pad2([h for h, _ in ident]))
    row = [([7, 8, 9, 10, 11], [[7, 8, 9, 11, 10, 12]])]
    add("one_row", row, pad2([row[0][0]]), pad2([row[0][1][0]]), n_gram=2)
    big = np.iinfo(np.int64).max
    huge = [([big, big - 1, 5, big], [[big, big - 1, 5, big - 1]])]
    add("ids_near_int64_max", huge, pad2([huge[0][0]]), pad3([huge[0][1]]), n_gram=2)
    # Long sequences: L = 4096 over 30 ids.
    long_r = [list(rng.integers(0, 30, 4096))]
    long_h = [noisy(rng, long_r[0], 30, 0.1, 0.05, 0.05)[:4096]]
    lc = [(long_h[0], [long_r[0]])]
    add("long_L4096", lc, pad2(long_h, 4096), pad2(long_r, 4096))
    # Refused inputs.
    S.add("bleu_score__refused_float_preds", "bleu_score",
          {"preds": T(np.zeros((2, 3)), "float32"), "target": pad2([[1, 2], [3]], 3)}, Refused("preds"),
          "refused: token ids must be integers")
    S.add("bleu_score__refused_weights_length", "bleu_score(weights=[0.5, 0.5])",
          {"preds": pad2([[1, 2]]), "target": pad2([[1, 2]])}, Refused("weights"),
          "refused: one weight per order (TorchMetrics' ValueError)")
    S.add("bleu_score__refused_4d_target", "bleu_score",
          {"preds": pad2([[1, 2]]), "target": T(np.zeros((1, 1, 1, 2)), "int64")}, Refused("target"),
          "refused: target must be [N, L] or [N, R, L]")
    S.add("sacre_bleu_score__refused_tokenizer", "sacre_bleu_score(tokenize='spaces')",
          {"preds": pad2([[1, 2]]), "target": pad2([[1, 2]])}, Refused("tokenize"),
          "refused: not one of sacreBLEU's tokenizers")
    return S


def main():
    gen().write_and_report()


if __name__ == "__main__":
    main()
