"""Engine constants on CPU devices (issue 15): weights the core made itself (a Conv1D-style
weight transposed by fuse_linear) back their device buffer without a copy; torch's parameters
are still copied, so an in-place edit of the model after compiling does not reach the engine.
Both kernel paths (native calls and OpenCL kernels under TORCHTRT_C_KERNELS=gpu) must read the
same numbers as eager."""
import pytest
import gc

import torch

import torchtrt_c
import torchtrt_c._C as C
from torchtrt_c import settings

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
@pytest.mark.parametrize("k,n", [(37, 70), (96, 33), (1031, 1029)])  # 4.2 MB: transposed on two threads
def test_transposed_constants_match_eager(monkeypatch, kernels, k, n):
    settings.set(MODULE_CACHE="0")
    if kernels == "gpu":
        settings.set(KERNELS="gpu")
    else:
        settings.set(KERNELS=None)
    torch.manual_seed(k * n)
    m, x = Conv1DLike(k, n).eval(), torch.randn(3, 5, k)
    gc.collect()  # modules dropped by earlier tests release their engines now, not during compile
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
    settings.set(MODULE_CACHE="0")
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


class BigLinears(torch.nn.Module):
    """Weights of several 1 MB copy pieces, none a whole number of them (odd sizes)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(333, 1031, bias=False)   # 1.31 MB
        self.b = torch.nn.Linear(1031, 257)               # 1.01 MB + bias

    def forward(self, x):
        return self.b(torch.nn.functional.silu(self.a(x)))


@pytest.mark.parametrize("copy", ["core", "driver"])
def test_parameter_copies_match_eager_and_stay_copies(monkeypatch, copy):
    """On a CPU device the core copies torch's parameters itself (on the step threads, in
    1 MB pieces) and wraps the copies (TORCHTRT_C_CONST_COPY=driver: clCreateBuffer copies
    them): both read the numbers eager does, and neither follows a later edit of the model."""
    settings.set(MODULE_CACHE="0")
    settings.set(CONST_COPY=copy)
    torch.manual_seed(7)
    m, x = BigLinears().eval(), torch.randn(2, 5, 333)
    weight_bytes = sum(p.numel() * 4 for p in m.parameters())
    gc.collect()  # modules dropped by earlier tests release their engines now, not during compile
    host0 = C.runtime_stats()["host_ptr_bytes"]
    gm = torchtrt_c.compile(m, inputs=[x], min_block_size=1)
    wrapped = C.runtime_stats()["host_ptr_bytes"] - host0
    if _cpu_device() and copy == "core":
        assert wrapped >= weight_bytes, f"{wrapped} bytes wrapped, the weights are {weight_bytes}"
    elif _cpu_device():
        assert wrapped < weight_bytes, f"{wrapped} bytes wrapped with the driver's copies"
    with torch.inference_mode():
        ref = m(x)
        for p in m.parameters():
            p.mul_(-3.0)
        out = gm(x)
    out = out[0] if isinstance(out, (tuple, list)) else out
    e = _err(out, ref)
    assert e <= TOL, f"{copy} copies: max rel err {e:.2e} vs eager before the edit"
