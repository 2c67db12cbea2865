"""Token-id helpers shared by the text generators (gen_bleu, gen_rouge, gen_chrf, gen_squad, gen_text):
padding id sequences into [N, L] and [N, R, L] arrays, reading them back, and mapping sentences to ids."""
import numpy as np

from gen_fixtures import T


def pad2(seqs, width=None, dtype="int64", rng=None):
    """[N, width] ids, -1 after each sequence; with `rng`, -1 also inserted at random places inside the row."""
    width = width or max([len(s) for s in seqs] + [1])
    out = []
    for s in seqs:
        s = list(s)
        assert len(s) <= width
        if rng is not None:  # padding scattered inside the row too
            for _ in range(width - len(s)):
                s.insert(int(rng.integers(0, len(s) + 1)), -1)
        out.append(s + [-1] * (width - len(s)))
    return T(np.array(out, np.int64).reshape(len(seqs), width), dtype)


def pad3(refs, width=None, r=None, dtype="int64", rng=None, slots=None):
    """refs [[ids, ...]] -> [N, R, width], each reference padded as pad2 pads a row (the remaining slots all -1);
    `slots[i]` the positions of row i's references (default: the first ones)."""
    r = r or max(len(x) for x in refs)
    width = width or max([len(s) for x in refs for s in x] + [1])
    out = np.full((len(refs), r, width), -1, np.int64)
    for i, x in enumerate(refs):
        pos = slots[i] if slots is not None else range(len(x))
        for j, s in zip(pos, x):
            out[i, j] = pad2([s], width, "int64", rng).a[0]
    return T(out, dtype)


def decode(preds, target):
    """[(hyp ids, [present reference ids, ...])] from the padded arrays preds [N, L] and target [N, L] or
    [N, R, L]."""
    P, Tt = preds.a, target.a
    assert P.ndim == 2 and Tt.ndim in (2, 3) and P.shape[0] == Tt.shape[0]
    rows = []
    for i in range(P.shape[0]):
        hyp = [int(v) for v in P[i] if v >= 0]  # Tally: a negative id is padding, skipped wherever it stands
        refs = [[int(v) for v in r if v >= 0] for r in (Tt[i:i + 1] if Tt.ndim == 2 else Tt[i])]
        present = [r for r in refs if r]
        # Tally: an all-padding reference is absent, unless every reference of the row is (one empty reference)
        rows.append((hyp, present or [[]]))
    return rows


def vocab_ids(sentences, tokens=str.split):
    """Each sentence's tokens (`tokens(sentence)`) as ids, one vocabulary in order of first appearance."""
    vocab = {}
    return [[vocab.setdefault(tok, len(vocab)) for tok in tokens(s)] for s in sentences]


def noisy(rng, seq, vocab, p_sub=0.2, p_del=0.1, p_ins=0.1):
    """seq with each id substituted (a random id below `vocab`) with probability p_sub, else deleted with p_del,
    then a random id inserted after it with p_ins; draws from `rng` in that order, id by id."""
    out = []
    for w in seq:
        x = rng.random()
        if x < p_sub:
            out.append(int(rng.integers(0, vocab)))
        elif x >= p_sub + p_del:
            out.append(w)
        if rng.random() < p_ins:
            out.append(int(rng.integers(0, vocab)))
    return out
