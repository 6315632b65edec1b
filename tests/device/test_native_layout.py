"""Activations kept channels-last (NHWC) between native convolutions (backend/cpu/native_layout.c)
against torch eager. Each model is compiled with the default (tensors made by native convolutions
or native elementwise ops and read only by native calls stay NHWC: kernel descriptions carry
"+nhwc-in" / "+nhwc-out") and with TORCHTRT_C_NATIVE_LAYOUT=0 (every tensor NCHW; read when the
engine is built), and each engine runs once more with TORCHTRT_C_NATIVE_CONV=blas (im2col +
OpenBLAS, which goes through NCHW copies of NHWC tensors: the path taken where oneDNN refuses a
shape). Cases: chains of 1x1, 3x3, depthwise and strided convolutions with odd image sizes at
batch 1 and 3, a residual add, squeeze-excite (global pool, channel scale), a stem max pool, a
classifier head after a global pool, a convolution whose result also leaves the engine, and one
that also feeds an OpenCL kernel (those stay NCHW). Tolerance: fp32 atol = rtol = 1e-4."""
import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchtrt_c
import torchtrt_c._C as C
from convtest import rand

KNOBS = ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_CONV", "TORCHTRT_C_NATIVE_EPI",
         "TORCHTRT_C_NATIVE_POST", "TORCHTRT_C_NATIVE_EW", "TORCHTRT_C_NATIVE_POOL", "TORCHTRT_C_NATIVE_LAYOUT")


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in KNOBS:
        monkeypatch.delenv(v, raising=False)


def onednn():
    n = C.native_cpu()
    return n["available"] and n.get("conv") == "onednn"


class Chain(nn.Module):
    """3x3 -> 1x1 -> depthwise 3x3 stride 2 -> 1x1 (+ residual of a 1x1 branch) -> 5x5 stride 2."""

    def __init__(self, c):
        super().__init__()
        self.a = nn.Conv2d(c, 16, 3, padding=1)
        self.b = nn.Conv2d(16, 24, 1)
        self.dw = nn.Conv2d(24, 24, 3, stride=2, padding=1, groups=24)
        self.p = nn.Conv2d(24, 16, 1)
        self.q = nn.Conv2d(16, 16, 1)
        self.e = nn.Conv2d(16, 8, 5, stride=2, padding=2)

    def forward(self, x):
        y = F.relu6(self.b(F.relu(self.a(x))))
        y = self.p(F.silu(self.dw(y)))
        y = y + self.q(y)
        return self.e(y)


class SE(nn.Module):
    """expand 1x1 -> depthwise -> squeeze-excite -> project 1x1 + residual."""

    def __init__(self, c, e, k):
        super().__init__()
        self.expand = nn.Conv2d(c, e, 1)
        self.dw = nn.Conv2d(e, e, k, padding=k // 2, groups=e)
        self.fc1 = nn.Conv2d(e, max(1, e // 4), 1)
        self.fc2 = nn.Conv2d(max(1, e // 4), e, 1)
        self.project = nn.Conv2d(e, c, 1)

    def forward(self, x):
        y = F.hardswish(self.dw(F.hardswish(self.expand(x))))
        s = F.hardsigmoid(self.fc2(F.relu(self.fc1(F.adaptive_avg_pool2d(y, 1)))))
        return self.project(y * s) + x


class Stem(nn.Module):
    """ResNet's stem (its max pool, or one in ceil mode with no padding) and a basic block, then a
    global pool and a linear classifier."""

    def __init__(self, c, ceil=False):
        super().__init__()
        self.pool = (lambda y: F.max_pool2d(y, 2, 2, 0, ceil_mode=True)) if ceil else (lambda y: F.max_pool2d(y, 3, 2, 1))
        self.conv1 = nn.Conv2d(c, 8, 7, stride=2, padding=3)
        self.c1 = nn.Conv2d(8, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = self.pool(F.relu(self.conv1(x)))
        y = F.relu(self.c2(F.relu(self.c1(y))) + y)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(y, 1), 1))


class Leaves(nn.Module):
    """a's result is both an engine output and the next convolution's input; b's feeds an
    adaptive pool to 2x3 (an OpenCL kernel) and a convolution."""

    def __init__(self, c):
        super().__init__()
        self.a = nn.Conv2d(c, 6, 3, padding=1)
        self.b = nn.Conv2d(6, 6, 1)
        self.c = nn.Conv2d(6, 4, 3, padding=1)

    def forward(self, x):
        a = self.a(x)
        b = F.relu(self.b(a))
        return a, self.c(b) * 0.5, F.adaptive_avg_pool2d(b, (2, 3))


class ConvNeXt(nn.Module):
    """Two ConvNeXt blocks (depthwise 7x7 -> permute -> LayerNorm -> linear -> GELU -> linear ->
    layer scale -> permute back + residual) and a 2x2 stride 2 downsampling convolution: the
    depthwise results are read through a permute (a plain copy when they are NHWC)."""

    def __init__(self, c):
        super().__init__()
        self.dw = nn.ModuleList(nn.Conv2d(c, c, 7, padding=3, groups=c) for _ in range(2))
        self.norm = nn.ModuleList(nn.LayerNorm(c, eps=1e-6) for _ in range(2))
        self.fc1 = nn.ModuleList(nn.Linear(c, 2 * c) for _ in range(2))
        self.fc2 = nn.ModuleList(nn.Linear(2 * c, c) for _ in range(2))
        self.gamma = nn.Parameter(torch.rand(2, c) + 0.5)
        self.down = nn.Conv2d(c, 2 * c, 2, stride=2)

    def forward(self, x):
        for i in range(2):
            y = self.fc2[i](F.gelu(self.fc1[i](self.norm[i](self.dw[i](x).permute(0, 2, 3, 1)))))
            x = x + (self.gamma[i] * y).permute(0, 3, 1, 2)
        return self.down(x)


def run(m, x, monkeypatch, build_env, run_env):
    for k, v in build_env.items():
        monkeypatch.setenv(k, v)
    with torch.inference_mode():
        trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    # the layout is decided when an engine is built (or loaded): describe it under build_env
    eng = C.Engine.deserialize(bytes(trt._run_on_acc_0.engine.numpy()), cache_dir="")
    kernels = eng.info()["kernels"]
    for k in build_env:
        monkeypatch.delenv(k)
    for k, v in run_env.items():
        monkeypatch.setenv(k, v)
    with torch.inference_mode():
        out = trt(x)
    for k in run_env:
        monkeypatch.delenv(k)
    return out, kernels


def check(m, x, monkeypatch):
    m = m.eval()
    with torch.inference_mode():
        ref = m(x)
    refs = ref if isinstance(ref, tuple) else (ref,)
    kernels = {}
    for name, build_env, run_env in (("nhwc", {}, {}), ("nhwc-blas", {}, {"TORCHTRT_C_NATIVE_CONV": "blas"}),
                                     ("nchw", {"TORCHTRT_C_NATIVE_LAYOUT": "0"}, {})):
        out, ks = run(m, x, monkeypatch, build_env, run_env)
        outs = out if isinstance(out, tuple) else (out,)
        assert len(outs) == len(refs)
        for i, (o, r) in enumerate(zip(outs, refs)):
            assert o.shape == r.shape, f"{name}: output {i} shape {tuple(o.shape)}, eager {tuple(r.shape)}"
            err = (o - r).abs()
            lim = 1e-4 + 1e-4 * r.abs()
            assert bool((err <= lim).all()), (f"{name}: output {i} max abs error {err.max().item()} at "
                                              f"{np.unravel_index(int(err.argmax()), tuple(err.shape))} "
                                              f"(kernels {ks})")
        kernels[name] = ks
    assert not any("+nhwc" in kd for kd in kernels["nchw"]), kernels["nchw"]
    return kernels


def kept(ks):
    return [kd for kd in ks if "+nhwc-out" in kd]


@pytest.mark.parametrize("batch,hw", [(1, (13, 11)), (3, (9, 16))])
def test_conv_chain(batch, hw, monkeypatch):
    torch.manual_seed(0)
    ks = check(Chain(5), rand(batch, 5, *hw, seed=1), monkeypatch)["nhwc"]
    if onednn():
        # every convolution but the last (an engine output) writes NHWC
        convs = [kd for kd in ks if "conv" in kd.split(":")[0]]
        assert len(kept(ks)) >= 5 and not any("+nhwc-out" in kd for kd in convs[-1:]), ks


@pytest.mark.parametrize("c,e,k,hw,batch", [(8, 24, 3, 15, 1), (5, 13, 5, 9, 3)])
def test_squeeze_excite(c, e, k, hw, batch, monkeypatch):
    torch.manual_seed(1)
    ks = check(SE(c, e, k), rand(batch, c, hw, hw, seed=2), monkeypatch)["nhwc"]
    if onednn():
        # expand and depthwise outputs, and the channel-scaled tensor the projection reads
        assert len(kept(ks)) >= 3, ks
        assert any("pool:" in kd and "+nhwc-in" in kd for kd in ks), ks
        assert any("elementwise:" in kd and "+nhwc-out" in kd for kd in ks), ks


@pytest.mark.parametrize("batch,ceil", [(1, False), (3, False), (2, True)])
def test_stem_block_head(batch, ceil, monkeypatch):
    torch.manual_seed(2)
    ks = check(Stem(3, ceil), rand(batch, 3, 23, 21, seed=3), monkeypatch)["nhwc"]
    if onednn():
        # the stem convolution writes NHWC, the max pool reads and writes it, the global pool reads it
        pools = [kd for kd in ks if "pool:" in kd]
        assert len(pools) == 2 and all("+nhwc-in" in kd for kd in pools), ks
        assert sum("+nhwc-out" in kd for kd in pools) == 1 and "+nhwc-out" in ks[0], ks


def test_outputs_and_opencl_readers_stay_nchw(monkeypatch):
    torch.manual_seed(3)
    ks = check(Leaves(3), rand(2, 3, 10, 7, seed=4), monkeypatch)["nhwc"]
    # a (an engine output) and b (read by the OpenCL pool) are NCHW; nothing else is a candidate
    assert not kept(ks), ks


@pytest.mark.parametrize("batch,hw", [(1, (9, 7)), (3, (8, 11))])
def test_convnext_blocks(batch, hw, monkeypatch):
    torch.manual_seed(4)
    ks = check(ConvNeXt(12), rand(batch, 12, *hw, seed=5), monkeypatch)["nhwc"]
    if onednn():
        convs = [kd for kd in ks if "conv2d:" in kd]
        # both depthwise results (read through the permute) and the first residual sum
        assert sum("+nhwc-out" in kd for kd in convs) == 2 and "+nhwc-in" in convs[-1], ks
