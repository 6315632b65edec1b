"""CUDA memory comes back when compiled modules go (issue 36; the PoCL loop is
tests/device/test_memory_loop.py): compiling, moving to the GPU, calling with CUDA tensors and
deleting distinct models in a loop leaves, after every iteration, what was there before: C
engines and OpenCL buffers, the CUDA launch path's allocations, loaded modules and graphs,
buffers shared between CUDA and OpenCL (runtime.memory_stats()), and torch's allocated CUDA
memory (outputs and arenas of the launch path are torch tensors) from the second iteration on. Each path a CUDA call can
take is looped: the CUDA launch (the engine's PTX on torch's stream, with its CUDA graphs and
library steps), memory shared with OpenCL, and host staging. Skipped without a CUDA torch."""
import gc

import pytest
import torch

import torchtrt_c
from torchtrt_c import runtime
from torchtrt_c.runtime import _cuda_interop, memory_stats

import zoo

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA torch and a CUDA device")

DEV = torch.device("cuda", 0)
KEYS = ("engines", "owned_engines", "plans", "buffers", "device_bytes", "host_bytes", "tensor_data",
        "cuda_bytes", "cuda_allocs", "cuda_modules", "cuda_graphs", "shared_buffers", "shared_bytes")


@pytest.fixture(autouse=True)
def exact_eager():
    old = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = old


def _settle() -> dict:
    gc.collect()
    torch.cuda.synchronize()
    s = memory_stats()
    out = {k: s[k] for k in KEYS}
    out["torch_cuda_bytes"] = torch.cuda.memory_allocated(DEV)
    return out


def _diff(now: dict, start: dict) -> str:
    return ", ".join(f"{k} {start[k]} -> {now[k]}" for k in now if now[k] != start[k])


def _model(kind: str, seed: int):
    if kind == "mlp":
        torch.manual_seed(seed)
        m = torch.nn.Sequential(torch.nn.Linear(64, 512), torch.nn.ReLU(), torch.nn.Linear(512, 64)).eval()
        return m, torch.randn(4, 64)
    m, inp = zoo.build("resnet18", "tiny", seed=seed)
    return m, inp(2)


@pytest.mark.parametrize("kind", ["mlp", "resnet18"])
@pytest.mark.parametrize("path", ["launch", "shared", "host"])
def test_cuda_compile_delete_loop_returns_cuda_memory(kind, path, monkeypatch):
    if path != "launch":
        monkeypatch.setenv("TORCHTRT_C_CUDA_LAUNCH", "0")
    if path == "host":
        monkeypatch.setattr(_cuda_interop, "ENABLED", False)
    start = _settle()
    took = set()
    for i in range(4):
        m, x = _model(kind, 50 + i)
        trt = torchtrt_c.compile(m, inputs=[x], min_block_size=1).to(DEV)
        m, xc = m.to(DEV), x.to(DEV)
        with torch.inference_mode():
            for _ in range(3):   # the launch path records a CUDA graph after its first calls
                got = trt(xc)
            want = m(xc)
        took.add(runtime.cuda_path()["path"])
        torch.testing.assert_close(got, want, rtol=2e-3, atol=2e-3)
        live = memory_stats()
        assert live["engines"] > start["engines"], f"iteration {i}: the counters do not see the engines"
        del trt, m, x, xc, got, want
        now = _settle()
        ours = {k: now[k] for k in KEYS}
        assert ours == {k: start[k] for k in KEYS}, \
            f"{kind}/{path}, iteration {i}: after deleting the module: {_diff(ours, start)}"
        # torch's CUDA memory from the second iteration on: eager's first run leaves torch's own
        # process-wide state (cuBLAS workspace) behind
        if i == 0:
            base = now
        assert now == base, f"{kind}/{path}, iteration {i}: after deleting the module: {_diff(now, base)}"
    if path == "launch" and took != {"launch"}:
        pytest.skip(f"the CUDA launch path did not run here ({runtime.cuda_path()}); the loop ran on {took}")
    if path != "launch":
        assert took == {path} or path == "shared", took   # shared may fall to host where OpenCL cannot import
