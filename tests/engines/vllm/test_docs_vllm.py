"""docs/vllm.md works as written: its Python blocks run, its `vllm serve` lines configure the
connector that vLLM's factory loads and vLLM's KV events."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from vllm.config import KVEventsConfig, KVTransferConfig
from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from docs_cli import option, test_docs  # noqa: E402

from giouring.vllm import GiouringConnector  # noqa: E402


@pytest.mark.parametrize("code,page", [p.values for p in test_docs.BLOCKS if p.values[1] == "vllm.md"])
def test_python_block_runs(code, page, tmp_path, monkeypatch):
    test_docs.test_block_runs(code, page, tmp_path, monkeypatch)


def test_the_events_serve_line_switches_vllms_kv_events_on():
    argv = test_docs.shell_argv("vllm.md", "serve", having="--kv-events-config")
    events = KVEventsConfig(**json.loads(option(argv, "--kv-events-config")))
    assert events.enable_kv_cache_events and events.publisher == "zmq"
    config = KVTransferConfig(**json.loads(option(argv, "--kv-transfer-config")))
    assert KVConnectorFactory.get_connector_class(config) is GiouringConnector


def test_the_serve_line_names_the_connector():
    argv = test_docs.shell_argv("vllm.md", "serve")
    assert "--disable-hybrid-kv-cache-manager" in argv
    config = KVTransferConfig(**json.loads(option(argv, "--kv-transfer-config")))
    assert KVConnectorFactory.get_connector_class(config) is GiouringConnector
    assert config.kv_connector_extra_config["uris"]
