"""Compiled generators: a Hugging Face causal LM whose every step (prompt and decode) runs in
one engine that keeps the KV cache on the engine's device.

    gen = torchtrt_c.compile_llm(model, max_seq_len=1024, max_batch_size=4)
    out = gen.generate(input_ids, attention_mask=mask, max_new_tokens=64)   # transformers' generate()
    toks = gen.generate_tokens(input_ids, max_new_tokens=64)                  # our own loop
    gen.save("llm.ttc"); gen = torchtrt_c.load_llm("llm.ttc")

How (docs/llm.md has the user's view):
- the capture (_hf.Step) runs the model with the KV-cache operator in each attention layer, so
  one compiled step takes input_ids/position_ids [B, S], the cache slots of the new tokens [S],
  the padding mask of the whole cache [B, L] and every layer's key/value cache
  [B, Hkv, L, D], writes the new keys/values into the caches in place and returns the last
  position's logits. B and S are dynamic: the same engine (one copy of the weights) runs the
  prompt (S up to max_prompt_len) and each decode step (S = 1);
- a generation's caches, padding mask and length are a _State, taken from a pool for the
  call (so two threads generate on one model with separate caches) and given back after;
- Hugging Face's generate() drives the model through prepare_inputs_for_generation and
  forward below (its logits processors, stopping criteria, streamers and sampling as they
  are); generate_tokens() is a loop of our own with less per-token work.
"""
from __future__ import annotations

import contextlib
import logging
import threading
from typing import List, Optional

import torch

from torchtrt_c.llm import _hf

log = logging.getLogger("torchtrt_c")


class _State:
    """One generation's device state: per layer (k, v) caches [max_batch, Hkv, L, D], the
    padding mask [max_batch, L] and how many slots are filled."""

    def __init__(self, layers, max_batch: int, max_seq_len: int, dtype, device):
        self.caches = []
        for _, hkv, dk, dv in layers:
            self.caches.append(torch.zeros(max_batch, hkv, max_seq_len, dk, dtype=dtype, device=device))
            self.caches.append(torch.zeros(max_batch, hkv, max_seq_len, dv, dtype=dtype, device=device))
        self.key_mask = torch.zeros(max_batch, max_seq_len, dtype=torch.bool, device=device)
        self.length = 0
        self.batch = 0
        self.last_pos = None   # [B] position id of each row's last token
        self.real = None       # [B] real (unpadded) tokens among the filled slots, with a mask
        self.decode = {}       # batch -> generate_tokens' buffers (and recorded step) for it
        self.views = {}        # batch -> (key_mask[:B], [cache[:B], ...]): the step's inputs

    def reset(self, batch: int):
        self.length = 0
        self.batch = batch
        self.last_pos = None
        self.real = None
        self.key_mask.zero_()

    def inputs_for(self, batch: int):
        v = self.views.get(batch)
        if v is None:
            v = self.views[batch] = (self.key_mask[:batch], [c[:batch] for c in self.caches])
        return v


class _Pool:
    """States by generation: a call takes one (allocating where none is free) and gives it back."""

    def __init__(self, make):
        self._make = make
        self._free: List[_State] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def state(self, batch: int):
        with self._lock:
            st = self._free.pop() if self._free else None
        if st is None:
            st = self._make()
        st.reset(batch)
        try:
            yield st
        finally:
            with self._lock:
                self._free.append(st)


def _input_error(msg: str):
    from torchtrt_c import InputError
    return InputError(msg)


class LLMSpec:
    """What a compiled generator was built for (saved with it)."""

    def __init__(self, layers, max_batch_size: int, max_seq_len: int, max_prompt_len: int, dtype, vocab: int):
        self.layers = [tuple(x) for x in layers]
        self.max_batch_size = max_batch_size
        self.max_seq_len = max_seq_len
        self.max_prompt_len = max_prompt_len
        self.dtype = dtype
        self.vocab = vocab

    def as_dict(self) -> dict:
        return {"layers": self.layers, "max_batch_size": self.max_batch_size, "max_seq_len": self.max_seq_len,
                "max_prompt_len": self.max_prompt_len, "dtype": str(self.dtype).replace("torch.", ""),
                "vocab": self.vocab}

    @classmethod
    def from_dict(cls, d: dict) -> "LLMSpec":
        return cls(d["layers"], d["max_batch_size"], d["max_seq_len"], d["max_prompt_len"],
                   getattr(torch, d["dtype"]), d["vocab"])


class Runner:
    """The compiled step and its spec: runs one step of a _State (no transformers needed)."""

    def __init__(self, step_module, spec: LLMSpec, device: torch.device):
        self.step = step_module
        self.spec = spec
        self.device = device
        self.pool = _Pool(lambda: _State(spec.layers, spec.max_batch_size, spec.max_seq_len, spec.dtype, device))

    def check(self, batch: int, prompt: int, total: int) -> None:
        """Raises a torchtrt_c.InputError before any work when a generation does not fit."""
        s = self.spec
        if batch < 1 or batch > s.max_batch_size:
            raise _input_error(f"batch {batch}: the generator was compiled for batches of 1 to {s.max_batch_size} "
                               f"(compile_llm(..., max_batch_size=))")
        if prompt < 1 or prompt > s.max_prompt_len:
            raise _input_error(f"a prompt of {prompt} tokens: the generator takes 1 to {s.max_prompt_len} "
                               f"(compile_llm(..., max_prompt_len=))")
        if total > s.max_seq_len:
            raise _input_error(f"{total} tokens (prompt and new ones) do not fit the cache of {s.max_seq_len} "
                               f"(compile_llm(..., max_seq_len=))")

    def run(self, st: _State, input_ids: torch.Tensor, attention_mask: Optional[torch.Tensor],
            position_ids: Optional[torch.Tensor] = None) -> torch.Tensor:
        """Feeds input_ids [B, S] (the tokens after the st.length already in the cache) with the
        padding mask of all st.length + S tokens; returns the last position's logits [B, V].
        Positions: position_ids [B, S] where given, else each row's count of real tokens before
        (what generate() gives the model with a padding mask)."""
        B, S = input_ids.shape
        start = st.length
        end = start + S
        if B != st.batch:
            raise _input_error(f"batch {B} in a generation of batch {st.batch}")
        if end > self.spec.max_seq_len:
            raise _input_error(f"{end} tokens do not fit the cache of {self.spec.max_seq_len}")
        if S > self.spec.max_prompt_len:
            raise _input_error(f"{S} new tokens in one step: the generator takes at most {self.spec.max_prompt_len}")
        dev = self.device
        ids = input_ids.to(dev, torch.int64)
        lo, hi = (int(x) for x in torch.aminmax(ids))   # the engine does not check them (check_indices=False)
        if lo < 0 or hi >= self.spec.vocab:
            raise _input_error(f"input_ids hold {lo if lo < 0 else hi}, outside the vocabulary [0, {self.spec.vocab})")
        key_mask, caches = st.inputs_for(B)
        if attention_mask is None:
            key_mask[:, start:end] = True
            if st.last_pos is None:
                pos = torch.arange(start, end, device=dev).expand(B, S)
            else:
                pos = st.last_pos[:, None] + torch.arange(1, S + 1, device=dev)
            st.real = None
        else:
            am = attention_mask.to(dev)
            if am.shape != (B, end):
                raise _input_error(f"attention_mask has shape {tuple(am.shape)}, expected {(B, end)}")
            new = am[:, start:end].to(torch.int64)
            key_mask[:, start:end] = new.bool()
            # the model's positions count the row's real tokens (left padding takes none): those
            # before this call (kept from the last one, or counted once) and the new ones
            before = st.real if st.real is not None and start > 0 else am[:, :start].to(torch.int64).sum(-1)
            run = new.cumsum(-1)
            pos = (before[:, None] + run - 1).clamp_(min=0)
            st.real = before + run[:, -1]
        if position_ids is not None:
            if tuple(position_ids.shape) != (B, S):
                raise _input_error(f"position_ids has shape {tuple(position_ids.shape)}, expected {(B, S)}")
            pos = position_ids.to(dev, torch.int64)
        slots = torch.arange(start, end, device=dev)
        logits = self.step(ids, pos, slots, key_mask, *caches)
        st.length = end
        st.last_pos = pos[:, -1]
        return logits[:, -1, :]


def compile_llm(model, *, max_seq_len: Optional[int] = None, max_batch_size: int = 1,
                max_prompt_len: Optional[int] = None, **settings):
    """A compiled generator for a Hugging Face causal LM (see the module docstring).

    max_seq_len: the cache length (prompt + new tokens), default the model's
    max_position_embeddings capped at 2048; max_batch_size: sequences generated at once;
    max_prompt_len: the longest prompt (default max_seq_len). Other keyword arguments are
    torchtrt_c.compile settings (enabled_precisions follows the model's dtype)."""
    from torchtrt_c.llm._model import CompiledCausalLM
    cfg = getattr(model, "config", None)
    if cfg is None or not hasattr(model, "generate"):
        raise TypeError(f"compile_llm expects a transformers causal LM (a model with .config and .generate), "
                        f"got {type(model).__name__}")
    if getattr(cfg, "is_encoder_decoder", False):
        raise NotImplementedError("compile_llm: encoder-decoder models are not supported (causal LMs only)")
    params = list(model.parameters())
    dtype = params[0].dtype if params else torch.float32
    device = params[0].device if params else torch.device("cpu")
    if dtype not in (torch.float32, torch.float16):
        raise NotImplementedError(f"compile_llm: the model is {dtype}; engines take float32 or float16 "
                                  f"(model.half() or model.float())")
    if max_seq_len is None:
        max_seq_len = min(int(getattr(cfg.get_text_config() if hasattr(cfg, "get_text_config") else cfg,
                                      "max_position_embeddings", 2048) or 2048), 2048)
    max_prompt_len = max_seq_len if max_prompt_len is None else max_prompt_len
    if not (1 <= max_prompt_len <= max_seq_len) or max_batch_size < 1:
        raise ValueError(f"compile_llm: need 1 <= max_prompt_len ({max_prompt_len}) <= max_seq_len "
                         f"({max_seq_len}) and max_batch_size >= 1 (got {max_batch_size})")
    model = model.eval()
    layers = _hf.probe_layers(model, device, dtype)
    step = _hf.Step(model)
    emb = model.get_input_embeddings()
    vocab = int(emb.weight.shape[0]) if emb is not None else int(getattr(cfg, "vocab_size"))
    spec = LLMSpec(layers, max_batch_size, max_seq_len, max_prompt_len, dtype, vocab)
    inputs = _step_inputs(spec, device)
    settings.setdefault("enabled_precisions", {dtype})
    settings.setdefault("min_block_size", 1)
    # the step's indices are ours to keep in range (token ids are checked against the vocabulary
    # in Runner.run, slots against the cache): no wait for the index flag after each step
    settings.setdefault("check_indices", False)
    import torchtrt_c
    from torchtrt_c import settings as knobs
    # the step's Q/K/V projections and MLP gate/up (linears of one input) as one linear each:
    # a decode step's linears are GEMVs, fewer and larger ones read the weights faster
    # (passes/fuse_parallel_linear.c); unless the caller set the setting
    fuse = {} if knobs.get("FUSE_PARALLEL_LINEAR") is not None else {"FUSE_PARALLEL_LINEAR": 1}
    with _hf.attention_implementation(model), torch.no_grad(), knobs.override(**fuse):
        compiled = torchtrt_c.compile(step, inputs=inputs, **settings)
    _check_one_engine(compiled)
    return CompiledCausalLM.from_parts(model.config, getattr(model, "generation_config", None),
                                       Runner(compiled, spec, device))


def _step_inputs(spec: LLMSpec, device) -> list:
    from torchtrt_c import Input
    B, S, L = spec.max_batch_size, spec.max_prompt_len, spec.max_seq_len
    ob, os_ = min(B, 2), min(S, 8)
    ins = [Input(min_shape=(1, 1), opt_shape=(ob, os_), max_shape=(B, S), dtype=torch.int64),
           Input(min_shape=(1, 1), opt_shape=(ob, os_), max_shape=(B, S), dtype=torch.int64),
           Input(min_shape=(1,), opt_shape=(os_,), max_shape=(S,), dtype=torch.int64),
           Input(min_shape=(1, L), opt_shape=(ob, L), max_shape=(B, L), dtype=torch.bool)]
    for _, hkv, dk, dv in spec.layers:
        for d in (dk, dv):
            ins.append(Input(min_shape=(1, hkv, L, d), opt_shape=(ob, hkv, L, d), max_shape=(B, hkv, L, d),
                             dtype=spec.dtype))
    for i in ins:
        i.device = device
    return ins


def _check_one_engine(gm) -> None:
    names = [n for n, _ in gm.named_children()]
    torch_segs = [n for n in names if n.startswith("_run_on_gpu")]
    if torch_segs:
        log.warning("compile_llm: %d part(s) of the step run in torch (%s); generation still works, "
                    "slower. torchtrt_c.compile(..., dryrun=True) on the step says why.",
                    len(torch_segs), ", ".join(torch_segs))
