"""Issue 33's missing converters (prims.sum, native_dropout, aten.max.default,
aten.empty.memory_format): each is a decomposition into converted ops (their differential
cases are in op_cases_decomp.py). Here: the GPU kernel families (TORCHTRT_C_KERNELS=gpu, on
PoCL their emulation) on the reductions, and native_dropout in training (train true or None),
whose random mask stays with torch. Before, each of these ops ran in torch."""
import torch

import torchtrt_c
from convtest import assert_close, rand

A = torch.ops.aten


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *x):
        return self.fn(*x)


def _engines_only(fn, *ins):
    trt = torchtrt_c.compile(Fn(fn).eval(), inputs=list(ins), min_block_size=1)
    names = [n for n, _ in trt.named_children()]
    assert names and all(n.startswith("_run_on_acc_") for n in names), names
    return trt


def test_reductions_on_gpu_kernel_families(monkeypatch):
    monkeypatch.setenv("TORCHTRT_C_KERNELS", "gpu")
    for dtype, tol in ((torch.float32, 1e-5), (torch.float16, 1e-2)):
        x = rand(3, 7, 129, dtype=dtype)
        fn = lambda x: torch.ops.prims.sum(x, [2]) + torch.max(x)  # noqa: E731
        assert_close(_engines_only(fn, x)(x), fn(x), tol, tol, f"prims.sum + max {dtype}")


def test_native_dropout_in_training_stays_with_torch():
    x = rand(64, 33)
    for train in (True, None):
        fn = lambda x, t=train: A.native_dropout(x, 0.5, t)  # noqa: E731
        trt = torchtrt_c.compile(Fn(fn).eval(), inputs=[x], min_block_size=1)
        out, mask = trt(x)
        # each element is dropped (0, mask false) or kept and scaled by 1 / (1 - p)
        assert mask.dtype == torch.bool and 0.3 < mask.float().mean() < 0.7, (train, mask.float().mean())
        assert_close(out, torch.where(mask, x * 2, torch.zeros_like(x)), 1e-6, 1e-6, f"train={train}")
