"""The connector driven by vLLM 0.33's real scheduler, requests and KV cache allocator."""

from __future__ import annotations

import errno

import pytest
import torch
from conftest import BLOCK, LAYERS, Engine, make_config, make_request, token_value
from vllm.distributed.kv_transfer.kv_connector.factory import KVConnectorFactory
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole
from vllm.v1.attention.backends.utils import resolve_kv_cache_layout
from vllm.v1.request import RequestStatus

import giouring
from giouring.vllm import GiouringConnector

PROMPT = list(range(1000, 1053))  # 53 tokens: 3 full blocks and 5 tokens


def serve(engine, tokens, read=None, max_steps=8):
    """Adds a request and steps until it finishes; gives it and each step's (output, errors)."""
    req = make_request(tokens)
    engine.scheduler.add_request(req)
    steps = []
    while req.request_id in engine.scheduler.requests and len(steps) < max_steps:
        steps.append(engine.step(kv_of=token_value, read=read))
    return req, steps


def check_loaded(engine, upto):
    """A `read` that checks, before the forward writes, that tokens [0, upto) of a request hold
    their KV in every layer (the cache starts zeroed: only a load can put it there)."""
    seen = []

    def read(req, block_ids):
        for layer in LAYERS:
            for t in range(upto):
                got = engine.token_kv(layer, block_ids, t)
                assert torch.equal(got, token_value(req, t, layer)), f"{layer} token {t}"
        seen.append(req.request_id)

    return read, seen


def test_vllm_asks_for_lbnhc_and_its_resolution_takes_it(uris):
    config = make_config(uris)
    assert GiouringConnector.get_required_kvcache_layout(config) == "LBNHC"
    config.cache_config.kv_cache_layout = None
    # Backends that prefer HND (LBHNC) but also allow NHD: vLLM takes the connector's choice.
    assert resolve_kv_cache_layout(config, [["LBHNC", "LBNHC"]]).name == "LBNHC"
    config.cache_config.kv_cache_layout = None
    # Backends without it: vLLM keeps its own and the connector works with that (test below).
    assert resolve_kv_cache_layout(config, [["LHBNC"]]).name == "LHBNC"


@pytest.mark.parametrize("layout,runs", [("LBNHC", 1), ("LBHNC", 1), ("BLNHC", 1), ("LHBNC", 2)])
def test_store_on_one_request_hit_on_the_next(uris, layout, runs):
    e = Engine(make_config(uris, layout=layout))
    assert e.worker._pool.runs == runs  # objects as vLLM's strides lay them out
    req, steps = serve(e, PROMPT)
    out, errors = steps[0]
    assert out.num_scheduled_tokens == {req.request_id: 53} and not errors
    assert e.worker.stats["blocks_saved"] == 3  # the 4th block is not full
    e.close()

    # A fresh engine (empty prefix cache, zeroed KV cache) over the same targets.
    e = Engine(make_config(uris, layout=layout))
    read, seen = check_loaded(e, 48)
    req, steps = serve(e, PROMPT, read=read)
    out, errors = steps[0]
    assert out.num_scheduled_tokens == {req.request_id: 5}  # 48 loaded, 5 computed
    assert not errors and seen == [req.request_id]
    assert e.worker.stats["blocks_loaded"] == 3
    assert req.status == RequestStatus.FINISHED_LENGTH_CAPPED
    e.close()


def test_never_the_whole_prompt_and_partial_hits(uris):
    e = Engine(make_config(uris))
    serve(e, PROMPT[:48])
    assert e.worker.stats["blocks_saved"] == 3
    e.close()
    e = Engine(make_config(uris))
    # All 3 blocks are stored, but vLLM must compute the last token to sample: 2 are loaded.
    read, seen = check_loaded(e, 32)
    req, steps = serve(e, PROMPT[:48], read=read)
    assert steps[0][0].num_scheduled_tokens == {req.request_id: 16} and seen
    e.close()
    e = Engine(make_config(uris))
    # A prompt whose 3rd block differs in its last token: the first 2 blocks are hits.
    read, seen = check_loaded(e, 32)
    req, steps = serve(e, PROMPT[:47] + [7] + PROMPT[48:], read=read)
    assert steps[0][0].num_scheduled_tokens == {req.request_id: 53 - 32} and seen
    assert e.worker.stats["blocks_loaded"] == 2
    # The original prompt now: vLLM's prefix cache has blocks 0-1, the store block 2 (from the
    # first engine): the connector is asked from token 32 on and loads block 2 only.
    read, seen = check_loaded(e, 48)
    req, steps = serve(e, PROMPT, read=read)
    assert steps[0][0].num_scheduled_tokens == {req.request_id: 5} and seen
    assert e.worker.stats["blocks_loaded"] == 3
    e.close()


def test_a_chunk_evicted_is_a_miss(tmp_path):
    uris = [f"file://{tmp_path}/kv0.img?size=1M"]  # one small target: a few dozen chunks
    e = Engine(make_config(uris, create=True))
    capacity = e.worker._store.stats()["capacity"]
    prompts = [[10_000 * (i + 1) + t for t in range(53)] for i in range(capacity // 3 + 4)]
    for p in prompts:
        serve(e, p)
    st = e.worker._store.stats()
    assert st["evictions"] > 0 and st["valid"] == capacity
    e.close()
    e = Engine(make_config(uris))
    first, steps = serve(e, prompts[0])  # the least recently used: evicted
    assert steps[0][0].num_scheduled_tokens == {first.request_id: 53}
    last, steps = serve(e, prompts[-1])
    assert steps[0][0].num_scheduled_tokens == {last.request_id: 5}
    e.close()


@pytest.mark.parametrize("policy", ["recompute", "fail"])
def test_a_target_failing_mid_load_is_a_load_error_never_wrong_kv(uris, policy):
    e = Engine(make_config(uris))
    serve(e, PROMPT)
    e.close()
    e = Engine(make_config(uris, policy=policy))
    # Chunks go round-robin over the 2 targets: blocks 0 and 2 on target 0, block 1 on target 1.
    # Target 1's next command (block 1's layer 0) fails with an internal error.
    e.worker._store.inject_fault(1, 1, 0x0006)
    req = make_request(PROMPT)
    e.scheduler.add_request(req)
    out, errors = e.step(kv_of=token_value)
    assert out.num_scheduled_tokens == {req.request_id: 5}
    bad = e.block_ids(req.request_id)[1] if req.request_id in e.scheduler.requests else None
    assert len(errors) == 1 and e.worker.stats["load_errors"] == 1
    if policy == "fail":
        assert req.status == RequestStatus.FINISHED_ERROR
        return e.close()
    assert errors == {bad}
    # vLLM rolled the request back to the failed block: it computes from token 16 on, so what
    # the failed read left in that block is overwritten, never attended to as loaded KV.
    assert req.num_computed_tokens == BLOCK
    out, errors = e.step(kv_of=token_value)
    assert out.num_scheduled_tokens == {req.request_id: 53 - BLOCK} and not errors
    # The device failed the chunk's read: removed from the store, the recompute saved it anew
    # (before, the save was EEXIST and every later hit on this prefix failed to load again).
    assert e.worker.stats["chunks_removed"] == 1
    e.close()
    e = Engine(make_config(uris))
    read, seen = check_loaded(e, 48)
    again, steps = serve(e, PROMPT, read=read)
    assert steps[0][0].num_scheduled_tokens == {again.request_id: 5} and not steps[0][1]
    assert seen == [again.request_id] and e.worker.stats["blocks_loaded"] == 3
    e.close()


def test_bad_configuration_is_refused_naming_it(uris):
    config = make_config(uris)
    config.kv_transfer_config.kv_connector_extra_config = {}
    with pytest.raises(ValueError, match=r"\['uris'\]"):
        KVConnectorFactory.create_connector(config, KVConnectorRole.SCHEDULER, None)
    config.kv_transfer_config.kv_connector_extra_config = {"uris": uris, "create": "yes"}
    with pytest.raises(ValueError, match=r"\['create'\]"):
        KVConnectorFactory.create_connector(config, KVConnectorRole.SCHEDULER, None)
    config.kv_transfer_config.kv_connector_extra_config = {"uris": uris, "mover": "dma"}
    with pytest.raises(ValueError, match=r"\['mover'\]"):
        KVConnectorFactory.create_connector(config, KVConnectorRole.SCHEDULER, None)
    config.kv_transfer_config.kv_connector_extra_config = {"uris": uris, "move_depth": -1}
    with pytest.raises(ValueError, match=r"\['move_depth'\]"):
        KVConnectorFactory.create_connector(config, KVConnectorRole.SCHEDULER, None)
    # Targets that were never formatted, with create false: the store's ENODATA.
    with pytest.raises(giouring.GiouringError) as err:
        Engine(make_config(uris, create=False))
    assert err.value.errno == errno.ENODATA
    # The copy engine moves staged loads into GPU memory: this cache is in host memory (the CPU
    # engine), so the plan refuses it by name; the store the connector opened is closed again, so
    # the same targets open afterwards.
    with pytest.raises(giouring.GiouringError) as err:
        Engine(make_config(uris, mover="copy_engine"))
    assert err.value.errno == errno.EINVAL and "copy-engine mover" in str(err.value)
    e = Engine(make_config(uris))
    e.close()
