"""fp16 engines: which arithmetic they use, and differential checks against torch.

An fp16 engine computes elementwise/epilogue math in half where the device can (cl_khr_fp16
advertised, or a probe program with half arithmetic builds and answers exactly: NVIDIA), and in
float over half storage elsewhere (PoCL here). info()["compute"] says which;
TORCHTRT_C_HALF_COMPUTE=0 forces the float path. Every check below runs on whichever path the
device takes, and the forced-float path is checked on every device too.

Reference: torch on the same half inputs computed in float32 (exact inputs, one final rounding).
Tolerances (|got - ref| <= atol + rtol * |ref|), from the half rounding unit u = 2^-11 ~ 4.9e-4:
  one op (activations, binary ops):       rtol 2e-3, atol 2e-3  (a few u: operands/ops rounded
                                                                 in half, libm ops once)
  chains of <= 6 elementwise ops:        rtol 6e-3, atol 6e-3  (one rounding per half op)
  norms/softmax (float accumulation):     rtol 4e-3, atol 4e-3
"""
import os

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import torchtrt_c
import torchtrt_c._C as C
from convtest import assert_close, build, call_aten, rand, run


COMPUTE = ("float16 (half arithmetic)", "float16 (float arithmetic)")
ONE = dict(atol=2e-3, rtol=2e-3)
CHAIN = dict(atol=6e-3, rtol=6e-3)
NORM = dict(atol=4e-3, rtol=4e-3)


@pytest.fixture(params=["device", "float"])
def path(request, monkeypatch):
    """'device': the path the device takes; 'float': half arithmetic forced off."""
    if request.param == "float":
        monkeypatch.setenv("TORCHTRT_C_HALF_COMPUTE", "0")
    else:
        monkeypatch.delenv("TORCHTRT_C_HALF_COMPUTE", raising=False)
    return request.param


def engine_of(op, args, outs, precision="fp16"):
    _, e = build(op, args, outs, precision=precision)
    return e


def check_half(op, args, tol, ref=None, path=None):
    """Builds op over half tensors in an fp16 engine; compares with the float32 computation on
    the same (half) values. Returns the engine."""
    f32 = [a.float() if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]
    with torch.no_grad():
        r = ref(*f32) if ref else call_aten(op, f32)
    out_like = r.half() if r.is_floating_point() else r
    e = engine_of(op, args, [out_like])
    got, = run(e, args, [out_like])
    assert_close(got.float(), r, what=f"{op} [{e.info()['compute']}]", **tol)
    if path == "float":
        assert e.info()["compute"] == "float16 (float arithmetic)"
    return e


def test_compute_path_reported(path):
    x = rand(5, 7, dtype=torch.float16)
    e16 = engine_of("aten.relu.default", [x], [x])
    info = e16.info()
    assert info["compute"] in COMPUTE
    half = info["compute"] == COMPUTE[0]
    # the generated program says the same: the extension pragma and direct half loads only
    # on the half path, vload_half/vstore_half only on the float path
    assert ("cl_khr_fp16" in info["source"]) == half
    assert ("vload_half" in info["source"]) == (not half)
    if path == "float":
        assert not half
    e32 = engine_of("aten.relu.default", [x.float()], [x.float()], precision="fp32")
    assert e32.info()["compute"] == "float32"


def test_pocl_takes_float_path():
    """PoCL's CPU device has no half arithmetic: its fp16 engines must take the float path."""
    dev = C.devices()[C.default_device()]
    if "Portable Computing Language" not in dev["platform"]:
        pytest.skip("not PoCL")
    os.environ.pop("TORCHTRT_C_HALF_COMPUTE", None)
    e = engine_of("aten.relu.default", [rand(3, 3, dtype=torch.float16)], [rand(3, 3, dtype=torch.float16)])
    assert e.info()["compute"] == COMPUTE[1]


UNARY = [  # (op, extra schema args, domain: "abs" feeds |x|)
    ("aten.relu.default", [], None), ("aten.sigmoid.default", [], None), ("aten.tanh.default", [], None),
    ("aten.silu.default", [], None), ("aten.hardswish.default", [], None), ("aten.hardsigmoid.default", [], None),
    ("aten.gelu.default", ["none"], None), ("aten.exp.default", [], None), ("aten.neg.default", [], None),
    ("aten.abs.default", [], None), ("aten.reciprocal.default", [], None), ("aten.floor.default", [], None),
    ("aten.sqrt.default", [], "abs"), ("aten.rsqrt.default", [], "abs"),
]


@pytest.mark.parametrize("op,extra,dom", UNARY, ids=[u[0].split(".")[1] for u in UNARY])
def test_unary(op, extra, dom, path):
    x = rand(3, 37, 5, dtype=torch.float16, seed=op)
    if dom == "abs":
        x = x.abs()
    check_half(op, [x] + extra, ONE, path=path)


def test_gelu_tanh(path):
    x = rand(61, 9, dtype=torch.float16)
    check_half("aten.gelu.default", [x, "tanh"], ONE, path=path)


BINARY = ["aten.add.Tensor", "aten.sub.Tensor", "aten.mul.Tensor", "aten.div.Tensor", "aten.maximum.default",
          "aten.minimum.default"]


@pytest.mark.parametrize("op", BINARY, ids=[b.split(".")[1] for b in BINARY])
def test_binary_broadcast(op, path):
    x = rand(4, 33, 17, dtype=torch.float16, seed=1)
    y = rand(33, 1, dtype=torch.float16, seed=2)   # broadcast leaf: strided loads
    check_half(op, [x, y] + ([1] if op in ("aten.add.Tensor", "aten.sub.Tensor") else []), ONE, path=path)


def test_where_and_compare(path):
    x = rand(7, 29, dtype=torch.float16, seed=3)
    y = rand(7, 29, dtype=torch.float16, seed=4)
    check_half("aten.where.self", [x > y, x, y], ONE, path=path)
    check_half("aten.lt.Tensor", [x, y], ONE, path=path)


class Chain(nn.Module):
    """A fused elementwise chain mixing half ops and float (libm) ops."""

    def forward(self, x, y):
        a = x * 1.5 + y
        b = torch.clamp(a, -2.0, 3.0) - 0.25 * y
        return torch.sigmoid(b) * x + F.hardswish(a) / 2.0


class NormNet(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.ln = nn.LayerNorm(n)

    def forward(self, x):
        return torch.softmax(self.ln(x) * 2.0, dim=-1) + F.relu(x)


def _compiled(m, args, path):
    trt = torchtrt_c.compile(m, inputs=list(args), min_block_size=1, enabled_precisions={torch.float16})
    acc = trt._run_on_acc_0
    eng = C.Engine.deserialize(bytes(acc.engine.numpy()), cache_dir="")
    info = eng.info()
    if path == "float":
        assert info["compute"] == COMPUTE[1]
    return trt, info


def test_fused_chain(path):
    x = rand(3, 45, 11, dtype=torch.float16, seed=5)
    y = rand(3, 45, 11, dtype=torch.float16, seed=6)
    m = Chain().eval()
    trt, info = _compiled(m.half(), (x, y), path)
    assert info["n_kernels"] == 1, info["kernels"]
    with torch.no_grad():
        ref = Chain()(x.float(), y.float())
    assert_close(trt(x, y).float(), ref, what=f"chain [{info['compute']}]", **CHAIN)


def test_norm_softmax(path):
    x = rand(6, 77, dtype=torch.float16, seed=7)
    m = NormNet(77).eval()
    with torch.no_grad():
        m.ln.weight.copy_(torch.linspace(0.5, 1.5, 77))
        m.ln.bias.copy_(torch.linspace(-0.2, 0.2, 77))
    ref_m = NormNet(77).eval()
    ref_m.load_state_dict(m.state_dict())
    trt, info = _compiled(m.half(), (x,), path)
    with torch.no_grad():
        ref = ref_m(x.float())
    assert_close(trt(x).float(), ref, what=f"layernorm+softmax [{info['compute']}]", **NORM)
