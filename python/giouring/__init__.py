"""giouring for PyTorch: a KV store on NVMe targets, per-layer load and save as torch ops.

    import giouring
    pool = giouring.KVPool(kv_caches, dims=("part", "block", "token", "head", "channel"))
    with giouring.Store.create(["file:///data/kv0.img?size=8G"], pool) as store:
        plan = store.plan(max_requests=256)
        ...

See docs/python.md.
"""

import os as _os
from importlib import metadata as _metadata

# A CPU-executed target (file://, mem://host) copies into CUDA tensors on CUDA streams while
# wait_layer's kernel waits on the GPU; with CUDA's default 8 hardware queues a copy can sit behind
# that kernel in a shared queue until its deadline (measured on the H200; see
# gio_ctx_register_device() in include/giouring/host/ctx.h). Only effective before CUDA starts,
# and a value already set is kept.
_os.environ.setdefault("CUDA_DEVICE_MAX_CONNECTIONS", "32")

from . import _lib, ops  # noqa: F401  (loads the library and registers the ops' fakes)
from .errors import GiouringError
from .plan import DEVICE_STATS, PLAN_STATS, Plan, Result
from .pool import DIMS, KVPool
from .sched import SCHED_STATS, Decision, Scheduler, SMPartition, Transfer
from .store import STORE_STATS, Store

try:
    __version__ = _metadata.version("giouring")
except _metadata.PackageNotFoundError:  # imported from a source tree
    __version__ = "0+unknown"


def has_gpu() -> bool:
    """Whether this build has the GPU engine (it was built where nvcc was found)."""
    return bool(_lib.lib.gpy_has_gpu())


def status_name(nvme_status: int) -> str:
    """The name of an NVMe status field, e.g. ``status_name(0x0281)``."""
    return _lib.status_name(nvme_status)


__all__ = ["DEVICE_STATS", "DIMS", "Decision", "GiouringError", "KVPool", "PLAN_STATS", "Plan", "Result", "SCHED_STATS",
           "SMPartition", "STORE_STATS", "Scheduler", "Store", "Transfer", "has_gpu", "status_name", "__version__"]
