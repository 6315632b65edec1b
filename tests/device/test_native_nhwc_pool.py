"""Max pooling of a channels-last (NHWC) tensor between native convolutions
(backend/cpu/native_layout.c: channels in blocks of 16 and the rest one by one, output rows split among
the step threads) against torch eager, and against the same engine with every tensor NCHW
(TORCHTRT_C_NATIVE_LAYOUT=0: the plane-wise native pool) and with the pool on one thread
(TORCHTRT_C_STEP_THREADS=1: the same bits). Channel counts below, at and above the 16-wide block
(8, 16, 37), ResNet's 3x3/2 pad 1 window, a 2x2/2 ceil-mode window with partial windows at the
border, a 9x9/1 window (81 taps: more than the kernel's tap list, the scalar path) and a dilated
window, odd image sizes. Tolerance: fp32 atol = rtol = 1e-4 against eager (the convolutions);
0 between the pool variants."""
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchtrt_c
import torchtrt_c._C as C
from convtest import rand

KNOBS = ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_CONV", "TORCHTRT_C_NATIVE_EPI",
         "TORCHTRT_C_NATIVE_POST", "TORCHTRT_C_NATIVE_EW", "TORCHTRT_C_NATIVE_POOL", "TORCHTRT_C_NATIVE_LAYOUT",
         "TORCHTRT_C_STEP_THREADS")


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in KNOBS:
        monkeypatch.delenv(v, raising=False)


def onednn():
    n = C.native_cpu()
    return n["available"] and n.get("conv") == "onednn"


class ConvPoolConv(nn.Module):
    def __init__(self, c, pool):
        super().__init__()
        self.a = nn.Conv2d(3, c, 3, padding=1)
        self.b = nn.Conv2d(c, 5, 1)
        self.pool = pool

    def forward(self, x):
        return self.b(self.pool(self.a(x)))   # no ReLU: negative maxima too


POOLS = {
    "3x3s2p1": lambda y: F.max_pool2d(y, 3, 2, 1),
    "2x2s2ceil": lambda y: F.max_pool2d(y, 2, 2, 0, ceil_mode=True),
    "9x9s1p4": lambda y: F.max_pool2d(y, 9, 1, 4),
    "3x3s2p1d2": lambda y: F.max_pool2d(y, 3, 2, 1, dilation=2),
}


def build_and_run(m, x, monkeypatch, build_env):
    for k, v in build_env.items():
        monkeypatch.setenv(k, v)
    try:
        with torch.inference_mode():
            trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
            kernels = C.Engine.deserialize(bytes(trt._run_on_acc_0.engine.numpy()), cache_dir="").info()["kernels"]
            return trt(x), kernels
    finally:
        for k in build_env:
            monkeypatch.delenv(k)


@pytest.mark.parametrize("c", [8, 16, 37])
@pytest.mark.parametrize("pool", list(POOLS))
@pytest.mark.parametrize("batch,hw", [(1, (13, 11)), (3, (24, 25))])
def test_nhwc_max_pool(c, pool, batch, hw, monkeypatch):
    torch.manual_seed(c)
    m = ConvPoolConv(c, POOLS[pool]).eval()
    x = rand(batch, 3, *hw, seed=c + batch)
    with torch.inference_mode():
        ref = m(x)
    jobs = C.step_parallel_jobs()
    outs = {}
    for name, env in (("nhwc", {}), ("nhwc-1thread", {"TORCHTRT_C_STEP_THREADS": "1"}),
                      ("nchw", {"TORCHTRT_C_NATIVE_LAYOUT": "0"})):
        out, ks = build_and_run(m, x, monkeypatch, env)
        assert out.shape == ref.shape, f"{name}: shape {tuple(out.shape)}, eager {tuple(ref.shape)}"
        err = (out - ref).abs()
        assert bool((err <= 1e-4 + 1e-4 * ref.abs()).all()), (
            f"{name}: max abs error {err.max().item()} at {np.unravel_index(int(err.argmax()), tuple(err.shape))} "
            f"(kernels {ks})")
        pools = [kd for kd in ks if "pool:" in kd]
        if onednn() and name != "nchw":
            assert len(pools) == 1 and "+nhwc-in" in pools[0] and "+nhwc-out" in pools[0], ks
        if name == "nchw":
            assert not any("+nhwc" in kd for kd in ks), ks
        outs[name] = out
    # the pool's result does not depend on how its rows were split, nor (a max) on the layout
    for name in ("nhwc-1thread", "nchw"):
        d = (outs[name] - outs["nhwc"]).abs().max().item()
        assert d == 0, f"{name} differs from nhwc by {d}"
    if onednn() and batch == 3 and c == 37 and pool == "3x3s2p1" and (C.native_cpu().get("step_threads") or 1) > 1:
        # 36 output rows of 12 x 37 x 9 taps: split among the step threads
        assert C.step_parallel_jobs() > jobs


def test_nhwc_max_pool_nan_wins(monkeypatch):
    """A NaN in the pooled tensor wins its windows, as in torch (the tensor is the convolution's
    NHWC output; the NaN comes from the input through a 1x1 convolution without activation)."""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Conv2d(3, 20, 1)
            self.b = nn.Conv2d(20, 4, 1)

        def forward(self, x):
            return self.b(F.max_pool2d(self.a(x), 3, 2, 1))

    torch.manual_seed(5)
    m = M().eval()
    x = rand(2, 3, 11, 9, seed=6)
    x[1, 0, 4, 5] = float("nan")
    with torch.inference_mode():
        ref = m(x)
    out, ks = build_and_run(m, x, monkeypatch, {})
    assert torch.equal(torch.isnan(out), torch.isnan(ref)), (
        f"NaN positions differ: ours {torch.isnan(out).nonzero().tolist()}, eager {torch.isnan(ref).nonzero().tolist()}")
    fin = ~torch.isnan(ref)
    err = (out[fin] - ref[fin]).abs().max().item()
    assert err <= 1e-4, f"max abs error {err} outside the NaN windows (kernels {ks})"
