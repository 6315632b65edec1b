"""Hugging Face transformers models for bench/run.py, built from configs with random weights
(nothing downloaded), at their default configuration (SDPA attention; the cache a decoder
returns by default is dropped by the wrapper, as a user keeping only the hidden states would).

    model, make_input = build_hf("hf_bert", "full")     # BERT-base, sequence 128
    y = model(make_input(batch=8))                       # last_hidden_state (logits for *_lm)

Names: hf_bert (BERT-base), hf_gpt2 (GPT-2 small), hf_llama (a 12-layer, 768-wide Llama with
grouped-query attention: the architecture of the small Llama-family checkpoints at BERT-base
width so that it runs on a CPU too). size="tiny" keeps the architecture at width 32, 2 layers.
"""
from __future__ import annotations

import torch

HF_MODELS = ["hf_bert", "hf_gpt2", "hf_llama"]


class FirstOutput(torch.nn.Module):
    """Calls the model as users do (input_ids=..., attention_mask=...) and returns its first
    output (last_hidden_state), so that the bench harness sees one tensor."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids):
        out = self.model(input_ids=input_ids, attention_mask=torch.ones_like(input_ids))
        return out[0]


def build_hf(name: str, size: str = "full", seed: int = 0):
    import transformers as T
    full = size == "full"
    torch.manual_seed(seed)
    seq = 128 if full else 16
    if name == "hf_bert":
        cfg = T.BertConfig() if full else T.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                                                       num_attention_heads=2, intermediate_size=64)
        m = T.BertModel(cfg)
    elif name == "hf_gpt2":
        cfg = T.GPT2Config() if full else T.GPT2Config(vocab_size=100, n_embd=32, n_layer=2, n_head=2)
        m = T.GPT2Model(cfg)
    elif name == "hf_llama":
        kw = (dict(vocab_size=32000, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                   num_key_value_heads=4, intermediate_size=2048) if full else
              dict(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                   num_key_value_heads=1, intermediate_size=64))
        m = T.LlamaModel(T.LlamaConfig(max_position_embeddings=2048, **kw))
    else:
        raise ValueError(f"unknown model {name!r}; known: {', '.join(HF_MODELS)}")
    vocab = m.config.vocab_size
    return FirstOutput(m.eval()).eval(), (lambda batch=1: torch.randint(3, vocab, (batch, seq)))
