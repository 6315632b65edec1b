"""3x3 stride-1 native convolutions through oneDNN's Winograd kernel (backend/cpu/native_conv_dnnl.c,
the default; TORCHTRT_C_CONV_WINOGRAD=0 at build: the direct kernels only) against torch eager
(float64 reference) and against the direct kernel. Cases: channel counts on and off oneDNN's
16-blocks, odd image sizes, batch 1 and 3, bias + ReLU post-ops, a residual block, NHWC chains;
operands where Winograd would not give what the direct convolution gives (a NaN or inf pixel,
huge values: the call runs the direct kernel, so torch's NaN/inf pattern holds exactly) and
finite calls on the same engine afterwards. Tolerance: Winograd rounds differently from a direct
convolution (its transforms add and scale); measured max abs error about 1e-5 on O(1) outputs
(direct: 1e-6). The tests allow atol = rtol = 1e-4, as the other convolution tests."""
import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchtrt_c
import torchtrt_c._C as C
from convtest import rand

KNOBS = ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_CONV", "TORCHTRT_C_NATIVE_LAYOUT",
         "TORCHTRT_C_NATIVE_POST", "TORCHTRT_C_CONV_WINOGRAD")


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in KNOBS:
        monkeypatch.delenv(v, raising=False)
    # the default; set so that these tests run it whatever the caller's environment says
    monkeypatch.setenv("TORCHTRT_C_CONV_WINOGRAD", "1")


def onednn():
    n = C.native_cpu()
    return n["available"] and n.get("conv") == "onednn"


def wino_made():
    return C.native_cpu().get("conv_winograd_primitives", 0)


def avx512():
    # oneDNN 2.6 has Winograd kernels for AVX-512 cores only; elsewhere the direct ones run
    return onednn() and C.native_cpu().get("math_isa") == "avx512"


class Block(nn.Module):
    """ResNet's basic block with an extra 3x3 in front: conv-relu, conv-relu-conv + residual - relu."""

    def __init__(self, cin, c):
        super().__init__()
        self.a = nn.Conv2d(cin, c, 3, padding=1)
        self.b = nn.Conv2d(c, c, 3, padding=1)
        self.c = nn.Conv2d(c, c, 3, padding=1, bias=False)

    def forward(self, x):
        y = F.relu(self.a(x))
        return F.relu(self.c(F.relu(self.b(y))) + y)


def compile_run(m, x, monkeypatch, env=None):
    for k, v in (env or {}).items():
        monkeypatch.setenv(k, v)
    try:
        with torch.inference_mode():
            trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
            return trt, trt(x)
    finally:
        for k in env or {}:
            monkeypatch.delenv(k)


def check_close(out, ref, what):
    assert out.shape == ref.shape, f"{what}: shape {tuple(out.shape)}, eager {tuple(ref.shape)}"
    err = (out.double() - ref.double()).abs()
    lim = 1e-4 + 1e-4 * ref.double().abs()
    assert bool((err <= lim).all()), (f"{what}: max abs error {err.max().item():.3g} at "
                                      f"{np.unravel_index(int(err.argmax()), tuple(err.shape))}")


@pytest.mark.parametrize("cin,c,batch,hw", [(32, 32, 1, (13, 11)), (32, 48, 3, (9, 14)), (5, 17, 2, (7, 8)),
                                             (16, 16, 2, (10, 9))])
def test_block_winograd_and_direct(cin, c, batch, hw, monkeypatch):
    torch.manual_seed(cin + c)
    m = Block(cin, c).eval()
    x = rand(batch, cin, *hw, seed=c)
    with torch.inference_mode():
        ref = m.double()(x.double()).float()
        m.float()
    before = wino_made()
    _, out = compile_run(m, x, monkeypatch)
    made = wino_made() - before
    check_close(out, ref, "winograd (default)")
    if avx512() and cin % 16 == 0 and c % 16 == 0 and cin >= 32 and c >= 32:
        assert made >= 2, f"{made} Winograd primitives for 3 eligible convolutions ({C.native_cpu()})"
    if c < 32:
        # few channels: the transforms cost more than they save (native_conv_dnnl.c), direct kernels
        assert made == 0, f"{made} Winograd primitives for {cin}->{c} channel convolutions"
    before = wino_made()
    _, out = compile_run(m, x, monkeypatch, {"TORCHTRT_C_CONV_WINOGRAD": "0"})
    assert wino_made() == before, "TORCHTRT_C_CONV_WINOGRAD=0 made a Winograd primitive"
    check_close(out, ref, "direct (TORCHTRT_C_CONV_WINOGRAD=0)")


def test_not_for_other_shapes(monkeypatch):
    """Strided, dilated, grouped and 5x5 convolutions never ask for Winograd."""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.s2 = nn.Conv2d(16, 16, 3, stride=2, padding=1)
            self.d2 = nn.Conv2d(16, 16, 3, padding=2, dilation=2)
            self.g = nn.Conv2d(16, 32, 3, padding=1, groups=2)
            self.k5 = nn.Conv2d(32, 16, 5, padding=2)

        def forward(self, x):
            return self.k5(self.g(self.d2(self.s2(x))))

    torch.manual_seed(3)
    m = M().eval()
    x = rand(2, 16, 15, 13, seed=4)
    with torch.inference_mode():
        ref = m(x)
    before = wino_made()
    _, out = compile_run(m, x, monkeypatch)
    assert wino_made() == before
    check_close(out, ref, "no 3x3 stride-1 convolution")


@pytest.mark.parametrize("poison", ["nan", "inf", "-inf", "huge"])
def test_nonfinite_operands_take_direct(poison, monkeypatch):
    """A NaN/inf pixel (or values whose Winograd transforms could overflow) gives torch's exact
    NaN / inf pattern, the pixel's 3x3 neighbourhood, not its Winograd tiles: that call runs the
    direct kernel. The next call, finite, is right too (Winograd again)."""
    torch.manual_seed(5)
    m = nn.Conv2d(32, 32, 3, padding=1).eval()
    x = rand(2, 32, 21, 18, seed=6)
    before = wino_made()
    trt, _ = compile_run(m, x, monkeypatch)
    if avx512():
        assert wino_made() > before
    bad = x.clone()
    val = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "huge": 3e37}[poison]
    bad[1, 3, 9, 5] = val
    bad[0, 0, 0, 0] = val
    with torch.inference_mode():
        ref = m(bad)
        out = trt(bad)
        for what, f in (("NaN", torch.isnan), ("+inf", torch.isposinf), ("-inf", torch.isneginf)):
            assert torch.equal(f(out), f(ref)), (f"{poison}: {what} at {int(f(out).sum())} places, eager "
                                                 f"{int(f(ref).sum())}")
        fin = torch.isfinite(ref)
        if poison != "huge":
            assert 0 < int((~fin).sum()) <= 2 * 32 * 9, "the poisoned pixels reach their 3x3 neighbourhoods"
        check_close(out[fin], ref[fin], f"{poison}: finite outputs")
        check_close(trt(x), m.double()(x.double()).float(), "a finite call after the poisoned one")
        m.float()


@pytest.mark.parametrize("nhwc", [True, False])
@pytest.mark.parametrize("c,oc,hw", [(16, 32, (11, 13)), (64, 64, (8, 8)), (3, 16, (9, 9))])
def test_native_conv_hook(nhwc, c, oc, hw):
    """The bench hook's winograd=True (what engines do) against torch, both layouts."""
    if not onednn():
        pytest.skip("oneDNN is not in use on this device")
    x = rand(2, c, *hw, seed=c)
    w = rand(oc, c, 3, 3, seed=oc) / (9 * c) ** 0.5
    b = rand(oc, seed=1)
    ref = F.conv2d(x.double(), w.double(), b.double(), 1, 1).float()
    xa = x.permute(0, 2, 3, 1).contiguous().numpy() if nhwc else x.numpy()
    y = np.full((2, *hw, oc) if nhwc else (2, oc, *hw), np.nan, np.float32)
    C.native_conv(xa, w.numpy(), b.numpy(), y, (1, 1), (1, 1), nhwc=nhwc, runs=2, winograd=True)
    out = torch.from_numpy(y).permute(0, 3, 1, 2) if nhwc else torch.from_numpy(y)
    check_close(out, ref, f"native_conv winograd nhwc={nhwc}")


def test_winograd_many_calls_any_worker(monkeypatch):
    """Channel counts where oneDNN 2.6.3 takes jit_wino_4x3 (128 in, odd image): its primitive
    is made on the PoCL worker of the first call and run by whichever worker takes later calls.
    With oneDNN's library scratchpad (thread-local, sized on the creating thread) a worker that
    never made one ran it on a NULL buffer: the session-8 SIGSEGV (1 of 4 runs of this test
    crashed the interpreter before the fix; csrc/tests/test_native_conv_threads.c forces the
    other thread every time)."""
    torch.manual_seed(11)
    m = nn.Sequential(nn.Conv2d(128, 96, 3, padding=1), nn.ReLU(), nn.Conv2d(96, 128, 3, padding=1)).eval()
    x = rand(1, 128, 27, 29, seed=12)
    with torch.inference_mode():
        ref = m.double()(x.double()).float()
        m.float()
    before = wino_made()
    trt, out = compile_run(m, x, monkeypatch)
    if avx512():
        assert wino_made() > before, "no Winograd primitive for 128-channel 3x3 convolutions"
    with torch.inference_mode():
        for i in range(8):
            check_close(trt(x), ref, f"call {i + 1}")
