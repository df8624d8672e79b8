"""SGLang 0.5.23's own classes around the backend: its HiCacheStorageConfig, its storage backend
factory (the "dynamic" loader HiCache uses), and host pools whose KV buffer SGLang's own
MHATokenToKVPoolHost.init_kv_buffer lays out, with its own page accessors."""

from __future__ import annotations

import pytest
import torch
from sglang.srt.mem_cache.hicache_storage import HiCacheStorageConfig
from sglang.srt.mem_cache.pool_host.common import get_allocator_from_storage
from sglang.srt.mem_cache.pool_host.mha import MHATokenToKVPoolHost
from sglang.srt.mem_cache.storage import StorageBackendFactory

PAGE, LAYERS, HEADS, DIM, PAGES = 16, 3, 2, 32, 24


def host_pool(layout="layer_first"):
    """An MHA host pool on the CPU. Its constructor wants the device pool's buffer tables (a GPU
    KV cache); the fields init_kv_buffer reads are set instead, and SGLang's own code allocates
    and shapes the buffer. Not pinned: pinning needs a CUDA driver, which this machine lacks."""
    p = MHATokenToKVPoolHost.__new__(MHATokenToKVPoolHost)
    p.layout, p.page_size, p.layer_num, p.head_num, p.head_dim = layout, PAGE, LAYERS, HEADS, DIM
    p.size, p.page_num, p.dtype = PAGES * PAGE, PAGES, torch.bfloat16
    p.device, p.pin_memory, p._transfer_device = "cpu", False, torch.device("cpu")
    p.head_group_num = 1
    p.allocator = get_allocator_from_storage("default")
    p.kv_buffer = p.init_kv_buffer()
    return p


def make_backend(uris, pool=None, **extra):
    config = HiCacheStorageConfig(
        tp_rank=0, tp_size=1, pp_rank=0, pp_size=1, attn_cp_rank=0, attn_cp_size=1, is_mla_model=False,
        enable_storage_metrics=False, is_page_first_layout=False, model_name="tiny-test-model",
        extra_config={"backend_name": "giouring", "module_path": "giouring.sglang",
                      "class_name": "GiouringHiCacheStorage", "interface_v1": 1, "uris": list(uris), **extra})
    backend = StorageBackendFactory.create_backend("dynamic", config, pool)
    # What HiCacheController does right after creating a backend.
    if pool is not None:
        backend.register_mem_pool_host(pool)
        backend.on_host_pools_registered()
    return backend


def fill_page(pool, page, seed):
    """Writes a page's KV (what a device-to-host backup would have put there)."""
    g = torch.Generator().manual_seed(seed)
    data = pool.get_data_page(page * PAGE, flat=False)
    data.copy_(torch.randn(data.shape, generator=g).to(data.dtype))


def page_holds(pool, page, seed):
    g = torch.Generator().manual_seed(seed)
    data = pool.get_data_page(page * PAGE, flat=False)
    return torch.equal(data, torch.randn(data.shape, generator=g).to(data.dtype))


def indices(pages):
    """Host indices of whole pages, as HiCache passes them (every token's slot)."""
    return torch.cat([torch.arange(p * PAGE, (p + 1) * PAGE) for p in pages]) if pages else torch.empty(0, dtype=torch.int64)


@pytest.fixture
def uris(tmp_path):
    return [f"file://{tmp_path}/kv{i}.img?size=8M" for i in range(2)]
