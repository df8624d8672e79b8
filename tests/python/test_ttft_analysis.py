"""bench/ttft_llama.py's analysis on figures given here (nothing is measured): the crossover's
interpolation, the cost and endurance arithmetic, and bench/plot.py drawing the three plots
(where matplotlib is installed)."""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def bench():
    spec = importlib.util.spec_from_file_location("ttft_llama", os.path.join(ROOT, "bench", "ttft_llama.py"))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def args(**kw):
    d = dict(gpu_usd_h=5.0, dram_usd_gb_h=0.0088, ssd_usd_gb_h=0.000082, drives=4, drive_tb=7.68, drive_dwpd=1.0)
    d.update(kw)
    return argparse.Namespace(**d)


def test_the_crossover_is_interpolated_where_the_bubble_passes_its_bound():
    m = bench()
    assert m.crossing([(0.5, -0.1), (0.9, -0.05), (0.99, 0.05)], first_positive=True) == pytest.approx(0.945)
    assert m.crossing([(0.5, 0.01), (0.9, 0.2)], first_positive=True) == 0.5  # above it from the start
    assert m.crossing([(0.5, 0.01), (0.9, 0.2)]) is None  # the physical limit: no crossing below
    assert m.crossing([(0.5, -0.1), (0.99, -0.01)], first_positive=True) is None


def test_cost_and_endurance_follow_the_stated_prices():
    m = bench()
    T, token = 8192, 131072  # Llama3-8B: 32 layers x K and V x 8 heads x 128 x bf16
    hbm = {0.5: dict(ttft_s=[0.17])}
    by = {(T, "giouring-sched"): [dict(hit=0.5, C=4096, ttft_s=[0.18, 0.19])],
          (T, "offload"): [dict(hit=0.5, C=4096, ttft_s=[0.2])],
          (T, "giouring-naive"): [dict(hit=0.9, C=7360, ttft_s=[0.05])]}  # no hbm row at 0.9: left out
    rows = {r["system"]: r for r in m.cost_rows(args(), T, [0.276], hbm, by, token)}
    assert set(rows) == {"recompute", "giouring-sched", "offload"}
    rec = rows["recompute"]
    assert rec["tokens_per_s"] == pytest.approx(T / 0.276)
    assert rec["gpu_usd_per_mtok"] == pytest.approx(5.0 * 1e6 / (T / 0.276) / 3600)
    assert rec["hold_usd_per_mtok_h"] == 0 and rec["dwpd"] == 0
    s = rows["giouring-sched"]
    tps = T / 0.185  # the median of the two repetitions
    assert s["tokens_per_s"] == pytest.approx(tps)
    assert s["hold_usd_per_mtok_h"] == pytest.approx(1e6 * token / 1e9 * 0.000082)
    assert s["written_gb_per_mtok"] == pytest.approx(1e6 * token / 1e9 * 0.5)
    assert s["dwpd"] == pytest.approx(tps * 86400 * 0.5 * token / (4 * 7.68e12))
    o = rows["offload"]  # a DRAM tier: charged at DRAM's price, no SSD writes
    assert o["hold_usd_per_mtok_h"] == pytest.approx(1e6 * token / 1e9 * 0.0088)
    assert o["written_gb_per_mtok"] == 0 and o["dwpd"] == 0


def test_the_bubble_is_the_gpus_wait_and_the_partition_is_charged_apart():
    """TTFT over hbm counts everything a system costs; the bubble is the compute stream's timed
    waits; the scheduler's TTFT is also compared with hbm on its own partition's SMs."""
    m = bench()
    T, L = 8192, 4
    rows = [dict(T=T, hit=0.0, system="recompute", ttft_s=[0.3])]
    for h, C, base, part, sched, wait in ((0.5, 4096, 0.200, 0.210, 0.212, 0.001), (0.9, 7360, 0.100, 0.106, 0.112, 0.004),
                                          (0.99, 8096, 0.050, 0.052, 0.060, 0.0045)):
        rows += [dict(T=T, hit=h, C=C, system="hbm", ttft_s=[base], layer_ms=[base * 250] * L, bubble_layer_ms=[0.0] * L),
                 dict(T=T, hit=h, C=C, system="hbm-part", ttft_s=[part], layer_ms=[part * 250] * L,
                      bubble_layer_ms=[0.0] * L),
                 dict(T=T, hit=h, C=C, system="giouring-sched", ttft_s=[sched], layer_ms=[sched * 250] * L,
                      bubble_layer_ms=[wait * 250] * L, io_wait_layer_ms=[wait * 125] * L),
                 dict(T=T, hit=h, C=C, system="giouring-sched-static", ttft_s=[sched * 1.1], layer_ms=[sched * 275] * L,
                      bubble_layer_ms=[wait * 500] * L),
                 dict(T=T, hit=h, C=C, system="giouring-staged", ttft_s=[sched * 2], layer_ms=[sched * 500] * L,
                      bubble_layer_ms=[wait * 2500] * L, io_wait_layer_ms=[wait * 2000] * L),
                 dict(T=T, hit=h, C=C, system="offload", ttft_s=[base * 1.5], layer_ms=[base * 375] * L)]
    b = argparse.Namespace(contexts=[T], bulk=[50.0], args=args(), kv_token_bytes=4096, L=L)
    an = m.analyse(b, rows)
    s = {r["hit"]: r for r in rows if r["system"] == "giouring-sched"}
    assert s[0.9]["bubble_s"] == pytest.approx(0.012) and s[0.9]["bubble_frac"] == pytest.approx(0.012 / 0.112)
    assert s[0.9]["wait_s"] == pytest.approx(0.004) and s[0.9]["wait_frac"] == pytest.approx(0.004 / 0.112)
    assert s[0.9]["over_part_s"] == pytest.approx(0.006)
    # The I/O stall by the GPU's clock inside the waits: half the event-timed waits here.
    assert s[0.9]["io_wait_s"] == pytest.approx(0.002) and s[0.9]["io_wait_frac"] == pytest.approx(0.002 / 0.112)
    c = {x["system"]: x for x in an["crossover"]}
    assert "hbm-part" not in c  # a reference, not a system with a crossover
    # waits: 0.5% -> 3.6% -> 7.5% of TTFT: 5% is passed between 0.9 and 0.99, interpolated
    w0, w1 = 0.004 / 0.112 - 0.05, 0.0045 / 0.060 - 0.05
    assert c["giouring-sched"]["crossover_wait"] == pytest.approx(0.9 + 0.09 * -w0 / (w1 - w0))
    assert c["giouring-sched"]["crossover"] == 0.5  # TTFT over hbm: above 5% from the first point (0.012 / 0.212)
    assert c["giouring-sched"]["crossover_io_wait"] is None  # 3.75% at most: never above 5%
    assert c["offload"]["crossover_io_wait"] is None and "io_wait_s" not in rows[-1]
    assert c["offload"]["waits_timed"] is False and c["offload"]["crossover"] == 0.5
    # The uncorrected scheduler is a system of its own, charged against the same partition.
    st = {r["hit"]: r for r in rows if r["system"] == "giouring-sched-static"}
    assert st[0.9]["over_part_s"] == pytest.approx(0.112 * 1.1 - 0.106)
    assert c["giouring-sched-static"]["crossover_wait"] < c["giouring-sched"]["crossover_wait"]
    assert any(r["system"] == "giouring-sched-static" for r in an["cost"])
    # The staged path's system: under the scheduler on the same partition, an SSD tier.
    sg = {r["hit"]: r for r in rows if r["system"] == "giouring-staged"}
    assert sg[0.9]["over_part_s"] == pytest.approx(0.224 - 0.106)
    assert sg[0.9]["io_wait_s"] == pytest.approx(0.032)
    assert c["giouring-staged"]["crossover_wait"] is not None and "compute_over_part_frac" in c["giouring-staged"]
    assert [r["written_gb_per_mtok"] > 0 for r in an["cost"] if r["system"] == "giouring-staged"] == [True] * 3


def test_plot_draws_ttft_bubbles_and_crossovers(tmp_path):
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        plot_python = "/usr/bin/python3"
        r = subprocess.run([plot_python, "-c", "import matplotlib"], capture_output=True)
        if r.returncode:
            pytest.skip("no matplotlib")
    else:
        plot_python = sys.executable
    rows = [dict(T=8192, hit=0.0, system="recompute", ttft_s=[0.276])]
    for h, base in ((0.5, 0.17), (0.9, 0.05), (0.99, 0.02)):
        C = int(h * 8192) // 16 * 16
        for system, extra in (("hbm", 0.0), ("giouring-sched", 0.001), ("offload", 0.01 / (1.01 - h))):
            rows.append(dict(T=8192, hit=h, C=C, N=8192 - C, system=system, ttft_s=[base + extra, base + 1.1 * extra],
                             layer_ms=[1.0] * 4, bubble_layer_ms=[extra * 250] * 4))
    doc = dict(bench="ttft_llama", env=dict(gpu="test"), args=dict(drives=4, drive_read_gbps=14.0), results=rows,
               analysis=dict(crossover=[dict(T=8192, system="giouring-sched", crossover=0.5, crossover_wait=None,
                                             limit=0.98, waits_timed=True, onset=0.975, onset_below_grid=False),
                                        dict(T=8192, system="offload", crossover=0.93, crossover_wait=None,
                                             limit=0.98, waits_timed=False)]))
    path = tmp_path / "ttft.json"
    path.write_text(json.dumps(doc))
    r = subprocess.run([plot_python, os.path.join(ROOT, "bench", "plot.py"), str(path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    for name in ("ttft.png", "ttft-bubble.png", "ttft-crossover.png"):
        assert (tmp_path / name).stat().st_size > 10000, name
    # The title gives the rate stand-ins in HBM were read at: their share of bulk H2D where lower.
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import plot; "
            "print(plot.drives_note(dict(drives=4, drive_read_gbps=14.0, drive_backing='hbm'), [55.3, 55.1, 55.2])); "
            "print(plot.drives_note(dict(drives=4, drive_read_gbps=14.0, drive_backing='hbm'), [60.0])); "
            "print(plot.drives_note(dict(drives=4, drive_read_gbps=14.0, drive_backing='host'), [55.2]))")
    r = subprocess.run([plot_python, "-c", code, os.path.join(ROOT, "bench")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["4 drives MODELLED in HBM, read at 13.8 GB/s each (bulk H2D / 4)",
                                     "4 drives MODELLED at 14.0 GB/s read each",
                                     "4 drives MODELLED at 14.0 GB/s read each"]


def test_a_baseline_that_would_make_pytorch_free_its_cache_is_skipped_saying_why():
    m = bench()
    assert m.memory_short(10 << 30, 20 << 30, "x") is None
    why = m.memory_short(int(35.2 * 2**30), 8 << 30, "transformers' offloaded cache")
    assert why.startswith("skipped: transformers' offloaded cache needs about 35.2 GiB")
    assert "8.0 GiB free" in why and "cudaFree" in why


def test_gc_paused_enables_the_collector_again_also_after_an_error():
    m = bench()
    with pytest.raises(ZeroDivisionError):
        with m.gc_paused("paused"):
            assert not gc.isenabled()
            1 / 0
    assert gc.isenabled()
    with m.gc_paused("on"):
        assert gc.isenabled()


def test_the_reference_prefill_keeps_its_last_run_when_recompute_is_not_measured():
    """Without recompute among the systems the reference prefill runs once; it used to delete
    that run's output as if more were to come (--reps above 1), and the bench failed at warm-up."""
    import types

    import torch

    m = bench()

    class Layer:
        def __init__(self):
            self.keys = torch.zeros(1)
            self.values = torch.ones(1)

    class Cache:
        def __init__(self, config=None):
            self.layers = [Layer(), Layer()]

    calls = []

    def model(input_ids=None, past_key_values=None, use_cache=True, logits_to_keep=1):
        calls.append(gc.isenabled())
        return types.SimpleNamespace(logits=torch.arange(6, dtype=torch.float32).reshape(1, 2, 3))

    for systems, runs, mode in (("hbm,giouring-sched", 1, "paused"), ("hbm,recompute", 3, "on")):
        calls.clear()
        fake = types.SimpleNamespace(args=argparse.Namespace(reps=3, systems=systems, gc=mode), model=model, cfg=None,
                                     L=2, sync=lambda: None)
        times, logits, ref, tok = m.Bench.prefill_reference(fake, 8, torch.zeros(1, 8), cache_cls=Cache)
        assert len(calls) == len(times) == runs
        assert calls == [mode == "on"] * runs and gc.isenabled()  # paused only while timed
        assert tok == 2 and logits.tolist() == [3.0, 4.0, 5.0]
        assert len(ref) == 2 and ref[1][1].item() == 1.0


def test_compute_beside_io_is_the_layer_less_its_wait_against_the_partition_alone():
    """A system's layers, less their waits, against hbm-part's same layers: what computing beside
    the I/O costs. The first layer (its load starts with the prefill) and the last (no load in
    flight) are left out. A crossover above the physical limit is flagged when that compute was
    slower: slower compute hides more I/O, so such a crossover is no win."""
    m = bench()
    T, L = 8192, 6
    part_layers = [2.0, 1.0, 1.0, 1.0, 1.0, 1.0]
    rows = []
    for h, C in ((0.9, 7360), (0.99, 8096)):
        rows += [dict(T=T, hit=h, C=C, system="hbm", ttft_s=[0.006], layer_ms=[1.0] * L, bubble_layer_ms=[0.0] * L),
                 dict(T=T, hit=h, C=C, system="hbm-part", ttft_s=[0.0065], layer_ms=part_layers,
                      bubble_layer_ms=[0.0] * L),
                 # layers 1-4: 1.6 ms of which 0.1 waiting -> 0.5 ms slower compute (50%)
                 dict(T=T, hit=h, C=C, system="giouring-sched", ttft_s=[0.0105],
                      layer_ms=[3.0, 1.6, 1.6, 1.6, 1.6, 1.0], bubble_layer_ms=[1.0, 0.1, 0.1, 0.1, 0.1, 0.0]),
                 dict(T=T, hit=h, C=C, system="giouring-naive", ttft_s=[0.007], layer_ms=[2.0] + [1.0] * 5,
                      bubble_layer_ms=[0.0] * L)]
    b = argparse.Namespace(contexts=[T], bulk=[50.0], args=args(), kv_token_bytes=4096, L=L)
    an = m.analyse(b, rows)
    s = {(r["system"], r["hit"]): r for r in rows}
    assert s[("giouring-sched", 0.9)]["compute_over_part_ms"] == pytest.approx(0.5)
    assert s[("giouring-sched", 0.9)]["compute_over_part_frac"] == pytest.approx(0.5)
    assert s[("giouring-naive", 0.9)]["compute_over_part_ms"] == pytest.approx(0.0)
    assert "compute_over_part_ms" not in s[("hbm", 0.9)]
    c = {x["system"]: x for x in an["crossover"]}
    assert c["giouring-sched"]["compute_over_part_frac"] == pytest.approx(0.5)  # its median over the hit rates
    assert c["giouring-naive"]["compute_over_part_frac"] == pytest.approx(0.0)


def test_report_from_a_saved_json_gives_the_same_analysis(tmp_path, capsys):
    """--report: the analysis and tables again from the JSON a run wrote, without a GPU."""
    m = bench()
    T, L = 8192, 4
    rows = []
    for h, C in ((0.9, 7360), (0.99, 8096)):
        rows += [dict(T=T, hit=h, C=C, system="hbm", ttft_s=[0.004], layer_ms=[1.0] * L, bubble_layer_ms=[0.0] * L),
                 dict(T=T, hit=h, C=C, system="hbm-part", ttft_s=[0.0041], layer_ms=[1.0] * L, bubble_layer_ms=[0.0] * L),
                 dict(T=T, hit=h, C=C, system="giouring-sched", ttft_s=[0.005], layer_ms=[1.3] * L,
                      bubble_layer_ms=[0.1] * L, io_wait_layer_ms=[0.05] * L)]
    a = args(io_sms=8)
    path = tmp_path / "ttft.json"
    path.write_text(json.dumps(dict(bench="ttft_llama", env={}, args=vars(a), bulk_gbps=[50.0], results=rows,
                                    kv_token_bytes=4096, layers=L)))
    an = m.report_from(str(path))
    c = {x["system"]: x for x in an["crossover"]}
    assert c["giouring-sched"]["compute_over_part_frac"] == pytest.approx(0.2)
    out = capsys.readouterr().out
    assert "| 8K | 0.900 | giouring-sched |" in out and "0.20 (20.0%)" in out


def test_the_physical_limit_on_the_compute_side_uses_the_partitions_own_layers():
    """The limit is where a layer's prefix at the bulk H2D bandwidth takes as long as the layer:
    with hbm's layers (every SM) and, for the systems that compute on the compute side, with
    hbm-part's (fewer SMs, longer layers, so a later limit)."""
    m = bench()
    T, L, bulk, kvb = 16384, 4, 50.0, 4096
    rows = []
    for h in (0.5, 0.9):
        C = int(h * T)
        rows += [dict(T=T, hit=h, C=C, system="hbm", ttft_s=[0.004], layer_ms=[1.0] * L, bubble_layer_ms=[0.0] * L),
                 dict(T=T, hit=h, C=C, system="hbm-part", ttft_s=[0.0044], layer_ms=[1.1] * L,
                      bubble_layer_ms=[0.0] * L)]

    def limit(layer_s):
        (h0, c0), (h1, c1) = [(h, int(h * T) * kvb / (bulk * 1e9) - layer_s) for h in (0.5, 0.9)]
        return h0 + (h1 - h0) * (-c0) / (c1 - c0)

    b = argparse.Namespace(contexts=[T], bulk=[bulk], args=args(), kv_token_bytes=kvb, L=L)
    row = m.analyse(b, rows)["rows"][0]
    assert row["limit"] == pytest.approx(limit(1.0e-3))
    assert row["limit_part"] == pytest.approx(limit(1.1e-3))
    assert row["limit_part"] > row["limit"]
    # Without hbm-part there is no compute side's limit.
    row = m.analyse(b, [r for r in rows if r["system"] == "hbm"])["rows"][0]
    assert row["limit_part"] is None


def test_the_stand_in_drives_uris_carry_backing_warps_and_the_model():
    """The stand-in drives: backing in mapped host memory (copied across PCIe by executor warps) or
    in HBM; executor SMs and warps (0: the target's default); the timing model; extra parameters
    last, and a warps= among them wins over --exec-warps."""
    m = bench()
    a = argparse.Namespace(drives=2, exec_sms=2, exec_warps=2, drive_backing="host", drive_params="",
                           drive_read_gbps=14.0, drive_write_gbps=7.0, drive_mixed_gbps=3.0)
    uris = m.drive_uris(a, 512 << 20)
    assert uris == ["mem://host?exec=gpu&size=512M&sms=2&warps=2&model_read_gbps=14.0&model_write_gbps=7.0"
                    "&model_mixed_gbps=3.0"] * 2
    a.drive_backing, a.exec_warps, a.drive_params = "hbm", 0, "queues=4"
    assert m.drive_uris(a, 1 << 30)[0] == ("mem://hbm?size=1024M&sms=2&model_read_gbps=14.0&model_write_gbps=7.0"
                                          "&model_mixed_gbps=3.0&queues=4")
    a.exec_warps, a.drive_params = 2, "&warps=8"
    assert "warps=2" not in m.drive_uris(a, 1 << 30)[0] and m.drive_uris(a, 1 << 30)[0].endswith("&warps=8")


def test_stand_in_drives_in_hbm_read_no_faster_than_the_link_a_real_drive_crosses():
    """Backed by HBM, the stand-ins' data never crosses PCIe; a real drive's DMA does. The first
    H100 run of 32K with 4 drives of 14 GB/s (56 GB/s) beside a bulk H2D of 52.5 GB/s crossed 0.53
    points past the physical limit, which no machine could: their reads are capped at the measured
    bulk H2D shared by the drives; in host memory they cross PCIe already, and are not."""
    m = bench()
    a = argparse.Namespace(drives=4, exec_sms=2, exec_warps=0, drive_backing="hbm", drive_params="",
                           drive_read_gbps=14.0, drive_write_gbps=7.0, drive_mixed_gbps=3.0)
    assert "model_read_gbps=13.125&" in m.drive_uris(a, 1 << 30, bulk_gbps=52.5)[0]
    assert "model_read_gbps=14.0&" in m.drive_uris(a, 1 << 30, bulk_gbps=60.0)[0]
    assert "model_read_gbps=14.0&" in m.drive_uris(a, 1 << 30)[0]  # no bulk measured: the model as given
    a.drive_backing = "host"
    assert "model_read_gbps=14.0&" in m.drive_uris(a, 1 << 30, bulk_gbps=52.5)[0]


def test_the_goals_judge_the_stall_crossover_against_the_limit_and_the_bubble_below_it():
    """The issue's goals, from the analysed rows: the crossover by the GPU clock within 0.3 points
    of the physical limit, the largest bubble at the hit rates below the limit at most 5% of TTFT,
    and the I/O SMs; 'cannot tell' (None) where the grid never reaches the limit or the crossover."""
    m = bench()
    T, L, bulk, kvb = 16384, 4, 50.0, 4096
    layer_ms = 1.0
    # The limit: C x kvb / bulk = 1 ms a layer at C = 12207 tokens: h = 0.745
    rows = []
    stall = {0.5: 0.001, 0.7: 0.04, 0.745: 0.045, 0.75: 0.2}  # fraction of TTFT in the waits' GPU clock
    for h, f in stall.items():
        C = int(h * T)
        t = 0.01
        rows += [dict(T=T, hit=h, C=C, system="hbm", ttft_s=[t], layer_ms=[layer_ms] * L, bubble_layer_ms=[0.0] * L),
                 dict(T=T, hit=h, C=C, system="hbm-part", ttft_s=[t], layer_ms=[layer_ms] * L, bubble_layer_ms=[0.0] * L),
                 dict(T=T, hit=h, C=C, system="giouring-sched", ttft_s=[t], layer_ms=[layer_ms] * L,
                      bubble_layer_ms=[f * t * 1e3 / L * 1.2] * L, io_wait_layer_ms=[f * t * 1e3 / L] * L)]
    b = argparse.Namespace(contexts=[T], bulk=[bulk], args=args(io_sms=8), kv_token_bytes=kvb, L=L)
    an = m.analyse(b, rows)
    lim = an["rows"][0]["limit"]
    assert lim == pytest.approx(0.745, abs=0.001)
    g = an["goals"][0]
    assert g["system"] == "giouring-sched" and g["crossover_by"] == "I/O stall (GPU clock)"
    # 5% crossed between 0.745 (4.5%) and 0.75 (20%): 0.745 + 0.005 x 0.5 / 15.5, within 0.3 points
    assert g["crossover"] == pytest.approx(0.745 + 0.005 * 0.005 / 0.155)
    assert g["gap"] == pytest.approx(lim - g["crossover"]) and abs(g["gap"]) < 0.003 and g["crossover_met"] is True
    # Below the limit (0.745 moves 0.9999 ms a layer, just under it): 0.5, 0.7, 0.745; the largest stall 4.5%
    assert g["points_below"] == 3 and g["bubble_max"] == pytest.approx(0.045) and g["bubble_met"] is True
    assert g["bubble_max_events"] == pytest.approx(0.045 * 1.2) and g["io_sms_met"] is True
    # A stall of 6% at 0.7 (below the limit): the bubble goal fails, and the crossover is 0.3+ points early.
    for r in rows:
        if r["system"] == "giouring-sched" and r["hit"] == 0.7:
            r["io_wait_layer_ms"] = [0.06 * 10 / L] * L
    g = m.analyse(b, rows)["goals"][0]
    assert g["bubble_met"] is False and g["bubble_max"] == pytest.approx(0.06)
    assert g["crossover"] < 0.7 and g["crossover_met"] is False
    # Never crossing within the grid and no limit within it (a host-bound context): cannot tell.
    few = [r for r in rows if r["hit"] <= 0.5]
    g = m.analyse(b, few)["goals"][0]
    assert g["limit"] is None and g["crossover"] is None and g["crossover_met"] is None
    assert g["bubble_met"] is True and g["points_below"] == 1
    # With 16 I/O SMs the SM goal fails.
    b16 = argparse.Namespace(contexts=[T], bulk=[bulk], args=args(io_sms=16), kv_token_bytes=kvb, L=L)
    assert m.analyse(b16, rows)["goals"][0]["io_sms_met"] is False


def test_the_stand_in_drives_hold_the_room_asked_for_and_no_less_than_a_prefix_and_a_run():
    """--drive-room sizes the drives in units of the largest prefix: 2.5 (the default) at 64K
    took 21 GiB of an H100's 79 with the drives in HBM, and the model ran out of memory; 1.25
    leaves the model 10 GiB more. Less than 1.25 would evict the prefix during a run: refused."""
    m = bench()
    a = argparse.Namespace(drives=4, drive_room=2.5)
    prefix = 8 << 30  # 64K tokens of Llama3-8B KV
    assert m.drive_bytes(a, prefix) == (5 << 30) + (256 << 20)
    a.drive_room = 1.25
    assert m.drive_bytes(a, prefix) == (2560 << 20) + (256 << 20)
    assert m.drive_bytes(a, 3 << 20) % (1 << 20) == 0  # whole MiB: the URI's size= is in MiB
    a.drive_room = 1.0
    with pytest.raises(SystemExit, match="drive-room"):
        m.drive_bytes(a, prefix)


def test_an_ideal_mover_crosses_past_the_limit_where_the_layers_shorten_slowly():
    """The ideal mover (modelled): the prefix at bulk H2D, layer l + 1's load behind layer l, nothing
    else. Its stall starts at the physical limit and passes 5% of TTFT only as far past it as the
    layers' shortening allows; a system is judged against it by the same 5% criterion on the same grid."""
    m = bench()
    T, L, bulk, kvb = 16384, 4, 50.0, 4096
    # Loads (C x kvb / bulk): 0.745 -> 0.99995 ms, 0.76 -> 1.0200 ms, 0.78 -> 1.0469 ms a layer.
    layer_ms = {0.7: 1.01, 0.745: 1.005, 0.76: 1.0, 0.78: 0.995}
    rows = []
    for h, lay in layer_ms.items():
        C = int(h * T)
        rows += [dict(T=T, hit=h, C=C, system=s, ttft_s=[L * lay / 1e3], layer_ms=[lay] * L, bubble_layer_ms=[0.0] * L)
                 for s in ("hbm", "hbm-part")]
        rows.append(dict(T=T, hit=h, C=C, system="giouring-sched", ttft_s=[L * lay / 1e3], layer_ms=[lay] * L,
                         bubble_layer_ms=[0.0] * L, io_wait_layer_ms=[0.0] * L))

    def ideal_frac(h):
        C, lay = int(h * T), layer_ms[h] / 1e3
        stall = (L - 1) * max(0.0, C * kvb / (bulk * 1e9) - lay)
        return stall / (L * lay + stall)

    # The ideal's stall: 0 at 0.745 (the load just under the layer), 1.5% at 0.76, 3.9% at 0.78: no
    # crossover within the grid although the limit (between 0.745 and 0.76) is.
    assert ideal_frac(0.745) == 0 and 0.01 < ideal_frac(0.76) < ideal_frac(0.78) < 0.05
    parts = {r["hit"]: r for r in rows if r["system"] == "hbm-part"}
    assert m.ideal_crossover(parts, bulk, kvb) is None
    b = argparse.Namespace(contexts=[T], bulk=[bulk], args=args(io_sms=8), kv_token_bytes=kvb, L=L)
    an = m.analyse(b, rows)
    assert 0.745 < an["rows"][0]["limit"] < 0.76 and an["rows"][0]["ideal"] is None
    # A hit rate more, where its stall is 7.6%: it crosses there, interpolated as the systems' are.
    h, C, lay = 0.8, int(0.8 * T), 0.99
    rows += [dict(T=T, hit=h, C=C, system=s, ttft_s=[L * lay / 1e3], layer_ms=[lay] * L, bubble_layer_ms=[0.0] * L)
             for s in ("hbm", "hbm-part")]
    layer_ms[h] = lay
    # giouring-sched's stall: 6% at 0.78 already (crossing before the ideal does), 9% at 0.8.
    rows.append(dict(T=T, hit=h, C=C, system="giouring-sched", ttft_s=[L * lay / 1e3], layer_ms=[lay] * L,
                     bubble_layer_ms=[0.0] * L, io_wait_layer_ms=[0.09 * L * lay / L] * L))
    for r in rows:
        if r["system"] == "giouring-sched" and r["hit"] == 0.78:
            r["io_wait_layer_ms"] = [0.06 * L * layer_ms[0.78] / L] * L
    want = 0.78 + 0.02 * (0.05 - ideal_frac(0.78)) / (ideal_frac(0.8) - ideal_frac(0.78))
    an = m.analyse(b, rows)
    assert an["rows"][0]["ideal"] == pytest.approx(want)
    g = an["goals"][0]
    assert g["ideal"] == pytest.approx(want) and g["crossover"] < 0.78
    assert g["gap_ideal"] == pytest.approx(want - g["crossover"]) and g["gap_ideal"] > 0
    # The ideal uses the compute side's layers where hbm-part ran, hbm's otherwise.
    slow = [dict(r, layer_ms=[x * 1.01 for x in r["layer_ms"]]) if r["system"] == "hbm-part" else r for r in rows]
    assert m.analyse(b, slow)["rows"][0]["ideal"] > want
    assert m.analyse(b, [r for r in slow if r["system"] != "hbm-part"])["rows"][0]["ideal"] == pytest.approx(want)


def test_the_onset_is_where_the_measured_loads_take_as_long_as_the_compute_beside_them(tmp_path, capsys):
    """The crossover with no threshold: per forward, the median over layers l = 1 .. L-2 of layer
    l + 1's load less layer l's compute (its time less its wait), interpolated to zero on the grid
    like the physical limit, and judged against it (within 0.3 points)."""
    m = bench()
    T, L, bulk, kvb = 16384, 5, 50.0, 4096
    rows = []
    for h in (0.5, 0.9):
        C = int(h * T)
        rows.append(dict(T=T, hit=h, C=C, system="hbm", ttft_s=[0.005], layer_ms=[1.0] * L, bubble_layer_ms=[0.0] * L))
    # giouring-sched: load - compute -0.246 ms at 50%, +0.154 at 90% (a layer untimed: left out).
    rows.append(dict(T=T, hit=0.5, C=8192, system="giouring-sched", ttft_s=[0.006], layer_ms=[2.0] + [1.2] * 4,
                     bubble_layer_ms=[0.5] + [0.054] * 4, load_layer_ms=[0.5, 0.9, None, 0.9, 0.9]))
    rows.append(dict(T=T, hit=0.9, C=14745, system="giouring-sched", ttft_s=[0.007], layer_ms=[2.0] + [1.3] * 4,
                     bubble_layer_ms=[0.5] + [0.154] * 4, load_layer_ms=[0.5] + [1.3] * 4, host_start_ms=0.8,
                     host_layers_ms=1.25))
    # giouring-sched-static: loads 0.2 ms longer, so they stop hiding 20 points earlier; giouring-staged:
    # twice as long, never hidden within the grid.
    for name, slower in (("giouring-sched-static", lambda x: x + 0.2), ("giouring-staged", lambda x: 2 * x)):
        for r in rows[2:4]:
            rows.append(dict(r, system=name, load_layer_ms=[None if x is None else slower(x) for x in r["load_layer_ms"]]))
    assert m.load_margin_ms(rows[2]) == pytest.approx(-0.246)
    assert m.load_margin_ms(rows[3]) == pytest.approx(0.154)
    assert m.load_margin_ms(rows[0]) is None  # no load times
    assert m.load_margin_ms(dict(rows[3], layer_ms=[1.0, 1.0], bubble_layer_ms=[0, 0], load_layer_ms=[1, 1])) is None
    limit = 0.5 + 0.4 * (1.0 - 8192 * kvb / bulk / 1e6) / ((14745 - 8192) * kvb / bulk / 1e6)
    a = args(io_sms=8)
    path = tmp_path / "ttft.json"
    path.write_text(json.dumps(dict(bench="ttft_llama", env={}, args=vars(a), bulk_gbps=[bulk], results=rows,
                                    kv_token_bytes=kvb, layers=L)))
    an = m.report_from(str(path))
    g = {x["system"]: x for x in an["goals"]}
    assert g["giouring-sched"]["limit"] == pytest.approx(limit)
    assert g["giouring-sched"]["onset"] == pytest.approx(0.5 + 0.4 * 0.246 / 0.4)
    assert g["giouring-sched"]["gap_onset"] == pytest.approx(limit - g["giouring-sched"]["onset"])
    assert g["giouring-sched"]["onset_met"] is True and g["giouring-sched"]["onset_points"] == 2
    static = g["giouring-sched-static"]
    assert static["onset"] == pytest.approx(0.5 + 0.4 * 0.046 / 0.4) and static["onset_met"] is False
    staged = g["giouring-staged"]  # at or below 50%: 24 points below the limit at least
    assert staged["onset_below_grid"] and staged["onset"] == 0.5 and staged["onset_met"] is False
    # Loads that hid at every hit rate, past a limit inside the grid: no win beside slower compute.
    hid = [dict(r, load_layer_ms=[0.1] * L) for r in rows if r["system"] == "giouring-sched"]
    b = argparse.Namespace(contexts=[T], bulk=[bulk], args=a, kv_token_bytes=kvb, L=L)
    part = [dict(r, system="hbm-part") for r in rows if r["system"] == "hbm"]
    for part_ms, met in ((1.0, False), (1.14, None)):  # compute beside the I/O: 1.146-1.196 ms
        for r in part:
            r["layer_ms"] = [part_ms] * L
        (one,) = m.analyse(b, rows[:2] + part + hid)["goals"]
        assert one["onset"] is None and one["onset_highest"] == 0.9 and one["onset_met"] is met
    out = capsys.readouterr().out
    assert "| 16K | 0.500 | giouring-sched | 0.900 | 1.146 | -0.246 | - | - |" in out
    assert "| 16K | 0.900 | giouring-sched | 1.300 | 1.146 | +0.154 | - | 0.80 / 1.25 |" in out
    assert f"| 16K | giouring-sched | {100 * limit:.2f}% | {100 * g['giouring-sched']['onset']:.2f}% |" in out
    assert f"| 16K | giouring-staged | {100 * limit:.2f}% | at or below 50.00% | at least +{100 * (limit - 0.5):.2f} | no |" in out
    capsys.readouterr()


def test_host_paced_layers_are_those_the_gpu_reached_with_nothing_queued(tmp_path, capsys):
    """A layer the GPU reached less than 0.1 ms after the host recorded its start waited for the
    host; layer 0 (after the planning) is left out."""
    m = bench()
    assert m.host_paced(dict(host_lead_ms=[0.0, 0.02, 0.05, 2.0, 3.5])) == 0.5
    assert m.host_paced(dict(host_lead_ms=[9.0, 0.2, 0.3])) == 0.0
    assert m.host_paced(dict()) is None and m.host_paced(dict(host_lead_ms=[0.0])) is None
    T, L = 16384, 5
    rows = []
    for h, C, lead in ((0.97, 15888, [0.0, 0.01, 0.02, 0.03, 0.04]), (0.98, 16048, [0.0, 1.0, 2.0, 3.0, 0.01])):
        rows += [dict(T=T, hit=h, C=C, system="hbm", ttft_s=[0.004], layer_ms=[1.0] * L, bubble_layer_ms=[0.0] * L,
                      host_lead_ms=lead)]
    path = tmp_path / "ttft.json"
    path.write_text(json.dumps(dict(bench="ttft_llama", env={}, args=vars(args(io_sms=8)), bulk_gbps=[50.0],
                                    results=rows, kv_token_bytes=4096, layers=L)))
    an = m.report_from(str(path))
    (p,) = an["paced"]
    assert (p["T"], p["system"]) == (T, "hbm") and p["fracs"] == [(0.97, 1.0), (0.98, 0.25)]
    assert "| 16K | hbm | 62% | 25-100% | 97.0 |" in capsys.readouterr().out
