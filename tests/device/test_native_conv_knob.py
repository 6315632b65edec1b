"""TORCHTRT_C_NATIVE_CONV=blas is read through the target (target/target.c,
ttc_target_native_conv_blas) on every call, not fixed when the engine is built: _C.native_cpu()
and a built engine follow it between calls, and the results agree both ways."""
import numpy as np
import pytest
import torch

import torchtrt_c
from torchtrt_c import _C
from torchtrt_c import settings


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_CONV"):
        monkeypatch.delenv(v, raising=False)


def test_native_cpu_follows_the_knob_per_call(monkeypatch):
    nat = _C.native_cpu()
    if not nat["available"]:
        pytest.skip(f"no native kernels on the default device: {nat['library']}")
    dnnl = nat["conv"] == "onednn"
    settings.set(NATIVE_CONV="blas")
    assert _C.native_cpu()["conv"] == "blas"
    settings.set(NATIVE_CONV="dnnl")   # any other value: oneDNN where it loads
    assert _C.native_cpu()["conv"] == ("onednn" if dnnl else "blas")
    settings.set(NATIVE_CONV=None)
    assert _C.native_cpu()["conv"] == nat["conv"]


def test_one_engine_switched_between_calls(monkeypatch):
    if not _C.native_cpu()["available"]:
        pytest.skip("no native kernels on the default device")
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(5, 7, 3, padding=1), torch.nn.ReLU(), torch.nn.Conv2d(7, 3, 1)).eval()
    x = torch.randn(2, 5, 11, 9)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    with torch.no_grad():
        want = m(x)
    for mode in ("blas", None, "blas", None):
        if mode:
            settings.set(NATIVE_CONV=mode)
        else:
            settings.set(NATIVE_CONV=None)
        got = trt(x)
        err = float((got - want).abs().max())
        assert np.isfinite(err) and err < 1e-4, f"TORCHTRT_C_NATIVE_CONV={mode}: max abs error {err}"
