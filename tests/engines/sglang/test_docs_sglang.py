"""docs/sglang.md works as written: its Python block runs, its launch line's extra config loads
the backend through SGLang's dynamic factory."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import host_pool, make_backend

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from docs_cli import option, test_docs  # noqa: E402

from giouring.sglang import GiouringHiCacheStorage  # noqa: E402


@pytest.mark.parametrize("code,page", [p.values for p in test_docs.BLOCKS if p.values[1] == "sglang.md"])
def test_python_block_runs(code, page, tmp_path, monkeypatch):
    test_docs.test_block_runs(code, page, tmp_path, monkeypatch)


def test_the_launch_line_loads_the_backend(tmp_path):
    argv = test_docs.shell_argv("sglang.md", "sglang.launch_server")
    assert "--enable-hierarchical-cache" in argv and option(argv, "--hicache-storage-backend") == "dynamic"
    extra = json.loads(option(argv, "--hicache-storage-backend-extra-config"))
    # The page's targets are NVMe controllers; a file target stands in for them here.
    assert extra.pop("uris")
    backend = make_backend([f"file://{tmp_path}/kv0.img?size=8M"], host_pool(), **extra)
    assert isinstance(backend, GiouringHiCacheStorage)
    backend.close()
