"""docs/nixl.md's Python block runs as written, here where NIXL is installed (the Python
package's suite, tests/python/test_docs.py, finds the blocks and skips this page without nixl)."""
import importlib.util
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("gio_test_docs", ROOT / "tests" / "python" / "test_docs.py")
_docs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_docs)
BLOCKS = [p for p in _docs.BLOCKS if p.values[1] == "nixl.md"]


def test_the_page_has_a_python_block():
    assert BLOCKS


@pytest.mark.parametrize("code,page", BLOCKS)
def test_block_runs(code, page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "<doc>", "exec"), {"__name__": "__doc_block__"})
