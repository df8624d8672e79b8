#!/usr/bin/env python3
"""nixl_bench: the same KV chunks through NIXL's POSIX backend and through NIXL's GIOURING
backend (nixl/, docs/nixl.md) in one run, beside the GIOURING backend's own call without NIXL
(the plugin's gio_nixl_direct: the same store, the same KV-layer batch calls). Prints a table:
GB/s, CPU time per GB (every thread of the process: getrusage(RUSAGE_SELF), the targets'
executor threads and NIXL's included), and the per-call cost of NIXL's path over the direct one.

It is a program, not a test: it prints what it measured and exits 0 unless something failed
(a transfer, or a byte check after each read). Run it in the venv that scripts/nixl-test.sh
makes, the plugin copied into it (that script's "pytest" step does both), e.g.

    bash scripts/nixl-test.sh venv build
    bash scripts/nixl-test.sh pytest build tests/nixl     # copies the plugin into the venv, tests it
    build/nixl-venv/bin/python bench/nixl_bench.py

Memory and targets:
  --mem dram             numpy buffers (DRAM_SEG); the default
  --mem vram             cudaMalloc'd buffers (VRAM_SEG; the CUDA runtime through ctypes,
                         GIO_CUDART names its library): only backends whose memory types include
                         VRAM_SEG run (GIOURING does where built with CUDA), the others are listed
                         as not supported; a bulk H2D copy of the same bytes is the reference row
  --gio-uris U1;U2       the GIOURING store's targets (default: one file:// target in --dir);
                         mem://hbm?... for GPU-executed targets on a GPU machine
  --dir DIR              where the files go (default: a temporary folder)
POSIX reads and writes one file with O_DIRECT (as giouring's file:// target does), so neither
side is served by the page cache.
"""
import argparse
import ctypes
import mmap
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def machine_line():
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    gpu = ""
    if shutil.which("nvidia-smi"):
        try:
            gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=20).stdout.strip().replace("\n", "; ")
        except (OSError, subprocess.SubprocessError):
            gpu = "nvidia-smi failed"
    return (f"{platform.node()}: {os.cpu_count()} CPUs ({cpu}), {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}" + (f", GPU {gpu}" if gpu else ", no GPU"))


class Buffers:
    """n chunks of host memory, page-aligned (O_DIRECT), or of device memory."""

    def __init__(self, n, chunk, vram):
        self.n, self.chunk, self.vram = n, chunk, vram
        self.bytes = n * chunk
        if vram:
            self.rt = ctypes.CDLL(os.environ.get("GIO_CUDART", "libcudart.so"))
            p = ctypes.c_void_p()
            rc = self.rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(self.bytes))
            if rc:
                raise SystemExit(f"nixl_bench: cudaMalloc of {self.bytes} bytes failed: CUDA error {rc}")
            self.addr = p.value
        else:
            self.map = mmap.mmap(-1, self.bytes)
            self.array = np.frombuffer(self.map, dtype=np.uint8).reshape(n, chunk)
            self.addr = self.array.ctypes.data

    def fill(self, data):
        if self.vram:
            self._copy(self.addr, data.ctypes.data, 1)  # cudaMemcpyHostToDevice
        else:
            self.array[:] = data

    def read(self):
        if not self.vram:
            return self.array.copy()
        out = np.empty((self.n, self.chunk), dtype=np.uint8)
        self._copy(out.ctypes.data, self.addr, 2)  # cudaMemcpyDeviceToHost
        return out

    def clear(self):
        if self.vram:
            self.rt.cudaMemset(ctypes.c_void_p(self.addr), 0, ctypes.c_size_t(self.bytes))
        else:
            self.array[:] = 0

    def _copy(self, dst, src, kind):
        rc = self.rt.cudaMemcpy(ctypes.c_void_p(dst), ctypes.c_void_p(src), ctypes.c_size_t(self.bytes), kind)
        if rc:
            raise SystemExit(f"nixl_bench: cudaMemcpy failed: CUDA error {rc}")

    def descs(self, agent, count=None):
        count = self.n if count is None else count
        return agent.get_xfer_descs([(self.addr + i * self.chunk, self.chunk, 0) for i in range(count)],
                                    "VRAM" if self.vram else "DRAM")


POLL_SLEEP = 0.0  # --poll-us


def run_xfer(agent, op, local, remote, backend, seconds):
    h = agent.initialize_xfer(op, local, remote, agent.name, backends=[backend])
    try:
        state = agent.transfer(h)
        deadline = time.monotonic() + seconds
        while state == "PROC":
            if time.monotonic() > deadline:
                raise SystemExit(f"nixl_bench: {backend} {op} still running after {seconds} s")
            if POLL_SLEEP:
                time.sleep(POLL_SLEEP)
            state = agent.check_xfer_state(h)
        if state != "DONE":
            raise SystemExit(f"nixl_bench: {backend} {op}: {state}")
    finally:
        agent.release_xfer_handle(h)


def measure(fn, nbytes, repeat):
    """fn() repeated: GB/s and CPU seconds per GB of each run."""
    gbps, cpu = [], []
    for _ in range(repeat):
        c0, t0 = cpu_seconds(), time.perf_counter()
        fn()
        t, c = time.perf_counter() - t0, cpu_seconds() - c0
        gbps.append(nbytes / t / 1e9)
        cpu.append(c / (nbytes / 1e9))
    return gbps, cpu


def per_call(fn, calls):
    """Median microseconds of one call of fn (a one-chunk transfer)."""
    ts = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(ts), min(ts), max(ts)


def spread(xs):
    m = statistics.median(xs)
    return m, (max(xs) - min(xs)) / m * 100 if m else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--plugin", default="", help="libplugin_GIOURING.so: the very file NIXL loads (its hooks must "
                    "be the same library instance); default: the one in NIXL's plugins folder")
    ap.add_argument("--chunks", type=int, default=128)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--object-bytes", type=int, default=32768)
    ap.add_argument("--blocks", type=int, default=64, help="GIOURING's pool blocks (chunks per batch)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200, help="one-chunk transfers for the per-call figures")
    ap.add_argument("--mem", choices=["dram", "vram"], default="dram")
    ap.add_argument("--gio-uris", default="")
    ap.add_argument("--dir", default="")
    ap.add_argument("--backends", default="POSIX,GIOURING,direct")
    ap.add_argument("--json", default="", help="also write the rows as JSON to this file")
    ap.add_argument("--quick", action="store_true", help="smoke mode (ctest nixl.bench): 4 chunks, 1 repeat, 2 calls")
    ap.add_argument("--device", type=int, default=0, help="CUDA device of the GIOURING backend (VRAM, mem://hbm)")
    ap.add_argument("--poll-us", type=float, default=50.0,
                    help="sleep between two checks of a transfer, us (0: poll without pause, which on a 2-core "
                         "machine starves the backends' own threads)")
    a = ap.parse_args()
    global POLL_SLEEP
    POLL_SLEEP = a.poll_us / 1e6
    if a.quick:
        a.chunks, a.repeat, a.calls = 4, 1, 2

    from nixl._api import nixl_agent, nixl_agent_config

    if not a.plugin:
        import glob
        import site
        found = [p for s in site.getsitepackages() + sys.path
                 for p in glob.glob(os.path.join(s, ".nixl_cu*.mesonpy.libs", "plugins", "libplugin_GIOURING.so"))]
        if not found:
            raise SystemExit("nixl_bench: no libplugin_GIOURING.so in NIXL's plugins folder: copy it there "
                             "(bash scripts/nixl-test.sh pytest BUILD_DIR does) or name it with --plugin")
        a.plugin = found[0]

    chunk = a.layers * a.object_bytes
    total = a.chunks * chunk
    tmp = a.dir or tempfile.mkdtemp(prefix="nixl-bench-")
    os.makedirs(tmp, exist_ok=True)
    # Every write round stores new keys (a stored key is not written again: a key names its
    # bytes), so the store holds them all: no eviction inside the measurement.
    rounds = a.repeat + 1
    gio_bytes = (rounds * total + a.calls * chunk) * 5 // 4 + (64 << 20)
    gio_uris = a.gio_uris or f"file://{tmp}/gio.img?size={gio_bytes}"
    want = [b.strip() for b in a.backends.split(",") if b.strip()]
    vram = a.mem == "vram"

    agent = nixl_agent("bench", nixl_agent_config(enable_prog_thread=False, enable_listen_thread=False,
                                                  backends=[]))
    data = np.random.default_rng(4).integers(0, 256, size=(a.chunks, chunk), dtype=np.uint8)
    buf = Buffers(a.chunks, chunk, vram)
    mem = "VRAM" if vram else "DRAM"
    rows, notes = [], []

    print(f"nixl_bench: {a.chunks} chunks of {a.layers} x {a.object_bytes} B = {chunk} B ({total / 2**20:.0f} MiB "
          f"a transfer), {mem}, {a.repeat} repeats, {a.calls} one-chunk calls")
    print(f"machine: {machine_line()}")
    print(f"GIOURING targets: {gio_uris}")

    # The reference on a GPU machine: the same bytes host -> GPU in one bulk copy, measured before
    # any backend starts: GPU-executed targets run persistent kernels, and cudaHostUnregister
    # (like cudaFree) waits for every kernel to end (docs/design.md, "Bounded CUDA calls").
    ref_rows = []
    if vram:
        host = np.ascontiguousarray(data)
        g, c = measure(lambda: buf.fill(host), total, a.repeat)
        gm, gs = spread(g)
        cm, cs = spread(c)
        ref_rows.append(["bulk H2D (cudaMemcpy, pageable host memory)", "H2D", f"{gm:.2f}", f"{gs:.0f}%",
                         f"{cm:.3f}", f"{cs:.0f}%", "-"])
        # Pinned: what the copy engine does at its best (the ceiling the KV restore benches cite).
        rc = buf.rt.cudaHostRegister(ctypes.c_void_p(host.ctypes.data), ctypes.c_size_t(host.nbytes), 0)
        if rc:
            raise SystemExit(f"nixl_bench: cudaHostRegister of {host.nbytes} bytes failed: CUDA error {rc}")
        try:
            g, c = measure(lambda: buf.fill(host), total, a.repeat)
        finally:
            buf.rt.cudaHostUnregister(ctypes.c_void_p(host.ctypes.data))
        gm, gs = spread(g)
        cm, cs = spread(c)
        ref_rows.append(["bulk H2D (cudaMemcpy, pinned host memory)", "H2D", f"{gm:.2f}", f"{gs:.0f}%",
                         f"{cm:.3f}", f"{cs:.0f}%", "-"])

    def supports(name):
        return f"{mem}_SEG" in agent.get_plugin_mem_types(name)

    # --- POSIX: one file, O_DIRECT, chunk i at offset i x chunk.
    if "POSIX" in want:
        if not supports("POSIX"):
            notes.append(f"POSIX: {mem}_SEG not among its memory types: not run")
        else:
            agent.create_backend("POSIX", {})
            path = f"{tmp}/posix.img"
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_DIRECT, 0o600)
            os.ftruncate(fd, total)
            agent.register_memory([(buf.addr, buf.bytes, 0, "")], mem, backends=["POSIX"])
            agent.register_memory([(0, total, fd, path)], "FILE", backends=["POSIX"])
            files = agent.get_xfer_descs([(i * chunk, chunk, fd) for i in range(a.chunks)], "FILE")
            one = agent.get_xfer_descs([(0, chunk, fd)], "FILE")
            rows += bench_backend(agent, "POSIX", buf, data, a, total, lambda r: files, lambda j: one, None)
            agent.deregister_memory(agent.get_reg_descs([(buf.addr, buf.bytes, 0, "")], mem), backends=["POSIX"])

    # --- GIOURING, through NIXL and directly.
    if "GIOURING" in want or "direct" in want:
        if not supports("GIOURING"):
            notes.append(f"GIOURING: {mem}_SEG not among its memory types: not run")
        else:
            agent.create_backend("GIOURING", {"uris": gio_uris, "layers": str(a.layers),
                                              "object_bytes": str(a.object_bytes), "blocks": str(a.blocks),
                                              "create": "1", "device": str(a.device)})
            hooks = ctypes.CDLL(a.plugin)
            hooks.gio_nixl_direct.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p,
                                              ctypes.c_void_p, ctypes.c_uint32]
            hooks.gio_nixl_last_error.restype = ctypes.c_char_p
            agent.register_memory([(buf.addr, buf.bytes, 0, "")], mem, backends=["GIOURING"])
            # Object j is key (0xbe7c, j) under devId j: write round r takes objects r x chunks on,
            # one-chunk write call j object rounds x chunks + j. NIXL and the direct call each
            # get their own keys (salt 0 and 1 in bit 32 of hi).
            nobj = rounds * a.chunks + a.calls
            addrs = np.array([buf.addr + i * chunk for i in range(a.chunks)], dtype=np.uint64)

            def keys_of(salt, first, n):
                return np.array([[0xbe7c | salt << 32, first + i] for i in range(n)], dtype=np.uint64)

            for path in [p for p in ("GIOURING", "direct") if p in want]:
                salt = 0 if path == "GIOURING" else 1
                if path == "GIOURING":
                    k = keys_of(salt, 0, nobj)
                    agent.register_memory([(0, chunk, j, f"{int(k[j][0]):016x}{int(k[j][1]):016x}") for j in range(nobj)],
                                          "OBJ", backends=["GIOURING"])
                    rounds_objs = [agent.get_xfer_descs([(0, chunk, r * a.chunks + i) for i in range(a.chunks)], "OBJ")
                                   for r in range(rounds)]
                    ones = [agent.get_xfer_descs([(0, chunk, rounds * a.chunks + j)], "OBJ") for j in range(a.calls)]
                    rows += bench_backend(agent, "GIOURING", buf, data, a, total, lambda r: rounds_objs[r],
                                          lambda j: ones[j], None)
                    continue

                def direct(write, r, n=a.chunks, first=None):
                    k = keys_of(salt, r * a.chunks if first is None else first, n)
                    rc = hooks.gio_nixl_direct(b"bench", 1 if write else 0, 1 if vram else 0, k.ctypes.data,
                                               addrs.ctypes.data, n)
                    if rc:
                        raise SystemExit(f"nixl_bench: direct call: {rc}: "
                                         f"{hooks.gio_nixl_last_error(b'bench').decode()}")

                rows += bench_backend(agent, "GIOURING direct (no NIXL)", buf, data, a, total, None, None, direct)

    rows += ref_rows

    print()
    print("| path | op | GB/s median | spread | CPU s per GB median | spread | one-chunk call, us median (min-max) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    calls = {(r[0], r[1]): float(r[6].split()[0]) for r in rows if r[6] != "-"}
    for op in ("WRITE", "READ"):
        n, d = calls.get(("GIOURING", op)), calls.get(("GIOURING direct (no NIXL)", op))
        if n is not None and d is not None:
            print(f"NIXL's path over the library's own call, {op} of one chunk: {n - d:+.1f} us per call")
    for note in notes:
        print(note)
    if a.json:
        import json
        keys = ["path", "op", "gbps", "gbps_spread", "cpu_s_per_gb", "cpu_spread", "one_chunk_us"]
        with open(a.json, "w") as f:
            json.dump({"machine": machine_line(), "chunks": a.chunks, "chunk_bytes": chunk, "repeat": a.repeat,
                       "calls": a.calls, "mem": mem, "gio_uris": gio_uris, "notes": notes,
                       "rows": [dict(zip(keys, r)) for r in rows]}, f, indent=1)
    if not a.dir:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def bench_backend(agent, name, buf, data, a, total, round_remote, one_remote, direct):
    """Writes of every chunk (round 0 a warm-up, then one round per repeat, each to its own
    objects), reads of the last round's (bytes checked after each), then one-chunk calls (writes
    to objects of their own, reads of chunk 0). round_remote(r) / one_remote(j): NIXL
    descriptors; direct(write, round, n, first): the call without NIXL instead."""
    backend = "GIOURING" if name.startswith("GIOURING") else name
    calls = a.calls
    local = buf.descs(agent)
    one_local = buf.descs(agent, 1)
    last = a.repeat

    def go(op, r):
        if direct:
            direct(op == "WRITE", r)
        else:
            run_xfer(agent, op, local, round_remote(r), backend, 120)

    def one(op, j):
        if direct:
            direct(op == "WRITE", 0, 1, (a.repeat + 1) * a.chunks + j if op == "WRITE" else last * a.chunks)
        else:
            run_xfer(agent, op, one_local, one_remote(j) if op == "WRITE" else round_remote(last), backend, 30)

    rows = []
    buf.fill(data)
    go("WRITE", 0)  # warm-up: files grown, queues and threads started
    for op in ("WRITE", "READ"):
        if op == "READ":
            buf.clear()
        rnd = iter(range(1, a.repeat + 1))
        g, c = measure(lambda: go(op, next(rnd) if op == "WRITE" else last), total, a.repeat)
        if op == "READ" and not np.array_equal(buf.read(), data):
            raise SystemExit(f"nixl_bench: {name}: the bytes read differ from those written")
        j = iter(range(calls))
        if op == "READ" and not direct:
            # One-chunk reads: the first descriptor of the last round.
            one_read = agent.get_xfer_descs([round_remote(last)[0]], "OBJ" if backend == "GIOURING" else "FILE")
            m, mn, mx = per_call(lambda: run_xfer(agent, "READ", one_local, one_read, backend, 30), calls)
        else:
            m, mn, mx = per_call(lambda: one(op, next(j)), calls)
        if op == "WRITE":
            buf.fill(data)  # one-chunk writes do not change it, but keep the check honest
        gm, gs = spread(g)
        cm, cs = spread(c)
        rows.append([name, op, f"{gm:.2f}", f"{gs:.0f}%", f"{cm:.3f}", f"{cs:.0f}%", f"{m:.1f} ({mn:.1f}-{mx:.1f})"])
        print(f"  {name} {op}: {gm:.2f} GB/s, {cm:.3f} CPU s/GB, one chunk {m:.1f} us", file=sys.stderr)
    return rows


if __name__ == "__main__":
    sys.exit(main())
