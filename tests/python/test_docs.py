"""The Python blocks of README.md and docs/*.md run as written (the project's rule: code in the
docs is compiled or run by a test; cmake/gio_doc_snippets.cmake leaves them to this test).
The engines' pages import their engine: they run where it is installed (scripts/engine-test.sh
runs this file in each engine's venv) and skip here without it; likewise docs/nixl.md, whose block
tests/nixl/test_docs.py runs in the NIXL venv (scripts/nixl-test.sh)."""

from __future__ import annotations

import pathlib
import re
import shlex

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# nixl._api, not nixl: the repository's own nixl/ folder (the plugin's sources) imports as an
# empty namespace package wherever the tree is on sys.path.
ENGINE_PAGES = {"vllm.md": "vllm", "sglang.md": "sglang", "nixl.md": "nixl._api"}
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks():
    for md in DOCS:
        text = md.read_text()
        for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
            line = text[: m.start()].count("\n") + 2
            yield pytest.param(m.group(1), md.name, id=f"{md.name}:{line}")


BLOCKS = list(blocks())


def test_the_docs_have_python_blocks():
    assert any("python.md" in p.id for p in BLOCKS)


def shell_argv(page, program, having=None):
    """The arguments of the first command that runs ``program`` (with the argument ``having``,
    if given) in a page's ```sh blocks, as a shell splits them (the engine suites check the
    configurations they hold)."""
    text = (ROOT / "docs" / page).read_text()
    for m in re.finditer(r"^```sh\n(.*?)^```", text, re.S | re.M):
        argv = shlex.split(m.group(1).replace("\\\n", " "))
        if program in argv[:3] and (having is None or having in argv):
            return argv
    raise LookupError(f"no {program} command{f' with {having}' if having else ''} in {page}")


@pytest.mark.parametrize("code,page", BLOCKS)
def test_block_runs(code, page, tmp_path, monkeypatch):
    if page in ENGINE_PAGES:
        pytest.importorskip(ENGINE_PAGES[page], reason=f"{page} runs where {ENGINE_PAGES[page]} is installed "
                            "(scripts/engine-test.sh)")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<doc>", "exec"), {"__name__": "__doc_block__"})
