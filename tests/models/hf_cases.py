"""Hugging Face transformers models for the model tier: tiny configs, random weights, nothing
downloaded; each as the user calls it (kwargs, default config: SDPA attention, use_cache where it
is the default), with example inputs at any (batch, seq) and the Input ranges to compile with.

    case = CASES["gpt2"]
    model = case.build()                  # eval mode, seeded
    kw = case.inputs(2, 8)                # {"input_ids": ..., "attention_mask": ...}
    specs = case.specs()                  # {"input_ids": Input(min/opt/max), ...}

Shared by test_hf_models.py and table.py (the model table in docs/models.md).
"""
from __future__ import annotations

import dataclasses
import os
from typing import Callable, Optional

import torch

import torchtrt_c

VOCAB = 100
# dynamic ranges of text models: batch 1..4, sequence 2..16 (traced at 2 x 8)
TEXT_MIN, TEXT_OPT, TEXT_MAX = (1, 2), (2, 8), (4, 16)
# (batch, seq) pairs run against eager after a dynamic compile
TEXT_RUNS = [(2, 8), (1, 5), (4, 13)]
BATCH_RUNS = [(2, None), (1, None), (3, None)]


@dataclasses.dataclass
class Case:
    name: str
    build: Callable[[], torch.nn.Module]
    inputs: Callable[[int, Optional[int]], dict]          # (batch, seq) -> kwargs
    specs: Callable[[], dict]                             # kwarg name -> Input
    runs: list                                            # (batch, seq) pairs checked at run time
    # op -> why it legitimately stays in torch (empty: the whole model is one engine)
    fallback: dict = dataclasses.field(default_factory=dict)
    # ops that may run in torch segments although they are supported (an int among the outputs
    # keeps what computes it in torch); the model is still one engine
    torch_ops: frozenset = frozenset()
    # other ops may fall back too, where each of their reasons says this
    fallback_reason: str = ""


def _seeded(fn):
    def build():
        torch.manual_seed(0)
        return fn().eval()
    return build


def _ids(b, s, seed):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, VOCAB, (b, s), generator=g)   # 0..2: pad/bos/eos ids of the configs
    mask = torch.ones(b, s, dtype=torch.long)
    if b > 1 and s > 2:
        mask[-1, -(s // 3):] = 0   # a right-padded row, so that the mask matters
    return ids, mask


def _text_inputs(b, s):
    ids, mask = _ids(b, s, seed=1000 * b + s)
    return {"input_ids": ids, "attention_mask": mask}


def _text_specs():
    r = dict(min_shape=TEXT_MIN, opt_shape=TEXT_OPT, max_shape=TEXT_MAX, dtype=torch.long)
    return {"input_ids": torchtrt_c.Input(**r), "attention_mask": torchtrt_c.Input(**r)}


def _text(name, build, fallback=None, torch_ops=(), fallback_reason=""):
    return Case(name, _seeded(build), _text_inputs, _text_specs, TEXT_RUNS, dict(fallback or {}), frozenset(torch_ops),
                fallback_reason)


# TORCHTRT_C_HF_ATTN=eager builds every model with eager attention instead of its default
# (SDPA): a diagnostic, to see past the attention op
ATTN = os.environ.get("TORCHTRT_C_HF_ATTN")


def _attn(kw):
    if ATTN:
        kw["attn_implementation"] = ATTN
    return kw


def _small(**kw):
    return _attn(dict(vocab_size=VOCAB, **kw))


# ---------------------------------------------------------------- text encoders / decoders
def _bert():
    from transformers import BertConfig, BertModel
    return BertModel(BertConfig(**_small(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                         intermediate_size=37, max_position_embeddings=32)))


def _distilbert():
    from transformers import DistilBertConfig, DistilBertModel
    return DistilBertModel(DistilBertConfig(**_small(dim=32, n_layers=2, n_heads=2, hidden_dim=37,
                                                     max_position_embeddings=32)))


def _roberta():
    from transformers import RobertaConfig, RobertaModel
    return RobertaModel(RobertaConfig(**_small(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                               intermediate_size=37, max_position_embeddings=40,
                                               pad_token_id=1)))


def _gpt2_config(**kw):
    from transformers import GPT2Config
    return GPT2Config(**_small(n_embd=32, n_layer=2, n_head=2, n_positions=32,
                               bos_token_id=1, eos_token_id=2, **kw))


def gpt2_eager_attention():
    """GPT-2 with eager attention: for tests of capture itself, independent of the SDPA op."""
    from transformers import GPT2Model
    torch.manual_seed(0)
    cfg = _gpt2_config() if ATTN else _gpt2_config(attn_implementation="eager")
    return GPT2Model(cfg).eval()


def _gpt2():
    from transformers import GPT2Model
    return GPT2Model(_gpt2_config())


def _gpt2_lm():
    from transformers import GPT2LMHeadModel
    return GPT2LMHeadModel(_gpt2_config())


def _llama():
    from transformers import LlamaConfig, LlamaModel
    return LlamaModel(LlamaConfig(**_small(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                           num_key_value_heads=1, intermediate_size=37,
                                           max_position_embeddings=32, bos_token_id=1, eos_token_id=2)))


def _qwen2():
    from transformers import Qwen2Config, Qwen2Model
    return Qwen2Model(Qwen2Config(**_small(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                           num_key_value_heads=1, intermediate_size=37,
                                           max_position_embeddings=32, bos_token_id=1, eos_token_id=2)))


def _mistral():
    from transformers import MistralConfig, MistralModel
    return MistralModel(MistralConfig(**_small(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                               num_key_value_heads=1, intermediate_size=37, head_dim=16,
                                               max_position_embeddings=32, sliding_window=None,
                                               bos_token_id=1, eos_token_id=2)))


def _opt():
    # the feed-forward block runs on x.reshape(-1, hidden): a B*S dim, kept 3-D at capture
    from transformers import OPTConfig, OPTModel
    return OPTModel(OPTConfig(**_small(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, ffn_dim=37,
                                       word_embed_proj_dim=32, max_position_embeddings=32)))


def _gemma2():
    # eager attention with soft-capping, sliding-window layers; an int (the sequence length)
    # among the outputs keeps one sym_size and an arange in torch
    from transformers import Gemma2Config, Gemma2Model
    return Gemma2Model(Gemma2Config(**_small(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                             num_key_value_heads=1, intermediate_size=37, head_dim=16,
                                             max_position_embeddings=32, sliding_window=4)))


def _mixtral():
    # mixture of experts: the routing (top-k, per-expert gathers of B*S rows) runs in torch
    from transformers import MixtralConfig, MixtralModel
    return MixtralModel(MixtralConfig(**_small(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                               num_key_value_heads=1, intermediate_size=48,
                                               num_local_experts=4, num_experts_per_tok=2,
                                               max_position_embeddings=32, sliding_window=None,
                                               bos_token_id=1, eos_token_id=2)))


def _t5_config():
    from transformers import T5Config
    return T5Config(**_small(d_model=32, d_kv=16, d_ff=37, num_layers=2, num_decoder_layers=2, num_heads=2,
                             relative_attention_num_buckets=8, relative_attention_max_distance=16,
                             decoder_start_token_id=0, pad_token_id=0, eos_token_id=1))


def _t5_encoder():
    from transformers import T5EncoderModel
    return T5EncoderModel(_t5_config())


def _t5():
    from transformers import T5Model
    return T5Model(_t5_config())


def _t5_inputs(b, s):
    kw = _text_inputs(b, s)
    g = torch.Generator().manual_seed(7 * b + s)
    # a decoder prefix of another length than the encoder's (a few steps into generation)
    kw["decoder_input_ids"] = torch.randint(3, VOCAB, (b, max(1, s // 2 + 1)), generator=g)
    return kw


def _t5_specs():
    sp = _text_specs()
    sp["decoder_input_ids"] = torchtrt_c.Input(min_shape=(1, 1), opt_shape=(2, 5), max_shape=(4, 9),
                                               dtype=torch.long)
    return sp


def _clip_text():
    from transformers import CLIPTextConfig, CLIPTextModel
    return CLIPTextModel(CLIPTextConfig(**_small(hidden_size=32, intermediate_size=37, num_hidden_layers=2,
                                                 num_attention_heads=2, max_position_embeddings=32,
                                                 bos_token_id=1, eos_token_id=2, pad_token_id=0)))


def _clip_text_inputs(b, s):
    kw = _text_inputs(b, s)
    kw["input_ids"][:, -1] = 2   # the pooled output is taken at the eos token
    return kw


# ---------------------------------------------------------------- vision / audio
IMG = 32


def _vit():
    from transformers import ViTConfig, ViTModel
    return ViTModel(ViTConfig(**_attn({}), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
                              image_size=IMG, patch_size=8, num_channels=3))


def _clip_vision():
    from transformers import CLIPVisionConfig, CLIPVisionModel
    return CLIPVisionModel(CLIPVisionConfig(**_attn({}), hidden_size=32, intermediate_size=37, num_hidden_layers=2,
                                            num_attention_heads=2, image_size=IMG, patch_size=8))


def _pixel_inputs(b, _s):
    g = torch.Generator().manual_seed(b)
    return {"pixel_values": torch.randn(b, 3, IMG, IMG, generator=g)}


def _pixel_specs():
    return {"pixel_values": torchtrt_c.Input(min_shape=(1, 3, IMG, IMG), opt_shape=(2, 3, IMG, IMG),
                                             max_shape=(4, 3, IMG, IMG))}


MEL, FRAMES = 16, 16   # Whisper: 16 mel bins, 2 * 16 input frames (its encoder wants exactly that)


def _whisper_encoder():
    from transformers import WhisperConfig, WhisperModel
    m = WhisperModel(WhisperConfig(**_small(d_model=32, encoder_layers=2, decoder_layers=2,
                                            encoder_attention_heads=2, decoder_attention_heads=2,
                                            encoder_ffn_dim=37, decoder_ffn_dim=37, num_mel_bins=MEL,
                                            max_source_positions=FRAMES, max_target_positions=16,
                                            pad_token_id=0, bos_token_id=1, eos_token_id=2,
                                            decoder_start_token_id=1)))
    return m.get_encoder()


def _whisper_inputs(b, _s):
    g = torch.Generator().manual_seed(b)
    return {"input_features": torch.randn(b, MEL, 2 * FRAMES, generator=g)}


def _whisper_specs():
    return {"input_features": torchtrt_c.Input(min_shape=(1, MEL, 2 * FRAMES), opt_shape=(2, MEL, 2 * FRAMES),
                                               max_shape=(4, MEL, 2 * FRAMES))}


def _wav2vec2():
    from transformers import Wav2Vec2Config, Wav2Vec2Model
    return Wav2Vec2Model(Wav2Vec2Config(**_small(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                                  intermediate_size=37, conv_dim=(16, 16), conv_stride=(5, 2),
                                                  conv_kernel=(10, 3), num_conv_pos_embeddings=16,
                                                  num_conv_pos_embedding_groups=2)))


def _wav_inputs(b, s):
    g = torch.Generator().manual_seed(b * 31 + s)
    return {"input_values": torch.randn(b, s, generator=g)}


WAV = 400   # samples; static: the strided feature convolutions floor-divide the length
# ((L - 10) // 5 + 1), which is no affine dim, so only the batch is dynamic


def _wav_specs():
    return {"input_values": torchtrt_c.Input(min_shape=(1, WAV), opt_shape=(2, WAV), max_shape=(4, WAV))}


# Mixtral's experts: the router's top-k and the per-expert gathers run over the B*S token rows
# (a product of two dynamic dims, and data-dependent sizes), so the mixture-of-experts blocks
# stay in torch, each op for that reason (MOE_REASON) or, for these two, having no converter;
# attention, norms and embeddings are engines.
MOE_FALLBACK = {"aten.histc.default": "expert counts, no converter",
                "transformers.grouped_mm_fallback.default": "transformers' own op (the grouped expert GEMMs)"}
MOE_REASON = "depends on 2 symbols"


CASES = {c.name: c for c in [
    _text("bert", _bert),
    _text("distilbert", _distilbert),
    _text("roberta", _roberta),
    _text("gpt2", _gpt2),
    _text("gpt2_lm_head", _gpt2_lm),
    _text("llama", _llama),
    _text("qwen2", _qwen2),
    _text("mistral", _mistral),
    _text("opt", _opt),
    _text("gemma2", _gemma2, torch_ops={"aten.sym_size.int", "aten.arange.start_step"}),
    _text("mixtral", _mixtral, fallback=MOE_FALLBACK, fallback_reason=MOE_REASON),
    _text("t5_encoder", _t5_encoder),
    Case("t5_encoder_decoder", _seeded(_t5), _t5_inputs, _t5_specs, TEXT_RUNS),
    Case("clip_text", _seeded(_clip_text), _clip_text_inputs, _text_specs, TEXT_RUNS),
    Case("vit", _seeded(_vit), _pixel_inputs, _pixel_specs, BATCH_RUNS),
    Case("clip_vision", _seeded(_clip_vision), _pixel_inputs, _pixel_specs, BATCH_RUNS),
    Case("whisper_encoder", _seeded(_whisper_encoder), _whisper_inputs, _whisper_specs, BATCH_RUNS),
    Case("wav2vec2", _seeded(_wav2vec2), _wav_inputs, _wav_specs, [(2, WAV), (1, WAV), (4, WAV)]),
]}
