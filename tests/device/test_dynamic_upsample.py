"""Upsampling over dynamic sizes from a size-1 minimum (issue 33, Torch-TensorRT's dynamic
upsample cases: min (1, ...), opt (5, ...), max (9, ...)). With align_corners=True torch's
decomposition scales source positions by (in - 1) / (out - 1), guarded by out > 1 at trace
time only: at a run with out == 1 it divided by zero (ZeroDivisionError). torchtrt_c traces and
decomposes with (in - 1) / max(out - 1, 1), the same positions. Against eager within
atol = rtol = 1e-5 (fp32) / 1e-2 (fp16) at sizes 1, 3 (odd) and 9 (the maximum); the
align_corners=True scale-factor cases raise ZeroDivisionError before."""
import pytest
import torch

import torchtrt_c
from convtest import assert_close, rand

A = torch.ops.aten


class Up(torch.nn.Module):
    def __init__(self, op, size, align, scales):
        super().__init__()
        self.op, self.size, self.align, self.scales = op, size, align, scales

    def forward(self, x):
        return self.op(x, self.size, self.align, self.scales)


# 2-D/3-D (10-25 s each on PoCL: their scale-factor sizes are not affine, so torch runs the
# decomposed graph) in the slow tier; float16 on the 1-D ones
CASES = [pytest.param(op, nd, size, align, scales, marks=() if nd == 1 else pytest.mark.slow,
                      id=f"{op.__name__.split('.')[0]}-{'size' if size else 'scale'}-{align}")
         for op, nd in ((A.upsample_linear1d.vec, 1), (A.upsample_bicubic2d.vec, 2), (A.upsample_trilinear3d.vec, 3))
         for size, align, scales in (([3] * nd, True, None), (None, True, [1.5] * nd), (None, False, [1.5] * nd))]


@pytest.mark.parametrize("dtype,tol", [(torch.float32, 1e-5), (torch.float16, 1e-2)], ids=["fp32", "fp16"])
@pytest.mark.parametrize("op,nd,size,align,scales", CASES)
def test_upsample_from_size_one(op, nd, size, align, scales, dtype, tol):
    if dtype == torch.float16 and nd != 1:
        pytest.skip("float16: the 1-D cases (the same decomposition)")
    m = Up(op, size, align, scales).eval()
    spec = torchtrt_c.Input(min_shape=(1,) * (nd + 2), opt_shape=(5,) * (nd + 2), max_shape=(9,) * (nd + 2),
                            dtype=dtype)
    trt = torchtrt_c.compile(m, inputs=[spec], min_block_size=1)
    for n in (1, 3, 9):
        x = rand(*((1, 1) + (n,) * nd), dtype=dtype, seed=n) if n == 9 else rand(*(n,) * (nd + 2), dtype=dtype, seed=n)
        assert_close(trt(x), m(x), tol, tol, f"size {n}")
