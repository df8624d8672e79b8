"""Shared fixtures of the package's tests: pools of small paged KV caches and file targets in a
fresh directory (CPU-executed software targets, the CPU engine)."""

from __future__ import annotations

import pytest
import torch

import giouring

LAYERS, BLOCKS, TOKENS, HEADS, DIM = 4, 32, 16, 2, 64


def vllm_pool(device="cpu", dtype=torch.bfloat16, layers=LAYERS, blocks=BLOCKS):
    """A tensor per layer of shape [2, blocks, block_size, heads, dim] (vLLM's layout): K and V
    apart, so each object is two runs."""
    kv = [torch.zeros(2, blocks, TOKENS, HEADS, DIM, dtype=dtype, device=device) for _ in range(layers)]
    return kv, giouring.KVPool(kv, dims=("part", "block", "token", "head", "channel"))


def fill(kv, block, key, layers=LAYERS):
    """Writes chunk `key`'s bytes (what the engine computed) into pool block `block`."""
    g = torch.Generator().manual_seed(key)
    for layer in range(layers):
        kv[layer][:, block].copy_(torch.randn(kv[layer][:, block].shape, generator=g).to(kv[layer].dtype))


def holds(kv, block, key, layers=LAYERS):
    """Whether pool block `block` holds chunk `key` in every layer."""
    g = torch.Generator().manual_seed(key)
    ok = True
    for layer in range(layers):
        want = torch.randn(kv[layer][:, block].shape, generator=g).to(kv[layer].dtype)
        ok &= torch.equal(kv[layer][:, block].cpu(), want)
    return ok


@pytest.fixture
def uris(tmp_path):
    """Four file targets of 8 MiB in a fresh directory (reopened on the same files by a test)."""
    return [f"file://{tmp_path}/dev{i}.img?size=8M" for i in range(4)]
