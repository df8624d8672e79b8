"""SGLang HiCache storage backend: pages of SGLang's host KV pool as chunks of a giouring store
(docs/sglang.md).

Switch it on with ``--hicache-storage-backend dynamic`` and, in the storage's extra config,
``backend_name``, ``module_path="giouring.sglang"``, ``class_name="GiouringHiCacheStorage"``,
``interface_v1=1`` and the targets in ``uris``. Importing this module imports SGLang;
``import giouring`` alone does not.

One chunk is one page of the host pool (``page_size`` tokens of every layer, K and V); the store
reads and writes the host pool's own memory, registered with every target, so a page never passes
through a copy. Misses are ``False`` in a result; failures raise (SGLang's prefetch and backup
threads catch exceptions; a ``None`` would end them).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import threading
from typing import Any, List, Optional

import torch
from sglang.srt.mem_cache.hicache_storage import HiCacheStorage, HiCacheStorageConfig

from .errors import GiouringError
from .pool import KVPool
from .store import Store

log = logging.getLogger(__name__)

#: The host pool layouts served: what each dimension of ``kv_buffer`` is, and which one holds
#: the pool's tokens (split into (page, token in page)) where pages are not a dimension already:
#: SGLang's MHA host pool in layer_first [2, L, size, H, D], page_first [2, size, L, H, D],
#: page_first_direct [2, pages, L, page, H, D] and page_head [2, pages, H, page, L, D].
LAYOUT_DIMS = {
    "layer_first": (("part", "layer", "block", "token", "head", "channel"), 2),
    "page_first": (("part", "block", "token", "layer", "head", "channel"), 1),
    "page_first_direct": (("part", "block", "layer", "token", "head", "channel"), None),
    "page_head": (("part", "block", "head", "token", "layer", "channel"), None),
}


def _bad(message: str) -> GiouringError:
    return GiouringError(errno.EINVAL, "GiouringHiCacheStorage: " + message)


class GiouringHiCacheStorage(HiCacheStorage):
    """HiCache's L3 tier over a giouring store (see the module's text and docs/sglang.md).

    Args:
        storage_config: SGLang's HiCacheStorageConfig; its ``extra_config`` holds ``uris`` (the
            targets, each may hold ``{tp_rank}``), and optionally ``create`` ('auto': open,
            formatting targets never formatted; true; false), ``store_bytes``, ``timeout``
            (seconds, each command group) and ``namespace`` (what keys are salted with).
        kwargs: create_backend's extra keyword arguments (unused).
    """

    def __init__(self, storage_config: HiCacheStorageConfig, kwargs: Optional[dict] = None):
        extra = dict(storage_config.extra_config or {})
        uris = extra.get("uris")
        if isinstance(uris, str) or not isinstance(uris, (list, tuple)) or not uris \
                or not all(isinstance(u, str) and u for u in uris):
            raise _bad(f"extra_config['uris'] must be a non-empty list of target URIs, not {uris!r}")
        if not extra.get("interface_v1"):
            # Without it HiCache takes its generic path, which hands copies of pages around; the
            # store moves host-pool pages in place and has no copy to fill.
            raise _bad("extra_config needs 'interface_v1': 1 (giouring moves the host pool's pages in place)")
        if extra.get("create", "auto") not in ("auto", True, False):
            raise _bad(f"extra_config['create'] is 'auto', true or false, not {extra['create']!r}")
        c = storage_config
        self.uris = [u.replace("{tp_rank}", str(c.tp_rank)) for u in uris]
        self.extra = extra
        # A page's key names its tokens; the KV of a TP rank is its own heads (MLA: the same on
        # every rank), and another model's KV is other bytes.
        what = extra.get("namespace") or repr(
            (c.model_name, c.is_mla_model, 0 if c.is_mla_model else c.tp_rank, c.tp_size, c.pp_rank, c.pp_size))
        self._ns = hashlib.blake2b(str(what).encode(), digest_size=16).digest()
        self.store: Store | None = None
        self.pool: KVPool | None = None
        self.page_size = 0
        # HiCache's prefetch and backup threads call at once: a plan (and its lock) for each.
        self._get = self._set = None
        self._get_lock, self._set_lock = threading.Lock(), threading.Lock()

    # ---- the host pool ----

    def register_mem_pool_host(self, mem_pool_host) -> None:
        """Describes the host pool's buffer by its strides, opens the store over the targets and
        registers the buffer with each (the pages then move without a copy)."""
        super().register_mem_pool_host(mem_pool_host)
        layout = getattr(mem_pool_host, "layout", None)
        if layout not in LAYOUT_DIMS:
            raise _bad(f"host pool layout {layout!r} is not served (served: {', '.join(LAYOUT_DIMS)})")
        buf, page = mem_pool_host.kv_buffer, int(mem_pool_host.page_size)
        dims, tok = LAYOUT_DIMS[layout]
        if not isinstance(buf, torch.Tensor) or buf.dim() != len(dims) - (tok is not None) or buf.shape[0] != 2:
            raise _bad(f"the host pool's kv_buffer is not SGLang's MHA buffer in layout {layout}")
        if tok is None:
            paged = buf
            if buf.shape[dims.index("token")] != page:
                raise _bad(f"pages of {buf.shape[dims.index('token')]} tokens in kv_buffer, page_size {page}")
        else:
            if page <= 0 or buf.shape[tok] % page:
                raise _bad(f"host pool of {buf.shape[tok]} tokens is not whole pages of {page}")
            # Split the token dimension into (page, token in page): a view, torch's strides kept.
            paged = buf.unflatten(tok, (buf.shape[tok] // page, page))
        pool = KVPool(paged, dims=dims)
        timeout = float(self.extra.get("timeout", 5.0))
        self.store = self._open(pool, timeout)
        self.pool, self.page_size = pool, page
        self._get = self.store.plan(max_requests=pool.blocks, timeout=timeout)
        self._set = self.store.plan(max_requests=pool.blocks, timeout=timeout)
        log.info("giouring: HiCache host pool %s over %s: %s", pool, self.uris, self.store.stats())

    def _open(self, pool: KVPool, timeout: float) -> Store:
        create = self.extra.get("create", "auto")
        size = int(self.extra.get("store_bytes", 0))
        if create is True:
            return Store.create(self.uris, pool, store_bytes=size, timeout=timeout)
        try:
            return Store.open(self.uris, pool, timeout=timeout)
        except GiouringError as e:
            if create is False or e.errno != errno.ENODATA:
                raise
        return Store.create(self.uris, pool, store_bytes=size, timeout=timeout)

    def _key(self, key: str) -> bytes:
        if not isinstance(key, str):
            raise TypeError(f"a HiCache key is a str, not {type(key).__name__}")
        return hashlib.blake2b(key.encode(), digest_size=16, key=self._ns).digest()

    def _pages(self, keys: List[str], host_indices: torch.Tensor) -> list[int]:
        if self.store is None:
            raise _bad("no host pool registered (register_mem_pool_host first)")
        idx = torch.as_tensor(host_indices).flatten().to("cpu", torch.int64)
        if idx.numel() != len(keys) * self.page_size:
            raise _bad(f"{len(keys)} keys need {len(keys) * self.page_size} host indices, not {idx.numel()}")
        firsts = idx[:: self.page_size] if keys else idx[:0]
        if bool((firsts % self.page_size != 0).any()):
            raise _bad(f"host indices {firsts.tolist()} do not all start a page of {self.page_size} tokens")
        return (firsts // self.page_size).tolist()

    # ---- the v1 page interface ----

    def batch_get_v1(self, keys: List[str], host_indices: torch.Tensor, extra_info: Any = None) -> List[bool]:
        """Reads each key's page into the host pool page its indices name: True for a page read,
        False for a miss (the page is left alone). Raises GiouringError when a read fails (the
        pages of that batch may then hold part of a chunk: none of them is reported read); a
        chunk whose read the device failed, or whose load missed its deadline a second time,
        is removed from the store first (``Store.remove_failed``), so that the next write-back
        of its page stores it anew (left stored, every later get of it would fail and its set
        would change nothing)."""
        pages = self._pages(keys, host_indices)
        wanted = [self._key(k) for k in keys]
        with self._get_lock:
            hits = self._get.load(wanted, pages)
            if any(hits):
                for layer in range(self.pool.layers):
                    self._get.load_layer(layer)
            try:
                self._get.finish()  # raises GiouringError on a failed read, naming errno and status
            except GiouringError as e:
                if e.results:
                    try:  # a device error's chunk, or one whose load missed its deadline twice
                        self.store.remove_failed(wanted, [r.rc for r in e.results])
                    except GiouringError as err:
                        log.error("giouring: removing chunks that failed to load failed: %s", err)
                raise
        return hits

    def batch_set_v1(self, keys: List[str], host_indices: torch.Tensor, extra_info: Any = None) -> List[bool]:
        """Writes each host pool page under its key: True once stored (or stored already), False
        where the store had no slot (every chunk pinned). Raises GiouringError when a write fails
        (the chunks of the batch that did not fail are stored)."""
        pages = self._pages(keys, host_indices)
        with self._set_lock:
            rcs = self._set.save([self._key(k) for k in keys], pages)
            if any(rc == 0 for rc in rcs):
                for layer in range(self.pool.layers):
                    self._set.save_layer(layer)
            self._set.finish()
        return [rc in (0, -errno.EEXIST) for rc in rcs]

    # ---- lookups ----

    def exists(self, key: str) -> bool:
        return self.batch_exists([key]) == 1

    def batch_exists(self, keys: List[str], extra_info: Any = None) -> int:
        """How many leading keys are stored (HiCache's prefix semantics)."""
        if self.store is None:
            raise _bad("no host pool registered (register_mem_pool_host first)")
        found = self.store.contains([self._key(k) for k in keys])
        return found.index(False) if False in found else len(found)

    # ---- the generic (copying) interface: refused, see __init__ ----

    def _generic(self, what: str):
        raise GiouringError(errno.EOPNOTSUPP, f"GiouringHiCacheStorage: {what} with page copies is not served: "
                            "giouring moves host pool pages in place (extra_config 'interface_v1': 1)")

    def get(self, key, target_location=None, target_sizes=None):
        self._generic("get")

    def batch_get(self, keys, target_locations=None, target_sizes=None):
        self._generic("batch_get")

    def set(self, key, value=None, target_location=None, target_sizes=None):
        self._generic("set")

    def batch_set(self, keys, values=None, target_locations=None, target_sizes=None):
        self._generic("batch_set")

    def get_stats(self):
        return self.store.stats() if self.store is not None else None

    def close(self) -> None:
        if self.store is not None:
            store, self.store = self.store, None
            store.close()
