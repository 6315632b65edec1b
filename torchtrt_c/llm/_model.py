"""CompiledCausalLM: the compiled generator as a transformers model, so that generate() with
all its options (greedy, sampling, beams are not supported, max_new_tokens, eos_token_id,
stopping criteria, streamers, logits processors) drives it unchanged.

It is a PreTrainedModel without parameters (the weights are inside the engine) built from the
original model's config; forward(input_ids, attention_mask, ...) feeds the tokens the cache
does not hold yet to the compiled step. A generation's cache is a _State that generate()
takes from the runner's pool and passes along as the model keyword `ttc_state`.
"""
from __future__ import annotations

import json
import os
from typing import Optional

import torch

from torchtrt_c.llm._generator import LLMSpec, Runner, _input_error


def _base():
    from transformers import GenerationMixin, PreTrainedModel
    return PreTrainedModel, GenerationMixin


_CLASSES = {}


def _model_class(config_class):
    """A CompiledCausalLM class for this config class (transformers ties a model class to one)."""
    cls = _CLASSES.get(config_class)
    if cls is None:
        PreTrainedModel, GenerationMixin = _base()
        cls = type("CompiledCausalLM", (_CompiledCausalLMMixin, PreTrainedModel, GenerationMixin),
                   {"config_class": config_class, "main_input_name": "input_ids", "base_model_prefix": "ttc",
                    # the attention is the engine's: any implementation the config names is fine
                    "_supports_sdpa": True, "_supports_flex_attn": True, "_supports_attention_backend": True,
                    "_supports_default_dynamic_cache": classmethod(lambda c: False)})
        _CLASSES[config_class] = cls
    return cls


class _CompiledCausalLMMixin:
    """The methods of CompiledCausalLM (the class itself is made per config class)."""

    _ttc_runner: Runner

    def __init__(self, config, runner: Runner = None):
        super().__init__(config)
        self._ttc_runner = runner

    @property
    def device(self) -> torch.device:
        return self._ttc_runner.device

    @property
    def dtype(self) -> torch.dtype:
        return self._ttc_runner.spec.dtype

    @property
    def runner(self) -> Runner:
        return self._ttc_runner

    @property
    def spec(self) -> LLMSpec:
        return self._ttc_runner.spec

    def get_output_embeddings(self):
        return None

    def prepare_inputs_for_generation(self, input_ids, attention_mask=None, ttc_state=None, **kwargs):
        st = ttc_state
        start = st.length if st is not None else 0
        return {"input_ids": input_ids[:, start:], "attention_mask": attention_mask, "ttc_state": st}

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, ttc_state=None, return_dict=True,
                **kwargs):
        """The logits of the last position [B, 1, V] after feeding input_ids. Inside
        generate(): the tokens after those the generation's cache holds; alone: a whole prompt
        (a cache of its own, dropped after the call). Without position_ids, each row's
        positions count its real tokens (attention_mask), as in generate()."""
        from transformers.modeling_outputs import CausalLMOutputWithPast
        if input_ids is None:
            raise _input_error("CompiledCausalLM takes input_ids (inputs_embeds is not supported)")
        for k in ("inputs_embeds", "labels"):
            if kwargs.get(k) is not None:
                raise _input_error(f"CompiledCausalLM does not take {k}")
        r = self._ttc_runner
        if ttc_state is None:
            B, S = input_ids.shape
            r.check(B, S, S)
            with r.pool.state(B) as st:
                logits = r.run(st, input_ids, attention_mask, position_ids)
        else:
            logits = r.run(ttc_state, input_ids, attention_mask, position_ids)
        return CausalLMOutputWithPast(logits=logits[:, None, :])

    @torch.no_grad()
    def generate(self, input_ids=None, attention_mask=None, generation_config=None, **kwargs):
        """transformers' generate() on the compiled step; the generation's length is checked
        against the cache before any work (torchtrt_c.InputError)."""
        if input_ids is None:
            raise _input_error("generate() takes input_ids (inputs_embeds is not supported)")
        if kwargs.get("num_beams", 1) not in (None, 1):
            raise NotImplementedError("generate(): beam search is not supported (num_beams=1 only)")
        B, P = input_ids.shape
        gc = generation_config if generation_config is not None else self.generation_config
        new = kwargs.get("max_new_tokens", getattr(gc, "max_new_tokens", None))
        total = P + new if new is not None else kwargs.get("max_length", getattr(gc, "max_length", None) or P + 20)
        r = self._ttc_runner
        r.check(B, P, total)
        with r.pool.state(B) as st:
            return super().generate(input_ids=input_ids, attention_mask=attention_mask,
                                    generation_config=generation_config, ttc_state=st, use_cache=True, **kwargs)

    @torch.no_grad()
    def generate_tokens(self, input_ids, attention_mask=None, max_new_tokens: int = 20,
                        eos_token_id=None, do_sample: bool = False, temperature: float = 1.0,
                        top_k: Optional[int] = None, generator: Optional[torch.Generator] = None,
                        cuda_graph: Optional[bool] = None) -> torch.Tensor:
        """Our own loop (fewer steps per token than generate()): greedy or sampled (temperature,
        top_k) new tokens [B, <= max_new_tokens]; rows that produced eos_token_id continue with
        it. Returns the prompt and the new tokens, as generate() does. cuda_graph (default: on
        CUDA for greedy decoding): each decode step is one replay of a recorded CUDA graph."""
        from torchtrt_c.llm._loop import generate_tokens
        return generate_tokens(self._ttc_runner, input_ids, attention_mask, max_new_tokens, eos_token_id,
                               do_sample, temperature, top_k, generator, cuda_graph=cuda_graph)

    # ---- save / load ----
    def save(self, path: str) -> None:
        """A directory holding the config, the generation config, the spec and the compiled
        step (torchtrt_c.save: the weights are inside its engine). load_llm(path) needs no model
        class and no weights file."""
        import torchtrt_c
        os.makedirs(path, exist_ok=True)
        self.config.save_pretrained(path)
        if self.generation_config is not None:
            self.generation_config.save_pretrained(path)
        with open(os.path.join(path, "torchtrt_c_llm.json"), "w") as f:
            json.dump({"spec": self.spec.as_dict(), "config_class": type(self.config).__name__}, f)
        torchtrt_c.save(self._ttc_runner.step, os.path.join(path, "step.ep"))

    @classmethod
    def from_parts(cls, config, generation_config, runner: Runner):
        import copy
        m = _model_class(type(config))(copy.deepcopy(config), runner)   # the user's model keeps its config
        if generation_config is not None:
            m.generation_config = generation_config
        return m.eval()


CompiledCausalLM = _CompiledCausalLMMixin   # for isinstance checks and docs


def load_llm(path: str, device=None):
    """A generator saved with CompiledCausalLM.save, in any process."""
    import transformers

    import torchtrt_c
    with open(os.path.join(path, "torchtrt_c_llm.json")) as f:
        meta = json.load(f)
    spec = LLMSpec.from_dict(meta["spec"])
    config = transformers.AutoConfig.from_pretrained(path)
    try:
        gconf = transformers.GenerationConfig.from_pretrained(path)
    except OSError:
        gconf = None
    step = torchtrt_c.load(os.path.join(path, "step.ep"))
    dev = torch.device(device) if device is not None else torch.device("cpu")
    return _CompiledCausalLMMixin.from_parts(config, gconf, Runner(step, spec, dev))
