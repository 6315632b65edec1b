"""The C steps of native calls on several threads (backend/cpu/step_threads.h): layer norm, RMS norm,
GEMM epilogues (GELU + residual), pooling (max and global average) and attention's softmax,
each engine built with TORCHTRT_C_STEP_THREADS=1, 2 and 3 (read when the engine is built).
Outputs must be bit-identical whatever the thread count, and match torch eager (fp32: atol =
rtol = 1e-5; pooling max exact). Shapes on both sides of the threshold: a small one stays on
the calling thread (step_parallel_jobs does not move), a large one is split (it moves)."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torchtrt_c._C as C
from convtest import rand
from torchtrt_c import settings

pytestmark = pytest.mark.skipif(not C.native_cpu()["available"], reason="the device runs no native kernels")


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_NORM", "TORCHTRT_C_NATIVE_EW",
              "TORCHTRT_C_NATIVE_POOL", "TORCHTRT_C_NATIVE_ATTN", "TORCHTRT_C_NATIVE_EPI", "TORCHTRT_C_STEP_THREADS"):
        monkeypatch.delenv(v, raising=False)


def T(shape):
    return ("tensor", "float32", list(shape))


def run_threads(inputs, build, ref, big, monkeypatch, tol=1e-5):
    """Builds the graph once per thread count, runs it, checks equal bits and closeness."""
    outs = []
    for threads in (1, 2, 3):
        settings.set(STEP_THREADS=str(threads))
        g = C.Graph()
        names = {k: g.add_input(k, T(t.shape)) for k, t in inputs.items()}
        n = [0]

        def const(t):
            n[0] += 1
            return g.add_tensor_constant(f"c{n[0]}", "float32", list(t.shape), t.contiguous().numpy())
        g.set_outputs([build(g, names, g.add_constant, const)])
        g.lower()
        e = C.Engine.build(g, name="steps", cache_dir="")
        ks = e.info()["kernels"]
        assert ks and all("(native)" in k for k in ks), ks
        out = np.full(tuple(ref.shape), np.nan, np.float32)
        before = C.step_parallel_jobs()
        e.execute([t.contiguous().numpy() for t in inputs.values()], [out])
        split = C.step_parallel_jobs() - before
        assert (split > 0) == (big and threads > 1), (f"threads={threads} big={big}: {split} jobs split", ks)
        outs.append(out)
    r = ref.numpy()
    err = np.abs(outs[0] - r)
    lim = tol + tol * np.abs(r)
    assert (err <= lim).all(), f"max abs error {err.max():.3g} at {np.unravel_index((err - lim).argmax(), err.shape)}"
    for t, o in zip((2, 3), outs[1:]):
        diff = o.view(np.uint32) != outs[0].view(np.uint32)
        assert not diff.any(), (f"threads={t}: {diff.sum()} of {diff.size} values differ from 1 thread "
                                f"(max {np.abs(o - outs[0]).max():.3g})")


@pytest.mark.parametrize("rows,n,big", [(3, 7, False), (300, 769, True)])
def test_layer_norm(rows, n, big, monkeypatch):
    x = rand(rows, n, seed=1) * 2 + 0.3
    w, b = rand(n, seed=2), rand(n, seed=3)
    ref = F.layer_norm(x, (n,), w, b, 1e-5)

    def build(g, i, L, const):
        (y,) = g.add_node("aten.layer_norm.default", [i["x"], L([n]), const(w), const(b), L(1e-5), L(False)],
                          [T((rows, n))])
        return y
    run_threads({"x": x}, build, ref, big, monkeypatch)


@pytest.mark.parametrize("shape,big", [((2, 5, 7), False), ((2, 150, 769), True)])
def test_rms_norm(shape, big, monkeypatch):
    x = rand(*shape, seed=4)
    w = rand(shape[-1], seed=5)
    ref = w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))
    red = shape[:-1] + (1,)

    def build(g, i, L, const):
        (p,) = g.add_node("aten.pow.Tensor_Scalar", [i["x"], L(2)], [T(shape)])
        (m,) = g.add_node("aten.mean.dim", [p, L([-1]), L(True), L(None)], [T(red)])
        (a,) = g.add_node("aten.add.Tensor", [m, L(1e-6), L(1)], [T(red)])
        (r,) = g.add_node("aten.rsqrt.default", [a], [T(red)])
        (y,) = g.add_node("aten.mul.Tensor", [i["x"], r], [T(shape)])
        (y,) = g.add_node("aten.mul.Tensor", [const(w), y], [T(shape)])
        return y
    run_threads({"x": x}, build, ref, big, monkeypatch)


@pytest.mark.parametrize("m,k,n,big", [(5, 9, 13, False), (257, 64, 515, True)])
def test_gemm_epilogue(m, k, n, big, monkeypatch):
    """linear + GELU (tanh form) + residual: the epilogue evaluated over tiles in the call."""
    x, w, bias, res = rand(m, k, seed=6), rand(n, k, seed=7) / k ** 0.5, rand(n, seed=8), rand(m, n, seed=9)
    ref = F.gelu(F.linear(x, w, bias), approximate="tanh") + res

    def build(g, i, L, const):
        (y,) = g.add_node("aten.linear.default", [i["x"], const(w), const(bias)], [T((m, n))])
        (y,) = g.add_node("aten.gelu.default", [y, L("tanh")], [T((m, n))])
        (y,) = g.add_node("aten.add.Tensor", [y, i["r"], L(1)], [T((m, n))])
        return y
    run_threads({"x": x, "r": res}, build, ref, big, monkeypatch)


@pytest.mark.parametrize("shape,big", [((1, 3, 9, 9), False), ((2, 64, 56, 56), True)])
def test_max_pool(shape, big, monkeypatch):
    x = rand(*shape, seed=10)
    ref = F.max_pool2d(x, 3, 2, 1)
    oh = ref.shape[2]

    def build(g, i, L, const):
        (y,) = g.add_node("aten.max_pool2d.default", [i["x"], L([3, 3]), L([2, 2]), L([1, 1]), L([1, 1]), L(False)],
                          [T((shape[0], shape[1], oh, oh))])
        return y
    run_threads({"x": x}, build, ref, big, monkeypatch, tol=0)


@pytest.mark.parametrize("shape,big", [((1, 8, 5, 5), False), ((4, 256, 14, 14), True)])
def test_global_avg_pool(shape, big, monkeypatch):
    x = rand(*shape, seed=11)
    ref = F.adaptive_avg_pool2d(x, 1)

    def build(g, i, L, const):
        (y,) = g.add_node("aten.adaptive_avg_pool2d.default", [i["x"], L([1, 1])], [T((shape[0], shape[1], 1, 1))])
        return y
    run_threads({"x": x}, build, ref, big, monkeypatch)


@pytest.mark.parametrize("b,h,l,e,causal,big", [(1, 2, 5, 8, False, False), (2, 8, 128, 32, False, True),
                                                (1, 12, 77, 16, True, True)])
def test_attention_softmax(b, h, l, e, causal, big, monkeypatch):
    q, k, v = rand(b, h, l, e, seed=12), rand(b, h, l, e, seed=13), rand(b, h, l, e, seed=14)
    ref = F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def build(g, i, L, const):
        (y,) = g.add_node("aten.scaled_dot_product_attention.default",
                          [i["q"], i["k"], i["v"], L(None), L(0.0), L(causal), L(None), L(False)], [T((b, h, l, e))])
        return y
    run_threads({"q": q, "k": k, "v": v}, build, ref, big, monkeypatch)
