"""Model tier, Hugging Face transformers: each model at its default configuration (SDPA attention,
use_cache where that is the default, so GPT-2/Llama/... return their DynamicCache and T5 its
EncoderDecoderCache), called with kwargs as users call it, compiled with default settings and
Input ranges (text: batch 1..4 x sequence 2..16), must be one engine with no torch segment and
match eager at several (batch, seq) pairs, whole output structure included.

    PYTHONPATH=$PWD python3 -m pytest tests/models/test_hf_models.py -q
    PYTHONPATH=$PWD python3 tests/models/table.py          # the model table in docs/models.md
"""
import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
pytest.importorskip("transformers")

import torchtrt_c  # noqa: E402
from hf_cases import CASES, gpt2_eager_attention  # noqa: E402
from model_check import check_close, check_one_engine  # noqa: E402


# One of each family runs by default; the rest of the list (same op mix, or the slowest compile:
# T5's encoder-decoder) is marked slow: `-m "not slow"` keeps the tier to a few minutes.
FAST = {"bert", "gpt2", "llama", "t5_encoder", "vit", "wav2vec2", "opt"}


@pytest.mark.parametrize("name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in CASES])
def test_hf_model(name):
    case = CASES[name]
    model = case.build()
    specs = case.specs()
    gm = torchtrt_c.compile(model, kwarg_inputs=specs)
    for b, s in case.runs:
        kw = case.inputs(b, s)
        with torch.no_grad():
            ref = model(**kw)
            out = gm(**kw)
        check_close(out, ref, what=f"{name} at batch {b}" + (f", seq {s}" if s else ""))
    check_one_engine(gm, model, specs, case.fallback, case.torch_ops, case.fallback_reason)


def test_hf_torch_compile_dynamic(monkeypatch):
    """GPT-2 as users often run it: torch.compile(dynamic=True) with the torchtrt_c backend, the
    sequence changing between calls: the graph is compiled once, over a range of batch and
    sequence sizes (not run eagerly, not per shape), and matches eager."""
    import torchtrt_c.dynamo._compiler as comp
    torch._dynamo.reset()
    case = CASES["gpt2"]
    model = case.build()
    calls = []
    real = comp.compile_module
    monkeypatch.setattr(comp, "compile_module", lambda *a, **k: calls.append(1) or real(*a, **k))
    f = torch.compile(model, backend="torchtrt_c", dynamic=True)
    for b, s in [(2, 8), (3, 11), (2, 8)]:
        kw = case.inputs(b, s)
        with torch.no_grad():
            check_close(f(**kw), model(**kw), what=f"torch.compile dynamic at batch {b}, seq {s}")
    torch._dynamo.reset()
    assert len(calls) == 1, f"{len(calls)} compiles for 2 shapes"


@pytest.mark.parametrize("use_cache", [False, True])
def test_hf_use_cache_keyword(use_cache):
    """use_cache=... passed as a compile input (a bool: fixed at compile time, as torch.export
    fixes it; compile raised "got bool" before): GPT-2 returns its cache or none as eager does,
    and a call with the other value is an InputError naming it."""
    case = CASES["gpt2"]
    model = case.build()
    gm = torchtrt_c.compile(model, kwarg_inputs={**case.specs(), "use_cache": use_cache})
    for b, s in case.runs[:2]:
        kw = case.inputs(b, s)
        with torch.no_grad():
            out, ref = gm(**kw, use_cache=use_cache), model(**kw, use_cache=use_cache)
        assert (out.past_key_values is None) == (ref.past_key_values is None) == (not use_cache)
        check_close(out, ref, what=f"use_cache={use_cache} at batch {b}, seq {s}")
    with pytest.raises(torchtrt_c.InputError, match="'use_cache'"):
        gm(**case.inputs(2, 8), use_cache=not use_cache)


def test_hf_cache_error_names_use_cache():
    """A cache class torch.export cannot flatten names use_cache=False as the fix."""
    import torch.utils._pytree as pytree
    from transformers.cache_utils import DynamicCache
    case = CASES["gpt2"]
    model = gpt2_eager_attention()
    saved = pytree.SUPPORTED_NODES.get(DynamicCache)
    if saved is not None:
        pytree._deregister_pytree_node(DynamicCache)
    import torchtrt_c.dynamo._capture as cap
    orig = cap.register_transformers_containers
    cap.register_transformers_containers = lambda: False   # as with a transformers we cannot help
    try:
        with pytest.raises(torchtrt_c.Error, match="use_cache=False"):
            torchtrt_c.compile(model, kwarg_inputs=case.inputs(2, 8), min_block_size=1, dryrun=True)
    finally:
        cap.register_transformers_containers = orig
        if saved is not None:
            cap.register_transformers_containers()


def test_hf_use_cache_false_and_save_load(tmp_path):
    """use_cache=False as a config choice, and a saved module that returns a ModelOutput with a
    DynamicCache loads in a fresh process (no transformers import by the user) and matches."""
    import subprocess
    import textwrap
    case = CASES["gpt2"]
    model = gpt2_eager_attention()
    specs = case.specs()
    gm = torchtrt_c.compile(model, kwarg_inputs=specs, min_block_size=1)
    p = tmp_path / "gpt2.ep"
    torchtrt_c.save(gm, p)
    kw = case.inputs(3, 11)
    with torch.no_grad():
        ref = model(**kw)
    torch.save((kw, ref.last_hidden_state, [layer.keys for layer in ref.past_key_values.layers]),
               tmp_path / "io.pt")
    code = textwrap.dedent(f"""
        import sys, torch, torchtrt_c
        kw, h, keys = torch.load({str(tmp_path / 'io.pt')!r}, weights_only=False)
        m = torchtrt_c.load({str(p)!r})
        out = m(**kw)
        assert type(out).__name__ == "BaseModelOutputWithPastAndCrossAttentions", type(out)
        assert type(out.past_key_values).__name__ == "DynamicCache", type(out.past_key_values)
        e = (out.last_hidden_state - h).abs().max().item()
        ek = max((l.keys - k).abs().max().item() for l, k in zip(out.past_key_values.layers, keys))
        assert e < 1e-5 and ek < 1e-5, (e, ek)
        print("ok", e, ek)
    """)
    import os
    env = dict(os.environ, PYTHONPATH=str(Path(torchtrt_c.__file__).resolve().parents[1]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-3000:]

    model.config.use_cache = False
    gm2 = torchtrt_c.compile(model, kwarg_inputs=specs, min_block_size=1)
    with torch.no_grad():
        out = gm2(**kw)
        ref2 = model(**kw)
    assert out.past_key_values is None
    check_close(out, ref2, what="use_cache=False")


def test_hf_cache_device_follows_outputs():
    """A DynamicCache's layers record their device (DynamicLayer.device, kept in the output spec
    captured on the CPU); outputs on another device rebuild the cache saying that device, else
    transformers moves the cache back to the CPU at its next update. The CPU cannot run a
    second device: the outputs of a real call moved to 'meta' stand in for the GPU's (the
    CUDA run is tests/gpu/test_bf16_gpu.py)."""
    import torch.utils._pytree as pytree
    from torchtrt_c.dynamo import _compiled_module as cm
    case = CASES["llama"]
    model = case.build()
    gm = torchtrt_c.compile(model, kwarg_inputs=case.specs())
    kw = case.inputs(2, 5)
    with torch.no_grad():
        out = gm(**kw)
    layers = out.past_key_values.layers
    assert layers and all(layer.device == torch.device("cpu") for layer in layers)
    flat, spec = pytree.tree_flatten(out)
    assert cm.spec_devices(spec) == {"cpu"}
    moved = pytree.tree_unflatten([t.to("meta") if isinstance(t, torch.Tensor) else t for t in flat], spec)
    assert all(layer.device == torch.device("cpu") for layer in moved.past_key_values.layers)  # as captured
    fixed = cm._outputs_on_device(gm, moved)
    assert all(layer.device == torch.device("meta") and layer.keys.device == torch.device("meta")
               for layer in fixed.past_key_values.layers)
    assert type(fixed) is type(out) and fixed.last_hidden_state.shape == out.last_hidden_state.shape
    # outputs on the captured device keep the very object
    assert cm._outputs_on_device(gm, out) is out
    # the one-engine shortcut's spec (positional calls) follows the same rule
    d = cm._DeviceSpecs(spec)
    assert d.spec(spec, flat) is spec
    assert cm.spec_devices(d.spec(spec, [t.to("meta") for t in flat if isinstance(t, torch.Tensor)])) == {"meta"}
