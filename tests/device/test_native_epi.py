"""Epilogues inside native GEMM/convolution calls (backend/cpu/native_epi.c) against torch eager, each
case built twice: fused into the native call (the default) and with TORCHTRT_C_NATIVE_EPI=0 (an
OpenCL kernel after the call, read when the engine is built). Cases: bias (a broadcast leaf,
stride 0 along rows), BN scale/shift, relu, clamp/hardtanh (max/min), hardswish, division,
residual adds (dense leaves, and a broadcast residual), batched matmuls, odd sizes, batch > 1, and
an epilogue with tanh (stays an OpenCL kernel with TORCHTRT_C_NATIVE_EPI_MATH=0). Kernel descriptions say which way each ran
("+cl-epilogue"). Where the device has no native path the cases still compare with torch.
Tolerance: fp32 atol = rtol = 1e-4 (operands scaled for O(1) outputs)."""
import numpy as np
import pytest
import torch

import torchtrt_c._C as C
from convtest import rand
from test_conv_kernels import conv_case
from torchtrt_c import settings


@pytest.fixture(autouse=True)
def plain_env(monkeypatch):
    for v in ("TORCHTRT_C_KERNELS", "TORCHTRT_C_NATIVE", "TORCHTRT_C_NATIVE_CONV", "TORCHTRT_C_NATIVE_EPI"):
        monkeypatch.delenv(v, raising=False)


def native_on():
    return C.native_cpu()["available"]


def graph(inputs, build):
    """inputs: {name: tensor}; build(g, names, L, const) -> output value."""
    g = C.Graph()
    names = {k: g.add_input(k, ("tensor", "float32", list(t.shape))) for k, t in inputs.items()}
    n = [0]

    def const(t):
        n[0] += 1
        return g.add_tensor_constant(f"c{n[0]}", "float32", list(t.shape), t.contiguous().numpy())

    y = build(g, names, g.add_constant, const)
    g.set_outputs([y])
    return g


def run_both(inputs, build, ref, monkeypatch, fused_expected=True):
    """Builds the graph with the epilogue fused and not; checks both against ref and which ran."""
    for fuse in ("1", "0"):
        settings.set(NATIVE_EPI=fuse)
        e = C.Engine.build(graph(inputs, build), name="epi", cache_dir="")
        out = np.full(tuple(ref.shape), np.nan, np.float32)
        e.execute([t.contiguous().numpy() for t in inputs.values()], [out])
        err = np.abs(out - ref.numpy())
        lim = 1e-4 + 1e-4 * np.abs(ref.numpy())
        assert (err <= lim).all(), (f"TORCHTRT_C_NATIVE_EPI={fuse}: max abs error {err.max()} at "
                                    f"{np.unravel_index(err.argmax(), err.shape)}")
        ks = e.info()["kernels"]
        nat = [k for k in ks if "(native)" in k]
        if native_on():
            assert nat, ks
            want_cl = fuse == "0" or not fused_expected
            assert all(("+cl-epilogue" in k) == want_cl for k in nat), (fuse, ks)


def T(shape):
    return ("tensor", "float32", list(shape))


@pytest.mark.parametrize("m,k,n", [(1, 7, 3), (33, 20, 17), (130, 37, 70)])
def test_linear_bias_clamp_residual(m, k, n, monkeypatch):
    x, r = rand(m, k, seed=1), rand(m, n, seed=2)
    w, b = rand(n, k, seed=3) / k ** 0.5, rand(n, seed=4)
    ref = torch.clamp(torch.nn.functional.linear(x, w, b), -0.5, 0.7) * 1.5 + r

    def build(g, i, L, const):
        (y,) = g.add_node("aten.linear.default", [i["x"], const(w), const(b)], [T((m, n))])
        (y,) = g.add_node("aten.clamp.default", [y, L(-0.5), L(0.7)], [T((m, n))])
        (y,) = g.add_node("aten.mul.Tensor", [y, L(1.5)], [T((m, n))])
        (y,) = g.add_node("aten.add.Tensor", [y, i["r"], L(1)], [T((m, n))])
        return y
    run_both({"x": x, "r": r}, build, ref, monkeypatch)


def test_bmm_broadcast_residual_div_hardswish(monkeypatch):
    a, b = rand(3, 9, 14, seed=5), rand(3, 14, 11, seed=6) / 14 ** 0.5
    r = rand(1, 9, 1, seed=7)   # broadcast over batch and columns: stride 0 inside rows
    ref = torch.nn.functional.hardswish(torch.bmm(a, b) / 0.8 - r)

    def build(g, i, L, const):
        (y,) = g.add_node("aten.bmm.default", [i["a"], i["b"]], [T((3, 9, 11))])
        (y,) = g.add_node("aten.div.Tensor", [y, L(0.8)], [T((3, 9, 11))])
        (y,) = g.add_node("aten.sub.Tensor", [y, i["r"], L(1)], [T((3, 9, 11))])
        (y,) = g.add_node("aten.hardswish.default", [y], [T((3, 9, 11))])
        return y
    run_both({"a": a, "b": b, "r": r}, build, ref, monkeypatch)


def test_tanh_keeps_opencl_epilogue(monkeypatch):
    """With TORCHTRT_C_NATIVE_EPI_MATH=0 a tanh step is not cheap (the default takes it into
    the call: tests/device/test_native_epi_math.py). Without oneDNN's matmul post-ops too: those
    take the tanh into the call (tests/device/test_native_gemm_post.py)."""
    settings.set(NATIVE_EPI_MATH="0")
    settings.set(NATIVE_GEMM_POST="0")
    x, w = rand(5, 12, seed=8), rand(10, 12, seed=9) / 12 ** 0.5
    ref = torch.tanh(x @ w.t())

    def build(g, i, L, const):
        (y,) = g.add_node("aten.linear.default", [i["x"], const(w), L(None)], [T((5, 10))])
        (y,) = g.add_node("aten.tanh.default", [y], [T((5, 10))])
        return y
    run_both({"x": x}, build, ref, monkeypatch, fused_expected=False)


CONVS = [  # n, cin, cout, (h, w), k, stride, pad
    (1, 3, 8, (11, 9), 3, 1, 1),
    (3, 5, 13, (7, 21), 3, 2, 1),
    (2, 16, 24, (7, 7), 1, 1, 0),
    (2, 17, 33, (13, 11), 3, 1, 1),
]


@pytest.mark.parametrize("case", CONVS, ids=lambda c: "x".join(map(str, c[:3])) + f"-k{c[4]}s{c[5]}")
@pytest.mark.parametrize("fuse", ["1", "0"])
@pytest.mark.parametrize("conv", ["dnnl", "blas"])
def test_conv_bias_relu_residual(case, fuse, conv, monkeypatch):
    settings.set(NATIVE_EPI=fuse)
    settings.set(NATIVE_CONV=conv)
    n, cin, cout, hw, k, s, p = case
    for bias, relu, residual in ((True, False, False), (True, True, True), (False, True, True)):
        e = conv_case(n, cin, cout, hw, k, s, p, bias=bias, relu=relu, residual=residual, seed=cin + cout)
        nat = [d for d in e.info()["kernels"] if "(native)" in d]
        if native_on():
            assert len(nat) == 1 and ("+cl-epilogue" in nat[0]) == (fuse == "0"), e.info()["kernels"]


def test_conv_batchnorm_unfolded(monkeypatch):
    """A BN after a convolution with per-channel scale and shift leaves (broadcast rows)."""
    x = rand(2, 6, 9, 10, seed=10)
    w = rand(8, 6, 3, 3, seed=11) / 7
    mean, var = rand(8, seed=12) * 0.1, torch.rand(8) + 0.5
    gamma, beta = rand(8, seed=13), rand(8, seed=14)
    with torch.no_grad():
        y = torch.nn.functional.conv2d(x, w, None, 1, 1)
        ref = torch.relu(torch.nn.functional.batch_norm(y, mean, var, gamma, beta, False, 0.0, 1e-5))

    def build(g, i, L, const):
        ot = T(ref.shape)
        (y,) = g.add_node("aten.convolution.default", [i["x"], const(w), L(None), L([1, 1]), L([1, 1]), L([1, 1]),
                                                       L(False), L([0, 0]), L(1)], [ot])
        (y,) = g.add_node("aten._native_batch_norm_legit_no_training.default",
                          [y, const(gamma), const(beta), const(mean), const(var), L(0.0), L(1e-5)],
                          [ot, T([0]), T([0])])[:1]
        (y,) = g.add_node("aten.relu.default", [y], [ot])
        return y
    run_both({"x": x}, build, ref, monkeypatch)
