#!/usr/bin/env python3
"""Golden fixtures for perplexity(ignore_index) over logits [B, S, V] and integer targets [B, S].

Regenerate (needs numpy only):

    /usr/bin/python3 tests/golden/gen_perplexity.py

Output, in the case format of tests/golden/README.md: tests/golden/fixtures/perplexity.json.

The reference is the definition in NumPy float64: the log-softmax of each position's logits (the maximum
subtracted, math.fsum of the exponentials), the negative log-likelihood of its target summed with math.fsum over
the positions whose target is not ignore_index, and exp(total / count). TorchMetrics 1.5.2's rules are cited in
`# rule:` comments (src/torchmetrics/functional/text/perplexity.py); TorchMetrics itself is not used (it computes
softmax in the logits' own dtype, so its float16 values are rounded where these are exact). Logits in float16 and
bfloat16 are drawn as values those types hold exactly, and the reference reads them exactly.
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_fixtures as g  # noqa: E402
from gen_fixtures import Refused, Suite, T, spec  # noqa: E402

g._NP["float16"] = np.float16
g._NP["bfloat16"] = np.float32  # values rounded to bfloat16 first (to_bf16), so float32 holds them exactly

RT, AT = 1e-12, 0.0


def to_bf16(x):
    """x (float32) rounded to the nearest bfloat16 (ties to even), as float32."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000
    return b.astype(np.uint32).view(np.float32)


def perplexity(logits, target, ignore_index=None):
    x = np.asarray(logits, np.float64)
    t = np.asarray(target, np.int64)
    v = x.shape[-1]
    x = x.reshape(-1, v)
    t = t.reshape(-1)
    total, count = [], 0
    for row, k in zip(x, t):
        # rule: positions whose target equals ignore_index are left out of the sum and the count
        if ignore_index is not None and k == ignore_index:
            continue
        m = row.max()
        lse = m + math.log(math.fsum(np.exp(row - m)))
        total.append(lse - row[k])
        count += 1
    # rule: perplexity = exp(total / count); no position counted gives exp(0 / 0) = NaN
    if count == 0:
        return float("nan")
    return math.exp(math.fsum(total) / count)


def gen():
    S = Suite("perplexity.json")
    rng = np.random.default_rng(35)

    def add(tag, logits, target, ignore_index=None):
        args = {} if ignore_index is None else {"ignore_index": ignore_index}
        v = perplexity(logits.a, target.a, ignore_index)
        name = "perplexity" + ("" if ignore_index is None else f"_ignore_index-{ignore_index}")
        S.add(f"{name}__{tag}", spec("perplexity", args), {"preds": logits, "target": target}, v,
              "log-softmax in NumPy float64, math.fsum", rtol=RT, atol=AT)

    def logits(shape, dtype, scale=3.0, offset=0.0):
        x = (rng.standard_normal(shape) * scale + offset).astype(np.float32)
        if dtype == "bfloat16":
            x = to_bf16(x)
        return T(x, dtype)

    def targets(b, s, v, dtype="int64"):
        return T(rng.integers(0, v, (b, s)), dtype)

    # The docstring's shape: [2, 8, 5], the last two positions of the first row ignored (-100).
    x = logits((2, 8, 5), "float32")
    t = targets(2, 8, 5)
    t.a[0, 6:] = -100
    add("docstring_shape", x, t, ignore_index=-100)
    t2 = targets(2, 8, 5)
    add("docstring_shape", x, t2)
    for dt in ("float16", "bfloat16", "float64"):
        add(f"random_{dt}", logits((3, 7, 50), dt), targets(3, 7, 50))
    # ignore_index inside the vocabulary: those positions do not count.
    t = targets(4, 6, 10)
    add("ignore_index_in_vocabulary", logits((4, 6, 10), "float32"), t, ignore_index=0)
    # int32 targets (TorchMetrics asks int64; Tally takes any integer ids).
    add("int32_target", logits((2, 5, 9), "float32"), targets(2, 5, 9, "int32"))
    # Large offsets and spreads: log-sum-exp with the maximum taken out.
    add("offset_1e4_float32", logits((2, 4, 30), "float32", 3.0, 1e4), targets(2, 4, 30))
    add("spread_80_float32", logits((2, 4, 30), "float32", 80.0), targets(2, 4, 30))
    # A masked vocabulary: -inf logits (not at the targets).
    x = logits((2, 3, 12), "float32")
    t = targets(2, 3, 12)
    mask = rng.random((2, 3, 12)) < 0.4
    for b in range(2):
        for s in range(3):
            mask[b, s, t.a[b, s]] = False
    x.a[mask] = -np.inf
    add("masked_vocabulary_minus_inf", x, t)
    # One position; every position ignored (NaN).
    add("one_position", logits((1, 1, 7), "float32"), targets(1, 1, 7))
    t = T(np.full((2, 3), -100), "int64")
    add("all_ignored_nan", logits((2, 3, 4), "float32"), t, ignore_index=-100)
    # A large vocabulary at small N: V = 131072, bfloat16, one position.
    add("vocabulary_131072_bfloat16", logits((1, 1, 131072), "bfloat16", 2.0), targets(1, 1, 131072))
    # Refused inputs.
    ok_x = logits((1, 2, 5), "float32")
    S.add("perplexity__refused_target_out_of_range", "perplexity",
          {"preds": ok_x, "target": T(np.array([[1, 5]]), "int64")}, Refused("outside [0, 5)"),
          "refused: a target id past the vocabulary")
    S.add("perplexity__refused_negative_target_without_ignore_index", "perplexity",
          {"preds": ok_x, "target": T(np.array([[1, -100]]), "int64")}, Refused("outside [0, 5)"),
          "refused: -100 is not ignored unless ignore_index says so")
    S.add("perplexity__refused_2d_preds", "perplexity",
          {"preds": T(np.zeros((1, 5)), "float32"), "target": T(np.array([[1, 2]]), "int64")}, Refused("preds"),
          "refused: preds must be [batch_size, seq_len, vocab_size]")
    S.add("perplexity__refused_float_target", "perplexity",
          {"preds": ok_x, "target": T(np.array([[1.0, 2.0]]), "float32")}, Refused("target"),
          "refused: target must be integer ids")
    S.add("perplexity__refused_shape_mismatch", "perplexity",
          {"preds": ok_x, "target": T(np.array([[1, 2, 3]]), "int64")}, Refused("target"),
          "refused: target must be preds' first two dims")
    return S


def main():
    gen().write_and_report()


if __name__ == "__main__":
    main()
