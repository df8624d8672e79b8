"""Fake (meta) implementations of the package's torch ops, for FakeTensor tracing and
torch.compile: the ops return nothing and only write the pool's tensors in place (their schema
says so), so the fakes do nothing."""

from __future__ import annotations

import torch


@torch.library.register_fake("giouring::load_layer")
def _load_layer_fake(plan, layer, pool):
    return None


@torch.library.register_fake("giouring::save_layer")
def _save_layer_fake(plan, layer, pool):
    return None


@torch.library.register_fake("giouring::wait_layer")
def _wait_layer_fake(plan, layer, timeout_ns, pool):
    return None
