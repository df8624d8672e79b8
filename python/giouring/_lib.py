"""The native library (libgiouring_torch.so): its torch ops registered, its C API through ctypes.

The library holds no Python C API: the handle-based calls (stores, plans) go through ctypes, the
data-moving calls are torch ops (ops.cpp). Every C call returns -errno on failure and leaves the
message for ``gpy_last_error()``; :func:`check` turns that into :class:`GiouringError`.
"""

from __future__ import annotations

import ctypes
import os
import re

import torch

from .errors import GiouringError

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libgiouring_torch.so")
torch.ops.load_library(PATH)
lib = ctypes.CDLL(PATH)

u32, u64, i32, i64 = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int32, ctypes.c_int64
vp = ctypes.c_void_p
P = ctypes.POINTER


class PoolDesc(ctypes.Structure):
    """Mirror of struct gpy_pool_desc (python/csrc/gpy.h); checked against the C size at import."""

    _fields_ = [
        ("base_mode", u32),
        ("elem_bytes", u32),
        ("extent", u32 * 6),
        ("stride", u64 * 6),
        ("base", u64),
        ("bases", P(u64)),
        ("regions", P(u64)),
        ("nregions", u32),
        ("device", i32),
    ]


def _sig(name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)


_sig("gpy_last_error", ctypes.c_char_p)
_sig("gpy_status_str", ctypes.c_char_p, u32)
_sig("gpy_pool_desc_size", u32)
_sig("gpy_pool_check", ctypes.c_int, P(PoolDesc), P(u64), P(u64), P(u32))
_sig("gpy_store_open", ctypes.c_int, P(ctypes.c_char_p), u32, P(PoolDesc), ctypes.c_int, u64, u64, P(vp))
_sig("gpy_store_close", ctypes.c_int, vp)
_sig("gpy_store_stats", ctypes.c_int, vp, P(u64), u32)
_sig("gpy_store_inject", ctypes.c_int, vp, u32, u64, u32)
_sig("gpy_store_gpu_targets", ctypes.c_int, vp)
_sig("gpy_store_path", ctypes.c_int, vp, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_uint32)
_sig("gpy_store_exec_stream", ctypes.c_int, vp, vp)
_sig("gpy_store_contains", ctypes.c_int, vp, P(u64), u32, P(ctypes.c_uint8))
_sig("gpy_store_remove", ctypes.c_int, vp, P(u64), u32, P(ctypes.c_uint8))
_sig("gpy_store_removed", ctypes.c_int, vp, u64, P(u64), u32, P(u64))
_sig("gpy_store_remove_failed", ctypes.c_int, vp, P(u64), P(ctypes.c_int32), u32, P(ctypes.c_uint8))
_sig("gpy_store_keys", ctypes.c_int, vp, u64, P(u64), u32, P(u64))
_sig("gpy_has_gpu", ctypes.c_int)
_sig("gpy_plan_create", ctypes.c_int, vp, u32, u32, u32, u32, u32, u32, u64, u32, u32, u32, u32, P(vp))
_sig("gpy_plan_destroy", ctypes.c_int, vp)
_sig("gpy_plan_load", ctypes.c_int, vp, P(u64), P(u32), u32, P(ctypes.c_uint8))
_sig("gpy_plan_save", ctypes.c_int, vp, P(u64), P(u32), u32, P(i32))
_sig("gpy_plan_finish", ctypes.c_int, vp, P(i32), P(ctypes.c_uint16), P(ctypes.c_uint16), u64)
_sig("gpy_plan_batch_keys", u32, vp)
_sig("gpy_plan_stats", ctypes.c_int, vp, P(u64), u32)
_sig("gpy_plan_devices", ctypes.c_int, vp, P(u64), u32)
_sig("gpy_plan_mover", ctypes.c_int, vp, P(u64), u32)
_sig("gpy_plan_wait_times", ctypes.c_int, vp, P(u64), u32)

if ctypes.sizeof(PoolDesc) != lib.gpy_pool_desc_size():
    raise ImportError(f"giouring: {PATH} does not match this package (struct gpy_pool_desc is "
                      f"{lib.gpy_pool_desc_size()} bytes there, {ctypes.sizeof(PoolDesc)} here): reinstall it")


def status_name(status: int) -> str:
    """The name of an NVMe status field, as the library prints it."""
    return lib.gpy_status_str(status).decode()


def error(rc: int, nvme_status: int = 0, results=None, message: str | None = None) -> GiouringError:
    """The exception of a failed call (rc < 0), with the calling thread's message."""
    msg = message if message is not None else lib.gpy_last_error().decode(errors="replace")
    return GiouringError(-rc, msg, nvme_status, results, status_name(nvme_status) if nvme_status else "")


_raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)


def current_raw_stream(device_index: int) -> int:
    """The handle of PyTorch's current CUDA stream on a device. Through torch's own accessor
    where it has one (what its generated code calls: no Stream object made), else the public
    call: a stream= that is already the current one cost 8 us a call more than none on the
    H100's host with the public call (py_op_cost.py)."""
    if _raw_stream is not None:
        return _raw_stream(device_index)
    return torch.cuda.current_stream(device_index).cuda_stream


def check(rc: int) -> int:
    """rc when it is not negative; else raises its GiouringError."""
    if rc < 0:
        raise error(rc)
    return rc


_OP_ERROR = re.compile(r"giouring: \[errno (\d+)\] ([^\n]*)")


def op_error(e: RuntimeError) -> GiouringError | None:
    """The GiouringError a torch op of the package raised as RuntimeError, or None for another."""
    m = _OP_ERROR.search(str(e))
    return error(-int(m.group(1)), message=m.group(2)) if m else None
