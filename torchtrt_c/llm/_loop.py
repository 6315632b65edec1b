"""generate_tokens: a generation loop of our own around the compiled step, with the least work
per token: the decode step's inputs live in buffers written in place (the token, its position
and slot), so that each step calls the engine with the same tensors (on NVIDIA the engine then
replays one recorded CUDA graph per step), and nothing waits for the device except the
end-of-sequence check every `sync_every` steps."""
from __future__ import annotations

from typing import Optional

import torch


def _pick(logits: torch.Tensor, do_sample: bool, temperature: float, top_k: Optional[int], generator):
    if not do_sample:
        return logits.argmax(-1)
    x = logits.float() / max(temperature, 1e-6)
    if top_k is not None and 0 < top_k < x.shape[-1]:
        kth = torch.topk(x, top_k, dim=-1).values[:, -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    return torch.multinomial(torch.softmax(x, -1), 1, generator=generator)[:, 0]


def generate_tokens(runner, input_ids: torch.Tensor, attention_mask, max_new_tokens: int, eos_token_id,
                    do_sample: bool, temperature: float, top_k, generator, sync_every: int = 16) -> torch.Tensor:
    B, P = input_ids.shape
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    runner.check(B, P, P + max_new_tokens)
    dev = runner.device
    with runner.pool.state(B) as st:
        logits = runner.run(st, input_ids, attention_mask)
        toks = torch.empty(B, max_new_tokens, dtype=torch.int64, device=dev)
        done = torch.zeros(B, dtype=torch.bool, device=dev)
        ids = torch.empty(B, 1, dtype=torch.int64, device=dev)
        pos = st.last_pos.clone()[:, None]
        slot = torch.full((1,), st.length, dtype=torch.int64, device=dev)
        caches = [c[:B] for c in st.caches]
        key_mask = st.key_mask[:B]
        n = max_new_tokens
        for t in range(max_new_tokens):
            nxt = _pick(logits, do_sample, temperature, top_k, generator)
            if eos_token_id is not None:
                nxt = torch.where(done, torch.full_like(nxt, eos_token_id), nxt)
                done |= nxt == eos_token_id
            toks[:, t] = nxt
            if t == max_new_tokens - 1:
                break
            if eos_token_id is not None and (t + 1) % sync_every == 0 and bool(done.all()):
                n = t + 1
                break
            ids.copy_(nxt[:, None])
            pos += 1
            key_mask[:, st.length] = True
            logits = runner.step(ids, pos, slot, key_mask, *caches)[:, -1, :]
            st.length += 1
            slot += 1
        return torch.cat([input_ids.to(dev), toks[:, :n]], 1)
