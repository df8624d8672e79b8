"""Helpers of the GIOURING backend's tests against the real NIXL (scripts/nixl-test.sh runs them
in a venv with nixl==1.5.1 and nixl-cu13==1.5.1; docs/nixl.md)."""
import ctypes
import os
import time

import numpy as np
import pytest

LAYERS = 4
OBJECT_BYTES = 16384
CHUNK = LAYERS * OBJECT_BYTES


def make_agent(name, backends=(), **conf):
    from nixl._api import nixl_agent, nixl_agent_config

    cfg = nixl_agent_config(backends=list(backends), **conf)
    return nixl_agent(name, cfg)


def giouring_params(tmp_path, **extra):
    """A store over a file target and a memory target (two devices: chunks alternate)."""
    p = {
        "uris": f"file://{tmp_path}/dev0.img?size=64M;mem://host?size=64M",
        "layers": str(LAYERS),
        "object_bytes": str(OBJECT_BYTES),
        "blocks": "8",
        "create": "1",
        "timeout_ms": "5000",
    }
    p.update(extra)
    return p


def key(i, salt=0x6e69786c):
    return f"{salt:016x}{i:016x}"


def pattern(seed, n, chunk=CHUNK):
    """n chunks of bytes that differ per chunk and per seed."""
    return np.random.default_rng(seed).integers(0, 256, size=(n, chunk), dtype=np.uint8)


def nixl_error(e):
    """Whether @p e is one of NIXL's bindings' errors (a failed status, as an exception)."""
    return type(e).__module__.startswith("nixl")


def wait(agent, handle, seconds=30.0):
    """Posts a prepared transfer and polls it to its end: "DONE" or "ERR" (NIXL's Python API
    reports a failed transfer as "ERR" or by raising its status)."""
    try:
        state = agent.transfer(handle)
        deadline = time.monotonic() + seconds
        while state == "PROC":
            if time.monotonic() > deadline:
                raise AssertionError(f"transfer still in progress after {seconds} s")
            time.sleep(0.0005)
            state = agent.check_xfer_state(handle)
    except Exception as e:  # noqa: BLE001 - only NIXL's own errors become "ERR"
        if not nixl_error(e):
            raise
        return "ERR"
    return state


def xfer(agent, op, local, remote, target, backend="GIOURING", seconds=30.0):
    h = agent.initialize_xfer(op, local, remote, target, backends=[backend])
    try:
        return wait(agent, h, seconds)
    finally:
        agent.release_xfer_handle(h)


class Hooks:
    """The plugin's C hooks for tests (plugin.cpp): fault injection and the latest message."""

    def __init__(self, path):
        # The same file NIXL dlopen()ed: the same library instance, the same engines.
        self.lib = ctypes.CDLL(path)
        self.lib.gio_nixl_inject.argtypes = [ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint64, ctypes.c_uint32]
        self.lib.gio_nixl_last_error.argtypes = [ctypes.c_char_p]
        self.lib.gio_nixl_last_error.restype = ctypes.c_char_p

    def inject(self, agent, dev, nth, status):
        rc = self.lib.gio_nixl_inject(agent.encode(), dev, nth, status)
        assert rc == 0, self.last_error(agent)

    def last_error(self, agent):
        return self.lib.gio_nixl_last_error(agent.encode()).decode()


@pytest.fixture
def hooks():
    path = os.environ.get("GIO_NIXL_PLUGIN")
    if not path:
        pytest.fail("GIO_NIXL_PLUGIN is not set: run through scripts/nixl-test.sh")
    return Hooks(path)
