"""PT2E's quantize -> dequantize after a convolution, computed in the native step's epilogue on
a CPU device (csrc/backend/cpu/native_epi.c: rint half to even without libm, the 8-bit casts
on float tiles), equal to torch's quantized_decomposed ops: values on every rounding tie
(k + 0.5 steps, both signs), -0.0, and values far outside the range (clamped). Elsewhere (no
native steps) the same engine runs OpenCL kernels and must agree just the same."""
import pytest
import torch
import torch.ao.quantization.fx._decomposed  # noqa: F401  (registers torch.ops.quantized_decomposed)

import torchtrt_c
from models.test_quant import _kernels

qd = torch.ops.quantized_decomposed


class ConvQDQ(torch.nn.Module):
    def __init__(self, scale, zp, lo, hi, dtype):
        super().__init__()
        self.c = torch.nn.Conv2d(4, 4, 1, bias=False)
        with torch.no_grad():
            self.c.weight.copy_(torch.eye(4).view(4, 4, 1, 1))   # the identity: y = x exactly
        self.q = (scale, zp, lo, hi, dtype)

    def forward(self, x):
        q = qd.quantize_per_tensor.default(torch.relu(self.c(x)) - 20.0, *self.q)
        return qd.dequantize_per_tensor.default(q, *self.q)


@pytest.mark.parametrize("q", [(0.5, 3, -128, 127, torch.int8), (0.25, 117, 0, 255, torch.uint8)], ids=["s8", "u8"])
def test_conv_quantize_dequantize_in_the_native_epilogue(q):
    g = torch.Generator().manual_seed(0)
    x = torch.randint(-600, 600, (2, 4, 9, 11), generator=g).float() * (q[0] / 2)   # ties and integers
    x[0, 0, 0, :3] = torch.tensor([-0.0, 1e9, -1e9])
    m = ConvQDQ(*q).eval()
    gm = torchtrt_c.compile(m, inputs=[x], min_block_size=1, require_full_compilation=True)
    ks = _kernels(gm)
    if torchtrt_c._C.native_cpu()["available"]:
        assert len(ks) == 1 and "(native)" in ks[0] and "quantize_per_tensor" in ks[0], ks
    with torch.no_grad():
        assert torch.equal(gm(x), m(x))
