"""Bias and activations as oneDNN matmul post-ops of native GEMMs (backend/cpu/native_post.c,
native_gemm_dnnl.c) against torch eager. Each graph is built with the post-ops (the default
where oneDNN's matmul runs the GEMM: kernel descriptions end in "+post") and with
TORCHTRT_C_NATIVE_GEMM_POST=0 (bias + activation in C after the call, as before), both read when
the engine is built. Cases: nn.Linear (B as [N,K]) and addmm (GPT-2's Conv1D, B as [K,N]), with
and without bias, every activation the plan maps for GEMMs (GELU erf and tanh, SiLU, sigmoid,
tanh, hardswish) and ReLU (kept in C: oneDNN's relu turns NaN into 0, so only the bias is a
post-op), a residual add after the activation (the rest of the epilogue in C), odd M/N/K, a
linear over [batch, seq, K] (one GEMM of batch*seq rows), and the whole path through
torchtrt_c.compile on a transformer MLP. Where oneDNN or the native path is missing the cases
still compare with torch and the "+post" assertions are skipped.
Tolerance: fp32 atol = rtol = 1e-4 (operands scaled for O(1) outputs; oneDNN's GELU/tanh
approximations and the summation order differ from torch's by ~1e-6)."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torchtrt_c
import torchtrt_c._C as C
from convtest import rand
from torchtrt_c import settings

TOL = 1e-4

ACTS = {
    "none": (None, lambda y: y),
    "gelu": (("aten.gelu.default", ["none"]), F.gelu),
    "gelu_tanh": (("aten.gelu.default", ["tanh"]), lambda y: F.gelu(y, approximate="tanh")),
    "silu": (("aten.silu.default", []), F.silu),
    "sigmoid": (("aten.sigmoid.default", []), torch.sigmoid),
    "tanh": (("aten.tanh.default", []), torch.tanh),
    "hardswish": (("aten.hardswish.default", []), F.hardswish),
    "relu": (("aten.relu.default", []), torch.relu),
}
# post-ops inside oneDNN for these (ReLU stays in C: only a bias goes in)
MAPPED = {"gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "hardswish"}

# (x shape, N): odd M/N/K, M = 1, and a rank-3 input
SHAPES = {
    "1x17->3": ((1, 17), 3),
    "3x769->17": ((3, 769), 17),
    "129x3->130": ((129, 3), 130),
    "2x5x24->97": ((2, 5, 24), 97),
}


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_GEMM", "TORCHTRT_C_NATIVE_EPI",
              "TORCHTRT_C_NATIVE_GEMM_POST", "TORCHTRT_C_NATIVE_POST_HSWISH"):
        monkeypatch.delenv(v, raising=False)
    # GEMMs of a few rows with a constant [N, K] weight go to the C GEMV (post-ops in C after
    # it: test_native_gemv.py): here they go to oneDNN's matmul, whose post-ops are the subject
    settings.set(NATIVE_GEMV_ROWS=0)


def T(shape):
    return ("tensor", "float32", list(shape))


def gemm_graph(xs, w, b, act, addmm, residual):
    g = C.Graph()
    xi = g.add_input("x", T(xs))
    L = g.add_constant
    n = w.shape[0]
    ot = T(list(xs[:-1]) + [n])
    ri = g.add_input("r", ot) if residual else None
    if addmm:   # GPT-2's Conv1D: addmm(bias, x, W[K,N]) over 2-D x
        wc = g.add_tensor_constant("w", "float32", [w.shape[1], n], w.t().contiguous().numpy())
        if b is not None:
            bc = g.add_tensor_constant("b", "float32", [n], b.numpy())
            (y,) = g.add_node("aten.addmm.default", [bc, xi, wc, L(1), L(1)], [ot])
        else:
            (y,) = g.add_node("aten.mm.default", [xi, wc], [ot])
    else:
        wc = g.add_tensor_constant("w", "float32", list(w.shape), w.contiguous().numpy())
        bc = g.add_tensor_constant("b", "float32", [n], b.numpy()) if b is not None else L(None)
        (y,) = g.add_node("aten.linear.default", [xi, wc, bc], [ot])
    if ACTS[act][0]:
        op, extra = ACTS[act][0]
        (y,) = g.add_node(op, [y] + [L(v) for v in extra], [ot])
    if ri is not None:
        (y,) = g.add_node("aten.add.Tensor", [y, ri, L(1)], [ot])
    g.set_outputs([y])
    return g


def check(shape, act, monkeypatch, bias=True, addmm=False, residual=False):
    xs, n = SHAPES[shape]
    k = xs[-1]
    x = rand(*xs, seed=len(xs) + k)
    w = rand(n, k, seed=n) / k ** 0.5
    b = rand(n, seed=k + 1) if bias else None
    with torch.no_grad():
        y = ACTS[act][1](F.linear(x, w, b))
        r = rand(*y.shape, seed=5) if residual else None
        ref = (y + r if r is not None else y).numpy()
    inputs = [x.numpy()] + ([r.numpy()] if r is not None else [])
    native = C.native_cpu()
    dnnl = native["available"] and native.get("gemm") == "onednn"
    for post in ("1", "0"):
        settings.set(NATIVE_GEMM_POST=post)
        e = C.Engine.build(gemm_graph(xs, w, b, act, addmm, residual), name="gpost", cache_dir="")
        ks = [kd for kd in e.info()["kernels"] if "gemm" in kd]
        if dnnl:
            fused = bias or act in MAPPED
            assert len(ks) == 1 and ("+post" in ks[0]) == (post == "1" and fused), (post, ks)
        before = C.native_cpu()["gemm_onednn_post_calls"]
        out = np.full(ref.shape, np.nan, np.float32)
        e.execute(inputs, [out])
        ran = C.native_cpu()["gemm_onednn_post_calls"] - before
        if dnnl:
            assert ran == (1 if post == "1" and fused else 0), (post, ran)
        err = np.abs(out - ref)
        lim = TOL + TOL * np.abs(ref)
        assert (err <= lim).all(), (f"NATIVE_GEMM_POST={post} {shape} {act} bias={bias} addmm={addmm}: max abs "
                                    f"error {err.max()} at {np.unravel_index(err.argmax(), err.shape)}")


@pytest.mark.parametrize("act", list(ACTS))
@pytest.mark.parametrize("shape", ["3x769->17", "2x5x24->97"])
def test_linear_activation(shape, act, monkeypatch):
    check(shape, act, monkeypatch)


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("act", ["none", "gelu"])
def test_shapes(shape, act, monkeypatch):
    check(shape, act, monkeypatch)


@pytest.mark.parametrize("act", ["none", "gelu", "silu", "relu"])
def test_no_bias(act, monkeypatch):
    check("129x3->130", act, monkeypatch, bias=False)


@pytest.mark.parametrize("act", ["none", "gelu_tanh"])
@pytest.mark.parametrize("bias", [True, False])
def test_addmm(act, bias, monkeypatch):
    check("3x769->17", act, monkeypatch, bias=bias, addmm=True)


@pytest.mark.parametrize("act", ["gelu", "relu", "none"])
def test_residual_after(act, monkeypatch):
    check("2x5x24->97", act, monkeypatch, residual=True)


class _Mlp(torch.nn.Module):
    """A transformer MLP: linear + GELU, linear + residual, over [batch, seq, d]."""

    def __init__(self, d, h, act):
        super().__init__()
        self.a = torch.nn.Linear(d, h)
        self.b = torch.nn.Linear(h, d)
        self.act = act

    def forward(self, x):
        return self.b(self.act(self.a(x))) + x


@pytest.mark.parametrize("act", [F.gelu, F.silu], ids=["gelu", "silu"])
@pytest.mark.parametrize("post", ["1", "0"])
def test_compiled_mlp(act, post, monkeypatch):
    settings.set(NATIVE_GEMM_POST=post)
    torch.manual_seed(3)
    m = _Mlp(24, 73, act).eval()
    x = torch.randn(3, 7, 24)
    native = C.native_cpu()
    before = native["gemm_onednn_post_calls"]
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    with torch.no_grad():
        ref = m(x)
        out = trt(x)
    assert torch.allclose(out, ref, atol=TOL, rtol=TOL), f"post={post}: max abs error {(out - ref).abs().max()}"
    if native["available"] and native["gemm"] == "onednn":
        ran = C.native_cpu()["gemm_onednn_post_calls"] - before
        assert (ran >= 2) if post == "1" else ran == 0, (post, ran)


@pytest.mark.parametrize("name", ["gelu_erf", "gelu_tanh", "tanh", "sigmoid", "silu"])
def test_activation_accuracy_whole_range(name, monkeypatch):
    """act(0 @ W + bias) with the bias holding tiny, moderate, large, overflowing, infinite and
    NaN values (the GEMM gives exact zeros, so oneDNN's post-ops see exactly these) against the
    float64 references of test_native_epi_math.py: NaN and inf exactly where they are due, finite
    values within 1e-6 relative + 5e-7 absolute. (oneDNN's polynomial erf/exp are looser than the
    C steps' 1e-6 relative in the tails: GELU's -2 ... -10 are off by up to 3.3e-7 absolute, 1.5e-4
    relative where |GELU| > 1e-3, and its tiny values flush to 0; below fp32 GEMM noise on O(1)
    outputs.)"""
    from test_native_epi_math import ACTS as MATH_ACTS, act_node, special_values
    vals = special_values()
    rows, n, k = 3, vals.numel(), 5
    x, w = torch.zeros(rows, k), rand(n, k, seed=1)
    g = C.Graph()
    xi = g.add_input("x", T(x.shape))
    wi = g.add_tensor_constant("w", "float32", [n, k], w.numpy())
    bi = g.add_tensor_constant("b", "float32", [n], vals.numpy())
    (y,) = g.add_node("aten.linear.default", [xi, wi, bi], [T((rows, n))])
    g.set_outputs([act_node(g, g.add_constant, name, y, (rows, n))])
    e = C.Engine.build(g, name="gpost_acc", cache_dir="")
    native = C.native_cpu()
    if native["available"] and native["gemm"] == "onednn":
        assert any("+post" in kd for kd in e.info()["kernels"]), e.info()["kernels"]
    out = np.full((rows, n), np.nan, np.float32)
    e.execute([x.numpy()], [out])
    x64 = vals.to(torch.float64).expand(rows, n)
    ref = MATH_ACTS[name][2](x64)
    out64 = torch.from_numpy(out).to(torch.float64)
    ref32 = ref.to(torch.float32).to(torch.float64)
    nan_ref, nan_out = torch.isnan(ref), torch.isnan(out64)
    assert torch.equal(nan_ref, nan_out), f"{name}: NaN differs at inputs {x64[nan_ref != nan_out]}"
    inf = torch.isinf(ref32)
    assert torch.equal(out64[inf], ref32[inf]), f"{name}: infinities differ at inputs {x64[inf]}: {out64[inf]}"
    fin = ~nan_ref & ~inf
    err = (out64 - ref).abs()[fin]
    bad = err > 1e-6 * ref[fin].abs() + 5e-7
    assert not bad.any(), (f"{name}: {int(bad.sum())} values off, first at input {x64[fin][bad][0].item()!r}: got "
                           f"{out64[fin][bad][0].item()!r}, want {ref[fin][bad][0].item()!r}; max abs err {err.max()}")
