"""Hugging Face causal LMs with the KV-cache operator in their attention.

The capture of a model for generation runs its forward with attention implementation
"torchtrt_c" (registered in transformers' AttentionInterface) and no Hugging Face cache: each
attention layer then calls kv_attention() below with its new queries, keys and values, and the
op (torchtrt_c/llm/_kv_op.py) writes the keys/values into that layer's cache tensors and attends
over the cache. The cache tensors, the cache slots of the new tokens and the padding mask come
from a KVContext that the step module (Step) enters around the model's forward: during
torch.export they are the step's inputs, so each layer's op reads the layer's own cache inputs.

Because the implementation is not one of transformers' mask functions, the models build no 4D
mask for it (masking_utils: custom attention "without equivalent mask creation"): causal order,
padding and sliding windows are the op's own (slots, key_mask, window), and the model's
positions are the position_ids the step is given.
"""
from __future__ import annotations

import contextlib
import threading
from typing import List, Optional, Sequence, Tuple

import torch

from torchtrt_c.llm import _kv_op  # noqa: F401  (registers torch.ops.torchtrt_c.kv_attention)

IMPLEMENTATION = "torchtrt_c"

_local = threading.local()


class KVContext:
    """What the attention layers of one forward read: per layer (k_cache, v_cache), the cache
    slots of the new tokens [S] and the padding mask [B, L]. `record` (probe only): a list that
    receives (layer_idx, key shape, key dtype) instead of running the op."""

    def __init__(self, caches: Sequence[Tuple[torch.Tensor, torch.Tensor]], slots, key_mask, record=None):
        self.caches = caches
        self.slots = slots
        self.key_mask = key_mask
        self.record = record


@contextlib.contextmanager
def kv_context(ctx: KVContext):
    prev = getattr(_local, "ctx", None)
    _local.ctx = ctx
    try:
        yield ctx
    finally:
        _local.ctx = prev


def attention(module, query, key, value, attention_mask, dropout: float = 0.0, scaling: Optional[float] = None,
              sliding_window: Optional[int] = None, softcap: Optional[float] = None, **kwargs):
    """transformers' attention-function signature: q [B, Hq, S, D], k/v [B, Hkv, S, D] -> ([B, S, Hq, D], None)."""
    ctx = getattr(_local, "ctx", None)
    if ctx is None:
        raise RuntimeError("the torchtrt_c attention implementation runs only inside a torchtrt_c generator step")
    if attention_mask is not None:
        # A model that builds its own mask for a custom attention (a prefix that attends both
        # ways, an image block): the op's causal + padding + window rule would not be its rule.
        raise NotImplementedError(
            f"{type(module).__name__}: this model builds its own attention mask, which the KV-cache "
            "operator does not take (it applies causal order, padding and sliding windows itself)")
    idx = getattr(module, "layer_idx", None)
    if idx is None:
        raise NotImplementedError(f"{type(module).__name__} has no layer_idx: cannot find its cache")
    if ctx.record is not None:
        ctx.record.append((int(idx), tuple(key.shape), key.dtype, tuple(value.shape)))
        return query.new_zeros(query.shape[0], query.shape[2], query.shape[1], value.shape[-1]), None
    k_cache, v_cache = ctx.caches[idx]
    scale = float(scaling) if scaling is not None else float(query.shape[-1]) ** -0.5
    out = torch.ops.torchtrt_c.kv_attention(query, key, value, k_cache, v_cache, ctx.slots, ctx.key_mask, scale,
                                            int(sliding_window or 0), float(softcap or 0.0))
    return out.transpose(1, 2).contiguous(), None


_registered = False


def register() -> None:
    """Registers the implementation with transformers (once)."""
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface
    AttentionInterface.register(IMPLEMENTATION, attention)
    _registered = True


def _configs(model):
    """The model's config and its sub-configs (text configs of multimodal models)."""
    seen, todo = [], [model.config]
    while todo:
        c = todo.pop()
        if c is None or any(c is s for s in seen):
            continue
        seen.append(c)
        for name in getattr(c, "sub_configs", {}) or {}:
            todo.append(getattr(c, name, None))
    return seen


@contextlib.contextmanager
def attention_implementation(model, name: str = IMPLEMENTATION):
    """model's attention implementation set to `name` for the block, then restored."""
    register()
    configs = _configs(model)
    before = [c._attn_implementation for c in configs]
    try:
        for c in configs:
            c._attn_implementation = name
        yield
    finally:
        for c, b in zip(configs, before):
            c._attn_implementation = b


def _accepts(fn, name: str) -> bool:
    import inspect
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


class Step(torch.nn.Module):
    """One generation step of a causal LM as a module of tensors only (what gets compiled):

        logits = Step(model)(input_ids, position_ids, slots, key_mask, k_0, v_0, k_1, v_1, ...)

    input_ids/position_ids [B, S] int64, slots [S] int64, key_mask [B, L] bool, then each
    layer's key and value cache [B, Hkv, L, D]. Returns the logits of the last position
    [B, 1, V]; the caches are written in place at the slots."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.keep_one = _accepts(model.forward, "logits_to_keep")
        # inference only; and capture restores the step's mode afterwards, which would put the
        # user's model in training mode (dropout on) if the step were left in it
        self.eval()

    def forward(self, input_ids, position_ids, slots, key_mask, *caches):
        pairs = [(caches[i], caches[i + 1]) for i in range(0, len(caches), 2)]
        kw = {"logits_to_keep": 1} if self.keep_one else {}
        with kv_context(KVContext(pairs, slots, key_mask)):
            out = self.model(input_ids=input_ids, position_ids=position_ids, use_cache=False, return_dict=True, **kw)
        logits = out.logits
        return logits if self.keep_one else logits[:, -1:, :]


def probe_layers(model, device, dtype) -> List[Tuple[int, int, int, int]]:
    """Each attention layer's (layer index, k/v heads, key head dim, value head dim), in layer
    order, read off one forward of a single token with the op recording instead of running."""
    rec = []
    ids = torch.zeros((1, 1), dtype=torch.int64, device=device)
    pos = torch.zeros((1, 1), dtype=torch.int64, device=device)
    with torch.no_grad(), attention_implementation(model), kv_context(KVContext([], None, None, record=rec)):
        model(input_ids=ids, position_ids=pos, use_cache=False, return_dict=True)
    layers = {}
    for idx, kshape, _, vshape in rec:
        layers.setdefault(idx, (idx, kshape[1], kshape[3], vshape[3]))
    if not layers:
        raise NotImplementedError(f"{type(model).__name__}: no attention layer called the attention function "
                                  "(the model does not use transformers' attention interface)")
    return [layers[i] for i in sorted(layers)]
