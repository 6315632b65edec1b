"""Differential tests of the convolution kernels against torch eager.

Cases run with the GPU kernel family forced on whatever device is selected
(TORCHTRT_C_KERNELS=gpu: implicit GEMM conv2d_igemm, depthwise conv2d_dw), so PoCL in CI
covers the GPU kernels; depthwise and conv1d also with the device's own family (split-K
uses implicit GEMM on every device). Implicit-GEMM tile shapes are
forced one by one (TORCHTRT_C_CONV_TILE) on shapes that exercise partial tiles.
Epilogues: bias, relu and a residual add fused into the convolution.
Tolerances: fp32 atol 1e-4 + rtol 1e-4 (outputs are O(1): weights scaled by 1/sqrt(K), so
only the summation order differs); fp16 engines atol 2e-2 + rtol 2e-2 (weights, the
intermediate and the output stored in half, fp32 accumulation).
"""
import numpy as np
import pytest
import torch

import torchtrt_c._C as C
from convtest import assert_close, rand

N_TILES = 8


@pytest.fixture(params=["gpu", "native"])
def family(request, monkeypatch):
    if request.param == "gpu":
        monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    else:
        monkeypatch.delenv("TORCHTRT_C_KERNELS", raising=False)
    monkeypatch.delenv("TORCHTRT_C_CONV_TILE", raising=False)
    return request.param


def conv_case(n, cin, cout, hw, k, stride=1, pad=0, dil=1, groups=1, bias=True, relu=False, residual=False,
              precision="fp32", conv1d=False, seed=0, kernels=1):
    """Builds conv (+bias) (+relu) (+residual) as one graph, runs it, compares with torch."""
    kh, kw = (1, k) if conv1d else (k, k) if isinstance(k, int) else k
    x = rand(n, cin, hw[1], seed=seed) if conv1d else rand(n, cin, *hw, seed=seed)
    kdim = cin // groups * kh * kw
    w = rand(cout, cin // groups, kw, seed=seed + 1) if conv1d else rand(cout, cin // groups, kh, kw, seed=seed + 1)
    w = w / (kdim ** 0.5)
    b = rand(cout, seed=seed + 2) if bias else None
    with torch.no_grad():
        if conv1d:
            ref = torch.nn.functional.conv1d(x, w, b, stride, pad, dil, groups)
        else:
            ref = torch.nn.functional.conv2d(x, w, b, stride, pad, dil, groups)
        if relu:
            ref = torch.relu(ref)
        res = rand(*ref.shape, seed=seed + 3) if residual else None
        if residual:
            ref = ref + res
    g = C.Graph()
    xi = g.add_input("x", ("tensor", "float32", list(x.shape)))
    wi = g.add_tensor_constant("w", "float32", list(w.shape), w.contiguous().numpy())
    bi = g.add_tensor_constant("b", "float32", [cout], b.numpy()) if bias else g.add_constant(None)
    L = g.add_constant
    ot = ("tensor", "float32", list(ref.shape))
    nd = 1 if conv1d else 2
    (y,) = g.add_node("aten.convolution.default",
                      [xi, wi, bi, L([stride] * nd), L([pad] * nd), L([dil] * nd), L(False), L([0] * nd), L(groups)],
                      [ot])
    if relu:
        (y,) = g.add_node("aten.relu.default", [y], [ot])
    ins = [x]
    if residual:
        ri = g.add_input("r", ot)
        (y,) = g.add_node("aten.add.Tensor", [y, ri, L(1)], [ot])
        ins.append(res)
    g.set_outputs([y])
    e = C.Engine.build(g, name="conv", precision=precision, cache_dir="")
    out = np.empty(tuple(ref.shape), np.float32)
    e.execute([t.contiguous().numpy() for t in ins], [out])
    tol = 1e-4 if precision == "fp32" else 2e-2
    assert_close(torch.from_numpy(out), ref, tol, tol, f"conv {tuple(x.shape)} w{tuple(w.shape)} s{stride} p{pad} d{dil} "
                 f"g{groups} {precision}")
    # the epilogue is fused: one kernel for conv + bias + relu + residual (conv1d's output
    # is a reshaped view, so the residual add stays a kernel of its own there); split-K
    # convolutions are two: partial sums, then their sum with the epilogue (kernels=None: the
    # caller checks the kernels itself)
    if not conv1d and kernels is not None:
        assert e.info()["n_kernels"] == kernels, e.info()["kernels"]
    return e


@pytest.mark.parametrize("n,cin,cout,hw,k,stride,pad,dil,groups", [
    (1, 3, 8, (11, 9), 3, 1, 1, 1, 1),
    (3, 5, 13, (9, 10), 3, 2, 1, 1, 1),
    (1, 4, 6, (13, 7), 3, 1, 2, 2, 1),
    (1, 16, 24, (7, 7), 1, 1, 0, 1, 1),      # 1x1 stride 1: the plain-GEMM path
    (3, 12, 20, (5, 6), 1, 1, 0, 1, 1),      # ... across images
    (2, 8, 12, (9, 9), 1, 2, 0, 1, 1),       # 1x1 stride 2: im2col path
    (1, 3, 16, (23, 21), 7, 2, 3, 1, 1),     # ResNet stem shape, odd sizes
    (2, 8, 12, (8, 7), 3, 1, 1, 1, 2),       # groups 2
    (1, 12, 18, (6, 5), 3, 2, 1, 1, 3),
    (1, 1, 7, (9, 8), 3, 1, 1, 1, 1),        # a single input channel
    (1, 32, 40, (9, 7), 3, 1, 1, 1, 1),      # channels a multiple of the K block: per-tap blocks
    (2, 32, 16, (8, 9), 3, 2, 2, 2, 2),      # ... with groups, dilation and stride
    (2, 16, 12, (9, 9), 1, 2, 0, 1, 1),      # ... 1x1 stride 2
])
def test_conv2d(monkeypatch, n, cin, cout, hw, k, stride, pad, dil, groups):
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")  # CPU kernels: test_converters.py
    conv_case(n, cin, cout, hw, k, stride, pad, dil, groups, seed=n + cin)
    conv_case(n, cin, cout, hw, k, stride, pad, dil, groups, bias=False, relu=True, residual=True, seed=cout)


@pytest.mark.parametrize("n,c,mult,hw,k,stride,pad,dil", [
    (1, 8, 1, (11, 9), 3, 1, 1, 1), (3, 6, 1, (10, 13), 3, 2, 1, 1), (1, 5, 2, (9, 9), 5, 1, 2, 1),
    (1, 7, 1, (12, 11), 3, 1, 2, 2), (2, 4, 1, (3, 2), 3, 1, 1, 1),
])
def test_depthwise(family, n, c, mult, hw, k, stride, pad, dil):
    conv_case(n, c, c * mult, hw, k, stride, pad, dil, groups=c, relu=True, seed=c)
    conv_case(n, c, c * mult, hw, k, stride, pad, dil, groups=c, bias=False, residual=True, seed=c + 1)


def test_conv1d(family):
    conv_case(3, 6, 10, (1, 17), 3, 2, 1, 1, 1, conv1d=True, relu=True)
    conv_case(1, 8, 8, (1, 15), 5, 1, 4, 2, 2, conv1d=True, residual=True)
    conv_case(2, 6, 6, (1, 19), 3, 1, 1, 1, 6, conv1d=True)


@pytest.mark.parametrize("tile", [pytest.param(t, marks=() if t < 2 else pytest.mark.slow) for t in range(N_TILES)])
def test_igemm_tiles(monkeypatch, tile):
    """Every implicit-GEMM tile shape on partial tiles in M, N and K (and M > one tile), with
    single (even tiles) and double-buffered (odd tiles) local memory. The default run takes
    the first of each (0, 1); the slow run every tile."""
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    monkeypatch.setenv("TORCHTRT_C_CONV_TILE", str(tile))
    monkeypatch.setenv("TORCHTRT_C_CONV_DB", str(tile % 2))
    conv_case(1, 9, 70, (11, 13), 3, 1, 1, 1, 1, relu=True, residual=True, seed=5)
    conv_case(3, 40, 150, (5, 5), 1, 1, 0, 1, 1, seed=6)
    conv_case(2, 10, 20, (7, 9), 3, 2, 1, 1, 2, seed=7)
    conv_case(1, 32, 24, (6, 7), 3, 2, 1, 1, 1, seed=8)


@pytest.mark.parametrize("family_env", ["gpu", None])
def test_conv_fp16(monkeypatch, family_env):
    if family_env:
        monkeypatch.setenv("TORCHTRT_C_KERNELS", family_env)
    else:
        monkeypatch.delenv("TORCHTRT_C_KERNELS", raising=False)
    conv_case(1, 16, 24, (9, 9), 3, 1, 1, 1, 1, relu=True, residual=True, precision="fp16")
    conv_case(3, 24, 20, (6, 5), 1, 1, 0, 1, 1, precision="fp16")
    conv_case(1, 8, 8, (9, 7), 3, 2, 1, 1, 8, relu=True, precision="fp16")


def test_dynamic_batch(monkeypatch):
    """Batch as a symbol: the work size follows the runtime batch."""
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    x_shape, w = [3, 6, 7, 7], rand(10, 6, 3, 3, seed=3) * 0.2
    g = C.Graph()
    g.add_symbol("s0", 1, 2, 4)
    xi = g.add_input("x", ("tensor", "float32", ["s0"] + x_shape[1:]))
    wi = g.add_tensor_constant("w", "float32", list(w.shape), w.numpy())
    L = g.add_constant
    (y,) = g.add_node("aten.convolution.default",
                      [xi, wi, L(None), L([1, 1]), L([1, 1]), L([1, 1]), L(False), L([0, 0]), L(1)],
                      [("tensor", "float32", ["s0", 10, 7, 7])])
    g.set_outputs([y])
    e = C.Engine.build(g, name="conv_dyn", cache_dir="")
    for n in (1, 3, 4):
        x = rand(n, *x_shape[1:], seed=n)
        out = np.empty((n, 10, 7, 7), np.float32)
        e.execute([x.numpy()], [out])
        assert_close(torch.from_numpy(out), torch.nn.functional.conv2d(x, w, padding=1), 1e-4, 1e-4, f"batch {n}")


@pytest.mark.parametrize("n,cin,cout,hw,k,stride,pad", [
    (1, 64, 20, (5, 7), 3, 1, 1),      # K = 576: 4 slices of 144
    (1, 150, 36, (4, 3), 3, 2, 1),     # K = 1350: 10 slices of 144, the last one partial
    (2, 700, 24, (3, 3), 1, 1, 0),     # 1x1: 5 slices, across two images
])
def test_split_k(n, cin, cout, hw, k, stride, pad, monkeypatch):
    """Deep, small convolutions are cut along K (partials + a summing kernel with the epilogue)
    by the GPU kernel families (CPU devices keep them whole: test_conv_cpu.py)."""
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    conv_case(n, cin, cout, hw, k, stride, pad, relu=True, residual=True, seed=cin, kernels=2)
    # fp16 1x1 stride-1 convolutions are a GEMM instead (test_conv_gemm.py): one kernel
    conv_case(n, cin, cout, hw, k, stride, pad, precision="fp16", seed=cin, kernels=1 if k == 1 else 2)


def test_split_k_batch_norm(monkeypatch):
    """Batch norm after a split convolution is not folded into the weights but still fused."""
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    x = rand(1, 96, 6, 6)
    w = rand(48, 96, 3, 3, seed=1) / 30
    gamma, beta, mean, var = rand(48, seed=2), rand(48, seed=3), rand(48, seed=4), rand(48, seed=5).abs() + 0.5
    g = C.Graph()
    xi = g.add_input("x", ("tensor", "float32", [1, 96, 6, 6]))
    cs = [g.add_tensor_constant(nm, "float32", list(t.shape), t.numpy())
          for nm, t in [("w", w), ("g", gamma), ("be", beta), ("m", mean), ("v", var)]]
    L = g.add_constant
    ot = ("tensor", "float32", [1, 48, 6, 6])
    (c,) = g.add_node("aten.convolution.default", [xi, cs[0], L(None), L([1, 1]), L([1, 1]), L([1, 1]), L(False),
                                                   L([0, 0]), L(1)], [ot])
    outs = g.add_node("aten._native_batch_norm_legit_no_training.default", [c, cs[1], cs[2], cs[3], cs[4], L(0.1), L(1e-5)],
                      [ot, ("tensor", "float32", [0]), ("tensor", "float32", [0])])
    (r,) = g.add_node("aten.relu.default", [outs[0]], [ot])
    g.set_outputs([r])
    e = C.Engine.build(g, cache_dir="")
    assert e.info()["n_kernels"] == 2, e.info()["kernels"]
    out = np.empty((1, 48, 6, 6), np.float32)
    e.execute([x.numpy()], [out])
    ref = torch.relu(torch.nn.functional.batch_norm(torch.nn.functional.conv2d(x, w, padding=1), mean, var, gamma, beta,
                                                    eps=1e-5))
    assert_close(torch.from_numpy(out), ref, 1e-4, 1e-4, "split conv + batch norm + relu")


@pytest.mark.parametrize("family_env", ["gpu", None])
def test_half_model(monkeypatch, family_env):
    """A model converted with .half(): float16 input, weights, bias and batch-norm statistics."""
    if family_env:
        monkeypatch.setenv("TORCHTRT_C_KERNELS", family_env)
    else:
        monkeypatch.delenv("TORCHTRT_C_KERNELS", raising=False)
    x = rand(2, 16, 7, 9).half()
    w, b = (rand(24, 16, 3, 3, seed=1) / 12).half(), rand(24, seed=2).half()
    gamma, beta, mean, var = rand(24, seed=3).half(), rand(24, seed=4).half(), rand(24, seed=5).half(), \
        (rand(24, seed=6).abs() + 0.5).half()
    g = C.Graph()
    xi = g.add_input("x", ("tensor", "float16", [2, 16, 7, 9]))
    cs = [g.add_tensor_constant(nm, "float16", list(t.shape), t.numpy())
          for nm, t in [("w", w), ("b", b), ("g", gamma), ("be", beta), ("m", mean), ("v", var)]]
    L = g.add_constant
    ot = ("tensor", "float16", [2, 24, 7, 9])
    (c,) = g.add_node("aten.convolution.default", [xi, cs[0], cs[1], L([1, 1]), L([1, 1]), L([1, 1]), L(False),
                                                   L([0, 0]), L(1)], [ot])
    outs = g.add_node("aten._native_batch_norm_legit_no_training.default", [c, cs[2], cs[3], cs[4], cs[5], L(0.1), L(1e-5)],
                      [ot, ("tensor", "float16", [0]), ("tensor", "float16", [0])])
    (r,) = g.add_node("aten.relu.default", [outs[0]], [ot])
    g.set_outputs([r])
    e = C.Engine.build(g, precision="fp16", cache_dir="")
    assert e.info()["n_kernels"] == 1, e.info()["kernels"]
    out = np.empty((2, 24, 7, 9), np.float16)
    e.execute([x.numpy()], [out])
    f = lambda t: t.float()  # noqa: E731
    ref = torch.relu(torch.nn.functional.batch_norm(torch.nn.functional.conv2d(f(x), f(w), f(b), padding=1), f(mean),
                                                    f(var), f(gamma), f(beta), eps=1e-5))
    assert_close(torch.from_numpy(out).float(), ref, 2e-2, 2e-2, "half conv + batch norm + relu")
