"""Engine constants on CPU devices (issue 15): weights the core made itself (a Conv1D-style
weight transposed by fuse_linear) back their device buffer without a copy; torch's parameters
are still copied, so an in-place edit of the model after compiling does not reach the engine.
Both kernel paths (native calls and OpenCL kernels under TORCHTRT_C_KERNELS=gpu) must read the
same numbers as eager."""
import pytest
import torch

import torchtrt_c
import torchtrt_c._C as C

TOL = 1e-5


def _cpu_device():
    return "CPU" in str(C.devices()[C.default_device()].get("type", "")).upper()


class Conv1DLike(torch.nn.Module):
    """x @ W + b with W stored [in, out] (GPT-2's Conv1D): the linear needs W transposed."""

    def __init__(self, k, n):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(k, n) / k ** 0.5)
        self.b = torch.nn.Parameter(torch.randn(n))
        self.lin = torch.nn.Linear(n, k)

    def forward(self, x):
        return self.lin(torch.relu(torch.addmm(self.b, x.reshape(-1, x.shape[-1]), self.w))).reshape(x.shape)


def _err(a, b):
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-6)).item()


@pytest.mark.parametrize("kernels", ["default", "gpu"])
@pytest.mark.parametrize("k,n", [(37, 70), (96, 33)])
def test_transposed_constants_match_eager(monkeypatch, kernels, k, n):
    monkeypatch.setenv("TORCHTRT_C_MODULE_CACHE", "0")
    if kernels == "gpu":
        monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    else:
        monkeypatch.delenv("TORCHTRT_C_KERNELS", raising=False)
    torch.manual_seed(k * n)
    m, x = Conv1DLike(k, n).eval(), torch.randn(3, 5, k)
    host0 = C.runtime_stats()["host_ptr_bytes"]
    gm = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    if _cpu_device():  # the transposed W backs its buffer as it is (inputs/outputs are not held yet)
        assert C.runtime_stats()["host_ptr_bytes"] - host0 >= k * n * 4, C.runtime_stats()
    with torch.inference_mode():
        ref, out = m(x), gm(x)
    out = out[0] if isinstance(out, (tuple, list)) else out
    e = _err(out, ref)
    assert e <= TOL, f"{kernels} kernels, W {k}x{n}: max rel err {e:.2e} vs eager"


def test_parameters_edited_after_compile_do_not_reach_the_engine(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_MODULE_CACHE", "0")
    torch.manual_seed(1)
    m, x = Conv1DLike(24, 40).eval(), torch.randn(2, 3, 24)
    gm = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    with torch.inference_mode():
        before = m(x)
        for p in m.parameters():
            p.mul_(2.0)
        out = gm(x)
    out = out[0] if isinstance(out, (tuple, list)) else out
    e = _err(out, before)
    assert e <= TOL, f"the engine changed with the model's parameters (max rel err {e:.2e} vs the compiled-time output)"
