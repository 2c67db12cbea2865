"""Verifies that the documents stay true to the tree:

- docs/contributing.md: every path, Bazel label and name it writes in
  backticks exists in the checkout, and every code block is a verbatim
  excerpt of the file named just before it (`// ...` marks lines left out);
- the layer order is written once, in docs/design.md, and is `LAYERS` of
  scripts/check_layers;
- every relative link of README.md and docs/*.md leads to a file (and a
  heading, for `#anchor`), and none points outside the repository."""

import glob
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_testing as dt  # noqa: E402

# The files whose words a name in the guide may come from: the code, build
# files, scripts and tests, never the documents themselves.
CORPUS_EXTENSIONS = (".h", ".cc", ".py", ".sh", ".ir", ".bazel", ".bzl", ".txt", ".in")
SKIP_DIRS = {".git", "build", "docs", "fixtures", "corpus", "regressions"}


class Tree:
    """The checkout's files and the words of its code."""

    def __init__(self, root):
        self.root = root
        self.basenames = set()
        texts = []
        for d, dirs, files in os.walk(root):
            rel = os.path.relpath(d, root)
            dirs[:] = [x for x in dirs if x not in SKIP_DIRS and not x.startswith("bazel-")
                       and not (rel == "tests" and x == "docs")]
            for f in files:
                self.basenames.add(f)
                path = os.path.join(d, f)
                if f.endswith(CORPUS_EXTENSIONS) or rel in ("scripts", ".ci"):
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        texts.append(fh.read())
        self.text = "\n".join(texts)
        self.words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", self.text))

    def exists(self, rel):
        return bool(glob.glob(os.path.join(self.root, rel)))


def check_span(span, tree):
    """Problems with one `...` span of the guide (an empty list when none)."""
    problems = []
    span = re.sub(r"<[a-z_]+>", "*", span)  # metrics/<domain>/ is a pattern
    for piece in span.split():
        label = re.fullmatch(r"//([\w./-]*):([\w./-]+)", piece)
        if label:
            pkg, name = label.groups()
            build = os.path.join(tree.root, pkg, "BUILD.bazel")
            if not os.path.exists(build):
                problems.append(f"{piece}: no package {pkg}")
            elif not (re.search(r'name\s*=\s*"%s"' % re.escape(name), dt.read(build))
                      or os.path.exists(os.path.join(tree.root, pkg, name))):
                problems.append(f"{piece}: no target {name} in {pkg}/BUILD.bazel")
            continue
        is_path = (re.fullmatch(r"(?=.*\w)[\w.*/-]+", piece) and not piece.startswith(("/", ".", "bazel-"))
                   and ("/" in piece or piece.endswith(dt.FILE_EXTENSIONS)))
        if is_path:
            if "/" in piece:
                if not tree.exists(piece):
                    problems.append(f"{piece}: no such file or folder")
            elif piece not in tree.basenames:
                problems.append(f"{piece}: no file of that name")
            continue
        for kebab in re.findall(r"(?<![\w-])[a-z0-9]+(?:-[a-z0-9]+)+(?![\w-])", piece):
            if kebab not in tree.text:
                problems.append(f"{kebab}: not in the code")
        for word in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", re.sub(r"(?<![\w-])[a-z0-9]+(?:-[a-z0-9]+)+", "", piece)):
            if len(word) > 1 and word not in tree.words:
                problems.append(f"{word} (in `{span}`): not in the code")
    return problems


def normalized(lines):
    return [" ".join(l.split()) for l in lines if l.strip()]


def check_excerpts(text, tree):
    """Problems with the guide's code blocks: each must be a verbatim excerpt
    of the last file named in backticks before it (since the previous block)."""
    problems = []
    prev = 0
    for info, body, start, end in dt.fenced_blocks(text):
        before = text[prev:start]
        prev = end
        named = [p for s in dt.inline_code(before) for p in s.split()
                 if "/" in p and p.endswith(dt.FILE_EXTENSIONS) and not p.startswith(("/", "bazel-"))]
        if not named:
            problems.append(f"a ```{info} block names no file before it: {body.splitlines()[0]!r}")
            continue
        path = os.path.join(tree.root, named[-1])
        if not os.path.exists(path):
            problems.append(f"{named[-1]}: no such file (quoted by a ```{info} block)")
            continue
        have = normalized(dt.read(path).splitlines())
        chunks, chunk = [], []
        for line in body.splitlines():
            if line.strip() in ("// ...", "# ..."):
                chunks.append(chunk)
                chunk = []
            else:
                chunk.append(line)
        chunks.append(chunk)
        at = 0
        for c in chunks:
            want = normalized(c)
            found = next((i for i in range(at, len(have) - len(want) + 1) if have[i:i + len(want)] == want), None)
            if found is None:
                problems.append(f"{named[-1]} does not hold, in order, the quoted lines {want[:2]}...")
                break
            at = found + len(want)
    return problems


LAYER_CHAIN = re.compile(r"->")


class DocsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.root = dt.source_root()
        cls.tree = Tree(cls.root)
        cls.guide = dt.read(os.path.join(cls.root, "docs/contributing.md"))
        cls.documents = {"README.md": dt.read(os.path.join(cls.root, "README.md"))}
        for p in sorted(glob.glob(os.path.join(cls.root, "docs", "*.md"))):
            cls.documents[os.path.relpath(p, cls.root)] = dt.read(p)

    def test_contributing_names_only_what_exists(self):
        spans = dt.inline_code(self.guide)
        self.assertGreater(len(spans), 100)
        problems = [p for s in spans for p in check_span(s, self.tree)]
        self.assertEqual(problems, [], "docs/contributing.md names what the tree does not have")

    def test_contributing_quotes_the_code_verbatim(self):
        self.assertGreaterEqual(len(dt.fenced_blocks(self.guide)), 10)
        self.assertEqual(check_excerpts(self.guide, self.tree), [])

    def test_the_checks_catch_a_stale_guide(self):
        # Verifies that the two checks above can fail: a renamed file, a
        # renamed symbol, a missing target and an edited quote are reported.
        stale = ("`ops/one_hot_ops.cc` defines `OneHotAttributes` and `RegisterIndexOps`; "
                 "`//tests/ops:no_such_test`; `metrics/<domain>/`\n\nIn `ops/attrs.h`:\n\n"
                 "```cpp\nstruct OneHotAttrs {\n  int64_t classes = 0;\n```\n")
        problems = [p for s in dt.inline_code(stale) for p in check_span(s, self.tree)]
        self.assertEqual(len(problems), 3, problems)
        self.assertEqual(len(check_excerpts(stale, self.tree)), 1)

    def test_layer_order_is_check_layers(self):
        check_layers = dt.read(os.path.join(self.root, "scripts/check_layers"))
        body = re.search(r"^LAYERS=\(\n(.*?)^\)", check_layers, re.M | re.S).group(1)
        layers = [q.split() for q in re.findall(r'"([^"]*)"', body)]
        design = self.documents["docs/design.md"]
        section = design[design.index("## The layers"):]
        chain = re.search(r"\n((?:    .*->.*\n)+)", section).group(1)
        written = [[f.strip() for f in layer.split(",")] for layer in " ".join(chain.split()).split("->")]
        self.assertEqual(written, layers, "docs/design.md's layer order differs from LAYERS in scripts/check_layers")

    def test_layer_order_is_written_once(self):
        folders = {"support", "engine/io", "engine/ir", "ops", "engine/dsl", "passes", "engine/exec", "engine/runtime",
                   "engine/persist", "engine/serving",
                   "metrics", "api", "examples"}
        places = []
        for name, text in self.documents.items():
            for i, line in enumerate(text.splitlines()):
                words = set(re.findall(r"[\w/]+", line))
                if "->" in line and len(words & folders) >= 2:
                    places.append((name, i))
        self.assertTrue(places, "docs/design.md no longer writes the layer order")
        self.assertEqual({n for n, _ in places}, {"docs/design.md"}, places)
        lines = [i for _, i in places]
        self.assertEqual(lines, list(range(lines[0], lines[0] + len(lines))), "the order is written more than once")

    def test_links_lead_somewhere(self):
        problems = []
        for name, text in self.documents.items():
            for target in dt.links(text):
                if re.match(r"[a-z]+:", target):
                    continue
                path, _, frag = target.partition("#")
                resolved = os.path.normpath(os.path.join(os.path.dirname(name), path)) if path else name
                if resolved.startswith("..") or not os.path.exists(os.path.join(self.root, resolved)):
                    problems.append(f"{name}: ({target}) leads to no file of the repository")
                elif frag and resolved.endswith(".md"):
                    if frag not in dt.anchors(dt.read(os.path.join(self.root, resolved))):
                        problems.append(f"{name}: ({target}): {resolved} has no heading #{frag}")
        self.assertEqual(problems, [])

    def test_nothing_points_outside_the_repository(self):
        for name, text in self.documents.items():
            # Spelled in pieces, so that this file does not itself point there.
            self.assertNotIn(os.path.join("..", "shared"), text, name)


if __name__ == "__main__":
    unittest.main()
