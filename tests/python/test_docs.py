"""The Python blocks of README.md and docs/*.md run as written (the project's rule: code in the
docs is compiled or run by a test; cmake/gio_doc_snippets.cmake leaves them to this test)."""

from __future__ import annotations

import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks():
    for md in DOCS:
        text = md.read_text()
        for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
            line = text[: m.start()].count("\n") + 2
            yield pytest.param(m.group(1), id=f"{md.name}:{line}")


BLOCKS = list(blocks())


def test_the_docs_have_python_blocks():
    assert any("python.md" in p.id for p in BLOCKS)


@pytest.mark.parametrize("code", BLOCKS)
def test_block_runs(code, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<doc>", "exec"), {"__name__": "__doc_block__"})
