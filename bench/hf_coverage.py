"""Hugging Face architectures beyond the test tier's (tests/models/hf_cases.py): each at a tiny
configuration with random weights (nothing downloaded), compiled with default settings and
dynamic Input ranges (text: batch 1..4 x sequence 2..16 through input_ids/attention_mask, plus
decoder_input_ids for encoder-decoders; images: batch 1..4 at 32x32 through pixel_values), run
at three shapes against eager. One row each: engines / torch segments, the largest error
relative to each output's largest value, the compile time, and what falls back with the reason.

    PYTHONPATH=$PWD python3 bench/hf_coverage.py [name ...]     # all by default
"""
from __future__ import annotations

import contextlib
import io
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "models"))
import transformers as T  # noqa: E402

import torchtrt_c  # noqa: E402
from hf_cases import VOCAB, _pixel_inputs, _pixel_specs, _text_inputs, _text_specs  # noqa: E402
from model_check import dry_run, fallback_ops, max_error, segments  # noqa: E402


def S(**kw):
    return dict(vocab_size=VOCAB, **kw)


H = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37, max_position_embeddings=64)
SEQ2SEQ = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
               encoder_ffn_dim=37, decoder_ffn_dim=37, max_position_embeddings=64)

TEXT = {
    "albert": lambda: T.AlbertModel(T.AlbertConfig(**S(embedding_size=16, **H))),
    "electra": lambda: T.ElectraModel(T.ElectraConfig(**S(embedding_size=16, **H))),
    "deberta_v2": lambda: T.DebertaV2Model(T.DebertaV2Config(**S(**H))),
    "mpnet": lambda: T.MPNetModel(T.MPNetConfig(**S(**H))),
    "xlm_roberta": lambda: T.XLMRobertaModel(T.XLMRobertaConfig(**S(**H))),
    "camembert": lambda: T.CamembertModel(T.CamembertConfig(**S(**H))),
    "roformer": lambda: T.RoFormerModel(T.RoFormerConfig(**S(embedding_size=32, **H))),
    "esm": lambda: T.EsmModel(T.EsmConfig(**S(**H, pad_token_id=1))),
    "mobilebert": lambda: T.MobileBertModel(T.MobileBertConfig(**S(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37, embedding_size=16,
        intra_bottleneck_size=16, true_hidden_size=16))),
    "mt5_encoder": lambda: T.MT5EncoderModel(T.MT5Config(**S(d_model=32, d_kv=16, d_ff=37, num_layers=2, num_heads=2))),
    "opt": lambda: T.OPTModel(T.OPTConfig(**S(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, ffn_dim=37,
                                               max_position_embeddings=64, word_embed_proj_dim=32))),
    "gpt_neox": lambda: T.GPTNeoXModel(T.GPTNeoXConfig(**S(**H))),
    "gpt_neo": lambda: T.GPTNeoModel(T.GPTNeoConfig(**S(hidden_size=32, num_layers=2, num_heads=2, window_size=8,
                                                         attention_types=[[["global", "local"], 1]],
                                                         max_position_embeddings=64))),
    "gptj": lambda: T.GPTJModel(T.GPTJConfig(**S(n_embd=32, n_layer=2, n_head=2, n_positions=64, rotary_dim=8))),
    "codegen": lambda: T.CodeGenModel(T.CodeGenConfig(**S(n_embd=32, n_layer=2, n_head=2, n_positions=64, rotary_dim=8))),
    "bloom": lambda: T.BloomModel(T.BloomConfig(**S(hidden_size=32, n_layer=2, n_head=2))),
    "falcon": lambda: T.FalconModel(T.FalconConfig(**S(hidden_size=32, num_hidden_layers=2, num_attention_heads=2))),
    "phi": lambda: T.PhiModel(T.PhiConfig(**S(**H))),
    "phi3": lambda: T.Phi3Model(T.Phi3Config(**S(**H, pad_token_id=0))),
    "gemma": lambda: T.GemmaModel(T.GemmaConfig(**S(**H, head_dim=16, num_key_value_heads=1))),
    "gemma2": lambda: T.Gemma2Model(T.Gemma2Config(**S(**H, head_dim=16, num_key_value_heads=1))),
    "qwen3": lambda: T.Qwen3Model(T.Qwen3Config(**S(**H, head_dim=16, num_key_value_heads=1))),
    "olmo": lambda: T.OlmoModel(T.OlmoConfig(**S(**H))),
    "stablelm": lambda: T.StableLmModel(T.StableLmConfig(**S(**H, num_key_value_heads=2))),
    "granite": lambda: T.GraniteModel(T.GraniteConfig(**S(**H))),
    "starcoder2": lambda: T.Starcoder2Model(T.Starcoder2Config(**S(**H, num_key_value_heads=1))),
    "cohere": lambda: T.CohereModel(T.CohereConfig(**S(**H, num_key_value_heads=2))),
    "persimmon": lambda: T.PersimmonModel(T.PersimmonConfig(**S(**H))),
    "mixtral": lambda: T.MixtralModel(T.MixtralConfig(**S(**dict(H, intermediate_size=48), num_key_value_heads=2,
                                                             num_local_experts=4, num_experts_per_tok=2))),
    "qwen2_moe": lambda: T.Qwen2MoeModel(T.Qwen2MoeConfig(**S(**H, num_key_value_heads=2, num_experts=4,
                                                               num_experts_per_tok=2, moe_intermediate_size=16,
                                                               shared_expert_intermediate_size=16))),
    "xlnet": lambda: T.XLNetModel(T.XLNetConfig(**S(d_model=32, n_layer=2, n_head=2, d_inner=37))),
    "llama_causal_lm": lambda: T.LlamaForCausalLM(T.LlamaConfig(**S(**H, num_key_value_heads=1, pad_token_id=0))),
    "qwen2_causal_lm": lambda: T.Qwen2ForCausalLM(T.Qwen2Config(**S(**H, num_key_value_heads=1, pad_token_id=0))),
    "phi3_causal_lm": lambda: T.Phi3ForCausalLM(T.Phi3Config(**S(**H, pad_token_id=0))),
    "gemma_causal_lm": lambda: T.GemmaForCausalLM(T.GemmaConfig(**S(**H, head_dim=16, num_key_value_heads=1))),
    "opt_causal_lm": lambda: T.OPTForCausalLM(T.OPTConfig(**S(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                                               ffn_dim=37, max_position_embeddings=64,
                                                               word_embed_proj_dim=32))),
    "llama_seq_cls": lambda: T.LlamaForSequenceClassification(T.LlamaConfig(**S(**H, num_key_value_heads=1, pad_token_id=0,
                                                                                 num_labels=3))),
    "gpt2_seq_cls": lambda: T.GPT2ForSequenceClassification(T.GPT2Config(**S(n_embd=32, n_layer=2, n_head=2,
                                                                              n_positions=64, pad_token_id=0))),
    "bert_seq_cls": lambda: T.BertForSequenceClassification(T.BertConfig(**S(**H, num_labels=3))),
    "bert_token_cls": lambda: T.BertForTokenClassification(T.BertConfig(**S(**H, num_labels=3))),
    "bert_qa": lambda: T.BertForQuestionAnswering(T.BertConfig(**S(**H))),
    "bert_masked_lm": lambda: T.BertForMaskedLM(T.BertConfig(**S(**H))),
    "roberta_seq_cls": lambda: T.RobertaForSequenceClassification(T.RobertaConfig(**S(**H, num_labels=3))),
    "distilbert_seq_cls": lambda: T.DistilBertForSequenceClassification(T.DistilBertConfig(**S(
        dim=32, n_layers=2, n_heads=2, hidden_dim=37, max_position_embeddings=64))),
}
ENC_DEC = {
    "bart": lambda: T.BartModel(T.BartConfig(**S(**SEQ2SEQ))),
    "marian": lambda: T.MarianModel(T.MarianConfig(**S(**SEQ2SEQ, pad_token_id=0, decoder_start_token_id=0))),
    "pegasus": lambda: T.PegasusModel(T.PegasusConfig(**S(**SEQ2SEQ))),
}
VISION = {
    "swin": lambda: T.SwinModel(T.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2],
                                              window_size=4)),
    "convnext": lambda: T.ConvNextModel(T.ConvNextConfig(hidden_sizes=[8, 16], depths=[1, 1], num_stages=2)),
    "resnet": lambda: T.ResNetModel(T.ResNetConfig(embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1])),
    "dinov2": lambda: T.Dinov2Model(T.Dinov2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                                    image_size=32, patch_size=8, mlp_ratio=2)),
    "segformer": lambda: T.SegformerModel(T.SegformerConfig(num_encoder_blocks=2, depths=[1, 1], sr_ratios=[2, 1],
                                                             hidden_sizes=[8, 16], num_attention_heads=[1, 2],
                                                             patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2])),
    "beit": lambda: T.BeitModel(T.BeitConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                              intermediate_size=37, image_size=32, patch_size=8,
                                              use_relative_position_bias=True)),
    "deit": lambda: T.DeiTModel(T.DeiTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                              intermediate_size=37, image_size=32, patch_size=8)),
    "vit_image_cls": lambda: T.ViTForImageClassification(T.ViTConfig(hidden_size=32, num_hidden_layers=2,
                                                                       num_attention_heads=2, intermediate_size=37,
                                                                       image_size=32, patch_size=8, num_labels=5)),
    "siglip_vision": lambda: T.SiglipVisionModel(T.SiglipVisionConfig(hidden_size=32, intermediate_size=37,
                                                                       num_hidden_layers=2, num_attention_heads=2,
                                                                       image_size=32, patch_size=8)),
}


def _specs_inputs(name):
    if name in VISION:
        return _pixel_specs(), [_pixel_inputs(b, None) for b in (2, 1, 3)]
    specs = dict(_text_specs())
    ins = [_text_inputs(b, s) for b, s in [(2, 8), (1, 5), (4, 13)]]
    if name in ENC_DEC:
        specs["decoder_input_ids"] = specs["input_ids"]
        for kw in ins:
            kw["decoder_input_ids"] = kw["input_ids"].flip(1)
    return specs, ins


def row(name):
    build = {**TEXT, **ENC_DEC, **VISION}[name]
    torch.manual_seed(0)
    model = build().eval()
    specs, ins = _specs_inputs(name)
    t = time.time()
    gm = torchtrt_c.compile(model, kwarg_inputs=specs)
    secs = time.time() - t
    err = 0.0
    for kw in ins:
        with torch.no_grad():
            err = max(err, max_error(gm(**kw), model(**kw)))
    eng, tor = segments(gm)
    falls = ""
    if (eng, tor) != (1, 0):
        with contextlib.redirect_stdout(io.StringIO()):   # the dry run prints its report
            ops = fallback_ops(dry_run(model, specs))
        reasons = sorted({r for rs in ops.values() for r in rs})
        falls = f"{len(ops)} op kinds: " + "; ".join(reasons)[:300]
    return f"| {name} | {eng} / {tor} | {err:.1e} | {secs:.1f} s | {falls} |"


def main(names):
    print(f"torch {torch.__version__}, transformers {T.__version__}, device {torchtrt_c.default_device()}")
    print("| model | engines / torch segments | max error | compile | falls back |")
    print("|---|---|---|---|---|")
    for name in names or [*TEXT, *ENC_DEC, *VISION]:
        try:
            print(row(name), flush=True)
        except Exception as ex:
            msg = (str(ex).strip().splitlines() or [type(ex).__name__])[-1][:300]
            print(f"| {name} | - | - | - | FAILS: {type(ex).__name__}: {msg} |", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
