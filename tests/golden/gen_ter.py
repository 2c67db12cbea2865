#!/usr/bin/env python3
"""Golden fixtures for the translation edit rate over token ids: translation_edit_rate.

Regenerate (needs numpy, as the other scripts here):

    /usr/bin/python3 tests/golden/gen_ter.py

Output, in the case format of tests/golden/README.md: tests/golden/fixtures/ter.json -- translation_edit_rate(
normalize, no_punctuation, lowercase, asian_support, return_sentence_level_score) over integer word ids, a negative
id padding wherever it stands: `preds` [N, Lp] and `target` [N, Lt] (one reference a row) or [N, R, Lt]
(R references), int64 or int32.
An all-padding reference is absent, unless every reference of the row is, and then the row has one empty
reference. Words compare by id equality. The four flags act on the text before it is split into words, so they
change nothing over ids; cases assert that several flag values give the same number. The result is one float64
number, the corpus TER; with return_sentence_level_score=true it is TorchMetrics' tuple (corpus TER, list of
sentence TERs) written as the nested list [corpus, [s_1, ..., s_N]] (float64, rows in input order; no rows give
[0.0, []], where TorchMetrics returns the bare corpus value). Those cases come last and reuse the inputs of earlier
cases; their corpus value is asserted equal to the earlier case's.

Realistic cases start from sentences and compute the ids as TorchMetrics tokenizes (src/torchmetrics/functional/
text/ter.py, v1.5.2, `_TercomTokenizer` and `_preprocess_sentence`, ported here): rstrip(); lower() when lowercase;
with normalize the general/western rules (line joins, the XML entities &quot; &amp; &lt; &gt;, a space around
most ASCII punctuation, the possessive 's, a period or comma split off unless between digits, a dash split off
after a digit); with no_punctuation the characters .,?:;!"() removed; whitespace collapsed; then split(). The
sentences are ASCII, so asian_support changes no word (asserted); its rules are not ported. Words map to ids, one
vocabulary a case. Other cases are random ids (token_id_cases.noisy).

The reference is TER written here from the published algorithm (Snover et al. 2006, as tercom and sacreBLEU run
it: greedy shifts of word spans, each chosen by the largest drop of a beam-limited Levenshtein distance, one edit
a shift, then the final distance), with TorchMetrics 1.5.2's rules cited in `# rule:` comments (ter.py and
helper.py in src/torchmetrics/functional/text/). TorchMetrics calls its sentence routine with the REFERENCE words
first, so the shifts move reference words towards the hypothesis, the Levenshtein table has the reference words as
rows and the hypothesis words as columns, and an empty hypothesis gives 0 edits against any reference (the `quirk`
cases). Per row: edits = the minimum over its references, length = the mean of its references' lengths; corpus:
TER = sum of edits / sum of mean lengths, 1 when the length sum is 0 and edits > 0, else 0 (also for no rows);
a sentence TER is the same rule on one row's edits and mean length (0 for an empty hypothesis, 1 for a non-empty
hypothesis whose references are all empty). The ratios are computed in exact rationals (fractions.Fraction) and
rounded once to float64.

Cross-checks: each pair's edits are at most the beam-limited distance without shifts (shifts are kept only when
they lower it), at most the plain full-table Levenshtein distance when the beam does not bind, and equal to the
longer length (no shift) when hypothesis and reference share no id; a run without the prefix cache gives the same
edits on the small cases; TorchMetrics' docstring example is a case (2/13 = 0.15384615384615385). The suite
asserts that rows' best references need shifts in some cases (and that all three branches of `_perform_shift`
are tried), that the beam binds in exactly two cases (a 120-word hypothesis against a 3-word reference: 120 edits,
not 117; and `float_pseudo_diagonal_beam`, where the row window follows floor(i * (m / n)) in float64, which is
one below floor(i * m / n) there, and the result is 122 edits where the exact window would give 121), that the
1,000-candidate limit is reached with a shift of positive gain left unapplied (`candidate_limit_quirk`), and that
the 50-position shift distance limit changes a result. TorchMetrics itself is not used.
"""
import math
import os
import re
import sys
from fractions import Fraction

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_fixtures import Refused, Suite, T, spec  # noqa: E402
from token_id_cases import decode, noisy, pad2, pad3, vocab_ids  # noqa: E402

RT, AT = 1e-12, 1e-15
DEFAULTS = {"normalize": False, "no_punctuation": False, "lowercase": True, "asian_support": False}

# rule: _BEAM_WIDTH = 25; _INT_INFINITY = int(1e16) marks a cell outside the beam -- helper.py
BEAM_WIDTH = 25
UNDEFINED = 10 ** 16
# rule: _MAX_SHIFT_SIZE = 10 (spans of 1..9 words: range(1, 10)), _MAX_SHIFT_DIST = 50, _MAX_SHIFT_CANDIDATES = 1000
# -- ter.py
MAX_SHIFT_SIZE = 10
MAX_SHIFT_DIST = 50
MAX_CANDIDATES = 1000

# edit operations of a table cell
NOTHING, SUBSTITUTE, DELETE, INSERT, NONE = range(5)


# ------------------------------------------------------------------------------------------------
# TorchMetrics' tokenization (strings -> words), for the realistic cases
# ------------------------------------------------------------------------------------------------
# rule: normalize puts a space on both sides of each character of [{-~[-` -&(-+:-@/] -- ter.py
# (_normalize_general_and_western); that class spelled out:
SPACED = set("{|}~" + "[\\]^_`" + " !\"#$%&" + "()*+" + ":;<=>?@" + "/")
# rule: no_punctuation removes [.,?:;!"()] -- ter.py (_remove_punct)
REMOVED = set(".,?:;!\"()")


def normalize_western(s):
    # rule: the sentence is padded with one space each side, then the rules run in order -- ter.py
    # (_normalize_general_and_western)
    s = f" {s} "
    s = s.replace("\n-", "").replace("\n", " ")  # rule: "\n-" joined, then "\n" -> " "
    for ent, ch in (("&quot;", '"'), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">")):
        s = s.replace(ent, ch)  # rule: XML escapes, in this order
    s = "".join(f" {c} " if c in SPACED else c for c in s)
    s = re.sub(r"'s ", " 's ", s)  # rule: possessive
    s = re.sub(r"'s$", " 's", s)
    s = re.sub(r"([^0-9])([.,])", r"\1 \2 ", s)  # rule: period/comma split unless preceded by a digit
    s = re.sub(r"([.,])([^0-9])", r" \1 \2", s)  # rule: ... unless followed by a digit
    return re.sub(r"([0-9])(-)", r"\1 \2 ", s)  # rule: dash split after a digit


def tm_words(sentence, normalize=False, no_punctuation=False, lowercase=True, asian_support=False):
    """The words TorchMetrics compares for one sentence."""
    # rule: _preprocess_sentence calls the tokenizer on sentence.rstrip(); an empty sentence gives "" -- ter.py
    s = sentence.rstrip()
    if not s:
        return []
    assert s.isascii()  # asian_support only acts on CJK characters and CJK/full-width punctuation
    if lowercase:
        s = s.lower()  # rule: lower() first -- ter.py (_TercomTokenizer.__call__)
    if normalize:
        s = normalize_western(s)
    if no_punctuation:
        s = "".join(c for c in s if c not in REMOVED)
    # rule: " ".join(sentence.split()), then .split() in _ter_update -- ter.py
    return " ".join(s.split()).split()


# ------------------------------------------------------------------------------------------------
# the reference
# ------------------------------------------------------------------------------------------------
def full_levenshtein(a, b):
    """Plain full-table edit distance, for the cross-checks."""
    prev = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, y in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y))
        prev = cur
    return prev[-1]


class BeamDistance:
    """The beam-limited Levenshtein table turning `rows` (a sequence of a fixed length n) into `cols`.

    The rows of the last sequence are kept: a row i depends only on rows[:i] (and n), so the next sequence reuses
    the rows of the common prefix. cache=False recomputes every row (the cross-check)."""

    def __init__(self, cols, n, cache=True, exact_diagonal=False):
        self.cols, self.m, self.n = cols, len(cols), n
        self.exact = exact_diagonal  # floor(i * m / n) in integers: NOT TorchMetrics' rule (a cross-check only)
        # rule: length_ratio = len(reference_tokens) / len(prediction_tokens) in float, 1.0 for an empty prediction
        # -- helper.py (_levenshtein_edit_distance); reference_tokens are the columns here
        self.ratio = self.m / n if n else 1.0
        # rule: beam_width = ceil(length_ratio / 2 + 25) if length_ratio / 2 > 25 else 25 -- helper.py
        self.bw = math.ceil(self.ratio / 2 + BEAM_WIDTH) if self.ratio / 2 > BEAM_WIDTH else BEAM_WIDTH
        # rule: the first row is all insertions, cost j -- helper.py (_get_initial_row)
        self.first = ([j for j in range(self.m + 1)], [INSERT] * (self.m + 1))
        self.seq, self.table, self.cache = [], [self.first], cache

    def row(self, prev, tok, i):
        m, cols = self.m, self.cols
        pc = prev[0]
        cost, ops = [UNDEFINED] * (m + 1), [NONE] * (m + 1)  # rule: cells start (1e16, undefined) -- helper.py
        # rule: pseudo_diag = floor(i * length_ratio) in float; j in [max(0, pd - bw), min(m + 1, pd + bw)), the
        # whole row for the last i -- helper.py
        pd = (i * self.m) // self.n if self.exact else math.floor(i * self.ratio)
        lo = max(0, pd - self.bw)
        hi = m + 1 if i == self.n else min(m + 1, pd + self.bw)
        for j in range(lo, hi):
            if j == 0:
                # rule: column 0 is set to the cell above + 1 unconditionally (1e16 + 1 under an undefined one)
                cost[0], ops[0] = pc[0] + 1, DELETE
                continue
            # rule: candidates in the order diagonal (nothing/substitute), delete (above), insert (left); a
            # candidate replaces the cell only when strictly cheaper -- helper.py (_levenshtein_edit_distance)
            same = tok == cols[j - 1]
            c, o = UNDEFINED, NONE
            d = pc[j - 1] + (0 if same else 1)
            if d < c:
                c, o = d, (NOTHING if same else SUBSTITUTE)
            d = pc[j] + 1
            if d < c:
                c, o = d, DELETE
            d = cost[j - 1] + 1
            if d < c:
                c, o = d, INSERT
            cost[j], ops[j] = c, o
        return cost, ops

    def __call__(self, seq):
        """(distance, trace) of seq (the rows) into the columns; trace as helper.py's _get_trace gives it."""
        assert len(seq) == self.n  # every shifted sequence has the length of the first one
        k = 0
        if self.cache:
            while k < self.n and k < len(self.seq) and seq[k] == self.seq[k]:
                k += 1
        table = self.table[:k + 1]
        for i in range(k + 1, self.n + 1):
            table.append(self.row(table[i - 1], seq[i - 1], i))
        self.seq, self.table = list(seq), table
        # rule: the trace is read back from (n, m): nothing/substitute step both, insert steps j, delete steps i --
        # helper.py (_get_trace)
        trace, i, j = [], self.n, self.m
        while i > 0 or j > 0:
            op = table[i][1][j]
            trace.append(op)
            if op in (NOTHING, SUBSTITUTE):
                i, j = i - 1, j - 1
            elif op == INSERT:
                j -= 1
            elif op == DELETE:
                i -= 1
            else:
                raise AssertionError("trace through an undefined cell")
        trace.reverse()
        return table[self.n][0][self.m], trace


def alignment(trace):
    """(align, col_err, row_err): align[column position] = row position (helper.py's _trace_to_alignment after
    _flip_trace)."""
    # rule: _flip_trace swaps insert and delete; _trace_to_alignment then reads nothing/substitute as a step of both,
    # the flipped insert (our delete: a row word) as a row-only step with an error, the flipped delete (our insert:
    # a column word) as a column-only step with an error that aligns the column to the current row position --
    # helper.py
    r = c = -1
    align, col_err, row_err = {}, [], []
    for op in trace:
        if op in (NOTHING, SUBSTITUTE):
            r, c = r + 1, c + 1
            align[c] = r
            e = 0 if op == NOTHING else 1
            col_err.append(e)
            row_err.append(e)
        elif op == DELETE:
            r += 1
            row_err.append(1)
        else:
            c += 1
            align[c] = r
            col_err.append(1)
    return align, col_err, row_err


def span_pairs(rows, cols):
    """(row start, column start, length) of the equal spans, in TorchMetrics' order."""
    # rule: row start outer, column start inner, a column start more than 50 positions away skipped; length 1..9,
    # stopping at the first mismatch and after a span that reaches the end of either sequence -- ter.py
    # (_find_shifted_pairs)
    for rs in range(len(rows)):
        for cs in range(len(cols)):
            if abs(cs - rs) > MAX_SHIFT_DIST:
                continue
            for ln in range(1, MAX_SHIFT_SIZE):
                if rows[rs + ln - 1] != cols[cs + ln - 1]:
                    break
                yield rs, cs, ln
                if rs + ln == len(rows) or cs + ln == len(cols):
                    break


def move(words, start, ln, to):
    # rule: the three branches of _perform_shift -- ter.py
    if to < start:
        return words[:to] + words[start:start + ln] + words[to:start] + words[start + ln:], 1
    if to > start + ln:
        return words[:start] + words[start + ln:to] + words[start:start + ln] + words[to:], 2
    return words[:start] + words[start + ln:ln + to] + words[start:start + ln] + words[ln + to:], 3


def best_shift(rows, cols, dist, checked, stats):
    """(gain, shifted rows, checked candidates): ter.py's _shift_words."""
    ed, trace = dist(rows)
    align, col_err, row_err = alignment(trace)
    best = None
    for rs, cs, ln in span_pairs(rows, cols):
        # rule: skip a span without an error on the row side, or without an error on the column side, or whose
        # column start is aligned inside the span itself -- ter.py (_handle_corner_cases_during_shifting)
        if sum(row_err[rs:rs + ln]) == 0 or sum(col_err[cs:cs + ln]) == 0 or rs <= align[cs] < rs + ln:
            continue
        prev = -1
        for off in range(-1, ln):
            # rule: the destination is 0 before column 0, else the row aligned to column cs + off, plus 1; the same
            # destination twice in a row is skipped -- ter.py (_shift_words)
            if cs + off == -1:
                to = 0
            elif cs + off in align:
                to = align[cs + off] + 1
            else:
                break
            if to == prev:
                continue
            prev = to
            shifted, branch = move(rows, rs, ln, to)
            stats["branches"].add(branch)
            # rule: candidates ranked by the tuple (gain, length, -row start, -destination, shifted words), the
            # largest first; a candidate replaces the best only when strictly greater -- ter.py (_shift_words).
            # Equal first four entries imply equal shifted words, so the list comparison never decides.
            cand = (ed - dist(shifted)[0], ln, -rs, -to, shifted)
            checked += 1
            if best is None or cand > best:
                best = cand
        # rule: the candidate count runs over the whole sentence pair; the search stops once it reaches 1000 --
        # ter.py (_shift_words)
        if checked >= MAX_CANDIDATES:
            break
    if best is None:
        return 0, rows, checked
    return best[0], best[4], checked


def new_stats():
    """What the suite asserts it covers: shift branches, shifts (in all pairs / in the rows' best pairs), pairs
    that reach the candidate limit (with a positive gain dropped), pairs where the beam binds."""
    return {"branches": set(), "shifts": 0, "chosen_shifts": 0, "limit": 0, "limit_dropped": 0, "beam": 0,
            "last_shifts": 0}


def pair_edits(ref, hyp, stats=None, cache=True):
    """The edits of one reference against the hypothesis, as TorchMetrics computes them."""
    stats = stats if stats is not None else new_stats()
    # rule: _compute_sentence_statistics calls _translation_edit_rate(tgt_words, pred_words): the reference words
    # are the ones shifted (the table rows), the hypothesis words the fixed columns -- ter.py
    rows, cols = list(ref), list(hyp)
    stats["last_shifts"] = 0
    # rule: `if len(target_words) == 0: return tensor(0.0)` -- with the swapped arguments, an empty HYPOTHESIS
    # gives 0 edits -- ter.py (_translation_edit_rate)
    if not cols:
        return 0
    dist = BeamDistance(cols, len(rows), cache)
    shifts, checked = 0, 0
    while True:
        gain, shifted, checked = best_shift(rows, cols, dist, checked, stats)
        # rule: stop when the best gain is <= 0 or the candidate count has reached 1000 -- in the latter case the
        # shift just found is NOT applied, even with a positive gain -- ter.py (_translation_edit_rate)
        if checked >= MAX_CANDIDATES or gain <= 0:
            if checked >= MAX_CANDIDATES:
                stats["limit"] += 1
                stats["limit_dropped"] += gain > 0
            break
        shifts += 1
        rows = shifted
    ed, _ = dist(rows)
    stats["shifts"] += shifts
    stats["last_shifts"] = shifts
    # rule: total edits = number of shifts + the final distance -- ter.py (_translation_edit_rate)
    total = shifts + ed

    # cross-checks
    ed0, _ = BeamDistance(cols, len(ref), cache=False)(list(ref))
    full = full_levenshtein(ref, hyp)
    assert ed0 >= full and total <= ed0, (total, ed0, full)
    if ed0 == full:
        assert total <= full
    else:
        stats["beam"] += 1
    if not set(ref) & set(hyp):
        assert total == ed0 == max(len(ref), len(hyp)) and shifts == 0
    return total


def ter_score(edits, length):
    """The TER of (edits, length as a Fraction), rounded once to float64."""
    # rule: edits / length if length > 0 and edits > 0; 1 if length == 0 and edits > 0; else 0 -- ter.py
    # (_compute_ter_score_from_statistics; used for the corpus and, with return_sentence_level_score, for each row)
    if length > 0 and edits > 0:
        return float(Fraction(edits) / length)
    if length == 0 and edits > 0:
        return 1.0
    return 0.0


def ter(rows, stats=None, cache=True, per_row=None):
    """rows: [(hyp ids, [present ref ids, ...])] -> (value, total edits, total length as a Fraction). per_row, a
    list, receives each row's (edits, length as a Fraction) in row order."""
    stats = stats if stats is not None else new_stats()
    edits, length = 0, Fraction(0)
    for hyp, refs in rows:
        # rule: the row's edits are the minimum over its references (first strictly smaller than 2e16, then than
        # the best so far); its length the sum of the reference lengths / the number of references -- ter.py
        # (_compute_sentence_statistics)
        per_ref = []
        for r in refs:
            per_ref.append((pair_edits(r, hyp, stats, cache), stats["last_shifts"]))
        best = min(per_ref, key=lambda x: x[0])  # the first minimum
        row_length = Fraction(sum(len(r) for r in refs), len(refs))
        edits += best[0]
        stats["chosen_shifts"] += best[1]
        length += row_length
        if per_row is not None:
            per_row.append((best[0], row_length))
    return ter_score(edits, length), edits, length


def sentence_ter(rows, stats=None):
    """return_sentence_level_score=True: [corpus TER, [TER of each row, in row order]]."""
    per_row = []
    value, edits, length = ter(rows, stats, per_row=per_row)
    assert sum(e for e, _ in per_row) == edits and sum(l for _, l in per_row) == length
    # rule: with sentence_ter a list, _ter_update appends _compute_ter_score_from_statistics(num_edits, tgt_length)
    # of each sentence (its best edits and its mean reference length); functional translation_edit_rate returns
    # (corpus TER, that list) -- ter.py (_ter_update, translation_edit_rate)
    return [value, [ter_score(e, l) for e, l in per_row]]


# ------------------------------------------------------------------------------------------------
# inputs
# ------------------------------------------------------------------------------------------------
def sentence_ids(hyps, refs, **flags):
    """Sentences -> (hyp ids, [[ref ids]]) with one vocabulary for the case."""
    words = [tm_words(s, **flags) for s in hyps] + [tm_words(s, **flags) for rs in refs for s in rs]
    ids = vocab_ids(words, tokens=lambda w: w)
    h, rest = ids[:len(hyps)], ids[len(hyps):]
    out, k = [], 0
    for rs in refs:
        out.append(rest[k:k + len(rs)])
        k += len(rs)
    return h, out


def inputs_of(h, r, two_d=False, dtype="int64", rng=None, widths=(None, None), r_slots=None, slots=None):
    if two_d:
        assert all(len(x) == 1 for x in r)
        t = pad2([x[0] for x in r], widths[1], dtype, rng)
    else:
        t = pad3(r, widths[1], r_slots, dtype, rng, slots)
    return {"preds": pad2(h, widths[0], dtype, rng), "target": t}


def corpus_inputs(hyps, refs, flags=None, **kw):
    return inputs_of(*sentence_ids(hyps, refs, **(flags or {})), **kw)


SENTENCES = [
    ("Yesterday, the committee approved the new budget.",
     ["The committee approved the new budget yesterday.",
      "The new budget was approved by the committee yesterday."]),
    ("It's 3.5 degrees warmer than last year, the report says.",
     ["The report says it's 3.5 degrees warmer than last year.",
      "According to the report, it is 3.5 degrees warmer than a year ago."]),
    ("The score was 1-2 at half time; \"a disaster\", said the coach.",
     ["\"A disaster,\" said the coach: the score was 1-2 at half time.", "At half time the score was 1-2."]),
    ("In the morning she reads the paper and drinks her coffee.",
     ["She reads the paper in the morning and drinks her coffee.",
      "She drinks her coffee and reads the paper in the morning."]),
    ("The children's books are on the top shelf, next to the maps.",
     ["Next to the maps, on the top shelf, are the children's books."]),
    ("Prices rose by 2.5% in May (the highest rise since 2019).",
     ["In May prices rose by 2.5%, the highest rise since 2019.", "Prices went up 2.5 % in May.",
      "Since 2019, no rise was higher than May's 2.5%."]),
    ("The the cat sat on on the mat mat.", ["The cat sat on the mat.", "On the mat sat the cat."]),
    ("Please send the file to me before Friday.",
     ["Before Friday, please send me the file.", "Send the file to me by Friday, please."]),
]


def gen():
    S = Suite("ter.json")
    rng = np.random.default_rng(2006)
    src = "TER from the published algorithm (Snover et al. 2006; tercom/sacreBLEU shifts) with TorchMetrics' rules"
    stats = new_stats()
    shifted_cases, beam_cases = [], []
    plain = {}  # case name -> corpus value, for the return_sentence_level_score cases

    def add(tag, inputs, **kw):
        args = {k: v for k, v in kw.items() if v != DEFAULTS[k]}
        before_shifts, before_beam = stats["chosen_shifts"], stats["beam"]
        value, _, _ = ter(decode(inputs["preds"], inputs["target"]), stats)
        argtag = "".join(f"_{k}-{str(v).lower()}" for k, v in args.items())
        name = f"translation_edit_rate{argtag}__{tag}"
        if stats["chosen_shifts"] > before_shifts:  # a row's best reference needed shifts
            shifted_cases.append(name)
        if stats["beam"] > before_beam:
            beam_cases.append(name)
        S.add(name, spec("translation_edit_rate", args), inputs, value, src, rtol=RT, atol=AT)
        plain[name] = value
        return value

    # TorchMetrics' docstring example: the second reference needs 1 edit, the mean length is 6.5.
    doc = corpus_inputs(["the cat is on the mat"], [["there is a cat on the mat", "a cat is on the mat"]])
    v = add("docstring_example", doc)
    assert v == 2 / 13 == 0.15384615384615385, v

    # Realistic sentences: reordered phrases (shifts), punctuation, case, numbers, possessives, quotes.
    hyps, refs = [h for h, _ in SENTENCES], [r for _, r in SENTENCES]
    news = corpus_inputs(hyps, refs, r_slots=3)
    v = add("sentences_refs_1to3", news)
    for kw in ({"lowercase": False}, {"normalize": True}, {"no_punctuation": True}, {"asian_support": True},
               {"normalize": True, "no_punctuation": True, "lowercase": False, "asian_support": True}):
        assert add("sentences_refs_1to3", news, **kw) == v  # the flags act before the ids
    # The ids of the sentences tokenized under each flag (and the same number under the default flags).
    for flags in ({"lowercase": False}, {"normalize": True}, {"no_punctuation": True},
                  {"normalize": True, "no_punctuation": True}, {"asian_support": True}):
        x = corpus_inputs(hyps, refs, flags, r_slots=3)
        tag = "sentences_refs_1to3_tokenized_" + "_".join(k for k in flags)
        vf = add(tag, x, **flags)
        assert ter(decode(x["preds"], x["target"]))[0] == vf
        if flags == {"asian_support": True}:
            assert vf == v and x["target"].a.tolist() == news["target"].a.tolist()
        else:
            assert vf != v
    # Escaped quotes: normalize turns &quot; into a separate '"'.
    qh = ["He said &quot;no&quot; twice, then left."]
    qr = [["&quot;No,&quot; he said twice and left.", "He left after saying \"no\" twice."]]
    add("xml_entities_tokenized_normalize", corpus_inputs(qh, qr, {"normalize": True}), normalize=True)

    # A phrase moved from the start to the end: each shift costs 1 instead of 2 edits a word.
    ph = ["on monday morning the minister will open the new bridge over the river"]
    pr = [["the minister will open the new bridge over the river on monday morning"]]
    v = add("phrase_moved_to_end", corpus_inputs(ph, pr, two_d=True))
    assert v == 1 / 13, v  # one shift of 3 words, 13 reference words
    # Shift limits. Spans of at most 9 words: a 12-word phrase takes two shifts.
    lp = ["at the end of the long and very cold winter of that year the lake froze over completely"]
    lrr = [["the lake froze over completely at the end of the long and very cold winter of that year"]]
    add("long_phrase_two_shifts", corpus_inputs(lp, lrr, two_d=True))
    # Shift distance: a 3-word phrase moved across 40 words is one shift; across 60 words (more than 50 positions)
    # it cannot be shifted as a whole.
    filler = [f"w{k}" for k in range(70)]
    near, far = " ".join(filler[:40]), " ".join(filler[:60])
    d40 = add("shift_distance_40", corpus_inputs([f"alpha beta gamma {near}"], [[f"{near} alpha beta gamma"]],
                                                 two_d=True))
    d60 = add("shift_distance_60", corpus_inputs([f"alpha beta gamma {far}"], [[f"{far} alpha beta gamma"]],
                                                 two_d=True))
    assert d40 == 1 / 43 and d60 > 1 / 63, (d40, d60)

    # Several references (1-4) in random slots of R = 4; absent slots all padding.
    rr = [[s for s in [r[0]] + [h] + r[1:]][:k] for (h, r), k in zip(SENTENCES, (1, 2, 3, 4, 1, 4, 3, 2))]
    slots = [sorted(rng.choice(4, len(x), replace=False).tolist()) for x in rr]
    mh = [noisy_sentence(rng, h) for h in hyps]
    ref14 = corpus_inputs(mh, rr, r_slots=4, slots=slots)
    add("refs_1to4_random_slots", ref14)
    add("absent_reference_among_others", corpus_inputs([hyps[0]], [["", refs[0][0], ""]], r_slots=3))

    # Repeated words: ties between candidates of the same gain.
    rh = ["a b a b a b c c a b", "the the the cat the the dog the"]
    rrf = [["c c a b a b a b a b", "b a b a c a b a b c"], ["the cat the the the dog the the the"]]
    add("repeated_words_ties", corpus_inputs(rh, rrf, r_slots=2))
    # The third branch of the shift (a destination inside the span or right after it).
    add("shift_within_span", inputs_of([[1, 2, 3, 4, 1, 2]], [[[3, 4, 1, 2, 1, 2]]]))

    # Lengths far apart: 3 hypothesis words against 120 reference words and 120 against 3. The beam binds in the
    # second: the table rows are the 3 reference words, and the columns 1-3 (where they match) lie outside the
    # beam of rows 1 and 2 (length ratio 40: columns 15..64 and 55..104), so the distance is 120, not 117.
    many = [f"v{k % 37}" for k in range(120)]
    add("hyp_3_ref_120", corpus_inputs(["v1 v2 v3"], [[" ".join(many)]], two_d=True))
    long_hyp = " ".join(["v0", "v1", "v2"] + [f"u{k}" for k in range(117)])
    v = add("hyp_120_ref_3_beam", corpus_inputs([long_hyp], [["v0 v1 v2"]], two_d=True))
    assert v == 40.0, v
    assert full_levenshtein([0, 1, 2], [0, 1, 2] + [9] * 117) == 117

    # The float pseudo-diagonal: 14 reference words (rows) against 122 hypothesis words (columns), one common word
    # at reference position 7 and hypothesis position 85 (78 apart: no shift). The beam of row 7 is floor(7 * r)
    # +- 25 with r = 122 / 14 in float64; 7 * r is 60.99999999999999, so the row covers columns 35..84, and the
    # diagonal step (7, 85) -> (8, 86) through the match is outside it: 122 edits. With floor(7 * 122 / 14) = 61 in
    # integers the window is 36..85 and the distance 121.
    fr, fh = [f"r{k}" for k in range(14)], [f"h{k}" for k in range(122)]
    fr[7] = fh[85] = "same"
    assert math.floor(7 * (122 / 14)) == 60 and 7 * 122 // 14 == 61
    v = add("float_pseudo_diagonal_beam", corpus_inputs([" ".join(fh)], [[" ".join(fr)]], two_d=True))
    assert v == 122 / 14, v
    ri, hi = [k for k in range(14)], [100 + k for k in range(122)]
    ri[7] = hi[85] = 1000
    assert BeamDistance(hi, 14, exact_diagonal=True)(ri)[0] == full_levenshtein(ri, hi) == 121

    # Random noisy transcripts (token_id_cases.noisy): 50 rows, 1-3 references in R = 3.
    refs_r = [[[int(x) for x in rng.integers(0, 40, int(rng.integers(1, 25)))]
               for _ in range(int(rng.integers(1, 4)))] for _ in range(50)]
    hyps_r = [noisy(rng, r[int(rng.integers(0, len(r)))], 40) for r in refs_r]
    base = inputs_of(hyps_r, refs_r, r_slots=3)
    vb = add("random_noisy_50_refs_1to3", base)
    # The same ids in int32 with padding scattered inside the rows.
    sc = inputs_of(hyps_r, refs_r, dtype="int32", rng=rng, widths=(40, 40), r_slots=3)
    assert add("random_noisy_50_refs_1to3_int32_scattered_pad", sc) == vb
    # One reference a row as [N, L] (int32, scattered padding) and as [N, 1, L].
    one = [[r[0]] for r in refs_r]
    v = add("random_noisy_50_one_ref_2d_int32_scattered_pad",
            inputs_of(hyps_r, one, two_d=True, dtype="int32", rng=rng, widths=(40, 40)))
    assert add("random_noisy_50_one_ref_3d", inputs_of(hyps_r, one)) == v
    # Reordered random rows: blocks of the reference swapped, with noise (many shifts).
    bh, br = [], []
    for _ in range(20):
        r = [int(x) for x in rng.integers(0, 30, int(rng.integers(8, 30)))]
        a, b = sorted(rng.choice(len(r), 2, replace=False).tolist())
        bh.append(noisy(rng, r[b:] + r[a:b] + r[:a], 30, 0.05, 0.05, 0.05))
        br.append([r])
    add("random_blocks_swapped_20", inputs_of(bh, br))
    # Disjoint vocabularies: no shift, the edits are the longer length.
    add("disjoint_ids", inputs_of([[1, 2, 3], [4, 5]], [[[6, 7]], [[8, 9, 10, 11]]]))

    # Long rows: about 300 words, a reordered noisy copy (candidate limit reached in some pairs).
    lref = [[int(x) for x in rng.integers(0, 60, 300)]]
    lhyp = noisy(rng, lref[0][150:] + lref[0][:150], 60, 0.05, 0.03, 0.03)
    before = stats["limit"]
    add("long_300_words", inputs_of([lhyp], [lref]))
    assert stats["limit"] > before
    # Many repeated words: the 1,000-candidate limit reached while a shift would still help.
    # Two ids, 56 words: the reference is the hypothesis with blocks [0, 10), [10, 19), [19, 56) reordered. The
    # first search reaches 1,000 candidates with a best gain > 0 that is not applied: 20 edits, no shift.
    cr = [[[int(c) for c in "01101001010001010111001110000111011001111111001101111011"]]]
    ch = [[int(c) for c in "10011100001110110011111110011011110110001010110110100101"]]
    before = stats["limit_dropped"]
    add("candidate_limit_quirk", inputs_of(ch, cr))
    assert stats["limit_dropped"] > before

    # Empty hypotheses: 0 edits whatever the references (quirk); empty references: edits = the hypothesis length.
    emptyh = corpus_inputs([hyps[1], ""], [refs[1], refs[2]], r_slots=3)
    add("empty_hypothesis_quirk", emptyh)
    assert add("only_empty_hypotheses_quirk", corpus_inputs(["", ""], [refs[1], refs[2]], r_slots=3)) == 0.0
    emptyr = corpus_inputs([hyps[3], hyps[4]], [refs[3], [""]], r_slots=3)
    add("an_empty_reference", emptyr)
    add("an_empty_reference_2d", corpus_inputs([hyps[3], hyps[4]], [[refs[3][0]], [""]], two_d=True))
    onlyr = corpus_inputs([hyps[3]], [["", ""]], r_slots=2)
    assert add("only_empty_references", onlyr) == 1.0
    allpad = inputs_of([[], []], [[[], []], [[]]], r_slots=2)
    assert add("all_padding", allpad) == 0.0
    norows2 = {"preds": T(np.zeros((0, 1)), "int64"), "target": T(np.zeros((0, 1)), "int64")}
    norows3 = {"preds": T(np.zeros((0, 1)), "int64"), "target": T(np.zeros((0, 1, 1)), "int64")}
    assert add("no_rows_2d", norows2) == 0.0
    assert add("no_rows_3d", norows3) == 0.0

    # One row; identical rows (0); ids near int64's maximum.
    onerow = corpus_inputs([hyps[5]], [refs[5][:1]], two_d=True)
    add("one_row", onerow)
    assert add("identical", corpus_inputs([r[0] for r in refs], [[r[0]] for r in refs], two_d=True)) == 0.0
    big = np.iinfo(np.int64).max
    add("ids_near_int64_max", inputs_of([[big, big - 4, 5, big, big - 1, big - 4]],
                                        [[[big - 4, big, big - 1, 5, big], [big - 2, big]]]))

    # The suite covers shifts, the three shift branches, a beam effect, the candidate limit.
    assert len(shifted_cases) >= 5 and stats["branches"] == {1, 2, 3}, (shifted_cases, stats)
    assert beam_cases == ["translation_edit_rate__hyp_120_ref_3_beam",
                          "translation_edit_rate__float_pseudo_diagonal_beam"], beam_cases
    # The prefix cache changes nothing: the small cases again without it.
    for c in S.cases[:40]:
        if "error" in c or len(c["inputs"]["preds"]["data"]) > 2000:
            continue
        ins = {k: T(np.array(v["data"], np.int64).reshape(v["shape"]), v["dtype"]) for k, v in c["inputs"].items()}
        assert ter(decode(ins["preds"], ins["target"]), cache=False)[0] == c["expected"], c["name"]

    # Refused inputs.
    small = inputs_of([[1, 2]], [[[1, 3]]])
    S.add("translation_edit_rate__refused_float_preds", "translation_edit_rate",
          {**small, "preds": T(np.zeros((1, 2)), "float32")}, Refused("translation_edit_rate"),
          "refused: token ids must be integers")
    S.add("translation_edit_rate__refused_float_target", "translation_edit_rate",
          {**small, "target": T(np.zeros((1, 1, 2)), "float64")}, Refused("translation_edit_rate"),
          "refused: token ids must be integers")

    # return_sentence_level_score=true: [corpus TER, [TER of each row]], appended after the cases above. Each reuses
    # the inputs of a case above (the corpus value asserted equal to that case's); a row's TER is its best edits
    # over its mean reference length under the corpus rule (0 for an empty hypothesis, 1 for a non-empty one
    # against all-empty references), in exact rationals rounded once to float64.
    sent_stats = new_stats()

    def add_sentence(tag, inputs, **kw):
        args = {k: v for k, v in kw.items() if v != DEFAULTS[k]}
        base = f"translation_edit_rate{''.join(f'_{k}-{str(v).lower()}' for k, v in args.items())}__{tag}"
        args["return_sentence_level_score"] = True
        argtag = "".join(f"_{k}-{str(v).lower()}" for k, v in args.items())
        rows = decode(inputs["preds"], inputs["target"])
        expected = sentence_ter(rows, sent_stats)
        assert expected[0] == plain[base] == ter(rows)[0], (tag, expected[0], plain[base])
        assert len(expected[1]) == len(rows)
        S.add(f"translation_edit_rate{argtag}__{tag}", spec("translation_edit_rate", args), inputs, 0.0,
              src + "; per row: _compute_ter_score_from_statistics of the row's edits and mean length",
              rtol=RT, atol=AT)
        # a tuple result: one list item a part, the per-row part as long as the rows (curve_outputs.json's layout)
        S.cases[-1]["expected"] = [expected[0], [float(x) for x in expected[1]]]
        return expected

    assert add_sentence("docstring_example", doc) == [2 / 13, [0.15384615384615385]]
    e = add_sentence("sentences_refs_1to3", news)
    assert len(e[1]) == len(SENTENCES) and all(0 < x < 2 for x in e[1]), e
    assert add_sentence("sentences_refs_1to3", news, normalize=True, no_punctuation=True, lowercase=False,
                        asian_support=True) == e
    add_sentence("refs_1to4_random_slots", ref14)
    e = add_sentence("empty_hypothesis_quirk", emptyh)
    assert e[1][0] > 0 and e[1][1] == 0.0, e
    e = add_sentence("an_empty_reference", emptyr)
    assert e[1][0] > 0 and e[1][1] == 1.0, e  # a non-empty hypothesis against an empty reference: 1
    assert add_sentence("only_empty_references", onlyr) == [1.0, [1.0]]
    assert add_sentence("all_padding", allpad) == [0.0, [0.0, 0.0]]
    e = add_sentence("one_row", onerow)
    assert e[1] == [e[0]], e
    # Tally: no rows give [0.0, []] (TorchMetrics returns the bare corpus value when its list is empty: `if
    # sentence_ter:` in translation_edit_rate)
    assert add_sentence("no_rows_2d", norows2) == [0.0, []]
    assert add_sentence("no_rows_3d", norows3) == [0.0, []]
    e = add_sentence("random_noisy_50_refs_1to3_int32_scattered_pad", sc)
    assert len(e[1]) == 50 and len(set(e[1])) > 10, e
    if "-v" in sys.argv:
        print("shifted:", shifted_cases)
        print("beam:", beam_cases, "stats:", stats)
    return S


def noisy_sentence(rng, s):
    """A hypothesis from a sentence: words dropped, doubled or swapped with the next one."""
    w = s.split()
    out, k = [], 0
    while k < len(w):
        x = rng.random()
        if x < 0.1:
            k += 1
            continue
        if x < 0.2 and k + 1 < len(w):
            out += [w[k + 1], w[k]]
            k += 2
            continue
        out.append(w[k])
        if x > 0.93:
            out.append(w[k])
        k += 1
    return " ".join(out)


def main():
    gen().write_and_report()


if __name__ == "__main__":
    main()
