"""generate_tokens: a generation loop of our own around the compiled step, with the least work
per token.

The decode step's inputs live in buffers of the generation's state that each step updates in
place on the device (the token, its position, its cache slot, the padding mask), so every step
calls the engine with the same tensors and nothing waits for the device but the
end-of-sequence check every `sync_every` steps. On a CUDA device, greedy decoding goes further:
one decode step (the engine's launches, the argmax, the buffer updates) is recorded once as a
torch CUDA graph and each new token is one replay of it (torchtrt_c engines launch their kernels
into torch's recording; the step is compiled with check_indices=False, so nothing in it waits).
"""
from __future__ import annotations

import logging
from typing import Optional

import torch

log = logging.getLogger("torchtrt_c")


def _pick(logits: torch.Tensor, do_sample: bool, temperature: float, top_k: Optional[int], generator):
    if not do_sample:
        return logits.argmax(-1)
    x = logits.float() / max(temperature, 1e-6)
    if top_k is not None and 0 < top_k < x.shape[-1]:
        kth = torch.topk(x, top_k, dim=-1).values[:, -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    return torch.multinomial(torch.softmax(x, -1), 1, generator=generator)[:, 0]


class _Decode:
    """One generation state's decode buffers for batch B, and on CUDA the recorded step."""

    def __init__(self, runner, st, B: int, n_max: int):
        dev = runner.device
        self.runner, self.st, self.B = runner, st, B
        self.ids = torch.zeros(B, 1, dtype=torch.int64, device=dev)
        self.pos = torch.zeros(B, 1, dtype=torch.int64, device=dev)
        self.slot = torch.zeros(1, dtype=torch.int64, device=dev)
        self.t = torch.zeros(1, dtype=torch.int64, device=dev)        # new tokens so far
        self.done = torch.zeros(B, dtype=torch.bool, device=dev)
        self.eos = torch.full((B,), -1, dtype=torch.int64, device=dev)
        self.toks = torch.zeros(B, n_max, dtype=torch.int64, device=dev)
        self.caches = [c[:B] for c in st.caches]
        self.key_mask = st.key_mask[:B]
        self.graphs = {}     # use_eos -> the recorded greedy step (CUDA)

    def accept(self, nxt: torch.Tensor, use_eos: bool) -> None:
        """Records the token each row produced and makes it the next step's input."""
        if use_eos:
            nxt = torch.where(self.done, self.eos, nxt)
            self.done |= nxt == self.eos
        self.toks.index_copy_(1, self.t, nxt[:, None])
        self.t += 1
        self.ids.copy_(nxt[:, None])
        self.pos += 1
        self.slot += 1
        self.key_mask.index_fill_(1, self.slot, True)

    def step_logits(self) -> torch.Tensor:
        return self.runner.step(self.ids, self.pos, self.slot, self.key_mask, *self.caches)[:, -1, :]

    def record(self, use_eos: bool):
        """The greedy step as a CUDA graph (after an eager step made the engine ready: its
        module loaded, library choices timed for these shapes); None where recording failed
        (the loop then stays eager)."""
        dev = self.runner.device
        side = torch.cuda.Stream(dev)
        side.wait_stream(torch.cuda.current_stream(dev))
        g = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.stream(side):
                # the recording only records: the buffers keep their values
                with torch.cuda.graph(g, stream=side, capture_error_mode="thread_local"):
                    self.accept(self.step_logits().argmax(-1), use_eos)
        except Exception as ex:  # noqa: BLE001  (the eager loop gives the same tokens)
            log.warning("generate_tokens: the decode step could not be recorded as a CUDA graph (%s); "
                        "decoding step by step", ex)
            g = False
        torch.cuda.current_stream(dev).wait_stream(side)
        self.graphs[use_eos] = g
        return g or None


def generate_tokens(runner, input_ids: torch.Tensor, attention_mask, max_new_tokens: int, eos_token_id,
                    do_sample: bool, temperature: float, top_k, generator, sync_every: int = 16,
                    cuda_graph: Optional[bool] = None) -> torch.Tensor:
    B, P = input_ids.shape
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    runner.check(B, P, P + max_new_tokens)
    dev = runner.device
    use_eos = eos_token_id is not None
    if cuda_graph is None:
        cuda_graph = dev.type == "cuda" and not do_sample
    with runner.pool.state(B) as st:
        logits = runner.run(st, input_ids, attention_mask)
        d = st.decode.get(B)
        if d is None or d.toks.shape[1] < max_new_tokens:
            d = st.decode[B] = _Decode(runner, st, B, max(max_new_tokens, 128))
        d.t.zero_()
        d.done.zero_()
        d.eos.fill_(eos_token_id if use_eos else -1)
        d.pos.copy_(st.last_pos[:, None])
        d.slot.fill_(st.length - 1)
        d.accept(_pick(logits, do_sample, temperature, top_k, generator), use_eos)
        n = max_new_tokens
        for t in range(1, max_new_tokens):
            if use_eos and t % sync_every == 0 and bool(d.done.all()):
                n = t
                break
            g = d.graphs.get(use_eos) if cuda_graph else None
            if g:
                g.replay()
                continue
            d.accept(_pick(d.step_logits(), do_sample, temperature, top_k, generator), use_eos)
            if cuda_graph and g is None:
                d.record(use_eos)
        st.length = P + n
        return torch.cat([input_ids.to(dev), d.toks[:, :n]], 1)
