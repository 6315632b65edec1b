"""More Hugging Face architectures (beyond hf_cases.CASES, the model tier's): encoders,
decoders, task heads, encoder-decoders and HF's vision models, each at a tiny configuration
with random weights (nothing downloaded). Used by test_hf_more.py (slow tier) and
bench/hf_coverage.py (the table in bench/RESULTS.md).

    model = ALL["opt"]()                       # not seeded, not in eval mode: the caller does both
    specs, inputs = specs_inputs("opt")       # kwarg Input ranges, three calls' kwargs
"""
from __future__ import annotations

import transformers as T

from hf_cases import VOCAB, _pixel_inputs, _pixel_specs, _text_inputs, _text_specs


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


def specs_inputs(name):
    if name in VISION:
        return _pixel_specs(), [_pixel_inputs(b, None) for b in (2, 1, 3)]
    specs = dict(_text_specs())
    ins = [_text_inputs(b, s) for b, s in [(2, 8), (1, 5), (4, 13)]]
    if name in ENC_DEC:
        specs["decoder_input_ids"] = specs["input_ids"]
        for kw in ins:
            kw["decoder_input_ids"] = kw["input_ids"].flip(1)
    return specs, ins



ALL = {**TEXT, **ENC_DEC, **VISION}

# What is not one engine, and why (bench/RESULTS.md, session 17). Every other model is one
# engine and no torch segment.
SPLIT = {
    "gemma2": "the sequence length is among the outputs: its sym_size and an arange run in torch",
    "mixtral": "mixture of experts: routing over B*S rows with data-dependent sizes, in torch",
    "qwen2_moe": "mixture of experts: routing over B*S rows with data-dependent sizes, in torch",
    "xlnet": "relative attention's einsums and shifts: B*S products and (s**2)//s dims, in torch",
}
