"""Squeeze-excite blocks, global average pools, image-shaped elementwise ops and layer norms between
native calls (backend/cpu/native_ops.c, native_pool.c, native_norm.c) against torch eager. Each model is compiled with
the defaults (every kernel a native call where the device runs them and oneDNN loads) and with
TORCHTRT_C_NATIVE_EW=0 + TORCHTRT_C_NATIVE_POOL=0 (the pool, the channel scale and the layer
norm as OpenCL kernels; read when the engine is built). Cases: EfficientNet's SE (SiLU, sigmoid) and
MobileNetV3's (ReLU, hardsigmoid, hardswish), odd channel counts and image sizes, batch 1 and 3,
a residual after the projection, ConvNeXt's channels-last LayerNorm (with and without affine) and
layer scale + residual, an adaptive pool to 2x3 (stays an OpenCL kernel), and an elementwise op between OpenCL ops
(stays one). Tolerance: fp32 atol = rtol = 1e-4."""
import numpy as np
import pytest
import torch
import torch.nn as nn

import torchtrt_c
import torchtrt_c._C as C
from convtest import rand

# the transformer rules (any rank) too: TORCHTRT_C_NATIVE_NORM / _ELEMENTWISE
OFF = {"TORCHTRT_C_NATIVE_EW": "0", "TORCHTRT_C_NATIVE_POOL": "0", "TORCHTRT_C_NATIVE_NORM": "0",
       "TORCHTRT_C_NATIVE_ELEMENTWISE": "0"}


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_CONV", "TORCHTRT_C_NATIVE_EPI",
              "TORCHTRT_C_NATIVE_POST", "TORCHTRT_C_NATIVE_EW", "TORCHTRT_C_NATIVE_POOL", "TORCHTRT_C_NATIVE_NORM",
              "TORCHTRT_C_NATIVE_ELEMENTWISE"):
        monkeypatch.delenv(v, raising=False)


def onednn():
    n = C.native_cpu()
    return n["available"] and n.get("conv") == "onednn"


class SE(nn.Module):
    """expand 1x1 -> depthwise -> squeeze-excite -> project 1x1 (+ residual)."""

    def __init__(self, c, e, k, act, gate, residual):
        super().__init__()
        self.expand = nn.Sequential(nn.Conv2d(c, e, 1), act())
        self.dw = nn.Sequential(nn.Conv2d(e, e, k, padding=k // 2, groups=e), act())
        self.fc1 = nn.Conv2d(e, max(1, e // 4), 1)
        self.fc2 = nn.Conv2d(max(1, e // 4), e, 1)
        self.act, self.gate = act(), gate()
        self.project = nn.Conv2d(e, c, 1)
        self.residual = residual

    def forward(self, x):
        y = self.dw(self.expand(x))
        s = self.gate(self.fc2(self.act(self.fc1(torch.nn.functional.adaptive_avg_pool2d(y, 1)))))
        y = self.project(y * s)
        return y + x if self.residual else y


class LayerScale(nn.Module):
    """ConvNeXt's block: depthwise 7x7 -> permute -> LayerNorm (channels last) -> linear ->
    layer scale * . + residual."""

    def __init__(self, c, affine=True):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 7, padding=3, groups=c)
        self.norm = nn.LayerNorm(c, eps=1e-6, elementwise_affine=affine)
        if affine:
            with torch.no_grad():
                self.norm.weight.uniform_(0.5, 1.5)
                self.norm.bias.uniform_(-0.5, 0.5)
        self.fc = nn.Linear(c, c)
        self.gamma = nn.Parameter(torch.rand(c) + 0.5)

    def forward(self, x):
        y = self.fc(self.norm(self.dw(x).permute(0, 2, 3, 1)))
        return x + (self.gamma * y).permute(0, 3, 1, 2)


class Mixed(nn.Module):
    """adaptive pool to 2x3 (OpenCL), then an elementwise op on it (an OpenCL producer)."""

    def __init__(self, c):
        super().__init__()
        self.conv = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        return torch.nn.functional.adaptive_avg_pool2d(self.conv(x), (2, 3)) * 0.5 + 1.0


def compiled_kernels(m, x, monkeypatch, env):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with torch.inference_mode():
        trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
        out = trt(x)
    eng = C.Engine.deserialize(bytes(trt._run_on_acc_0.engine.numpy()), cache_dir="")
    for k in env:
        monkeypatch.delenv(k)
    return out, eng.info()["kernels"]


def check(m, x, monkeypatch):
    torch.manual_seed(0)
    m = m.eval()
    with torch.inference_mode():
        ref = m(x)
    runs = {}
    for name, env in (("native", {}), ("opencl", OFF)):
        out, ks = compiled_kernels(m, x, monkeypatch, env)
        err = (out - ref).abs()
        lim = 1e-4 + 1e-4 * ref.abs()
        assert bool((err <= lim).all()), f"{name}: max abs error {err.max().item()} (kernels {ks})"
        runs[name] = ks
    return runs


@pytest.mark.parametrize("c,e,k,hw,batch", [(8, 24, 3, 15, 1), (5, 13, 5, 9, 3)])
@pytest.mark.parametrize("kind", ["efficientnet", "mobilenetv3"])
def test_squeeze_excite(kind, c, e, k, hw, batch, monkeypatch):
    act, gate = (nn.SiLU, nn.Sigmoid) if kind == "efficientnet" else (nn.Hardswish, nn.Hardsigmoid)
    m = SE(c, e, k, act, gate, residual=batch == 1)
    runs = check(m, rand(batch, c, hw, hw, seed=1), monkeypatch)
    if onednn():
        assert all("(native)" in kd and "+cl-epilogue" not in kd for kd in runs["native"]), runs["native"]
        pools = [kd for kd in runs["opencl"] if "pool:" in kd or "elementwise:" in kd]
        assert pools and not any("(native)" in kd for kd in pools), runs["opencl"]


@pytest.mark.parametrize("c,affine", [(12, True), (13, False), (40, True)])
def test_convnext_block(c, affine, monkeypatch):
    """The layer norm and the layer scale + residual run natively (NATIVE_EW=0: OpenCL)."""
    runs = check(LayerScale(c, affine), rand(2, c, 9, 7, seed=2), monkeypatch)
    if onednn():
        ew = [kd for kd in runs["native"] if "elementwise:" in kd or "norm:" in kd]
        assert any("norm:" in kd for kd in ew) and all("(native)" in kd for kd in ew), runs["native"]
        assert not any("(native)" in kd for kd in runs["opencl"] if "norm:" in kd), runs["opencl"]


def test_adaptive_pool_not_global_stays_opencl(monkeypatch):
    runs = check(Mixed(6), rand(1, 6, 10, 9, seed=3), monkeypatch)
    if onednn():
        assert not any("(native)" in kd for kd in runs["native"] if "pool:" in kd or "elementwise:" in kd), \
            runs["native"]
