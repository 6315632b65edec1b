"""1x1, stride-1, unpadded convolutions in fp16 engines with the GPU kernel families become a
batched GEMM (conv_nn.c: conv_as_gemm; tensor cores on NVIDIA), here on PoCL through
TORCHTRT_C_KERNELS=gpu (the SIMT GEMM). Against torch eager on random inputs with odd sizes,
bias / no bias, fused relu + residual (through the reshape back to NCHW, one kernel), several
images, a dynamic batch; other convolutions and fp32 engines keep the convolution kernels.
Tolerance: fp16 engines 2e-2 (half storage, float accumulation), fp32 1e-4."""
import numpy as np
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C
from convtest import assert_close, rand
from test_conv_kernels import conv_case



@pytest.fixture(autouse=True)
def gpu_family(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    monkeypatch.delenv("TORCHTRT_C_CONV_TILE", raising=False)
    monkeypatch.delenv("TORCHTRT_C_GEMM_TILE", raising=False)


def _kinds(e):
    return [d.split(":")[0].split(" ")[1] for d in e.info()["kernels"]]


@pytest.mark.parametrize("n,cin,cout,hw", [
    (1, 16, 24, (7, 7)), (3, 12, 20, (5, 6)), (2, 7, 13, (9, 11)), (1, 64, 33, (14, 14)), (1, 5, 3, (1, 1))])
def test_pointwise_conv_fp16_is_gemm(n, cin, cout, hw):
    for bias, relu, residual in ((True, False, False), (False, True, True), (True, True, True)):
        e = conv_case(n, cin, cout, hw, 1, 1, 0, bias=bias, relu=relu, residual=residual, precision="fp16",
                      seed=cin + cout)
        assert _kinds(e) == ["gemm"], e.info()["kernels"]


def test_other_convs_keep_conv_kernels():
    e = conv_case(1, 16, 24, (7, 7), 1, 1, 0, precision="fp32")
    assert _kinds(e) == ["conv2d"]
    e = conv_case(2, 8, 12, (9, 9), 1, 2, 0, precision="fp16")      # stride 2
    assert _kinds(e) == ["conv2d"]
    e = conv_case(1, 8, 12, (9, 9), 3, 1, 1, precision="fp16")      # 3x3
    assert _kinds(e) == ["conv2d"]


class _Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(6, 10, 1)
        self.bn = torch.nn.BatchNorm2d(10)
        self.b = torch.nn.Conv2d(10, 6, 1, bias=False)

    def forward(self, x):
        return torch.relu(self.b(torch.relu(self.bn(self.a(x)))) + x)


def test_dynamic_batch_block_fp16():
    torch.manual_seed(0)
    m = _Block().eval()
    with torch.no_grad():
        m.bn.running_mean.uniform_(-0.5, 0.5)
        m.bn.running_var.uniform_(0.5, 1.5)
    m = m.half()
    x = torch.randn(2, 6, 9, 7).half()
    inp = torchtrt_c.Input(min_shape=(1, 6, 9, 7), opt_shape=(2, 6, 9, 7), max_shape=(5, 6, 9, 7), dtype=torch.half)
    trt = torchtrt_c.compile(m, inputs=[inp], enabled_precisions={torch.half}, min_block_size=1)
    for b in (1, 3, 5):
        x = torch.randn(b, 6, 9, 7).half()
        with torch.no_grad():
            ref = m.float()(x.float())
            m.half()
        got = trt(x)
        assert_close(got.float(), ref, 2e-2, 2e-2, f"block batch {b}")
