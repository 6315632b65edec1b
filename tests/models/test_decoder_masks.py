"""Decoder-only transformers (tiny configs, random weights, use_cache=False) compile to one
engine with default settings: their padding/causal masks (bitwise_and, arange over the
sequence, index, where with scalars) all convert. Static shapes and a dynamic sequence."""
import pytest
import torch

transformers = pytest.importorskip("transformers")
import torchtrt_c  # noqa: E402


def _model(name, attn):
    t = transformers
    if name == "gpt2":
        cfg = t.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=100, n_positions=64)
        cls = t.GPT2Model
    else:
        cfg_cls, cls = {"llama": (t.LlamaConfig, t.LlamaModel), "qwen2": (t.Qwen2Config, t.Qwen2Model),
                        "mistral": (t.MistralConfig, t.MistralModel)}[name]
        cfg = cfg_cls(num_hidden_layers=2, hidden_size=32, intermediate_size=64, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=100, max_position_embeddings=64)
    torch.manual_seed(0)
    m = cls._from_config(cfg, attn_implementation=attn).eval()
    m.config.use_cache = False
    return m


def _inputs(b, s):
    g = torch.Generator().manual_seed(b * 100 + s)
    ids = torch.randint(0, 100, (b, s), generator=g)
    am = torch.ones(b, s, dtype=torch.long)
    am[-1, :2] = 0   # left padding on the last row
    return ids, am


def _hidden(out):
    return out.last_hidden_state if hasattr(out, "last_hidden_state") else out[0]


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic-seq"])
@pytest.mark.parametrize("name", ["gpt2", "llama", "qwen2", "mistral"])
def test_one_engine_matches_eager(name, dynamic):
    m = _model(name, "eager")
    if dynamic:
        inp = lambda: torchtrt_c.Input(min_shape=(2, 2), opt_shape=(2, 7), max_shape=(2, 16), dtype=torch.long)
        kw = dict(input_ids=inp(), attention_mask=inp())
    else:
        ids, am = _inputs(2, 7)
        kw = dict(input_ids=ids, attention_mask=am)
    trt = torchtrt_c.compile(m, kwarg_inputs=kw)
    kids = [n for n, _ in trt.named_children()]
    assert [k for k in kids if k.startswith("_run_on_acc_")] == ["_run_on_acc_0"], kids
    assert not [k for k in kids if k.startswith("_run_on_gpu_")], kids
    for b, s in ([(2, 3), (2, 7), (2, 16)] if dynamic else [(2, 7)]):
        ids, am = _inputs(b, s)
        with torch.no_grad():
            ref = _hidden(m(input_ids=ids, attention_mask=am))
            got = _hidden(trt(input_ids=ids, attention_mask=am))
        rel = float((got - ref).abs().max() / ref.abs().max())
        assert rel <= 1e-5, f"{name} seq {s}: relative error {rel:.3g}"
