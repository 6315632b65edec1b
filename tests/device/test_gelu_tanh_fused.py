"""GPT-2's hand-written tanh GELU (transformers' NewGELUActivation) after a linear, compiled,
against torch eager on odd shapes: the lowering pass fuse_gelu_tanh makes it one
aten.gelu(approximate="tanh") (the GEMM's epilogue takes one GELU step instead of eight).
Tolerance: fp32 atol 1e-5, rtol 1e-4 (the fused formula rounds differently from the eight ops)."""
import math

import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C


class NewGELUMLP(torch.nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.fc = torch.nn.Linear(d, h)

    def forward(self, x):
        y = self.fc(x)
        return 0.5 * y * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (y + 0.044715 * torch.pow(y, 3.0))))


@pytest.mark.parametrize("shape,h", [((3, 7, 13), 29), ((1, 5, 32), 64), ((2, 9), 17)])
def test_new_gelu_after_linear(shape, h):
    torch.manual_seed(0)
    m = NewGELUMLP(shape[-1], h).eval()
    x = torch.randn(*shape) * 2.0
    x.view(-1)[0] = 40.0     # tanh saturates
    x.view(-1)[1] = -40.0
    with torch.inference_mode():
        ref = m(x)
        trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
        out = trt(x)
    err = (out - ref).abs()
    lim = 1e-5 + 1e-4 * ref.abs()
    assert (err <= lim).all(), f"max abs error {err.max().item():.3g} at {divmod(int(err.argmax()), h)}"
    engines = [mm for mm in trt.modules() if hasattr(mm, "engine_meta")]
    assert len(engines) == 1
    ks = C.Engine.deserialize(bytes(engines[0].engine.numpy()), cache_dir="").info()["kernels"]
    assert not [k for k in ks if "tanh" in k or "pow" in k], f"the GELU's ops were not fused: {ks}"
