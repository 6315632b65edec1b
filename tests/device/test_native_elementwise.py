"""Elementwise ops between native calls (backend/cpu/native_ops.c: a float32 elementwise op reading a
native GEMM / attention / layer norm result runs as a native call through native_epi.c's
expression evaluator) against torch eager, each engine built twice: native (the default where
the device runs native kernels) and with TORCHTRT_C_NATIVE_ELEMENTWISE=0 and TORCHTRT_C_NATIVE_EW=0 (OpenCL kernels, read
when the engine is built). Cases: the permuted copy of an attention output before the output
projection (BERT's), a q/k split with a negation (rotary's rotate_half-like), an RMS-norm-like
scaling with broadcast leaves, odd sizes; an elementwise op on inputs only stays OpenCL.
Tolerance: fp32 atol = rtol = 1e-4."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torchtrt_c._C as C
from convtest import rand
from torchtrt_c import settings


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_ELEMENTWISE", "TORCHTRT_C_NATIVE_EPI",
              "TORCHTRT_C_NATIVE_EW"):
        monkeypatch.delenv(v, raising=False)


def T(shape):
    return ("tensor", "float32", list(shape))


def run_both(inputs, build, ref, monkeypatch, want_native=True):
    for native in (True, False):
        settings.set(NATIVE_ELEMENTWISE="1" if native else "0")
        settings.set(NATIVE_EW="1" if native else "0")   # the image-shaped rule (rank 4)
        g = C.Graph()
        names = {k: g.add_input(k, T(t.shape)) for k, t in inputs.items()}
        n = [0]

        def const(t):
            n[0] += 1
            return g.add_tensor_constant(f"c{n[0]}", "float32", list(t.shape), t.contiguous().numpy())
        g.set_outputs([build(g, names, g.add_constant, const)])
        e = C.Engine.build(g, name="elem", cache_dir="")
        ks = e.info()["kernels"]
        ew = [k for k in ks if " elementwise:" in k]
        assert ew, ks
        if C.native_cpu()["available"]:
            assert all(("(native)" in k) == (native and want_native) for k in ew), (native, ks)
            assert not any("+cl-epilogue" in k for k in ew), ks
        out = np.full(tuple(ref.shape), np.nan, np.float32)
        e.execute([t.contiguous().numpy() for t in inputs.values()], [out])
        err = np.abs(out - ref.numpy())
        lim = 1e-4 + 1e-4 * np.abs(ref.numpy())
        assert (err <= lim).all(), (f"native={native}: max abs error {err.max()} at "
                                    f"{np.unravel_index(err.argmax(), err.shape)}")


@pytest.mark.parametrize("b,h,l,e", [(1, 3, 13, 8), (2, 2, 9, 7)])
def test_attention_output_permuted_copy(b, h, l, e, monkeypatch):
    d = h * e
    q, k, v = rand(b, h, l, e, seed=1), rand(b, h, l, e, seed=2), rand(b, h, l, e, seed=3)
    w = rand(d, d, seed=4) / d ** 0.5
    a = F.scaled_dot_product_attention(q, k, v)
    ref = F.linear(a.permute(0, 2, 1, 3).reshape(b, l, d), w)

    def build(g, i, L, const):
        (y,) = g.add_node("aten.scaled_dot_product_attention.default",
                          [i["q"], i["k"], i["v"], L(None), L(0.0), L(False), L(None), L(False)], [T((b, h, l, e))])
        (y,) = g.add_node("aten.permute.default", [y, L([0, 2, 1, 3])], [T((b, l, h, e))])
        (y,) = g.add_node("aten.reshape.default", [y, L([b, l, d])], [T((b, l, d))])
        (y,) = g.add_node("aten.linear.default", [y, const(w), L(None)], [T((b, l, d))])
        return y
    run_both({"q": q, "k": k, "v": v}, build, ref, monkeypatch)


@pytest.mark.parametrize("m,d", [(5, 8), (17, 22)])
def test_split_negate_and_rms_scaling(m, d, monkeypatch):
    """y = linear(x); z = cat-free rotate: -y[:, d/2:] * c + y[:, :d/2] * s (two strided views of
    one GEMM result), then a broadcast row scale r (as an RMS norm's) times a weight."""
    x, w = rand(m, d, seed=5), rand(d, d, seed=6) / d ** 0.5
    c, s = rand(d // 2, seed=7), rand(d // 2, seed=8)
    r, g_ = rand(m, 1, seed=9), rand(d // 2, seed=10)
    y = F.linear(x, w)
    h = d // 2
    ref = ((-y[:, h:]) * c + y[:, :h] * s) * r * g_

    def build(g, i, L, const):
        (y,) = g.add_node("aten.linear.default", [i["x"], const(w), L(None)], [T((m, d))])
        (a,) = g.add_node("aten.slice.Tensor", [y, L(1), L(h), L(d), L(1)], [T((m, h))])
        (b,) = g.add_node("aten.slice.Tensor", [y, L(1), L(0), L(h), L(1)], [T((m, h))])
        (a,) = g.add_node("aten.neg.default", [a], [T((m, h))])
        (a,) = g.add_node("aten.mul.Tensor", [a, const(c)], [T((m, h))])
        (b,) = g.add_node("aten.mul.Tensor", [b, const(s)], [T((m, h))])
        (z,) = g.add_node("aten.add.Tensor", [a, b, L(1)], [T((m, h))])
        (z,) = g.add_node("aten.mul.Tensor", [z, i["r"]], [T((m, h))])
        (z,) = g.add_node("aten.mul.Tensor", [z, const(g_)], [T((m, h))])
        return z
    run_both({"x": x, "r": r}, build, ref, monkeypatch)


def test_elementwise_on_inputs_stays_opencl(monkeypatch):
    a, b = rand(7, 9, seed=11), rand(7, 9, seed=12)
    ref = torch.relu(a * b + 1.0)

    def build(g, i, L, const):
        (y,) = g.add_node("aten.mul.Tensor", [i["a"], i["b"]], [T((7, 9))])
        (y,) = g.add_node("aten.add.Tensor", [y, L(1.0), L(1)], [T((7, 9))])
        (y,) = g.add_node("aten.relu.default", [y], [T((7, 9))])
        return y
    run_both({"a": a, "b": b}, build, ref, monkeypatch, want_native=False)


@pytest.mark.parametrize("dim", [1, 2, -1])
def test_concat_of_gemm_views(dim, monkeypatch):
    """A decoder's cache update (cat of an empty past and the new k along the sequence) and
    rotary's halves (cat of a negated half and the other, along the last dim), odd sizes, with an
    epilogue (cat * c + s) on the concatenation."""
    b, l, h, e = 1, 7, 3, 6
    x, w = rand(b, l, h * e, seed=13), rand(2 * h * e, h * e, seed=14) / (h * e) ** 0.5
    c = rand(e, seed=15)
    y = F.linear(x, w)
    k1, k2 = (t.reshape(b, l, h, e).permute(0, 2, 1, 3) for t in y.split(h * e, -1))
    if dim == -1:
        parts = [-k1[..., e // 2:], k1[..., :e // 2]]
    else:
        parts = [k1, k2]
    ref = torch.cat(parts, dim) * (c if dim == -1 else 1.0) + 0.25

    def build(g, i, L, const):
        (p,) = g.add_node("aten.linear.default", [i["x"], const(w), L(None)], [T((b, l, 2 * h * e))])
        vs = []
        for j in range(2):
            (s,) = g.add_node("aten.slice.Tensor", [p, L(2), L(j * h * e), L((j + 1) * h * e), L(1)], [T((b, l, h * e))])
            (s,) = g.add_node("aten.view.default", [s, L([b, l, h, e])], [T((b, l, h, e))])
            (s,) = g.add_node("aten.permute.default", [s, L([0, 2, 1, 3])], [T((b, h, l, e))])
            vs.append(s)
        if dim == -1:
            half = (b, h, l, e // 2)
            (a,) = g.add_node("aten.slice.Tensor", [vs[0], L(3), L(e // 2), L(e), L(1)], [T(half)])
            (bb,) = g.add_node("aten.slice.Tensor", [vs[0], L(3), L(0), L(e // 2), L(1)], [T(half)])
            (a,) = g.add_node("aten.neg.default", [a], [T(half)])
            ins, oshape = [a, bb], (b, h, l, e)
        else:
            ins = vs
            oshape = (b, 2 * h, l, e) if dim == 1 else (b, h, 2 * l, e)
        (lst,) = g.add_node("prim.ListConstruct", ins, [("list", "tensor")])
        (z,) = g.add_node("aten.cat.default", [lst, L(dim)], [T(oshape)])
        if dim == -1:
            (z,) = g.add_node("aten.mul.Tensor", [z, const(c)], [T(oshape)])
        (z,) = g.add_node("aten.add.Tensor", [z, L(0.25), L(1)], [T(oshape)])
        return z
    for native in (True, False):
        settings.set(NATIVE_ELEMENTWISE="1" if native else "0")
        settings.set(NATIVE_EW="1" if native else "0")   # the image-shaped rule (rank 4)
        g = C.Graph()
        i = {"x": g.add_input("x", T(x.shape))}
        n = [0]

        def const(t):
            n[0] += 1
            return g.add_tensor_constant(f"c{n[0]}", "float32", list(t.shape), t.contiguous().numpy())
        g.set_outputs([build(g, i, g.add_constant, const)])
        eng = C.Engine.build(g, name="cat", cache_dir="")
        ks = eng.info()["kernels"]
        cats = [k for k in ks if " concat:" in k]
        assert cats, ks
        if C.native_cpu()["available"]:
            assert all(("(native)" in k) == native and "+cl-epilogue" not in k for k in cats), (native, ks)
        out = np.full(tuple(ref.shape), np.nan, np.float32)
        eng.execute([x.numpy()], [out])
        err = np.abs(out - ref.numpy())
        assert (err <= 1e-4 + 1e-4 * np.abs(ref.numpy())).all(), f"native={native}: max abs error {err.max()}"
