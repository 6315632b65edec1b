"""Depthwise convolutions with the GPU kernel family (conv2d_dw.cl) launch with work-groups
that codegen sizes (row span x rows x channels, about 128 work-items) instead of the driver's
choice, so the global size is rounded up and the kernel bounds every dim (NZ = N*C). Here on
PoCL through TORCHTRT_C_KERNELS=gpu: small planes (where a group spans several channels), odd
channel counts, channel multipliers, and a dynamic batch whose N*C is not a multiple of the
group. Against torch eager on random inputs; tolerance fp32 1e-5, fp16 engines 2e-2 relative."""
import pytest
import torch

import torchtrt_c


@pytest.fixture(autouse=True)
def gpu_family(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")


class _DW(torch.nn.Module):
    def __init__(self, c, mult, k, stride, dil):
        super().__init__()
        self.conv = torch.nn.Conv2d(c, c * mult, k, stride, padding=dil * (k // 2), dilation=dil, groups=c)

    def forward(self, x):
        return torch.nn.functional.silu(self.conv(x))


@pytest.mark.parametrize("c,mult,hw,k,stride,dil", [
    (5, 1, (3, 3), 3, 1, 1), (7, 2, (5, 4), 3, 2, 1), (3, 1, (57, 31), 7, 1, 1), (9, 1, (13, 11), 5, 1, 2),
    (6, 1, (1, 1), 3, 1, 1)])
@pytest.mark.parametrize("prec", [torch.float32, torch.float16])
def test_depthwise_dynamic_batch(c, mult, hw, k, stride, dil, prec):
    torch.manual_seed(c * 10 + k)
    m = _DW(c, mult, k, stride, dil).eval()
    spec = torchtrt_c.Input(min_shape=(1, c) + hw, opt_shape=(2, c) + hw, max_shape=(3, c) + hw)
    trt = torchtrt_c.compile(m, inputs=[spec], enabled_precisions={prec}, min_block_size=1)
    for b in (1, 3):
        x = torch.randn(b, c, *hw)
        ref = m(x)
        got = trt(x).float()
        tol = 1e-5 if prec == torch.float32 else 2e-2
        err = (got - ref).abs().max().item() / max(ref.abs().max().item(), 1e-6)
        assert err <= tol, f"c{c} x{mult} {hw} k{k} s{stride} d{dil} batch {b} {prec}: relative error {err:.3g}"
