"""Helpers of the tests/docs suites: the checkout the runfiles come from, and
the Markdown pieces the tests read (fenced code blocks, inline code, links,
heading anchors)."""

import os
import re

# The extensions that make an inline-code word a file name.
FILE_EXTENSIONS = (".h", ".cc", ".py", ".sh", ".ir", ".json", ".md", ".bazel", ".bzl", ".txt", ".png", ".npy")


def source_root():
    """The checkout the test's runfiles link to: README.md's real directory.

    These tests check the tree itself (that a path the guide names exists),
    which Bazel's runfiles do not hold; builds and tests run unsandboxed
    (.bazelrc), so the runfiles are links into the checkout."""
    root = os.path.dirname(os.path.realpath("README.md"))
    for marker in ("WORKSPACE", "scripts/check_layers", "docs"):
        if not os.path.exists(os.path.join(root, marker)):
            raise AssertionError(f"README.md resolves to {root}, which has no {marker}: not the checkout")
    return root


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


_FENCE = re.compile(r"^```([\w+-]*)[ \t]*\n(.*?)^```[ \t]*$", re.M | re.S)


def fenced_blocks(text):
    """[(info string, body, start, end)] of the ```-fenced blocks (offsets of
    the opening and past the closing fence)."""
    return [(m.group(1), m.group(2), m.start(), m.end()) for m in _FENCE.finditer(text)]


def without_fenced_blocks(text):
    return _FENCE.sub("", text)


def inline_code(text):
    """The `...` spans outside fenced blocks (a span may wrap a line)."""
    return [" ".join(s.split()) for s in re.findall(r"`([^`]+)`", without_fenced_blocks(text))]


def links(text):
    """The targets of [text](target) links outside fenced blocks and inline code."""
    prose = re.sub(r"`[^`]*`", "", without_fenced_blocks(text))
    return re.findall(r"\[[^\]]*\]\(([^)\s]+)\)", prose)


def anchor(heading):
    """GitHub's anchor for a heading's text."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text):
    return {anchor(m.group(1)) for m in re.finditer(r"^#{1,6} +(.*)$", without_fenced_blocks(text), re.M)}
