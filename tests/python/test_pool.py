"""Pools from torch tensors: any layout by its strides, and refusals that name what is wrong."""

from __future__ import annotations

import errno

import pytest
import torch

import giouring
from conftest import BLOCKS, DIM, HEADS, LAYERS, TOKENS, vllm_pool


def test_vllm_layout_is_two_runs_per_object():
    _, pool = vllm_pool()
    assert pool.layers == LAYERS and pool.blocks == BLOCKS
    assert pool.object_bytes == 2 * TOKENS * HEADS * DIM * 2
    assert pool.runs == 2  # K and V of a block are apart
    assert pool.extent == (LAYERS, BLOCKS, 2, TOKENS, HEADS, DIM)


def test_one_tensor_blocks_first_is_one_run():
    t = torch.zeros(BLOCKS, LAYERS, 2, TOKENS, HEADS, DIM, dtype=torch.float16)
    pool = giouring.KVPool(t, dims=("block", "layer", "part", "token", "head", "channel"))
    assert pool.runs == 1 and pool.layers == LAYERS


def test_the_signature_is_the_device_byte_order_not_the_memory_layout():
    # K and V per layer as separate tensors, and one tensor per layer with K/V outermost: the
    # objects' bytes go to the device in the same order, so a store takes either.
    _, per_layer = vllm_pool()
    pairs = [(torch.zeros(BLOCKS, TOKENS, HEADS, DIM, dtype=torch.bfloat16),
              torch.zeros(BLOCKS, TOKENS, HEADS, DIM, dtype=torch.bfloat16)) for _ in range(LAYERS)]
    apart = giouring.KVPool(pairs, dims=("block", "token", "head", "channel"))
    assert apart.signature == per_layer.signature
    # Heads before tokens is another byte order.
    t = torch.zeros(LAYERS, BLOCKS, 2, HEADS, TOKENS, DIM, dtype=torch.bfloat16)
    other = giouring.KVPool(t, dims=("layer", "block", "part", "head", "token", "channel"))
    assert other.signature != per_layer.signature


def test_strides_not_shapes_a_transposed_view_is_described_as_it_lies():
    base = torch.zeros(LAYERS, BLOCKS, 2, HEADS, TOKENS, DIM)
    view = base.transpose(3, 4)  # shape says (token, head); memory has heads outermost
    pool = giouring.KVPool(view, dims=("layer", "block", "part", "token", "head", "channel"))
    assert pool.stride[3] == DIM and pool.stride[4] == TOKENS * DIM
    heads_first = giouring.KVPool(base, dims=("layer", "block", "part", "head", "token", "channel"))
    assert pool.signature == heads_first.signature


def refused(fn, *words):
    with pytest.raises(giouring.GiouringError) as e:
        fn()
    assert e.value.errno == errno.EINVAL
    for w in words:
        assert w in e.value.strerror, e.value.strerror
    return e.value


def test_overlapping_elements_are_refused_naming_the_dimension():
    t = torch.zeros(LAYERS, 1, 2, TOKENS, HEADS, DIM).expand(LAYERS, BLOCKS, 2, TOKENS, HEADS, DIM)
    refused(lambda: giouring.KVPool(t, dims=("layer", "block", "part", "token", "head", "channel")),
            "'block'", "stride 0")


def test_interleaved_dimensions_are_refused_naming_both():
    t = torch.zeros(LAYERS * BLOCKS * 2 * TOKENS * HEADS * DIM + 256).as_strided(
        (LAYERS, BLOCKS, 2, TOKENS, HEADS, DIM), (BLOCKS * 2 * TOKENS * HEADS * DIM, 2 * TOKENS * HEADS * DIM,
                                                  TOKENS * HEADS * DIM, HEADS * DIM, DIM, 2))
    refused(lambda: giouring.KVPool(t, dims=("layer", "block", "part", "token", "head", "channel")),
            "'head'", "'channel'")


def test_tensors_that_overlap_are_refused_naming_their_layers():
    t = torch.zeros(2, BLOCKS, TOKENS, HEADS, DIM)
    refused(lambda: giouring.KVPool([t, t[:, :]], dims=("part", "block", "token", "head", "channel")),
            "layer 0", "layer 1", "overlap")


def test_bad_descriptions_are_refused():
    kv, _ = vllm_pool()
    dims = ("part", "block", "token", "head", "channel")
    refused(lambda: giouring.KVPool(kv, dims=dims[:4]), "names 4 dimensions")
    refused(lambda: giouring.KVPool(kv, dims=("part", "block", "token", "head", "layer")), "'layer'", "list")
    refused(lambda: giouring.KVPool(kv, dims=("part", "block", "token", "token", "channel")), "twice")
    refused(lambda: giouring.KVPool(kv, dims=("part", "block", "token", None, "channel")), "no name")
    refused(lambda: giouring.KVPool(kv, dims=("part", "block", "token", "heads", "channel")), "unknown")
    refused(lambda: giouring.KVPool([kv[0], kv[1].float()], dims=dims), "dtype")
    refused(lambda: giouring.KVPool([kv[0], kv[1].transpose(1, 2)], dims=dims), "tensor 1")
    refused(lambda: giouring.KVPool(torch.zeros(2, 4, device="meta"), dims=("part", "block")), "meta")
    with pytest.raises(TypeError):
        giouring.KVPool([1, 2], dims=dims)
