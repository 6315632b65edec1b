"""LLM generation through torch.compile (docs/llm.md): `model.forward = torch.compile(
model.forward, backend="torchtrt_c")` with transformers' generate().

- Static cache (`cache_implementation="static"`): one prefill graph and one decode graph are
  compiled for a whole generation, never one per token; each is one engine, the cache update
  (the static cache's index_copy_) runs in the engine on the cache tensors, and the tokens equal
  eager's; a second generate() compiles nothing.
- Default dynamic cache: the compiles over a generation stay bounded (the backend compiles a
  range of cache lengths that grows by doubling), and the tokens equal eager's."""
import pytest
import torch

transformers = pytest.importorskip("transformers")
T = transformers

from torchtrt_c import backend as B  # noqa: E402


def _model():
    torch.manual_seed(0)
    cfg = T.LlamaConfig(hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
                        num_key_value_heads=2, vocab_size=97, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    return T.LlamaForCausalLM(cfg).eval()


@pytest.fixture
def compiles(monkeypatch):
    seen = []
    orig = B._Graph._compile

    def spy(self, *a, **k):
        mod = orig(self, *a, **k)
        seen.append(None if mod is None else [n for n, _ in mod.named_children()])
        return mod
    monkeypatch.setattr(B._Graph, "_compile", spy)
    return seen


def test_static_cache_two_graphs_in_engines(compiles):
    m = _model()
    ids = torch.randint(3, 97, (1, 7), generator=torch.Generator().manual_seed(1))
    kw = dict(do_sample=False, max_new_tokens=24, min_new_tokens=24, cache_implementation="static")
    want = m.generate(ids, **kw)
    m.forward = torch.compile(m.forward, backend="torchtrt_c")
    got = m.generate(ids, **kw)
    assert torch.equal(got, want)
    assert compiles == [["_run_on_acc_0"], ["_run_on_acc_0"]], compiles   # prefill, decode
    assert torch.equal(m.generate(ids, **kw), want)
    assert len(compiles) == 2, compiles


def test_dynamic_cache_bounded_compiles(compiles):
    m = _model()
    ids = torch.randint(3, 97, (1, 7), generator=torch.Generator().manual_seed(2))
    kw = dict(do_sample=False, max_new_tokens=40, min_new_tokens=40)
    want = m.generate(ids, **kw)
    m.forward = torch.compile(m.forward, backend="torchtrt_c")
    got = m.generate(ids, **kw)
    assert torch.equal(got, want)
    assert 1 <= len(compiles) <= 5, compiles   # 40 tokens: a handful, not one per length
    # each one engine (SDPA over key/value lengths dynamo gives separate symbols is decomposed:
    # before, torch's decomposition of it recursed and the decode graphs ran eagerly)
    assert all(c == ["_run_on_acc_0"] for c in compiles), compiles
