"""GEMM kernels' GEMV form "<name>_v" on the CUDA launch path (csrc/backend/cuda/exec_cuda.c,
gemv_launch): with TORCHTRT_C_GEMM_GEMV=auto (off by default until measured) every x @ W^T GEMM
of float16/float32 operands on the GPU kernel families carries it, and a call whose product has at most 8 rows (a decode step: M = batch) launches it instead
of the tile kernel or cuBLAS. Checked on odd sizes: that it ran (the engine's counters) only
where the rows are few, and the results against float64 (fp16: 2e-2 of max(|ref|, 1); fp32:
1e-3, TF32 off). A real model (Hugging Face Llama, small config, random weights) decodes with it
in tests/gpu/test_llm_gpu.py. tests/device/test_gemm_gemv.py checks the kernel on any device."""
import copy

import pytest
import torch
import torchtrt_c

from cudalaunch import clear_knobs, close as _close, launch_call as _call, restore_tf32, why_not

DEV = torch.device("cuda", 0)
pytestmark = pytest.mark.skipif(why_not() is not None, reason=str(why_not()))


@pytest.fixture(autouse=True)
def knobs(monkeypatch):
    old = clear_knobs(monkeypatch)
    monkeypatch.setenv("TORCHTRT_C_GEMM_GEMV", "auto")
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    restore_tf32(old)


def _stats(trt):
    from cudalaunch import accs
    from torchtrt_c.runtime import _cuda_launch, _execute
    st = [_cuda_launch.stats(_execute._plan(a.meta, a.engine)) for a in accs(trt)]
    return {k: sum(s[k] for s in st) for k in ("gemv_kernels", "gemv_calls", "calls")}


class Mlp(torch.nn.Module):
    def __init__(self, d, h, o):
        super().__init__()
        self.up, self.down, self.head = torch.nn.Linear(d, h), torch.nn.Linear(h, d), torch.nn.Linear(d, o, bias=False)

    def forward(self, x):
        y = self.down(torch.relu(self.up(x))) + x
        return self.head(y)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32])
@pytest.mark.parametrize("shape", [(1, 1, 2048, 640, 33), (8, 1, 64, 200, 29), (3, 1, 129, 70, 7), (1, 5, 256, 96, 1000)])
def test_mlp_decode_shapes(dtype, shape):
    """Linear + bias + ReLU, linear + bias + residual, a linear without bias at few rows."""
    b, t, d, h, o = shape
    torch.manual_seed(sum(shape))
    m = Mlp(d, h, o).to(dtype).eval()
    x = torch.randn(b, t, d).to(dtype)
    trt = torchtrt_c.compile(m, inputs=[x], enabled_precisions={dtype}).to(DEV)
    got = _call(trt, x.to(DEV))
    st = _stats(trt)
    assert st["gemv_kernels"] == 3 and st["gemv_calls"] == 3, st
    with torch.no_grad():
        ref = copy.deepcopy(m).double().to(DEV)(x.to(DEV).double())
    _close(got.double(), ref, 2e-2 if dtype == torch.float16 else 1e-3, f"mlp {shape} {dtype}")


def test_more_rows_and_off(monkeypatch):
    """16 rows run the tile kernel (or cuBLAS); TORCHTRT_C_GEMM_GEMV=0 emits no "_v"."""
    m = Mlp(64, 200, 29).half().eval()
    x = torch.randn(2, 8, 64).half()
    trt = torchtrt_c.compile(m, inputs=[x], enabled_precisions={torch.float16}).to(DEV)
    got = _call(trt, x.to(DEV))
    st = _stats(trt)
    assert st["gemv_calls"] == 0, st
    with torch.no_grad():
        _close(got.double(), copy.deepcopy(m).double().to(DEV)(x.to(DEV).double()), 2e-2, "16 rows")
    monkeypatch.setenv("TORCHTRT_C_GEMM_GEMV", "0")
    trt = torchtrt_c.compile(m, inputs=[x[:1, :1]], enabled_precisions={torch.float16}).to(DEV)
    _call(trt, x[:1, :1].to(DEV))
    assert _stats(trt)["gemv_kernels"] == 0
