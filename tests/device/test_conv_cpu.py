"""Differential tests of the CPU convolution kernel (conv2d_cpu.cl: pixels along the vector lanes,
4 channels x 2 pixel groups per work-item) against torch eager, and of the previous CPU kernel
kept behind TORCHTRT_C_CONV_CPU=ocb8.

Shapes are chosen for the kernel's edges: widths below (windows reaching into neighbouring
rows, clamped to the tensor), at and above the 8 lanes (and not multiples of them), interior vs
edge column blocks (the last block moved left), odd row counts (the second row group
falls off), 1x1 stride-1 planes that are not multiples of 16 (the PW1 GEMM path), strides 1,
2 (the every-other-lane load) and 3 (guarded loads only), padding, dilation, groups, channel
counts that are not multiples of 4, several images, split-K partials, and fused epilogues
(bias, relu, residual add). Tolerances as in test_conv_kernels.py: fp32 atol = rtol = 1e-4
(weights scaled by 1/sqrt(K): outputs O(1), only the summation order differs), fp16 engines
2e-2 (half storage of inputs/outputs, float accumulation).
"""
import pytest

from test_conv_kernels import conv_case
from torchtrt_c import settings


@pytest.fixture(params=["cpu", "ocb8"])
def kernel(request, monkeypatch):
    settings.set(KERNELS=None)
    settings.set(NATIVE="0")   # the OpenCL kernels, not the CPU BLAS
    settings.set(CONV_TILE=None)
    if request.param == "ocb8":
        settings.set(CONV_CPU="ocb8")
    else:
        settings.set(CONV_CPU=None)
    return request.param


CASES = [  # n, cin, cout, (h, w), k, stride, pad, dil, groups
    (1, 3, 8, (11, 9), 3, 1, 1, 1, 1),
    (1, 5, 13, (7, 21), 3, 1, 1, 1, 1),       # 21 wide: two interior blocks + a partial one
    (2, 6, 7, (9, 5), 3, 1, 0, 1, 1),         # narrower than the lanes, 7 channels
    (1, 4, 6, (13, 17), 3, 1, 2, 2, 1),       # dilation 2, padding 2
    (3, 5, 10, (9, 19), 3, 2, 1, 1, 1),       # stride 2: every-other-lane loads
    (1, 3, 16, (23, 37), 7, 2, 3, 1, 1),      # stem-like 7x7 stride 2, odd sizes
    (1, 4, 9, (10, 26), 3, 3, 1, 1, 1),       # stride 3: guarded loads only
    (2, 8, 12, (9, 9), 1, 2, 0, 1, 1),        # 1x1 stride 2 (not the PW1 path)
    (1, 16, 24, (7, 7), 1, 1, 0, 1, 1),       # PW1: 49 pixels (3 full groups of 16 + 1)
    (3, 12, 22, (5, 6), 1, 1, 0, 1, 1),       # PW1 across images, 30 pixels
    (1, 9, 5, (4, 4), 1, 1, 0, 1, 1),         # PW1: exactly one block of 16
    (2, 8, 12, (8, 7), 3, 1, 1, 1, 2),        # groups 2, 6 channels per group
    (1, 12, 18, (6, 5), 3, 2, 1, 1, 3),       # groups 3
    (1, 1, 7, (9, 8), 3, 1, 1, 1, 1),         # one input channel
    (1, 3, 5, (1, 1), 3, 1, 1, 1, 1),         # a 1x1 image with padding
    (1, 1, 2, (2, 4), 3, 1, 1, 1, 1),         # narrow rows, the whole tensor one 8-wide window
    (2, 3, 6, (3, 7), 3, 1, 1, 1, 1),         # 7-wide rows: windows clamped at both tensor ends
]


@pytest.mark.parametrize("n,cin,cout,hw,k,stride,pad,dil,groups", CASES)
def test_conv_cpu(kernel, n, cin, cout, hw, k, stride, pad, dil, groups):
    conv_case(n, cin, cout, hw, k, stride, pad, dil, groups, seed=cin + cout)
    conv_case(n, cin, cout, hw, k, stride, pad, dil, groups, relu=True, residual=True, seed=cin + 2 * cout)


def test_conv_cpu_no_bias_fp16(kernel):
    conv_case(1, 10, 14, (9, 11), 3, 1, 1, bias=False, relu=True)
    conv_case(2, 16, 20, (6, 5), 1, 1, 0, precision="fp16", relu=True, residual=True)
    conv_case(1, 6, 10, (11, 13), 3, 2, 1, precision="fp16")


@pytest.mark.parametrize("n,cin,cout,hw,k,stride,pad", [
    (1, 64, 20, (5, 7), 3, 1, 1),      # 4 slices of 16 input channels
    (1, 150, 36, (4, 3), 3, 2, 1),     # slices of uneven channel counts
    (2, 700, 24, (3, 3), 1, 1, 0),     # PW1 partials across two images
])
def test_conv_cpu_deep_layers_unsplit(kernel, n, cin, cout, hw, k, stride, pad):
    """Deep, small convolutions that GPUs split along the reduction (partials + a summing
    kernel) stay one kernel on a CPU device, where splitting only adds partial traffic. An
    engine with the GPU kernel families (a GPU device) may split them: then the epilogue is
    fused into the summing kernel and there is no third kernel."""
    e = conv_case(n, cin, cout, hw, k, stride, pad, relu=True, residual=True, seed=cin, kernels=None)
    kinds = [d.split()[1].rstrip(":") for d in e.info()["kernels"]]
    if not e.info()["gpu_kernels"]:
        assert kinds == ["conv2d"], e.info()["kernels"]
    else:
        assert kinds in (["conv2d"], ["conv2d", "reduce"]), e.info()["kernels"]
