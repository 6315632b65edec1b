"""exp / erf / tanh / GELU (erf and tanh forms) / sigmoid / SiLU steps inside native GEMM calls
(backend/cpu/native_math.c through backend/cpu/native_epi.c), each engine built twice: with the steps in
the native call (the default) and with TORCHTRT_C_NATIVE_EPI_MATH=0 (an OpenCL epilogue kernel
after the call, read when the engine is built). Kernel descriptions say which way each ran.

Two kinds of check:
- accuracy over the whole float range: act(0 @ W + r) for r holding tiny, moderate, large,
  overflowing, infinite and NaN values (the GEMM gives exact zeros, the residual add is exact),
  against float64 references: finite values within 1e-6 relative (a few ulps) or 1e-37 absolute
  (denormals), inf/NaN exactly where the reference has them;
- transformer-shaped epilogues on odd sizes (bias + GELU, bias + GELU + residual, a batched
  matmul with SiLU) against torch eager, 1e-4.
Where the device has no native path the cases still compare with torch."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torchtrt_c._C as C
from convtest import rand
from torchtrt_c import settings


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_CONV", "TORCHTRT_C_NATIVE_EPI",
              "TORCHTRT_C_NATIVE_EPI_MATH"):
        monkeypatch.delenv(v, raising=False)
    # a GEMM's bias + activation would be oneDNN post-ops (tests/device/test_native_gemm_post.py):
    # the steps tested here are the C ones after the call
    settings.set(NATIVE_GEMM_POST="0")


def T(shape):
    return ("tensor", "float32", list(shape))


def gelu_tanh64(x):
    """x/2 (1 + tanh(u)) as x sigmoid(2u): the same value without the cancellation for u << 0"""
    u = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)
    return x / (1.0 + torch.exp(-2.0 * u))


# name: (aten op, extra literal args, float64 reference)
ACTS = {
    "gelu_erf": ("aten.gelu.default", ["none"], lambda x: 0.5 * x * torch.special.erfc(-x / math.sqrt(2.0))),
    "gelu_tanh": ("aten.gelu.default", ["tanh"], gelu_tanh64),
    "tanh": ("aten.tanh.default", [], torch.tanh),
    "sigmoid": ("aten.sigmoid.default", [], torch.sigmoid),
    "silu": ("aten.silu.default", [], lambda x: x / (1.0 + torch.exp(-x))),
    "exp": ("aten.exp.default", [], torch.exp),
    "erf": ("aten.erf.default", [], torch.erf),
}


def act_node(g, L, name, y, shape):
    op, extra, _ = ACTS[name]
    (y,) = g.add_node(op, [y] + [L(v) for v in extra], [T(shape)])
    return y


def build_and_run(g, inputs, out_shape, math_on, monkeypatch):
    settings.set(NATIVE_EPI_MATH="1" if math_on else "0")
    e = C.Engine.build(g, name="epi_math", cache_dir="")
    out = np.full(tuple(out_shape), np.nan, np.float32)
    e.execute([np.ascontiguousarray(t.numpy()) for t in inputs], [out])
    ks = e.info()["kernels"]
    nat = [k for k in ks if "(native)" in k]
    info = C.native_cpu()
    if info["available"]:
        assert nat, ks
        fused = math_on and info["epi_math"]
        assert all(("+cl-epilogue" in k) != fused for k in nat), (math_on, ks)
    return out


def special_values():
    v = [0.0, -0.0, 1e-30, -1e-30, 1e-7, -1e-7, 0.1, -0.1, 0.29, 0.31, -0.3, 0.49, 0.51, -0.5, 1.0, -1.0,
         2.0, -2.0, 3.7, -3.7, 5.0, -5.0, 9.0, -9.0, 10.4, 10.6, -10.6, 14.0, -14.0, 20.0, -20.0, 80.0,
         88.5, 88.8, -87.0, -88.0, -100.0, -103.0, -104.5, 89.5, 200.0, -200.0, 1e30, -1e30,
         math.inf, -math.inf, math.nan]
    g = torch.Generator().manual_seed(3)
    wide = (torch.rand(400, generator=g, dtype=torch.float64) * 2 - 1) * 12
    return torch.cat([torch.tensor(v, dtype=torch.float64), wide]).to(torch.float32)


def check_close(out, x, ref64, what, cond=None):
    """ref64: the float64 reference at inputs x; its float32 rounding says where inf is due.
    cond: extra relative error allowed per element (an argument rounded in float32 first)."""
    out64 = torch.from_numpy(out).to(torch.float64)
    ref32 = ref64.to(torch.float32).to(torch.float64)
    nan_ref, nan_out = torch.isnan(ref64), torch.isnan(out64)
    assert torch.equal(nan_ref, nan_out), f"{what}: NaN differs at inputs {x[nan_ref != nan_out]}"
    inf = torch.isinf(ref32)
    assert torch.equal(out64[inf], ref32[inf]), f"{what}: infinities differ at inputs {x[inf]}: {out64[inf]}"
    fin = ~nan_ref & ~inf
    err = (out64[fin] - ref64[fin]).abs()
    rel = 1e-6 if cond is None else 1e-6 + cond[fin]
    lim = rel * ref64[fin].abs() + 1e-37
    bad = err > lim
    assert not bad.any(), (f"{what}: {int(bad.sum())} values off, first at input {x[fin][bad][0].item()!r}: "
                           f"got {out64[fin][bad][0].item()!r}, want {ref64[fin][bad][0].item()!r}; "
                           f"max rel err {(err / ref64[fin].abs().clamp_min(1e-37)).max().item():.3g}")


@pytest.mark.parametrize("name", sorted(ACTS))
@pytest.mark.parametrize("math_on", [True, False], ids=["native", "opencl"])
def test_activation_accuracy_whole_range(name, math_on, monkeypatch):
    vals = special_values()
    n_cols = 37   # rows of 37: tiles of 128 elements end mid-row
    rows = (vals.numel() + n_cols - 1) // n_cols
    r = torch.zeros(rows * n_cols)
    r[:vals.numel()] = vals
    r = r.reshape(rows, n_cols)
    k = 5
    x, w = torch.zeros(rows, k), rand(n_cols, k, seed=1)
    g = C.Graph()
    xi, ri = g.add_input("x", T(x.shape)), g.add_input("r", T(r.shape))
    wi = g.add_tensor_constant("w", "float32", list(w.shape), w.numpy())
    (y,) = g.add_node("aten.linear.default", [xi, wi, g.add_constant(None)], [T(r.shape)])
    (y,) = g.add_node("aten.add.Tensor", [y, ri, g.add_constant(1)], [T(r.shape)])
    g.set_outputs([act_node(g, g.add_constant, name, y, r.shape)])
    out = build_and_run(g, [x, r], r.shape, math_on, monkeypatch)
    ref = ACTS[name][2](r.to(torch.float64))
    x64 = r.to(torch.float64)
    # GELU's tanh form takes exp(-2|u|) of u = 0.798 (x + 0.045 x^3) rounded to float32: its
    # rounding (2^-24 relative) scales the result by up to 2|u| 2^-24 more, whoever computes it
    cond = (2 * math.sqrt(2 / math.pi) * (x64 + 0.044715 * x64 ** 3)).abs() * 2.0 ** -23 if name == "gelu_tanh" else None
    check_close(out, x64, ref, f"{name} ({'native' if math_on else 'opencl'})", cond)


def run_case(inputs, build, ref, out_shape, monkeypatch):
    for math_on in (True, False):
        g = C.Graph()
        names = {k: g.add_input(k, T(t.shape)) for k, t in inputs.items()}
        n = [0]

        def const(t):
            n[0] += 1
            return g.add_tensor_constant(f"c{n[0]}", "float32", list(t.shape), t.contiguous().numpy())
        g.set_outputs([build(g, names, g.add_constant, const)])
        out = build_and_run(g, list(inputs.values()), out_shape, math_on, monkeypatch)
        err = np.abs(out - ref.numpy())
        lim = 1e-4 + 1e-4 * np.abs(ref.numpy())
        assert (err <= lim).all(), (f"math_on={math_on}: max abs error {err.max()} at "
                                    f"{np.unravel_index(err.argmax(), err.shape)}")


@pytest.mark.parametrize("m,k,n", [(1, 7, 3), (33, 20, 17), (130, 37, 70)])
@pytest.mark.parametrize("form", ["gelu_erf", "gelu_tanh"])
def test_linear_bias_gelu(m, k, n, form, monkeypatch):
    """BERT's / GPT-2's FFN up-projection: linear + bias + GELU (3-D input as the models give)."""
    x, w, b = rand(1, m, k, seed=2), rand(n, k, seed=3) / k ** 0.5, rand(n, seed=4)
    approx = "tanh" if form == "gelu_tanh" else "none"
    ref = torch.nn.functional.gelu(torch.nn.functional.linear(x, w, b), approximate=approx)

    def build(g, i, L, const):
        (y,) = g.add_node("aten.linear.default", [i["x"], const(w), const(b)], [T((1, m, n))])
        return act_node(g, L, form, y, (1, m, n))
    run_case({"x": x}, build, ref, (1, m, n), monkeypatch)


@pytest.mark.parametrize("m,k,n", [(5, 9, 11), (67, 33, 129)])
def test_linear_gelu_scale_residual(m, k, n, monkeypatch):
    """A longer epilogue mixing math and cheap steps: (gelu(x w^T + b) * 0.5) + r."""
    x, w, b, r = rand(m, k, seed=5), rand(n, k, seed=6) / k ** 0.5, rand(n, seed=7), rand(m, n, seed=8)
    ref = torch.nn.functional.gelu(torch.nn.functional.linear(x, w, b)) * 0.5 + r

    def build(g, i, L, const):
        (y,) = g.add_node("aten.linear.default", [i["x"], const(w), const(b)], [T((m, n))])
        y = act_node(g, L, "gelu_erf", y, (m, n))
        (y,) = g.add_node("aten.mul.Tensor", [y, L(0.5)], [T((m, n))])
        (y,) = g.add_node("aten.add.Tensor", [y, i["r"], L(1)], [T((m, n))])
        return y
    run_case({"x": x, "r": r}, build, ref, (m, n), monkeypatch)


def test_bmm_silu_sigmoid(monkeypatch):
    """Batched matmul (Llama's gate: silu) times a sigmoid of the same result: two math steps."""
    a, b = rand(3, 9, 14, seed=9), rand(3, 14, 13, seed=10) / 14 ** 0.5
    y0 = torch.bmm(a, b)
    ref = torch.nn.functional.silu(y0) * torch.sigmoid(y0)

    def build(g, i, L, const):
        sh = (3, 9, 13)
        (y,) = g.add_node("aten.bmm.default", [i["a"], i["b"]], [T(sh)])
        (s,) = g.add_node("aten.silu.default", [y], [T(sh)])
        (t,) = g.add_node("aten.sigmoid.default", [y], [T(sh)])
        (y,) = g.add_node("aten.mul.Tensor", [s, t], [T(sh)])
        return y
    run_case({"a": a, "b": b}, build, ref, (3, 9, 13), monkeypatch)


@pytest.mark.parametrize("m,k,n", [(3, 8, 5), (37, 19, 41)])
def test_gelu_new_pow_cube_and_square(m, k, n, monkeypatch):
    """GPT-2's gelu_new spelled out (pow(x, 3), tanh) and a square: x^2 and x^3 are products in
    the native call; pow(x, 2.5) keeps the OpenCL epilogue."""
    x, w, b = rand(m, k, seed=11), rand(n, k, seed=12) / k ** 0.5, rand(n, seed=13)
    y = F.linear(x, w, b)
    ref = 0.5 * y * (1.0 + torch.tanh(0.7978845608 * (y + 0.044715 * torch.pow(y, 3.0)))) + torch.pow(y, 2.0)

    def build(g, i, L, const):
        sh = (m, n)
        (y,) = g.add_node("aten.linear.default", [i["x"], const(w), const(b)], [T(sh)])
        (c,) = g.add_node("aten.pow.Tensor_Scalar", [y, L(3.0)], [T(sh)])
        (c,) = g.add_node("aten.mul.Tensor", [c, L(0.044715)], [T(sh)])
        (c,) = g.add_node("aten.add.Tensor", [y, c, L(1)], [T(sh)])
        (c,) = g.add_node("aten.mul.Tensor", [c, L(0.7978845608)], [T(sh)])
        (c,) = g.add_node("aten.tanh.default", [c], [T(sh)])
        (c,) = g.add_node("aten.add.Tensor", [c, L(1.0), L(1)], [T(sh)])
        (c,) = g.add_node("aten.mul.Tensor", [c, y], [T(sh)])
        (c,) = g.add_node("aten.mul.Tensor", [c, L(0.5)], [T(sh)])
        (s,) = g.add_node("aten.pow.Tensor_Scalar", [y, L(2.0)], [T(sh)])
        (c,) = g.add_node("aten.add.Tensor", [c, s, L(1)], [T(sh)])
        return c
    run_case({"x": x}, build, ref, (m, n), monkeypatch)

    def build25(g, i, L, const):
        (y,) = g.add_node("aten.linear.default", [i["x"], const(w), const(b)], [T((m, n))])
        (y,) = g.add_node("aten.abs.default", [y], [T((m, n))])
        (y,) = g.add_node("aten.pow.Tensor_Scalar", [y, L(2.5)], [T((m, n))])
        return y
    g = C.Graph()
    xi = g.add_input("x", T(x.shape))
    g.set_outputs([build25(g, {"x": xi}, g.add_constant,
                           lambda t: g.add_tensor_constant(f"c{t.numel()}_{t.shape[0]}", "float32", list(t.shape),
                                                           t.contiguous().numpy()))])
    e = C.Engine.build(g, name="pow25", cache_dir="")
    if C.native_cpu()["available"]:
        assert any("(native) +cl-epilogue" in kk for kk in e.info()["kernels"]), e.info()["kernels"]
    out = np.empty((m, n), np.float32)
    e.execute([x.numpy()], [out])
    want = torch.pow(y.abs(), 2.5).numpy()
    assert np.abs(out - want).max() <= 1e-4 + 1e-4 * np.abs(want).max()
