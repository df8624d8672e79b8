"""Moving KV between machines through NIXL, run on one machine: agent A reads KV chunks from its
giouring store into DRAM with the GIOURING backend and writes them to agent B, another process,
with UCX over loopback; B checks every byte (loopback_peer.py)."""
import os
import queue
import socket
import subprocess
import sys
import threading
import time

import numpy as np

from conftest import CHUNK, giouring_params, key, make_agent, pattern, wait, xfer

CHUNKS = 24
SEED = 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lines:
    """B's lines of its own (READY, OK, MISMATCH, TIMEOUT), each within a deadline; NIXL's log
    lines, also on stdout, are passed over. A thread reads, so that a wait has a deadline."""

    def __init__(self, proc):
        self.q = queue.Queue()
        self.proc = proc
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            if line.split(" ", 1)[0] in ("READY", "OK", "MISMATCH:", "TIMEOUT:"):
                self.q.put(line.strip())
        self.q.put(None)

    def next(self, seconds):
        try:
            line = self.q.get(timeout=seconds)
        except queue.Empty:
            raise AssertionError(f"agent B said nothing in {seconds} s") from None
        if line is None:
            raise AssertionError(f"agent B ended (exit {self.proc.wait(timeout=10)}) without saying more")
        return line


def test_store_to_remote_dram_over_ucx(tmp_path, hooks):
    port = free_port()
    peer = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "loopback_peer.py"), str(port),
                             str(CHUNKS), str(SEED), "60"], stdout=subprocess.PIPE, text=True)
    try:
        lines = Lines(peer)
        line = lines.next(60)
        assert line.startswith("READY "), line
        b_addr, b_len = (int(x) for x in line.split()[1:])
        assert b_len == CHUNKS * CHUNK

        # A's listener thread is also what carries its metadata requests to B and B's answer back.
        a = make_agent("A", backends=["UCX"], enable_listen_thread=True, listen_port=free_port())
        a.create_backend("GIOURING", giouring_params(tmp_path))
        # The KV chunks in A's store, written through the backend.
        src = pattern(SEED, CHUNKS)
        buf = np.zeros_like(src)
        a.register_memory([(src.ctypes.data, src.nbytes, 0, ""), (buf.ctypes.data, buf.nbytes, 0, "")], "DRAM",
                          backends=["GIOURING", "UCX"])
        a.register_memory([(0, CHUNK, i, key(i)) for i in range(CHUNKS)], "OBJ", backends=["GIOURING"])
        objs = a.get_xfer_descs([(0, CHUNK, i) for i in range(CHUNKS)], "OBJ")
        sd = a.get_xfer_descs([(src.ctypes.data + i * CHUNK, CHUNK, 0) for i in range(CHUNKS)], "DRAM")
        assert xfer(a, "WRITE", sd, objs, "A") == "DONE", hooks.last_error("A")

        # Store -> A's DRAM with GIOURING (another buffer: what B gets comes from the store).
        bd = a.get_xfer_descs([(buf.ctypes.data + i * CHUNK, CHUNK, 0) for i in range(CHUNKS)], "DRAM")
        assert xfer(a, "READ", bd, objs, "A") == "DONE", hooks.last_error("A")

        # A's DRAM -> B's DRAM with UCX, over loopback.
        a.fetch_remote_metadata("B", "127.0.0.1", port)
        a.send_local_metadata("127.0.0.1", port)
        deadline = time.monotonic() + 30
        while not a.check_remote_metadata("B"):
            assert time.monotonic() < deadline, "B's metadata did not arrive in 30 s"
            time.sleep(0.01)
        remote = a.get_xfer_descs([(b_addr + i * CHUNK, CHUNK, 0) for i in range(CHUNKS)], "DRAM")
        h = a.initialize_xfer("WRITE", bd, remote, "B", b"kv-sent", backends=["UCX"])
        assert wait(a, h, 30) == "DONE"
        a.release_xfer_handle(h)

        line = lines.next(60)
        assert line == f"OK {CHUNKS * CHUNK}", line
        assert peer.wait(timeout=30) == 0
    finally:
        if peer.poll() is None:
            peer.kill()
            peer.wait(timeout=10)
