"""Verifies that the README's examples are what they say (README.md, "From
C++" and "From the command line"): its ```cpp block is examples/readme/main.cc
verbatim and the program built from that file prints the README's ```json
block; its ```sh block, run as written, prints the ```text block; both print
the accuracy and macro F1 worked out by hand below, over the same rows. Also
that the README keeps CI's test command and stays short."""

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from fractions import Fraction

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_testing as dt  # noqa: E402

README = "README.md"
MAIN_CC = "examples/readme/main.cc"
CPP_BINARY = "examples/readme/readme"
TALLY = "tools/tally/tally"
NPY = ("examples/readme/preds.npy", "examples/readme/target.npy")

# The rows of the example, worked out by hand:
#   preds  = [0, 2, 1, 2, 0, 1, 1, 0]
#   target = [0, 1, 1, 2, 0, 2, 1, 0]
# Rows 1 and 5 are wrong, so the (micro) accuracy is 6/8 = 0.75.
# Per class (tp, fp, fn): class 0 (3, 0, 0) -> F1 1; class 1 predicted in rows
# 2, 5, 6 and true in rows 1, 2, 6: (2, 1, 1) -> F1 2/3; class 2 predicted in
# rows 1, 3 and true in rows 3, 5: (1, 1, 1) -> F1 1/2. Macro F1 =
# (1 + 2/3 + 1/2) / 3 = 13/18.
PREDS = [0, 2, 1, 2, 0, 1, 1, 0]
TARGET = [0, 1, 1, 2, 0, 2, 1, 0]
ACCURACY = Fraction(3, 4)
MACRO_F1 = Fraction(13, 18)
ACCURACY_SPEC = "multiclass_accuracy(num_classes=3, average=micro)"
F1_SPEC = "multiclass_f1_score(num_classes=3, average=macro)"

# The two commands as the README has always given them: CI (.ci/run) calls
# the second, so it must not change.
SETUP_LINE = "    scripts/setup    # installs the Debian packages if missing, builds, runs `tally eval` on demo data\n"
TEST_LINE = "    scripts/test     # runs the whole test suite; the last line is `tests: N passed, M failed`\n"


def one_block(text, info):
    blocks = [body for i, body, _, _ in dt.fenced_blocks(text) if i == info]
    if len(blocks) != 1:
        raise AssertionError(f"README.md has {len(blocks)} ```{info} blocks, want exactly 1")
    return blocks[0]


def by_hand(preds, target, classes=3):
    """(accuracy, macro F1) of labels, as exact fractions."""
    accuracy = Fraction(sum(p == t for p, t in zip(preds, target)), len(target))
    f1 = []
    for c in range(classes):
        tp = sum(p == c and t == c for p, t in zip(preds, target))
        fp = sum(p == c and t != c for p, t in zip(preds, target))
        fn = sum(p != c and t == c for p, t in zip(preds, target))
        f1.append(Fraction(2 * tp, 2 * tp + fp + fn))
    return accuracy, sum(f1) / classes


class ReadmeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.readme = dt.read(README)
        cls.main_cc = dt.read(MAIN_CC)

    def assertValues(self, values):
        self.assertEqual(set(values), {ACCURACY_SPEC, F1_SPEC})
        self.assertAlmostEqual(values[ACCURACY_SPEC], float(ACCURACY), delta=1e-12)
        self.assertAlmostEqual(values[F1_SPEC], float(MACRO_F1), delta=1e-12)

    def test_the_worked_numbers(self):
        # Verifies the comment's arithmetic, and that the C++ example and the
        # .npy files of the command-line example hold those rows.
        self.assertEqual(by_hand(PREDS, TARGET), (ACCURACY, MACRO_F1))
        lists = re.findall(r"at::tensor\(\{([^}]*)\}", self.main_cc)
        self.assertEqual([[int(x) for x in l.split(",")] for l in lists], [PREDS, TARGET])
        import numpy as np

        for path, want in zip(NPY, (PREDS, TARGET)):
            a = np.load(path)
            self.assertEqual(a.dtype, np.int64, path)
            self.assertEqual(a.tolist(), want, path)

    def test_cpp_block_is_the_example_file(self):
        self.assertEqual(one_block(self.readme, "cpp"), self.main_cc)
        self.assertLessEqual(len(self.main_cc.splitlines()), 13, "the README's C++ example should stay about 10 lines")

    def test_cpp_example_prints_what_the_readme_shows(self):
        r = subprocess.run([CPP_BINARY], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, one_block(self.readme, "json"))
        self.assertValues({x["metric"]: x["value"] for x in json.loads(r.stdout)["results"]})

    def test_cli_example_runs_as_written(self):
        # The ```sh block runs verbatim from a directory where its paths
        # (bazel-bin/tools/tally/tally, examples/readme/*.npy) lead to the
        # built binary and the committed arrays.
        block = one_block(self.readme, "sh")
        self.assertLessEqual(len(block.splitlines()), 3)
        self.assertTrue(block.startswith("bazel-bin/tools/tally/tally eval "), block)
        with tempfile.TemporaryDirectory(dir=os.environ.get("TEST_TMPDIR")) as d:
            os.makedirs(os.path.join(d, "bazel-bin/tools/tally"))
            os.symlink(os.path.abspath(TALLY), os.path.join(d, "bazel-bin/tools/tally/tally"))
            os.makedirs(os.path.join(d, "examples/readme"))
            for path in NPY:
                os.symlink(os.path.abspath(path), os.path.join(d, path))
            r = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=d, capture_output=True, text=True,
                               timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, one_block(self.readme, "text"))
        rows = [line.split() for line in r.stdout.splitlines()[2:]]
        self.assertValues({spec: float(v) for spec, v in [(" ".join(row[:-1]), row[-1]) for row in rows]})

    def test_the_two_commands_are_cis(self):
        lines = self.readme.splitlines(keepends=True)
        self.assertIn(SETUP_LINE, lines)
        self.assertIn(TEST_LINE, lines)
        ci = dt.read(os.path.join(dt.source_root(), ".ci/run"))
        self.assertRegex(ci, r"(?m)^scripts/setup --no-run\b")
        self.assertRegex(ci, r"(?m)^scripts/test\b")

    def test_short(self):
        n = len(self.readme.splitlines())
        self.assertTrue(100 <= n <= 150, f"README.md has {n} lines; keep it at 100-150 and move the rest into docs/")


if __name__ == "__main__":
    unittest.main()
