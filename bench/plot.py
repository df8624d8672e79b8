#!/usr/bin/env python3
"""Draws PNG plots from the benches' JSON results (nothing is measured here).

    /usr/bin/python3 bench/plot.py bench/results/2026-11-29-gpu-cmdrate-h200.json \
        bench/results/2026-11-29-kv-restore-32K-h200.json bench/results/2026-11-29-kv-restore-128K-h200.json

Each input gives one PNG beside it (same name, .png): bench_gpu_cmdrate JSON -> commands/s
against I/O SMs (one line per ring placement and scope, the measured ceiling dotted across);
bench_kv_restore JSON -> GB/s per path
(bars), the bulk copy's line drawn across; bench_gpu_file JSON -> GB/s per path, file and CPU
thread count; bench_kv_layer JSON -> load GB/s per shape and target count (MODELLED drives), beside
N x the one-target figure and the bulk copy; bench_sched JSON -> per input length, the bubble per
layer (naive overlap against the scheduler) and the writes pending over the run's time;
bench/ttft_llama.py JSON -> three PNGs: time to first token against hit rate per context length
and system (the recompute dashed across), the GPU's wait per layer at the highest hit rate of the
longest context, and each system's crossover hit rate beside the physical limit. Needs
matplotlib (Debian: python3-matplotlib).
"""
import json
import sys
import textwrap

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402


def cmdrate(doc, out):
    series = {}
    for p in doc["points"]:
        key = f"rings in {p['rings'].upper() if p['rings'] == 'hbm' else 'host memory'}, {p['scope']} scope"
        series.setdefault(key, []).append((p["io_sms"], p["mcmds_per_s"], p["exec_sms"]))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for key, pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=key)
        for io, rate, ex in pts:
            ax.annotate(f"{ex}", (io, rate), textcoords="offset points", xytext=(4, -10), fontsize=7)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("SMs of the I/O kernel (labels: executor SMs)")
    ax.set_ylabel("M NVMe commands/s (no data moved)")
    ax.axhline(1000, color="grey", linestyle="--", linewidth=0.8)
    ax.text(1, 1050, "goal: 1 G/s (HBM rings)", fontsize=7, color="grey")
    # The stripped-down protocol's ceiling, measured in the same run (JSON "ceiling"; older files
    # have none): its best row per ring placement and scope, as a dotted line.
    best = {}
    for c in doc.get("ceiling", []):
        if c.get("ok"):
            key = (c["rings"], c["scope"])
            if c["mcmds_per_s"] > best.get(key, {"mcmds_per_s": 0})["mcmds_per_s"]:
                best[key] = c
    for (rings, scope), c in sorted(best.items()):
        ax.axhline(c["mcmds_per_s"], color="black", linestyle=":", linewidth=0.8)
        ax.text(1, c["mcmds_per_s"] * 1.05, f"ceiling, rings in {rings}, {scope} scope, {c['queues']} queue pairs "
                f"(stripped-down protocol, not giouring)", fontsize=6)
    ax.set_title("bench_gpu_cmdrate: " + doc.get("machine", ""), fontsize=8)
    ax.legend(fontsize=8)
    ax.grid(True, which="both", linewidth=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def restore(doc, out):
    rows = [r for r in doc["rows"] if r["status"] == "ok"]
    bulk = next((r["gbps"] for r in rows if r["path"] == "bulk"), None)
    fig, ax = plt.subplots(figsize=(8, 4.5))
    names = [r["path"] for r in rows]
    vals = [r["gbps"] for r in rows]
    colors = ["tab:blue" if n.startswith("giouring") else "tab:gray" for n in names]
    ax.barh(names, vals, color=colors)
    for i, r in enumerate(rows):
        ax.text(r["gbps"] + 0.5, i, f"{r['gbps']:.1f} GB/s, CPU {r['cpu_ms']:.1f} ms", va="center", fontsize=7)
    if bulk:
        ax.axvline(bulk, color="black", linestyle="--", linewidth=0.8)
        ax.axvline(0.95 * bulk, color="red", linestyle=":", linewidth=0.8)
    ax.invert_yaxis()
    ax.set_xlabel("GB/s (bytes / wall time); dashed: bulk H2D, dotted: 95% of it")
    w = doc["workload"]
    ax.set_title(f"bench_kv_restore: {w['geometry']}, {w['tokens']} tokens, {w['objects']} objects of "
                 f"{w['obj_bytes'] // 1024} KiB into a shuffled pool", fontsize=8)
    ax.set_xlim(0, max(vals) * 1.35)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def gpu_file(doc, out):
    rows = [r for r in doc["rows"] if r.get("status", 0) == 0]
    fig, ax = plt.subplots(figsize=(7, 1.5 + 0.4 * len(rows)))
    # Newer files have the row's CPU threads and the CPU of every thread of the process; older
    # ones the issuing thread's and the executor threads' apart.
    def threads(r):
        return "" if "threads" not in r else f", {r['threads']} thread" + ("" if r["threads"] == 1 else "s")

    names = [f"{r['path']} ({r['dir']}{threads(r)})" for r in rows]
    ax.barh(names, [r["gbps"] for r in rows],
            color=["tab:blue" if r["path"].startswith("giouring") else "tab:gray" for r in rows])
    for i, r in enumerate(rows):
        cpu = r.get("cpu_ms_all_threads", r["cpu_ms_issuing"] + max(r.get("cpu_ms_executor", 0), 0))
        ax.text(r["gbps"] + 0.1, i, f"{r['gbps']:.2f} GB/s, CPU {cpu:.0f} ms", va="center", fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("GB/s into HBM (CPU: all threads of the process)")
    ax.set_xlim(0, max(r["gbps"] for r in rows) * 1.5)
    ax.set_title(f"bench_gpu_file: {doc['tokens']} tokens, {doc['objects']} objects, file target vs pread", fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def kv_layer(doc, out):
    pts = doc["points"]
    shapes = sorted({p["shape"] for p in pts}, key=lambda s: [p["shape"] for p in pts].index(s))
    fig, ax = plt.subplots(figsize=(7, 3.2))
    width = 0.8 / max(1, len({p["targets"] for p in pts}))
    for si, shape in enumerate(shapes):
        row = [p for p in pts if p["shape"] == shape]
        one = next((p["load_gbps"][1] for p in row if p["targets"] == 1), None)
        for k, p in enumerate(sorted(row, key=lambda p: p["targets"])):
            x = si + (k - (len(row) - 1) / 2) * width
            lo, med, hi = p["load_gbps"]
            ax.bar(x, med, width * 0.9, color="tab:blue", yerr=[[med - lo], [hi - med]], capsize=3)
            label = f"{p['targets']} tgt {med:.1f}"
            top = hi
            if one:
                ideal = one * p["targets"]
                ax.hlines(ideal, x - width / 2, x + width / 2, colors="tab:orange", linestyles="dotted")
                label += f" ({100 * med / ideal:.1f}%)"
                top = max(top, ideal)
            ax.text(x, top + 1.0, label, ha="center", fontsize=7)
            ax.hlines(p["bulk_gbps"], x - width / 2, x + width / 2, colors="tab:gray", linestyles="dashed")
    ax.set_xticks(range(len(shapes)))
    ax.set_xticklabels(shapes, fontsize=8)
    ax.set_ylabel("load GB/s into HBM (device scope)")
    ax.set_title(f"bench_kv_layer: MODELLED drives ({doc['read_gbps']} GB/s read each); dotted: targets x 1-target, "
                 "dashed: bulk copy", fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def sched(doc, out):
    inputs = sorted({r["input"] for r in doc["runs"]}, reverse=True)
    modes = [m for m in ("naive", "sched") if any(r["mode"] == m for r in doc["runs"])]
    colors = {"naive": "tab:red", "sched": "tab:blue"}
    fig, axes = plt.subplots(2, len(inputs), figsize=(max(8.0, 5.5 * len(inputs)), 6.8), squeeze=False)
    for col, inp in enumerate(inputs):
        runs = [r for r in doc["runs"] if r["input"] == inp]
        ax = axes[0][col]
        width = 0.4
        for k, mode in enumerate(modes):
            rs = [r for r in runs if r["mode"] == mode]
            layers = len(rs[0]["bubble_layer_ms"])
            # Mean over the reps of each layer's mean over requests.
            mean = [sum(r["bubble_layer_ms"][l] for r in rs) / len(rs) for l in range(layers)]
            total = sorted(b for r in rs for b in r["bubble_ms"])
            med = total[len(total) // 2]
            ax.bar([l + (k - 0.5) * width for l in range(layers)], mean, width, color=colors[mode],
                   label=f"{mode}: {med:.1f} ms a request")
        ax.set_xlabel("layer (its compute waiting for its load)")
        ax.set_ylabel("bubble ms (measured)")
        ax.set_title(f"{inp} new tokens over a {doc['prefix']}-token prefix, layer compute {runs[0]['layer_ms']:.2f} ms",
                     fontsize=8)
        ax.legend(fontsize=7)
        ax = axes[1][col]
        for mode in modes:
            r = next(r for r in runs if r["mode"] == mode and r["rep"] == 0)
            pts = r["pending"]
            ax.step([p[0] for p in pts], [p[1] for p in pts], where="post", color=colors[mode],
                    label=f"{mode}: most {r['pending_high_bytes'] / 1048576:.0f} MiB, drain {r['drain_ms']:.1f} ms, "
                    f"stalls {r['stalls']}")
        ax.set_xlabel("ms from the first request's first load (rep 0)")
        ax.set_ylabel("writes pending, MiB")
        ax.legend(fontsize=7)
    fig.suptitle(f"bench_sched: {doc['targets']} MODELLED drives (read {doc['read_gbps']}, write {doc['write_gbps']}, "
                 f"both {doc['mixed_gbps']} GB/s each),\n{doc['requests']} requests, {doc['decode_steps']} decode steps "
                 f"each; times measured on the GPU clock\n{doc.get('machine', '').replace('; ', chr(10))}", fontsize=7)
    fig.tight_layout()
    fig.savefig(out, dpi=120)


TTFT_STYLE = {"hbm": ("black", "o"), "hbm-part": ("grey", "o"), "giouring-sched": ("tab:green", "s"),
              "giouring-sched-static": ("tab:cyan", "s"), "giouring-naive": ("tab:olive", "^"),
              "offload": ("tab:blue", "D"), "cpu-per-object": ("tab:red", "v")}


def _med(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2


def drives_note(args, bulk_gbps):
    """The SSD tier as the bench modelled it. Stand-in drives in HBM (--drive-backing hbm) read no
    faster than their share of the run's bulk H2D (the median of its measurements), which may be
    below --drive-read-gbps: the title gives the rate they were read at."""
    n, rate = args.get("drives", "?"), args.get("drive_read_gbps", "?")
    if args.get("drive_backing") == "hbm" and bulk_gbps and isinstance(n, int) and isinstance(rate, (int, float)):
        share = _med(bulk_gbps if isinstance(bulk_gbps, list) else [bulk_gbps]) / n
        if share < rate:
            return f"{n} drives MODELLED in HBM, read at {share:.1f} GB/s each (bulk H2D / {n})"
    return f"{n} drives MODELLED at {rate} GB/s read each"


def ttft(doc, out):
    rows = [r for r in doc["results"] if "error" not in r]
    ts = sorted({r["T"] for r in rows})
    if not ts:
        raise ValueError("no measured rows")
    note = (f"Llama3-8B (random bf16 weights) on {doc.get('env', {}).get('gpu', '?')}; TTFT measured; SSD tier: "
            + drives_note(doc.get("args", {}), doc.get("bulk_gbps")))
    # 1. TTFT against hit rate (x: the miss rate on a log axis, labelled as hit rates; y: log).
    fig, axes = plt.subplots(1, len(ts), figsize=(max(4.2 * len(ts), 6.5), 4.6), squeeze=False)
    for ax, T in zip(axes[0], ts):
        for system, (color, marker) in TTFT_STYLE.items():
            pts = sorted((r["hit"], r["ttft_s"]) for r in rows if r["T"] == T and r["system"] == system)
            if not pts:
                continue
            x = [1 - h for h, _ in pts]
            y = [_med(v) * 1e3 for _, v in pts]
            lo = [yy - min(v) * 1e3 for yy, (_, v) in zip(y, pts)]
            hi = [max(v) * 1e3 - yy for yy, (_, v) in zip(y, pts)]
            ax.errorbar(x, y, yerr=[lo, hi], color=color, marker=marker, markersize=4, capsize=2, label=system)
        rec = [r for r in rows if r["T"] == T and r["system"] == "recompute"]
        if rec:
            ax.axhline(_med(rec[0]["ttft_s"]) * 1e3, color="grey", linestyle="--", linewidth=1, label="recompute")
        ax.set_xscale("log")
        ax.set_yscale("log")  # recompute's seconds beside the restored prefills' tens of ms: both readable
        ax.invert_xaxis()
        ticks = sorted({1 - r["hit"] for r in rows if r["T"] == T and r["system"] != "recompute"})
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{100 * (1 - t):g}" for t in ticks], rotation=60, fontsize=7)
        ax.minorticks_off()
        ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.set_xlabel("hit rate, %")
        ax.set_ylabel("time to first token, ms")
        ax.set_title(f"{T // 1024}K-token context", fontsize=10)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle(textwrap.fill(note, 110), fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=130)
    plt.close(fig)
    base = out[:-4]
    # 2. The GPU's wait per layer (bubble), at the highest hit rate of the longest context.
    T = ts[-1]
    io = [r for r in rows if r["T"] == T and any(r.get("bubble_layer_ms") or []) and r["system"] in TTFT_STYLE
          and r["system"] != "hbm"]  # systems whose waits were timed (events around each layer's wait)
    if io:
        h = max(r["hit"] for r in io)
        fig, ax = plt.subplots(figsize=(7, 4))
        for r in io:
            if r["hit"] == h:
                color, marker = TTFT_STYLE[r["system"]]
                ax.plot(range(len(r["bubble_layer_ms"])), r["bubble_layer_ms"], color=color, marker=marker,
                        markersize=3, label=f"{r['system']} (sum {sum(r['bubble_layer_ms']):.1f} ms)")
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.set_xlabel("layer")
        ax.set_ylabel("compute stream waiting for its layer's KV, ms")
        ax.set_title(f"{T // 1024}K tokens, hit rate {100 * h:g}%: the GPU's wait per layer (measured)", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(base + "-bubble.png", dpi=130)
        plt.close(fig)
        print(base + "-bubble.png")
    # 3. Crossover per system, beside the physical limit: bars where the bubble (the GPU's waits)
    # passes 5% of TTFT, crosses where TTFT over hbm does (files before the split have the latter only).
    cross = doc.get("analysis", {}).get("crossover", [])
    systems = [s for s in TTFT_STYLE if s not in ("hbm", "hbm-part") and any(c["system"] == s for c in cross)]
    if cross and systems:
        fig, ax = plt.subplots(figsize=(7, 4))
        width = 0.8 / (len(systems) + 1)
        top = max(r["hit"] for r in rows)
        onset_drawn = False
        for i, T in enumerate(ts):
            cs = {c["system"]: c for c in cross if c["T"] == T}
            for j, system in enumerate(systems):
                c = cs.get(system)
                if c is None:
                    continue
                timed = "crossover_wait" in c and c.get("waits_timed", True)
                v = c["crossover_wait"] if timed else c["crossover"]
                ax.bar(i + j * width, 100 * (v if v is not None else top), width, color=TTFT_STYLE[system][0],
                       hatch=None if v is not None else "//", alpha=1.0 if v is not None else 0.35,
                       label=system if i == 0 else None)
                if timed and c["crossover"] is not None:
                    ax.plot(i + j * width, 100 * c["crossover"], marker="x", color="black", markersize=6,
                            label="TTFT over hbm > 5%" if i == 0 and j == 0 else None)
                if c.get("onset") is not None and not c.get("onset_below_grid"):  # files before it have none
                    ax.plot(i + j * width, 100 * c["onset"], marker="v", color="tab:red", markersize=6,
                            label="measured loads = compute (no threshold)" if not onset_drawn else None)
                    onset_drawn = True
            lim = next((c["limit"] for c in cs.values() if c.get("limit") is not None), None)
            if lim is not None:
                ax.plot([i - width / 2, i + len(systems) * width - width / 2], [100 * lim] * 2, color="black",
                        linewidth=2, label="physical limit (bulk H2D)" if i == 0 else None)
            ideal = next((c["ideal"] for c in cs.values() if c.get("ideal") is not None), None)
            if ideal is not None:  # files before the ideal mover have none
                ax.plot([i - width / 2, i + len(systems) * width - width / 2], [100 * ideal] * 2, color="black",
                        linestyle="--", linewidth=1, label="an ideal mover's crossover (modelled)" if i == 0 else None)
        ax.set_xticks([i + (len(systems) - 1) * width / 2 for i in range(len(ts))])
        ax.set_xticklabels([f"{T // 1024}K" for T in ts])
        lows = [c["crossover"] for c in cross if c["crossover"] is not None] + [r["hit"] for r in rows if r["hit"]]
        ax.set_ylim(100 * min(lows) - 2, 100.5)
        ax.set_ylabel("hit rate where the GPU's waits pass 5% of TTFT, %")
        ax.set_title("crossover per system (hatched: not reached in the grid; offload: TTFT over hbm, its waits untimed)",
                     fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(base + "-crossover.png", dpi=130)
        plt.close(fig)
        print(base + "-crossover.png")


def main(paths):
    if not paths:
        print(__doc__)
        return 2
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        out = path[:-5] + ".png" if path.endswith(".json") else path + ".png"
        kind = doc.get("bench")
        if kind == "gpu_cmdrate":
            cmdrate(doc, out)
        elif kind in ("kv_restore", "kv_baselines"):
            restore(doc, out)
        elif kind == "gpu_file":
            gpu_file(doc, out)
        elif kind == "bench_kv_layer":
            kv_layer(doc, out)
        elif kind == "bench_sched":
            sched(doc, out)
        elif kind == "ttft_llama" or "kv_token_bytes" in doc:  # files before the "bench" key had none
            ttft(doc, out)
        else:
            print(f"{path}: no plot for bench '{kind}'", file=sys.stderr)
            continue
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
