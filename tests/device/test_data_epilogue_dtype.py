"""Data-movement kernels (concatenation, constant padding, indexing, gather) with a fused
epilogue that stores another dtype than the op's own values: PT2E's quantize_per_tensor after a
torch.cat (SqueezeNet's Fire modules, GoogLeNet's inception blocks) stores uint8/int8 while the
concatenation holds float32 values. The kernels typed their values as the stored dtype, so a
float was truncated to an integer before the quantize's x / scale (a silent wrong answer: 100
steps off). Compared exactly with torch (the same float values quantized: tolerance 0), at odd
sizes, on every kernel family this machine runs (default, and the GPU families)."""
import pytest
import torch

import torchtrt_c
from engine_kernels import kernels

pytest.importorskip("torchao")
import torchao.quantization.pt2e  # noqa: E402,F401  (registers quantized_decomposed)

QD = torch.ops.quantized_decomposed


def quant(y, dtype):
    lo, hi = (0, 255) if dtype == torch.uint8 else (-128, 127)
    return QD.quantize_per_tensor.default(y, 0.013, 3 if dtype == torch.uint8 else -2, lo, hi, dtype)


class Cat(torch.nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, x):
        return quant(torch.cat([torch.relu(x * 2), x + 1, x[:, :1] * 3], 1), self.dtype)


class Pad(torch.nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, x):
        return quant(torch.nn.functional.pad(x * 1.5, (1, 2, 0, 3), value=0.37), self.dtype)


class Gather(torch.nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, x, idx):
        return quant(torch.gather(x * 2.5, 1, idx), self.dtype)


class IndexSelect(torch.nn.Module):
    def __init__(self, dtype):
        super().__init__()
        self.dtype = dtype

    def forward(self, x, idx):
        return quant(torch.index_select(x - 0.25, 2, idx[0, 0, 0]), self.dtype)


@pytest.mark.parametrize("families", ["default", "gpu"])
@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8], ids=["u8", "s8"])
@pytest.mark.parametrize("shape", [(2, 3, 5, 4), (1, 5, 7, 9), (3, 2, 1, 13)], ids=str)
@pytest.mark.parametrize("mod", [Cat, Pad, Gather, IndexSelect], ids=lambda m: m.__name__)
def test_quantize_after_data_kernel_is_exact(mod, shape, dtype, families, monkeypatch):
    if families == "gpu":
        monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    g = torch.Generator().manual_seed(sum(shape))
    x = torch.randn(*shape, generator=g) * 2
    m = mod(dtype)
    args = [x]
    if mod in (Gather, IndexSelect):
        args.append(torch.randint(0, shape[1] if mod is Gather else shape[2], shape, generator=g))
    gm = torchtrt_c.compile(m, inputs=args, min_block_size=1)
    assert "_run_on_gpu" not in str(gm.graph)
    # the quantize is the data kernel's epilogue (else this tests nothing new)
    assert any("quantize_per_tensor" in k and any(w in k for w in ("concat", "pad", "gather", "index")) for k in
               kernels(gm)), kernels(gm)
    with torch.no_grad():
        got, want = gm(*args), m(*args)
    assert got.dtype == want.dtype == dtype
    assert torch.equal(got, want), int((got.int() - want.int()).abs().max())
