"""The column depthwise kernel (conv2d_dw_col.cl: OHB outputs down a column per work-item),
taken by the GPU kernel family for stride-1 depthwise convolutions with static planes; forced
on PoCL here with TORCHTRT_C_KERNELS=gpu. ConvNeXt's 7x7 (padding 3) at odd plane sizes,
heights that leave a partial last block (and ones below a block), widths above a warp that
are not a multiple of it, two columns a work-item (rows of 16 or more, odd widths), a horizontal stride and dilation, a channel multiplier, a fused
epilogue (bias + GELU), fp16 engines. A stride-2 layer keeps conv2d_dw. Against torch eager on
random inputs; tolerance fp32 1e-5, fp16 engines 2e-2 relative to the output's scale."""
import pytest
import torch

import torchtrt_c


@pytest.fixture(autouse=True)
def gpu_family(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")


def _sources(mod):
    from torchtrt_c.runtime import _execute
    return [_execute._plan(m.meta, m.engine).engine.info()["source"] for m in mod.modules()
            if hasattr(m, "engine") and hasattr(m, "meta")]


def _col(mod):
    return any("#define OHB " in s for s in _sources(mod))


class _DW(torch.nn.Module):
    def __init__(self, c, mult, k, stride, pad, dil):
        super().__init__()
        self.conv = torch.nn.Conv2d(c, c * mult, k, stride, padding=pad, dilation=dil, groups=c)

    def forward(self, x):
        return torch.nn.functional.gelu(self.conv(x))


@pytest.mark.parametrize("c,mult,hw,k,stride,pad,dil", [
    (4, 1, (9, 11), 7, 1, 3, 1),          # ConvNeXt's 7x7, a partial row block
    (3, 1, (7, 7), 7, 1, 3, 1),           # stage 4's plane: one block of 7 rows
    (2, 1, (3, 45), 7, 1, 3, 1),          # fewer rows than a block, a row wider than a warp
    (2, 1, (21, 34), 3, 1, 1, 1),         # 3x3; width 34 (work-groups of 17)
    (3, 2, (10, 9), 5, 1, 2, 1),          # channel multiplier 2
    (2, 1, (12, 13), 3, (1, 2), 1, 1),    # stride 2 along W only
    (2, 1, (11, 10), 3, 1, (1, 2), (1, 2)),  # dilation 2 along W only
    (2, 1, (9, 40), 3, (1, 2), 1, 1),     # two columns a work-item (OW >= 16) with stride 2 along W
    (2, 1, (8, 33), 3, 1, (1, 2), (1, 2)),  # ... with dilation 2 along W, an odd width
])
@pytest.mark.parametrize("prec", [torch.float32, torch.float16])
def test_depthwise_col(c, mult, hw, k, stride, pad, dil, prec):
    torch.manual_seed(c * 10 + k + hw[0])
    m = _DW(c, mult, k, stride, pad, dil).eval()
    x = torch.randn(2, c, *hw)
    trt = torchtrt_c.compile(m, inputs=[x], enabled_precisions={prec}, min_block_size=1)
    assert _col(trt), "the column depthwise kernel was not used"
    ref = m(x)
    got = trt(x).float()
    tol = 1e-5 if prec == torch.float32 else 2e-2
    err = (got - ref).abs().max().item() / max(ref.abs().max().item(), 1e-6)
    assert err <= tol, f"c{c} x{mult} {hw} k{k} s{stride} d{dil} {prec}: relative error {err:.3g} > {tol}"


def test_knob_keeps_row_kernel(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_DW", "rows")
    m = _DW(3, 1, 7, 1, 3, 1).eval()
    x = torch.randn(1, 3, 9, 20)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    assert not _col(trt)
    assert (trt(x) - m(x)).abs().max().item() <= 1e-5 * max(m(x).abs().max().item(), 1)


def test_stride2_keeps_row_kernel():
    m = _DW(3, 1, 3, 2, 1, 1).eval()
    x = torch.randn(1, 3, 9, 9)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    assert not _col(trt)
    assert (trt(x) - m(x)).abs().max().item() <= 1e-5 * max(m(x).abs().max().item(), 1)
