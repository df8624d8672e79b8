#!/usr/bin/env python3
"""Which step stops a PyTorch forward beside the stand-in drives' executors (a diagnosis probe).

A stage is a sequence of steps (STEPS: make an SM partition, make a store over GPU-executed
targets and save into it, a 2-layer Llama3-8B-sized forward on one stream or another), after a
warm-up forward. Each stage runs in a child process bounded by --stage-timeout; a child past it
gets its stacks dumped (py-spy from .gpu-deps/tools or PATH, else gdb, else /proc) and is killed.
    python3 bench/probe_torch_executors.py [--stages "P,S,L;S,P"] [--stage-timeout 60]
On the H200 (bench/results/2026-12-04-ttft-h200.md) every stage passed except those that made the
partition after the executors started, which never returned; such a partition is now refused
with EBUSY at once (the stage exits 1 with GiouringError).
"""
import argparse
import faulthandler
import os
import shutil
import subprocess
import sys
import time

os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")

STEPS = {
    "P": "make an SM partition (8 I/O SMs)",
    "S": "make a store over 4 GPU-executed targets (persistent executors) and save into it",
    "C": "forward on the partition's compute stream",
    "I": "forward on the partition's I/O stream",
    "L": "forward on the legacy default stream",
    "T": "forward on a new torch.cuda.Stream()",
}
# Each stage: steps in order, after a warm-up forward on the legacy stream.
STAGES = ["P,S,L", "P,S,C,L", "P,S,C,T", "P,S,C,C", "P,S,T,L", "P,S,I,L", "S,P"]


def child(stage):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    faulthandler.dump_traceback_later(25, exit=False)
    t0 = time.perf_counter()

    def log(s):
        print(f"[{time.perf_counter() - t0:6.1f} s] {stage}: {s}", flush=True)

    cfg = LlamaConfig(hidden_size=4096, intermediate_size=14336, num_hidden_layers=2, num_attention_heads=32,
                      num_key_value_heads=8, head_dim=128, vocab_size=128256, max_position_embeddings=1 << 16)
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model = LlamaForCausalLM(cfg).eval()
    ids = torch.randint(0, cfg.vocab_size, (1, 4096), device="cuda")

    def fwd(what):
        with torch.no_grad():
            out = model(input_ids=ids, use_cache=False, logits_to_keep=1)
        tok = int(out.logits[0, -1].argmax())
        log(f"forward on {what} done (token {tok})")

    fwd("legacy (warm-up, before any persistent kernel)")
    import giouring

    keep = []
    for step in stage.split(","):
        if step == "P":
            part = giouring.SMPartition(8)
            keep.append(part)
            log("partition made")
        elif step == "S":
            pool = [torch.zeros(2, 256, 16, 8, 128, device="cuda") for _ in range(2)]
            kp = giouring.KVPool(pool, dims=("part", "block", "token", "head", "channel"))
            store = giouring.Store.create(["mem://host?exec=gpu&size=256M&sms=2" for _ in range(4)], kp)
            plan = store.plan(max_requests=256)
            s = torch.cuda.Stream()
            plan.save([i + 1 for i in range(256)], list(range(256)))
            for l in range(2):
                plan.save_layer(l, stream=s)
            res = plan.finish(timeout=30)
            keep += [pool, kp, store, plan, s]
            log(f"store saved into ({sum(1 for r in res if r.rc == 0)}/{len(res)} ok)")
        elif step == "L":
            fwd("legacy")
            torch.cuda.default_stream().synchronize()
        else:
            st = {"C": lambda: part.compute_stream, "I": lambda: part.io_stream, "T": torch.cuda.Stream}[step]()
            with torch.cuda.stream(st):
                fwd(STEPS[step].replace("forward on ", ""))
            st.synchronize()
    torch.cuda.default_stream().synchronize()
    log("PASS")
    faulthandler.cancel_dump_traceback_later()
    os._exit(0)  # no teardown: the executors would be stopped by close, not under test here


def native_stacks(pid):
    spy = shutil.which("py-spy") or os.path.join(os.path.dirname(__file__), "..", ".gpu-deps", "tools", "py-spy")
    if os.access(spy, os.X_OK):
        r = subprocess.run([spy, "dump", "--native", "--pid", str(pid)], capture_output=True, text=True, timeout=60)
        return (r.stdout + r.stderr)[-12000:]
    if shutil.which("gdb"):
        r = subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt 25"],
                           capture_output=True, text=True, timeout=60)
        return r.stdout[-12000:]
    out = []
    for t in sorted(os.listdir(f"/proc/{pid}/task")):
        def rd(n):
            try:
                return open(f"/proc/{pid}/task/{t}/{n}").read().strip()
            except OSError as e:
                return f"({e})"
        out.append(f"task {t} {rd('comm')}: wchan={rd('wchan')} syscall={rd('syscall')[:60]}")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stages", default=";".join(STAGES))
    ap.add_argument("--stage-timeout", type=float, default=60)
    ap.add_argument("--child")
    a = ap.parse_args()
    if a.child:
        child(a.child)
        return
    verdict = {}
    for st in a.stages.split(";"):
        print(f"== {st}: " + ", then ".join(STEPS[x] for x in st.split(",")), flush=True)
        p = subprocess.Popen([sys.executable, __file__, "--child", st])
        try:
            rc = p.wait(timeout=a.stage_timeout)
            verdict[st] = "PASS" if rc == 0 else f"exit {rc}"
        except subprocess.TimeoutExpired:
            print(native_stacks(p.pid), flush=True)
            p.kill()
            p.wait()
            verdict[st] = f"HUNG (> {a.stage_timeout:.0f} s)"
        print(f"== {st}: {verdict[st]}", flush=True)
    print("verdicts:")
    for k, v in verdict.items():
        print(f"  {k:12s} {v}")


if __name__ == "__main__":
    main()
