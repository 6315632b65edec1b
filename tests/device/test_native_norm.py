"""Layer norm as a native call (backend/cpu/native_norm.c) against torch eager, each engine built
twice: native (the default where the device runs native kernels) and with
TORCHTRT_C_NATIVE_NORM=0 (the OpenCL kernel, read when the engine is built). Cases: odd row
lengths (below and above the 16-lane blocks), weight and bias present or not, a normalized shape
of two dims, rows of a 3-D input (a transformer's [B, L, D]), an epilogue after the norm (scale +
residual), large offsets (mean 1e3, the two-pass variance), a dynamic batch; group norm stays an
OpenCL kernel. Tolerance: fp32 atol = rtol = 1e-4 (as the norm op cases)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torchtrt_c._C as C
from convtest import rand
from torchtrt_c import settings


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_NORM", "TORCHTRT_C_NATIVE_EPI",
              "TORCHTRT_C_NATIVE_EW"):
        monkeypatch.delenv(v, raising=False)


def T(shape):
    return ("tensor", "float32", list(shape))


def engine(build, inputs, native, monkeypatch, symbols=()):
    settings.set(NATIVE_NORM="1" if native else "0")
    settings.set(NATIVE_EW="1" if native else "0")   # the image-shaped rule (rank 4)
    g = C.Graph()
    for s in symbols:
        g.add_symbol(*s)
    names = {k: g.add_input(k, T(s)) for k, s in inputs.items()}
    n = [0]

    def const(t):
        n[0] += 1
        return g.add_tensor_constant(f"c{n[0]}", "float32", list(t.shape), t.contiguous().numpy())
    g.set_outputs([build(g, names, g.add_constant, const)])
    e = C.Engine.build(g, name="norm", cache_dir="")
    norms = [k for k in e.info()["kernels"] if " norm:" in k]
    assert norms, e.info()["kernels"]
    return e, norms


def check(e, xs, ref, what):
    out = np.full(tuple(ref.shape), np.nan, np.float32)
    e.execute([np.ascontiguousarray(x.numpy()) for x in xs], [out])
    err = np.abs(out - ref.numpy())
    lim = 1e-4 + 1e-4 * np.abs(ref.numpy())
    assert (err <= lim).all(), f"{what}: max abs error {err.max()} at {np.unravel_index(err.argmax(), err.shape)}"


CASES = [  # x shape, normalized shape, weight, bias, offset
    ((5, 7), (7,), True, True, 0.0),
    ((3, 33), (33,), False, False, 0.0),
    ((2, 13, 17), (17,), True, False, 0.0),
    ((2, 9, 48), (48,), False, True, 0.0),
    ((4, 5, 6), (5, 6), True, True, 0.0),
    ((1, 3, 100), (100,), True, True, 1e3),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c[0])) + f"-n{len(c[1])}"
                         + ("-w" if c[2] else "") + ("-b" if c[3] else "") + ("-offset" if c[4] else ""))
def test_layer_norm_native_and_opencl(case, monkeypatch):
    shape, ns, hw, hb, off = case
    x = rand(*shape, seed=1) + off
    w = rand(*ns, seed=2) if hw else None
    b = rand(*ns, seed=3) if hb else None
    ref = F.layer_norm(x, ns, w, b, 1e-5)

    def build(g, i, L, const):
        (y,) = g.add_node("aten.layer_norm.default", [i["x"], L(list(ns)), const(w) if hw else L(None),
                                                      const(b) if hb else L(None), L(1e-5), L(True)], [T(shape)])
        return y
    for native in (True, False):
        e, norms = engine(build, {"x": shape}, native, monkeypatch)
        if C.native_cpu()["available"]:
            assert all(("(native)" in k) == native for k in norms), (native, norms)
        check(e, [x], ref, f"native={native}")


def test_norm_then_epilogue_and_dynamic_batch(monkeypatch):
    """(layer_norm(x) * 0.5 + r) over a dynamic batch: the epilogue after the native norm."""
    D = 37
    w, b = rand(D, seed=4), rand(D, seed=5)

    def build(g, i, L, const):
        sh = ("tensor", "float32", ["s0", 3, D])
        (y,) = g.add_node("aten.layer_norm.default", [i["x"], L([D]), const(w), const(b), L(1e-6), L(True)], [sh])
        (y,) = g.add_node("aten.mul.Tensor", [y, L(0.5)], [sh])
        (y,) = g.add_node("aten.add.Tensor", [y, i["r"], L(1)], [sh])
        return y
    for native in (True, False):
        settings.set(NATIVE_NORM="1" if native else "0")
        settings.set(NATIVE_EW="1" if native else "0")
        g = C.Graph()
        g.add_symbol("s0", 1, 2, 8)
        i = {n: g.add_input(n, ("tensor", "float32", ["s0", 3, D])) for n in ("x", "r")}
        n = [0]

        def const(t):
            n[0] += 1
            return g.add_tensor_constant(f"c{n[0]}", "float32", list(t.shape), t.numpy())
        g.set_outputs([build(g, i, g.add_constant, const)])
        e = C.Engine.build(g, name="norm_dyn", cache_dir="")
        if C.native_cpu()["available"]:
            assert any(" norm:" in k and ("(native)" in k) == native for k in e.info()["kernels"]), e.info()["kernels"]
        for B in (1, 5):
            x, r = rand(B, 3, D, seed=B), rand(B, 3, D, seed=B + 1)
            check(e, [x, r], F.layer_norm(x, [D], w, b, 1e-6) * 0.5 + r, f"native={native} batch {B}")


def test_group_norm_stays_opencl(monkeypatch):
    x, w, b = rand(2, 6, 5, 5, seed=6), rand(6, seed=7), rand(6, seed=8)
    ref = F.group_norm(x, 3, w, b, 1e-5)

    def build(g, i, L, const):
        (y,) = g.add_node("aten.group_norm.default", [i["x"], L(3), const(w), const(b), L(1e-5), L(True)],
                          [T(x.shape)])
        return y
    e, norms = engine(build, {"x": x.shape}, True, monkeypatch)
    assert not any("(native)" in k for k in norms), norms
    check(e, [x], ref, "group norm")
