"""An RMS norm read only by a weight-only GEMV is done inside the GEMV (kir/fuse.c rms_into_wq,
GPU kernel families): the GEMV reads the norm's input times the norm's weight, gathers each
row's sum of squares with its dot products and scales each output by the row's
rsqrt(mean + eps) before its epilogue. No norm kernel remains; the result is checked against
torch (transformers' LlamaRMSNorm, then torch's dequantize-and-linear of the same packed
weights, then a residual add) on the GEMV's vector and scalar loops and K splits of 1, 2 and 4,
M 1, 3, 8 (one chunk of x's rows) and 13 (two). Tolerances as tests/device/test_wq_linear.py:
fp32 2e-4 * sqrt(K) of the output's scale, fp16 2e-2 (the folded form keeps the normalised x in
float where the unfused engine rounds it to the storage type)."""
import math

import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C

transformers = pytest.importorskip("transformers")
from transformers.models.llama.modeling_llama import LlamaRMSNorm  # noqa: E402

from engine_kernels import kernels  # noqa: E402
from test_wq_linear import WQ, random_weights, close  # noqa: E402


@pytest.fixture(autouse=True)
def gpu_families(monkeypatch):
    for v in ("TORCHTRT_C_NATIVE", "TORCHTRT_C_WQ_SPLIT", "TORCHTRT_C_WQ_MMA"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")


class NormWQ(torch.nn.Module):
    """x + wq_linear(LlamaRMSNorm(x)) (a decoder layer's MLP entry, one projection)."""

    def __init__(self, K, q, s, z, group, bits, seed=0, twice=False):
        super().__init__()
        self.norm = LlamaRMSNorm(K, eps=1e-5)
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            self.norm.weight.copy_(torch.rand(K, generator=g) + 0.5)
        self.lin = WQ(q, s, z, group, bits)
        self.twice = twice

    def forward(self, x):
        h = self.norm(x)
        y = torch.ops.torchtrt_c.wq_linear(h, self.lin.q, self.lin.s, self.lin.z, self.lin.group, self.lin.bits)
        y = x[..., : y.shape[-1]] + y
        return (y, h) if self.twice else y


CASES = [  # M, N, K, group, bits, zeros, split
    (1, 37, 64, 64, 8, False, None),       # per channel, decode
    (3, 48, 160, 32, 8, True, None),
    (8, 33, 40, 8, 8, True, None),         # 40 bytes a row: the scalar loop
    (13, 64, 256, 64, 4, True, None),      # two chunks of x's rows
    (1, 40, 2048, 128, 8, False, "4"),     # K split between 4 warps
    (5, 24, 1024, 128, 4, True, "2"),
    (2, 16, 72, 8, 4, True, None),         # int4 groups smaller than a chunk: scalar loop
]


MMA_CASES = [  # fp16 x, K and the group multiples of 64: the tensor-core form under WQ_MMA=1 / auto
    (13, 64, 256, 64, 4, True, None),      # two chunks of x's rows (auto: the tensor cores)
    (70, 40, 192, 64, 8, True, None),      # 9 chunks: work-groups of 8 and 1
]


@pytest.mark.parametrize("mma", ["0", "1", "auto"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("case", CASES + MMA_CASES, ids=lambda c: f"M{c[0]}-N{c[1]}-K{c[2]}-g{c[3]}-b{c[4]}-s{c[6]}")
def test_rms_norm_folded_into_gemv(case, dtype, mma, monkeypatch):
    """mma 1 / auto: the tensor-core form takes the norm too where it applies (the norm's
    weight folded into the dequantized weights, each row's squares summed from x's halves)."""
    M, N, K, group, bits, zeros, split = case
    if mma != "0" and (dtype != torch.float16 or K % 64 or group % 64):
        pytest.skip("the tensor-core form takes fp16 x, K and groups multiples of 64")
    monkeypatch.setenv("TORCHTRT_C_WQ_MMA", mma)
    if split:
        monkeypatch.setenv("TORCHTRT_C_WQ_SPLIT", split)
    q, s, z = random_weights(N, K, group, bits, zeros, seed=3)
    m = NormWQ(K, q, s, z, group, bits).eval().to(dtype)
    x = torch.randn(M, K).to(dtype) * 3
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1, enabled_precisions={dtype})
    ks = kernels(trt)
    assert not any(" norm:" in k for k in ks), ks
    (wq,) = [k for k in ks if " wq_linear:" in k]
    assert "+" in wq.split(" wq_linear: ")[1], wq
    src = C.Engine.deserialize(bytes(trt._run_on_acc_0.engine.numpy()), cache_dir="").info()["source"]
    assert ("uint a[4] = {wa[2 * s], wb[2 * s]" in src) == (mma != "0")
    with torch.no_grad():
        ref = NormWQ(K, q, s, z, group, bits).eval()(x.float())
        y = trt(x)
    assert y.dtype == dtype
    close(y, ref, K, 2e-4 * math.sqrt(K) if dtype == torch.float32 else 2e-2)


def test_norm_read_twice_stays_a_kernel():
    """The norm's result is also an output: the norm stays a kernel, the GEMV reads it."""
    q, s, z = random_weights(24, 96, 32, 8, True)
    m = NormWQ(96, q, s, z, 32, 8, twice=True).eval()
    x = torch.randn(3, 96)
    trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    assert any(" norm:" in k for k in kernels(trt))
    with torch.no_grad():
        y, h = trt(x)
        ry, rh = m(x)
    close(h, rh, 96, 1e-5)
    close(y, ry, 96, 2e-4 * math.sqrt(96))
