"""Every Python snippet of the README and the docs runs as written, from the repository root, and every table row
it prints is in the page beside it (so the numbers shown are the numbers the code gives)."""

import re
import subprocess
import sys

import pytest

from helpers import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SNIPPET = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def snippets():
    for page in PAGES:
        for i, match in enumerate(SNIPPET.finditer(page.read_text())):
            yield pytest.param(page, match[1], id=f"{page.relative_to(ROOT)}#{i + 1}")


def test_the_pages_hold_snippets():
    assert list(snippets())


NEEDS = re.compile(r"# needs (\S+)")
"""A snippet's first line ``# needs PATH (how it is made)``: it reads what a pipeline run leaves in the checkout
(``work/``), and runs here only where that run was made; the test of its transformers runs it over files of its
own (``tests/test_pyterrier.py``)."""


@pytest.mark.slow
@pytest.mark.parametrize("page, code", snippets())
def test_a_snippet_runs_as_written(page, code):
    if (needs := NEEDS.match(code)) and not (ROOT / needs[1]).exists():
        pytest.skip(f"needs {needs[1]}, which a pipeline run makes")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    text = page.read_text()
    for line in done.stdout.splitlines():
        if line.startswith("|"):
            assert line in text, f"{page.name} lacks the printed row {line!r}"


def test_the_readme_shows_the_example_overlay_as_it_is():
    """The README's own-model block is examples/linear-xquad.yaml, which the example's test trains."""
    example = (ROOT / "examples/linear-xquad.yaml").read_text()
    assert f"```yaml\n{example}```" in (ROOT / "README.md").read_text()
