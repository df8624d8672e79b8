"""Agent B of tests/nixl/test_loopback.py, in a process of its own: listens for NIXL metadata on
a port, prints its buffer's address, waits for agent A's notification that its UCX write is
done, and checks every byte against the pattern both sides derive from the seed.

    loopback_peer.py PORT CHUNKS SEED TIMEOUT_S
Prints "READY <address> <bytes>", later "OK <bytes>" and exits 0, or a line saying what differs
or timed out and exits 1.
"""
import sys
import time

import numpy as np

from conftest import CHUNK, make_agent, pattern


def main():
    port, chunks, seed, timeout = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    b = make_agent("B", backends=["UCX"], enable_listen_thread=True, listen_port=port)
    buf = np.zeros((chunks, CHUNK), dtype=np.uint8)
    b.register_memory([(buf.ctypes.data, buf.nbytes, 0, "")], "DRAM", backends=["UCX"])
    print(f"READY {buf.ctypes.data} {buf.nbytes}", flush=True)
    deadline = time.monotonic() + timeout
    while True:
        notifs = b.get_new_notifs()
        if any(m == b"kv-sent" for m in notifs.get("A", [])):
            break
        if time.monotonic() > deadline:
            print(f"TIMEOUT: no notification from A in {timeout} s", flush=True)
            return 1
        time.sleep(0.001)
    want = pattern(seed, chunks)
    bad = np.flatnonzero(buf.reshape(-1) != want.reshape(-1))
    if bad.size:
        print(f"MISMATCH: {bad.size} of {buf.nbytes} bytes differ, the first at byte {bad[0]}", flush=True)
        return 1
    print(f"OK {buf.nbytes}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
