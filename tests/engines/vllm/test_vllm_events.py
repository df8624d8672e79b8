"""The scheduler side with the workers in other processes (vLLM's multi-process executor): its
index of the store fed by the workers' reports through KVConnectorOutput, and those reports
published as vLLM KV events through vLLM's own ZMQ publisher."""

from __future__ import annotations

import shutil
import tempfile
import time

import msgspec
import pytest
import zmq
from conftest import BLOCK, Engine, make_config, make_request, token_value
from test_vllm import PROMPT, check_loaded, serve
from vllm.config import KVEventsConfig
from vllm.distributed.kv_events import BlockRemoved, BlockStored, KVEventBatch
from vllm.v1.core.kv_cache_utils import maybe_convert_block_hash

from giouring.vllm import GiouringKVEvents


def index_of(engine):
    """The keys the scheduler side holds for stored (every rank)."""
    c = engine.scheduler.connector
    return {k for k, (ranks, _) in c._index.items() if ranks == c._full}


def fresh_prefix_cache(engine):
    """vLLM forgets its own cached blocks: the next request asks the connector from token 0."""
    assert engine.scheduler.reset_prefix_cache()


def test_worker_in_another_process_hit_on_the_next_request(uris):
    e = Engine(make_config(uris), separate=True)
    req, steps = serve(e, PROMPT)
    assert steps[0][0].num_scheduled_tokens == {req.request_id: 53}
    assert len(index_of(e)) == 3  # the 3 full blocks, as the worker reported them
    fresh_prefix_cache(e)
    read, seen = check_loaded(e, 48)
    req, steps = serve(e, PROMPT, read=read)
    out, errors = steps[0]
    assert out.num_scheduled_tokens == {req.request_id: 5}  # 48 loaded from the store
    assert not errors and seen == [req.request_id]
    assert e.worker.stats["blocks_loaded"] == 3
    e.close()

    # A new engine over the same targets: the workers' handshake metadata (what their stores
    # hold) starts the scheduler side's index, so the first request loads the prefix.
    e = Engine(make_config(uris), separate=True)
    assert len(index_of(e)) == 3
    read, seen = check_loaded(e, 48)
    req, steps = serve(e, PROMPT, read=read)
    assert steps[0][0].num_scheduled_tokens == {req.request_id: 5} and seen
    e.close()


def test_blocks_an_earlier_engine_stored_are_published_once_met(tmp_path, events):
    uris = [f"file://{tmp_path}/kv0.img?size=16M"]
    e = Engine(make_config(uris))
    serve(e, PROMPT)
    e.close()
    # vLLM's single-process executor this time: the scheduler side asks the store itself. Its
    # index starts from the handshake (keys only: the store keeps no vLLM hash), and the blocks
    # are published when a request loads them.
    config, sub = events
    e = Engine(make_config(uris, events=config))
    joined(sub)
    c = e.scheduler.connector
    assert len(index_of(e)) == 3 and all(h is None for _, h in c._index.values())
    req, steps = serve(e, PROMPT)
    assert steps[0][0].num_scheduled_tokens == {req.request_id: 5}
    hashes = [maybe_convert_block_hash(h) for h in req.block_hashes[:3]]
    stored = receive(sub, lambda evs: len(evs) >= 3)
    assert [ev.block_hashes for ev in stored] == [[h] for h in hashes]
    assert all(isinstance(ev, BlockStored) for ev in stored)
    e.close()


def test_a_stale_index_is_a_load_error_then_corrected(uris):
    e = Engine(make_config(uris), separate=True)
    c = e.scheduler.connector
    keys = c._keys(make_request(PROMPT), 0, 3)
    # As a stale index would have it (an eviction whose report is not in yet): the scheduler side
    # counts 3 blocks that the store does not hold.
    for k in keys:
        c._index[k] = [c._full, None]
    req = make_request(PROMPT)
    e.scheduler.add_request(req)
    out, errors = e.step(kv_of=token_value)
    assert out.num_scheduled_tokens == {req.request_id: 5}  # vLLM took the 48 tokens offered
    # The worker's load misses them: load errors, so vLLM rolls the request back and recomputes
    # rather than attend to blocks nothing was loaded into; the misses correct the index.
    assert len(errors) == 3 and e.worker.stats["load_errors"] == 3
    assert req.num_computed_tokens == 0 and not index_of(e)
    out, errors = e.step(kv_of=token_value)
    assert out.num_scheduled_tokens == {req.request_id: 53} and not errors
    assert index_of(e) == set(keys)  # computed, saved, reported
    e.close()


def test_eviction_is_reported_and_ends_the_hits(tmp_path):
    uris = [f"file://{tmp_path}/kv0.img?size=1M"]  # one small target: a few dozen chunks
    e = Engine(make_config(uris, create=True), separate=True)
    capacity = e.worker._store.stats()["capacity"]
    prompts = [[10_000 * (i + 1) + t for t in range(53)] for i in range(capacity // 3 + 4)]
    first = make_request(prompts[0])
    for p in prompts:
        serve(e, p)
    assert e.worker._store.stats()["evictions"] > 0
    c = e.scheduler.connector
    held = index_of(e)
    assert len(held) == e.worker._store.stats()["valid"] == capacity
    assert not held & set(c._keys(first, 0, 3))  # the least recently used: evicted, reported
    fresh_prefix_cache(e)
    req, steps = serve(e, prompts[0])
    assert steps[0][0].num_scheduled_tokens == {req.request_id: 53} and not steps[0][1]
    fresh_prefix_cache(e)
    req, steps = serve(e, prompts[-1])
    assert steps[0][0].num_scheduled_tokens == {req.request_id: 5}
    e.close()


def test_tensor_parallel_counts_a_block_once_every_rank_stored_it(tmp_path):
    uris = [f"file://{tmp_path}/kv{{rank}}-{i}.img?size=16M" for i in range(2)]
    e = Engine(make_config(uris, tp=2))
    assert [w._uris for w in e.workers] == [tuple(u.replace("{rank}", str(r)) for u in uris) for r in (0, 1)]
    # Rank 1's block 1 (its chunk on target 1, the first command there) fails to save.
    e.workers[1]._store.inject_fault(1, 1, 0x0006)
    serve(e, PROMPT)
    assert e.workers[0].stats["blocks_saved"] == 3 and e.workers[1].stats["save_failures"] == 1
    c = e.scheduler.connector
    keys = c._keys(make_request(PROMPT), 0, 3)
    assert index_of(e) == {keys[0], keys[2]}  # block 1: rank 0 only
    assert c._index[keys[1]][0] == 0b01
    fresh_prefix_cache(e)
    req, steps = serve(e, PROMPT)
    assert steps[0][0].num_scheduled_tokens == {req.request_id: 53 - BLOCK}  # block 0 only
    # That request saved block 1 again, on both ranks (rank 0: already there): now all 3 count.
    assert index_of(e) == set(keys)
    e.close()


def test_several_workers_need_their_own_targets(uris):
    with pytest.raises(ValueError, match=r"\{rank\}"):
        Engine(make_config(uris, tp=2))


def joined(sub):
    """Waits for the subscriber to join vLLM's publisher, bound when the Engine's scheduler was
    built: a ZMQ subscriber sees only what is published after it joined."""
    time.sleep(0.5)
    return sub


def receive(sub, want, timeout=10.0):
    """Events of the store's tier from vLLM's publisher until want(events) holds (bounded)."""
    decoder = msgspec.msgpack.Decoder(type=KVEventBatch)
    got, end = [], time.monotonic() + timeout
    while not want(got):
        left = end - time.monotonic()
        assert left > 0, f"no such events from vLLM's publisher in {timeout} s: {got}"
        if sub.poll(int(left * 1000)):
            _topic, _seq, payload = sub.recv_multipart()
            got += [ev for ev in decoder.decode(payload).events if getattr(ev, "medium", None) == "STORAGE"]
    return got


@pytest.fixture
def events():
    """vLLM's KV events on, published by its ZMQ publisher on an ipc endpoint, and a subscriber
    of that endpoint (wait for it to join once the Engine is built)."""
    # An ipc path is limited to ~100 bytes: a short directory, not pytest's tmp_path.
    sock_dir = tempfile.mkdtemp(prefix="gio-ev")
    endpoint = f"ipc://{sock_dir}/events"
    sub = zmq.Context.instance().socket(zmq.SUB)  # connects (retrying) before the publisher binds
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.setsockopt(zmq.LINGER, 0)
    sub.connect(endpoint)
    yield KVEventsConfig(enable_kv_cache_events=True, publisher="zmq", endpoint=endpoint, topic="kv"), sub
    sub.close()
    shutil.rmtree(sock_dir, ignore_errors=True)


def test_kv_events_reach_a_subscriber_of_vllms_publisher(tmp_path, events):
    config, sub = events
    uris = [f"file://{tmp_path}/kv0.img?size=1M"]
    e = Engine(make_config(uris, create=True, events=config), separate=True)
    joined(sub)
    req, _ = serve(e, PROMPT)
    hashes = [maybe_convert_block_hash(h) for h in req.block_hashes[:3]]

    stored = receive(sub, lambda evs: len(evs) >= 3)
    assert all(isinstance(ev, BlockStored) for ev in stored)
    assert [ev.block_hashes for ev in stored] == [[h] for h in hashes]  # vLLM's own block hashes
    assert [ev.parent_block_hash for ev in stored] == [None] + hashes[:2]
    assert [ev.token_ids for ev in stored] == [PROMPT[i * BLOCK:(i + 1) * BLOCK] for i in range(3)]
    assert {(ev.block_size, ev.medium) for ev in stored} == {(BLOCK, "STORAGE")}

    # Other prompts until the store evicts this one's blocks: BlockRemoved with their hashes.
    capacity = e.worker._store.stats()["capacity"]
    for i in range(capacity // 3 + 2):
        serve(e, [20_000 * (i + 1) + t for t in range(53)])
    removed = [ev for ev in receive(sub, lambda evs: sum(isinstance(ev, BlockRemoved) for ev in evs) >= 3)
               if isinstance(ev, BlockRemoved)]
    assert [ev.block_hashes for ev in removed[:3]] == [[h] for h in hashes]
    e.close()


def test_the_events_container_as_vllms_aggregator_uses_it():
    a, b = GiouringKVEvents([("stored", 0, 7)]), GiouringKVEvents([("stored", 1, 7), ("removed", 1, 9)])
    a.add_events(b.get_all_events())
    a.increment_workers(1)
    assert a.get_all_events() == [("stored", 0, 7), ("stored", 1, 7), ("removed", 1, 9)]
    assert a.get_number_of_workers() == 2 and a.aggregate() is a
    a.clear_events()
    assert a.get_all_events() == []
