"""The HiCache backend loaded by SGLang 0.5.23's dynamic backend factory, moving host pool pages."""

from __future__ import annotations

import errno

import pytest
import torch
from conftest import PAGE, fill_page, host_pool, indices, make_backend, page_holds
from sglang.srt.mem_cache.hicache_storage import HiCacheStorage

import giouring
from giouring.sglang import GiouringHiCacheStorage

KEYS = [f"{i:064x}" for i in range(1, 9)]


@pytest.mark.parametrize("layout", ["layer_first", "page_first", "page_first_direct", "page_head"])
def test_pages_round_trip_through_a_reopen(uris, layout):
    pool = host_pool(layout)
    b = make_backend(uris, pool)
    assert isinstance(b, GiouringHiCacheStorage) and isinstance(b, HiCacheStorage)
    for i in range(8):
        fill_page(pool, i, seed=i)
    assert b.batch_set_v1(KEYS, indices(range(8))) == [True] * 8
    assert b.batch_set_v1(KEYS[:2], indices([0, 1])) == [True, True]  # stored already
    assert b.batch_exists(KEYS) == 8 and b.exists(KEYS[3]) and not b.exists("nope")
    b.close()

    pool = host_pool(layout)  # zeroed: only a read can put the pages there
    b = make_backend(uris, pool)
    got = b.batch_get_v1(KEYS[:4] + ["missing"] + KEYS[4:], indices([20, 3, 9, 15, 5, 11, 12, 13, 14]))
    assert got == [True] * 4 + [False] + [True] * 4
    for page, seed in [(20, 0), (3, 1), (9, 2), (15, 3), (11, 4), (12, 5), (13, 6), (14, 7)]:
        assert page_holds(pool, page, seed), f"page {page}"
    assert not pool.get_data_page(5 * PAGE).any()  # the miss left its page alone
    assert b.batch_exists(KEYS[:2] + ["missing"] + KEYS[2:]) == 2  # leading keys only
    b.close()


def filled(uris, pages=4):
    """A backend over a host pool whose pages 0..pages-1 hold KV (seeds 0..pages-1)."""
    pool = host_pool()
    b = make_backend(uris, pool)
    for i in range(pages):
        fill_page(pool, i, seed=i)
    return pool, b


def test_a_target_failing_mid_read_raises_never_none_and_its_chunk_is_stored_anew(uris):
    pool, b = filled(uris)
    assert b.batch_set_v1(KEYS[:4], indices(range(4))) == [True] * 4
    b.store.inject_fault(1, 2, 0x0281)  # target 1's 2nd read: an unrecovered read error
    with pytest.raises(giouring.GiouringError) as e:
        b.batch_get_v1(KEYS[:4], indices([10, 11, 12, 13]))
    assert e.value.errno == errno.EIO and e.value.nvme_status == 0x0281
    b.store.inject_fault(1, 0, 0)
    # The chunk whose read failed is removed (left stored, every later get of it would fail and
    # its set would change nothing); the others stay, and the store and the plan go on serving.
    failed = [k for k, r in zip(KEYS[:4], e.value.results) if r.rc]
    assert len(failed) == 1
    assert [b.exists(k) for k in KEYS[:4]] == [k not in failed for k in KEYS[:4]]
    assert b.batch_set_v1(KEYS[:4], indices(range(4))) == [True] * 4  # the write-back stores it anew
    assert b.batch_get_v1(KEYS[:4], indices([10, 11, 12, 13])) == [True] * 4
    assert all(page_holds(pool, 10 + i, i) for i in range(4))
    b.close()


def test_a_failing_write_raises_and_stores_nothing_torn(uris):
    pool, b = filled(uris)
    b.store.inject_fault(0, 1, 0x0280)  # target 0's next command: a write fault
    with pytest.raises(giouring.GiouringError) as e:
        b.batch_set_v1(KEYS[:4], indices(range(4)))
    assert e.value.errno == errno.EIO
    b.store.inject_fault(0, 0, 0)
    stored = [b.exists(k) for k in KEYS[:4]]
    assert not all(stored)  # the failed chunk is not served
    assert b.batch_set_v1(KEYS[:4], indices(range(4))) == [True] * 4
    assert b.batch_exists(KEYS[:4]) == 4
    b.close()


def test_bad_input_is_refused_naming_it(uris):
    with pytest.raises(giouring.GiouringError, match="uris"):
        make_backend([])
    with pytest.raises(giouring.GiouringError, match="interface_v1"):
        make_backend(uris, interface_v1=0)
    pool = host_pool()
    b = make_backend(uris, pool)
    with pytest.raises(giouring.GiouringError, match="host indices"):
        b.batch_get_v1(KEYS[:2], indices([0]))
    with pytest.raises(giouring.GiouringError, match="start a page"):
        b.batch_set_v1(KEYS[:1], torch.arange(3, 3 + PAGE))
    with pytest.raises(giouring.GiouringError) as e:
        b.get(KEYS[0], torch.empty(4))
    assert e.value.errno == errno.EOPNOTSUPP
    b.close()
    with pytest.raises(giouring.GiouringError, match="layout"):
        make_backend(uris, _unserved_layout())


def _unserved_layout():
    p = host_pool()
    p.layout = "page_unified"
    return p
