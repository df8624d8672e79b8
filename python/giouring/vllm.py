"""vLLM connector: vLLM's prefix blocks as chunks of a giouring store (docs/vllm.md).

Switch it on with ``--kv-transfer-config`` naming ``kv_connector="GiouringConnector"`` and
``kv_connector_module_path="giouring.vllm"``; the store's targets come in
``kv_connector_extra_config["uris"]``. Importing this module imports vLLM; ``import giouring``
alone does not.

One chunk is one vLLM block: its key comes from the block's hash (vLLM's chained hash of the
prompt up to and including the block), so a key names the whole prefix it ends. The scheduler
side counts the leading blocks of a prompt that the store holds; the worker side loads them layer
by layer before each layer's attention and saves every block that a step fills, layer by layer
after its attention. A block that fails to load (an NVMe error, a deadline, a chunk evicted since
the scheduler asked) is reported through ``get_block_ids_with_load_errors``, so vLLM recomputes it
(``kv_load_failure_policy="recompute"``) or fails the request (``"fail"``), and never reads it. A
chunk whose read the device failed, or whose load missed its deadline a second time, is removed
from the store (``Store.remove_failed``), so that the recompute saves it anew.

The scheduler side answers from the store itself when a worker of its process opened it (vLLM's
single-process executor), and otherwise from its own index of the keys the workers reported: each
worker sends what its store stored, evicted or missed in a step as :class:`GiouringKVEvents`
through ``KVConnectorOutput.kv_cache_events`` (vLLM's output aggregator merges the workers'), and a
block counts as stored once every worker (each tensor/pipeline parallel rank holds its part of the
block in its own store) reported it; the index starts from the keys each store holds, handed over
at startup as vLLM's connector handshake metadata (:class:`GiouringStoreKeys`). The same transitions become vLLM KV events (``BlockStored`` /
``BlockRemoved`` with ``medium`` naming the tier, default ``"STORAGE"``), which vLLM publishes when
its KV events are on, so that a cache-aware router sees which replica's SSDs hold which prefix.
"""

from __future__ import annotations

import dataclasses
import errno
import hashlib
import logging
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import torch
from vllm.distributed.kv_events import MEDIUM_STORAGE, BlockRemoved, BlockStored, KVConnectorKVEvents
from vllm.distributed.kv_transfer.kv_connector.v1.base import (
    KVConnectorBase_V1,
    KVConnectorHandshakeMetadata,
    KVConnectorMetadata,
    KVConnectorRole,
)
from vllm.v1.core.kv_cache_utils import maybe_convert_block_hash

from .errors import GiouringError
from .pool import KVPool
from .store import REMOVED_KEPT, Store

if TYPE_CHECKING:
    from vllm.config import VllmConfig
    from vllm.v1.core.kv_cache_manager import KVCacheBlocks
    from vllm.v1.core.sched.output import SchedulerOutput
    from vllm.v1.kv_cache_interface import KVCacheConfig
    from vllm.v1.outputs import KVConnectorOutput
    from vllm.v1.request import Request

log = logging.getLogger(__name__)

#: The layout asked of vLLM: each (layer, block) object is one contiguous run (K and V of a token
#: side by side in the content dimension, blocks of a layer one after another), so each object
#: is one NVMe command; it is also vLLM's default, which its attention backends support.
PREFERRED_LAYOUT = "LBNHC"

#: The dimensions of the per-layer views vLLM hands to connectors: logical [B, H, N, C] (blocks,
#: KV heads, tokens, content = K then V), whatever the layout; the layout changes only strides.
LAYER_VIEW_DIMS = ("block", "head", "token", "channel")

# Stores opened by a worker side, by their URIs: the scheduler side of the same process answers
# from the store's index (vLLM's single-process executor runs both in the engine core).
_stores: dict[tuple[str, ...], Store] = {}
_stores_lock = threading.Lock()

#: Steps a saved block's event details wait for every worker's report before they are dropped.
PENDING_STEPS = 16


def _world(vllm_config: "VllmConfig") -> int:
    """Workers of one engine, each with its part of every block: tensor x pipeline parallel."""
    pc = vllm_config.parallel_config
    return pc.tensor_parallel_size * pc.pipeline_parallel_size


def _worker_rank(vllm_config: "VllmConfig") -> int:
    """This worker's rank among the engine's workers (0 where vLLM set up no parallel groups)."""
    from vllm.distributed import parallel_state as ps

    if not ps.model_parallel_is_initialized():
        return 0
    return ps.get_pp_group().rank_in_group * vllm_config.parallel_config.tensor_parallel_size \
        + ps.get_tp_group().rank_in_group


class GiouringKVEvents(KVConnectorKVEvents):
    """What workers' stores did in a step, as ``(kind, rank, key)`` tuples: ``"stored"`` (a save
    committed, or the chunk was there already), ``"removed"`` (evicted, or missing when loaded),
    ``"cleared"`` (key 0: the worker lost track of its evictions; forget all it reported). Carried
    in ``KVConnectorOutput.kv_cache_events``; vLLM's output aggregator concatenates the workers'
    lists (``add_events``), the scheduler side reads them in ``update_connector_output``."""

    def __init__(self, events: list[tuple[str, int, int]] | None = None):
        self._events = list(events or [])
        self._workers = 1

    def add_events(self, events: list) -> None:
        self._events.extend(events)

    def aggregate(self) -> "GiouringKVEvents":
        return self

    def increment_workers(self, count: int = 1) -> None:
        self._workers += count

    def get_all_events(self) -> list:
        return list(self._events)

    def get_number_of_workers(self) -> int:
        return self._workers

    def clear_events(self) -> None:
        self._events.clear()

    def __repr__(self) -> str:
        return f"GiouringKVEvents({len(self._events)} events, {self._workers} workers)"


@dataclasses.dataclass
class GiouringStoreKeys(KVConnectorHandshakeMetadata):
    """What a worker's store holds once vLLM registered its KV caches: vLLM's engine core collects
    every worker's handshake metadata then and hands it to the scheduler side, whose index starts
    from it (so that what an earlier engine stored is found from the first request on)."""

    rank: int
    keys: list[int]


def _config(vllm_config: "VllmConfig") -> dict[str, Any]:
    extra = dict(vllm_config.kv_transfer_config.kv_connector_extra_config or {})
    uris = extra.get("uris")
    if isinstance(uris, str) or not isinstance(uris, (list, tuple)) or not uris \
            or not all(isinstance(u, str) and u for u in uris):
        raise ValueError("GiouringConnector: kv_connector_extra_config['uris'] must be a non-empty list of target "
                         f"URIs (e.g. ['file:///data/kv0.img?size=64G']), not {uris!r}")
    create = extra.get("create", "auto")
    if create not in ("auto", True, False):
        raise ValueError(f"GiouringConnector: kv_connector_extra_config['create'] is 'auto', true or false, "
                         f"not {create!r}")
    mover = extra.get("mover", "warps")
    if mover not in ("warps", "copy_engine"):
        raise ValueError(f"GiouringConnector: kv_connector_extra_config['mover'] is 'warps' or 'copy_engine', "
                         f"not {mover!r}")
    completions = extra.get("completions", "poll")
    if completions not in ("poll", "mirror"):
        raise ValueError(f"GiouringConnector: kv_connector_extra_config['completions'] is 'poll' or 'mirror', "
                         f"not {completions!r}")
    for key in ("move_depth", "poll_ns"):
        v = extra.get(key, 0)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"GiouringConnector: kv_connector_extra_config[{key!r}] is a whole number of at least "
                             f"0, not {v!r}")
    if _world(vllm_config) > 1 and not all("{rank}" in u for u in uris):
        raise ValueError("GiouringConnector: with several workers (tensor/pipeline parallel) each needs its own "
                         "targets: write {rank} in every URI of kv_connector_extra_config['uris'] "
                         f"(e.g. 'file:///data/kv{{rank}}.img?size=64G'), not {list(uris)!r}")
    extra["uris"] = tuple(uris)
    return extra


def _namespace(vllm_config: "VllmConfig", extra: dict[str, Any]) -> bytes:
    """What a key is salted with: a block hash names tokens, not the model that computed their KV,
    so two models (or dtypes, block sizes, tensor-parallel splits) must never share keys."""
    if "namespace" in extra:
        what = str(extra["namespace"])
    else:
        mc, cc, pc = vllm_config.model_config, vllm_config.cache_config, vllm_config.parallel_config
        what = repr((mc.model, str(mc.dtype), str(cc.cache_dtype), cc.block_size, pc.tensor_parallel_size,
                     pc.pipeline_parallel_size))
    return hashlib.blake2b(what.encode(), digest_size=16).digest()


def chunk_key(namespace: bytes, block_hash: bytes) -> int:
    """The store key of a vLLM block: 128 bits of a keyed hash of its block hash."""
    if not isinstance(block_hash, (bytes, bytearray)):
        raise TypeError(f"a vLLM block hash is bytes, not {type(block_hash).__name__}")
    return int.from_bytes(hashlib.blake2b(bytes(block_hash), digest_size=16, key=namespace).digest(), "big")


@dataclasses.dataclass
class Transfer:
    """One request's blocks to move this step: ``keys[i]`` from or to pool block ``blocks[i]``."""

    req_id: str
    keys: list[int]
    blocks: list[int]


@dataclasses.dataclass
class GiouringConnectorMetadata(KVConnectorMetadata):
    """What the scheduler side tells the workers for one step."""

    loads: list[Transfer] = dataclasses.field(default_factory=list)
    saves: list[Transfer] = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class _Req:
    request: "Request"
    block_ids: list[int] = dataclasses.field(default_factory=list)
    saved: int = 0  # blocks below this were saved (or asked to be) by an earlier step
    load: Transfer | None = None
    match: tuple[int, list[int]] = (0, [])  # get_num_new_matched_tokens: first block, keys found


class GiouringConnector(KVConnectorBase_V1):
    """vLLM KV connector over a giouring store (see the module's text and docs/vllm.md)."""

    def __init__(self, vllm_config: "VllmConfig", role: KVConnectorRole, kv_cache_config: "KVCacheConfig"):
        super().__init__(vllm_config, role, kv_cache_config)
        self._extra = _config(vllm_config)
        # The worker's rank: which targets it opens ({rank} in the URIs), which bit its reports set.
        self._rank = _worker_rank(vllm_config) if role == KVConnectorRole.WORKER else 0
        self._uris: tuple[str, ...] = tuple(u.replace("{rank}", str(self._rank)) for u in self._extra["uris"])
        self._ns = _namespace(vllm_config, self._extra)
        self._block_size = vllm_config.cache_config.block_size
        hash_bs = getattr(kv_cache_config, "hash_block_size", None) or self._block_size
        if self._block_size % hash_bs:
            raise ValueError(f"GiouringConnector: block size {self._block_size} is not a multiple of the hash "
                             f"block size {hash_bs}")
        self._hashes_per_block = self._block_size // hash_bs
        self.stats = {"blocks_loaded": 0, "load_errors": 0, "blocks_saved": 0, "save_failures": 0,
                      "chunks_removed": 0}
        """Counters of the worker side: blocks loaded and saved, blocks reported as load errors,
        chunks whose save failed (a failed save is a later miss, never an error for vLLM), chunks
        removed from the store because the device failed their read or their load missed its
        deadline a second time (the recompute stores them anew)."""
        # Scheduler side.
        self._reqs: dict[str, _Req] = {}
        self._told_index = False
        self._full = (1 << _world(vllm_config)) - 1  # the ranks a block needs to count as stored
        self._index: dict[int, list] = {}  # key -> [ranks that reported it stored, its block hash or None]
        ev = vllm_config.kv_events_config
        self._publish = bool(ev is not None and ev.enable_kv_cache_events)
        self._medium = str(self._extra.get("kv_event_medium", MEDIUM_STORAGE))
        self._pending: OrderedDict[int, tuple[int, BlockStored]] = OrderedDict()  # key -> (step, its event)
        self._kv_events: list = []  # BlockStored / BlockRemoved for take_events
        self._outputs = 0  # update_connector_output calls
        # Worker side.
        self._store: Store | None = None
        self._pool: KVPool | None = None
        self._layer: dict[str, int] = {}
        self._load_plan = self._save_plan = None
        self._load_batch: list[tuple[int, int]] | None = None  # (key, block) of each key planned
        self._load_running = False  # the batch had hits: its layers were queued
        self._save_open = False
        self._errors: set[int] = set()
        self._reports: list[tuple[str, int, int]] = []  # GiouringKVEvents of this step
        self._removed_next = 0  # Store.removed cursor
        self._save_keys: list[int] = []

    # ---- layout ----

    @classmethod
    def get_required_kvcache_layout(cls, vllm_config: "VllmConfig") -> str | None:
        """LBNHC, or the one ``kv_connector_extra_config['kv_cache_layout']`` names (None: no
        preference). vLLM may still pick another where a backend needs it: the worker side takes
        any layout, its objects then being several runs each (e.g. one per head in LHBNC)."""
        extra = vllm_config.kv_transfer_config.kv_connector_extra_config or {}
        return extra.get("kv_cache_layout", PREFERRED_LAYOUT)

    # ---- scheduler side ----

    def _shared_store(self) -> Store | None:
        with _stores_lock:
            store = _stores.get(self._uris)
        if store is None and not self._told_index:
            self._told_index = True
            log.info("giouring: the store %s is in the workers' processes: the scheduler side answers from the "
                     "keys they report", list(self._uris))
        return store

    def _stored(self, keys: list[int]) -> list[bool]:
        """Which keys the store holds: asked of the store where it is in this process (exact, and
        it knows what an earlier engine stored), else from the workers' reports (every rank's)."""
        store = self._shared_store()
        if store is not None:
            return store.contains(keys)
        return [k in self._index and self._index[k][0] == self._full for k in keys]

    def _keys(self, request: "Request", first: int, end: int) -> list[int]:
        """Keys of blocks [first, end) of a request (blocks whose hashes vLLM computed)."""
        r = self._hashes_per_block
        end = min(end, len(request.block_hashes) // r)
        return [chunk_key(self._ns, request.block_hashes[(i + 1) * r - 1]) for i in range(first, end)]

    def get_num_new_matched_tokens(self, request: "Request", num_computed_tokens: int) -> tuple[int, bool]:
        first = num_computed_tokens // self._block_size
        # The last token is never loaded: vLLM must compute at least one token to sample from.
        keys = self._keys(request, first, (request.num_tokens - 1) // self._block_size)
        found = self._stored(keys)
        n = found.index(False) if False in found else len(found)
        self._reqs.setdefault(request.request_id, _Req(request)).match = (first, keys[:n])
        return n * self._block_size, False

    def update_state_after_alloc(self, request: "Request", blocks: "KVCacheBlocks", num_external_tokens: int):
        st = self._reqs.setdefault(request.request_id, _Req(request))
        if num_external_tokens <= 0:
            return
        first, keys = st.match
        n = num_external_tokens // self._block_size
        if n > len(keys):
            raise ValueError(f"GiouringConnector: vLLM allocated {n} blocks to load for {request.request_id}, "
                             f"the store matched {len(keys)}")
        ids = blocks.get_block_ids()[0]
        st.load = Transfer(request.request_id, keys[:n], list(ids[first:first + n]))

    def build_connector_meta(self, scheduler_output: "SchedulerOutput") -> GiouringConnectorMetadata:
        meta = GiouringConnectorMetadata()
        steps = []  # (state, tokens computed once this step ran)
        for new in scheduler_output.scheduled_new_reqs:
            st = self._reqs.get(new.req_id)
            if st is None:
                continue  # never went through get_num_new_matched_tokens: not ours to track
            st.block_ids = list(new.block_ids[0])
            steps.append((st, new.num_computed_tokens + scheduler_output.num_scheduled_tokens[new.req_id]))
        cached = scheduler_output.scheduled_cached_reqs
        for i, req_id in enumerate(cached.req_ids):
            st = self._reqs.get(req_id)
            if st is None:
                continue
            new_ids = cached.new_block_ids[i]
            if req_id in cached.resumed_req_ids:
                st.block_ids = list(new_ids[0]) if new_ids else []
            elif new_ids:
                st.block_ids.extend(new_ids[0])
            steps.append((st, cached.num_computed_tokens[i] + scheduler_output.num_scheduled_tokens[req_id]))
        seen: set[int] = set()
        for st, done in steps:
            if st.load is not None:
                meta.loads.append(st.load)
                st.load = None
            # Every block full once this step ran is saved (one already stored costs a lookup).
            full = min(done // self._block_size, len(st.block_ids))
            keys = self._keys(st.request, st.saved, full)
            save = Transfer(st.request.request_id, [], [])
            for i, (key, block) in enumerate(zip(keys, st.block_ids[st.saved:st.saved + len(keys)])):
                if key not in seen:  # two requests sharing a prefix: the chunk is saved once
                    seen.add(key)
                    save.keys.append(key)
                    save.blocks.append(block)
                    if self._publish:
                        self._pending[key] = (self._outputs, self._stored_event(st.request, st.saved + i))
                        self._pending.move_to_end(key)
            st.saved += len(keys)
            if save.keys:
                meta.saves.append(save)
        return meta

    def _stored_event(self, request: "Request", i: int) -> BlockStored:
        """vLLM's BlockStored for block i of a request, as its block pool builds one (one block, its
        hash and its parent's as vLLM publishes them), the medium naming the store's tier."""
        r, bs = self._hashes_per_block, self._block_size
        h = request.block_hashes[(i + 1) * r - 1]
        parent = request.block_hashes[i * r - 1] if i > 0 else None
        lora = request.lora_request
        return BlockStored(block_hashes=[maybe_convert_block_hash(h)],
                           parent_block_hash=maybe_convert_block_hash(parent) if parent is not None else None,
                           token_ids=list(request.all_token_ids[i * bs:(i + 1) * bs]), block_size=bs,
                           lora_id=lora.adapter_id if lora else None, medium=self._medium,
                           lora_name=lora.name if lora else None, group_idx=0)

    def update_connector_output(self, connector_output: "KVConnectorOutput"):
        """Takes in what the workers' stores did (GiouringKVEvents): the index of stored blocks
        (a block is stored once every rank reported it, and no longer once any rank lost it), and
        a BlockStored / BlockRemoved for each block that became stored or stopped being."""
        self._outputs += 1
        bad = connector_output.invalid_block_ids
        if bad:
            # vLLM recomputes a request from its first block that failed to load: the blocks from
            # there are saved again once computed (the worker saved none of them).
            for st in self._reqs.values():
                i = next((i for i, b in enumerate(st.block_ids[:st.saved]) if b in bad), None)
                if i is not None:
                    st.saved = i
        events = connector_output.kv_cache_events
        if isinstance(events, GiouringKVEvents):
            for kind, rank, key in events.get_all_events():
                bit = 1 << rank
                if kind == "stored":
                    e = self._index.setdefault(key, [0, None])
                    was = e[0] == self._full
                    e[0] |= bit
                    # Stored now, or known since the start (no hash: not yet published).
                    if e[0] == self._full and (not was or e[1] is None):
                        pending = self._pending.pop(key, None)
                        if pending is not None:
                            e[1] = pending[1].block_hashes[0]
                            self._kv_events.append(pending[1])
                elif kind == "removed":
                    self._drop(key, bit)
                elif kind == "cleared":
                    for k in list(self._index):
                        self._drop(k, bit)
        while self._pending:  # saves some rank never reported (failed): their details go
            key, (step, _) = next(iter(self._pending.items()))
            if self._outputs - step <= PENDING_STEPS:
                break
            del self._pending[key]

    def set_xfer_handshake_metadata(self, metadata: dict[int, KVConnectorHandshakeMetadata]) -> None:
        self._learn(metadata.values())

    def set_xfer_handshake_metadata_pp_aware(self, metadata: dict[tuple[int, int], KVConnectorHandshakeMetadata]
                                             ) -> None:
        """vLLM's engine core hands over every worker's GiouringStoreKeys (pipeline ranks too:
        each carries its rank)."""
        self._learn(metadata.values())

    def _learn(self, metas) -> None:
        """The index starts from what the workers' stores hold. Keys are only added: a stale one
        is a load error at worst. Their blocks are published once a request meets them (their
        hashes are vLLM's, which the store does not keep)."""
        for m in metas:
            if isinstance(m, GiouringStoreKeys):
                bit = 1 << m.rank
                for k in m.keys:
                    self._index.setdefault(k, [0, None])[0] |= bit

    def _drop(self, key: int, bit: int) -> None:
        e = self._index.get(key)
        if e is None:
            return
        was = e[0] == self._full
        e[0] &= ~bit
        if was and e[1] is not None:
            self._kv_events.append(BlockRemoved(block_hashes=[e[1]], medium=self._medium, group_idx=0))
        if not e[0]:
            del self._index[key]

    def take_events(self):
        """vLLM KV events of the store's tier since the last call (vLLM publishes them)."""
        events, self._kv_events = self._kv_events, []
        yield from events

    def request_finished(self, request: "Request", block_ids: list[int]) -> tuple[bool, dict[str, Any] | None]:
        # Saves end within their step (wait_for_save): the blocks may be freed at once.
        self._reqs.pop(request.request_id, None)
        return False, None

    # ---- worker side ----

    def register_kv_caches(self, kv_caches: dict[str, torch.Tensor]):
        """Describes vLLM's cache as a pool from the per-layer views' strides, then opens the
        store (``create``: 'auto' opens it and formats targets never formatted; true formats;
        false only opens) and registers the pool with every target."""
        groups = self._kv_cache_config.kv_cache_groups
        if len(groups) != 1:
            raise GiouringError(errno.EINVAL, f"GiouringConnector: {len(groups)} KV cache groups; it serves models "
                                "with one (full attention; start vLLM with --disable-hybrid-kv-cache-manager)")
        names = list(groups[0].layer_names)
        missing = [n for n in names if n not in kv_caches]
        if missing:
            raise GiouringError(errno.EINVAL, f"GiouringConnector: no KV cache for layers {missing}")
        tensors = [kv_caches[n] for n in names]
        layout = self._vllm_config.cache_config.get_resolved_kv_cache_layout()
        check_layer_views(tensors[0], layout.layer_view_order, layout.name)
        pool = pool_of(tensors)
        if pool.blocks != self._kv_cache_config.num_blocks:
            raise GiouringError(errno.EINVAL, f"GiouringConnector: the KV cache views have {pool.blocks} blocks, "
                                f"the KV cache config {self._kv_cache_config.num_blocks}")
        store = self._open(pool)
        timeout = float(self._extra.get("timeout", 5.0))
        # The GPU engine's knobs (Store.plan()); the copy engine moves loads only, saves keep the warps.
        knobs = dict(move_depth=int(self._extra.get("move_depth", 0)), poll_ns=int(self._extra.get("poll_ns", 0)))
        try:
            self._load_plan = store.plan(max_requests=pool.blocks, timeout=timeout,
                                         mover=self._extra.get("mover", "warps"),
                                         completions=self._extra.get("completions", "poll"), **knobs)
            self._save_plan = store.plan(max_requests=pool.blocks, timeout=timeout, **knobs)
        except BaseException:
            store.close()  # a plan refused: the targets are not left held by a store nobody has
            raise
        self._store, self._pool = store, pool
        self._layer = {n: i for i, n in enumerate(names)}
        with _stores_lock:
            _stores[self._uris] = store
        log.info("giouring: %s over %d target(s), layout %s, paths %s, %s engine, %s", pool, len(self._uris),
                 layout.name, [p["path"] for p in store.paths], self._load_plan.engine, store.stats())

    def _open(self, pool: KVPool) -> Store:
        create, timeout = self._extra.get("create", "auto"), float(self._extra.get("timeout", 5.0))
        if create is True:
            return Store.create(self._uris, pool, store_bytes=int(self._extra.get("store_bytes", 0)), timeout=timeout)
        try:
            return Store.open(self._uris, pool, timeout=timeout)
        except GiouringError as e:
            if create is False or e.errno != errno.ENODATA:
                raise
        log.info("giouring: targets %s were never formatted: creating a store", list(self._uris))
        return Store.create(self._uris, pool, store_bytes=int(self._extra.get("store_bytes", 0)), timeout=timeout)

    def _meta(self) -> GiouringConnectorMetadata | None:
        meta = self._get_connector_metadata() if self.has_connector_metadata() else None
        return meta if isinstance(meta, GiouringConnectorMetadata) else None

    def _sync_device(self) -> None:
        # The CPU engine's thread moves bytes of a pool on the GPU outside any stream: what the
        # stream has queued (attention writing a layer, a reader of a reused block) ends first.
        if self._pool.device.type == "cuda" and self._load_plan.engine == "cpu":
            torch.cuda.current_stream(self._pool.device).synchronize()

    def start_load_kv(self, forward_context: Any, **kwargs: Any) -> None:
        meta = self._meta()
        if meta is None or not meta.loads or self._load_plan is None:
            return
        batch: dict[int, int] = {}
        for t in meta.loads:
            for key, block in zip(t.keys, t.blocks):
                if key in batch:  # a key loaded into two blocks in one step: the second recomputes
                    self._errors.add(block)
                else:
                    batch[key] = block
        try:
            hits = self._load_plan.load(list(batch), list(batch.values()))
        except GiouringError as e:
            log.error("giouring: planning the load of %d blocks failed: %s", len(batch), e)
            self._errors.update(batch.values())
            return
        # A chunk evicted since the scheduler counted it: vLLM must recompute that block, and
        # the scheduler side's index learns that the store no longer has it.
        self._errors.update(b for b, hit in zip(batch.values(), hits) if not hit)
        self._reports.extend(("removed", self._rank, k) for k, hit in zip(batch, hits) if not hit)
        self._load_batch = list(batch.items())
        self._load_running = any(hits)
        if self._load_running:
            self._sync_device()
            for layer in range(self._pool.layers):
                self._load_plan.load_layer(layer)

    def wait_for_layer_load(self, layer_name: str) -> None:
        if not self._load_running or layer_name not in self._layer:
            return
        try:
            self._load_plan.wait_layer(self._layer[layer_name], timeout=float(self._extra.get("layer_timeout", 10.0)))
        except GiouringError as e:
            # The attention of this step may read a partial layer: every block of the batch is
            # reported, so that vLLM recomputes them rather than keep what was read.
            log.error("giouring: waiting for layer %s failed: %s", layer_name, e)
            self._errors.update(b for _, b in self._load_batch)

    def _finish_load(self) -> None:
        if self._load_batch is None:
            return
        batch, self._load_batch, self._load_running = self._load_batch, None, False
        try:
            results = self._load_plan.finish(check=False)
        except GiouringError as e:
            log.error("giouring: finishing the load failed: %s", e)
            results = None
        failed = []
        for i, (key, block) in enumerate(batch):
            r = results[i] if results is not None else None
            if r is None or r.rc != 0:
                if r is not None:
                    log.warning("giouring: block %d (key %032x) failed to load: rc %d, NVMe status 0x%x, layer %d",
                                block, key, r.rc, r.nvme_status, r.layer)
                    failed.append((key, r.rc))
                self._errors.add(block)
            elif r.layer != 0xFFFF and block not in self._errors:
                self.stats["blocks_loaded"] += 1
                # The store holds it: the scheduler side's index learns it too (a scheduler in
                # the store's process found it there; after a restart its index is empty).
                self._reports.append(("stored", self._rank, key))
        if failed:
            # A chunk whose read failed stays stored and a save of its key would be EEXIST, so
            # vLLM's recompute could never replace it and every later hit would fail again: the
            # store removes those whose failure would repeat (a device error; a second missed
            # deadline), the recompute's save stores them anew, and the scheduler side learns
            # of the removal from the store's journal.
            try:
                self.stats["chunks_removed"] += sum(self._store.remove_failed([k for k, _ in failed],
                                                                              [rc for _, rc in failed]))
            except GiouringError as e:
                log.error("giouring: removing chunks that failed to load failed: %s", e)

    def save_kv_layer(self, layer_name: str, kv_layer: torch.Tensor, attn_metadata: Any, **kwargs: Any) -> None:
        if self._save_plan is None or layer_name not in self._layer:
            return
        if not self._save_open:
            meta = self._meta()
            if meta is None or not meta.saves:
                return
            # A block loaded this step is not saved: it came from the store, or its load failed
            # and it holds no KV (vLLM recomputes it; the scheduler side saves it then).
            loading = {b for _, b in self._load_batch or ()} | self._errors
            pairs = [(k, b) for t in meta.saves for k, b in zip(t.keys, t.blocks) if b not in loading]
            if not pairs:
                return
            keys, blocks = [k for k, _ in pairs], [b for _, b in pairs]
            try:
                rcs = self._save_plan.save(keys, blocks)
            except GiouringError as e:
                log.warning("giouring: planning the save of %d blocks failed: %s", len(keys), e)
                self.stats["save_failures"] += len(keys)
                return
            self.stats["save_failures"] += sum(1 for rc in rcs if rc not in (0, -errno.EEXIST))
            self._save_keys = keys
            self._save_open = True
        self._sync_device()
        self._save_plan.save_layer(self._layer[layer_name])

    def wait_for_save(self):
        self._finish_load()
        if not self._save_open:
            return
        self._save_open = False
        results = self._save_plan.finish(check=False)
        # Evictions happened when the save was planned: reported before what the save stored, so
        # that a key evicted and stored again in one step ends up stored.
        self._poll_removed()
        self._reports.extend(("stored", self._rank, k) for k, r in zip(self._save_keys, results)
                             if r.rc in (0, -errno.EEXIST))
        ok = sum(1 for r in results if r.rc == 0 and r.layer != 0xFFFF)
        failed = [r for r in results if r.rc not in (0, -errno.EEXIST)]
        self.stats["blocks_saved"] += ok
        if failed:
            # Not an error for vLLM: a chunk not stored is a miss next time.
            self.stats["save_failures"] += len(failed)
            log.warning("giouring: %d of %d chunks were not saved (first: rc %d, NVMe status 0x%x)", len(failed),
                        len(results), failed[0].rc, failed[0].nvme_status)

    def get_handshake_metadata(self) -> GiouringStoreKeys | None:
        """The keys this worker's store holds (vLLM asks after register_kv_caches)."""
        if self._store is None:
            return None
        return GiouringStoreKeys(self._rank, self._store.keys())

    def _poll_removed(self) -> None:
        """The store's evictions since the last poll, as reports for the scheduler side."""
        while self._store is not None:
            keys, self._removed_next, lost = self._store.removed(self._removed_next)
            if lost:
                log.warning("giouring: more than %d chunks were evicted between two steps: the scheduler side "
                            "forgets what rank %d reported (later saves report it again)", REMOVED_KEPT, self._rank)
                self._reports.append(("cleared", self._rank, 0))
                continue
            self._reports.extend(("removed", self._rank, k) for k in keys)
            if not keys:
                return

    def get_kv_connector_kv_cache_events(self) -> GiouringKVEvents | None:
        """What this worker's store stored, evicted or missed since the last call (vLLM's model
        runner sends it to the scheduler side in ``KVConnectorOutput.kv_cache_events``)."""
        self._poll_removed()
        if not self._reports:
            return None
        reports, self._reports = self._reports, []
        return GiouringKVEvents(reports)

    def get_block_ids_with_load_errors(self) -> set[int]:
        self._finish_load()
        errors, self._errors = self._errors, set()
        self.stats["load_errors"] += len(errors)
        return errors

    def shutdown(self):
        if self._store is None:
            return
        with _stores_lock:
            if _stores.get(self._uris) is self._store:
                del _stores[self._uris]
        store, self._store = self._store, None
        self._load_plan = self._save_plan = None
        store.close()


def pool_of(tensors: list[torch.Tensor]) -> KVPool:
    """The pool of vLLM's per-layer views. Views into one buffer at one distance from each other
    are one tensor with a layer stride: in the block-outer layouts (BLNHC...) the layers of a
    block interleave, which per-layer tensors cannot say (their address ranges overlap)."""
    t0 = tensors[0]
    step = tensors[1].data_ptr() - t0.data_ptr() if len(tensors) > 1 else 0
    if step > 0 and step % t0.element_size() == 0 and all(
            t.untyped_storage().data_ptr() == t0.untyped_storage().data_ptr()
            and t.data_ptr() - t0.data_ptr() == i * step for i, t in enumerate(tensors)):
        whole = t0.as_strided((len(tensors), *t0.shape), (step // t0.element_size(), *t0.stride()))
        return KVPool(whole, dims=("layer", *LAYER_VIEW_DIMS))
    return KVPool(tensors, dims=LAYER_VIEW_DIMS)


def check_layer_views(t: torch.Tensor, view_order: tuple[int, ...], layout: str) -> None:
    """Refuses views whose strides do not follow the resolved layout: vLLM's views are logical
    [B, H, N, C] with the layout deciding only their strides; a view that disagrees means vLLM
    changed what it hands to connectors, and a pool built from it would move the wrong bytes."""
    if t.dim() != len(LAYER_VIEW_DIMS):
        raise GiouringError(errno.EINVAL, f"GiouringConnector: a layer's KV cache has {t.dim()} dimensions, "
                            f"vLLM's views have {len(LAYER_VIEW_DIMS)} ({', '.join(LAYER_VIEW_DIMS)})")
    sized = [d for d in view_order if t.shape[d] > 1]
    strides = [t.stride(d) for d in sized]
    if strides != sorted(strides, reverse=True):
        raise GiouringError(errno.EINVAL, f"GiouringConnector: strides {tuple(t.stride())} of the KV cache view do "
                            f"not follow layout {layout} (physical order {view_order} of {LAYER_VIEW_DIMS})")
