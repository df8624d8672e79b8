"""The GIOURING backend in one NIXL agent: listed, created, chunks written and read back through
it, and bad input refused with a status and a message naming the problem."""
import os

import numpy as np
import pytest

from conftest import CHUNK, LAYERS, OBJECT_BYTES, giouring_params, key, make_agent, pattern, xfer

NIXL_ERRS = (Exception,)  # nixl's bindings raise their own exception types for failed calls

N = 11  # more chunks than the backend's 8 pool blocks: the transfer takes two batches


@pytest.fixture
def agent(tmp_path):
    a = make_agent("A")
    a.create_backend("GIOURING", giouring_params(tmp_path))
    yield a


def register(a, n, keys=None):
    src, dst = pattern(1, n), np.zeros((n, CHUNK), dtype=np.uint8)
    keys = keys or [key(i) for i in range(n)]
    a.register_memory([(src.ctypes.data, src.nbytes, 0, ""), (dst.ctypes.data, dst.nbytes, 0, "")], "DRAM",
                      backends=["GIOURING"])
    a.register_memory([(0, CHUNK, i, k) for i, k in enumerate(keys)], "OBJ", backends=["GIOURING"])
    objs = a.get_xfer_descs([(0, CHUNK, i) for i in range(n)], "OBJ")
    sd = a.get_xfer_descs([(src.ctypes.data + i * CHUNK, CHUNK, 0) for i in range(n)], "DRAM")
    dd = a.get_xfer_descs([(dst.ctypes.data + i * CHUNK, CHUNK, 0) for i in range(n)], "DRAM")
    return src, dst, sd, dd, objs


def test_listed_with_params_and_mems():
    a = make_agent("L")
    assert "GIOURING" in a.get_plugin_list()
    params = a.get_plugin_params("GIOURING")
    assert {"uris", "layers", "object_bytes", "blocks", "create", "timeout_ms"} <= set(params)
    mems = set(a.get_plugin_mem_types("GIOURING"))
    # VRAM_SEG where the plugin was built with CUDA.
    assert {"DRAM_SEG", "OBJ_SEG"} <= mems <= {"DRAM_SEG", "VRAM_SEG", "OBJ_SEG"}


def test_write_then_read_every_byte(agent):
    src, dst, sd, dd, objs = register(agent, N)
    assert xfer(agent, "WRITE", sd, objs, "A") == "DONE"
    assert xfer(agent, "READ", dd, objs, "A") == "DONE"
    assert np.array_equal(src, dst)


def test_read_reopened_store(tmp_path, hooks):
    """Chunks written by one backend are read by another over the same targets, opened, not formatted."""
    a = make_agent("W")
    p = giouring_params(tmp_path, uris=f"file://{tmp_path}/only.img?size=64M")
    a.create_backend("GIOURING", p)
    src, _, sd, _, objs = register(a, 3)
    assert xfer(a, "WRITE", sd, objs, "W") == "DONE"
    del a
    b = make_agent("R")
    b.create_backend("GIOURING", dict(p, create="0"))
    _, dst, _, dd, objs = register(b, 3)
    assert xfer(b, "READ", dd, objs, "R") == "DONE", hooks.last_error("R")
    assert np.array_equal(src, dst)


def test_unknown_key_is_an_error_not_zeros(agent, hooks):
    _, dst, _, dd, objs = register(agent, 2, keys=[key(100), key(101)])
    dst[:] = 0x5A
    assert xfer(agent, "READ", dd, objs, "A") == "ERR"
    assert "not in the store" in hooks.last_error("A") and key(100) in hooks.last_error("A")
    assert (dst == 0x5A).all(), "a failed read wrote the caller's memory"


def test_unregistered_memory_is_refused(agent):
    # Keep the registered buffers alive: a freed one's address may come back for the stray.
    src, dst, _, _, objs = register(agent, 2)
    stray = np.zeros((2, CHUNK), dtype=np.uint8)  # never registered
    assert not (src.ctypes.data <= stray.ctypes.data < src.ctypes.data + src.nbytes)
    assert not (dst.ctypes.data <= stray.ctypes.data < dst.ctypes.data + dst.nbytes)
    sd = agent.get_xfer_descs([(stray.ctypes.data + i * CHUNK, CHUNK, 0) for i in range(2)], "DRAM")
    with pytest.raises(NIXL_ERRS):
        agent.initialize_xfer("WRITE", sd, objs, "A", backends=["GIOURING"])


def test_part_of_a_chunk_is_refused(agent, hooks):
    register(agent, 1)
    half = agent.get_xfer_descs([(0, CHUNK // 2, 0)], "OBJ")
    src = np.zeros(CHUNK // 2, dtype=np.uint8)
    agent.register_memory([(src.ctypes.data, src.nbytes, 0, "")], "DRAM", backends=["GIOURING"])
    d = agent.get_xfer_descs([(src.ctypes.data, CHUNK // 2, 0)], "DRAM")
    with pytest.raises(NIXL_ERRS):
        agent.initialize_xfer("WRITE", d, half, "A", backends=["GIOURING"])
    assert "one whole chunk" in hooks.last_error("A")


def test_bad_key_in_registration_is_refused(agent, hooks):
    with pytest.raises(NIXL_ERRS):
        agent.register_memory([(0, CHUNK, 0, "not-a-key")], "OBJ", backends=["GIOURING"])
    assert "32 hex" in hooks.last_error("A")


def test_bad_params_refuse_the_backend(tmp_path):
    a = make_agent("P")
    with pytest.raises(NIXL_ERRS):
        a.create_backend("GIOURING", giouring_params(tmp_path, layers="zero"))
    with pytest.raises(NIXL_ERRS):
        a.create_backend("GIOURING", {"uris": f"file://{tmp_path}/x.img?size=8M"})  # no object_bytes


@pytest.mark.parametrize("op", ["READ", "WRITE"])
def test_target_failing_mid_transfer_fails_it(agent, hooks, op):
    """The 3rd I/O command of device 0 fails with an NVMe media error: the transfer reports ERR
    and the library's message, and a read leaves the caller's buffers as they were."""
    src, dst, sd, dd, objs = register(agent, N)
    if op == "READ":
        assert xfer(agent, "WRITE", sd, objs, "A") == "DONE"
    dst[:] = 0x77
    hooks.inject("A", 0, 3, 0x0281)  # Unrecovered Read Error (media errors, 0x81)
    local = dd if op == "READ" else sd
    assert xfer(agent, op, local, objs, "A") == "ERR"
    msg = hooks.last_error("A")
    assert "NVMe status" in msg and "layer" in msg, msg
    if op == "READ":
        # The failing batch is the first of two: nothing of it reached the caller.
        assert (dst[:8] == 0x77).all()
        # The chunk that failed is out of the store: read again, it is a miss, where it used to
        # fail for ever (a WRITE of a stored key is taken as done, so it could not be replaced).
        assert "removed from the store" in msg, msg
        assert xfer(agent, "READ", dd, objs, "A") == "ERR"
        assert "not in the store" in hooks.last_error("A")
    hooks.inject("A", 0, 0, 0)
    # The store serves again once written: what failed is reported, nothing half-written is served.
    assert xfer(agent, "WRITE", sd, objs, "A") == "DONE"
    assert xfer(agent, "READ", dd, objs, "A") == "DONE"
    assert np.array_equal(src, dst)


def test_vram_without_a_gpu_fails_the_transfer(agent, hooks):
    """A build with CUDA offers VRAM_SEG; where the backend found no usable GPU, a transfer of
    GPU memory fails and says so (here: host memory registered as VRAM, never touched)."""
    if "VRAM_SEG" not in agent.get_plugin_mem_types("GIOURING"):
        pytest.skip("this plugin was built without CUDA: no VRAM_SEG")
    if os.path.exists("/dev/nvidia0"):
        pytest.skip("a GPU is present: this test is for machines without one")
    fake = np.zeros((1, CHUNK), dtype=np.uint8)
    agent.register_memory([(fake.ctypes.data, fake.nbytes, 0, "")], "VRAM", backends=["GIOURING"])
    agent.register_memory([(0, CHUNK, 0, key(7))], "OBJ", backends=["GIOURING"])
    v = agent.get_xfer_descs([(fake.ctypes.data, CHUNK, 0)], "VRAM")
    o = agent.get_xfer_descs([(0, CHUNK, 0)], "OBJ")
    assert xfer(agent, "WRITE", v, o, "A") == "ERR"
    assert "could not be used" in hooks.last_error("A"), hooks.last_error("A")
