"""vLLM's own classes around the connector: a real VllmConfig (a config.json-only model, no
network), a real Scheduler that builds the scheduler side through vLLM's connector factory,
Requests hashed by vLLM's block hasher, and KV caches allocated by vLLM's own allocator in the
resolved layout, handed to the worker side as vLLM's model runner hands them. The model's forward
pass is played here: each layer waits for its load, writes the KV of the tokens it computes, then
saves, as vLLM's attention wrapper calls the connector, and the worker's output is collected as
vLLM's model runner collects it. With ``separate`` the workers are as in vLLM's multi-process
executor: the scheduler side does not see their stores, the metadata and the outputs cross by
pickle, and several workers' outputs are merged by vLLM's KVOutputAggregator."""

from __future__ import annotations

import itertools
import os
import pathlib
import pickle

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
from vllm import SamplingParams  # noqa: E402
from vllm.config import (  # noqa: E402
    CacheConfig,
    DeviceConfig,
    KVEventsConfig,
    KVTransferConfig,
    ModelConfig,
    ParallelConfig,
    SchedulerConfig,
    VllmConfig,
)
from vllm.distributed.kv_transfer.kv_connector.utils import KVOutputAggregator  # noqa: E402
from vllm.distributed.kv_transfer.kv_connector.v1.base import KVConnectorRole  # noqa: E402
from vllm.utils.hashing import sha256  # noqa: E402
from vllm.v1.core.kv_cache_planning import get_kv_cache_config_from_groups  # noqa: E402
from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash  # noqa: E402
from vllm.v1.core.sched.scheduler import Scheduler  # noqa: E402
from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheGroupSpec  # noqa: E402
from vllm.v1.outputs import KVConnectorOutput, ModelRunnerOutput  # noqa: E402
from vllm.v1.request import Request  # noqa: E402
from vllm.v1.structured_output import StructuredOutputManager  # noqa: E402
from vllm.v1.worker.utils import allocate_kv_cache  # noqa: E402

import giouring.vllm  # noqa: E402
from giouring.vllm import GiouringConnector  # noqa: E402

MODEL = str(pathlib.Path(__file__).parent / "model")  # a 2-layer OPT config.json, no weights
BLOCK = 16
LAYERS = [f"model.decoder.layers.{i}.self_attn.attn" for i in range(2)]
HEADS, HEAD_SIZE = 2, 32
EOS = 2
init_none_hash(sha256)
_ids = itertools.count(1)


def make_config(uris, *, layout="LBNHC", policy="recompute", blocks=64, tp=1, events=None, **extra) -> VllmConfig:
    model = ModelConfig(model=MODEL, dtype="float16", seed=0, skip_tokenizer_init=True, max_model_len=1024)
    cache = CacheConfig(block_size=BLOCK, enable_prefix_caching=True)
    cache.num_gpu_blocks_override = blocks
    # vLLM's engine core resolves the layout (asking the connector) before it allocates; the test
    # takes the role of that resolution, as vLLM's own connector tests do.
    cache.kv_cache_layout = layout
    transfer = KVTransferConfig(kv_connector="GiouringConnector", kv_connector_module_path="giouring.vllm",
                                kv_role="kv_both", kv_load_failure_policy=policy,
                                kv_connector_extra_config={"uris": list(uris), **extra})
    return VllmConfig(model_config=model, cache_config=cache, kv_transfer_config=transfer,
                      parallel_config=ParallelConfig(tensor_parallel_size=tp),
                      kv_events_config=events or KVEventsConfig(),
                      scheduler_config=SchedulerConfig(max_num_seqs=16, max_num_batched_tokens=512, max_model_len=1024,
                                                       is_encoder_decoder=False, disable_hybrid_kv_cache_manager=True),
                      device_config=DeviceConfig("cpu"))


def make_kv_cache_config(vllm_config):
    spec = FullAttentionSpec(block_size=BLOCK, num_kv_heads=HEADS, head_size=HEAD_SIZE, dtype=torch.float16)
    blocks = vllm_config.cache_config.num_gpu_blocks_override
    return get_kv_cache_config_from_groups(vllm_config, [KVCacheGroupSpec(list(LAYERS), spec)],
                                           available_memory=blocks * spec.page_size_bytes * len(LAYERS))


def make_worker(vllm_config, kv_cache_config, rank):
    """A worker side as vLLM builds it in the worker of that rank (the rank is what vLLM's parallel
    groups would say; none are set up here)."""
    real = giouring.vllm._worker_rank
    giouring.vllm._worker_rank = lambda _config: rank
    try:
        return GiouringConnector(vllm_config, KVConnectorRole.WORKER, kv_cache_config)
    finally:
        giouring.vllm._worker_rank = real


class Engine:
    """A scheduler and the workers of one vLLM engine (one per rank, each over its own store);
    ``step`` runs one step."""

    def __init__(self, vllm_config, *, separate=False):
        self.config = vllm_config
        ranks = vllm_config.parallel_config.tensor_parallel_size
        self.separate = separate or ranks > 1
        self.kv_cache_config = make_kv_cache_config(vllm_config)
        # The workers first: vLLM's engine core initializes the KV caches before it builds its
        # scheduler.
        self.kvs, self.workers = [], []
        for rank in range(ranks):
            kv = allocate_kv_cache(self.kv_cache_config, torch.device("cpu"),
                                   vllm_config.cache_config.get_resolved_kv_cache_layout())
            w = make_worker(vllm_config, self.kv_cache_config, rank)
            w.register_kv_caches(kv)
            if self.separate:  # the store is in the worker's process, not the scheduler's
                giouring.vllm._stores.pop(w._uris, None)
            self.kvs.append(kv)
            self.workers.append(w)
        self.kv, self.worker = self.kvs[0], self.workers[0]
        self.aggregator = KVOutputAggregator(ranks)
        vllm_config.cache_config.num_gpu_blocks = self.kv_cache_config.num_blocks
        self.scheduler = Scheduler(vllm_config=vllm_config, kv_cache_config=self.kv_cache_config, log_stats=True,
                                   structured_output_manager=StructuredOutputManager(vllm_config), block_size=BLOCK)
        assert isinstance(self.scheduler.connector, GiouringConnector)  # built by vLLM's factory
        # vLLM's engine core then hands the workers' handshake metadata to the scheduler side
        # (EngineCore._set_kv_connector_handshake_metadata), keyed by (pp rank, tp rank).
        shake = {(0, rank): w.get_handshake_metadata() for rank, w in enumerate(self.workers)}
        if self.separate:
            shake = pickle.loads(pickle.dumps(shake))
        self.scheduler.connector.set_xfer_handshake_metadata_pp_aware(shake)
        self.loaded_at_step: dict[str, list[int]] = {}

    def step(self, kv_of=None, read=None):
        """One engine step: schedule, run the "forward" (per layer: wait for the load, the tokens'
        KV written, save), report the output. ``kv_of(req, token)`` gives what a token's KV is;
        ``read(req_id, block_ids, computed)`` sees the cache before the forward writes."""
        out = self.scheduler.schedule()
        reqs = {r.request_id: r for r in self.scheduler.running}
        ids = list(out.num_scheduled_tokens)
        outputs = []
        for rank, (w, kv) in enumerate(zip(self.workers, self.kvs)):
            meta = out.kv_connector_metadata
            w.bind_connector_metadata(pickle.loads(pickle.dumps(meta)) if self.separate else meta)
            w.start_load_kv(None)
            if read is not None and rank == 0:
                for layer in LAYERS:
                    w.wait_for_layer_load(layer)
                for req_id in out.num_scheduled_tokens:
                    read(reqs[req_id], self.block_ids(req_id))
            for layer in LAYERS:
                w.wait_for_layer_load(layer)
                for req_id, n in out.num_scheduled_tokens.items():
                    req = reqs[req_id]
                    block_ids = self.block_ids(req_id)
                    # schedule() advanced num_computed_tokens past this step's tokens already.
                    for t in range(req.num_computed_tokens - n, req.num_computed_tokens):
                        self.token_kv(layer, block_ids, t, kv)[...] = kv_of(req, t, layer) if kv_of else 1
                w.save_kv_layer(layer, kv[layer], None)
            # What vLLM's model runner collects after the forward (KVConnectorModelRunnerMixin).
            w.wait_for_save()
            kv_out = KVConnectorOutput(invalid_block_ids=w.get_block_ids_with_load_errors(),
                                       kv_cache_events=w.get_kv_connector_kv_cache_events())
            w.clear_connector_metadata()
            runner = ModelRunnerOutput(req_ids=ids, req_id_to_index={r: i for i, r in enumerate(ids)},
                                       sampled_token_ids=[[5] for _ in ids], logprobs=None, prompt_logprobs_dict={},
                                       pooler_output=None, kv_connector_output=kv_out)
            outputs.append(pickle.loads(pickle.dumps(runner)) if self.separate else runner)
        runner = self.aggregator.aggregate(outputs) if len(outputs) > 1 else outputs[0]
        invalid = runner.kv_connector_output.invalid_block_ids
        self.scheduler.update_from_output(out, runner)
        return out, invalid

    def block_ids(self, req_id):
        return self.scheduler.kv_cache_manager.get_block_ids(req_id)[0]

    def token_kv(self, layer, block_ids, t, kv=None):
        """The [H, C] cells of token t: the view is logical [B, H, N, C] whatever the layout."""
        return (self.kv if kv is None else kv)[layer][block_ids[t // BLOCK], :, t % BLOCK, :]

    def close(self):
        for w in self.workers:
            w.shutdown()
        self.scheduler.shutdown()


def token_value(req, t, layer):
    """A token's KV in a layer: a function of the prompt prefix up to it, so that a block's
    content is the same in every request sharing that prefix (as a model's KV would be)."""
    prefix = req.all_token_ids[: t + 1]
    h = hash((tuple(prefix), layer)) % 2039
    return torch.full((HEADS, 2 * HEAD_SIZE), float(h) / 7.0, dtype=torch.float16)


def make_request(tokens, max_tokens=1):
    sp = SamplingParams(max_tokens=max_tokens)
    sp.update_from_generation_config({}, EOS)
    return Request(request_id=f"r{next(_ids)}", prompt_token_ids=list(tokens), sampling_params=sp,
                   pooling_params=None, mm_features=None, block_hasher=get_request_block_hasher(BLOCK, sha256))


@pytest.fixture
def uris(tmp_path):
    return [f"file://{tmp_path}/kv{i}.img?size=16M" for i in range(2)]
