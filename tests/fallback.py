"""Shared by the fallback-device tests (tests/device/test_fallback_device.py on host tensors,
tests/gpu/test_fallback_device_cuda.py on CUDA tensors): engine builds made to fail by the test,
the models, and the check that the call matches eager with every torch segment's constants on
the inputs' device."""
import pytest
import torch

import torchtrt_c
from torchtrt_c.dynamo import _compiler


def fail_builds(monkeypatch, names=None) -> list:
    """Makes the engine builds of `names` (None: every segment) fail with BuildError; returns
    the list the failed names are appended to."""
    real = _compiler._EngineFactory.build
    failed = []

    def build(self, sub, name):
        if names is None or name in names:
            failed.append(name)
            raise torchtrt_c.BuildError(f"{name}: build failure forced by the test")
        return real(self, sub, name)
    monkeypatch.setattr(_compiler._EngineFactory, "build", build)
    return failed


def t5_case(device, dtype=torch.float32):
    """Hugging Face T5EncoderModel (small config, random weights): relative position buckets
    (index constants made at compile time) feed an embedding lookup."""
    T = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = T.T5Config(vocab_size=100, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4)
    m = T.T5EncoderModel(cfg).eval().to(device=device, dtype=dtype)
    ids = torch.randint(0, 100, (3, 9), generator=torch.Generator().manual_seed(1)).to(device)
    return m, dict(input_ids=ids)


def mlp_case(device):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Linear(32, 8), torch.nn.GELU(),
                            torch.nn.Linear(8, 4)).eval().to(device)
    return m, dict(input=torch.randn(5, 8, device=device))


def check_fallback(m, kw, device, tol=1e-5, **opts):
    """Compiles with kw as the inputs, calls with them, compares with eager; returns the module."""
    with torch.no_grad():
        want = m(**kw)
    want = want.last_hidden_state if hasattr(want, "last_hidden_state") else want
    trt = torchtrt_c.compile(m, kwarg_inputs=kw, **opts)
    segs = [c for n, c in trt.named_children() if n.startswith("_run_on_gpu")]
    assert segs, "no torch segment: the forced build failure did not take"
    for c in segs:   # the constants a torch segment reads are where its inputs are
        for name, b in c.named_buffers():
            assert b.device.type == torch.device(device).type, f"{name} is on {b.device}, the inputs on {device}"
    with torch.no_grad():
        got = trt(**kw)
    got = got[0] if isinstance(got, (tuple, list)) else got
    got = got.last_hidden_state if hasattr(got, "last_hidden_state") else got
    assert got.device == want.device
    err = (got.float() - want.float()).abs().max().item()
    assert err <= tol * max(1.0, want.float().abs().max().item()), f"max abs error {err} vs eager"
    return trt
