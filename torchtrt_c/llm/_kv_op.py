"""The KV-cache operator: torch.ops.torchtrt_c.kv_attention.

    out = torch.ops.torchtrt_c.kv_attention(q, k, v, k_cache, v_cache, slots, key_mask,
                                            scale, window, softcap)

One op per attention layer of a decoder, inserted when a causal LM is captured for generation
(torchtrt_c/llm/_hf.py). It does two things, in this order:
1. writes the new keys and values into the layer's cache, in place, at the cache slots of the
   new tokens: k_cache[b, :, slots[s], :] = k[b, :, s, :] (likewise v);
2. attends each new query over the cache: query s of row b sees key j when
   j <= slots[s] (causal), key_mask[b, j] (not padding) and, with window > 0,
   slots[s] - j < window (sliding window). Scores are q.k * scale, soft-capped to
   softcap * tanh(score / softcap) when softcap > 0; a query that sees no key gives 0.

Shapes: q [B, Hq, S, D], k/v [B, Hkv, S, D] (Hq a multiple of Hkv: grouped-query attention),
k_cache/v_cache [B, Hkv, L, D] (L = the generator's max_seq_len), slots [S] int64 (the same
slots for every row, as Hugging Face's static cache), key_mask [B, L] bool. Output [B, Hq, S, D].

For torch the op is functional (export and FX see a pure op whose output is the attention):
its write into the caches is the contract between the capture and the engines, which take the
cache tensors as inputs they write in place. The implementation below is the reference the
engines are tested against; it also runs when the op falls back to torch.
"""
from __future__ import annotations

import torch


@torch.library.custom_op("torchtrt_c::kv_attention", mutates_args=())
def kv_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, k_cache: torch.Tensor,
                 v_cache: torch.Tensor, slots: torch.Tensor, key_mask: torch.Tensor, scale: float,
                 window: int, softcap: float) -> torch.Tensor:
    return reference(q, k, v, k_cache, v_cache, slots, key_mask, scale, window, softcap)


@kv_attention.register_fake
def _(q, k, v, k_cache, v_cache, slots, key_mask, scale, window, softcap):
    # the shapes the op relates: under torch.export these make the batch (and new-token)
    # dims of all its inputs one symbol, as the engine's validator requires
    for t in (k, v, k_cache, v_cache, key_mask):
        torch._check(t.shape[0] == q.shape[0], lambda: "kv_attention: the inputs differ in batch")
    for t in (k, v):
        torch._check(t.shape[2] == q.shape[2], lambda: "kv_attention: q, k and v differ in length")
    torch._check(slots.shape[0] == q.shape[2], lambda: "kv_attention: slots differ from the new tokens")
    torch._check(key_mask.shape[1] == k_cache.shape[2], lambda: "kv_attention: key_mask differs from the cache length")
    return q.new_empty(q.shape[:-1] + (v.shape[-1],))


def visible(slots: torch.Tensor, key_mask: torch.Tensor, window: int) -> torch.Tensor:
    """[B, 1, S, L] bool: which cache slot each new query sees."""
    L = key_mask.shape[-1]
    j = torch.arange(L, device=slots.device)
    p = slots.to(torch.int64)[:, None]
    vis = j[None, :] <= p
    if window > 0:
        vis = vis & (p - j[None, :] < window)
    return vis[None, None] & key_mask.to(torch.bool)[:, None, None, :]


def reference(q, k, v, k_cache, v_cache, slots, key_mask, scale, window, softcap):
    slots = slots.to(device=k_cache.device, dtype=torch.int64)
    k_cache.index_copy_(2, slots, k.to(k_cache.dtype))
    v_cache.index_copy_(2, slots, v.to(v_cache.dtype))
    group = q.shape[1] // k_cache.shape[1]
    kc = k_cache.float().repeat_interleave(group, dim=1)
    vc = v_cache.float().repeat_interleave(group, dim=1)
    s = torch.matmul(q.float(), kc.transpose(-1, -2)) * scale
    if softcap > 0:
        s = softcap * torch.tanh(s / softcap)
    vis = visible(slots, key_mask.to(k_cache.device), window)
    s = s.masked_fill(~vis, float("-inf"))
    w = torch.softmax(s, dim=-1).nan_to_num(0.0)  # a query that sees no key: 0
    return torch.matmul(w, vc).to(q.dtype)
