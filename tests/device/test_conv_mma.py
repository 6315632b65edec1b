"""Differential tests of the tensor-core convolution (conv2d_mma.cl: implicit GEMM on mma.sync)
against torch eager on random inputs.

The family is forced (TORCHTRT_C_CONV_MMA=1, fp32 engines in TF32 with =tf32) on whatever
device is selected: PoCL runs the PTX prelude's emulation (same fragment layouts), an NVIDIA
GPU the real instructions. Emulated mma is slow, so every case is small; the shapes give partial
tiles, channel counts that are not multiples of 8/16 (per-element k gathers) and ones that are
(per-tap chunks), odd spatial sizes, 1..3 images, kernel 1/3/5/7, stride 1/2, dilation 2,
groups 2, split-K, and the fused epilogues (bias, folded batch norm, relu, residual add).
On an NVIDIA GPU one more case checks that the natural choice (no knob) takes the family for
a convolution with enough work; fp32 engines take it in TF32 where the TF32 policy
(allow_tf32_conv) allows it and the device is NVIDIA.
Tolerances: fp16 engines atol 2e-2 + rtol 2e-2 (half input, weights and output, fp32
accumulation; outputs O(1) as the weights are scaled by 1/sqrt(K)); TF32 atol 5e-3 + rtol 5e-3
(10-bit mantissas: a relative error of about 1e-3 measured on these shapes).
"""
import pytest
import torch

import torchtrt_c._C as C
from convtest import assert_close, rand
from test_conv_kernels import conv_case

import test_conv_kernels


@pytest.fixture(autouse=True)
def mma_family(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_CONV_MMA", "1")
    for knob in ("TORCHTRT_C_CONV_TILE", "TORCHTRT_C_KERNELS", "TORCHTRT_C_GEMM_TILE"):
        monkeypatch.delenv(knob, raising=False)


def _one_or_split(e):
    """One kernel, or two where the GPU families split K (partials, then their sum)."""
    kinds = [d.split(":")[0].split(" ")[1] for d in e.info()["kernels"]]
    assert kinds in (["conv2d"], ["conv2d", "reduce"]), kinds


def _uses_mma(e, tf32=False):
    src = e.info()["source"]
    return f"#define CONV_TF32 {1 if tf32 else 0}\n" in src and "conv2d" in str(e.info()["kernels"])


def _tf32_case(monkeypatch, *args, **kw):
    """conv_case for an fp32 engine in TF32, compared at the TF32 tolerance."""
    monkeypatch.setenv("TORCHTRT_C_CONV_MMA", "tf32")
    monkeypatch.setattr(test_conv_kernels, "assert_close", lambda a, b, atol, rtol, what: assert_close(
        a, b, 5e-3, 5e-3, what + " tf32"))
    return conv_case(*args, precision="fp32", **kw)


CASES = [  # n, cin, cout, hw, k, stride, pad, dil, groups
    (1, 16, 24, (7, 6), 3, 1, 1, 1, 1),       # channels a multiple of 8: one tap per chunk
    (3, 5, 13, (9, 10), 3, 2, 1, 1, 1),       # odd channels, stride 2, three images
    (1, 4, 20, (13, 7), 3, 1, 2, 2, 1),       # dilation 2
    (1, 3, 16, (23, 21), 7, 2, 3, 1, 1),      # the ResNet stem shape, odd sizes
    (2, 32, 36, (8, 9), 3, 2, 2, 2, 2),       # groups 2 (16 channels per group), stride, dilation
    (2, 16, 12, (9, 9), 1, 2, 0, 1, 1),       # 1x1 stride 2 (ResNet downsample)
    (2, 24, 20, (5, 7), 1, 1, 0, 1, 1),       # 1x1 stride 1 (a GEMM unless forced)
    (1, 40, 70, (5, 5), 5, 1, 2, 1, 1),       # 5x5, output channels past one 64-row tile
]


@pytest.mark.parametrize("n,cin,cout,hw,k,stride,pad,dil,groups", CASES)
def test_conv_mma_fp16(n, cin, cout, hw, k, stride, pad, dil, groups):
    e = conv_case(n, cin, cout, hw, k, stride, pad, dil, groups, relu=True, residual=True, precision="fp16",
                  seed=cin + cout, kernels=None)
    assert _uses_mma(e), e.info()["kernels"]
    _one_or_split(e)
    e = conv_case(n, cin, cout, hw, k, stride, pad, dil, groups, bias=False, precision="fp16", seed=cin, kernels=None)
    assert _uses_mma(e)
    _one_or_split(e)


@pytest.mark.parametrize("n,cin,cout,hw,k,stride,pad,dil,groups", [CASES[0], CASES[1], CASES[4]])
def test_conv_mma_tf32(monkeypatch, n, cin, cout, hw, k, stride, pad, dil, groups):
    e = _tf32_case(monkeypatch, n, cin, cout, hw, k, stride, pad, dil, groups, relu=True, residual=True,
                   seed=cin + cout)
    assert _uses_mma(e, tf32=True), e.info()["kernels"]


def test_tf32_needs_the_policy(monkeypatch):
    """=1 forces fp16 convolutions only: an fp32 engine keeps fp32 (1e-4) unless TF32 is allowed."""
    e = conv_case(1, 16, 24, (7, 6), 3, 1, 1, precision="fp32", seed=5)
    assert "#define CONV_TF32" not in e.info()["source"]


@pytest.mark.parametrize("tile", range(6))
def test_conv_mma_tiles(monkeypatch, tile):
    """Every tile shape (work-group size, stages, warps) forced on a shape with partial tiles in
    both directions and channels that give per-tap chunks."""
    monkeypatch.setenv("TORCHTRT_C_CONV_TILE", str(tile))
    e = conv_case(2, 24, 72, (9, 11), 3, 1, 1, relu=True, residual=True, precision="fp16", seed=tile)
    assert _uses_mma(e)


def test_conv1d_mma():
    e = conv_case(2, 8, 20, (1, 19), 3, 1, 1, precision="fp16", conv1d=True, seed=7)
    assert _uses_mma(e)


def test_split_k_mma(monkeypatch):
    """Deep, small convolutions split K (GPU families): the partials come from the tensor-core
    kernel, the summing kernel carries the epilogue."""
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    e = conv_case(1, 64, 20, (5, 7), 3, 1, 1, relu=True, residual=True, precision="fp16", seed=64, kernels=2)
    assert _uses_mma(e)


def test_batch_norm_folded_mma():
    """conv (no bias) + batch norm + relu: the norm folds into the packed weights and bias."""
    x = rand(2, 24, 9, 7)
    w = rand(32, 24, 3, 3, seed=1) / 15
    gamma, beta, mean, var = rand(32, seed=2), rand(32, seed=3), rand(32, seed=4), rand(32, seed=5).abs() + 0.5
    with torch.no_grad():
        ref = torch.relu(torch.nn.functional.batch_norm(torch.nn.functional.conv2d(x, w, None, 1, 1), mean, var,
                                                        gamma, beta, False, 0.1, 1e-5))
    g = C.Graph()
    xi = g.add_input("x", ("tensor", "float32", list(x.shape)))
    cs = [g.add_tensor_constant(nm, "float32", list(t.shape), t.numpy())
          for nm, t in [("w", w), ("g", gamma), ("be", beta), ("m", mean), ("v", var)]]
    L = g.add_constant
    ot = ("tensor", "float32", list(ref.shape))
    (c,) = g.add_node("aten.convolution.default", [xi, cs[0], L(None), L([1, 1]), L([1, 1]), L([1, 1]), L(False),
                                                   L([0, 0]), L(1)], [ot])
    outs = g.add_node("aten._native_batch_norm_legit_no_training.default", [c, cs[1], cs[2], cs[3], cs[4], L(0.1),
                                                                            L(1e-5)],
                      [ot, ("tensor", "float32", [0]), ("tensor", "float32", [0])])
    (r,) = g.add_node("aten.relu.default", [outs[0]], [ot])
    g.set_outputs([r])
    e = C.Engine.build(g, name="conv_bn", precision="fp16", cache_dir="")
    out = torch.empty(ref.shape).numpy()
    e.execute([x.numpy()], [out])
    assert_close(torch.from_numpy(out), ref, 2e-2, 2e-2, "conv + batch norm + relu fp16")
    assert e.info()["n_kernels"] == 1 and _uses_mma(e), e.info()["kernels"]


def test_knob_off_and_bad(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_CONV_MMA", "0")
    e = conv_case(1, 16, 24, (7, 6), 3, 1, 1, precision="fp16", seed=9)
    assert "#define CONV_TF32" not in e.info()["source"]
    monkeypatch.setenv("TORCHTRT_C_CONV_MMA", "yes")
    with pytest.raises(Exception, match="TORCHTRT_C_CONV_MMA"):
        conv_case(1, 16, 24, (7, 6), 3, 1, 1, precision="fp16", seed=9)


def test_depthwise_stays_on_cuda_cores():
    e = conv_case(1, 16, 16, (9, 8), 3, 1, 1, groups=16, precision="fp16", seed=11)
    assert "#define CONV_TF32" not in e.info()["source"]


def _nvidia():
    d = C.devices()[C.default_device()]
    return "nvidia" in (d["vendor"] + d["platform"]).lower() and d["type"] == "gpu"


@pytest.mark.skipif(not _nvidia(), reason="the natural choice takes tensor cores on NVIDIA GPUs only")
def test_natural_choice_on_nvidia(monkeypatch):
    monkeypatch.delenv("TORCHTRT_C_CONV_MMA")
    e = conv_case(4, 64, 64, (28, 28), 3, 1, 1, relu=True, residual=True, precision="fp16", seed=1, kernels=None)
    assert _uses_mma(e)
    _one_or_split(e)
    e = conv_case(1, 3, 8, (9, 9), 3, 1, 1, precision="fp16", seed=2)  # too little work
    assert "#define CONV_TF32" not in e.info()["source"]
    # pointwise: deep inputs on small planes take the convolution, shallow ones stay a GEMM
    e = conv_case(8, 512, 64, (14, 14), 1, 1, 0, relu=True, residual=True, precision="fp16", seed=3)
    assert _uses_mma(e)
    e = conv_case(2, 64, 256, (28, 28), 1, 1, 0, relu=True, residual=True, precision="fp16", seed=4)
    assert "#define CONV_TF32" not in e.info()["source"] and "gemm" in str(e.info()["kernels"])


@pytest.mark.parametrize("allow", [True, False])
def test_tf32_policy(monkeypatch, allow):
    """fp32 engines take TF32 tensor cores for convolutions with enough work where the policy
    allows it (allow_tf32_conv; the target acts on it on NVIDIA only), else stay fp32 (1e-4)."""
    monkeypatch.delenv("TORCHTRT_C_CONV_MMA")
    x, w = rand(2, 64, 16, 16, seed=1), rand(64, 64, 3, 3, seed=2) / 24
    with torch.no_grad():
        ref = torch.relu(torch.nn.functional.conv2d(x, w, None, 1, 1))
    g = C.Graph()
    xi = g.add_input("x", ("tensor", "float32", list(x.shape)))
    wi = g.add_tensor_constant("w", "float32", list(w.shape), w.numpy())
    L = g.add_constant
    ot = ("tensor", "float32", list(ref.shape))
    (y,) = g.add_node("aten.convolution.default", [xi, wi, L(None), L([1, 1]), L([1, 1]), L([1, 1]), L(False),
                                                   L([0, 0]), L(1)], [ot])
    (r,) = g.add_node("aten.relu.default", [y], [ot])
    g.set_outputs([r])
    e = C.Engine.build(g, name="conv_tf32", precision="fp32", cache_dir="", tf32_conv=allow)
    out = torch.empty(ref.shape).numpy()
    e.execute([x.numpy()], [out])
    tf32 = allow and _nvidia()
    assert e.info()["tf32_active"]["conv"] == tf32
    assert ("#define CONV_TF32 1\n" in e.info()["source"]) == tf32, e.info()["kernels"]
    tol = 5e-3 if tf32 else 1e-4
    assert_close(torch.from_numpy(out), ref, tol, tol, f"conv fp32 tf32_conv={allow}")
