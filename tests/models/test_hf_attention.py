"""Hugging Face encoders (BERT, DistilBERT, T5 encoder, ViT, CLIP vision) at their defaults (attn_implementation="sdpa") through SDPA: tiny
configs, random weights, nothing downloaded. Each compiles with default settings to one
engine and no torch segment, and matches eager (max |a - b| <= 1e-5 * max |b| in fp32).
"""
import pytest
import torch

import torchtrt_c

transformers = pytest.importorskip("transformers")

SDPA = "aten.scaled_dot_product_attention.default"


def _text_inputs():
    ids = torch.randint(0, 100, (2, 9), generator=torch.Generator().manual_seed(0))
    am = torch.ones(2, 9, dtype=torch.long)
    am[1, 6:] = 0
    return dict(input_ids=ids, attention_mask=am)


def _image_inputs():
    return dict(pixel_values=torch.randn(2, 3, 16, 16, generator=torch.Generator().manual_seed(0)))


def _models():
    T = transformers
    return {
        "BertModel": (lambda: T.BertModel(T.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                                                       num_attention_heads=2, intermediate_size=37)), _text_inputs),
        "DistilBertModel": (lambda: T.DistilBertModel(T.DistilBertConfig(vocab_size=100, dim=32, n_layers=2, n_heads=2,
                                                                         hidden_dim=37)), _text_inputs),
        "T5EncoderModel": (lambda: T.T5EncoderModel(T.T5Config(vocab_size=100, d_model=32, d_kv=16, d_ff=37,
                                                               num_layers=2, num_heads=2)), _text_inputs),
        "ViTModel": (lambda: T.ViTModel(T.ViTConfig(image_size=16, patch_size=4, hidden_size=32, num_hidden_layers=2,
                                                    num_attention_heads=2, intermediate_size=37)), _image_inputs),
        "CLIPVisionModel": (lambda: T.CLIPVisionModel(T.CLIPVisionConfig(image_size=16, patch_size=4, hidden_size=32,
                                                                         num_hidden_layers=2, num_attention_heads=2,
                                                                         intermediate_size=37)), _image_inputs),
    }


@pytest.mark.parametrize("name", sorted(_models()))
def test_hf_encoder_attention_in_engines(name):
    make, inputs = _models()[name]
    torch.manual_seed(0)
    m = make().eval()
    kw = inputs()
    dry = torchtrt_c.compile(m, kwarg_inputs=kw, dryrun=True).dryrun_report
    assert SDPA not in dry.unsupported, dry.unsupported[SDPA]
    assert not dry.unsupported, f"{name}: fallbacks {dry.unsupported}"
    assert len(dry.engines) == 1 and not dry.torch_segments, str(dry)
    trt = torchtrt_c.compile(m, kwarg_inputs=kw)
    with torch.no_grad():
        want = m(**kw).last_hidden_state
        got = trt(**kw)
    got = got.last_hidden_state if hasattr(got, "last_hidden_state") else got[0]
    err = float((got - want).abs().max()) / float(want.abs().max())
    assert err <= 1e-5, f"{name}: max error {err:.3g} relative to max |eager|"
