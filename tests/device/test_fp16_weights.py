"""fp16 engines store float32 weights in half (csrc/kir/const_half.c).

Float32 models compiled with enabled_precisions={torch.float16}: the engine's constants
(linear weights and biases, embedding tables, norm weights) are stored as float16, so GEMMs
read half. Checked against torch eager in float32 on the same float32 inputs, with the SIMT
GPU kernel families forced on this device too (TORCHTRT_C_KERNELS=gpu), and the constant
bytes the engine uploads (info()["const_bytes"]) are compared with the float32 engine's.

Tolerance: |got - ref| <= atol + rtol * |ref| with rtol = atol = 2e-2 (weights, inputs and
every intermediate rounded to half, u = 2^-11, through a few GEMMs and norms with float
accumulation).
"""
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchtrt_c
import torchtrt_c._C as C
from convtest import assert_close
from zoo import build as build_model


TOL = dict(atol=2e-2, rtol=2e-2)


def _kernels(request, monkeypatch):
    if request.param == "gpu":
        monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    else:
        monkeypatch.delenv("TORCHTRT_C_KERNELS", raising=False)
    return request.param


@pytest.fixture(params=["default", "gpu"])
def kernels(request, monkeypatch):
    """'default': the device's own kernel families; 'gpu': the GPU families forced."""
    return _kernels(request, monkeypatch)


@pytest.fixture(params=["default", pytest.param("gpu", marks=pytest.mark.slow)])
def kernels_big(request, monkeypatch):
    """As kernels, for the bigger graphs: the GPU families forced onto a CPU device (minutes on
    PoCL) run in the slow tier; test_linear / test_attention_block cover them by default, and on
    a GPU 'default' is the GPU families anyway."""
    return _kernels(request, monkeypatch)


def _compile(m, args, half):
    prec = {torch.float16} if half else {torch.float32}
    trt = torchtrt_c.compile(m, inputs=list(args), min_block_size=1, enabled_precisions=prec)
    eng = C.Engine.deserialize(bytes(trt._run_on_acc_0.engine.numpy()), cache_dir="")
    return trt, eng.info()


def _first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def check(m, args, what):
    """fp16 engine of float32 model m vs eager float32; returns (fp16 info, fp32 info)."""
    with torch.no_grad():
        ref = m(*args)
    trt16, i16 = _compile(m, args, True)
    _, i32 = _compile(m, args, False)
    assert i16["compute"].startswith("float16"), i16["compute"]
    got = trt16(*args)
    refs = ref if isinstance(ref, (tuple, list)) else [ref]
    gots = got if isinstance(got, (tuple, list)) else [got]
    assert len(gots) == len(refs)
    for g, r in zip(gots, refs):
        assert g.dtype == r.dtype, (g.dtype, r.dtype)
        assert_close(g.float(), r.float(), what=f"{what} [{i16['compute']}]", **TOL)
    return i16, i32


class MLP(nn.Module):
    def __init__(self, i, h, o):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(i, h), nn.Linear(h, h), nn.Linear(h, o)

    def forward(self, x):
        return self.fc3(F.gelu(self.fc2(F.relu(self.fc1(x)))))


class AttnBlock(nn.Module):
    """pre-norm attention + MLP block written with matmul/bmm (no SDPA)."""
    def __init__(self, d, heads):
        super().__init__()
        self.h = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)
        self.scale = nn.Parameter(torch.randn(d) * 0.1 + 1.0)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        a = torch.softmax(torch.matmul(q, k.transpose(-1, -2)) / (d // self.h) ** 0.5, dim=-1)
        y = torch.matmul(a, v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y) * self.scale
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class AddmmBmm(nn.Module):
    """torch.mm / torch.bmm with weight parameters used directly, a bias added after relu
    (torch.addmm with parameter operands, or matmul + bias lowered to it, currently fails in
    partitioning, fp32 too: "extract: unknown node")."""
    def __init__(self, k, n):
        super().__init__()
        self.w1 = nn.Parameter(torch.randn(k, n) / k ** 0.5)
        self.b1 = nn.Parameter(torch.randn(n))
        self.w2 = nn.Parameter(torch.randn(3, n, 7) / n ** 0.5)
        self.w3 = nn.Parameter(torch.randn(7, 5) / 7 ** 0.5)

    def forward(self, x):
        y = F.relu(torch.mm(x, self.w1)) + self.b1                # [3 * B, n]
        z = torch.bmm(y.reshape(3, -1, y.shape[1]), self.w2)      # [3, B, 7]
        return torch.mm(z.reshape(-1, 7), self.w3)


def _halved(i16, i32, what):
    """Every constant became half: the fp16 engine uploads half the float32 engine's bytes
    (kernels may read a few non-float constants, hence the small slack)."""
    assert i32["const_bytes"] > 0, what
    ratio = i16["const_bytes"] / i32["const_bytes"]
    assert ratio <= 0.51, f"{what}: fp16 engine constants {i16['const_bytes']} B vs fp32 {i32['const_bytes']} B"
    return ratio


def test_linear(kernels):
    torch.manual_seed(0)
    m = nn.Linear(67, 45).eval()
    x = torch.randn(3, 67)
    i16, i32 = check(m, (x,), "linear")
    _halved(i16, i32, "linear")
    assert i32["const_bytes"] == (67 * 45 + 45) * 4


def test_linear_batch1_3d(kernels_big):
    torch.manual_seed(1)
    m = nn.Linear(129, 33).eval()
    i16, i32 = check(m, (torch.randn(1, 5, 129),), "linear 3d")
    _halved(i16, i32, "linear 3d")


def test_mlp(kernels_big):
    torch.manual_seed(2)
    m = MLP(37, 91, 13).eval()
    i16, i32 = check(m, (torch.randn(1, 37),), "mlp")
    _halved(i16, i32, "mlp")


def test_mm_bmm(kernels_big):
    torch.manual_seed(3)
    m = AddmmBmm(29, 19).eval()
    i16, i32 = check(m, (torch.randn(6, 29),), "mm/bmm")
    _halved(i16, i32, "mm/bmm")


def test_attention_block(kernels):
    torch.manual_seed(4)
    m = AttnBlock(48, 4).eval()
    i16, i32 = check(m, (torch.randn(2, 11, 48),), "attention block")
    _halved(i16, i32, "attention block")


def test_bert_tiny(kernels_big):
    m, inp = build_model("bert_base", "tiny", seed=5)
    ids = inp(2)
    i16, i32 = check(m, (ids,), "bert tiny")
    _halved(i16, i32, "bert tiny")


def test_out_of_half_range_constant_kept_float():
    """A constant with a finite value beyond half's range stays float32 (it would otherwise
    become infinite); the result matches float32 eager."""
    class Big(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 4)
            self.register_buffer("big", torch.tensor([1e6, -2e5, 3.0, 0.5]))

        def forward(self, x):
            # one fused epilogue computes in float: only the constant itself is out of range
            return (self.fc(x) + self.big) * 1e-5

    torch.manual_seed(6)
    m = Big().eval()
    i16, i32 = check(m, (torch.randn(3, 8),), "out-of-range constant")
    # the linear's weight and bias are half, the buffer keeps its 16 bytes of float32
    assert i16["const_bytes"] == (8 * 4 + 4) * 2 + 4 * 4, (i16["const_bytes"], i32["const_bytes"])
