"""GEMM epilogues inside cuBLASLt's product (backend/cuda/cublaslt.c, exec_cuda_lib.c
ttc_cuda_lib_gemm_epi; TORCHTRT_C_CUDA_LT): where a cuBLAS GEMM's whole epilogue is
act(acc + bias + residual) with act none or tanh GELU, cuBLASLt applies it and no epilogue
kernel ("<kernel>_e") runs after the product. Other epilogues (ReLU, whose NaN handling in
cuBLASLt is not torch's; erf GELU, sigmoid, an activation before the residual) keep the kernel.

Checked on random inputs of odd sizes, forced cuBLAS (=1) and auto: how many library calls
were fused (the engines' counters, per call: exactly the GEMMs whose epilogue cuBLASLt can
take), every call giving the same bits (CUDA graph replays included), results against float64
eager (fp32 with TF32 off: 2e-3 of max(|ref|, 1); fp16: 2e-2), the same model with
TORCHTRT_C_CUDA_LT=0 (no fused call, results within the same bound), and Hugging Face GPT-2
(Conv1D addmm + bias, tanh GELU, residual adds) called with input_ids= against eager.
The matcher's decisions and the fused descriptor's arithmetic are also checked without a GPU
(csrc/tests/test_cuda_lib.c test_epilogues_for_cublaslt).
"""
import copy

import pytest
import torch

import torchtrt_c
from cudalaunch import clear_knobs, close, launch_call, lib_stats, restore_tf32, why_not

DEV = torch.device("cuda", 0)
pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))


@pytest.fixture(autouse=True)
def knobs(monkeypatch):
    old = clear_knobs(monkeypatch)
    monkeypatch.delenv("TORCHTRT_C_CUDA_LT", raising=False)
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    restore_tf32(old)


class Layer(torch.nn.Module):
    """Five GEMMs: qkv (bias: fused), out-projection + residual (fused), relu(fc + bias +
    residual) (kept as a kernel), tanh GELU(fc + bias) (fused), erf GELU(fc + bias) (kept)."""

    def __init__(self, d, h):
        super().__init__()
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(3 * d, d)
        self.fc = torch.nn.Linear(d, d)
        self.up_t = torch.nn.Linear(d, h)
        self.up_e = torch.nn.Linear(d, h)

    def forward(self, x):
        y = self.proj(self.qkv(x)) + x
        y = torch.relu(self.fc(y) + y)
        t = torch.nn.functional.gelu(self.up_t(y), approximate="tanh")
        e = torch.nn.functional.gelu(self.up_e(y))
        return t, e


FUSED_PER_CALL = 3


@pytest.mark.parametrize("libs", ["1", "auto"])
@pytest.mark.parametrize("dt,b,t,d,h", [(torch.float16, 3, 37, 64, 136), (torch.float16, 8, 128, 256, 1024),
                                        (torch.float32, 3, 37, 48, 99), (torch.float32, 8, 65, 128, 512)])
def test_fused_epilogues_match_eager(libs, dt, b, t, d, h, monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", libs)
    torch.manual_seed(b * t + d)
    m = Layer(d, h).eval().to(dt)
    x = torch.randn(b, t, d).to(dt)
    trt = torchtrt_c.compile(copy.deepcopy(m), inputs=[x], min_block_size=1, enabled_precisions={dt}).to(DEV)
    xd = x.to(DEV)
    outs = [launch_call(trt, xd) for _ in range(4)]   # plain (timed under auto), recorded, replays
    st = lib_stats(trt)
    if libs == "1":
        assert st["lib_fused"] == 4 * FUSED_PER_CALL, st
    else:
        assert st["lib_fused"] <= st["lib_calls"], st   # auto: the kernel may win a small shape
    for o in outs[1:]:
        for u, v in zip(o, outs[0]):
            assert torch.equal(u, v), "a call differs from the first"
    # the same model's GEMMs without cuBLASLt: the epilogue kernels run instead
    monkeypatch.setenv("TORCHTRT_C_CUDA_LT", "0")
    trt0 = torchtrt_c.compile(copy.deepcopy(m), inputs=[x], min_block_size=1, enabled_precisions={dt}).to(DEV)
    outs0 = launch_call(trt0, xd)
    with torch.no_grad():
        ref = copy.deepcopy(m).double().to(DEV)(xd.double())
    tol = 2e-2 if dt == torch.float16 else 2e-3
    for u, v, nm in zip(outs[0], ref, ("tanh", "erf")):
        close(u, v, tol, f"{nm} ({libs}, {dt}, {b}x{t}x{d})")
    assert lib_stats(trt0)["lib_fused"] == 0
    for u, v, nm in zip(outs0, ref, ("tanh", "erf")):
        close(u, v, tol, f"{nm} without cuBLASLt ({libs}, {dt})")


class ResidualRelu(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = torch.nn.Linear(d, d)

    def forward(self, x):
        return torch.relu(self.fc(x) + x)


def test_relu_keeps_nan(monkeypatch):
    """relu(fc + bias + residual) is not fused: a NaN in one row of the input makes that row NaN
    (torch's relu keeps NaN), the other rows stay finite and match eager."""
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", "1")
    torch.manual_seed(5)
    m = ResidualRelu(64).eval()
    x = torch.randn(4, 33, 64)
    x[1, 5, 7] = float("nan")
    trt = torchtrt_c.compile(copy.deepcopy(m), inputs=[x], min_block_size=1).to(DEV)
    got = launch_call(trt, x.to(DEV)).cpu()
    assert lib_stats(trt)["lib_fused"] == 0
    with torch.no_grad():
        want = m(x)
    assert torch.isnan(want[1, 5]).all() and torch.isnan(got[1, 5]).all(), "the NaN row"
    keep = torch.ones(4, 33, dtype=torch.bool)
    keep[1, 5] = False
    close(got[keep], want[keep], 2e-3, "finite rows")


def test_hf_gpt2_fused(monkeypatch):
    transformers = pytest.importorskip("transformers")
    monkeypatch.setenv("TORCHTRT_C_CUDA_LIBS", "1")
    cfg = transformers.GPT2Config(vocab_size=500, n_positions=128, n_embd=128, n_layer=2, n_head=4)
    torch.manual_seed(0)
    m = transformers.GPT2Model(cfg).eval().half()
    ids = torch.randint(0, 500, (4, 61))
    trt = torchtrt_c.compile(m, kwarg_inputs=dict(input_ids=ids), enabled_precisions={torch.float16}).to(DEV)
    got = launch_call(trt, input_ids=ids.to(DEV))
    got = got.last_hidden_state if hasattr(got, "last_hidden_state") else got[0]
    st = lib_stats(trt)
    assert st["lib_fused"] > 0, st
    with torch.no_grad():
        ref = copy.deepcopy(m).float().to(DEV)(input_ids=ids.to(DEV)).last_hidden_state
    close(got, ref, 2e-2, "GPT-2 fp16 b4")
