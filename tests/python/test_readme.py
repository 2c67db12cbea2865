"""The README's Python example runs as written and prints what the README
says it prints (the values computed by hand there: 6 of 8 right, macro F1
the mean of 1, 2/3 and 1/2)."""

import contextlib
import io
import re

from conftest import ROOT


def test_readme_python_example():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"## From Python\n.*?```python\n(.*?)```", readme, re.S)
    assert block, "no ```python block in the README's 'From Python' section"
    shown = re.search(r"prints `(\{.*?\})`", readme[block.end():])
    assert shown
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.group(1), "README.md", "exec"), {})
    assert out.getvalue().strip() == shown.group(1)
    assert shown.group(1) == "{'acc': 0.75, 'f1': 0.7222}"
